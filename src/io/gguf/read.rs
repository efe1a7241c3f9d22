//! Parsing a GGUF file (versions 2 and 3, little-endian): every count,
//! length and offset is checked against the bytes that are there before
//! anything is allocated for it, so memory follows the bytes read.

use super::types::{GgufValue, GgufValueType};
use super::{Gguf, GgufTensorInfo};
use crate::error::{Error, Result};
use crate::quant::GgmlType;

/// The alignment of tensor data when the file does not set
/// `general.alignment`.
pub(crate) const DEFAULT_ALIGNMENT: u64 = 32;

/// The deepest nesting of arrays inside arrays read (a hostile file could
/// nest them until the reader's stack overflows).
const MAX_NESTING: u32 = 8;

/// The most values the metadata's arrays hold together: 2^24 (a
/// vocabulary of 16M tokens; the largest real ones have about 256K, in
/// three or four arrays). Each value takes 32 bytes in memory where a file
/// may spend one, so counts bounded only by the file's bytes could ask 32
/// times its size.
pub(crate) const MAX_ARRAY_VALUES: u64 = 1 << 24;

/// The most metadata entries and tensors a file holds: 2^16 and 2^20
/// (real files have tens of entries and at most some 10^5 tensors). An
/// entry or a tensor's info takes several times its bytes in memory, so
/// counts bounded only by the file's bytes could ask ten times its size.
pub(crate) const MAX_ENTRIES: u64 = 1 << 16;
pub(crate) const MAX_TENSORS: u64 = 1 << 20;

/// The most entries, tensors or array values reserved for before they are
/// read: a count is a header's claim, and its entries take several times
/// their bytes in memory.
const RESERVED: u64 = 4096;

/// The most axes a GGUF tensor has (ggml's `GGML_MAX_DIMS`).
pub(crate) const MAX_DIMS: u32 = 4;

/// Reads values from the front of a file's bytes, each read checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    op: &'static str,
    /// The array values read so far.
    values: u64,
}

impl<'a> Cursor<'a> {
    fn fail(&self, msg: String) -> Error {
        Error::format(self.op, msg)
    }

    /// The next `n` bytes of `what`.
    fn take(&mut self, n: u64, what: &dyn std::fmt::Display) -> Result<&'a [u8]> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(self.fail(format!(
                "{what}: needs {n} bytes at byte {}, the file has {left} left",
                self.at
            )));
        }
        let start = self.at;
        self.at += n as usize;
        Ok(&self.bytes[start..self.at])
    }

    fn array<const N: usize>(&mut self, what: &dyn std::fmt::Display) -> Result<[u8; N]> {
        let b = self.take(N as u64, what)?;
        let mut out = [0; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn u32(&mut self, what: &dyn std::fmt::Display) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &dyn std::fmt::Display) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &dyn std::fmt::Display) -> Result<String> {
        let len = self.u64(what)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|e| self.fail(format!("{what}: the string is not UTF-8 ({e})")))
    }

    /// Bytes left to read.
    fn left(&self) -> u64 {
        (self.bytes.len() - self.at) as u64
    }

    fn value(
        &mut self,
        t: GgufValueType,
        what: &dyn std::fmt::Display,
        depth: u32,
    ) -> Result<GgufValue> {
        Ok(match t {
            GgufValueType::U8 => GgufValue::U8(self.array::<1>(what)?[0]),
            GgufValueType::I8 => GgufValue::I8(self.array::<1>(what)?[0] as i8),
            GgufValueType::U16 => GgufValue::U16(u16::from_le_bytes(self.array(what)?)),
            GgufValueType::I16 => GgufValue::I16(i16::from_le_bytes(self.array(what)?)),
            GgufValueType::U32 => GgufValue::U32(self.u32(what)?),
            GgufValueType::I32 => GgufValue::I32(i32::from_le_bytes(self.array(what)?)),
            GgufValueType::F32 => GgufValue::F32(f32::from_le_bytes(self.array(what)?)),
            GgufValueType::Bool => match self.array::<1>(what)?[0] {
                0 => GgufValue::Bool(false),
                1 => GgufValue::Bool(true),
                b => return Err(self.fail(format!("{what}: a bool is 0 or 1, not {b}"))),
            },
            GgufValueType::String => GgufValue::String(self.string(what)?),
            GgufValueType::U64 => GgufValue::U64(self.u64(what)?),
            GgufValueType::I64 => GgufValue::I64(i64::from_le_bytes(self.array(what)?)),
            GgufValueType::F64 => GgufValue::F64(f64::from_le_bytes(self.array(what)?)),
            GgufValueType::Array => {
                if depth >= MAX_NESTING {
                    return Err(self.fail(format!(
                        "{what}: arrays nest deeper than {MAX_NESTING} levels"
                    )));
                }
                let item = self.value_type(what)?;
                let count = self.u64(what)?;
                // Every element takes at least this many bytes: a count the
                // file cannot hold fails before anything is allocated.
                let least = item.least_bytes();
                if count > self.left() / least {
                    return Err(self.fail(format!(
                        "{what}: an array of {count} {item:?} values needs at least {} bytes, \
                         the file has {} left",
                        count.saturating_mul(least),
                        self.left()
                    )));
                }
                if count > MAX_ARRAY_VALUES - self.values {
                    return Err(self.fail(format!(
                        "{what}: an array of {count} values after {} others; at most \
                         {MAX_ARRAY_VALUES} are read in all (a value takes 32 bytes in memory, a \
                         u8 in the file one)",
                        self.values
                    )));
                }
                self.values += count;
                let mut items = Vec::with_capacity(count.min(RESERVED) as usize);
                for _ in 0..count {
                    items.push(self.value(item, what, depth + 1)?);
                }
                GgufValue::Array { item, items }
            }
        })
    }

    fn value_type(&mut self, what: &dyn std::fmt::Display) -> Result<GgufValueType> {
        let id = self.u32(what)?;
        GgufValueType::from_id(id)
            .ok_or_else(|| self.fail(format!("{what}: unknown value type {id}")))
    }
}

/// Parses `bytes`, a whole GGUF file, keeping them.
///
/// # Errors
/// `Error::Format` naming `op` and the field for anything malformed.
pub(crate) fn parse(op: &'static str, bytes: Vec<u8>) -> Result<Gguf> {
    let mut c = Cursor {
        bytes: &bytes,
        at: 0,
        op,
        values: 0,
    };
    let magic = c.array::<4>(&"the magic")?;
    if &magic != b"GGUF" {
        return Err(c.fail(format!(
            "not a GGUF file: it starts with {magic:02x?}, not \"GGUF\""
        )));
    }
    let version = c.u32(&"the version")?;
    match version {
        2 | 3 => {}
        1 => return Err(c.fail("GGUF version 1 (32-bit counts) is not read".into())),
        v if (1..=3).contains(&v.swap_bytes()) => {
            return Err(c.fail("big-endian GGUF files are not read".into()));
        }
        v => return Err(c.fail(format!("GGUF version {v} is not known (2 and 3 are)"))),
    }
    let tensor_count = c.u64(&"the tensor count")?;
    let kv_count = c.u64(&"the metadata count")?;
    // A key-value pair takes at least 12 bytes, a tensor's info 24.
    if kv_count > MAX_ENTRIES {
        return Err(c.fail(format!(
            "the metadata count {kv_count} is past the {MAX_ENTRIES} entries read"
        )));
    }
    if kv_count > c.left() / 12 {
        return Err(c.fail(format!(
            "the metadata count {kv_count} needs more bytes than the file's {}",
            bytes.len()
        )));
    }
    // Room reserved for at most RESERVED entries: one takes 56 bytes here
    // against 12 in the file, so a count the file's size allows could
    // still ask for several times its size (past isize::MAX on a 32-bit
    // target); more grows as the entries are read.
    let mut metadata: Vec<(String, GgufValue)> =
        Vec::with_capacity(kv_count.min(RESERVED) as usize);
    let mut keys = std::collections::HashSet::new();
    for k in 0..kv_count {
        let key = c.string(&format_args!("metadata key {k}"))?;
        let what = format_args!("metadata {key:?}");
        if !keys.insert(key.clone()) {
            return Err(c.fail(format!("{what} is given twice")));
        }
        let t = c.value_type(&what)?;
        let value = c.value(t, &what, 0)?;
        metadata.push((key, value));
    }
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, GgufValue::U32(a))) if a.is_power_of_two() => u64::from(*a),
        Some((_, v)) => {
            return Err(c.fail(format!(
                "metadata \"general.alignment\" is {v:?}; it must be a u32 power of two"
            )));
        }
    };
    if tensor_count > MAX_TENSORS {
        return Err(c.fail(format!(
            "the tensor count {tensor_count} is past the {MAX_TENSORS} tensors read"
        )));
    }
    if tensor_count > c.left() / 24 {
        return Err(c.fail(format!(
            "the tensor count {tensor_count} needs more bytes than the file's {}",
            bytes.len()
        )));
    }
    let mut tensors: Vec<GgufTensorInfo> = Vec::with_capacity(tensor_count.min(RESERVED) as usize);
    let mut names = std::collections::HashSet::new();
    for k in 0..tensor_count {
        let name = c.string(&format_args!("tensor {k}'s name"))?;
        let what = format_args!("tensor {k} ({name:?})");
        if !names.insert(name.clone()) {
            return Err(c.fail(format!("{what}: the name is given twice")));
        }
        let n_dims = c.u32(&what)?;
        if n_dims > MAX_DIMS {
            return Err(c.fail(format!(
                "{what} has {n_dims} axes; GGUF tensors have at most {MAX_DIMS}"
            )));
        }
        // ggml's order: the first extent is the contiguous one.
        let mut ggml_dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            ggml_dims.push(c.u64(&what)?);
        }
        let type_id = c.u32(&what)?;
        let ggml_type = GgmlType::from_id(type_id)
            .ok_or_else(|| c.fail(format!("{what}: unknown ggml type {type_id}")))?;
        let offset = c.u64(&what)?;
        let shape: Vec<usize> = ggml_dims
            .iter()
            .rev()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d <= i64::MAX as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| c.fail(format!("{what}: an extent of {ggml_dims:?} is too large")))?;
        let count = ggml_dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| {
                c.fail(format!(
                    "{what}: the extents {ggml_dims:?} overflow an element count"
                ))
            })?;
        let first = ggml_dims.first().copied().unwrap_or(1);
        if !first.is_multiple_of(ggml_type.block_size()) {
            return Err(c.fail(format!(
                "{what}: its rows of {first} {ggml_type} elements are not whole blocks of {}",
                ggml_type.block_size()
            )));
        }
        let size = ggml_type.bytes_for(count).ok_or_else(|| {
            c.fail(format!(
                "{what}: {count} {ggml_type} elements overflow a byte count"
            ))
        })?;
        if !offset.is_multiple_of(alignment) {
            return Err(c.fail(format!(
                "{what}: its data offset {offset} is not a multiple of the alignment {alignment}"
            )));
        }
        tensors.push(GgufTensorInfo {
            name,
            shape,
            ggml_type,
            offset,
            size,
        });
    }
    let data_start = (c.at as u64).next_multiple_of(alignment);
    let data_len = (bytes.len() as u64).saturating_sub(data_start);
    for (k, t) in tensors.iter().enumerate() {
        if t.offset
            .checked_add(t.size)
            .is_none_or(|end| end > data_len)
        {
            return Err(c.fail(format!(
                "tensor {k} ({:?}): {} bytes at data offset {} run past the file's {data_len} \
                 bytes of data",
                t.name, t.size, t.offset
            )));
        }
    }
    // No two tensors' data overlap (as gguf.cpp's rule): one region named
    // by many tensors would be copied out once for each.
    let mut spans: Vec<(u64, u64, usize)> = (tensors.iter().enumerate())
        .filter(|(_, t)| t.size > 0)
        .map(|(k, t)| (t.offset, t.offset + t.size, k))
        .collect();
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        let (a, b) = (&tensors[w[0].2], &tensors[w[1].2]);
        return Err(c.fail(format!(
            "tensors {:?} (data {}..{}) and {:?} (data {}..{}) overlap",
            a.name, w[0].0, w[0].1, b.name, w[1].0, w[1].1
        )));
    }
    Ok(Gguf {
        version,
        alignment,
        metadata,
        tensors,
        data_start: data_start as usize,
        bytes,
    })
}
