//! Whole files read and written, errors naming the op and the path
//! (native only).

/// Reads a whole file, naming `op` and the path in the error.
pub(crate) fn read_file(op: &'static str, path: &std::path::Path) -> crate::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| crate::Error::Io {
        op,
        path: path.display().to_string(),
        msg: e.to_string(),
    })
}

/// Writes a whole file, naming `op` and the path in the error.
pub(crate) fn write_file(
    op: &'static str,
    path: &std::path::Path,
    bytes: &[u8],
) -> crate::Result<()> {
    std::fs::write(path, bytes).map_err(|e| crate::Error::Io {
        op,
        path: path.display().to_string(),
        msg: e.to_string(),
    })
}
