//! NumPy's `.npz` format: a zip archive of `.npy` files, one per named
//! array (`np.savez`, `np.savez_compressed`, `np.load`).

use super::{npy, zip};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::collections::HashMap;

/// The tensors of an `.npz` archive's bytes, in the archive's order: each
/// array `np.load` reaches, under the key that reaches it (see
/// [`Npz::names`]). Entries that are not `.npy` files (without its magic
/// bytes, or not `.npy` and compressed other than by deflate: a
/// `meta.json` beside the arrays, a folder) are skipped, where `np.load`
/// hands back their bytes. All or nothing: an array webtensor cannot hold
/// (strings, complex128, f64 onto a GPU) is an error; [`Npz`] reads the
/// others by name.
///
/// # Errors
/// `Error::Format` naming `from_npz_bytes` for a malformed archive or
/// entry; as [`from_npy_bytes`](super::from_npy_bytes) for each array,
/// the message naming it.
pub fn from_npz_bytes(bytes: &[u8], device: &Device) -> Result<Vec<(String, Tensor)>> {
    read("from_npz_bytes", bytes, device)
}

/// Every entry checked first, then inflated one at a time: the host holds
/// the tensors made so far and one entry's bytes, never every entry's.
fn read(op: &'static str, bytes: &[u8], device: &Device) -> Result<Vec<(String, Tensor)>> {
    let npz = Npz::new(op, Cow::Borrowed(bytes), None)?;
    let mut tensors = Vec::with_capacity(npz.names.len());
    for name in &npz.names {
        tensors.push((name.clone(), npz.load_as(op, name, device)?));
    }
    Ok(tensors)
}

/// An `.npz` archive read one array at a time, as `np.load` reads one (its
/// `NpzFile`): the archive is checked when opened, and an array inflated
/// and made a tensor only when asked for, so an array webtensor cannot
/// hold (strings, complex128, f64 onto a GPU) leaves the others readable.
///
/// ```
/// use webtensor::{Device, Tensor, io};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let x = Tensor::arange(0.0f32, 4.0, 1.0, &dev)?;
/// let bytes = io::to_npz_bytes(&[("x", &x), ("y", &x.mul_scalar(2.0)?)])?;
/// let npz = io::Npz::from_bytes(&bytes)?;
/// assert_eq!(npz.names(), ["x", "y"]);
/// assert_eq!(npz.load("y", &dev)?.to_vec::<f32>()?, [0.0, 2.0, 4.0, 6.0]);
/// # Ok(())
/// # }
/// ```
pub struct Npz<'a> {
    bytes: Cow<'a, [u8]>,
    entries: Vec<zip::Entry>,
    /// Each entry name's last entry (the one `np.load` reads).
    last: HashMap<String, usize>,
    names: Vec<String>,
    /// The file it was read from, which errors name.
    path: Option<String>,
}

impl<'a> Npz<'a> {
    /// The archive held in `bytes`.
    ///
    /// # Errors
    /// `Error::Format` naming `Npz::from_bytes` for a malformed archive.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Npz<'a>> {
        Npz::new("Npz::from_bytes", Cow::Borrowed(bytes), None)
    }

    fn new(op: &'static str, bytes: Cow<'a, [u8]>, path: Option<String>) -> Result<Npz<'a>> {
        let entries = zip::entries(op, &bytes)?;
        let last = entries
            .iter()
            .enumerate()
            .map(|(k, e)| (e.name.clone(), k))
            .collect();
        let mut npz = Npz {
            bytes,
            entries,
            last,
            names: Vec::new(),
            path,
        };
        npz.names = npz.array_keys();
        Ok(npz)
    }

    /// The entry `np.load` reads for `key`: the last named exactly so,
    /// else the last named `key.npy`.
    fn pick(&self, key: &str) -> Option<usize> {
        let exact = self.last.get(key);
        exact
            .or_else(|| self.last.get(&format!("{key}.npy")))
            .copied()
    }

    /// The key `np.load` reaches each array entry by (its name without
    /// `.npy`, else its whole name where the shorter one reaches another
    /// entry), in the archive's order; entries no key reaches (an earlier
    /// entry of a name given twice) and entries `np.load` hands back as
    /// bytes (no `.npy` magic, found by inflating their first bytes) are
    /// left out. An `.npy` entry whose bytes cannot be read is kept, so
    /// that loading it says why.
    fn array_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for (k, e) in self.entries.iter().enumerate() {
            let short = e.name.strip_suffix(".npy").unwrap_or(&e.name);
            let Some(key) = [short, e.name.as_str()]
                .into_iter()
                .find(|key| self.pick(key) == Some(k))
            else {
                continue;
            };
            let array = e
                .starts_with(&self.bytes, npy::MAGIC)
                .unwrap_or_else(|| e.name.ends_with(".npy"));
            if array {
                keys.push(key.to_string());
            }
        }
        keys
    }

    /// The keys of the archive's arrays, in the archive's order: NumPy's
    /// `files` less members that are not arrays, each array under the key
    /// `np.load(..)[key]` reads it by (its member name without `.npy`,
    /// or with it where the shorter key reads another member).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The array `np.load(..)[key]` reads (the member named `key`, else
    /// `key.npy`) as a tensor on `device`.
    ///
    /// # Errors
    /// `Error::Argument` for a key that reaches no member; `Error::Format`
    /// for a member that is not an `.npy` array (NumPy hands back its
    /// bytes); as [`from_npz_bytes`] for an array; each naming the array
    /// and, for an archive opened from a file, the file.
    pub fn load(&self, key: &str, device: &Device) -> Result<Tensor> {
        self.load_as("Npz::load", key, device)
            .map_err(|e| match &self.path {
                Some(path) => e.about(path),
                None => e,
            })
    }

    fn load_as(&self, op: &'static str, key: &str, device: &Device) -> Result<Tensor> {
        let Some(k) = self.pick(key) else {
            return Err(Error::argument(
                op,
                format!("no array named {key:?}; the archive holds {:?}", self.names),
            ));
        };
        let contents = self.entries[k].contents(op, &self.bytes)?;
        if !contents.starts_with(npy::MAGIC) {
            return Err(Error::format(op, "not an .npy array").in_tensor(key));
        }
        npy::read(op, &contents, device).map_err(|e| e.named(op).in_tensor(key))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Npz<'static> {
    /// The `.npz` file at `path`, read whole.
    ///
    /// # Errors
    /// `Error::Io` naming `Npz::open` and the path; `Error::Format` for a
    /// malformed archive, naming the path.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Npz<'static>> {
        const OP: &str = "Npz::open";
        let path = path.as_ref();
        let shown = Some(path.display().to_string());
        super::files::load_file(OP, path, |b| Npz::new(OP, Cow::Owned(b), shown))
    }
}

/// The bytes of an `.npz` archive (uncompressed, as `np.savez`) holding
/// each named tensor, blocking (native only).
///
/// # Errors
/// Readback errors; `Error::DType` for a bf16 tensor (NumPy has no such
/// dtype); `Error::Format` for a name given twice, one of more than 65,531
/// bytes or one holding a NUL (Python's zipfile ends a name there), or an
/// archive past 4 GiB.
#[cfg(not(target_arch = "wasm32"))]
pub fn to_npz_bytes(tensors: &[(&str, &Tensor)]) -> Result<Vec<u8>> {
    pollster::block_on(to_npz_bytes_async(tensors))
}

/// [`to_npz_bytes`] on every target.
///
/// # Errors
/// As [`to_npz_bytes`].
pub async fn to_npz_bytes_async(tensors: &[(&str, &Tensor)]) -> Result<Vec<u8>> {
    const OP: &str = "to_npz_bytes";
    // Before any array is read back, naming the one NumPy cannot hold.
    if let Some((name, _)) = tensors.iter().find(|(_, t)| t.dtype() == DType::BF16) {
        return Err(Error::dtype(
            OP,
            format!("array {name:?} is bf16, which has no NumPy dtype: cast it to f32 first"),
        ));
    }
    let mut entries = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let bytes = npy::to_npy_bytes_async(t).await.map_err(|e| e.named(OP))?;
        entries.push((format!("{name}.npy"), bytes));
    }
    zip::write("to_npz_bytes", &entries)
}

/// Writes the named tensors to an `.npz` file at `path` (NumPy's
/// `np.savez`).
///
/// # Errors
/// `Error::Io` naming `save_npz` and the path; as [`to_npz_bytes`].
#[cfg(not(target_arch = "wasm32"))]
pub fn save_npz(path: impl AsRef<std::path::Path>, tensors: &[(&str, &Tensor)]) -> Result<()> {
    super::files::write_file("save_npz", path.as_ref(), &to_npz_bytes(tensors)?)
}

/// Reads every array of an `.npz` file onto `device`, stored or compressed
/// (all or nothing; [`Npz::open`] reads one array at a time).
///
/// # Errors
/// `Error::Io` naming `load_npz` and the path; as [`from_npz_bytes`],
/// the message naming the path too.
#[cfg(not(target_arch = "wasm32"))]
pub fn load_npz(
    path: impl AsRef<std::path::Path>,
    device: &Device,
) -> Result<Vec<(String, Tensor)>> {
    super::files::load_file("load_npz", path.as_ref(), |b| read("load_npz", &b, device))
}
