//! NumPy's `.npz` format: a zip archive of `.npy` files, one per named
//! array (`np.savez`, `np.savez_compressed`, `np.load`).

use super::{npy, zip};
use crate::device::Device;
use crate::error::Result;
use crate::tensor::Tensor;

/// The tensors of an `.npz` archive's bytes, in the archive's order, named
/// as NumPy names them (the entry name without `.npy`). Entries that are
/// not `.npy` files (without its magic bytes, or not `.npy` and compressed
/// other than by deflate: a `meta.json` beside the arrays, a folder) are
/// skipped, where `np.load` hands back their bytes. A name given twice (as
/// appending to an archive gives it) is one tensor, `np.load`'s: the last
/// entry named exactly so, else the last with `.npy`.
///
/// # Errors
/// `Error::Format` naming `from_npz_bytes` for a malformed archive or
/// entry; as [`from_npy_bytes`](super::from_npy_bytes) for each array.
pub fn from_npz_bytes(bytes: &[u8], device: &Device) -> Result<Vec<(String, Tensor)>> {
    read("from_npz_bytes", bytes, device)
}

/// Every entry checked first, then inflated one at a time: the host holds
/// the tensors made so far and one entry's bytes, never every entry's.
fn read(op: &'static str, bytes: &[u8], device: &Device) -> Result<Vec<(String, Tensor)>> {
    let mut tensors: Vec<(String, Tensor, bool)> = Vec::new();
    let mut at = std::collections::HashMap::<String, usize>::new();
    for entry in zip::entries(op, bytes)? {
        let name = &entry.name;
        let exact = !name.ends_with(".npy");
        if exact && !entry.readable() {
            continue;
        }
        let name = name.strip_suffix(".npy").unwrap_or(name).to_string();
        let kept = at.get(&name).copied();
        if kept.is_some_and(|k| tensors[k].2 && !exact) {
            continue;
        }
        let contents = entry.contents(op)?;
        if !contents.starts_with(npy::MAGIC) {
            continue;
        }
        let tensor = npy::read(op, &contents, device).map_err(|e| e.in_tensor(&name))?;
        match kept {
            Some(k) => tensors[k] = (name, tensor, exact),
            None => {
                at.insert(name.clone(), tensors.len());
                tensors.push((name, tensor, exact));
            }
        }
    }
    Ok(tensors.into_iter().map(|(n, t, _)| (n, t)).collect())
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

/// Reads every array of an `.npz` file onto `device`, stored or compressed.
///
/// # Errors
/// `Error::Io` naming `load_npz` and the path; as [`from_npz_bytes`],
/// an `Error::Format` naming the path too.
#[cfg(not(target_arch = "wasm32"))]
pub fn load_npz(
    path: impl AsRef<std::path::Path>,
    device: &Device,
) -> Result<Vec<(String, Tensor)>> {
    super::files::load_file("load_npz", path.as_ref(), |b| read("load_npz", &b, device))
}
