//! The zip container of `.npz` files: written uncompressed (as
//! `np.savez`), read stored or deflated (as `np.savez_compressed` writes),
//! with the zip64 sizes Python's zipfile records.

use crate::error::{Error, Result};

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// 1980-01-01, the earliest date a zip entry holds.
const DOS_DATE: u16 = 0x21;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A zip archive holding `entries` uncompressed.
///
/// # Errors
/// `Error::Format` naming `op` for an entry or archive past 4 GiB (zip64
/// is not written).
pub(crate) fn write(op: &'static str, entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    let too_big = || {
        Error::format(
            op,
            "an archive past 4 GiB needs zip64, which is not written",
        )
    };
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let size = u32::try_from(data.len()).map_err(|_| too_big())?;
        let name_len = u16::try_from(name.len())
            .map_err(|_| Error::format(op, format!("the name {name:?} is too long")))?;
        let crc = crc32fast::hash(data);
        // version needed, flags, method (stored), time, date, crc, sizes.
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
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
    let count = u16::try_from(entries.len()).map_err(|_| {
        Error::format(
            op,
            format!("{} entries are more than a zip holds", entries.len()),
        )
    })?;
    let central_at = u32::try_from(out.len()).map_err(|_| too_big())?;
    let central_len = u32::try_from(central.len()).map_err(|_| too_big())?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&END.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // this disk, the central directory's disk
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&central_len.to_le_bytes());
    out.extend_from_slice(&central_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

/// Every entry of a zip archive: its name and its (inflated) bytes, in the
/// central directory's order.
///
/// # Errors
/// `Error::Format` naming `op` for a malformed archive, an entry whose CRC
/// does not match, or a compression other than stored and deflate.
pub(crate) fn read(op: &'static str, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let bad = |what: &str| Error::format(op, format!("not a readable zip archive: {what}"));
    // The end record is the last 22 bytes plus a comment of up to 64 KiB.
    let end = (0..=bytes.len().saturating_sub(22))
        .rev()
        .take(22 + u16::MAX as usize)
        .find(|&at| u32_at(bytes, at) == Some(END))
        .ok_or_else(|| bad("no end of central directory"))?;
    let count = u16_at(bytes, end + 10).ok_or_else(|| bad("a short end record"))? as usize;
    let mut at = u32_at(bytes, end + 16).ok_or_else(|| bad("a short end record"))? as usize;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(bytes, at) != Some(CENTRAL) {
            return Err(bad("a central directory entry without its signature"));
        }
        let field = |off: usize| u32_at(bytes, at + off).ok_or_else(|| bad("a short entry"));
        let half = |off: usize| u16_at(bytes, at + off).ok_or_else(|| bad("a short entry"));
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
        let name = String::from_utf8_lossy(name).into_owned();
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
                let mut f = e + 4;
                for v in [&mut size, &mut packed, &mut local] {
                    if *v == u32::MAX as u64 {
                        *v = u64_at(extra, f).ok_or_else(|| bad("a short zip64 field"))?;
                        f += 8;
                    }
                }
            }
            e += 4 + len;
        }
        let local = local as usize;
        if u32_at(bytes, local) != Some(LOCAL) {
            return Err(bad("an entry without its local header"));
        }
        let data_at = local
            + 30
            + u16_at(bytes, local + 26).ok_or_else(|| bad("a short local header"))? as usize
            + u16_at(bytes, local + 28).ok_or_else(|| bad("a short local header"))? as usize;
        let data = usize::try_from(packed)
            .ok()
            .and_then(|p| bytes.get(data_at..data_at.checked_add(p)?))
            .ok_or_else(|| bad(&format!("entry {name:?} runs past the end")))?;
        let data = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, size as usize)
                .map_err(|e| bad(&format!("entry {name:?} does not inflate: {e:?}")))?,
            m => {
                return Err(Error::format(
                    op,
                    format!(
                        "entry {name:?} uses compression method {m}; stored (0) and deflate (8) are read"
                    ),
                ));
            }
        };
        if data.len() as u64 != size || crc32fast::hash(&data) != crc {
            return Err(bad(&format!("entry {name:?} fails its size or CRC check")));
        }
        entries.push((name, data));
        at = name_at + name_len + extra_len + comment_len;
    }
    Ok(entries)
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
}
