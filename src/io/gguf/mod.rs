//! GGUF, llama.cpp's file of models: typed metadata (the architecture, its
//! hyperparameters, the tokenizer's vocabulary) and named tensors, plain
//! (`F32`, `F16`, `BF16` ...) or quantized in blocks (`Q4_0`, `Q4_K`,
//! `Q8_0` ...). Versions 2 and 3 are read and version 3 is written, as
//! gguf-py (llama.cpp's Python package) reads and writes them.
//!
//! A GGUF tensor's extents are stored in ggml's order, the contiguous axis
//! first; here shapes are in NumPy's (and webtensor's) order, the
//! contiguous axis last: ggml's `[4096, 11008]` is shape `[11008, 4096]`.
//!
//! [`GgufWriter`] writes a file, [`Gguf`] reads one.

mod read;
mod types;
mod write;

pub use crate::quant::GgmlType;
pub use types::{GgufValue, GgufValueType};
pub use write::GgufWriter;

use super::host_bytes::{FileType, tensor_from_bytes};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::QTensor;
use crate::tensor::Tensor;

/// One tensor of a GGUF file, as its header describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufTensorInfo {
    /// The tensor's name (`"blk.0.attn_q.weight"`).
    pub name: String,
    /// The extents in NumPy's order (the file's ggml order reversed): the
    /// last axis is contiguous, and a quantized type's blocks run along
    /// it.
    pub shape: Vec<usize>,
    /// The element type.
    pub ggml_type: GgmlType,
    /// Where the tensor's bytes start, from the start of the data section.
    pub offset: u64,
    /// How many bytes the tensor's data takes.
    pub size: u64,
}

/// A GGUF file read into memory: its metadata and its tensors' headers,
/// checked, and the file's bytes, from which tensors load on demand.
#[derive(Clone)]
pub struct Gguf {
    version: u32,
    alignment: u64,
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<GgufTensorInfo>,
    /// Where the data section starts in `bytes` (may be past the end of a
    /// file without tensor data).
    data_start: usize,
    bytes: Vec<u8>,
}

/// The header, not the bytes (a model's are gigabytes).
impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("version", &self.version)
            .field("alignment", &self.alignment)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl Gguf {
    /// Reads a GGUF file from its bytes (a `Vec` is kept without a copy).
    ///
    /// # Errors
    /// `Error::Format` naming `Gguf::from_bytes` and the field for anything
    /// malformed: another magic, an unknown version, value type or ggml
    /// type, a count or a length past the end of the bytes (or past 2^16
    /// metadata entries, 2^20 tensors or 2^24 array values), a repeated key
    /// or tensor name, arrays nested more than 8 deep, a string that is not
    /// UTF-8, more than 4 axes, rows that are not whole blocks, data
    /// outside the file or off the alignment.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<Gguf> {
        read::parse("Gguf::from_bytes", bytes.into())
    }

    /// Reads the GGUF file at `path` (native only).
    ///
    /// ```no_run
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = webtensor::Device::cpu();
    /// let file = webtensor::io::Gguf::load("model.gguf")?;
    /// for t in file.tensors() {
    ///     println!("{} {:?} {}", t.name, t.shape, t.ggml_type);
    /// }
    /// let norm = file.tensor("output_norm.weight", &dev)?;
    /// # let _ = norm;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Io` naming `Gguf::load` and the path; as
    /// [`Gguf::from_bytes`], an `Error::Format` naming the path too.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Gguf> {
        const OP: &str = "Gguf::load";
        super::files::load_file(OP, path.as_ref(), |b| read::parse(OP, b))
    }

    /// The file's format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The alignment of tensor data in bytes (`general.alignment`, or 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// The metadata, in the file's order.
    pub fn metadata(&self) -> &[(String, GgufValue)] {
        &self.metadata
    }

    /// The metadata value of `key`.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensors' headers, in the file's order.
    pub fn tensors(&self) -> &[GgufTensorInfo] {
        &self.tensors
    }

    /// The header of the tensor `name`.
    ///
    /// # Errors
    /// `Error::Argument` naming `op` when the file has no such tensor.
    fn info(&self, op: &'static str, name: &str) -> Result<&GgufTensorInfo> {
        self.tensors.iter().find(|t| t.name == name).ok_or_else(|| {
            Error::argument(
                op,
                format!(
                    "the file has no tensor {name:?} (it has {} tensors)",
                    self.tensors.len()
                ),
            )
        })
    }

    /// The bytes of the tensor `name` as the file stores them (a quantized
    /// type's blocks, one row of the last axis after another).
    ///
    /// # Errors
    /// `Error::Argument` naming `Gguf::tensor_bytes` when the file has no
    /// such tensor.
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let t = self.info("Gguf::tensor_bytes", name)?;
        if t.size == 0 {
            return Ok(&[]);
        }
        // The parser checked that the data lies inside the file.
        let start = self.data_start + t.offset as usize;
        Ok(&self.bytes[start..start + t.size as usize])
    }

    /// The tensor `name` on `device` as `dtype` (f32, f16, bf16, or f64 on
    /// the CPU), contiguous: a quantized one's blocks decoded to f32 as
    /// gguf-py decodes them (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`,
    /// `Q2_K` to `Q6_K`, `IQ4_NL`), bit for bit, then rounded once to `dtype`; a
    /// plain one as [`Gguf::tensor`] loads it, cast to `dtype`. The blocks
    /// are decoded on the host, on the calling thread.
    ///
    /// # Errors
    /// `Error::Argument` naming `Gguf::dequantize` when the file has no
    /// such tensor; `Error::DType` for a `dtype` that is not a float;
    /// `Error::Format` for a quantized type without a decoder here (the
    /// `IQ` types but `IQ4_NL`, the `TQ` types, `MXFP4`, `Q8_1`, `Q8_K`);
    /// device errors.
    pub fn dequantize(&self, name: &str, dtype: DType, device: &Device) -> Result<Tensor> {
        const OP: &str = "Gguf::dequantize";
        let t = self.info(OP, name)?;
        if !dtype.is_float() {
            return Err(Error::dtype(
                OP,
                format!("tensors dequantize to a float dtype, not {dtype}"),
            ));
        }
        let plain = if t.ggml_type.is_quantized() {
            let values = crate::quant::dequantize(OP, t.ggml_type, self.tensor_bytes(name)?)
                .map_err(|e| e.in_tensor(name))?;
            Tensor::from_vec(values, t.shape.clone(), device)
                .map_err(|e| e.named(OP).in_tensor(name))?
        } else if t.ggml_type == GgmlType::F64 && !device.is_cpu() && dtype != DType::F64 {
            // A GPU holds no f64: cast on the host, then moved (a CPU
            // tensor's move is ready at once, in a browser too).
            let host = self.tensor(name, &Device::cpu()).map_err(|e| e.named(OP))?;
            let moved = host.to_dtype(dtype).and_then(|t| {
                futures::FutureExt::now_or_never(t.to_device_async(device)).unwrap_or_else(|| {
                    Err(Error::internal(OP, "a host tensor's move was not ready"))
                })
            });
            return moved.map_err(|e| e.named(OP).in_tensor(name));
        } else {
            // `tensor` names the tensor in its errors.
            self.tensor(name, device).map_err(|e| e.named(OP))?
        };
        plain
            .to_dtype(dtype)
            .map_err(|e| e.named(OP).in_tensor(name))
    }

    /// The quantized tensor `name` on `device`, its blocks as the file
    /// holds them (see [`QTensor`]): the weight a product decodes as it
    /// goes (`x.qmatmul(&w)`), a quarter to a half of its f16 bytes.
    ///
    /// # Errors
    /// `Error::Argument` naming `Gguf::qtensor` when the file has no such
    /// tensor; `Error::Format` for a type that is not one [`QTensor`]
    /// takes; device errors.
    pub fn qtensor(&self, name: &str, device: &Device) -> Result<QTensor> {
        const OP: &str = "Gguf::qtensor";
        let t = self.info(OP, name)?;
        let bytes = self.tensor_bytes(name)?;
        QTensor::from_blocks(t.ggml_type, t.shape.clone(), bytes, device)
            .map_err(|e| e.named(OP).in_tensor(name))
    }

    /// The tensor `name` on `device`, contiguous, of the dtype its type
    /// holds: F32, F16, BF16, F64 (not on a GPU), I32 and I64 as
    /// themselves, I8 and I16 as i32.
    ///
    /// # Errors
    /// `Error::Argument` naming `Gguf::tensor` when the file has no such
    /// tensor; `Error::Format` for a quantized type (see
    /// [`Gguf::dequantize`]; its blocks are [`Gguf::tensor_bytes`]); device
    /// errors.
    pub fn tensor(&self, name: &str, device: &Device) -> Result<Tensor> {
        const OP: &str = "Gguf::tensor";
        let t = self.info(OP, name)?;
        let file_type = match t.ggml_type {
            GgmlType::F32 => FileType::Held(DType::F32),
            GgmlType::F16 => FileType::Held(DType::F16),
            GgmlType::BF16 => FileType::Held(DType::BF16),
            GgmlType::F64 => FileType::Held(DType::F64),
            GgmlType::I32 => FileType::Held(DType::I32),
            GgmlType::I64 => FileType::Held(DType::I64),
            GgmlType::I8 => FileType::I8,
            GgmlType::I16 => FileType::I16,
            other => {
                return Err(Error::format(
                    OP,
                    format!(
                        "tensor {name:?} is {other}, quantized: Gguf::dequantize decodes it, \
                         Gguf::tensor_bytes gives its blocks"
                    ),
                ));
            }
        };
        let bytes = self.tensor_bytes(name)?;
        tensor_from_bytes(OP, file_type, false, &t.shape, bytes, device)
            .map_err(|e| e.in_tensor(name))
    }
}
