//! GGUF files: those gguf-py writes (tests/data/make_gguf_files.py) load
//! with every value type and tensor type, as NumPy holds them; webtensor
//! writes gguf-py's bytes back; malformed files (crafted and fuzzed) fail
//! with a clear `Err` naming the field, never a panic or an allocation a
//! header asked for.

mod common;

use std::collections::HashMap;
use webtensor::io::{self, GgmlType, Gguf, GgufValue, GgufValueType, GgufWriter};
use webtensor::{DType, Device, Error, QTensor, Tensor, bf16};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn small() -> Gguf {
    Gguf::from_bytes(data("gguf_small.gguf")).unwrap()
}

/// NumPy's arrays of the files, by tensor name (`.` as `_`).
fn arrays() -> HashMap<String, Tensor> {
    io::from_npz_bytes(&data("gguf_arrays.npz"), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

/// A tensor's values as f64, read on the CPU.
fn values(t: &Tensor) -> Vec<f64> {
    t.to_device(&Device::cpu())
        .and_then(|c| c.to_dtype(DType::F64))
        .and_then(|c| c.to_vec::<f64>())
        .unwrap()
}

fn int_array(values: &[i32]) -> GgufValue {
    GgufValue::Array {
        item: GgufValueType::I32,
        items: values.iter().map(|&v| GgufValue::I32(v)).collect(),
    }
}

#[test]
fn gguf_py_metadata_loads_with_every_value_type() {
    let f = small();
    assert_eq!((f.version(), f.alignment()), (3, 32));
    let want: Vec<(&str, GgufValue)> = vec![
        ("general.architecture", GgufValue::String("llama".into())),
        ("test.u8", GgufValue::U8(200)),
        ("test.i8", GgufValue::I8(-100)),
        ("test.u16", GgufValue::U16(60000)),
        ("test.i16", GgufValue::I16(-30000)),
        ("test.u32", GgufValue::U32(4_000_000_000)),
        ("test.i32", GgufValue::I32(-2_000_000_000)),
        ("test.f32", GgufValue::F32(0.1)),
        ("test.bool", GgufValue::Bool(true)),
        ("test.string", GgufValue::String("héllo, GGUF".into())),
        ("test.u64", GgufValue::U64((1 << 63) + 5)),
        ("test.i64", GgufValue::I64(-(1 << 62))),
        ("test.f64", GgufValue::F64(1e-300)),
        ("test.array_u32", int_array(&[1, 2, 3])),
        (
            "test.array_str",
            GgufValue::Array {
                item: GgufValueType::String,
                items: ["a", "", "ü"]
                    .iter()
                    .map(|s| GgufValue::String(s.to_string()))
                    .collect(),
            },
        ),
        (
            "test.array_nested",
            GgufValue::Array {
                item: GgufValueType::Array,
                items: vec![int_array(&[1, 2]), int_array(&[3])],
            },
        ),
        (
            "test.array_long",
            int_array(&(0..1000).collect::<Vec<i32>>()),
        ),
        ("llama.context_length", GgufValue::U32(2048)),
    ];
    let got: Vec<(&str, GgufValue)> = f
        .metadata()
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        f.get("test.u32").and_then(GgufValue::as_u64),
        Some(4_000_000_000)
    );
    assert_eq!(f.get("test.i8").and_then(GgufValue::as_f64), Some(-100.0));
    assert_eq!(f.get("test.i8").and_then(GgufValue::as_u64), None);
    assert_eq!(
        f.get("test.array_long")
            .and_then(GgufValue::as_array)
            .map(<[_]>::len),
        Some(1000)
    );
    assert!(f.get("missing").is_none());
    // Printed, a file shows its header, never its bytes.
    let printed = format!("{f:?}");
    assert!(
        printed.len() < 120 && printed.contains("tensors: 13"),
        "{printed}"
    );
}

#[test]
fn gguf_py_tensors_load_as_numpy_holds_them_on_every_device() {
    let f = small();
    let want = arrays();
    let types: Vec<(&str, GgmlType, Vec<usize>)> = f
        .tensors()
        .iter()
        .map(|t| (t.name.as_str(), t.ggml_type, t.shape.clone()))
        .collect();
    assert_eq!(
        types,
        vec![
            ("f32", GgmlType::F32, vec![2, 3]),
            ("f16", GgmlType::F16, vec![3, 4]),
            ("f64", GgmlType::F64, vec![2, 2]),
            ("i8", GgmlType::I8, vec![5]),
            ("i16", GgmlType::I16, vec![2, 3]),
            ("i32", GgmlType::I32, vec![4]),
            ("i64", GgmlType::I64, vec![3]),
            ("blk.0.ffn_up.weight", GgmlType::F32, vec![2, 3, 4, 5]),
            ("empty", GgmlType::F32, vec![0, 3]),
            ("bf16", GgmlType::BF16, vec![2, 5]),
            ("q8_0", GgmlType::Q8_0, vec![3, 64]),
            ("q4_0", GgmlType::Q4_0, vec![3, 64]),
            ("q4_k", GgmlType::Q4_K, vec![2, 256]),
        ]
    );
    for t in f.tensors() {
        assert!(t.offset.is_multiple_of(32), "{t:?}");
    }
    for dev in common::devices() {
        for name in ["f32", "f16", "i32", "blk.0.ffn_up.weight", "empty"] {
            let got = f.tensor(name, &dev).unwrap();
            let want = &want[&name.replace('.', "_")];
            assert_eq!(got.dtype(), want.dtype(), "{name} on {dev}");
            assert_eq!(got.dims(), want.dims(), "{name} on {dev}");
            assert_eq!(values(&got), values(want), "{name} on {dev}");
        }
        assert_eq!(
            f.tensor("i64", &dev).unwrap().to_vec::<i64>().unwrap(),
            want["i64"].to_vec::<i64>().unwrap()
        );
        // Integer widths webtensor lacks load as i32.
        for name in ["i8", "i16"] {
            let got = f.tensor(name, &dev).unwrap();
            assert_eq!(got.dtype(), DType::I32);
            assert_eq!(
                got.to_vec::<i32>().unwrap(),
                want[name]
                    .to_dtype(DType::I32)
                    .unwrap()
                    .to_vec::<i32>()
                    .unwrap()
            );
        }
        let b = f.tensor("bf16", &dev).unwrap();
        let bits: Vec<u16> = b
            .to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want_bits: Vec<u16> = want["bf16"]
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .map(|&v| v as u16)
            .collect();
        assert_eq!(bits, want_bits, "bf16 on {dev}");
        match f.tensor("f64", &dev) {
            Ok(t) => assert_eq!(
                t.to_vec::<f64>().unwrap(),
                want["f64"].to_vec::<f64>().unwrap()
            ),
            // A dtype the device cannot hold, naming the tensor.
            Err(e) => assert!(
                dev.is_gpu()
                    && matches!(e, Error::DType { .. })
                    && e.to_string().contains("\"f64\""),
                "{e}"
            ),
        }
        // An f64 tensor dequantizes to f32 on every device (a GPU's was
        // an error: it loaded the f64 there first); to f64 a GPU still
        // refuses, naming the tensor once.
        let got = f.dequantize("f64", DType::F32, &dev).unwrap();
        let want_f32 = want["f64"].to_dtype(DType::F32).unwrap();
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            want_f32.to_vec::<f32>().unwrap()
        );
        if dev.is_gpu() {
            let text = f
                .dequantize("f64", DType::F64, &dev)
                .unwrap_err()
                .to_string();
            assert_eq!(text.matches("\"f64\"").count(), 1, "{text}");
        }
        // A GPU holds no f64: an error naming the op and tensor.
        if dev.is_gpu() {
            let e = f.dequantize("q8_0", DType::F64, &dev).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, Error::DType { .. })
                    && text.starts_with("Gguf::dequantize:")
                    && text.contains("\"q8_0\""),
                "{text}"
            );
        }
        assert!(matches!(f.tensor("q8_0", &dev), Err(Error::Format { .. })));
        assert!(matches!(
            f.tensor("nope", &dev),
            Err(Error::Argument { .. })
        ));
    }
    for name in ["q8_0", "q4_0", "q4_k"] {
        let bytes = f.tensor_bytes(name).unwrap();
        assert_eq!(bytes, want[name].to_vec::<u8>().unwrap(), "{name}");
    }
}

#[test]
fn a_custom_alignment_places_every_tensor_on_it() {
    let f = Gguf::from_bytes(data("gguf_aligned.gguf")).unwrap();
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.get("general.alignment"), Some(&GgufValue::U32(64)));
    let offsets: Vec<u64> = f.tensors().iter().map(|t| t.offset).collect();
    assert_eq!(offsets, [0, 64, 128]);
    let dev = Device::cpu();
    assert_eq!(
        f.tensor("odd", &dev).unwrap().to_vec::<f32>().unwrap(),
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(
        f.tensor("three", &dev).unwrap().to_vec::<i32>().unwrap(),
        [0, 1, 2]
    );
    assert_eq!(f.tensor("last", &dev).unwrap().dims(), &[5]);
}

/// The writer given what a file holds, tensors of `plain` types added as
/// tensors loaded on `dev`, the rest as raw bytes.
fn rewrite(f: &Gguf, dev: &Device, plain: &[GgmlType]) -> Vec<u8> {
    let mut w = GgufWriter::new();
    for (k, v) in f.metadata() {
        w.add_metadata(k, v.clone()).unwrap();
    }
    for t in f.tensors() {
        if plain.contains(&t.ggml_type) {
            w.add_tensor(&t.name, &f.tensor(&t.name, dev).unwrap())
                .unwrap();
        } else {
            let bytes = f.tensor_bytes(&t.name).unwrap().to_vec();
            w.add_raw_tensor(&t.name, t.ggml_type, &t.shape, bytes)
                .unwrap();
        }
    }
    w.to_bytes().unwrap()
}

#[test]
fn written_back_the_files_are_gguf_pys_bytes() {
    use GgmlType::*;
    for file in ["gguf_small.gguf", "gguf_aligned.gguf"] {
        let original = data(file);
        let f = Gguf::from_bytes(original.clone()).unwrap();
        assert!(
            rewrite(&f, &Device::cpu(), &[]) == original,
            "{file} from raw bytes"
        );
        for dev in common::devices() {
            let plain: &[GgmlType] = if dev.is_gpu() {
                &[F32, F16, BF16, I32, I64]
            } else {
                &[F32, F16, BF16, F64, I32, I64]
            };
            assert!(
                rewrite(&f, &dev, plain) == original,
                "{file} from tensors on {dev}"
            );
        }
    }
}

#[test]
fn views_are_written_row_major_and_read_back() {
    for dev in common::devices() {
        let a = Tensor::arange(0.0f32, 24.0, 1.0, &dev)
            .unwrap()
            .reshape([2, 3, 4])
            .unwrap();
        let view = a.permute(&[2, 0, 1]).unwrap().flip(&[0]).unwrap();
        let h = view.to_dtype(DType::F16).unwrap();
        let mut w = GgufWriter::new();
        w.add_tensor("view", &view)
            .unwrap()
            .add_tensor("h", &h)
            .unwrap();
        w.add_metadata("general.alignment", GgufValue::U32(128))
            .unwrap();
        let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
        assert_eq!(f.alignment(), 128);
        let back = f.tensor("view", &dev).unwrap();
        assert_eq!(back.dims(), &[4, 2, 3]);
        assert_eq!(
            back.to_vec::<f32>().unwrap(),
            view.to_vec::<f32>().unwrap(),
            "{dev}"
        );
        assert_eq!(f.tensors()[1].offset, 128);
        assert_eq!(f.tensor("h", &dev).unwrap().to_string(), h.to_string());
    }
}

#[test]
fn the_writer_refuses_what_gguf_cannot_hold() {
    let dev = Device::cpu();
    let t = Tensor::zeros([2, 32], DType::F32, &dev).unwrap();
    let fails = |r: webtensor::Result<&mut GgufWriter>, what: &str| match r {
        Err(Error::Format { msg, .. }) => assert!(msg.contains(what), "{msg}"),
        Err(e) => panic!("{what}: {e:?}"),
        Ok(_) => panic!("{what}: accepted"),
    };
    let mut w = GgufWriter::new();
    w.add_metadata("k", GgufValue::U8(1)).unwrap();
    fails(w.add_metadata("k", GgufValue::U8(2)), "twice");
    fails(
        w.add_metadata("general.alignment", GgufValue::U32(48)),
        "power of two",
    );
    fails(
        w.add_metadata("general.alignment", GgufValue::U64(64)),
        "power of two",
    );
    fails(
        w.add_metadata(
            "mixed",
            GgufValue::Array {
                item: GgufValueType::I32,
                items: vec![GgufValue::I32(1), GgufValue::U8(2)],
            },
        ),
        "holds a U8",
    );
    let mut deep = int_array(&[1]);
    for _ in 0..8 {
        deep = GgufValue::Array {
            item: GgufValueType::Array,
            items: vec![deep],
        };
    }
    fails(w.add_metadata("deep", deep), "deeper than 8");
    w.add_tensor("t", &t).unwrap();
    fails(w.add_tensor("t", &t), "twice");
    fails(w.add_tensor(&"n".repeat(64), &t), "at most 63");
    let five = t.reshape([1, 1, 1, 2, 32]).unwrap();
    fails(w.add_tensor("five", &five), "at most 4");
    for dtype in [DType::U8, DType::U32, DType::Bool, DType::C64] {
        let x = Tensor::zeros([2], dtype, &dev).unwrap();
        fails(w.add_tensor("x", &x), "no such type");
    }
    fails(
        w.add_raw_tensor("q", GgmlType::Q8_0, &[2, 16], vec![0; 34]),
        "whole blocks",
    );
    fails(
        w.add_raw_tensor("q", GgmlType::Q8_0, &[2, 32], vec![0; 34]),
        "34 bytes",
    );
    w.add_raw_tensor("q", GgmlType::Q8_0, &[2, 32], vec![0; 68])
        .unwrap();
    // ggml's Q8_1 blocks are 36 bytes (gguf-py's table says 40).
    fails(
        w.add_raw_tensor("q8_1", GgmlType::Q8_1, &[32], vec![0; 40]),
        "which takes 36",
    );
    w.add_raw_tensor("q8_1", GgmlType::Q8_1, &[2, 32], vec![0; 72])
        .unwrap();
    // Zero bytes, as a zero extent makes them, but an extent the reader
    // (and gguf.cpp, whose extents are i64) refuses.
    fails(
        w.add_raw_tensor("wide", GgmlType::F32, &[0, usize::MAX], vec![]),
        "more than",
    );
    let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.tensors().len(), 3);
    assert_eq!(f.tensor_bytes("q8_1").unwrap().len(), 72);
}

/// An alignment of 2^31 pads each tensor's data to 2 GiB: a file of 2^17
/// tensors (256 TiB, past any machine's address space, whatever its
/// overcommit setting) is refused as a whole, before its padding is
/// written (each pad was an infallible resize: an abort when memory ran
/// out, and a capacity overflow past 2 GiB on a 32-bit target).
#[test]
fn the_writer_refuses_a_file_past_memory_before_padding_it() {
    let t = Tensor::zeros([2], DType::F32, &Device::cpu()).unwrap();
    let mut w = GgufWriter::new();
    w.add_metadata("general.alignment", GgufValue::U32(1 << 31))
        .unwrap();
    for k in 0..1 << 17 {
        w.add_tensor(&format!("t{k}"), &t).unwrap();
    }
    match w.to_bytes() {
        Err(Error::OutOfMemory { op, requested, .. }) => {
            assert_eq!(op, "GgufWriter::to_bytes");
            assert!(requested > 1 << 48, "{requested}");
        }
        other => panic!("{:?}", other.map(|b| b.len())),
    }
}

/// gguf-py's quantization cases (`tests/data/make_gguf_files.py`).
fn quant_cases() -> HashMap<String, Tensor> {
    io::from_npz_bytes(&data("gguf_quant_cases.npz"), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

const DECODED: [GgmlType; 11] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
];

#[test]
fn blocks_decode_as_gguf_py_decodes_them_bit_for_bit() {
    let cases = quant_cases();
    let mut w = GgufWriter::new();
    for t in DECODED {
        let blocks = cases[&format!("{t}_blocks")].to_vec::<u8>().unwrap();
        let shape = [5, t.block_size() as usize];
        w.add_raw_tensor(t.name(), t, &shape, blocks).unwrap();
    }
    let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    for dev in common::devices() {
        for t in DECODED {
            let want = &cases[&format!("{t}_values")];
            let got = f.dequantize(t.name(), DType::F32, &dev).unwrap();
            assert_eq!(got.dims(), want.dims(), "{t}");
            let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(got.to_vec::<f32>().unwrap()),
                bits(want.to_vec::<f32>().unwrap()),
                "{t} on {dev}"
            );
            // f16 and bf16: the f32 values rounded once.
            for dtype in [DType::F16, DType::BF16] {
                let got = f.dequantize(t.name(), dtype, &dev).unwrap();
                let want = want.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
                assert_eq!(got.to_string(), want.to_string(), "{t} as {dtype} on {dev}");
            }
        }
        // Plain tensors dequantize as themselves, cast.
        let small = small();
        assert_eq!(
            small
                .dequantize("f16", DType::F32, &dev)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            small
                .tensor("f16", &dev)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        );
        assert!(matches!(
            small.dequantize("q8_0", DType::I32, &dev),
            Err(Error::DType { .. })
        ));
    }
    let mut iq = GgufWriter::new();
    iq.add_raw_tensor("iq", GgmlType::IQ2_XXS, &[256], vec![0; 66])
        .unwrap();
    let iq = Gguf::from_bytes(iq.to_bytes().unwrap()).unwrap();
    match iq.dequantize("iq", DType::F32, &Device::cpu()) {
        Err(Error::Format { msg, .. }) => assert!(msg.contains("IQ2_XXS"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn legacy_types_quantize_as_gguf_py_does_from_any_view() {
    let cases = quant_cases();
    let source = &cases["source"];
    // Blocks whose scale's reciprocal is inf: quants of 0, as NumPy casts.
    for (values, suffix) in [
        (source, "quantized"),
        (&cases["tiny_source"], "tiny_quantized"),
    ] {
        quantizes_as_gguf_py(values, |t| {
            cases[&format!("{t}_{suffix}")].to_vec().unwrap()
        });
    }
    let x = Tensor::zeros([2, 48], DType::F32, &Device::cpu()).unwrap();
    let mut w = GgufWriter::new();
    for (t, x, what) in [
        (GgmlType::Q8_0, &x, "whole Q8_0 blocks"),
        (GgmlType::Q4_K, source, "not quantized here"),
    ] {
        match w.add_quantized("x", t, x) {
            Err(Error::Format { msg, .. }) => assert!(msg.contains(what), "{msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    let i = Tensor::zeros([32], DType::I32, &Device::cpu()).unwrap();
    let e = w.add_quantized("i", GgmlType::Q8_0, &i).unwrap_err();
    assert!(e.to_string().contains("add_quantized"), "{e}");
    assert!(e.to_string().contains("not a float"), "{e}");
}

/// `source` quantized to each legacy type, on each device, from a
/// contiguous and a strided view, gives `want(type)`'s blocks.
fn quantizes_as_gguf_py(source: &Tensor, want: impl Fn(GgmlType) -> Vec<u8>) {
    for dev in common::devices() {
        let on = source.to_device(&dev).unwrap();
        // The same values through a transposed copy read back transposed.
        let strided = on.t().contiguous().unwrap().t();
        for t in [
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q5_0,
            GgmlType::Q5_1,
            GgmlType::Q8_0,
        ] {
            let want = want(t);
            for (what, x) in [("contiguous", &on), ("strided", &strided)] {
                let mut w = GgufWriter::new();
                w.add_quantized("q", t, x).unwrap();
                let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
                assert_eq!(f.tensors()[0].shape, source.dims());
                assert!(
                    f.tensor_bytes("q").unwrap() == want,
                    "{t} from a {what} view on {dev}"
                );
            }
        }
    }
}

/// A file of one tensor and one metadata entry, then `edit` applied to
/// its bytes (the header's fields at known places).
fn crafted(edit: impl FnOnce(&mut Vec<u8>)) -> webtensor::Result<Gguf> {
    let mut w = GgufWriter::new();
    w.add_metadata("a.key", GgufValue::U32(7)).unwrap();
    let t = Tensor::from_slice(&[1.0f32, 2.0], [2], &Device::cpu()).unwrap();
    w.add_tensor("t", &t).unwrap();
    let mut bytes = w.to_bytes().unwrap();
    edit(&mut bytes);
    Gguf::from_bytes(bytes)
}

/// Byte positions in the file [`crafted`] writes.
const KV_COUNT: usize = 16;
const KEY_LEN: usize = 24;
const VALUE_TYPE: usize = 37;
const TENSOR_NAME_LEN: usize = 45;
const N_DIMS: usize = 54;
const DIM0: usize = 58;
const GGML_TYPE: usize = 66;
const OFFSET: usize = 70;

/// A change to the bytes of a crafted file.
type Edit = Box<dyn FnOnce(&mut Vec<u8>)>;

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

#[test]
fn malformed_headers_fail_naming_the_field() {
    assert!(crafted(|_| {}).is_ok());
    let cases: Vec<(&str, Edit)> = vec![
        ("not a GGUF file", Box::new(|b| b[0] = b'X')),
        ("version 1", Box::new(|b| put(b, 4, &1u32.to_le_bytes()))),
        ("big-endian", Box::new(|b| put(b, 4, &3u32.to_be_bytes()))),
        ("version 9", Box::new(|b| put(b, 4, &9u32.to_le_bytes()))),
        ("version 0", Box::new(|b| put(b, 4, &0u32.to_le_bytes()))),
        (
            "metadata count",
            Box::new(|b| put(b, KV_COUNT, &(1u64 << 60).to_le_bytes())),
        ),
        (
            "tensor count",
            Box::new(|b| put(b, 8, &(1u64 << 60).to_le_bytes())),
        ),
        (
            "metadata key 0",
            Box::new(|b| put(b, KEY_LEN, &u64::MAX.to_le_bytes())),
        ),
        (
            "unknown value type 13",
            Box::new(|b| put(b, VALUE_TYPE, &13u32.to_le_bytes())),
        ),
        (
            "a bool is 0 or 1",
            Box::new(|b| {
                put(b, VALUE_TYPE, &7u32.to_le_bytes());
                b[VALUE_TYPE + 4] = 2;
            }),
        ),
        ("not UTF-8", Box::new(|b| b[KEY_LEN + 8] = 0xff)),
        (
            "tensor 0's name",
            Box::new(|b| put(b, TENSOR_NAME_LEN, &(1u64 << 40).to_le_bytes())),
        ),
        ("5 axes", Box::new(|b| put(b, N_DIMS, &5u32.to_le_bytes()))),
        (
            "unknown ggml type 4",
            Box::new(|b| put(b, GGML_TYPE, &4u32.to_le_bytes())),
        ),
        (
            "not whole blocks",
            Box::new(|b| put(b, GGML_TYPE, &8u32.to_le_bytes())),
        ),
        (
            "too large",
            Box::new(|b| put(b, DIM0, &u64::MAX.to_le_bytes())),
        ),
        (
            "overflow",
            Box::new(|b| put(b, DIM0, &(1u64 << 62).to_le_bytes())),
        ),
        (
            "run past",
            Box::new(|b| put(b, DIM0, &1000u64.to_le_bytes())),
        ),
        (
            "multiple of the alignment",
            Box::new(|b| put(b, OFFSET, &4u64.to_le_bytes())),
        ),
        (
            "run past",
            Box::new(|b| put(b, OFFSET, &(1u64 << 62).to_le_bytes())),
        ),
        ("needs", Box::new(|b| b.truncate(50))),
    ];
    for (what, edit) in cases {
        match crafted(edit) {
            Err(Error::Format { op, msg }) => {
                assert_eq!(op, "Gguf::from_bytes");
                assert!(msg.contains(what), "{what}: {msg}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn hostile_metadata_fails_before_allocating() {
    // A key repeated; an array claiming 2^60 items; arrays nested 9 deep;
    // an alignment that is not a power of two.
    let header = |kvs: &[Vec<u8>]| {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
        for kv in kvs {
            b.extend_from_slice(kv);
        }
        b
    };
    let key = |k: &str, t: u32| {
        let mut b = (k.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(&t.to_le_bytes());
        b
    };
    let u8_kv = |k: &str| {
        let mut b = key(k, 0);
        b.push(1);
        b
    };
    let mut huge = key("huge", 9);
    huge.extend_from_slice(&0u32.to_le_bytes());
    huge.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let mut nested = key("nested", 9);
    for _ in 0..9 {
        nested.extend_from_slice(&9u32.to_le_bytes());
        nested.extend_from_slice(&1u64.to_le_bytes());
    }
    nested.extend_from_slice(&[0; 64]);
    let mut align = key("general.alignment", 4);
    align.extend_from_slice(&24u32.to_le_bytes());
    for (kvs, what) in [
        (vec![u8_kv("k"), u8_kv("k")], "given twice"),
        (vec![huge], "an array of 1152921504606846976 U8 values"),
        (vec![nested], "deeper than 8"),
        (vec![align], "power of two"),
    ] {
        match Gguf::from_bytes(header(&kvs)) {
            Err(Error::Format { msg, .. }) => assert!(msg.contains(what), "{what}: {msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // Zero tensors and no data section at all is a file.
    let f = Gguf::from_bytes(header(&[u8_kv("k")])).unwrap();
    assert_eq!(f.tensors().len(), 0);
    // Arrays of 2^24 + 1 u8 values in all that the file holds: refused,
    // where their values would take 32 times the file's bytes (540 MB),
    // whether in one array or two; 2^24 load.
    let long = |k: &str, count: u64| {
        let mut b = key(k, 9);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        b.resize(b.len() + count as usize, 0);
        b
    };
    let half = 1u64 << 23;
    for (kvs, ok) in [
        (vec![long("long", 2 * half + 1)], false),
        (vec![long("a", half), long("b", half + 1)], false),
        (vec![long("long", 2 * half)], true),
    ] {
        match Gguf::from_bytes(header(&kvs)) {
            Ok(_) if ok => {}
            Err(Error::Format { msg, .. }) if !ok => {
                assert!(msg.contains("at most 16777216"), "{msg}")
            }
            other => panic!("{ok}: {:?}", other.map(|_| ())),
        }
    }
}

/// The writer refuses the metadata its reader would refuse: arrays of more
/// than 2^24 values in all (nested ones counted).
#[test]
fn the_writer_refuses_more_array_values_than_are_read() {
    let u8s = |n: usize| GgufValue::Array {
        item: GgufValueType::U8,
        items: vec![GgufValue::U8(0); n],
    };
    let mut w = GgufWriter::new();
    w.add_metadata("a", u8s(1 << 23)).unwrap();
    let nested = GgufValue::Array {
        item: GgufValueType::Array,
        items: vec![u8s(1 << 11); 1 << 12],
    };
    match w.add_metadata("b", nested) {
        Err(Error::Format { op, msg }) => {
            assert_eq!(op, "GgufWriter::add_metadata");
            assert!(msg.contains("8392704 array values after 8388608"), "{msg}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    w.add_metadata("c", u8s(1 << 23)).unwrap();
    let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.metadata().len(), 2);
}

/// Two tensors whose data overlap are refused, as gguf.cpp refuses them:
/// one region named by many tensors would be copied out once for each.
#[test]
fn overlapping_tensor_data_is_refused() {
    let mut w = GgufWriter::new();
    let t = Tensor::from_slice(&[1.0f32, 2.0], [2], &Device::cpu()).unwrap();
    w.add_tensor("t", &t).unwrap();
    w.add_tensor("u", &t).unwrap();
    let mut bytes = w.to_bytes().unwrap();
    assert!(Gguf::from_bytes(bytes.clone()).is_ok());
    // The header's 24 bytes, the first tensor's info (33 bytes: a 1-byte
    // name, one axis), then the second's, whose offset (32) is set to 0.
    let second = 24 + 33 + 25;
    assert_eq!(&bytes[second..second + 8], &32u64.to_le_bytes());
    put(&mut bytes, second, &0u64.to_le_bytes());
    match Gguf::from_bytes(bytes) {
        Err(Error::Format { msg, .. }) => assert!(msg.contains("overlap"), "{msg}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn mutated_files_load_or_fail_cleanly() {
    let dev = Device::cpu();
    let sources = [data("gguf_small.gguf"), data("gguf_aligned.gguf")];
    let cases = if common::long_tests() { 50_000 } else { 2_000 };
    let mut rng = common::Rng(0x2026_1129);
    let mut loaded = 0;
    for k in 0..cases {
        let f = common::mutate(&sources[k % 2], &mut rng);
        if let Ok(file) = Gguf::from_bytes(f) {
            // What loads is readable.
            for t in file.tensors() {
                let _ = file.tensor_bytes(&t.name).unwrap();
                if let Ok(x) = file.tensor(&t.name, &dev) {
                    let _ = x.to_string();
                }
            }
            loaded += 1;
        }
    }
    assert!(loaded > cases / 20, "only {loaded} of {cases} loaded");
}

/// A block whose f16 scale or minimum would pass f16's range decodes to
/// infinities or NaN (gguf-py writes it so: `np.float16(-70000.0)` is
/// `-inf`); non-finite values have no block. Both are errors naming the
/// block or value, from the writer (and the tensor, among others) and
/// from `QTensor::quantize`.
#[test]
fn quantizing_past_f16_scales_or_non_finite_values_is_refused() {
    let dev = Device::cpu();
    let block = |at: usize, v: f32| {
        let mut x = vec![0.5f32; 64];
        x[at] = v;
        Tensor::from_vec(x, [2, 32], &dev).unwrap()
    };
    let cases = [
        (GgmlType::Q4_1, block(40, -70_000.0), "block 1"),
        (GgmlType::Q5_1, block(3, -70_000.0), "minimum"),
        (GgmlType::Q8_0, block(5, 1e7), "scale"),
        (GgmlType::Q4_0, block(33, 6e5), "block 1"),
        (GgmlType::Q5_0, block(0, 1.1e6), "block 0"),
        (GgmlType::Q8_0, block(7, f32::NAN), "value 7 is NaN"),
        (GgmlType::Q4_0, block(9, f32::INFINITY), "value 9 is inf"),
    ];
    for (t, x, what) in cases {
        let mut w = GgufWriter::new();
        w.add_quantized("fine", t, &block(0, 0.25)).unwrap();
        w.add_quantized("w", t, &x).unwrap();
        match w.to_bytes() {
            Err(Error::Format { msg, .. }) => {
                assert!(
                    msg.contains(what) && msg.contains("tensor \"w\""),
                    "{t}: {msg}"
                );
            }
            other => panic!("{t} {what}: {:?}", other.map(|b| b.len())),
        }
        match QTensor::quantize(&x, t) {
            Err(Error::Format { msg, .. }) => assert!(msg.contains(what), "{t}: {msg}"),
            other => panic!("{t} {what}: {:?}", other.map(|q| q.dims().to_vec())),
        }
    }
    // Just inside f16's range: written, and read back finite.
    let mut w = GgufWriter::new();
    w.add_quantized("w", GgmlType::Q8_0, &block(5, 8e6))
        .unwrap();
    let f = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    let back = f
        .dequantize("w", DType::F32, &dev)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(back.iter().all(|v| v.is_finite()), "{back:?}");
}
