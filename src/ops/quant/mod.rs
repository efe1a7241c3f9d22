//! Quantized tensors (issue 49): a GGUF tensor's blocks kept as the file
//! holds them, on any device (`QTensor`), decoded on the fly by products
//! (`product.rs`: `Tensor::qmatmul`) and by `QTensor::dequantize`.

mod product;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::quant::{GgmlType, PRODUCT_TYPES};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// A tensor of ggml's quantized blocks (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`,
/// `Q8_0`, `Q2_K` to `Q6_K`, `IQ4_NL`): its rows along the last axis, in blocks of
/// 32 or 256 elements, kept as a GGUF file holds them (on a GPU, bound
/// as words and decoded in registers, with no need for `SHADER_F16`).
/// Products take it as their weight ([`Tensor::qmatmul`], ggml's
/// `mul_mat`: `x @ w.T`), and [`QTensor::dequantize`] gives its values.
///
/// ```
/// use webtensor::{Device, DType, GgmlType, QTensor, Tensor};
/// let dev = Device::cpu();
/// let w = Tensor::from_vec((0..128).map(|i| i as f32 / 64.0 - 1.0).collect::<Vec<_>>(), [2, 64], &dev)?;
/// let q = QTensor::quantize(&w, GgmlType::Q8_0)?;
/// assert_eq!((q.dims(), q.ggml_type()), (&[2, 64][..], GgmlType::Q8_0));
/// let x = Tensor::ones([1, 64], DType::F32, &dev)?;
/// let y = x.qmatmul(&q)?; // [1, 2]: each row of w summed
/// let want = x.matmul(&q.dequantize(DType::F32)?.t())?;
/// assert_eq!(y.to_vec::<f32>()?, want.to_vec::<f32>()?);
/// # Ok::<(), webtensor::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct QTensor {
    ty: GgmlType,
    shape: Shape,
    /// The blocks, u8 `[rows, bytes per row]`.
    blocks: Tensor,
}

impl QTensor {
    /// The tensor of `shape` (NumPy's order: the last axis is the rows')
    /// whose blocks of `ty` are `bytes`, on `device`. On a GPU, natively,
    /// the first weight of a type probes its kernels (see
    /// `DeviceInfo::dropped_kernels`): a submit of what was recorded
    /// before, and a wait for the probe's answer.
    ///
    /// # Errors
    /// `Error::Format` for a type products do not take; `Error::Shape`
    /// when the last axis is not whole blocks or `bytes` is not the
    /// shape's size; device errors.
    pub fn from_blocks(
        ty: GgmlType,
        shape: impl Into<Shape>,
        bytes: &[u8],
        device: &Device,
    ) -> Result<QTensor> {
        const OP: &str = "QTensor::from_blocks";
        let shape = shape.into();
        shape.check(OP)?;
        let (rows, row_bytes) = layout_of(OP, ty, &shape)?;
        let want = rows.checked_mul(row_bytes);
        if want != Some(bytes.len()) {
            return Err(Error::shape(
                OP,
                format!(
                    "{} bytes for {ty} blocks of shape {shape} ({} needed)",
                    bytes.len(),
                    want.map_or("more than a usize".to_string(), |w| w.to_string())
                ),
            ));
        }
        let blocks = Tensor::from_slice(bytes, [rows, row_bytes], device)?;
        crate::backend::probe_quant(OP, &blocks.storage(), ty)?;
        Ok(QTensor { ty, shape, blocks })
    }

    /// `x` (a float tensor whose last axis is whole blocks of 32)
    /// quantized to `ty` (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1` or `Q8_0`) as
    /// gguf-py's quantizer does, on `x`'s device (the values read back and
    /// quantized on the host; native only, use
    /// [`QTensor::quantize_async`] on wasm).
    ///
    /// # Errors
    /// `Error::DType` for a tensor that is not f32, f16, bf16 or f64;
    /// `Error::Format` for a type not quantized here, a value that is not
    /// finite or a block whose f16 scale or minimum would be infinite (a
    /// minimum of -70000, a Q8_0 block past 8.3e6); `Error::Shape` as
    /// [`QTensor::from_blocks`]; device errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn quantize(x: &Tensor, ty: GgmlType) -> Result<QTensor> {
        pollster::block_on(QTensor::quantize_async(x, ty))
    }

    /// [`QTensor::quantize`] for every target.
    ///
    /// # Errors
    /// As [`QTensor::quantize`].
    pub async fn quantize_async(x: &Tensor, ty: GgmlType) -> Result<QTensor> {
        const OP: &str = "QTensor::quantize";
        if !x.dtype().is_float() || x.dtype().is_complex() {
            return Err(Error::dtype(
                OP,
                format!("quantizes float tensors, not {}", x.dtype()),
            ));
        }
        if !crate::quant::encodes(ty) {
            return Err(Error::format(
                OP,
                format!("{ty} is not quantized here (Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 are)"),
            ));
        }
        layout_of(OP, ty, x.shape())?;
        let values = x.to_dtype(DType::F32)?.to_vec_async::<f32>().await?;
        let bytes = crate::quant::quantize(OP, ty, &values)?;
        QTensor::from_blocks(ty, x.shape().clone(), &bytes, x.device())
    }

    /// The blocks' type.
    pub fn ggml_type(&self) -> GgmlType {
        self.ty
    }

    /// The shape of the values (NumPy's order).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The extents of the values.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The device holding the blocks.
    pub fn device(&self) -> &Device {
        self.blocks.device()
    }

    /// The blocks as a u8 tensor `[rows, bytes per row]` (a view: no copy).
    pub fn blocks(&self) -> &Tensor {
        &self.blocks
    }

    /// Rows `start..end` of a matrix (a view of the same blocks: a
    /// quantized tensor is sliced only along its rows, which its blocks
    /// never cross).
    ///
    /// # Errors
    /// `Error::Shape` for a tensor that is not a matrix; `Error::Argument`
    /// for a range past its rows.
    pub fn rows(&self, range: std::ops::Range<usize>) -> Result<QTensor> {
        const OP: &str = "QTensor::rows";
        let [n, k] = *self.dims() else {
            return Err(Error::shape(
                OP,
                format!(
                    "slices the rows of a matrix; this tensor has shape {}",
                    self.shape
                ),
            ));
        };
        if range.start > range.end || range.end > n {
            return Err(Error::argument(
                OP,
                format!("rows {range:?} of a matrix of {n} rows"),
            ));
        }
        Ok(QTensor {
            ty: self.ty,
            shape: Shape::from([range.end - range.start, k]),
            blocks: self
                .blocks
                .narrow(0, range.start, range.end - range.start)?,
        })
    }

    /// The same blocks on `device` (native only; use
    /// [`QTensor::to_device_async`] on wasm).
    ///
    /// # Errors
    /// Device errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_device(&self, device: &Device) -> Result<QTensor> {
        pollster::block_on(self.to_device_async(device))
    }

    /// [`QTensor::to_device`] for every target.
    ///
    /// # Errors
    /// As [`QTensor::to_device`].
    pub async fn to_device_async(&self, device: &Device) -> Result<QTensor> {
        let blocks = self.blocks.to_device_async(device).await?;
        crate::backend::probe_quant("QTensor::to_device", &blocks.storage(), self.ty)?;
        Ok(QTensor {
            ty: self.ty,
            shape: self.shape.clone(),
            blocks,
        })
    }

    /// The blocks' bytes, as a GGUF file holds them (native only; use
    /// [`QTensor::to_bytes_async`] on wasm).
    ///
    /// # Errors
    /// Readback errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        pollster::block_on(self.to_bytes_async())
    }

    /// [`QTensor::to_bytes`] for every target.
    ///
    /// # Errors
    /// As [`QTensor::to_bytes`].
    pub async fn to_bytes_async(&self) -> Result<Vec<u8>> {
        self.blocks.to_vec_async::<u8>().await
    }
}

/// (rows, bytes per row) of blocks of `ty` over `shape`.
///
/// # Errors
/// `Error::Format` naming `op` for a type products do not take;
/// `Error::Shape` for a last axis that is not whole blocks.
fn layout_of(op: &'static str, ty: GgmlType, shape: &Shape) -> Result<(usize, usize)> {
    if !PRODUCT_TYPES.contains(&ty) {
        return Err(Error::format(
            op,
            format!(
                "{ty} is not a quantized type taken here (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, \
                 Q2_K to Q6_K and IQ4_NL are)"
            ),
        ));
    }
    let block = ty.block_size() as usize;
    let k = shape.dims().last().copied().unwrap_or(1);
    if shape.rank() == 0 || !k.is_multiple_of(block) {
        return Err(Error::shape(
            op,
            format!("{ty} rows are whole blocks of {block}; shape {shape} is not"),
        ));
    }
    let rows = shape.dims()[..shape.rank() - 1].iter().product();
    Ok((rows, k / block * ty.block_bytes() as usize))
}
