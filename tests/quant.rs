//! Quantized tensors (`QTensor`) and their products on every device: the
//! blocks gguf-py wrote (tests/data/make_gguf_files.py) dequantize to
//! gguf-py's values bit for bit, on a GPU too; products with weights of
//! every type match float64 products of those values over views, f16 and
//! bf16 activations, and row counts on both sides of each kernel's
//! boundaries; bad input is an `Err` naming the op.

mod common;

use common::{Rng, devices};
use std::collections::HashMap;
use webtensor::{DType, Device, Error, GgmlType, GpuOptions, QTensor, Tensor, io, s};

const TYPES: [GgmlType; 11] = [
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

/// gguf-py's blocks and values (`{type}_blocks`, `{type}_values`: five
/// blocks).
fn gguf_py_cases() -> HashMap<String, Tensor> {
    let path = format!(
        "{}/tests/data/gguf_quant_cases.npz",
        env!("CARGO_MANIFEST_DIR")
    );
    io::load_npz(path, &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn bits(t: &Tensor) -> Vec<u32> {
    let v = t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn gguf_py_blocks_dequantize_bit_for_bit_on_every_device() {
    let cases = gguf_py_cases();
    for dev in devices() {
        for t in TYPES {
            let blocks = cases[&format!("{t}_blocks")].to_vec::<u8>().unwrap();
            let want = &cases[&format!("{t}_values")];
            let shape = [5, t.block_size() as usize];
            let q = QTensor::from_blocks(t, shape, &blocks, &dev).unwrap();
            let got = q.dequantize(DType::F32).unwrap();
            assert_eq!(got.dims(), want.dims(), "{t}");
            assert_eq!(bits(&got), bits(want), "{t} on {dev}");
            // Rows 1..4 alone: blocks at another byte offset.
            let rows = q.rows(1..4).unwrap().dequantize(DType::F32).unwrap();
            assert_eq!(
                bits(&rows),
                bits(&want.slice(s![1..4]).unwrap()),
                "{t} rows on {dev}"
            );
            assert_eq!(q.to_bytes().unwrap(), blocks, "{t} on {dev}");
        }
    }
}

/// The f16 bits of a scale in `[2^-9, 2^-5)`, or one time in four a
/// subnormal one (as k-quants' often are: Q6_K's is a block's largest
/// weight / 4096, subnormal below 0.25): every value of a block finite
/// and of moderate size or less.
fn scale(rng: &mut Rng) -> [u8; 2] {
    if rng.below(4) == 0 {
        return half::f16::from_bits(1 + rng.below(1023) as u16).to_le_bytes();
    }
    half::f16::from_f32((1.0 + rng.below(1024) as f32 / 1024.0) / (1 << (5 + rng.below(4))) as f32)
        .to_le_bytes()
}

/// Where each type's f16 scales lie in its block.
fn scale_bytes(t: GgmlType) -> &'static [usize] {
    match t {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        _ => &[208],
    }
}

/// Random blocks of `t` for `rows` rows of `k`: random quants, scales
/// as [`scale`] draws them.
fn random_blocks(t: GgmlType, rows: usize, k: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let width = t.block_bytes() as usize;
    let count = rows * k / t.block_size() as usize;
    let mut bytes: Vec<u8> = (0..count * width).map(|_| rng.next() as u8).collect();
    for block in bytes.chunks_exact_mut(width) {
        for &at in scale_bytes(t) {
            block[at..at + 2].copy_from_slice(&scale(&mut rng));
        }
    }
    bytes
}

/// A weight's values in f64, decoded on the CPU (gguf-py's values, as
/// the test above shows).
fn weight_values(w: &QTensor) -> Vec<f64> {
    let cpu = Device::cpu();
    let wv = w.to_device(&cpu).unwrap().dequantize(DType::F64).unwrap();
    wv.to_vec::<f64>().unwrap()
}

/// `got`, `x @ w.T`, against the product in f64 of `x` and the weight's
/// values `wv`: within f32 sums' error of each output's sum of
/// magnitudes (and a rounding into a 16-bit result).
fn assert_product(got: &Tensor, x: &Tensor, (w, wv): (&QTensor, &[f64]), what: &str) {
    let rel = if x.dtype() == DType::F32 { 1e-5 } else { 1e-2 };
    assert_product_within(got, x, (w, wv), rel, what);
}

/// As [`assert_product`], within `rel` of each output's sum of
/// magnitudes.
fn assert_product_within(
    got: &Tensor,
    x: &Tensor,
    (w, wv): (&QTensor, &[f64]),
    rel: f64,
    what: &str,
) {
    Product::of(x, (w, wv)).check(got, rel, what);
}

/// `x @ w.T` in f64 and each output's sum of magnitudes, computed once
/// for the results of several devices.
struct Product {
    dims: Vec<usize>,
    dtype: DType,
    want: Vec<f64>,
    size: Vec<f64>,
}

impl Product {
    fn of(x: &Tensor, (w, wv): (&QTensor, &[f64])) -> Self {
        let (n, k) = (w.dims()[0], w.dims()[1]);
        let mut dims = x.dims().to_vec();
        *dims.last_mut().unwrap() = n;
        let xv = x
            .to_device(&Device::cpu())
            .and_then(|c| c.to_dtype(DType::F64))
            .and_then(|c| c.to_vec::<f64>())
            .unwrap();
        let (mut want, mut size) = (Vec::new(), Vec::new());
        for row in xv.chunks(k) {
            for col in wv.chunks(k) {
                let (mut sum, mut magnitude) = (0.0, 0.0);
                for (a, b) in row.iter().zip(col) {
                    sum += a * b;
                    magnitude += (a * b).abs();
                }
                want.push(sum);
                size.push(magnitude);
            }
        }
        let dtype = x.dtype();
        Product {
            dims,
            dtype,
            want,
            size,
        }
    }

    /// `got` within `rel` of each output's sum of magnitudes.
    fn check(&self, got: &Tensor, rel: f64, what: &str) {
        assert_eq!(
            (got.dims(), got.dtype()),
            (&self.dims[..], self.dtype),
            "{what}"
        );
        let got = got
            .to_device(&Device::cpu())
            .and_then(|c| c.to_dtype(DType::F64))
            .and_then(|c| c.to_vec::<f64>())
            .unwrap();
        for (j, g) in got.iter().enumerate() {
            let (want, size) = (self.want[j], self.size[j]);
            assert!(
                (g - want).abs() <= rel * size + 1e-30,
                "{what}: output {j}: {g} vs {want} (scale {size})"
            );
        }
    }
}

#[test]
fn products_of_every_type_match_float64_on_every_device() {
    for dev in devices() {
        for t in TYPES {
            let block = t.block_size() as usize;
            // Rows past a workgroup's 64 threads' chunks (k / 32 > 64).
            // 2304 = 72 chunks of 32 (9 blocks of 256): past a workgroup's
            // 64 threads.
            for (n, k, rows) in [
                (1, block, &[1, 3, 8][..]),
                (7, 3 * block, &[1, 9, 33][..]),
                (65, 2304, &[1, 9, 33][..]),
            ] {
                let blocks = random_blocks(t, n, k, (n * k) as u64 + t as u64);
                let w = QTensor::from_blocks(t, [n, k], &blocks, &dev).unwrap();
                let wv = weight_values(&w);
                for &m in rows {
                    let x = Tensor::rand([m, k], DType::F32, m as u64, &dev).unwrap();
                    let x = x.sub_scalar(0.5).unwrap();
                    let y = x.qmatmul(&w).unwrap();
                    let what = format!("{t} {n}x{k} times {m} rows on {dev}");
                    assert_product(&y, &x, (&w, &wv), &what);
                    if m > 1 && m <= 9 {
                        // A row's result does not depend on the rows
                        // beside it (on the CPU, pairs of rows share a
                        // decoded block).
                        let last = x.narrow(0, m - 1, 1).unwrap().qmatmul(&w).unwrap();
                        assert_eq!(
                            y.narrow(0, m - 1, 1).unwrap().to_vec::<f32>().unwrap(),
                            last.to_vec::<f32>().unwrap(),
                            "{what}: its last row alone"
                        );
                        let first = x.narrow(0, 0, 1).unwrap().qmatmul(&w).unwrap();
                        assert_eq!(
                            y.narrow(0, 0, 1).unwrap().to_vec::<f32>().unwrap(),
                            first.to_vec::<f32>().unwrap(),
                            "{what}: its first row alone"
                        );
                    }
                }
            }
        }
        // Every type's kernels passed their probes (a wrong verdict would
        // hide behind the host's decoding).
        let dropped = dev.info().dropped_kernels;
        assert!(
            dropped.iter().all(|k| !k.starts_with("qmatmul")),
            "{dev}: {dropped:?}"
        );
    }
}

#[test]
fn activations_of_any_view_dtype_and_rank() {
    for dev in devices() {
        for t in [GgmlType::Q4_0, GgmlType::Q6_K] {
            let (n, k) = (19, 256);
            let blocks = random_blocks(t, n, k, 5);
            let w = QTensor::from_blocks(t, [n, k], &blocks, &dev).unwrap();
            let wv = weight_values(&w);
            let base = Tensor::rand([k, 6], DType::F32, 9, &dev).unwrap();
            let views = [
                ("transposed", base.t()),
                ("reversed", base.flip(&[0, 1]).unwrap().t()),
                (
                    "stepped",
                    Tensor::rand([4, 2 * k], DType::F32, 3, &dev)
                        .unwrap()
                        .slice(s![.., ..;2])
                        .unwrap(),
                ),
                (
                    "broadcast",
                    Tensor::rand([1, k], DType::F32, 4, &dev)
                        .unwrap()
                        .broadcast_to([3, k])
                        .unwrap(),
                ),
                (
                    "rank 3",
                    Tensor::rand([2, 5, k], DType::F32, 6, &dev).unwrap(),
                ),
            ];
            for (name, x) in views {
                for dtype in [DType::F32, DType::F16, DType::BF16] {
                    let x = x.to_dtype(dtype).unwrap();
                    let y = x.qmatmul(&w).unwrap();
                    assert_product(&y, &x, (&w, &wv), &format!("{t} {name} {dtype} on {dev}"));
                }
            }
            // Rows of the weight: the same outputs as the whole's.
            let x = Tensor::rand([2, k], DType::F32, 8, &dev).unwrap();
            let part = x.qmatmul(&w.rows(4..11).unwrap()).unwrap();
            let whole = x.qmatmul(&w).unwrap().slice(s![.., 4..11]).unwrap();
            assert_eq!(
                part.to_vec::<f32>().unwrap(),
                whole.to_vec::<f32>().unwrap()
            );
        }
    }
}

#[test]
fn weights_past_one_storage_binding_go_in_parts() {
    // A Q8_0 weight of 300 rows of 256 (81,600 bytes) past the binding
    // goes in parts of weight rows (14 rows with 4 KiB bindings, 240 with
    // 64 KiB), at offsets no binding starts at, each part's outputs a
    // column slice of the result.
    // - 4 KiB: two rows (the decoding kernel), and forty (the decoding
    //   kernel three rows at a time: three rows' activations fill a
    //   binding).
    // - 64 KiB: forty rows (the tiled kernel, once per part), and a
    //   hundred (the tiled kernel in parts of 54 rows, their activations
    //   and outputs each within a binding).
    let (n, k) = (300, 256);
    let blocks = random_blocks(GgmlType::Q8_0, n, k, 11);
    for (limit, rows) in [(4096, [2, 40]), (65536, [40, 100])] {
        let Some(dev) = common::own_gpu(GpuOptions {
            max_binding_bytes: Some(limit),
            ..Default::default()
        }) else {
            return;
        };
        let w = QTensor::from_blocks(GgmlType::Q8_0, [n, k], &blocks, &dev).unwrap();
        let wv = weight_values(&w);
        for m in rows {
            let x = Tensor::rand([m, k], DType::F32, 12, &dev).unwrap();
            let what = format!("{limit}-byte bindings, {m} rows");
            assert_product(&x.qmatmul(&w).unwrap(), &x, (&w, &wv), &what);
        }
        let cpu = QTensor::from_blocks(GgmlType::Q8_0, [n, k], &blocks, &Device::cpu()).unwrap();
        assert_eq!(
            bits(&w.dequantize(DType::F32).unwrap()),
            bits(&cpu.dequantize(DType::F32).unwrap())
        );
    }
}

#[test]
fn bindings_too_small_for_the_probe_leave_the_products_unprobed_not_failing() {
    // With 8 KiB bindings a K type's probe (5 activation rows of 512)
    // does not fit, nor a 32-element type's with 1 KiB: the product runs
    // unprobed (it once failed every call, TooLarge, re-probing each time).
    for (limit, types) in [
        (8192, &[GgmlType::Q4_K, GgmlType::Q6_K][..]),
        (1024, &[GgmlType::Q4_0, GgmlType::Q8_0][..]),
    ] {
        let Some(dev) = common::own_gpu(GpuOptions {
            max_binding_bytes: Some(limit),
            ..Default::default()
        }) else {
            return;
        };
        for &t in types {
            let k = t.block_size() as usize;
            let blocks = random_blocks(t, 4, k, 17);
            let w = QTensor::from_blocks(t, [4, k], &blocks, &dev).unwrap();
            let wv = weight_values(&w);
            for m in [1, 3] {
                let x = Tensor::rand([m, k], DType::F32, 18, &dev).unwrap();
                let what = format!("{t}, {limit}-byte bindings, {m} rows");
                assert_product(&x.qmatmul(&w).unwrap(), &x, (&w, &wv), &what);
            }
        }
    }
}

#[test]
fn the_tiled_product_decodes_every_value_as_gguf_py() {
    // The identity's rows times the weight are the weight's values: each
    // output one product by 1 and adds of zeros, exact. So the tiled
    // kernel's decoding of single elements (`element` in the GPU's
    // decode.rs) equals the CPU's dequantization, which equals gguf-py's
    // (the first test): value for value, every type, every element of a
    // block, subnormal scales included (`random_blocks`).
    // 70 weight rows cross the medium tile's 64 columns.
    for dev in devices() {
        for t in TYPES {
            let (n, k) = (70, 2 * t.block_size() as usize);
            let blocks = random_blocks(t, n, k, 41 + t as u64);
            let w = QTensor::from_blocks(t, [n, k], &blocks, &dev).unwrap();
            let eye = Tensor::eye(k, DType::F32, &dev).unwrap();
            let got = eye.qmatmul(&w).unwrap().to_vec::<f32>().unwrap();
            // The CPU's dequantization (gguf-py's, the first test), not the
            // device's own, which shares the kernel's decoding.
            let host = QTensor::from_blocks(t, [n, k], &blocks, &Device::cpu()).unwrap();
            let want = host.dequantize(DType::F32).unwrap().t();
            let want = want.contiguous().unwrap().to_vec::<f32>().unwrap();
            assert!(got == want, "{t} on {dev}");
        }
        // Decoded by the kernels, not by the host after a failed probe.
        let dropped = dev.info().dropped_kernels;
        assert!(
            dropped.iter().all(|k| !k.starts_with("qmatmul")),
            "{dev}: {dropped:?}"
        );
    }
}

#[test]
fn tiled_products_cross_the_large_tile_and_slices_of_k() {
    // 1300 rows by 1500 make 11 x 12 blocks of the large tile (128 x
    // 128), enough to choose it; 8,448 elements per row take two
    // dispatches (slices of 8,192 along k, the second adding to the
    // first's outputs).
    // The f64 product is computed once a case, for every device.
    let cpu = Device::cpu();
    for (t, m, n, k) in [
        (GgmlType::Q4_K, 1300, 1500, 256),
        (GgmlType::Q5_0, 40, 5, 8448),
        (GgmlType::Q6_K, 65, 3, 8448),
    ] {
        let blocks = random_blocks(t, n, k, (m * n) as u64);
        let w = QTensor::from_blocks(t, [n, k], &blocks, &cpu).unwrap();
        let wv = weight_values(&w);
        let x = Tensor::rand([m, k], DType::F32, 7, &cpu).unwrap();
        let x = x.sub_scalar(0.5).unwrap();
        let product = Product::of(&x, (&w, &wv));
        for dev in devices() {
            let (x, w) = (x.to_device(&dev).unwrap(), w.to_device(&dev).unwrap());
            let what = format!("{t} {m} x {n} x {k} on {dev}");
            product.check(&x.qmatmul(&w).unwrap(), 1e-5, &what);
        }
    }
}

/// Under `MatmulPrecision::Fast`, products of many rows run on cooperative
/// matrices where the device has them (`scripts/cooperative-tests` runs
/// this on a lavapipe that does, with `WEBTENSOR_REQUIRE_COOPERATIVE=1`):
/// the activations and the decoded weight rounded to f16, products summed
/// in f32. Every type, past the kernel's blocks (64 and 128 outputs) and a
/// slice of k, within f16 rounding of each output's sum of magnitudes;
/// the kernel passed its probe (exact small integers).
#[test]
fn cooperative_products_of_every_type_match_float64_under_fast_precision() {
    let Some((dev, on)) = common::fast_gpu(None) else {
        return;
    };
    let rel = if on { 2e-3 } else { 1e-5 };
    for t in TYPES {
        let block = t.block_size() as usize;
        for (n, k, m) in [(130, 2 * block, 131), (7, 3 * block, 9), (65, 33 * 256, 20)] {
            if k > 256 * 9 && t != GgmlType::Q4_K {
                continue;
            }
            let blocks = random_blocks(t, n, k, (n * k) as u64 + t as u64);
            let w = QTensor::from_blocks(t, [n, k], &blocks, &dev).unwrap();
            let wv = weight_values(&w);
            let x = Tensor::rand([m, k], DType::F32, m as u64, &dev).unwrap();
            let x = x.sub_scalar(0.5).unwrap();
            let what = format!("{t} {n}x{k} times {m} rows, cooperative {on}");
            assert_product_within(&x.qmatmul(&w).unwrap(), &x, (&w, &wv), rel, &what);
            let dropped = dev.info().dropped_kernels;
            assert!(dropped.is_empty(), "{what}: {dropped:?}");
            // f16 activations take the cooperative kernel at the default
            // precision, as f16 products do (past 32 rows: fewer run the
            // decoding kernel).
            let gpu = common::gpu().unwrap();
            let w = w.to_device(&gpu).unwrap();
            let x16 = x.to_device(&gpu).unwrap().to_dtype(DType::F16).unwrap();
            let product = || x16.qmatmul(&w).unwrap();
            assert_product(&product(), &x16, (&w, &wv), &format!("f16 {what}"));
            let profile = gpu
                .profile(|| product().to_vec::<half::f16>().map(|_| ()))
                .unwrap();
            let ran = profile
                .kernels()
                .iter()
                .any(|k| k.name.contains("quant cooperative"));
            assert_eq!(ran, on && m > 32, "f16 {what}");
        }
    }
}

#[test]
fn quantized_tensors_round_trip_through_gguf_and_quantize() {
    let cpu = Device::cpu();
    let x = Tensor::rand([6, 64], DType::F32, 21, &cpu).unwrap();
    for dev in devices() {
        let q = QTensor::quantize(&x.to_device(&dev).unwrap(), GgmlType::Q5_1).unwrap();
        let mut writer = io::GgufWriter::new();
        writer
            .add_raw_tensor("w", GgmlType::Q5_1, &[6, 64], q.to_bytes().unwrap())
            .unwrap();
        let file = io::Gguf::from_bytes(writer.to_bytes().unwrap()).unwrap();
        let back = file.qtensor("w", &dev).unwrap();
        assert_eq!(back.to_bytes().unwrap(), q.to_bytes().unwrap(), "{dev}");
        let want = file.dequantize("w", DType::F32, &cpu).unwrap();
        assert_eq!(
            bits(&back.dequantize(DType::F32).unwrap()),
            bits(&want),
            "{dev}"
        );
    }
}

#[test]
fn bad_input_is_an_error_naming_the_op() {
    for dev in devices() {
        let blocks = random_blocks(GgmlType::Q4_0, 4, 64, 1);
        let w = QTensor::from_blocks(GgmlType::Q4_0, [4, 64], &blocks, &dev).unwrap();
        let x = Tensor::ones([2, 64], DType::F32, &dev).unwrap();
        let err = |r: webtensor::Result<Tensor>| r.unwrap_err();
        // Rows of another length, integer activations, a weight not a matrix.
        let e = err(Tensor::ones([2, 32], DType::F32, &dev).unwrap().qmatmul(&w));
        assert!(matches!(e, Error::Shape { op: "qmatmul", .. }), "{e}");
        assert!(
            e.to_string().contains("32") && e.to_string().contains("64"),
            "{e}"
        );
        let e = err(x.to_dtype(DType::I32).unwrap().qmatmul(&w));
        assert!(matches!(e, Error::DType { op: "qmatmul", .. }), "{e}");
        let flat = QTensor::from_blocks(GgmlType::Q4_0, [256], &blocks, &dev).unwrap();
        assert!(matches!(
            err(x.qmatmul(&flat)),
            Error::Shape { op: "qmatmul", .. }
        ));
        // Another device.
        let other = if dev.is_cpu() {
            common::gpu()
        } else {
            Some(Device::cpu())
        };
        if let Some(other) = other {
            let e = err(x.to_device(&other).unwrap().qmatmul(&w));
            assert!(
                matches!(e, Error::DeviceMismatch { op: "qmatmul", .. }),
                "{e}"
            );
        }
        // Blocks that do not fit the shape, rows that are not whole blocks,
        // types that are not quantized blocks taken here.
        let bad = |ty, shape: &[usize], bytes: &[u8]| {
            QTensor::from_blocks(ty, shape, bytes, &dev).unwrap_err()
        };
        let e = bad(GgmlType::Q4_0, &[4, 64], &blocks[1..]);
        assert!(
            matches!(
                e,
                Error::Shape {
                    op: "QTensor::from_blocks",
                    ..
                }
            ),
            "{e}"
        );
        let e = bad(GgmlType::Q4_0, &[8, 16], &blocks);
        assert!(e.to_string().contains("whole blocks of 32"), "{e}");
        for ty in [GgmlType::F32, GgmlType::IQ2_XXS] {
            let e = bad(ty, &[4, 256], &blocks);
            assert!(
                matches!(e, Error::Format { .. }) && e.to_string().contains(ty.name()),
                "{e}"
            );
        }
        let backwards = std::ops::Range { start: 2, end: 1 };
        assert!(w.rows(3..5).is_err() && w.rows(backwards).is_err() && flat.rows(0..1).is_err());
        assert!(matches!(w.dequantize(DType::I64), Err(Error::DType { .. })));
        // f64 on a GPU: refused naming the op, before any block is decoded
        // (it was the cast's `to_dtype` after all of them).
        if dev.is_gpu() {
            let e = w.dequantize(DType::F64).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::UnsupportedDType {
                        op: "QTensor::dequantize",
                        ..
                    }
                ),
                "{e:?}"
            );
        }
        let e = QTensor::quantize(&x, GgmlType::Q4_K).unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{e}");
        let e = QTensor::quantize(&x.to_dtype(DType::I32).unwrap(), GgmlType::Q8_0).unwrap_err();
        assert!(matches!(e, Error::DType { .. }), "{e}");
        // Empty operands are empty results.
        let none = Tensor::ones([0, 64], DType::F32, &dev)
            .unwrap()
            .qmatmul(&w)
            .unwrap();
        assert_eq!(none.dims(), &[0, 4]);
        let file = io::Gguf::from_bytes(io::GgufWriter::new().to_bytes().unwrap()).unwrap();
        let e = file.qtensor("absent", &dev).unwrap_err();
        assert!(
            e.to_string().contains("Gguf::qtensor") && e.to_string().contains("absent"),
            "{e}"
        );
    }
}

#[test]
fn products_past_65535_weight_rows_use_a_second_grid_row() {
    // A workgroup per weight row: 70,000 rows take a 2-d grid (x at most
    // 65,535), as an output layer over a large vocabulary does.
    let (n, k) = (70_000, 32);
    let blocks = random_blocks(GgmlType::Q8_0, n, k, 31);
    for dev in devices() {
        let w = QTensor::from_blocks(GgmlType::Q8_0, [n, k], &blocks, &dev).unwrap();
        let wv = weight_values(&w);
        let x = Tensor::rand([2, k], DType::F32, 32, &dev).unwrap();
        assert_product(
            &x.qmatmul(&w).unwrap(),
            &x,
            (&w, &wv),
            &format!("{n} rows on {dev}"),
        );
    }
}

#[test]
fn the_self_check_drops_a_wrong_kernel_and_results_stay_exact() {
    // A type's kernels made wrong on purpose (each value off by one) fail
    // their probes before the first use, are dropped and named, and the
    // type's products and dequantizations decode the blocks on the host:
    // every result still equals the CPU's. Another type keeps its kernels.
    let Some(gpu) = common::own_gpu(GpuOptions {
        sabotage_quant: Some(GgmlType::Q4_0),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    for (t, dropped) in [(GgmlType::Q4_0, true), (GgmlType::Q8_0, false)] {
        let (n, k) = (9, 64);
        let blocks = random_blocks(t, n, k, 3);
        let w = QTensor::from_blocks(t, [n, k], &blocks, &gpu).unwrap();
        let wv = weight_values(&w);
        for m in [2, 40] {
            let x = Tensor::rand([m, k], DType::F32, 4, &gpu).unwrap();
            assert_product(
                &x.qmatmul(&w).unwrap(),
                &x,
                (&w, &wv),
                &format!("{t} {m} rows"),
            );
        }
        let on_cpu = QTensor::from_blocks(t, [n, k], &blocks, &cpu).unwrap();
        let want = bits(&on_cpu.dequantize(DType::F32).unwrap());
        assert_eq!(bits(&w.dequantize(DType::F32).unwrap()), want, "{t}");
        let info = gpu.info();
        let named = info
            .dropped_kernels
            .contains(&format!("qmatmul {t} f32").to_lowercase());
        assert_eq!(named, dropped, "{t}: {info}");
    }
    assert_eq!(gpu.stats().kernels_dropped, 1);
    // With 64 KiB bindings, a dropped type's prompt-sized product decodes
    // a part of 300 rows of blocks on the host into 300 KiB of f32 values,
    // which the float product takes in parts of its own.
    let Some(small) = common::own_gpu(GpuOptions {
        sabotage_quant: Some(GgmlType::Q4_0),
        max_binding_bytes: Some(65536),
        ..Default::default()
    }) else {
        return;
    };
    let (n, k) = (300, 256);
    let blocks = random_blocks(GgmlType::Q4_0, n, k, 5);
    let w = QTensor::from_blocks(GgmlType::Q4_0, [n, k], &blocks, &small).unwrap();
    let wv = weight_values(&w);
    for m in [2, 40] {
        let x = Tensor::rand([m, k], DType::F32, 6, &small).unwrap();
        let what = format!("dropped Q4_0, 64 KiB bindings, {m} rows");
        assert_product(&x.qmatmul(&w).unwrap(), &x, (&w, &wv), &what);
    }
    assert_eq!(small.stats().kernels_dropped, 1);
}

/// A weight placed on a GPU device has its type's kernels probed then, not
/// at the first product: a wrong kernel is dropped before a profile (or a
/// capture) that would have run it unprobed, and the products inside stay
/// exact.
#[test]
fn a_weight_probes_its_kernels_where_it_reaches_the_device() {
    let Some(gpu) = common::own_gpu(GpuOptions {
        sabotage_quant: Some(GgmlType::Q8_0),
        ..Default::default()
    }) else {
        return;
    };
    let (n, k) = (9, 64);
    let blocks = random_blocks(GgmlType::Q8_0, n, k, 8);
    let w = QTensor::from_blocks(GgmlType::Q8_0, [n, k], &blocks, &gpu).unwrap();
    assert_eq!(gpu.stats().kernels_dropped, 1, "{}", gpu.info());
    let wv = weight_values(&w);
    let x = Tensor::rand([2, k], DType::F32, 9, &gpu).unwrap();
    let mut y = None;
    gpu.profile(|| {
        y = Some(x.qmatmul(&w)?);
        Ok(())
    })
    .unwrap();
    assert_product(&y.unwrap(), &x, (&w, &wv), "inside a profile");
    // Moved from the CPU, the same.
    let other = common::own_gpu(GpuOptions {
        sabotage_quant: Some(GgmlType::Q8_0),
        ..Default::default()
    })
    .unwrap();
    let on_cpu = QTensor::from_blocks(GgmlType::Q8_0, [n, k], &blocks, &Device::cpu()).unwrap();
    on_cpu.to_device(&other).unwrap();
    assert_eq!(other.stats().kernels_dropped, 1, "{}", other.info());
}
