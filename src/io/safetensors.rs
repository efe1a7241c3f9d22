//! The safetensors format (a JSON header of names, dtypes, shapes and byte
//! ranges, then the data), written through the `safetensors` crate and
//! read by `safetensors_header`'s checked reader.

use super::host_bytes::{FileType, row_major_bytes, tensor_from_bytes};
use super::safetensors_header as header;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use safetensors::tensor::{Dtype, View};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The safetensors dtype of `dtype`.
fn file_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F64 => Dtype::F64,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::U32 => Dtype::U32,
        DType::U8 => Dtype::U8,
        DType::Bool => Dtype::BOOL,
        DType::C64 => Dtype::C64,
    }
}

/// What a safetensors dtype loads as.
fn file_type(op: &'static str, name: &str, d: Dtype) -> Result<FileType> {
    Ok(match d {
        Dtype::F32 => FileType::Held(DType::F32),
        Dtype::F16 => FileType::Held(DType::F16),
        Dtype::F64 => FileType::Held(DType::F64),
        Dtype::I32 => FileType::Held(DType::I32),
        Dtype::U32 => FileType::Held(DType::U32),
        Dtype::U8 => FileType::Held(DType::U8),
        Dtype::BOOL => FileType::Held(DType::Bool),
        Dtype::C64 => FileType::Held(DType::C64),
        Dtype::BF16 => FileType::Held(DType::BF16),
        Dtype::I8 => FileType::I8,
        Dtype::I16 => FileType::I16,
        Dtype::I64 => FileType::Held(DType::I64),
        Dtype::U16 => FileType::U16,
        Dtype::U64 => FileType::U64,
        other => {
            return Err(Error::format(
                op,
                format!("tensor {name:?} has dtype {other}, which has no webtensor dtype"),
            ));
        }
    })
}

/// One tensor's bytes, as the `safetensors` crate takes them.
struct Prepared {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Prepared {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// The tensors of a safetensors file's bytes by name, as safetensors'
/// `load` gives them (a map iterates in name order; the format keeps no
/// order of its own). bf16 loads as bf16 and i64 as i64; i8, i16, u16
/// and u64 as i32 or u32 when every value fits. All or nothing: a tensor
/// webtensor cannot hold (an f8 dtype, f64 onto a GPU) is an error;
/// [`Safetensors`] reads the others by name.
///
/// # Errors
/// `Error::Format` naming `from_safetensors_bytes` for a malformed file or
/// a dtype without a webtensor dtype; device errors; errors of one tensor
/// name it.
pub fn from_safetensors_bytes(bytes: &[u8], device: &Device) -> Result<BTreeMap<String, Tensor>> {
    read("from_safetensors_bytes", bytes, device)
}

fn read(op: &'static str, bytes: &[u8], device: &Device) -> Result<BTreeMap<String, Tensor>> {
    let (entries, data) = header::entries(op, bytes)?;
    // In name order, so that an error names the first bad tensor.
    entries
        .iter()
        .map(|e| Ok((e.name.clone(), load_entry(op, e, data, device)?)))
        .collect()
}

/// The tensor of entry `e` of a file whose data is `data`, on `device`.
///
/// # Errors
/// `Error::Format` for a dtype without a webtensor dtype; device errors;
/// each naming the tensor.
fn load_entry(op: &'static str, e: &header::Entry, data: &[u8], device: &Device) -> Result<Tensor> {
    let t = file_type(op, &e.name, e.dtype)?;
    tensor_from_bytes(op, t, false, &e.shape, &data[e.range.clone()], device)
        .map_err(|err| err.named(op).in_tensor(&e.name))
}

/// A safetensors file read one tensor at a time: the header is checked
/// when opened, and a tensor made only when asked for, so a tensor
/// webtensor cannot hold (an f8 dtype, f64 onto a GPU) leaves the others
/// readable.
///
/// ```
/// use webtensor::{Device, Tensor, io};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let w = Tensor::ones([2, 2], webtensor::DType::F32, &dev)?;
/// let bytes = io::to_safetensors_bytes(&[("w", &w), ("b", &w.sum(..)?)])?;
/// let file = io::Safetensors::from_bytes(&bytes)?;
/// assert_eq!(file.names(), ["b", "w"]);
/// assert_eq!(file.load("b", &dev)?.item::<f32>()?, 4.0);
/// # Ok(())
/// # }
/// ```
pub struct Safetensors<'a> {
    bytes: Cow<'a, [u8]>,
    entries: Vec<header::Entry>,
    names: Vec<String>,
    /// Where the data the entries' ranges index starts.
    data_at: usize,
    /// The file it was read from, which errors name.
    path: Option<String>,
}

impl<'a> Safetensors<'a> {
    /// The file held in `bytes`.
    ///
    /// # Errors
    /// `Error::Format` naming `Safetensors::from_bytes` for a malformed
    /// header.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Safetensors<'a>> {
        Safetensors::new("Safetensors::from_bytes", Cow::Borrowed(bytes), None)
    }

    fn new(
        op: &'static str,
        bytes: Cow<'a, [u8]>,
        path: Option<String>,
    ) -> Result<Safetensors<'a>> {
        let (entries, data) = header::entries(op, &bytes)?;
        let data_at = bytes.len() - data.len();
        let names = entries.iter().map(|e| e.name.clone()).collect();
        Ok(Safetensors {
            bytes,
            entries,
            names,
            data_at,
            path,
        })
    }

    /// The names of the file's tensors, in name order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The tensor named `name` on `device`.
    ///
    /// # Errors
    /// `Error::Argument` for a name the file has no tensor of; as
    /// [`from_safetensors_bytes`] for that tensor; each naming, for a file
    /// opened from a path, the file.
    pub fn load(&self, name: &str, device: &Device) -> Result<Tensor> {
        const OP: &str = "Safetensors::load";
        let loaded = match self.names.binary_search_by(|n| n.as_str().cmp(name)) {
            Ok(k) => load_entry(OP, &self.entries[k], &self.bytes[self.data_at..], device),
            Err(_) => Err(Error::argument(
                OP,
                format!("no tensor named {name:?}; the file holds {:?}", self.names),
            )),
        };
        loaded.map_err(|e| match &self.path {
            Some(path) => e.about(path),
            None => e,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Safetensors<'static> {
    /// The safetensors file at `path`, read whole.
    ///
    /// # Errors
    /// `Error::Io` naming `Safetensors::open` and the path;
    /// `Error::Format` for a malformed header, naming the path.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Safetensors<'static>> {
        const OP: &str = "Safetensors::open";
        let path = path.as_ref();
        let shown = Some(path.display().to_string());
        super::files::load_file(OP, path, |b| Safetensors::new(OP, Cow::Owned(b), shown))
    }
}

/// The bytes of a safetensors file holding each named tensor (any view,
/// written in row-major order), blocking (native only).
///
/// # Errors
/// `Error::Format` naming `to_safetensors_bytes` for a repeated name or
/// the name `__metadata__`; readback errors.
#[cfg(not(target_arch = "wasm32"))]
pub fn to_safetensors_bytes(tensors: &[(&str, &Tensor)]) -> Result<Vec<u8>> {
    pollster::block_on(to_safetensors_bytes_async(tensors))
}

/// [`to_safetensors_bytes`] on every target.
///
/// # Errors
/// As [`to_safetensors_bytes`].
pub async fn to_safetensors_bytes_async(tensors: &[(&str, &Tensor)]) -> Result<Vec<u8>> {
    const OP: &str = "to_safetensors_bytes";
    let mut prepared = Vec::with_capacity(tensors.len());
    let mut names = std::collections::HashSet::with_capacity(tensors.len());
    for (name, t) in tensors {
        if *name == "__metadata__" {
            return Err(Error::format(
                OP,
                "the name \"__metadata__\" is the format's own header entry",
            ));
        }
        if !names.insert(*name) {
            return Err(Error::format(
                OP,
                format!("the name {name:?} is given twice"),
            ));
        }
        prepared.push((
            *name,
            Prepared {
                dtype: file_dtype(t.dtype()),
                shape: t.dims().to_vec(),
                data: row_major_bytes(t).await?,
            },
        ));
    }
    safetensors::serialize(prepared.iter().map(|(n, p)| (*n, p)), None)
        .map_err(|e| Error::format(OP, e.to_string()))
}

/// Writes the named tensors to a safetensors file at `path`.
///
/// # Errors
/// `Error::Io` naming `save_safetensors` and the path; as
/// [`to_safetensors_bytes`].
#[cfg(not(target_arch = "wasm32"))]
pub fn save_safetensors(
    path: impl AsRef<std::path::Path>,
    tensors: &[(&str, &Tensor)],
) -> Result<()> {
    super::files::write_file(
        "save_safetensors",
        path.as_ref(),
        &to_safetensors_bytes(tensors)?,
    )
}

/// Reads every tensor of a safetensors file onto `device`, by name.
///
/// ```no_run
/// # fn main() -> webtensor::Result<()> {
/// let dev = webtensor::Device::cpu();
/// let weights = webtensor::io::load_safetensors("model.safetensors", &dev)?;
/// let w = &weights["conv1.weight"];
/// # let _ = w;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// `Error::Io` naming `load_safetensors` and the path; as
/// [`from_safetensors_bytes`], an `Error::Format` naming the path too.
#[cfg(not(target_arch = "wasm32"))]
pub fn load_safetensors(
    path: impl AsRef<std::path::Path>,
    device: &Device,
) -> Result<BTreeMap<String, Tensor>> {
    const OP: &str = "load_safetensors";
    super::files::load_file(OP, path.as_ref(), |b| read(OP, &b, device))
}
