//! The zip container of `.npz` files: written uncompressed (as
//! `np.savez`), read stored or deflated (as `np.savez_compressed` writes),
//! with the zip64 sizes Python's zipfile records.

use crate::backend::cpu::try_zeroed;
use crate::error::{Error, Result};
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
use std::borrow::Cow;

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// 1980-01-01, the earliest date a zip entry holds.
const DOS_DATE: u16 = 0x21;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// `n` as a size or offset field of a plain (not zip64) record: below
/// 0xffffffff, which marks the value as held in a zip64 extra field.
fn plain_u32(n: usize) -> Option<u32> {
    u32::try_from(n).ok().filter(|&v| v != u32::MAX)
}

/// A zip archive holding `entries` uncompressed.
///
/// # Errors
/// `Error::Format` naming `op` for a name given twice (a reader finds one
/// array under it: NumPy's `np.load` the last) or holding a NUL, or an
/// entry or archive past
/// 4 GiB (zip64 sizes and offsets are not written; a zip64 count is, past
/// 65,535 entries).
pub(crate) fn write(op: &'static str, entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    if let Some((name, _)) = entries.iter().find(|(n, _)| n.contains('\0')) {
        // Python's zipfile ends a name at its NUL: `np.load` would find
        // "a\0b" and "a\0c" both as "a", and reach one of them.
        return Err(Error::format(op, format!("the name {name:?} holds a NUL")));
    }
    let mut names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::format(
            op,
            format!("the name {:?} is given twice", w[0]),
        ));
    }
    let too_big = || {
        Error::format(
            op,
            "an archive past 4 GiB needs zip64, which is not written",
        )
    };
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let offset = plain_u32(out.len()).ok_or_else(too_big)?;
        let size = plain_u32(data.len()).ok_or_else(too_big)?;
        let name_len = u16::try_from(name.len())
            .map_err(|_| Error::format(op, format!("the name {name:?} is too long")))?;
        let crc = crc32fast::hash(data);
        // General purpose bit 11: the name is UTF-8 (readers take a name
        // without it as IBM code page 437, as Python's zipfile does: NumPy
        // found `é.npy` under another name). ASCII names leave it clear,
        // as NumPy's own archives do.
        let flags: u16 = if name.is_ascii() { 0 } else { 0x0800 };
        // version needed, flags, method (stored), time, date, crc, sizes.
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes());
            v.extend_from_slice(&flags.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
            v.extend_from_slice(&DOS_DATE.to_le_bytes());
            v.extend_from_slice(&crc.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&name_len.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
        };
        out.extend_from_slice(&LOCAL.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(&CENTRAL.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&[0; 10]); // comment, disk, internal, external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let central_at = plain_u32(out.len()).ok_or_else(too_big)?;
    let central_len = plain_u32(central.len()).ok_or_else(too_big)?;
    out.extend_from_slice(&central);
    // Past 65,535 entries the count goes in a zip64 end record (as Python's
    // zipfile writes it) and the plain record says 0xffff.
    let count = u16::try_from(entries.len()).unwrap_or(u16::MAX);
    if entries.len() >= u16::MAX as usize {
        let record_at = out.len() as u64;
        let n = entries.len() as u64;
        out.extend_from_slice(&END64.to_le_bytes());
        out.extend_from_slice(&44u64.to_le_bytes()); // the record's size after this field
        out.extend_from_slice(&45u16.to_le_bytes()); // version made by
        out.extend_from_slice(&45u16.to_le_bytes()); // version needed
        out.extend_from_slice(&[0; 8]); // this disk, the central directory's disk
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(central_len as u64).to_le_bytes());
        out.extend_from_slice(&(central_at as u64).to_le_bytes());
        out.extend_from_slice(&END64_LOCATOR.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&record_at.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes()); // disks
    }
    out.extend_from_slice(&END.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // this disk, the central directory's disk
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&central_len.to_le_bytes());
    out.extend_from_slice(&central_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

/// One entry of a zip archive, as its central directory and local header
/// describe it: its bytes are still in the archive, at `data`.
pub(crate) struct Entry {
    pub name: String,
    method: u16,
    crc: u32,
    size: u64,
    data: std::ops::Range<usize>,
}

/// The zip64 end of central directory locator and record.
const END64_LOCATOR: u32 = 0x0706_4b50;
const END64: u32 = 0x0606_4b50;
/// Deflate writes at least one bit per 258 bytes of output, so no stream
/// inflates more than 1032 times its length (plus its last block).
const MAX_DEFLATE_RATIO: u64 = 1032;

/// `len` bytes of `bytes` from `at`, where both are whatever a header
/// claims (never past the end, never overflowing).
fn span(bytes: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let at = usize::try_from(at).ok()?;
    let end = at.checked_add(usize::try_from(len).ok()?)?;
    bytes.get(at..end)
}

/// The entries of a zip archive in the central directory's order, checked
/// before any is inflated: each lies inside the archive, before the central
/// directory, and no two share bytes (as Python's zipfile refuses
/// "overlapped entries": a small file whose records all point at one large
/// entry would otherwise inflate it over and over). The central directory
/// is read whole, by its size (as Python's zipfile reads it), so the
/// entry count of the end record (0xffff past 65,535 entries, where a
/// zip64 record may hold the true one) is not relied on.
///
/// # Errors
/// `Error::Format` naming `op` for a malformed archive.
pub(crate) fn entries(op: &'static str, bytes: &[u8]) -> Result<Vec<Entry>> {
    let bad = |what: &str| Error::format(op, format!("not a readable zip archive: {what}"));
    // The end record is the last 22 bytes plus a comment of up to 64 KiB.
    let end = (0..=bytes.len().saturating_sub(22))
        .rev()
        .take(22 + u16::MAX as usize)
        .find(|&at| u32_at(bytes, at) == Some(END))
        .ok_or_else(|| bad("no end of central directory"))?;
    let short_end = || bad("a short end record");
    let count = u16_at(bytes, end + 10).ok_or_else(short_end)? as u64;
    let mut central_len = u32_at(bytes, end + 12).ok_or_else(short_end)? as u64;
    let mut central_at = u32_at(bytes, end + 16).ok_or_else(short_end)? as u64;
    // Counts and offsets that do not fit are 0xffff / 0xffffffff there and
    // held in the zip64 record, which a locator just before names.
    let locator = end
        .checked_sub(20)
        .filter(|&l| u32_at(bytes, l) == Some(END64_LOCATOR));
    if let Some(locator) = locator
        && (count == u16::MAX as u64
            || central_len == u32::MAX as u64
            || central_at == u32::MAX as u64)
    {
        let record = u64_at(bytes, locator + 8).ok_or_else(short_end)?;
        let record =
            span(bytes, record, 56).ok_or_else(|| bad("a zip64 end record past the end"))?;
        if u32_at(record, 0) != Some(END64) {
            return Err(bad("a zip64 end record without its signature"));
        }
        central_len = u64_at(record, 40).ok_or_else(short_end)?;
        central_at = u64_at(record, 48).ok_or_else(short_end)?;
    }
    // The central directory is walked by its size, as Python's zipfile
    // does: a count of 0xffff with no zip64 record (an archive of more
    // entries written without one) reads every entry, not 65,535.
    let central_end = central_at
        .checked_add(central_len)
        .and_then(|e| usize::try_from(e).ok())
        .filter(|&e| e <= end)
        .ok_or_else(|| bad("a central directory past its end record"))?;
    let mut at = central_at as usize;
    // Each central record takes at least 46 bytes.
    let mut entries = Vec::with_capacity(central_len as usize / 46);
    // (first byte, one past the last) of each entry's header and data.
    let mut extents = Vec::with_capacity(central_len as usize / 46);
    while at < central_end {
        if u32_at(bytes, at) != Some(CENTRAL) {
            return Err(bad("a central directory entry without its signature"));
        }
        let field = |off: usize| u32_at(bytes, at + off).ok_or_else(|| bad("a short entry"));
        let half = |off: usize| u16_at(bytes, at + off).ok_or_else(|| bad("a short entry"));
        let utf8 = half(8)? & 0x0800 != 0;
        let method = half(10)?;
        let crc = field(16)?;
        let mut packed = field(20)? as u64;
        let mut size = field(24)? as u64;
        let (name_len, extra_len, comment_len) =
            (half(28)? as usize, half(30)? as usize, half(32)? as usize);
        let mut local = field(42)? as u64;
        let name_at = at + 46;
        let name = bytes
            .get(name_at..name_at + name_len)
            .ok_or_else(|| bad("a short name"))?;
        // Cut at a NUL, as Python's zipfile reads a name.
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        let name = match utf8 || name.is_ascii() {
            true => String::from_utf8_lossy(name).into_owned(),
            false => cp437(name),
        };
        // Zip64: the 32-bit fields that are 0xffffffff follow in its extra field.
        let extra = bytes
            .get(name_at + name_len..name_at + name_len + extra_len)
            .ok_or_else(|| bad("a short extra field"))?;
        let mut e = 0;
        while e + 4 <= extra.len() {
            let (id, len) = (
                u16_at(extra, e).unwrap_or(0),
                u16_at(extra, e + 2).unwrap_or(0) as usize,
            );
            if id == 1 {
                // Read within its own length, not into the next field's.
                let field = extra.get(e + 4..e + 4 + len).unwrap_or(&[]);
                let mut f = 0;
                for v in [&mut size, &mut packed, &mut local] {
                    if *v == u32::MAX as u64 {
                        *v = u64_at(field, f).ok_or_else(|| {
                            bad(&format!("entry {name:?} has a short zip64 field"))
                        })?;
                        f += 8;
                    }
                }
            }
            e += 4 + len;
        }
        let header = span(bytes, local, 30)
            .filter(|h| u32_at(h, 0) == Some(LOCAL))
            .ok_or_else(|| bad(&format!("entry {name:?} has no local header")))?;
        let header_len =
            30 + u16_at(header, 26).unwrap_or(0) as u64 + u16_at(header, 28).unwrap_or(0) as u64;
        let data = local
            .checked_add(header_len)
            .filter(|&data_at| span(bytes, data_at, packed).is_some())
            .map(|data_at| data_at as usize..(data_at + packed) as usize)
            .ok_or_else(|| bad(&format!("entry {name:?} runs past the end")))?;
        extents.push((local, local + header_len + packed));
        entries.push(Entry {
            name,
            method,
            crc,
            size,
            data,
        });
        at = name_at + name_len + extra_len + comment_len;
        if at > central_end {
            return Err(bad("a central directory entry past the directory's end"));
        }
    }
    extents.sort_unstable();
    let overlapping = extents.windows(2).any(|w| w[1].0 < w[0].1);
    if overlapping || extents.last().is_some_and(|&(_, last)| last > central_at) {
        return Err(bad("overlapped entries"));
    }
    Ok(entries)
}

impl Entry {
    /// True when its compression is one [`Entry::contents`] reads (stored
    /// or deflate).
    pub fn readable(&self) -> bool {
        matches!(self.method, 0 | 8)
    }

    /// Whether the entry's bytes (in `archive`, the bytes [`entries`]
    /// read) start with `prefix`, inflating no more than its length (a
    /// member checked for a magic number is not inflated whole); `None`
    /// for a compression not read or a stream that does not inflate that
    /// far.
    pub fn starts_with(&self, archive: &[u8], prefix: &[u8]) -> Option<bool> {
        let data = &archive[self.data.clone()];
        if self.size < prefix.len() as u64 {
            return Some(false);
        }
        match self.method {
            0 => Some(data.starts_with(prefix)),
            8 => {
                let mut head = vec![0u8; prefix.len()];
                let mut state = Box::<DecompressorOxide>::default();
                let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
                let (_, _, written) = decompress(&mut state, data, &mut head, 0, flags);
                (written == prefix.len()).then(|| head == prefix)
            }
            _ => None,
        }
    }

    /// The entry's bytes (in `archive`, the bytes [`entries`] read): a
    /// stored entry's as they lie in the archive, a deflated one's
    /// inflated into one buffer of its recorded size (never more than
    /// deflate can produce from its bytes), CRC checked. A deflate stream
    /// that ends without a final block (a sync flush, as some writers
    /// leave it) is read as far as its recorded size, as Python's zipfile
    /// reads it.
    ///
    /// # Errors
    /// `Error::Format` naming `op` for a compression other than stored and
    /// deflate, or data that does not inflate to its recorded size or fails
    /// its CRC; `Error::OutOfMemory` when the host
    /// cannot hold the inflated bytes.
    pub fn contents<'a>(&self, op: &'static str, archive: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        let name = &self.name;
        let packed = &archive[self.data.clone()];
        let bad = |what: &str| {
            Error::format(
                op,
                format!("not a readable zip archive: entry {name:?} {what}"),
            )
        };
        if !self.readable() {
            return Err(bad(&format!(
                "uses compression method {}; stored (0) and deflate (8) are read",
                self.method
            )));
        }
        // An empty deflated entry may hold no deflate stream at all.
        let data: Cow<'a, [u8]> = if self.method == 0 || (self.size == 0 && packed.is_empty()) {
            Cow::Borrowed(packed)
        } else {
            let most = (packed.len() as u64)
                .saturating_mul(MAX_DEFLATE_RATIO)
                .saturating_add(1024);
            if self.size > most {
                return Err(bad(&format!(
                    "claims {} bytes, more than its {} deflated bytes can hold",
                    self.size,
                    packed.len()
                )));
            }
            let size =
                usize::try_from(self.size).map_err(|_| bad("is too large for this machine"))?;
            let mut out: Vec<u8> = try_zeroed(op, size)?;
            let mut state = Box::<DecompressorOxide>::default();
            let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
            // Only the status is reported: a decompressor's error value can
            // carry every byte it inflated.
            let (status, _, written) = decompress(&mut state, packed, &mut out, 0, flags);
            match status {
                TINFLStatus::Done if written == size => {}
                // The input ran out with every recorded byte written: a
                // stream without its final block (the CRC below checks it).
                TINFLStatus::FailedCannotMakeProgress | TINFLStatus::NeedsMoreInput
                    if written == size => {}
                TINFLStatus::Done => return Err(bad("fails its size check")),
                TINFLStatus::HasMoreOutput => return Err(bad("inflates past its recorded size")),
                other => return Err(bad(&format!("does not inflate ({other:?})"))),
            }
            Cow::Owned(out)
        };
        if data.len() as u64 != self.size || crc32fast::hash(&data) != self.crc {
            return Err(bad("fails its size or CRC check"));
        }
        Ok(data)
    }
}

/// IBM code page 437's characters for the bytes 0x80 to 0xff.
const CP437_HIGH: &str = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u{a0}";

/// A name written without the UTF-8 flag, as code page 437 reads it (as
/// Python's zipfile reads it: distinct names stay distinct).
fn cp437(name: &[u8]) -> String {
    name.iter()
        .map(|&b| match b {
            0..=0x7f => b as char,
            _ => CP437_HIGH
                .chars()
                .nth(b as usize - 0x80)
                .unwrap_or('\u{fffd}'),
        })
        .collect()
}

/// Every entry of a zip archive: its name and its (inflated) bytes, in the
/// central directory's order.
///
/// # Errors
/// As [`entries`] and [`Entry::contents`].
#[cfg(test)]
pub(crate) fn read(op: &'static str, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    entries(op, bytes)?
        .iter()
        .map(|e| Ok((e.name.clone(), e.contents(op, bytes)?.into_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_round_trip_and_damage_is_caught() {
        let entries = vec![
            ("a.npy".to_string(), b"hello".to_vec()),
            ("b.npy".to_string(), vec![]),
            ("c.npy".to_string(), (0..=255).collect()),
        ];
        let zip = write("t", &entries).unwrap();
        assert_eq!(read("t", &zip).unwrap(), entries);
        let mut broken = zip.clone();
        broken[36] ^= 1; // the second byte of a.npy's data (after a 30-byte header and the name)
        assert!(read("t", &broken).unwrap_err().to_string().contains("CRC"));
        assert!(read("t", &zip[..20]).is_err());
        assert!(read("t", b"").is_err());
    }

    /// An empty entry marked deflated may hold no deflate stream (Python's
    /// zipfile reads it as no bytes; miniz would not inflate nothing).
    #[test]
    fn an_empty_deflated_entry_is_no_bytes() {
        let entries = vec![("extras/".to_string(), vec![])];
        let mut zip = write("t", &entries).unwrap();
        // The method in the local header (at 8) and the central record
        // (30 + 7 bytes of name, then 10).
        zip[8] = 8;
        zip[30 + 7 + 10] = 8;
        assert_eq!(read("t", &zip).unwrap(), entries);
        zip[8] = 12;
        zip[30 + 7 + 10] = 12;
        let e = read("t", &zip).unwrap_err().to_string();
        assert!(e.contains("compression method 12"), "{e}");
    }

    /// 0xffffffff in a plain record says "see the zip64 field", which is
    /// not written: a size or offset of exactly that is past the limit.
    #[test]
    fn plain_fields_stop_below_the_zip64_marker() {
        assert_eq!(plain_u32(0xffff_fffe), Some(0xffff_fffe));
        assert_eq!(plain_u32(0xffff_ffff), None);
        assert_eq!(plain_u32(0), Some(0));
    }
}
