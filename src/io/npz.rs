//! NumPy's `.npz` format: a zip archive of `.npy` files, one per named
//! array (`np.savez`, `np.savez_compressed`, `np.load`).

use super::{npy, zip};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::borrow::Cow;

/// The tensors of an `.npz` archive's bytes, in the archive's order, named
/// as NumPy names them (the entry name without `.npy`). Entries that are
/// not `.npy` files (without its magic bytes, or not `.npy` and compressed
/// other than by deflate: a `meta.json` beside the arrays, a folder) are
/// skipped, where `np.load` hands back their bytes. A name given twice (as
/// appending to an archive gives it) is one tensor, `np.load`'s: the last
/// entry named exactly so, else the last with `.npy`. All or nothing: an
/// array webtensor cannot hold (strings, complex128, f64 onto a GPU) is an
/// error; [`Npz`] reads the others by name.
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
    let entries = zip::entries(op, bytes)?;
    let index = Index::new(&entries);
    let mut tensors = Vec::new();
    for name in index.array_names() {
        let tensor = load_entry(op, index.pick(&name), &name, device)?;
        tensors.push((name, tensor));
    }
    Ok(tensors)
}

/// An archive's entries by name.
struct Index<'e, 'a> {
    entries: &'e [zip::Entry<'a>],
    /// Each name's last entry.
    last: std::collections::HashMap<&'e str, usize>,
}

impl<'e, 'a> Index<'e, 'a> {
    fn new(entries: &'e [zip::Entry<'a>]) -> Index<'e, 'a> {
        let last = entries
            .iter()
            .enumerate()
            .map(|(k, e)| (e.name.as_str(), k))
            .collect();
        Index { entries, last }
    }

    /// The entry `np.load` reads for `name`: the last named exactly so,
    /// else the last named `name.npy`.
    fn pick(&self, name: &str) -> Option<&'e zip::Entry<'a>> {
        let k = self
            .last
            .get(name)
            .or_else(|| self.last.get(format!("{name}.npy").as_str()));
        k.map(|&k| &self.entries[k])
    }

    /// The names `np.load` gives the arrays (an entry's name without
    /// `.npy`), once each, in the order of their first entries: entries
    /// `np.load` would hand back as bytes (no `.npy` magic) are left out,
    /// found by inflating their first bytes only. An `.npy` entry whose
    /// bytes cannot be read is kept, so that loading it says why.
    fn array_names(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut names = Vec::new();
        for e in self.entries {
            let name = e.name.strip_suffix(".npy").unwrap_or(&e.name);
            if !seen.insert(name) {
                continue;
            }
            let array = self.pick(name).is_some_and(|p| {
                p.starts_with(npy::MAGIC)
                    .unwrap_or_else(|| p.name.ends_with(".npy"))
            });
            if array {
                names.push(name.to_string());
            }
        }
        names
    }
}

/// The array of `entry` (`np.load`'s pick for `name`) as a tensor on
/// `device`.
///
/// # Errors
/// `Error::Argument` when there is no such entry; `Error::Format` for an
/// entry that is not an `.npy` file or does not inflate; as
/// [`from_npy_bytes`](super::from_npy_bytes); each naming the array.
fn load_entry(
    op: &'static str,
    entry: Option<&zip::Entry<'_>>,
    name: &str,
    device: &Device,
) -> Result<Tensor> {
    let Some(entry) = entry else {
        return Err(Error::argument(op, format!("no array named {name:?}")));
    };
    let contents = entry.contents(op)?;
    if !contents.starts_with(npy::MAGIC) {
        return Err(Error::format(op, "not an .npy array").in_tensor(name));
    }
    npy::read(op, &contents, device).map_err(|e| e.named(op).in_tensor(name))
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
    names: Vec<String>,
}

impl<'a> Npz<'a> {
    /// The archive held in `bytes`.
    ///
    /// # Errors
    /// `Error::Format` naming `Npz::from_bytes` for a malformed archive.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Npz<'a>> {
        Npz::new("Npz::from_bytes", Cow::Borrowed(bytes))
    }

    fn new(op: &'static str, bytes: Cow<'a, [u8]>) -> Result<Npz<'a>> {
        let names = Index::new(&zip::entries(op, &bytes)?).array_names();
        Ok(Npz { bytes, names })
    }

    /// The names of the archive's arrays (NumPy's `files`, less entries
    /// that are not arrays), once each, in the archive's order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The array named `name` (as `np.load(..)[name]` reads it) as a
    /// tensor on `device`.
    ///
    /// # Errors
    /// `Error::Argument` for a name the archive has no array of; as
    /// [`from_npz_bytes`] for that array.
    pub fn load(&self, name: &str, device: &Device) -> Result<Tensor> {
        const OP: &str = "Npz::load";
        if self.names.iter().any(|n| n == name) {
            let entries = zip::entries(OP, &self.bytes)?;
            return load_entry(OP, Index::new(&entries).pick(name), name, device);
        }
        Err(Error::argument(
            OP,
            format!(
                "no array named {name:?}; the archive holds {:?}",
                self.names
            ),
        ))
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
        super::files::load_file(OP, path.as_ref(), |b| Npz::new(OP, Cow::Owned(b)))
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
    let mut entries = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        entries.push((format!("{name}.npy"), npy::to_npy_bytes_async(t).await?));
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
