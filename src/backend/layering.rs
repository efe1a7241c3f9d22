//! The backend stands below the op layer: it runs calls, and knows nothing
//! of tensors, devices, op checking or public interop. This test holds it
//! there: a `crate::` path in `src/backend/` naming a module not listed
//! below fails, so an import that would run back up (and close a loop
//! through the layers) is caught when it is written.

use std::path::Path;

/// The crate modules the backend may use: itself and the leaves beneath.
const BELOW: [&str; 12] = [
    "backend",
    "clock",
    "dtype",
    "error",
    "index",
    "layout",
    "op",
    "profile",
    "profile_region",
    "quant",
    "scalar",
    "shape",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_backend_imports_nothing_above_it() {
    let backend = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend");
    let mut files = Vec::new();
    rust_files(&backend, &mut files);
    assert!(
        files.len() > 20,
        "{} files under {}",
        files.len(),
        backend.display()
    );
    let mut above = Vec::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for file in files.iter().filter(|f| !f.ends_with("layering.rs")) {
        let text = std::fs::read_to_string(file).unwrap();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + 7..];
            // `crate::{a, b::c}` names several modules.
            let names: Vec<String> = match rest.strip_prefix('{') {
                Some(list) => list[..list.find('}').unwrap_or(list.len())]
                    .split(',')
                    .map(ident)
                    .filter(|n| !n.is_empty())
                    .collect(),
                None => vec![ident(rest)],
            };
            // `crate::Tensor` and the like (public items re-exported at the
            // root) are above too.
            for name in names.iter().filter(|n| !BELOW.contains(&n.as_str())) {
                let line = text[..at].lines().count();
                above.push(format!("{}:{line}: crate::{name}", file.display()));
            }
        }
    }
    assert!(
        above.is_empty(),
        "the backend imports from above it:\n{}",
        above.join("\n")
    );
}
