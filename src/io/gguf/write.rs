//! Writing a GGUF file (version 3), laid out as gguf-py lays it out: the
//! header, the metadata in the order given, the tensors' headers, then
//! each tensor's data, every part of the data padded to the alignment.

use super::read::{DEFAULT_ALIGNMENT, MAX_ARRAY_VALUES, MAX_DIMS, MAX_ENTRIES, MAX_TENSORS};
use super::types::GgufValue;
use crate::backend::cpu::try_with_capacity;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::quant::GgmlType;
use crate::tensor::Tensor;

/// The longest tensor name llama.cpp loads, in bytes (`GGML_MAX_NAME`
/// less its terminating zero).
const MAX_NAME: usize = 63;

/// A tensor waiting to be written.
#[derive(Clone)]
enum Entry {
    /// A tensor, read back when the file is written.
    Tensor(Tensor),
    /// A float tensor, quantized to `ggml_type` when the file is written.
    Quantized { tensor: Tensor, ggml_type: GgmlType },
    /// Bytes as the file stores them, of `ggml_type` and `shape`.
    Raw {
        ggml_type: GgmlType,
        shape: Vec<usize>,
        bytes: Vec<u8>,
    },
}

/// Builds a GGUF file: metadata and tensors added in order, then written
/// as bytes or to a file. [`Gguf`](super::Gguf) reads what it writes:
///
/// ```
/// use webtensor::io::{Gguf, GgufValue, GgufWriter};
/// use webtensor::{Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let w = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
/// let mut writer = GgufWriter::new();
/// writer.add_metadata("general.architecture", GgufValue::String("llama".into()))?;
/// writer.add_tensor("w", &w)?;
/// let file = Gguf::from_bytes(writer.to_bytes()?)?;
/// assert_eq!(file.get("general.architecture").and_then(GgufValue::as_str), Some("llama"));
/// assert_eq!(file.tensor("w", &dev)?.dims(), &[2, 3]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<(String, Entry)>,
    alignment: Option<u64>,
    /// The keys and names given so far, and the metadata's array values
    /// in all: each add checks against them at once (a scan of every
    /// earlier one made a file of 2^20 tensors 5 * 10^11 comparisons).
    keys: std::collections::HashSet<String>,
    names: std::collections::HashSet<String>,
    array_values: u64,
}

/// The names and the metadata's keys, not the data.
impl std::fmt::Debug for GgufWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.metadata.iter().map(|(k, _)| k.as_str()).collect();
        let names: Vec<&str> = self.tensors.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("GgufWriter")
            .field("metadata", &keys)
            .field("tensors", &names)
            .field("alignment", &self.alignment)
            .finish()
    }
}

/// `Error::Format` naming `op`.
fn refuse(op: &'static str, msg: String) -> Error {
    Error::format(op, msg)
}

/// Checks that `value` (the value of `key`) can be written: arrays hold
/// items of their own type only, at most 8 deep.
fn check_value(op: &'static str, key: &str, value: &GgufValue, depth: u32) -> Result<()> {
    if let GgufValue::Array { item, items } = value {
        if depth >= 8 {
            return Err(refuse(
                op,
                format!("metadata {key:?}: arrays nest deeper than 8 levels"),
            ));
        }
        for v in items {
            if v.value_type() != *item {
                return Err(refuse(
                    op,
                    format!(
                        "metadata {key:?}: an array of {item:?} holds a {:?}",
                        v.value_type()
                    ),
                ));
            }
            check_value(op, key, v, depth + 1)?;
        }
    }
    Ok(())
}

impl GgufWriter {
    /// An empty file.
    pub fn new() -> GgufWriter {
        GgufWriter::default()
    }

    /// Adds `key` = `value` to the metadata. `general.alignment` (a u32
    /// power of two) sets the alignment of the tensors' data (32 without
    /// it).
    ///
    /// # Errors
    /// `Error::Format` naming `GgufWriter::add_metadata` for a key given
    /// twice, an array holding an item of another type or nested more than
    /// 8 deep, arrays holding more than 2^24 values in all or more than
    /// 2^16 entries (the reader's limits), or a `general.alignment` that
    /// is not a u32 power of two.
    pub fn add_metadata(&mut self, key: &str, value: GgufValue) -> Result<&mut GgufWriter> {
        const OP: &str = "GgufWriter::add_metadata";
        if self.keys.contains(key) {
            return Err(refuse(OP, format!("metadata {key:?} is given twice")));
        }
        if self.metadata.len() as u64 >= MAX_ENTRIES {
            return Err(refuse(
                OP,
                format!("metadata {key:?}: GGUF files are read with at most {MAX_ENTRIES} entries"),
            ));
        }
        check_value(OP, key, &value, 0)?;
        let before = self.array_values;
        if value.array_values() > MAX_ARRAY_VALUES - before {
            return Err(refuse(
                OP,
                format!(
                    "metadata {key:?}: {} array values after {before} others; GGUF files are read \
                     with at most {MAX_ARRAY_VALUES} in all",
                    value.array_values()
                ),
            ));
        }
        if key == "general.alignment" {
            match value {
                GgufValue::U32(a) if a.is_power_of_two() => self.alignment = Some(a.into()),
                ref v => {
                    return Err(refuse(
                        OP,
                        format!("\"general.alignment\" is {v:?}; it must be a u32 power of two"),
                    ));
                }
            }
        }
        self.array_values += value.array_values();
        self.keys.insert(key.to_string());
        self.metadata.push((key.to_string(), value));
        Ok(self)
    }

    /// Adds a checked tensor's entry under `name`.
    fn push(&mut self, name: &str, entry: Entry) {
        self.names.insert(name.to_string());
        self.tensors.push((name.to_string(), entry));
    }

    /// Checks a tensor's name and rank before it is added.
    fn check_tensor(&self, op: &'static str, name: &str, rank: usize) -> Result<()> {
        if name.len() > MAX_NAME {
            return Err(refuse(
                op,
                format!(
                    "the tensor name {name:?} has {} bytes; llama.cpp loads names of at most {MAX_NAME}",
                    name.len()
                ),
            ));
        }
        if self.names.contains(name) {
            return Err(refuse(
                op,
                format!("the tensor name {name:?} is given twice"),
            ));
        }
        if rank > MAX_DIMS as usize {
            return Err(refuse(
                op,
                format!("tensor {name:?} has {rank} axes; GGUF tensors have at most {MAX_DIMS}"),
            ));
        }
        if self.tensors.len() as u64 >= MAX_TENSORS {
            return Err(refuse(
                op,
                format!("tensor {name:?}: GGUF files are read with at most {MAX_TENSORS} tensors"),
            ));
        }
        Ok(())
    }

    /// Adds `tensor` (any view; written in row-major order when the file
    /// is) as `name`: f32, f16, bf16, f64, i32 and i64 as the GGUF types
    /// of those names.
    ///
    /// # Errors
    /// `Error::Format` naming `GgufWriter::add_tensor` for a name given
    /// twice or longer than 63 bytes, more than 4 axes, a tensor past the
    /// reader's 2^20, or a dtype GGUF has no type for (u8, u32, bool,
    /// c64).
    pub fn add_tensor(&mut self, name: &str, tensor: &Tensor) -> Result<&mut GgufWriter> {
        const OP: &str = "GgufWriter::add_tensor";
        self.check_tensor(OP, name, tensor.rank())?;
        if ggml_type_of(tensor.dtype()).is_none() {
            return Err(refuse(
                OP,
                format!(
                    "tensor {name:?} is {}: GGUF has no such type (write f32, f16, bf16, f64, \
                     i32 or i64)",
                    tensor.dtype()
                ),
            ));
        }
        self.push(name, Entry::Tensor(tensor.clone()));
        Ok(self)
    }

    /// Adds `tensor` (a float dtype, any view) as `name`, quantized to
    /// `ggml_type` (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1` or `Q8_0`) when the file
    /// is written, bit for bit as gguf-py's quantizer makes the blocks
    /// (from the values rounded to f32).
    ///
    /// # Errors
    /// `Error::Format` naming `GgufWriter::add_quantized` as for
    /// [`GgufWriter::add_tensor`], for another type, a dtype that is not a
    /// float, or a last axis that is not whole blocks of 32; at
    /// [`GgufWriter::to_bytes`], `Error::Format` for a value that is not
    /// finite or a block whose f16 scale or minimum would be infinite,
    /// which gguf-py writes (see [`QTensor::quantize`](crate::QTensor::quantize)).
    pub fn add_quantized(
        &mut self,
        name: &str,
        ggml_type: GgmlType,
        tensor: &Tensor,
    ) -> Result<&mut GgufWriter> {
        const OP: &str = "GgufWriter::add_quantized";
        self.check_tensor(OP, name, tensor.rank())?;
        if !crate::quant::encodes(ggml_type) {
            return Err(refuse(
                OP,
                format!(
                    "tensor {name:?}: {ggml_type} is not quantized here (Q4_0, Q4_1, Q5_0, Q5_1 \
                     and Q8_0 are)"
                ),
            ));
        }
        if !tensor.dtype().is_float() {
            return Err(refuse(
                OP,
                format!("tensor {name:?} is {}, not a float", tensor.dtype()),
            ));
        }
        let last = tensor.dims().last().copied().unwrap_or(1) as u64;
        if !last.is_multiple_of(ggml_type.block_size()) {
            return Err(refuse(
                OP,
                format!(
                    "tensor {name:?}: rows of {last} elements are not whole {ggml_type} blocks of {}",
                    ggml_type.block_size()
                ),
            ));
        }
        self.push(
            name,
            Entry::Quantized {
                tensor: tensor.clone(),
                ggml_type,
            },
        );
        Ok(self)
    }

    /// Adds a tensor as the file stores it: `bytes` of `ggml_type` and
    /// `shape` (NumPy's order; a quantized type's blocks run along the
    /// last axis), such as [`Gguf::tensor_bytes`](super::Gguf::tensor_bytes)
    /// gives.
    ///
    /// # Errors
    /// `Error::Format` naming `GgufWriter::add_raw_tensor` as for
    /// [`GgufWriter::add_tensor`], for a last axis that is not whole
    /// blocks, or for bytes that are not the shape's.
    pub fn add_raw_tensor(
        &mut self,
        name: &str,
        ggml_type: GgmlType,
        shape: &[usize],
        bytes: Vec<u8>,
    ) -> Result<&mut GgufWriter> {
        const OP: &str = "GgufWriter::add_raw_tensor";
        self.check_tensor(OP, name, shape.len())?;
        // The reader's limits (extents are i64 to gguf.cpp; zero extents
        // make any other extent's bytes 0).
        crate::Shape::from(shape)
            .check(OP)
            .map_err(|e| refuse(OP, format!("tensor {name:?}: {e}")))?;
        let last = shape.last().copied().unwrap_or(1) as u64;
        if !last.is_multiple_of(ggml_type.block_size()) {
            return Err(refuse(
                OP,
                format!(
                    "tensor {name:?}: rows of {last} {ggml_type} elements are not whole blocks of {}",
                    ggml_type.block_size()
                ),
            ));
        }
        let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        let want = count.and_then(|n| ggml_type.bytes_for(n));
        if want != Some(bytes.len() as u64) {
            return Err(refuse(
                OP,
                format!(
                    "tensor {name:?}: {} bytes for shape {shape:?} of {ggml_type}, which takes {}",
                    bytes.len(),
                    want.map_or("more than a u64 counts".into(), |w| w.to_string())
                ),
            ));
        }
        self.push(
            name,
            Entry::Raw {
                ggml_type,
                shape: shape.to_vec(),
                bytes,
            },
        );
        Ok(self)
    }

    /// The file's bytes, blocking (native only).
    ///
    /// # Errors
    /// Readback errors of the tensors added; `Error::OutOfMemory` when the
    /// host refuses a quantized tensor's blocks or the file's bytes (an
    /// alignment of 2^31 pads each tensor to 2 GiB); `Error::Format` for a
    /// file past 2^64 bytes or, on a 32-bit target, past its memory.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        pollster::block_on(self.to_bytes_async())
    }

    /// Writes the file to `path` (native only).
    ///
    /// # Errors
    /// `Error::Io` naming `GgufWriter::save` and the path; as
    /// [`GgufWriter::to_bytes`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        super::super::files::write_file("GgufWriter::save", path.as_ref(), &self.to_bytes()?)
    }

    /// [`GgufWriter::to_bytes`] on every target.
    ///
    /// # Errors
    /// As [`GgufWriter::to_bytes`].
    pub async fn to_bytes_async(&self) -> Result<Vec<u8>> {
        const OP: &str = "GgufWriter::to_bytes";
        let alignment = self.alignment.unwrap_or(DEFAULT_ALIGNMENT);
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut out, key);
            out.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut out, value);
        }
        // Each tensor's data as the file stores it.
        let mut data = Vec::with_capacity(self.tensors.len());
        for (name, entry) in &self.tensors {
            data.push(match entry {
                Entry::Tensor(t) => {
                    let ggml_type = ggml_type_of(t.dtype()).unwrap_or(GgmlType::F32);
                    let bytes = super::super::host_bytes::row_major_bytes(t).await?;
                    (ggml_type, t.dims().to_vec(), std::borrow::Cow::Owned(bytes))
                }
                Entry::Quantized { tensor, ggml_type } => {
                    let values = tensor.to_dtype(DType::F32)?.to_vec_async::<f32>().await?;
                    let bytes = crate::quant::quantize(OP, *ggml_type, &values)
                        .map_err(|e| e.in_tensor(name))?;
                    (
                        *ggml_type,
                        tensor.dims().to_vec(),
                        std::borrow::Cow::Owned(bytes),
                    )
                }
                Entry::Raw {
                    ggml_type,
                    shape,
                    bytes,
                } => (
                    *ggml_type,
                    shape.clone(),
                    std::borrow::Cow::Borrowed(&bytes[..]),
                ),
            });
        }
        // Each part's length padded to the alignment, in u64 and checked:
        // an alignment of 2^31 pads every tensor to 2 GiB.
        let padded = |len: u64| {
            len.checked_next_multiple_of(alignment)
                .ok_or_else(|| refuse(OP, format!("{len} bytes padded to {alignment} pass 2^64")))
        };
        let mut offset = 0u64;
        for ((name, _), (ggml_type, shape, bytes)) in self.tensors.iter().zip(&data) {
            put_string(&mut out, name);
            out.extend_from_slice(&(shape.len() as u32).to_le_bytes());
            for &d in shape.iter().rev() {
                out.extend_from_slice(&(d as u64).to_le_bytes());
            }
            out.extend_from_slice(&ggml_type.id().to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offset = offset
                .checked_add(padded(bytes.len() as u64)?)
                .ok_or_else(|| refuse(OP, "the tensors' data passes 2^64 bytes".into()))?;
        }
        // The whole file's room taken at once (or refused, an error, not an
        // abort or a 32-bit target's capacity overflow), then filled.
        let total = padded(out.len() as u64)?
            .checked_add(offset)
            .ok_or_else(|| refuse(OP, "the file passes 2^64 bytes".into()))?;
        let mut file = usize::try_from(total)
            .map_err(|_| {
                refuse(
                    OP,
                    format!("a file of {total} bytes passes this target's memory"),
                )
            })
            .and_then(|total| try_with_capacity::<u8>(OP, total))?;
        file.extend_from_slice(&out);
        pad(&mut file, alignment);
        for (_, _, bytes) in &data {
            file.extend_from_slice(bytes);
            pad(&mut file, alignment);
        }
        Ok(file)
    }
}

/// The GGUF type a tensor of `dtype` is written as.
fn ggml_type_of(dtype: DType) -> Option<GgmlType> {
    Some(match dtype {
        DType::F32 => GgmlType::F32,
        DType::F16 => GgmlType::F16,
        DType::BF16 => GgmlType::BF16,
        DType::F64 => GgmlType::F64,
        DType::I32 => GgmlType::I32,
        DType::I64 => GgmlType::I64,
        DType::U8 | DType::U32 | DType::Bool | DType::C64 => return None,
    })
}

/// Zeros up to the next multiple of `alignment`.
fn pad(out: &mut Vec<u8>, alignment: u64) {
    let len = (out.len() as u64).next_multiple_of(alignment);
    out.resize(len as usize, 0);
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &GgufValue) {
    match value {
        GgufValue::U8(v) => out.push(*v),
        GgufValue::I8(v) => out.push(*v as u8),
        GgufValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::Bool(v) => out.push(u8::from(*v)),
        GgufValue::String(s) => put_string(out, s),
        GgufValue::Array { item, items } => {
            out.extend_from_slice(&item.id().to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                put_value(out, v);
            }
        }
        GgufValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::GgufValueType;

    #[test]
    fn a_value_type_names_its_number() {
        let v = GgufValue::Array {
            item: GgufValueType::String,
            items: vec![GgufValue::String("a".into())],
        };
        let mut out = Vec::new();
        put_value(&mut out, &v);
        assert_eq!(&out[..4], &8u32.to_le_bytes());
        assert_eq!(&out[4..12], &1u64.to_le_bytes());
    }

    /// The writer stops at the reader's count of metadata entries (a file
    /// of more was written, then refused by `Gguf::from_bytes`).
    #[test]
    fn metadata_past_the_readers_count_is_refused() {
        let mut w = GgufWriter::new();
        w.metadata = (0..MAX_ENTRIES)
            .map(|k| (format!("k{k}"), GgufValue::U8(1)))
            .collect();
        let e = w.add_metadata("one.more", GgufValue::U8(1)).unwrap_err();
        assert!(e.to_string().contains("65536"), "{e}");
        w.metadata.pop();
        w.add_metadata("one.more", GgufValue::U8(1)).unwrap();
    }
}
