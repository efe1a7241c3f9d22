//! NumPy's `.npy` format (versions 1.0 to 3.0): a magic string, a Python
//! dict literal naming the dtype, the memory order and the shape, then the
//! elements.

use super::host_bytes::{FileType, row_major_bytes, tensor_from_bytes};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

pub(super) const MAGIC: &[u8] = b"\x93NUMPY";

/// The longest header read, in bytes: np.load's `max_header_size`.
const MAX_HEADER: usize = 10_000;

/// The `descr` NumPy writes for `dtype` (little-endian).
///
/// # Errors
/// `Error::DType` naming `op` for bf16, which NumPy has no dtype for
/// (`ml_dtypes`' bfloat16 is saved as raw `<V2` bytes, which load back as
/// void).
fn descr(op: &'static str, dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::F64 => "<f8",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U32 => "<u4",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
        DType::BF16 => {
            return Err(Error::dtype(
                op,
                "bf16 has no NumPy dtype (.npy would hold raw 2-byte voids): \
                 cast to f32 first, or save safetensors, which hold bf16",
            ));
        }
    })
}

/// The element type and byte order of a `descr` (`<f4`, `>i8`, `|b1` ...).
fn parse_descr(op: &'static str, d: &str) -> Result<(FileType, bool)> {
    // The first character, whatever its width (a multi-byte one is refused
    // below, never split).
    let first = d.chars().next().map_or(0, char::len_utf8);
    let (order, code) = d.split_at(first);
    let (big, code) = match order {
        "<" | "=" | "|" => (false, code),
        ">" => (true, code),
        // No byte order (`f4`, which NumPy reads as native): the host's,
        // little-endian on every target webtensor builds for.
        _ if d.starts_with(|c: char| c.is_ascii_alphabetic()) => (false, d),
        _ => return Err(Error::format(op, format!("unknown dtype {d:?}"))),
    };
    let t = match code {
        "f4" => FileType::Held(DType::F32),
        "f2" => FileType::Held(DType::F16),
        "f8" => FileType::Held(DType::F64),
        "i4" => FileType::Held(DType::I32),
        "u4" => FileType::Held(DType::U32),
        "u1" => FileType::Held(DType::U8),
        "b1" => FileType::Held(DType::Bool),
        "c8" => FileType::Held(DType::C64),
        "i1" => FileType::I8,
        "i2" => FileType::I16,
        "i8" => FileType::Held(DType::I64),
        "u2" => FileType::U16,
        "u8" => FileType::U64,
        _ => {
            return Err(Error::format(
                op,
                format!(
                    "dtype {d:?} has no webtensor dtype (f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 c8 are read)"
                ),
            ));
        }
    };
    Ok((t, big))
}

/// The header of a `.npy` file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A value of the header dict: the three kinds NumPy writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// The entries of the header, a Python dict literal of strings, `True`,
/// `False` and tuples of integers (what `ast.literal_eval` reads in a
/// `.npy` header), read token by token: a key's name inside a string value
/// is part of that string, never a key. Later duplicates win, as in Python.
fn parse_dict(op: &'static str, dict: &str) -> Result<Vec<(String, Literal)>> {
    let bad = |what: &str| Error::format(op, format!("{what} in the header {dict}"));
    let mut chars = dict.char_indices().peekable();
    let skip_space = |c: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while c.next_if(|&(_, ch)| ch.is_whitespace()).is_some() {}
    };
    let string = |c: &mut std::iter::Peekable<std::str::CharIndices<'_>>| -> Result<String> {
        let quote = c
            .next_if(|&(_, ch)| ch == '\'' || ch == '"')
            .ok_or_else(|| bad("a key or value that is not a string"))?
            .1;
        let mut out = String::new();
        loop {
            match c.next().map(|(_, ch)| ch) {
                None => return Err(bad("an unterminated string")),
                Some(ch) if ch == quote => return Ok(out),
                Some('\\') => out.push(c.next().ok_or_else(|| bad("an unterminated string"))?.1),
                Some(ch) => out.push(ch),
            }
        }
    };
    // After an item: `,` (more may follow: false) or the closing `close`
    // (true).
    let closes = |c: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
                  close: char,
                  what: &str|
     -> Result<bool> {
        skip_space(c);
        if c.next_if(|&(_, ch)| ch == ',').is_some() {
            return Ok(false);
        }
        skip_space(c);
        c.next_if(|&(_, ch)| ch == close).ok_or_else(|| bad(what))?;
        Ok(true)
    };
    skip_space(&mut chars);
    chars
        .next_if(|&(_, ch)| ch == '{')
        .ok_or_else(|| bad("no dict"))?;
    let mut entries: Vec<(String, Literal)> = Vec::new();
    loop {
        skip_space(&mut chars);
        if chars.next_if(|&(_, ch)| ch == '}').is_some() {
            break;
        }
        let key = string(&mut chars)?;
        skip_space(&mut chars);
        chars
            .next_if(|&(_, ch)| ch == ':')
            .ok_or_else(|| bad("a key without ':'"))?;
        skip_space(&mut chars);
        let value = match chars.peek().map(|&(_, ch)| ch) {
            Some('\'' | '"') => Literal::Str(string(&mut chars)?),
            Some('(') => {
                chars.next();
                let mut dims = Vec::new();
                loop {
                    skip_space(&mut chars);
                    if chars.next_if(|&(_, ch)| ch == ')').is_some() {
                        break;
                    }
                    let mut digits = String::new();
                    while let Some((_, ch)) = chars.next_if(|&(_, ch)| ch.is_ascii_digit()) {
                        digits.push(ch);
                    }
                    chars.next_if(|&(_, ch)| ch == 'L');
                    let extent = digits
                        .parse::<usize>()
                        .map_err(|_| bad(&format!("the extent {digits:?}")))?;
                    dims.push(extent);
                    if closes(&mut chars, ')', "a shape that is not a tuple of integers")? {
                        // `(2)` is Python's integer 2, not a tuple (NumPy
                        // refuses it): one extent takes a comma, `(2,)`.
                        if dims.len() == 1 {
                            return Err(bad("the shape (n) without a comma: an integer"));
                        }
                        break;
                    }
                }
                Literal::Tuple(dims)
            }
            Some('T' | 'F') => {
                let word: String = std::iter::from_fn(|| {
                    chars
                        .next_if(|&(_, ch)| ch.is_ascii_alphabetic())
                        .map(|(_, ch)| ch)
                })
                .collect();
                match word.as_str() {
                    "True" => Literal::Bool(true),
                    "False" => Literal::Bool(false),
                    _ => return Err(bad(&format!("the value {word:?}"))),
                }
            }
            _ if key == "descr" => {
                return Err(bad(
                    "a structured dtype (webtensor reads plain numeric arrays)",
                ));
            }
            _ => return Err(bad(&format!("a value of {key:?} that is not read"))),
        };
        entries.retain(|(k, _)| *k != key);
        entries.push((key, value));
        if closes(&mut chars, '}', "entries not separated by ','")? {
            break;
        }
    }
    if chars.any(|(_, ch)| !ch.is_whitespace()) {
        return Err(bad("text after the dict"));
    }
    Ok(entries)
}

fn parse_header(op: &'static str, dict: &str) -> Result<Header> {
    let bad = |what: &str| Error::format(op, format!("{what} in the header {dict}"));
    let entries = parse_dict(op, dict)?;
    // NumPy takes exactly these three keys.
    let mut keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys != ["descr", "fortran_order", "shape"] {
        return Err(bad(&format!(
            "keys {keys:?} (NumPy writes exactly descr, fortran_order and shape)"
        )));
    }
    let value = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let Some(Literal::Str(descr)) = value("descr") else {
        return Err(bad("a descr that is not a string"));
    };
    let Some(&Literal::Bool(fortran_order)) = value("fortran_order") else {
        return Err(bad("a fortran_order that is neither True nor False"));
    };
    let Some(Literal::Tuple(shape)) = value("shape") else {
        return Err(bad("a shape that is not a tuple"));
    };
    if shape.len() > crate::shape::MAX_RANK {
        return Err(bad(&format!(
            "a shape of {} axes, more than {} (a tensor's most)",
            shape.len(),
            crate::shape::MAX_RANK
        )));
    }
    Ok(Header {
        descr: descr.clone(),
        fortran_order,
        shape: shape.clone(),
    })
}

/// The header dict as NumPy writes it.
fn header_text(descr: &str, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}")
}

/// A whole `.npy` file: the header padded with spaces so that the data
/// starts at a multiple of 64 bytes (as NumPy does), then `data`.
fn encode(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let text = header_text(descr, shape);
    // Version 1.0 has a 2-byte header length; 2.0 a 4-byte one.
    let v1_prefix = MAGIC.len() + 2 + 2;
    let v1 = (v1_prefix + text.len() + 1).next_multiple_of(64) - v1_prefix <= u16::MAX as usize;
    let prefix = MAGIC.len() + 2 + if v1 { 2 } else { 4 };
    let total = (prefix + text.len() + 1).next_multiple_of(64);
    let header_len = total - prefix;
    let mut out = Vec::with_capacity(total + data.len());
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(data);
    out
}

/// The header and the data of a `.npy` file.
fn decode<'a>(op: &'static str, bytes: &'a [u8]) -> Result<(Header, &'a [u8])> {
    let short = || {
        Error::format(
            op,
            format!("{} bytes are too short for a .npy file", bytes.len()),
        )
    };
    if !bytes.starts_with(MAGIC) {
        return Err(Error::format(op, "not a .npy file (no \\x93NUMPY magic)"));
    }
    let version = bytes.get(6..8).ok_or_else(short)?;
    let (len, start): (usize, usize) = match version[0] {
        _ if version[1] != 0 => {
            return Err(Error::format(
                op,
                format!(
                    ".npy version {}.{} is not one of 1.0, 2.0, 3.0",
                    version[0], version[1]
                ),
            ));
        }
        1 => {
            let b = bytes.get(8..10).ok_or_else(short)?;
            (u16::from_le_bytes([b[0], b[1]]) as usize, 10)
        }
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(short)?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        v => {
            return Err(Error::format(
                op,
                format!(".npy version {v}.0 is not one of 1.0, 2.0, 3.0"),
            ));
        }
    };
    // np.load's `max_header_size`: a header is a short dict (a long one
    // would only cost its parse's time).
    if len > MAX_HEADER {
        return Err(Error::format(
            op,
            format!("the header has {len} bytes; np.load reads at most {MAX_HEADER}"),
        ));
    }
    let end = start
        .checked_add(len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(short)?;
    let dict = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| Error::format(op, "the header is not text"))?;
    Ok((parse_header(op, dict)?, &bytes[end..]))
}

/// A tensor from the bytes of a `.npy` file, on `device`. A file in
/// Fortran order becomes a view with reversed strides (no copy).
///
/// # Errors
/// `Error::Format` naming `from_npy_bytes` for a malformed file, a dtype
/// without a webtensor dtype, or wide integers that do not fit i32 / u32;
/// device errors (f64 on a GPU ...).
pub fn from_npy_bytes(bytes: &[u8], device: &Device) -> Result<Tensor> {
    read("from_npy_bytes", bytes, device)
}

pub(super) fn read(op: &'static str, bytes: &[u8], device: &Device) -> Result<Tensor> {
    let (header, data) = decode(op, bytes)?;
    let (file_type, big) = parse_descr(op, &header.descr)?;
    // Bytes past the array's are left, as np.load leaves them (two arrays
    // saved one after the other into one file: the first is read).
    let count = header
        .shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d));
    let need = count.and_then(|n| n.checked_mul(file_type.size()));
    let data = match need {
        Some(need) if need < data.len() => &data[..need],
        _ => data,
    };
    if header.fortran_order {
        let reversed: Vec<usize> = header.shape.iter().rev().copied().collect();
        return Ok(tensor_from_bytes(op, file_type, big, &reversed, data, device)?.t());
    }
    tensor_from_bytes(op, file_type, big, &header.shape, data, device)
}

/// The bytes of a `.npy` file holding `t` (any view, written in row-major
/// order), blocking (native only).
///
/// # Errors
/// `Error::DType` for bf16 (NumPy has no bf16); readback errors.
#[cfg(not(target_arch = "wasm32"))]
pub fn to_npy_bytes(t: &Tensor) -> Result<Vec<u8>> {
    pollster::block_on(to_npy_bytes_async(t))
}

/// [`to_npy_bytes`] on every target.
///
/// # Errors
/// As [`to_npy_bytes`].
pub async fn to_npy_bytes_async(t: &Tensor) -> Result<Vec<u8>> {
    let descr = descr("to_npy_bytes", t.dtype())?;
    Ok(encode(descr, t.dims(), &row_major_bytes(t).await?))
}

/// Writes `t` to a `.npy` file at `path` (NumPy's `np.save`).
///
/// # Errors
/// `Error::Io` naming `save_npy` and the path; readback errors.
#[cfg(not(target_arch = "wasm32"))]
pub fn save_npy(path: impl AsRef<std::path::Path>, t: &Tensor) -> Result<()> {
    super::files::write_file("save_npy", path.as_ref(), &to_npy_bytes(t)?)
}

/// Reads a `.npy` file onto `device` (NumPy's `np.load`).
///
/// # Errors
/// `Error::Io` naming `load_npy` and the path; as [`from_npy_bytes`],
/// an `Error::Format` naming the path too.
#[cfg(not(target_arch = "wasm32"))]
pub fn load_npy(path: impl AsRef<std::path::Path>, device: &Device) -> Result<Tensor> {
    super::files::load_file("load_npy", path.as_ref(), |b| read("load_npy", &b, device))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_as_numpy_writes_them() {
        let h = parse_header(
            "t",
            "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }",
        )
        .unwrap();
        assert_eq!(h.descr, "<f8");
        assert!(h.fortran_order);
        assert_eq!(h.shape, [3, 4]);
        let h = parse_header(
            "t",
            "{'descr': '|b1', 'fortran_order': False, 'shape': (), }",
        )
        .unwrap();
        assert!(h.shape.is_empty());
        let h = parse_header(
            "t",
            "{'descr': '>i8', 'fortran_order': False, 'shape': (5,), }",
        )
        .unwrap();
        assert_eq!(h.shape, [5]);
        assert_eq!(
            parse_descr("t", ">i8").unwrap(),
            (FileType::Held(DType::I64), true)
        );
        let e = parse_header(
            "t",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
        );
        assert!(e.unwrap_err().to_string().contains("structured"));
        // Issue 26: a key inside a string is not a key; extra keys, a
        // multi-byte descr and text after the dict are refused.
        let quoted = "{'descr': '<f4', 'note': \"'shape': (3, 2)\", 'shape': (2, 3), 'fortran_order': False}";
        assert!(
            parse_header("t", quoted)
                .unwrap_err()
                .to_string()
                .contains("keys")
        );
        let h = parse_header(
            "t",
            "{\"shape\": (2, 3L), 'fortran_order': False, 'descr': \"<f4\"}",
        )
        .unwrap();
        assert_eq!(h.shape, [2, 3]);
        assert!(parse_descr("t", "é4").is_err());
        assert!(parse_descr("t", "").is_err());
        for bad in [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
            "{'descr': '<f4\\', 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",
            "",
        ] {
            assert!(parse_header("t", bad).is_err(), "{bad}");
        }
        assert!(
            parse_descr("t", "<c16")
                .unwrap_err()
                .to_string()
                .contains("c16")
        );
    }

    #[test]
    fn written_headers_align_the_data_to_64_bytes() {
        for shape in [vec![], vec![3], vec![2, 3, 4]] {
            let file = encode("<f4", &shape, &[]);
            assert_eq!(file.len() % 64, 0);
            assert_eq!(file[file.len() - 1], b'\n');
            let (h, data) = decode("t", &file).unwrap();
            assert_eq!(
                (h.descr.as_str(), h.fortran_order, h.shape),
                ("<f4", false, shape)
            );
            assert!(data.is_empty());
        }
        assert_eq!(
            header_text("|u1", &[7]),
            "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }"
        );
    }
}
