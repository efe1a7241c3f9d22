//! Tensors to and from little-endian element bytes in row-major order: the
//! payload of every file format here. Integer widths webtensor does not
//! hold are narrowed when every value fits.

use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use half::{bf16, f16};
use num_complex::Complex32;

/// The element types a file may hold, beyond the dtypes webtensor has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileType {
    /// A dtype webtensor holds as it is.
    Held(DType),
    I8,
    I16,
    U16,
    U64,
}

impl FileType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            FileType::Held(d) => d.size_in_bytes(),
            FileType::I8 => 1,
            FileType::I16 | FileType::U16 => 2,
            FileType::U64 => 8,
        }
    }
}

/// The elements of `t` in row-major order as little-endian bytes (c64 as
/// interleaved f32 pairs, bool as one byte 0 or 1).
pub(crate) async fn row_major_bytes(t: &Tensor) -> Result<Vec<u8>> {
    async fn bytes_of<T: Element>(t: &Tensor) -> Result<Vec<u8>> {
        let values = t.to_vec_async::<T>().await?;
        let mut out = Vec::new();
        T::write_bytes(&values, &mut out);
        Ok(out)
    }
    match t.dtype() {
        DType::F32 => bytes_of::<f32>(t).await,
        DType::F16 => bytes_of::<f16>(t).await,
        DType::BF16 => bytes_of::<bf16>(t).await,
        DType::F64 => bytes_of::<f64>(t).await,
        DType::I32 => bytes_of::<i32>(t).await,
        DType::I64 => bytes_of::<i64>(t).await,
        DType::U32 => bytes_of::<u32>(t).await,
        DType::U8 => bytes_of::<u8>(t).await,
        DType::Bool => bytes_of::<bool>(t).await,
        DType::C64 => {
            let values = t.to_complex_vec_async().await?;
            let flat: Vec<f32> = values.iter().flat_map(|c| [c.re, c.im]).collect();
            let mut out = Vec::new();
            f32::write_bytes(&flat, &mut out);
            Ok(out)
        }
    }
}

/// A contiguous tensor of `shape` on `device` from little-endian `bytes`
/// of `file_type` (`big_endian` swaps each element first).
///
/// # Errors
/// `Error::Format` naming `op` when the byte count does not match the
/// shape or a wide integer does not fit i32 / u32; device errors.
pub(crate) fn tensor_from_bytes(
    op: &'static str,
    file_type: FileType,
    big_endian: bool,
    shape: &[usize],
    bytes: &[u8],
    device: &Device,
) -> Result<Tensor> {
    let shape = crate::shape::Shape::from(shape);
    shape.check(op)?;
    let count = shape.numel();
    let size = file_type.size();
    if count.checked_mul(size) != Some(bytes.len()) {
        return Err(Error::format(
            op,
            format!(
                "{} bytes of data for shape {shape} of {size}-byte elements",
                bytes.len()
            ),
        ));
    }
    let swapped;
    let bytes = if big_endian && size > 1 {
        let width = if file_type == FileType::Held(DType::C64) {
            4
        } else {
            size
        };
        swapped = bytes
            .chunks_exact(width)
            .flat_map(|c| c.iter().rev().copied())
            .collect::<Vec<u8>>();
        &swapped[..]
    } else {
        bytes
    };
    fn held<T: Element>(
        bytes: &[u8],
        count: usize,
        shape: crate::shape::Shape,
        device: &Device,
    ) -> Result<Tensor> {
        Tensor::from_vec(T::read_bytes(bytes, count), shape, device)
    }
    let words = |n: usize| bytes.chunks_exact(n);
    // Errors of the tensor made (a dtype the device cannot hold, memory)
    // as the loader reports them: the dtype as one the loader cannot put
    // there, saying how to load it.
    let made = match file_type {
        FileType::Held(DType::F32) => held::<f32>(bytes, count, shape, device),
        FileType::Held(DType::F16) => held::<f16>(bytes, count, shape, device),
        FileType::Held(DType::BF16) => held::<bf16>(bytes, count, shape, device),
        FileType::Held(DType::F64) => held::<f64>(bytes, count, shape, device),
        FileType::Held(DType::I32) => held::<i32>(bytes, count, shape, device),
        FileType::Held(DType::I64) => held::<i64>(bytes, count, shape, device),
        FileType::Held(DType::U32) => held::<u32>(bytes, count, shape, device),
        FileType::Held(DType::U8) => held::<u8>(bytes, count, shape, device),
        FileType::Held(DType::Bool) => held::<bool>(bytes, count, shape, device),
        FileType::Held(DType::C64) => {
            let flat = f32::read_bytes(bytes, 2 * count);
            let values: Vec<Complex32> = flat
                .chunks_exact(2)
                .map(|p| Complex32::new(p[0], p[1]))
                .collect();
            Tensor::from_complex(&values, shape, device)
        }
        FileType::I8 => {
            narrowed::<i64, i32>(op, words(1).map(|w| w[0] as i8 as i64), shape, device)
        }
        FileType::I16 => narrowed::<i64, i32>(
            op,
            words(2).map(|w| i16::from_le_bytes([w[0], w[1]]) as i64),
            shape,
            device,
        ),
        FileType::U16 => narrowed::<u64, u32>(
            op,
            words(2).map(|w| u16::from_le_bytes([w[0], w[1]]) as u64),
            shape,
            device,
        ),
        FileType::U64 => narrowed::<u64, u32>(
            op,
            words(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default())),
            shape,
            device,
        ),
    };
    made.map_err(|e| e.named(op).into_unloadable())
}

/// Integers of a width webtensor lacks as `T` (i32 or u32), each checked.
fn narrowed<W: Copy + std::fmt::Display, T: Element + TryFrom<W>>(
    op: &'static str,
    values: impl Iterator<Item = W>,
    shape: crate::shape::Shape,
    device: &Device,
) -> Result<Tensor> {
    let v = values
        .map(|x| {
            T::try_from(x).map_err(|_| {
                Error::format(
                    op,
                    format!(
                        "the integer {x} does not fit {}, the widest such dtype here",
                        T::DTYPE
                    ),
                )
            })
        })
        .collect::<Result<Vec<T>>>()?;
    Tensor::from_vec(v, shape, device)
}
