//! The byte loaders against hostile input (issue 26): `.npz` archives
//! whose records overlap or claim more than their bytes hold, more than
//! 65,535 arrays, inflate errors, zip64 offsets near `u64::MAX`, `.npy`
//! headers with a key inside a string or a multi-byte descr, and a fuzz
//! test of mutated valid `.npy`, `.npz` and safetensors files (a few
//! thousand cases; `WEBTENSOR_LONG_TESTS=1` runs a hundred times more, and
//! `cargo test --profile fuzz --test file_loaders` runs them optimised with
//! overflow checks on). Every case is `Ok` or an `Err`, never a panic, and
//! no allocation follows a size that a header claims.

mod common;

use common::{Rng, mutate};
use webtensor::{DType, Device, Error, Tensor, io};

fn cpu() -> Device {
    Device::cpu()
}

fn npz_of(n: usize) -> Vec<u8> {
    let t = Tensor::arange(0.0f32, 4.0, 1.0, &cpu()).unwrap();
    let names: Vec<String> = (0..n).map(|k| format!("a{k}")).collect();
    let pairs: Vec<(&str, &Tensor)> = names.iter().map(|s| (s.as_str(), &t)).collect();
    io::to_npz_bytes(&pairs).unwrap()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The offset of the end record and of the central directory.
fn ends(zip: &[u8]) -> (usize, usize) {
    let end = zip.len() - 22;
    assert_eq!(u32_at(zip, end), 0x0605_4b50);
    (end, u32_at(zip, end + 16) as usize)
}

fn format_error(r: webtensor::Result<Vec<(String, Tensor)>>, what: &str) -> String {
    match r {
        Err(e @ Error::Format { .. }) => e.to_string(),
        Err(e) => panic!("{what}: wrong error {e}"),
        Ok(v) => panic!("{what}: Ok with {} tensors", v.len()),
    }
}

#[test]
fn npz_records_that_overlap_are_refused() {
    // One entry, its central record repeated 2,000 times: each would
    // inflate the same bytes again.
    let zip = npz_of(1);
    let (end, central) = ends(&zip);
    let record = &zip[central..end];
    let mut evil = zip[..central].to_vec();
    let copies = 2000u16;
    for _ in 0..copies {
        evil.extend_from_slice(record);
    }
    let mut tail = zip[end..].to_vec();
    tail[8..10].copy_from_slice(&copies.to_le_bytes());
    tail[10..12].copy_from_slice(&copies.to_le_bytes());
    tail[12..16].copy_from_slice(&((record.len() * copies as usize) as u32).to_le_bytes());
    evil.extend_from_slice(&tail);
    let e = format_error(io::from_npz_bytes(&evil, &cpu()), "overlapping records");
    assert!(e.contains("overlapped"), "{e}");
}

#[test]
fn npz_with_more_than_65535_arrays_reads_them_all() {
    let n = 70_000;
    let zip = npz_of(n);
    let back = io::from_npz_bytes(&zip, &cpu()).unwrap();
    assert_eq!(back.len(), n);
    assert_eq!(back[n - 1].0, format!("a{}", n - 1));
    assert_eq!(back[n - 1].1.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn npz_counts_that_disagree_with_the_central_directory_read_every_entry() {
    // 70,000 arrays with 0xffff in the classic end record and no zip64
    // record (its 56 bytes and the 20 of its locator cut out): Python's
    // zipfile walks the central directory by its size and reads them all.
    let n = 70_000;
    let zip = npz_of(n);
    let end = zip.len() - 22;
    assert_eq!(u32_at(&zip, end - 20), 0x0706_4b50, "the zip64 locator");
    let mut plain = zip[..end - 76].to_vec();
    plain.extend_from_slice(&zip[end..]);
    assert_eq!(
        u16::from_le_bytes([plain[plain.len() - 12], plain[plain.len() - 11]]),
        0xffff
    );
    let back = io::from_npz_bytes(&plain, &cpu()).unwrap();
    assert_eq!(back.len(), n);
    assert_eq!(back[n - 1].0, format!("a{}", n - 1));
    // Three entries whose end record says two: three, as Python reads.
    let mut zip = npz_of(3);
    let (end, _) = ends(&zip);
    zip[end + 8..end + 12].copy_from_slice(&[2, 0, 2, 0]);
    assert_eq!(io::from_npz_bytes(&zip, &cpu()).unwrap().len(), 3);
    // A directory size that cuts a record short is an error.
    let mut zip = npz_of(3);
    let (end, _) = ends(&zip);
    let size = u32_at(&zip, end + 12) - 10;
    zip[end + 12..end + 16].copy_from_slice(&size.to_le_bytes());
    let e = format_error(io::from_npz_bytes(&zip, &cpu()), "short directory");
    assert!(e.contains("central directory"), "{e}");
}

/// A one-entry archive whose entry `x.npy` is deflated: `data` as its
/// deflate stream, `size` and `crc` as its central record claims.
fn deflated_npz(data: &[u8], size: u32, crc: u32) -> Vec<u8> {
    deflated_entry("x.npy", data, size, crc)
}

/// [`deflated_npz`] with the entry named `name`.
fn deflated_entry(name: &str, data: &[u8], size: u32, crc: u32) -> Vec<u8> {
    let name = name.as_bytes();
    let mut out = Vec::new();
    let fields = |v: &mut Vec<u8>| {
        v.extend_from_slice(&20u16.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&8u16.to_le_bytes()); // deflate
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(&crc.to_le_bytes());
        v.extend_from_slice(&(data.len() as u32).to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&(name.len() as u16).to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
    };
    out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    fields(&mut out);
    out.extend_from_slice(name);
    out.extend_from_slice(data);
    let central_at = out.len() as u32;
    out.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    fields(&mut out);
    out.extend_from_slice(&[0; 10]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(name);
    let central_len = out.len() as u32 - central_at;
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&central_len.to_le_bytes());
    out.extend_from_slice(&central_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

#[test]
fn npz_entries_claiming_more_than_their_bytes_are_refused_before_allocating() {
    // 4 GiB claimed by 100 bytes of deflate: refused from the ratio alone.
    let e = format_error(
        io::from_npz_bytes(&deflated_npz(&[0u8; 100], u32::MAX - 1, 0), &cpu()),
        "a 4 GiB claim",
    );
    assert!(e.contains("claims"), "{e}");
    // Deflate data that does not inflate: the message is short (it once
    // held every inflated byte).
    let junk: Vec<u8> = (0..250_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let e = format_error(
        io::from_npz_bytes(&deflated_npz(&junk, 200_000_000, 0), &cpu()),
        "junk deflate",
    );
    assert!(e.len() < 300, "an error of {} bytes", e.len());
}

#[test]
fn npz_members_that_are_not_arrays_are_never_inflated_whole() {
    // A member beside the arrays is checked for the .npy magic by its
    // first bytes only: one claiming 4 GiB from 100 bytes (refused as
    // an array above) is skipped, as np.load skips it until asked.
    let zip = deflated_entry("meta.bin", &[0u8; 100], u32::MAX - 1, 0);
    let arrays = io::from_npz_bytes(&zip, &cpu()).unwrap();
    assert!(arrays.is_empty());
    let npz = io::Npz::from_bytes(&zip).unwrap();
    assert!(npz.names().is_empty());
    // Asked for, it is read, and its claim refused.
    let e = npz.load("meta.bin", &cpu()).unwrap_err().to_string();
    assert!(e.contains("claims"), "{e}");
}

#[test]
fn zip64_offsets_near_the_end_of_u64_are_errors() {
    let zip = npz_of(1);
    let (end, central) = ends(&zip);
    // The local header offset becomes 0xffffffff with a zip64 extra field
    // holding u64::MAX - 3.
    let mut evil = zip[..central].to_vec();
    let mut record = zip[central..end].to_vec();
    record[42..46].copy_from_slice(&u32::MAX.to_le_bytes());
    let name_len = u16::from_le_bytes([record[28], record[29]]) as usize;
    let mut extra = vec![1, 0, 8, 0];
    extra.extend_from_slice(&(u64::MAX - 3).to_le_bytes());
    record[30..32].copy_from_slice(&(extra.len() as u16).to_le_bytes());
    record.splice(46 + name_len..46 + name_len, extra);
    evil.extend_from_slice(&record);
    let mut tail = zip[end..].to_vec();
    tail[12..16].copy_from_slice(&(record.len() as u32).to_le_bytes());
    evil.extend_from_slice(&tail);
    format_error(
        io::from_npz_bytes(&evil, &cpu()),
        "a zip64 offset near u64::MAX",
    );
}

fn npy_with_header(dict: &str) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    let text = format!("{dict}\n");
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&[0u8; 24]);
    out
}

#[test]
fn npy_headers_are_read_as_python_reads_them() {
    let ok = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    assert_eq!(io::from_npy_bytes(&ok, &cpu()).unwrap().dims(), [2, 3]);
    for dict in [
        // A key inside a string value, and an extra key NumPy refuses.
        "{'descr': '<f4', 'note': \"'shape': (3, 2)\", 'shape': (2, 3), 'fortran_order': False}",
        // A descr starting with a multi-byte character.
        "{'descr': 'é4', 'fortran_order': False, 'shape': (2, 3), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (3, 2)",
    ] {
        match io::from_npy_bytes(&npy_with_header(dict), &cpu()) {
            Err(Error::Format { .. }) => {}
            other => panic!("{dict}: {other:?}"),
        }
    }
}

/// np.load refuses a header past its `max_header_size` of 10,000 bytes
/// ("Header info length (10001) is large and may not be safe to load
/// securely"); its parse would cost time for nothing.
#[test]
fn npy_headers_past_numpys_limit_are_refused() {
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    for (len, ok) in [(10_000, true), (10_001, false)] {
        // npy_with_header adds a newline.
        let padded = format!("{dict}{}", " ".repeat(len - 1 - dict.len()));
        match io::from_npy_bytes(&npy_with_header(&padded), &cpu()) {
            Ok(t) if ok => assert_eq!(t.dims(), [2, 3]),
            Err(Error::Format { msg, .. }) if !ok => assert!(msg.contains("10001"), "{msg}"),
            other => panic!("{len}: {other:?}"),
        }
    }
}

/// Two arrays of one name: np.load would find the last under it, so the
/// first would be lost (np.savez refuses the pair).
#[test]
fn npz_refuses_to_write_a_name_twice() {
    let t = Tensor::zeros([2], DType::F32, &cpu()).unwrap();
    match io::to_npz_bytes(&[("a", &t), ("b", &t), ("a", &t)]) {
        Err(Error::Format { op, msg }) => {
            assert_eq!(op, "to_npz_bytes");
            assert!(msg.contains("\"a.npy\" is given twice"), "{msg}");
        }
        other => panic!("{:?}", other.map(|b| b.len())),
    }
}

/// A name without the UTF-8 flag is code page 437, as Python's zipfile
/// reads it (`b"\x82.npy".decode("cp437")` is `"é.npy"`): names differing
/// in such bytes stay distinct. A flagged name is UTF-8.
#[test]
fn npz_names_without_the_utf8_flag_read_as_code_page_437() {
    let t = Tensor::arange(0.0f32, 4.0, 1.0, &cpu()).unwrap();
    let written = io::to_npz_bytes(&[("é", &t)]).unwrap();
    let read = io::from_npz_bytes(&written, &cpu()).unwrap();
    assert_eq!(read[0].0, "é");
    let mut legacy = io::to_npz_bytes(&[("x", &t), ("y", &t)]).unwrap();
    let (_, central) = ends(&legacy);
    // Each name's first byte in its local header (offset 30) and its
    // central record (offset 46); the flags stay clear.
    let second = 46 + 5;
    let local_y = u32_at(&legacy, central + second + 42) as usize;
    for (at, byte) in [
        (30, 0x82),
        (central + 46, 0x82),
        (local_y + 30, 0x8a),
        (central + second + 46, 0x8a),
    ] {
        legacy[at] = byte;
    }
    let names: Vec<String> = io::from_npz_bytes(&legacy, &cpu())
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["é", "è"]);
}

/// Offsets summing past 2^64: the safetensors crate's reader adds the
/// data's end to the header's length unchecked (a panic where overflow is
/// checked, as in these tests' builds).
#[test]
fn safetensors_offsets_past_the_file_are_refused_without_overflow() {
    let s = (1u64 << 61) - 1;
    let tensors: Vec<String> = (0..8)
        .map(|i| {
            format!(
                "\"t{i}\": {{\"dtype\": \"U8\", \"shape\": [{s}], \"data_offsets\": [{}, {}]}}",
                i * s,
                (i + 1) * s
            )
        })
        .collect();
    let header = format!("{{{}}}", tensors.join(", "));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    match io::from_safetensors_bytes(&file, &cpu()) {
        Err(Error::Format { msg, .. }) => assert!(msg.contains("the file has 0"), "{msg}"),
        other => panic!("{:?}", other.map(|m| m.len())),
    }
}

/// Headers the safetensors crate's reader panicked on or took are
/// refused, each with an `Error::Format` saying why: a tensor's entry as
/// an array (the crate takes `[dtype, shape, offsets]`, and summed such
/// offsets past 2^64 unchecked), a header longer than the format allows,
/// a name given twice (the crate kept the last), a shape past the rank
/// limit, a gap or overlap between ranges, and a size that disagrees with
/// the shape.
#[test]
fn malformed_safetensors_headers_are_refused() {
    let file = |header: &str, data: usize| {
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        file.resize(file.len() + data, 0);
        file
    };
    let s = (1u64 << 61) - 1;
    let arrays: Vec<String> = (0..8)
        .map(|i| format!("\"t{i}\": [\"U8\", [{s}], [{}, {}]]", i * s, (i + 1) * s))
        .collect();
    let cases = [
        (
            file(&format!("{{{}}}", arrays.join(", ")), 0),
            "expected an object",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [2, 3]}}",
                3,
            ),
            "twice",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 1]}}",
                1,
            ),
            "more than 8 axes",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}, \"b\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [1, 3]}}",
                3,
            ),
            "end at 2",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
                4,
            ),
            "holds 4 bytes",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}}",
                3,
            ),
            "the file has 3",
        ),
        (
            file("{\"a\": {\"dtype\": \"U8\", \"shape\": [2]}}", 0),
            "data_offsets",
        ),
        (
            file(
                "{\"a\": {\"dtype\": \"U8\", \"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 1]}}",
                1,
            ),
            "given twice",
        ),
        (file("{\"__metadata__\": 5}", 0), "a map of strings"),
        (file("{\"__metadata__\": {\"epoch\": 3}}", 0), "a string"),
    ];
    for (bytes, want) in cases {
        match io::from_safetensors_bytes(&bytes, &cpu()) {
            Err(Error::Format { msg, .. }) => assert!(msg.contains(want), "{want}: {msg}"),
            other => panic!("{want}: {:?}", other.map(|m| m.len())),
        }
    }
    let mut long = 100_000_001u64.to_le_bytes().to_vec();
    long.extend_from_slice(b"{}");
    let e = io::from_safetensors_bytes(&long, &cpu())
        .unwrap_err()
        .to_string();
    assert!(e.contains("allows 100000000"), "{e}");
    // As the crate reads them: unknown keys in an entry are skipped,
    // __metadata__ is strings, the header may be padded with spaces, and
    // an empty tensor of a huge extent holds nothing.
    let ok = file(
        "{\"__metadata__\": {\"format\": \"pt\"}, \"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2], \"note\": [1]}}   ",
        2,
    );
    assert_eq!(
        io::from_safetensors_bytes(&ok, &cpu()).unwrap()["a"].dims(),
        &[2]
    );
    // A null __metadata__ is none (the crate's `Option<HashMap>`).
    let none = file(
        "{\"__metadata__\": null, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}",
        1,
    );
    assert_eq!(io::from_safetensors_bytes(&none, &cpu()).unwrap().len(), 1);
    let huge = format!(
        "{{\"e\": {{\"dtype\": \"F32\", \"shape\": [{}, 0], \"data_offsets\": [0, 0]}}}}",
        1u64 << 60
    );
    let e = io::from_safetensors_bytes(&file(&huge, 0), &cpu()).unwrap();
    assert_eq!(e["e"].dims(), &[1 << 60, 0]);
}

#[test]
fn safetensors_refuses_to_write_a_tensor_named_metadata() {
    let t = Tensor::zeros([2], DType::F32, &cpu()).unwrap();
    assert!(matches!(
        io::to_safetensors_bytes(&[("__metadata__", &t)]),
        Err(Error::Format { .. })
    ));
}

#[test]
fn mutated_files_load_or_fail_cleanly() {
    let dev = cpu();
    let a = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let b = Tensor::from_slice(&[1u8, 2, 3], [3], &dev).unwrap();
    let h = a.to_dtype(DType::F16).unwrap();
    let npy = io::to_npy_bytes(&a).unwrap();
    let npz = io::to_npz_bytes(&[("a", &a), ("b", &b), ("h", &h)]).unwrap();
    let compressed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/numpy_compressed.npz"
    ))
    .unwrap();
    let st = io::to_safetensors_bytes(&[("a", &a), ("b", &b), ("h", &h)]).unwrap();
    let long = std::env::var("WEBTENSOR_LONG_TESTS").is_ok_and(|v| v == "1");
    let cases = if long { 300_000 } else { 3_000 };
    let mut rng = Rng(0x2026_1125);
    let mut loaded = 0;
    for k in 0..cases {
        let (source, what): (&[u8], _) = match k % 4 {
            0 => (&npy, "npy"),
            1 => (&npz, "npz"),
            2 => (&compressed, "compressed npz"),
            _ => (&st, "safetensors"),
        };
        let bytes = mutate(source, &mut rng);
        let result = match what {
            "npy" => io::from_npy_bytes(&bytes, &dev).map(|t| vec![(String::new(), t)]),
            "safetensors" => {
                io::from_safetensors_bytes(&bytes, &dev).map(|m| m.into_iter().collect())
            }
            _ => io::from_npz_bytes(&bytes, &dev),
        };
        if let Ok(tensors) = result {
            // What loads is readable.
            for (_, t) in tensors {
                let _ = t.to_string();
            }
            loaded += 1;
        }
    }
    // Mutations in the data leave files that still load.
    assert!(loaded > cases / 20, "only {loaded} of {cases} loaded");
}
