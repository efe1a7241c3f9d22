//! A safetensors header read entry by entry, and checked as the format
//! requires: each tensor's byte range follows the last one's, from 0, and
//! is as long as its dtype and shape say, the last ending at the file's
//! end, all in checked arithmetic. Nothing is buffered whole, so memory
//! follows the entries read (a JSON value of a header holding one long
//! array costs 16 bytes per 2 of the file; the reference crate's reader
//! buffers so, and sums the ranges unchecked).

use crate::error::{Error, Result};
use crate::shape::MAX_RANK;
use safetensors::tensor::Dtype;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::ops::Range;

/// The longest header the format allows (its reference crate's limit).
const MAX_HEADER: u64 = 100_000_000;

/// One tensor of a safetensors file.
pub(super) struct Entry {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    /// Its bytes in the file's data.
    pub range: Range<usize>,
}

/// The tensors of the safetensors file `bytes`, in name order, and the
/// file's data, which their ranges index.
///
/// # Errors
/// `Error::Format` naming `op` for a header that is too long, runs past
/// the file or is not a map of tensor entries (an object each, of at most
/// `MAX_RANK` axes, no key given twice) and a `__metadata__` of strings
/// (or null), a
/// name given twice, and ranges that leave gaps, overlap, disagree with
/// their tensors' sizes or do not end at the file's end.
pub(super) fn entries<'a>(op: &'static str, bytes: &'a [u8]) -> Result<(Vec<Entry>, &'a [u8])> {
    let fail = |msg: String| Error::format(op, msg);
    let Some(n) = bytes.get(..8).and_then(|n| n.try_into().ok()) else {
        return Err(fail(format!("{} bytes hold no header length", bytes.len())));
    };
    let n = u64::from_le_bytes(n);
    if n > MAX_HEADER {
        return Err(fail(format!(
            "the header is {n} bytes; the format allows {MAX_HEADER}"
        )));
    }
    let header = usize::try_from(n)
        .ok()
        .and_then(|n| bytes.get(8..8 + n))
        .ok_or_else(|| {
            fail(format!(
                "a header of {n} bytes in a file of {}",
                bytes.len()
            ))
        })?;
    let data = &bytes[8 + header.len()..];
    let mut json = serde_json::Deserializer::from_slice(header);
    let mut entries = json
        .deserialize_map(Header)
        .and_then(|entries| json.end().map(|()| entries))
        .map_err(|e| fail(format!("header: {e}")))?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = entries.windows(2).find(|p| p[0].name == p[1].name) {
        return Err(fail(format!("the header names {:?} twice", pair[0].name)));
    }
    let mut by_range: Vec<&Entry> = entries.iter().collect();
    by_range.sort_by_key(|e| (e.range.start, e.range.end));
    let mut end = 0;
    for e in by_range {
        let name = &e.name;
        let Range { start, end: stop } = e.range;
        if start != end || stop < start {
            return Err(fail(format!(
                "tensor {name:?} holds bytes {start}..{stop}, where the tensors before it end at {end}"
            )));
        }
        // Elements first: an empty tensor of a huge extent holds nothing.
        let bits = e
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .and_then(|n| n.checked_mul(e.dtype.bitsize()))
            .filter(|bits| bits % 8 == 0);
        if bits.map(|bits| bits / 8) != Some(stop - start) {
            return Err(fail(format!(
                "tensor {name:?} of dtype {} and shape {:?} holds {} bytes",
                e.dtype,
                e.shape,
                stop - start
            )));
        }
        end = stop;
    }
    if end != data.len() {
        return Err(fail(format!(
            "the tensors end at byte {end} of the data; the file has {}",
            data.len()
        )));
    }
    Ok((entries, data))
}

/// A usize from a JSON number, or an error naming `what`.
fn index<E: de::Error>(n: u64, what: &str) -> std::result::Result<usize, E> {
    usize::try_from(n).map_err(|_| E::custom(format!("{what} {n} is past this target's memory")))
}

/// The header's map: `__metadata__` (strings or null, checked and
/// dropped), every other entry a tensor.
struct Header;

impl<'de> Visitor<'de> for Header {
    type Value = Vec<Entry>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of tensor names to their entries")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Vec<Entry>, A::Error> {
        let mut entries = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if name == "__metadata__" {
                // null is none, as the crate's `Option<HashMap>` reads it.
                map.next_value::<Option<Strings>>()?;
                continue;
            }
            let Fields {
                dtype,
                shape,
                range,
            } = map.next_value()?;
            entries.push(Entry {
                name,
                dtype,
                shape,
                range,
            });
        }
        Ok(entries)
    }
}

/// A tensor's entry: an object of `dtype`, `shape` and `data_offsets`
/// (other keys skipped).
struct Fields {
    dtype: Dtype,
    shape: Vec<usize>,
    range: Range<usize>,
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of dtype, shape and data_offsets")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Fields, A::Error> {
        let (mut dtype, mut shape, mut range) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            let given = match key.as_str() {
                "dtype" => dtype.replace(map.next_value::<Dtype>()?).is_some(),
                "shape" => shape.replace(map.next_value::<Dims>()?.0).is_some(),
                "data_offsets" => {
                    let (start, end) = map.next_value::<(u64, u64)>()?;
                    let r = index(start, "offset")?..index(end, "offset")?;
                    range.replace(r).is_some()
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    false
                }
            };
            if given {
                return Err(de::Error::custom(format!("{key:?} is given twice")));
            }
        }
        Ok(Fields {
            dtype: dtype.ok_or_else(|| de::Error::missing_field("dtype"))?,
            shape: shape.ok_or_else(|| de::Error::missing_field("shape"))?,
            range: range.ok_or_else(|| de::Error::missing_field("data_offsets"))?,
        })
    }
}

/// `__metadata__`: a map of strings to strings, as the format says (read,
/// not kept).
struct Strings;

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(StringsVisitor)
    }
}

struct StringsVisitor;

impl<'de> Visitor<'de> for StringsVisitor {
    type Value = Strings;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings to strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Strings, A::Error> {
        while map.next_key::<AnyString>()?.is_some() {
            map.next_value::<AnyString>()?;
        }
        Ok(Strings)
    }
}

/// A JSON string, read and dropped.
struct AnyString;

impl<'de> Deserialize<'de> for AnyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(AnyStringVisitor)
    }
}

struct AnyStringVisitor;

impl<'de> Visitor<'de> for AnyStringVisitor {
    type Value = AnyString;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<AnyString, E> {
        Ok(AnyString)
    }
}

/// A shape of at most `MAX_RANK` extents (read no further).
struct Dims(Vec<usize>);

impl<'de> Deserialize<'de> for Dims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_seq(DimsVisitor)
    }
}

struct DimsVisitor;

impl<'de> Visitor<'de> for DimsVisitor {
    type Value = Dims;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a shape of at most {MAX_RANK} extents")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Dims, A::Error> {
        let mut dims = Vec::new();
        while let Some(d) = seq.next_element::<u64>()? {
            if dims.len() == MAX_RANK {
                return Err(de::Error::custom(format!(
                    "a shape of more than {MAX_RANK} axes"
                )));
            }
            dims.push(index(d, "extent")?);
        }
        Ok(Dims(dims))
    }
}
