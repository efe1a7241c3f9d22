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

/// A whole file read (errors naming `op` and the path) and made a tensor
/// or a model by `read`, its errors about the contents naming the path too
/// (`Error::about`): of the files a program loads, the one at fault.
pub(crate) fn load_file<T>(
    op: &'static str,
    path: &std::path::Path,
    read: impl FnOnce(Vec<u8>) -> crate::Result<T>,
) -> crate::Result<T> {
    read(read_file(op, path)?).map_err(|e| e.about(&path.display().to_string()))
}

/// Writes a whole file, naming `op` and the path in the error: into a
/// sibling temporary file, synced, then renamed over `path`, so that a
/// failed write (a full disk) leaves the file as it was, not truncated.
/// The temporary file goes on any error. (A symbolic link at `path` is
/// replaced, not written through, and the file takes new permissions, as
/// the safetensors crate's own saves do.)
pub(crate) fn write_file(
    op: &'static str,
    path: &std::path::Path,
    bytes: &[u8],
) -> crate::Result<()> {
    use std::io::Write;
    let io = |e: std::io::Error| crate::Error::Io {
        op,
        path: path.display().to_string(),
        msg: e.to_string(),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io(std::io::Error::other("the path names no file")))?;
    // A name of this write's own, created new (never an existing file or
    // link): two saves to one path at once (threads of a process) each
    // write theirs whole, and the last rename wins.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (temporary, file) = loop {
        let k = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut temporary = name.to_os_string();
        temporary.push(format!(".{}.{k}.partial", std::process::id()));
        let temporary = path.with_file_name(temporary);
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary);
        match opened {
            Ok(file) => break (temporary, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(e)),
        }
    };
    // Closed before the rename (Windows renames no open file).
    let written = {
        let mut file = file;
        file.write_all(bytes).and_then(|()| file.sync_all())
    };
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&temporary);
        return Err(io(e));
    }
    Ok(())
}
