//! The browser suite: runs in headless Chromium on its WebGPU adapter
//! through wasm-bindgen-test (see README, "In the browser"). Every test
//! opens the GPU with `Device::gpu_async` and fails, not skips, when the
//! browser offers no adapter. Only the async API exists here: nothing
//! blocks in a browser.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use webtensor::{
    Conv, DType, Device, DeviceKind, Error, Generator, Pool, Resize, SortOrder, Tensor, TopK, bf16,
    f16, s, wgpu,
};

wasm_bindgen_test_configure!(run_in_browser);

async fn gpu() -> Device {
    match Device::gpu_async().await {
        Ok(d) => d,
        Err(e) => panic!("the browser offers no WebGPU adapter: {e}"),
    }
}

async fn read(t: &Tensor) -> Vec<f32> {
    t.to_vec_async::<f32>().await.expect("readback")
}

/// Asserts `got` equals `want` within a relative 1e-4.
fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{what}: {g} vs {w}"
        );
    }
}

#[wasm_bindgen_test]
async fn opens_the_browsers_adapter() {
    let dev = gpu().await;
    let info = dev.info();
    assert_eq!(info.kind, DeviceKind::Gpu);
    assert_eq!(info.backend, "BrowserWebGpu", "{info}");
    assert!(info.max_storage_binding > 0 && info.max_workgroups_per_dim > 0);
    // With an adapter present, the default device is that GPU.
    let default = Device::default_async().await.expect("default device");
    assert_eq!(default.info().kind, DeviceKind::Gpu);
}

#[wasm_bindgen_test]
async fn every_dtype_round_trips() {
    let dev = gpu().await;
    let f = Tensor::from_slice(&[1.5f32, -2.0, 3.25], [3], &dev).unwrap();
    assert_eq!(f.to_vec_async::<f32>().await.unwrap(), [1.5, -2.0, 3.25]);
    let h: Vec<f16> = [0.5f32, -1.0, 65504.0].map(f16::from_f32).to_vec();
    let t = Tensor::from_slice(&h, [3], &dev).unwrap();
    assert_eq!(t.to_vec_async::<f16>().await.unwrap(), h);
    let doubled = t.mul_scalar(2.0).unwrap().to_dtype(DType::F32).unwrap();
    assert_eq!(read(&doubled).await, [1.0, -2.0, f32::INFINITY]);
    let i = Tensor::from_slice(&[i32::MIN, -1, 7], [3], &dev).unwrap();
    assert_eq!(i.to_vec_async::<i32>().await.unwrap(), [i32::MIN, -1, 7]);
    let u = Tensor::from_slice(&[u32::MAX, 0], [2], &dev).unwrap();
    assert_eq!(u.to_vec_async::<u32>().await.unwrap(), [u32::MAX, 0]);
    let b = Tensor::from_slice(&[1u8, 255, 3, 4, 5], [5], &dev).unwrap();
    assert_eq!(
        b.add_scalar(1).unwrap().to_vec_async::<u8>().await.unwrap(),
        [2, 0, 4, 5, 6]
    );
    let flags = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
    assert_eq!(
        flags
            .logical_not()
            .unwrap()
            .to_vec_async::<bool>()
            .await
            .unwrap(),
        [false, true, false]
    );
    assert_eq!(
        Tensor::full([], 4.0, DType::F32, &dev)
            .unwrap()
            .item_async::<f32>()
            .await
            .unwrap(),
        4.0
    );
}

/// bf16 (packed two to a word in the browser too) rounds to nearest even,
/// bit for bit as the CPU does: casts of values around every kind of
/// midpoint, whole-word and single-element stores, a fused chain, a sum
/// and a product.
#[wasm_bindgen_test]
async fn bf16_rounds_as_the_cpu_does() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let mut values = Vec::new();
    for hi in (0x0080u32..0x7f80).step_by(211).chain([0x7f7f, 0x3f80]) {
        for low in [0x0000u32, 0x7fff, 0x8000, 0x8001, 0xffff] {
            values.push(f32::from_bits((hi << 16) | low));
            values.push(-f32::from_bits((hi << 16) | low));
        }
    }
    let n = values.len();
    let bits = |v: Vec<bf16>| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let want: Vec<u16> = values
        .iter()
        .map(|&v| bf16::from_f32(v).to_bits())
        .collect();
    let x = Tensor::from_vec(values, [n], &dev).unwrap();
    let h = x.to_dtype(DType::BF16).unwrap();
    assert_eq!(bits(h.to_vec_async::<bf16>().await.unwrap()), want);
    let stepped = x.slice(s![1..;3]).unwrap().to_dtype(DType::BF16).unwrap();
    let stepped_want: Vec<u16> = want.iter().skip(1).step_by(3).copied().collect();
    assert_eq!(
        bits(stepped.to_vec_async::<bf16>().await.unwrap()),
        stepped_want
    );
    let ints = |seed| {
        Tensor::rand([24, 40], DType::F32, seed, &cpu)
            .unwrap()
            .mul_scalar(9.0)
            .unwrap()
            .round()
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap()
    };
    let (a, b) = (ints(1), ints(2));
    let forms = |a: &Tensor, b: &Tensor| {
        vec![
            a.mul(b).unwrap().add(a).unwrap().mul_scalar(1.5).unwrap(),
            a.sum(1).unwrap(),
            a.matmul(&b.t()).unwrap(),
        ]
    };
    let (ga, gb) = (
        a.to_device_async(&dev).await.unwrap(),
        b.to_device_async(&dev).await.unwrap(),
    );
    for (k, (got, want)) in forms(&ga, &gb).iter().zip(forms(&a, &b)).enumerate() {
        assert_eq!(
            bits(got.to_vec_async::<bf16>().await.unwrap()),
            bits(want.to_vec_async::<bf16>().await.unwrap()),
            "form {k}"
        );
    }
}

/// i64 in the browser (two u32 words; WebGPU has no 64-bit integer):
/// arithmetic across the word boundary, division, comparisons, casts (to
/// f32 rounded once, ties to even), a wide scalar, a transposed copy, a
/// sum, a scan, indexing, a sort and a product, bit for bit as the CPU.
#[wasm_bindgen_test]
async fn i64_elementwise_matches_the_cpu() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let big = (1i64 << 60) + 1;
    let values: Vec<i64> = vec![
        0,
        -1,
        big,
        -big,
        i64::MAX,
        i64::MIN,
        0xffff_ffff,
        (1 << 25) + 3,
        (1 << 40) + (1 << 16),
        -(1 << 31),
        1 << 31,
        12345,
    ];
    let a = Tensor::from_vec(values, [3, 4], &cpu).unwrap();
    let forms = |a: &Tensor| -> Vec<Tensor> {
        let b = a.flip(&[0, 1]).unwrap();
        vec![
            a.mul(&b).unwrap().add(a).unwrap().sub_scalar(big).unwrap(),
            a.maximum(&b).unwrap().neg().unwrap(),
            a.lt(&b).unwrap().to_dtype(DType::I64).unwrap(),
            a.to_dtype(DType::F32)
                .unwrap()
                .to_dtype(DType::I64)
                .unwrap(),
            a.t().contiguous().unwrap(),
            a.floor_divide(&b.sub_scalar(7).unwrap()).unwrap(),
            a.sum(1).unwrap(),
            a.cumsum(1).unwrap(),
            a.index_select(&a.slice(s![.., 0]).unwrap().remainder_scalar(3).unwrap(), 0)
                .unwrap(),
            a.sort(1, SortOrder::Descending).unwrap(),
            a.matmul(&b.t()).unwrap(),
        ]
    };
    let g = a.to_device_async(&dev).await.unwrap();
    for (k, (got, want)) in forms(&g).iter().zip(forms(&a)).enumerate() {
        assert_eq!(
            got.to_vec_async::<i64>().await.unwrap(),
            want.to_vec_async::<i64>().await.unwrap(),
            "form {k}"
        );
    }
}

/// Mixed dtypes promote on the browser's GPU as everywhere (f16 packed
/// there, as browsers store it): every pair of its dtypes (i32 with u32
/// in i64), against the same op on operands cast by hand.
#[wasm_bindgen_test]
async fn mixed_dtypes_promote() {
    let dev = gpu().await;
    let dtypes = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
    ];
    let base = Tensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0], [4], &dev).unwrap();
    for a_dtype in dtypes {
        for b_dtype in dtypes {
            let (a, b) = (
                base.to_dtype(a_dtype).unwrap(),
                base.flip(&[0]).unwrap().to_dtype(b_dtype).unwrap(),
            );
            let Some(common) = a_dtype.promote(b_dtype) else {
                assert!(a.maximum(&b).is_err(), "{a_dtype} with {b_dtype}");
                continue;
            };
            let want = a
                .to_dtype(common)
                .unwrap()
                .maximum(&b.to_dtype(common).unwrap());
            match (a.maximum(&b), want) {
                (Ok(got), Ok(want)) => {
                    assert_eq!(got.dtype(), common, "{a_dtype} with {b_dtype}");
                    let f32s = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
                    let (got, want) = (read(&f32s(&got)).await, read(&f32s(&want)).await);
                    assert_eq!(got, want, "{a_dtype} with {b_dtype}");
                }
                // An op the common dtype lacks fails either way.
                (Err(_), Err(_)) => {}
                (got, want) => panic!("{a_dtype} with {b_dtype}: {got:?} against {want:?}"),
            }
        }
    }
    let i = base.to_dtype(DType::I32).unwrap();
    assert_eq!(read(&(&i * 0.5)).await, vec![0.0, 0.5, 1.0, 1.5]);
    assert_eq!(read(&(2.0 * &i + 1.0)).await, vec![1.0, 3.0, 5.0, 7.0]);
    assert!(i.add_scalar_(0.5).is_err());
}

#[wasm_bindgen_test]
async fn strided_views_go_into_kernels_and_in_place_ops_write_through() {
    let dev = gpu().await;
    let a = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    // A transposed view plus a reversed, stepped one: no copies.
    let v = a.t().add(&a.slice(s![..;-1, ..]).unwrap().t()).unwrap();
    assert_eq!(
        read(&v).await,
        [8., 8., 8., 10., 10., 10., 12., 12., 12., 14., 14., 14.]
    );
    a.slice(s![.., 1..;2]).unwrap().mul_scalar_(-1.0).unwrap();
    assert_eq!(
        read(&a).await,
        [0., -1., 2., -3., 4., -5., 6., -7., 8., -9., 10., -11.]
    );
}

#[wasm_bindgen_test]
async fn a_chain_runs_in_one_submit() {
    let dev = gpu().await;
    let x = Tensor::arange(0.0f32, 1024.0, 1.0, &dev).unwrap();
    dev.sync_async().await.unwrap();
    let before = dev.stats().submits;
    let mut y = x.clone();
    for _ in 0..20 {
        y = y.mul_scalar(0.5).unwrap().add(&x).unwrap();
    }
    let out = read(&y).await;
    assert_eq!(dev.stats().submits - before, 1, "{:?}", dev.stats());
    // y converges to 2x: y_k = x (2 - 0.5^k) with y_0 = x.
    let factor = 2.0 - 0.5f32.powi(20);
    assert!((out[1000] - 1000.0 * factor).abs() < 1e-2, "{}", out[1000]);
}

#[wasm_bindgen_test]
async fn reductions_matmul_and_indexing() {
    let dev = gpu().await;
    let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(read(&a.sum(1).unwrap()).await, [3., 12.]);
    assert_eq!(read(&a.max(0).unwrap()).await, [3., 4., 5.]);
    assert_eq!(a.argmax(..).unwrap().item_async::<i32>().await.unwrap(), 5);
    // [[0, 1, 2], [3, 4, 5]] @ its transpose.
    assert_eq!(read(&a.matmul(&a.t()).unwrap()).await, [5., 14., 14., 50.]);
    assert_eq!(read(&a.cumsum(1).unwrap()).await, [0., 1., 3., 3., 7., 12.]);
    let idx = Tensor::from_slice(&[2i32, 0], [2], &dev).unwrap();
    assert_eq!(
        read(&a.index_select(&idx, 1).unwrap()).await,
        [2., 0., 5., 3.]
    );
    let joined = Tensor::concat(&[&a, &a.slice(s![..1]).unwrap()], 0).unwrap();
    assert_eq!(read(&joined).await, [0., 1., 2., 3., 4., 5., 0., 1., 2.]);
}

#[wasm_bindgen_test]
async fn bad_input_is_an_err_not_an_exception() {
    let dev = gpu().await;
    let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
    let b = Tensor::zeros([4], DType::F32, &dev).unwrap();
    assert!(matches!(a.add(&b), Err(Error::Shape { op: "add", .. })));
    assert!(matches!(a.matmul(&a), Err(Error::Shape { .. })));
    assert!(matches!(
        a.to_vec_async::<i32>().await,
        Err(Error::DType { op: "to_vec", .. })
    ));
    assert!(matches!(
        Tensor::zeros([2], DType::F64, &dev),
        Err(Error::UnsupportedDType { .. })
    ));
    // An out-of-range index on the GPU: reported at the next readback.
    let bad = Tensor::from_slice(&[5i32], [1], &dev).unwrap();
    let picked = a.take(&bad, 1).unwrap();
    assert!(matches!(
        picked.to_vec_async::<f32>().await,
        Err(Error::Index {
            op: "take",
            index: 5,
            ..
        })
    ));
    assert_eq!(read(&picked).await, [0., 0.]);
}

/// A readback dropped while it maps (a page that stops waiting) had the
/// index fault it carried cleared and lost; the next readback reports it.
#[wasm_bindgen_test]
async fn an_index_fault_outlives_a_readback_dropped_mid_flight() {
    let dev = gpu().await;
    let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
    let bad = Tensor::from_slice(&[7i32], [1], &dev).unwrap();
    let picked = a.take(&bad, 1).unwrap();
    let mut dropped = Box::pin(picked.to_vec_async::<f32>());
    // One poll submits the work with the record's copy and starts mapping.
    assert!(futures::poll!(&mut dropped).is_pending());
    drop(dropped);
    let other = Tensor::ones([2], DType::F32, &dev).unwrap();
    assert!(matches!(
        other.to_vec_async::<f32>().await,
        Err(Error::Index {
            op: "take",
            index: 7,
            ..
        })
    ));
    assert_eq!(read(&other).await, [1., 1.]);
}

#[wasm_bindgen_test]
async fn the_cpu_path_runs_in_the_browser_too() {
    let cpu = Device::cpu();
    let a = Tensor::arange(0.0f32, 6.0, 1.0, &cpu)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(read(&a.matmul(&a.t()).unwrap()).await, [5., 14., 14., 50.]);
    let g = a.to_device_async(&gpu().await).await.unwrap();
    let sums = read(&g.softmax(1).unwrap().sum(1).unwrap()).await;
    assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-6), "{sums:?}");
}

#[wasm_bindgen_test]
async fn complex_tensors_and_grids() {
    use webtensor::{Complex32, Grid2};
    let dev = gpu().await;
    let z = Tensor::from_complex(
        &[Complex32::new(1.0, 2.0), Complex32::new(3.0, -1.0)],
        [2],
        &dev,
    )
    .unwrap();
    z.imag().unwrap().mul_scalar_(-1.0).unwrap();
    let sq = z.mul(&z).unwrap().to_complex_vec_async().await.unwrap();
    // (1 - 2i)^2 = -3 - 4i, (3 + i)^2 = 8 + 6i.
    assert_eq!(sq, [Complex32::new(-3.0, -4.0), Complex32::new(8.0, 6.0)]);
    let g = Grid2::<i32, 2, 2>::from_fn(|[i, j]| (2 * i + j) as i32);
    let t = g.to_tensor(&dev).unwrap().mul_scalar(3).unwrap();
    let back = Grid2::<i32, 2, 2>::from_tensor_async(&t).await.unwrap();
    assert_eq!(back, g.map(|x| 3 * x));
}

/// Every kernel form this round added, compiled by the browser's WGSL
/// compiler and checked against the CPU path: each matmul tile (with
/// scalar and vec4 loads) and the matrix-vector kernel, vec4 and tiled (transposing) elementwise kernels,
/// the softmax kernel, a column reduction split by threads, and a long
/// cumsum scanned in blocks.
#[wasm_bindgen_test]
async fn every_new_kernel_form_matches_the_cpu() {
    use webtensor::MatmulTile;
    let dev = gpu().await;
    let cpu = Device::cpu();
    let a = Tensor::rand([65, 33], DType::F32, 1, &cpu).unwrap();
    let b = Tensor::rand([33, 70], DType::F32, 2, &cpu).unwrap();
    let want = read(&a.matmul(&b).unwrap()).await;
    let (ga, gb) = (
        a.to_device_async(&dev).await.unwrap(),
        b.to_device_async(&dev).await.unwrap(),
    );
    for tile in MatmulTile::FIXED {
        dev.set_matmul_tile(tile);
        close(
            &read(&ga.matmul(&gb).unwrap()).await,
            &want,
            &format!("{tile:?}"),
        );
    }
    // Aligned operands load four elements at a time: along a's k and b's
    // n, and down a's m where a is stored transposed (taken on the GPU).
    let a4 = Tensor::rand([64, 36], DType::F32, 3, &cpu).unwrap();
    let b4 = Tensor::rand([36, 68], DType::F32, 4, &cpu).unwrap();
    let want4 = read(&a4.matmul(&b4).unwrap()).await;
    let ga4 = a4.to_device_async(&dev).await.unwrap();
    let gb4 = b4.to_device_async(&dev).await.unwrap();
    let ga4t = ga4.t().contiguous().unwrap().t();
    for tile in MatmulTile::FIXED {
        dev.set_matmul_tile(tile);
        for (what, x) in [("a", &ga4), ("a stored transposed", &ga4t)] {
            close(
                &read(&x.matmul(&gb4).unwrap()).await,
                &want4,
                &format!("{tile:?} vec4 loads, {what}"),
            );
        }
    }
    dev.set_matmul_tile(MatmulTile::Auto);
    let v = b.slice(s![.., 0]).unwrap();
    let gv = gb.slice(s![.., 0]).unwrap();
    close(
        &read(&ga.matmul(&gv).unwrap()).await,
        &read(&a.matmul(&v).unwrap()).await,
        "matvec",
    );
    // vec4 (aligned, contiguous) and tiled (transposing) elementwise kernels.
    let x = Tensor::rand([40, 50], DType::F32, 3, &cpu).unwrap();
    let gx = x.to_device_async(&dev).await.unwrap();
    close(
        &read(&gx.add(&gx).unwrap()).await,
        &read(&x.add(&x).unwrap()).await,
        "vec4 add",
    );
    close(
        &read(&gx.t().contiguous().unwrap()).await,
        &read(&x.t().contiguous().unwrap()).await,
        "tiled transpose",
    );
    let h = gx.to_dtype(DType::F16).unwrap();
    close(
        &read(&h.t().to_dtype(DType::F32).unwrap()).await,
        &read(
            &x.to_dtype(DType::F16)
                .unwrap()
                .t()
                .to_dtype(DType::F32)
                .unwrap(),
        )
        .await,
        "tiled f16 cast",
    );
    // softmax, a column sum split by threads, and a long blocked cumsum.
    close(
        &read(&gx.log_softmax(1).unwrap()).await,
        &read(&x.log_softmax(1).unwrap()).await,
        "log_softmax",
    );
    let tall = Tensor::rand([300, 70], DType::F32, 4, &cpu).unwrap();
    let gtall = tall.to_device_async(&dev).await.unwrap();
    close(
        &read(&gtall.sum(0).unwrap()).await,
        &read(&tall.sum(0).unwrap()).await,
        "column sum",
    );
    let ones = Tensor::ones([70_001], DType::I32, &dev).unwrap();
    let counts = ones.cumsum(0).unwrap().to_vec_async::<i32>().await.unwrap();
    assert!(counts.iter().enumerate().all(|(i, &c)| c == i as i32 + 1));
    // A long cumprod of factors near 1 (scanned as deviations from 1).
    let near = Tensor::rand([2, 300], DType::F32, 5, &cpu)
        .unwrap()
        .mul_scalar(1e-3)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    let gnear = near.to_device_async(&dev).await.unwrap();
    close(
        &read(&gnear.cumprod(1).unwrap()).await,
        &read(&near.cumprod(1).unwrap()).await,
        "cumprod near 1",
    );
}

/// Through Chromium's WGSL compiler, against the CPU: elementwise kernels
/// writing four elements as whole words (a bool mask, wrapping u8, f16
/// stored natively or packed), rows reduced four elements at a time (sum,
/// argmax), var in one pass, softmax rows read and written four at a
/// time, and a long scalar loop fused into long programs.
#[wasm_bindgen_test]
async fn packed_words_quads_and_long_programs_match_the_cpu() {
    let native = gpu().await;
    let packed = Device::gpu_async_with(webtensor::GpuOptions {
        force_packed_f16: true,
        ..Default::default()
    })
    .await
    .expect("a packed-f16 device");
    let cpu = Device::cpu();
    let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
    let forms = |a: &Tensor, b: &Tensor| {
        vec![
            (
                "mask",
                f32s(
                    a.gt(b)
                        .unwrap()
                        .logical_xor(&a.lt_scalar(0.5).unwrap())
                        .unwrap(),
                ),
            ),
            (
                "u8",
                f32s(
                    a.mul_scalar(255.0)
                        .unwrap()
                        .to_dtype(DType::U8)
                        .unwrap()
                        .add_scalar(200)
                        .unwrap(),
                ),
            ),
            (
                "f16",
                f32s(
                    a.to_dtype(DType::F16)
                        .unwrap()
                        .mul(&b.to_dtype(DType::F16).unwrap())
                        .unwrap(),
                ),
            ),
            ("row sums", a.sum(1).unwrap()),
            ("row argmax", f32s(a.argmax(1).unwrap())),
            ("row var", a.var(1, 1).unwrap()),
            ("softmax", a.softmax(1).unwrap()),
            (
                "f16 row sums",
                f32s(a.to_dtype(DType::F16).unwrap().sum_keepdim(1).unwrap()),
            ),
        ]
    };
    // Rows of 256 (aligned, a workgroup each) and of 257 (not aligned).
    for cols in [256, 257] {
        let a = Tensor::rand([12, cols], DType::F32, 5, &cpu).unwrap();
        let b = Tensor::rand([12, cols], DType::F32, 6, &cpu).unwrap();
        let want = forms(&a, &b);
        for dev in [&native, &packed] {
            let ga = a.to_device_async(dev).await.unwrap();
            let gb = b.to_device_async(dev).await.unwrap();
            for ((what, got), (_, want)) in forms(&ga, &gb).iter().zip(&want) {
                close(
                    &read(got).await,
                    &read(want).await,
                    &format!("{what}, {cols} columns on {dev}"),
                );
            }
        }
    }
    // 1000 scalar ops fuse into programs of many ops each.
    let x = Tensor::zeros([300], DType::F32, &native).unwrap();
    native.sync_async().await.unwrap();
    let before = native.stats().dispatches;
    for _ in 0..1000 {
        x.add_scalar_(1.0).unwrap();
    }
    assert!(read(&x).await.iter().all(|&v| v == 1000.0));
    let dispatches = native.stats().dispatches - before;
    assert!(dispatches <= 40, "{dispatches} dispatches for 1000 ops");
}

/// The kernels and WGSL added for NumPy's everyday ops, through Chromium's
/// WGSL compiler: the sort network (argsort, sort, topk on strided views,
/// across the 512-element block), the new float functions and
/// floor_divide, against the CPU.
#[wasm_bindgen_test]
async fn sorts_and_new_functions_match_the_cpu() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let x = Tensor::rand([3, 1100], DType::F32, 9, &cpu)
        .unwrap()
        .mul_scalar(8.0)
        .unwrap()
        .round()
        .unwrap();
    let gx = x.to_device_async(&dev).await.unwrap();
    for dir in [SortOrder::Ascending, SortOrder::Descending] {
        for (cpu_view, gpu_view) in [
            (x.clone(), gx.clone()),
            (
                x.slice(s![.., ..;-3]).unwrap(),
                gx.slice(s![.., ..;-3]).unwrap(),
            ),
        ] {
            let want = cpu_view.argsort(-1, dir).unwrap();
            let got = gpu_view.argsort(-1, dir).unwrap();
            assert_eq!(
                got.to_vec_async::<i32>().await.unwrap(),
                want.to_vec_async::<i32>().await.unwrap(),
                "argsort {dir:?}"
            );
        }
    }
    let (values, indices) = gx.t().topk(2, 0, TopK::Largest).unwrap();
    let (want_v, want_i) = x.t().topk(2, 0, TopK::Largest).unwrap();
    assert_eq!(read(&values).await, read(&want_v).await);
    assert_eq!(
        indices.to_vec_async::<i32>().await.unwrap(),
        want_i.to_vec_async::<i32>().await.unwrap()
    );
    let h = gx
        .to_dtype(DType::F16)
        .unwrap()
        .sort(1, SortOrder::Ascending)
        .unwrap();
    let want = x
        .to_dtype(DType::F16)
        .unwrap()
        .sort(1, SortOrder::Ascending)
        .unwrap();
    assert_eq!(
        read(&h.to_dtype(DType::F32).unwrap()).await,
        read(&want.to_dtype(DType::F32).unwrap()).await
    );
    let v = Tensor::from_slice(&[0.3f32, -0.2, 1e-6, 2.5, -7.0], [5], &cpu).unwrap();
    let gv = v.to_device_async(&dev).await.unwrap();
    type Unary = fn(&Tensor) -> webtensor::Result<Tensor>;
    // log and sqrt of negatives: WGSL leaves them open, we say NaN.
    let ops: [(&str, Unary); 7] = [
        ("log", Tensor::log),
        ("sqrt", Tensor::sqrt),
        ("tan", Tensor::tan),
        ("log1p", Tensor::log1p),
        ("expm1", Tensor::expm1),
        ("log2", Tensor::log2),
        ("exp2", Tensor::exp2),
    ];
    for (name, op) in ops {
        let (got, want) = (read(&op(&gv).unwrap()).await, read(&op(&v).unwrap()).await);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * w.abs().max(1e-6),
                "{name}: {g} vs {w}"
            );
        }
    }
    assert_eq!(
        read(&gv.floor_divide_scalar(-0.25).unwrap()).await,
        read(&v.floor_divide_scalar(-0.25).unwrap()).await
    );
}

/// Custom WGSL kernels and buffers shared with the page's own WebGPU code,
/// through Chromium: a kernel over strided views against the CPU, a
/// stencil through `NAME_at`, a tensor's buffer wrapped again as a tensor
/// (writes through one seen through the other), and WGSL that does not
/// compile as an `Err` (from the call, or from the next readback).
#[wasm_bindgen_test]
async fn custom_kernels_and_shared_buffers() {
    use webtensor::CustomKernel;
    let dev = gpu().await;
    let cpu = Device::cpu();
    let lerp = CustomKernel::new(
        "lerp",
        &[("a", DType::F32), ("b", DType::F32)],
        &[("t", DType::F32)],
        ("out", DType::F32),
        "out = a + t * (b - a);",
    )
    .unwrap();
    let a = Tensor::rand([5, 7], DType::F32, 1, &cpu).unwrap();
    let b = Tensor::rand([7], DType::F32, 2, &cpu).unwrap();
    let (ga, gb) = (
        a.to_device_async(&dev).await.unwrap(),
        b.to_device_async(&dev).await.unwrap(),
    );
    let got = lerp
        .call(&[&ga.slice(s![..;-1, ..]).unwrap(), &gb], &[0.75.into()])
        .unwrap();
    let av = a.slice(s![..;-1, ..]).unwrap();
    let want = av
        .add(&b.sub(&av).unwrap().mul_scalar(0.75).unwrap())
        .unwrap();
    for (g, w) in read(&got).await.iter().zip(read(&want).await) {
        assert!((g - w).abs() < 1e-6, "lerp: {g} vs {w}");
    }
    // 300 scalars: past the 255 parameters Tint takes in a function.
    let names: Vec<String> = (0..300).map(|k| format!("s{k}")).collect();
    let scalars: Vec<(&str, DType)> = names.iter().map(|n| (n.as_str(), DType::F32)).collect();
    let wide = CustomKernel::new(
        "wide",
        &[("a", DType::F32)],
        &scalars,
        ("o", DType::F32),
        "o = a + s0 + s299;",
    )
    .unwrap();
    let values: Vec<webtensor::Scalar> = (0..300).map(|k| (k as f32).into()).collect();
    let got = wide.call(&[&gb], &values).unwrap();
    let want = b.add_scalar(299.0).unwrap();
    assert_eq!(read(&got).await, read(&want).await);
    let shift = CustomKernel::new(
        "shift",
        &[("x", DType::I32)],
        &[],
        ("y", DType::I32),
        "y = x_at((index + 1u) % x_dim(0u));",
    )
    .unwrap();
    let x = Tensor::arange(0i32, 5, 1, &dev).unwrap();
    shift.call_into(&x, &[&x], &[]).unwrap();
    assert_eq!(x.to_vec_async::<i32>().await.unwrap(), [1, 2, 3, 4, 0]);
    // A tensor's buffer, wrapped again: one storage seen twice.
    let exported = x.gpu_buffer().unwrap();
    assert_eq!(exported.element_bytes, 4);
    let again = Tensor::from_gpu_buffer(
        &exported.buffer,
        DType::I32,
        [5],
        exported.byte_offset,
        &dev,
    )
    .unwrap();
    again.mul_scalar_(10).unwrap();
    assert_eq!(x.to_vec_async::<i32>().await.unwrap(), [10, 20, 30, 40, 0]);
    let broken = CustomKernel::new(
        "broken",
        &[("x", DType::I32)],
        &[],
        ("y", DType::I32),
        "y = x +;",
    )
    .unwrap();
    match broken.call(&[&x], &[]) {
        Err(e) => assert!(e.to_string().contains("broken"), "{e}"),
        Ok(t) => {
            // The readback that submits it fails (the browser's error is
            // caught with the submit, never left to a later event) ...
            let e = t.to_vec_async::<i32>().await.unwrap_err();
            assert!(matches!(e, Error::Gpu { .. }), "{e}");
            // ... and so does a sync, each once: the device goes on.
            let _unread = broken.call(&[&x], &[]).unwrap();
            assert!(dev.sync_async().await.is_err());
            assert_eq!(x.to_vec_async::<i32>().await.unwrap(), [10, 20, 30, 40, 0]);
            dev.sync_async().await.unwrap();
        }
    }
}

/// The page's own WebGPU device (its instance, adapter and queue), as an
/// application opens it.
async fn page_device() -> (webtensor::wgpu::AdapterInfo, wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::BROWSER_WEBGPU,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions::default())
        .await
        .expect("the browser offers no WebGPU adapter");
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            required_features: adapter.features() & wgpu::Features::SHADER_F16,
            required_limits: adapter.limits(),
            ..Default::default()
        })
        .await
        .expect("the adapter refused a device");
    (adapter.get_info(), device, queue)
}

/// The page's way to read a buffer: copy to a staging buffer, submit, map
/// (the browser resolves the map; nothing blocks).
async fn page_read(device: &wgpu::Device, queue: &wgpu::Queue, buffer: &wgpu::Buffer) -> Vec<u8> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("page staging"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    queue.submit([encoder.finish()]);
    let (tx, rx) = futures::channel::oneshot::channel();
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| drop(tx.send(r)));
    rx.await.unwrap().expect("map");
    let bytes = staging.slice(..).get_mapped_range().unwrap().to_vec();
    staging.unmap();
    bytes
}

/// webtensor inside the page's own device, in Chromium: the page writes a
/// buffer and a tensor over it reads the new values; ops write it and the
/// page's own copy reads them after `gpu_buffer` (which submits first);
/// a transposed, reversed view drawn into the page's Bgra8 texture with
/// the heat map comes back pixel for pixel.
#[wasm_bindgen_test]
async fn inside_the_pages_own_device() {
    use webtensor::{ColorMap, GpuOptions};
    let (info, device, queue) = page_device().await;
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())
        .expect("a device on the application's wgpu device");
    assert_eq!(dev.info().kind, DeviceKind::Gpu);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("page buffer"),
        size: 6 * 4,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let values: Vec<u8> = (1..=6).flat_map(|v| (v as f32).to_le_bytes()).collect();
    queue.write_buffer(&buffer, 0, &values);
    let x = Tensor::from_gpu_buffer(&buffer, DType::F32, [2, 3], 0, &dev).unwrap();
    // The page writes, the tensor reads.
    assert_eq!(read(&x.t()).await, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // The tensor writes (recorded), the page reads after gpu_buffer.
    x.slice(s![.., 1..]).unwrap().mul_scalar_(-2.0).unwrap();
    let handed = x.gpu_buffer().unwrap();
    let bytes = page_read(&device, &queue, &handed.buffer).await;
    let got: Vec<f32> = bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [1.0, -4.0, -6.0, 4.0, -10.0, -12.0]);
    drop(handed);
    // Drawing: a [3, 2] view (transposed, rows reversed) into Bgra8.
    let view = x.t().slice(s![..;-1, ..]).unwrap();
    let host = read(&view).await;
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("page texture"),
        size: wgpu::Extent3d {
            width: 2,
            height: 3,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Bgra8Unorm,
        usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    view.write_to_texture(
        &texture,
        ColorMap::Heat {
            min: -12.0,
            max: 4.0,
        },
    )
    .unwrap();
    let rows = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("page pixels"),
        size: 256 * 3,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &rows,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(256),
                rows_per_image: Some(3),
            },
        },
        texture.size(),
    );
    queue.submit([encoder.finish()]);
    let pixels = page_read(&device, &queue, &rows).await;
    // Heat: black, red, yellow, white; Bgra8 holds b, g, r, a.
    let byte = |t: f32| (t.clamp(0.0, 1.0) * 255.0).round() as u8;
    for (k, v) in host.iter().enumerate() {
        let t = ((v + 12.0) / 16.0).clamp(0.0, 1.0) * 3.0;
        let want = [byte(t - 2.0), byte(t - 1.0), byte(t), 255];
        let at = (k / 2) * 256 + (k % 2) * 4;
        assert_eq!(pixels[at..at + 4], want, "pixel {k} of value {v}");
    }
}

/// Tensors over one storage binding in Chromium: elementwise ops on a
/// device whose binding is capped at 512 bytes run in windows and equal
/// the CPU, and a 160 MiB tensor on a device binding 128 MiB (browsers'
/// default) is filled, updated at its far end and read back.
#[wasm_bindgen_test]
async fn tensors_over_one_binding() {
    let capped = Device::gpu_async_with(webtensor::GpuOptions {
        max_binding_bytes: Some(512),
        ..Default::default()
    })
    .await
    .expect("the browser offers no WebGPU adapter");
    assert!(capped.info().max_storage_binding <= 512);
    let cpu = Device::cpu();
    let values: Vec<f32> = (0..40 * 30).map(|i| (i % 17) as f32 - 8.0).collect();
    let run = |dev: Device| {
        let values = values.clone();
        async move {
            let a = Tensor::from_vec(values, [40, 30], &dev).unwrap();
            let b = a.t().slice(s![..;-1, 3..]).unwrap();
            let c = b.mul_scalar(2.0).unwrap().add(&b.abs().unwrap()).unwrap();
            a.slice(s![..20, ..])
                .unwrap()
                .add_(&a.slice(s![20.., ..;-1]).unwrap())
                .unwrap();
            let mut out = read(&c).await;
            out.extend(read(&a).await);
            out
        }
    };
    assert_eq!(run(capped).await, run(cpu).await);
    // SwiftShader's adapter binds 1 GiB at once; a device holding to the
    // browsers' default binding (128 MiB) splits a 160 MiB tensor.
    let dev = Device::gpu_async_with(webtensor::GpuOptions {
        max_binding_bytes: Some(128 << 20),
        ..Default::default()
    })
    .await
    .unwrap();
    let info = dev.info();
    let n = 40 << 20; // 160 MiB of f32
    assert!(info.max_storage_binding < (n as u64) * 4, "{info}");
    if info.max_buffer_size < (n as u64) * 4 {
        // The note of issue 18 reports what the browser's adapter allows.
        panic!(
            "the browser's adapter holds at most {} bytes per buffer",
            info.max_buffer_size
        );
    }
    let x = Tensor::ones([n], DType::F32, &dev).unwrap();
    x.slice(s![n - 5..]).unwrap().mul_scalar_(3.0).unwrap();
    x.slice(s![..;-(1 << 22)])
        .unwrap()
        .add_scalar_(1.0)
        .unwrap();
    let tail = read(&x.slice(s![n - 6..]).unwrap()).await;
    assert_eq!(tail, [1.0, 3.0, 3.0, 3.0, 3.0, 4.0]);
    let head = read(&x.slice(s![..3]).unwrap()).await;
    assert_eq!(head, [1.0, 1.0, 1.0]);
}

/// Issue 26's repros in the browser: NumPy's answers on SwiftShader too.
#[wasm_bindgen_test]
async fn numpys_answers_where_webtensor_once_differed() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    // A zero remainder takes the divisor's sign.
    let a = Tensor::from_slice(&[-4.0f32, 4.0, -0.0, 0.0], [4], &dev).unwrap();
    let b = Tensor::from_slice(&[2.0f32, -2.0, 3.0, -3.0], [4], &dev).unwrap();
    let r = read(&a.remainder(&b).unwrap()).await;
    let signs: Vec<bool> = r.iter().map(|v| v.is_sign_negative()).collect();
    assert_eq!(signs, [false, true, false, true], "{r:?}");
    // Scalars are rounded to f16 before the GPU computes.
    let h: Vec<f16> = [-1.0f32, 0.5, -0.897].map(f16::from_f32).to_vec();
    let (gh, ch) = (
        Tensor::from_slice(&h, [3], &dev).unwrap(),
        Tensor::from_slice(&h, [3], &cpu).unwrap(),
    );
    for s in [1.0001, 65519.99, 2049.0001] {
        let got = gh
            .add_scalar(s)
            .unwrap()
            .to_vec_async::<f16>()
            .await
            .unwrap();
        let want = ch
            .add_scalar(s)
            .unwrap()
            .to_vec_async::<f16>()
            .await
            .unwrap();
        assert_eq!(got, want, "+ {s}");
    }
    let full = Tensor::full([1], 2049.0001, DType::F16, &dev).unwrap();
    assert_eq!(
        full.to_vec_async::<f16>().await.unwrap()[0].to_f32(),
        2050.0
    );
    // Trigonometry at any magnitude, tanh near zero.
    let x = [3e38f32, -3e38, 1e10, 1e5, 1e-6];
    let (gx, cx) = (
        Tensor::from_slice(&x, [5], &dev).unwrap(),
        Tensor::from_slice(&x, [5], &cpu).unwrap(),
    );
    for (name, op) in [
        (
            "sin",
            Tensor::sin as fn(&Tensor) -> webtensor::Result<Tensor>,
        ),
        ("cos", Tensor::cos),
        ("tan", Tensor::tan),
        ("tanh", Tensor::tanh),
        ("erf", Tensor::erf),
        ("gelu", Tensor::gelu),
        ("silu", Tensor::silu),
    ] {
        let (got, want) = (read(&op(&gx).unwrap()).await, read(&op(&cx).unwrap()).await);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs() + 1e-30,
                "{name}: {got:?} vs {want:?}"
            );
        }
    }
    // No compiler folds ops together: inf - inf is NaN, and a fused
    // `(a - b) + b` rounds after each op.
    let chain = |d: &Device| -> webtensor::Result<Tensor> {
        let a = Tensor::from_slice(&[f32::INFINITY, 1e-4, 2.0], [3], d)?;
        let b = Tensor::full([3], 36.0, DType::F32, d)?;
        let (ab, ab2) = (a.mul(&b)?, a.mul(&b)?);
        Tensor::stack(&[&a.sub(&a)?, &a.sub(&b)?.add(&b)?, &ab.sub(&ab2)?], 0)
    };
    let (got, want) = (
        read(&chain(&dev).unwrap()).await,
        read(&chain(&cpu).unwrap()).await,
    );
    assert!(want[0].is_nan() && want[4] == 9.918213e-5, "{want:?}");
    let same = |(g, w): (&f32, &f32)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
    assert!(got.iter().zip(&want).all(same), "{got:?} vs {want:?}");
}

/// A captured step in the browser: runs equal the same ops run eagerly on
/// the CPU, application writes between runs are read, a readback inside
/// the step is refused, and an index fault of a replayed step reaches the
/// next readback.
#[wasm_bindgen_test]
async fn captured_steps_replay_what_eager_ops_compute() {
    let gpu = gpu().await;
    let cpu = Device::cpu();
    let step = |x: &Tensor, y: &Tensor, acc: &Tensor| -> webtensor::Result<()> {
        let view = x.slice(s![..;-1, 1..;2])?;
        view.add_(&view.mul(&y.slice(s![.., 1..;2])?)?.tanh()?)?;
        acc.add_(&x.sum(1)?.mul_scalar(0.5)?)
    };
    let make = |dev: &Device| {
        let x: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin()).collect();
        let y: Vec<f32> = (0..40).map(|i| (i as f32 * 0.11).cos()).collect();
        (
            Tensor::from_slice(&x, [5, 8], dev).unwrap(),
            Tensor::from_slice(&y, [5, 8], dev).unwrap(),
            Tensor::zeros([5], DType::F32, dev).unwrap(),
        )
    };
    let (cx, cy, cacc) = make(&cpu);
    let (gx, gy, gacc) = make(&gpu);
    let (x2, y2, a2) = (gx.clone(), gy.clone(), gacc.clone());
    let mut graph = gpu.capture(move || step(&x2, &y2, &a2)).unwrap();
    step(&cx, &cy, &cacc).unwrap();
    for k in 0..3 {
        let fill = k as f32 * 0.1;
        cy.fill_(fill).unwrap();
        gy.fill_(fill).unwrap();
        step(&cx, &cy, &cacc).unwrap();
        graph.run().unwrap();
    }
    close(&read(&gx).await, &read(&cx).await, "captured x");
    close(&read(&gacc).await, &read(&cacc).await, "captured acc");
    assert!(graph.dispatches() < graph.ops(), "{graph:?}");
    // A submit inside the step.
    let x3 = gx.clone();
    let refused = gpu.capture(move || {
        x3.add_scalar_(1.0)?;
        x3.device().flush()
    });
    assert!(
        matches!(refused, Err(Error::Argument { .. })),
        "{refused:?}"
    );
    // An index fault in a replayed step.
    let idx = Tensor::from_slice(&[0i32, 2], [2], &gpu).unwrap();
    let out = Tensor::zeros([2, 8], DType::F32, &gpu).unwrap();
    let (src, i2, o2) = (gx.clone(), idx.clone(), out.clone());
    let mut gather = gpu.capture(move || o2.add_(&src.take(&i2, 0)?)).unwrap();
    idx.fill_(9).unwrap();
    gather.run().unwrap();
    let faulted = gx.to_vec_async::<f32>().await;
    assert!(matches!(faulted, Err(Error::Index { .. })), "{faulted:?}");
}

/// A profile in the browser: ops named and linked to their kernels (a
/// fused chain shares one), host times from `performance.now()`, and no
/// GPU times (a browser's timestamps are not used), said so.
#[wasm_bindgen_test]
async fn a_profile_names_ops_and_kernels() {
    let gpu = gpu().await;
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4], &gpu).unwrap();
    let (xs, kept) = (x.clone(), std::rc::Rc::new(std::cell::RefCell::new(None)));
    let out = kept.clone();
    let p = gpu
        .profile(move || {
            *out.borrow_mut() = Some(xs.mul_scalar(2.0)?.exp()?);
            Ok(())
        })
        .unwrap();
    let names: Vec<&str> = p.ops().iter().map(|o| o.name).collect();
    assert_eq!(names, ["mul", "exp"], "{p}");
    assert_eq!(p.ops()[0].kernels, 0..1, "{p}");
    assert_eq!(p.kernels()[0].ops, [0, 1], "{p}");
    assert!(p.kernels()[0].gpu.is_none() && p.gpu_times_unavailable().is_some());
    let y = kept.borrow_mut().take().unwrap();
    let want: Vec<f32> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .map(|v| (2.0 * v).exp())
        .collect();
    close(&read(&y).await, &want, "profiled exp(2x)");
}

#[wasm_bindgen_test]
async fn ffts_match_the_cpu_path() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    // A cosine of 3 cycles over 16 samples: rfft has 8 at k = 3 only.
    let wave: Vec<f32> = (0..16)
        .map(|j| (2.0 * std::f32::consts::PI * 3.0 * j as f32 / 16.0).cos())
        .collect();
    let spectrum = Tensor::from_slice(&wave, [16], &dev)
        .unwrap()
        .rfft(-1)
        .unwrap();
    let magnitude = read(&spectrum.abs().unwrap()).await;
    for (k, m) in magnitude.iter().enumerate() {
        let want = if k == 3 { 8.0 } else { 0.0 };
        assert!((m - want).abs() < 1e-4, "|X[{k}]| = {m}");
    }
    // Prime lengths (Bluestein's algorithm, in one kernel), one past the
    // kernel's line (the four-step algorithm), and a strided view, against
    // the CPU.
    for (n, rows) in [(17usize, 3usize), (1021, 2), (4096, 2), (100, 5)] {
        let values: Vec<f32> = (0..n * rows)
            .map(|k| ((k * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let x = Tensor::from_slice(&values, [rows, n], &cpu).unwrap();
        let gx = x.to_device_async(&dev).await.unwrap();
        let views = |t: &Tensor| [t.clone(), t.slice(s![..;-1, ..;2]).unwrap()];
        for (view, gpu_view) in views(&x).iter().zip(views(&gx)) {
            let want = view.fft(-1).unwrap();
            let got = gpu_view.fft(-1).unwrap();
            let parts =
                |z: &Tensor| Tensor::concat(&[&z.real().unwrap(), &z.imag().unwrap()], 0).unwrap();
            let got = read(&parts(&got)).await;
            let want = parts(&want).to_vec_async::<f32>().await.unwrap();
            let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-4 * scale, "fft of {n}: {g} against {w}");
            }
        }
    }
}

#[wasm_bindgen_test]
async fn convolution_pooling_and_resizing_match_the_cpu_path() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let values = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|k| (((k + seed) * 37 % 101) as f32 - 50.0) / 50.0)
            .collect()
    };
    let x = Tensor::from_slice(&values(2 * 8 * 9 * 7, 1), [2, 8, 9, 7], &cpu).unwrap();
    let w = Tensor::from_slice(&values(6 * 4 * 3 * 3, 2), [6, 4, 3, 3], &cpu).unwrap();
    let dw = Tensor::from_slice(&values(8 * 3 * 3, 3), [8, 1, 3, 3], &cpu).unwrap();
    let (gx, gw, gdw) = (
        x.to_device_async(&dev).await.unwrap(),
        w.to_device_async(&dev).await.unwrap(),
        dw.to_device_async(&dev).await.unwrap(),
    );
    type Op = fn(&Tensor, &Tensor, &Tensor) -> Tensor;
    let ops: [(&str, Op); 12] = [
        // One kernel over the output's phases (unprobed in a browser).
        ("conv_transpose2d", |x, _, dw| {
            let conv = Conv::new().stride(2).padding(1).output_padding(1);
            x.conv_transpose2d(dw, &conv).unwrap()
        }),
        ("conv_transpose1d", |x, _, dw| {
            let row = |t: &Tensor| t.narrow(2, 0, 1).unwrap().squeeze_axis(2).unwrap();
            let conv = Conv::new().stride(3).padding(1);
            row(x).conv_transpose1d(&row(dw), &conv).unwrap()
        }),
        ("grouped conv_transpose2d", |x, _, dw| {
            let conv = Conv::new().groups(4).stride([3, 2]).dilation([1, 2]);
            x.conv_transpose2d(dw, &conv).unwrap()
        }),
        ("grouped conv2d", |x, w, _| {
            x.conv2d(w, &Conv::new().groups(2).stride(2).padding(1))
                .unwrap()
        }),
        ("depthwise conv2d", |x, _, dw| {
            x.conv2d(dw, &Conv::new().groups(8).same()).unwrap()
        }),
        ("max_pool2d", |x, _, _| {
            x.max_pool2d(&Pool::new(3).stride(2).ceil_mode(true))
                .unwrap()
        }),
        ("avg_pool2d", |x, _, _| {
            x.avg_pool2d(&Pool::new(2).padding(1)).unwrap()
        }),
        // Bins of one, two and three lengths, found in the kernel.
        ("adaptive_avg_pool2d", |x, _, _| {
            x.transpose(2, 3)
                .unwrap()
                .adaptive_avg_pool2d([3, 4])
                .unwrap()
        }),
        ("resize", |x, _, _| {
            x.resize([5, 11], Resize::Bilinear).unwrap()
        }),
        ("resize nearest", |x, _, _| {
            x.resize_by([1.5, 0.7], Resize::Nearest).unwrap()
        }),
        ("resize align corners", |x, _, _| {
            x.flip(&[3])
                .unwrap()
                .resize([9, 4], Resize::BilinearAlignCorners)
                .unwrap()
        }),
        ("resize antialiased", |x, _, _| {
            x.resize([3, 13], Resize::BilinearAntialias).unwrap()
        }),
    ];
    for (name, op) in ops {
        let want = op(&x, &w, &dw).to_vec_async::<f32>().await.unwrap();
        let got = read(&op(&gx, &gw, &gdw)).await;
        close(&got, &want, name);
    }
}

/// A browser's GPU takes `pow` of non-integer exponents in float-float
/// arithmetic within an ulp of powf (the error-free transforms survive
/// its shader compiler), where exp2(b log2 a) in f32 was tens of ulp off.
#[wasm_bindgen_test]
async fn pow_is_within_an_ulp_of_powf() {
    let dev = gpu().await;
    // The last three: integer exponents with subnormal results and base.
    let a = [
        1.000_000_1f32,
        10.0,
        2.0,
        1e-40,
        0.999_999_94,
        3.4e38,
        7.5,
        2.0,
        3.0,
        1e-40,
    ];
    let b = [
        5e8f32,
        38.5,
        0.5,
        1.0 / 3.0,
        -1.5e9,
        -1.01,
        2.5,
        -140.0,
        -90.0,
        1.0,
    ];
    let got = Tensor::from_slice(&a, [10], &dev)
        .unwrap()
        .pow(&Tensor::from_slice(&b, [10], &dev).unwrap())
        .unwrap();
    for ((g, x), y) in read(&got).await.into_iter().zip(a).zip(b) {
        let want = x.powf(y);
        let apart = (g.to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(apart <= 1, "{x:e}^{y:e}: {g:e}, powf {want:e}");
    }
}

/// layer_norm, rms_norm, group_norm and batch_norm on a browser's GPU (one
/// kernel each) against the CPU path.
#[wasm_bindgen_test]
async fn normalisations_match_the_cpu_path() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let values: Vec<f32> = (0..3 * 200)
        .map(|k| ((k * 37 % 101) as f32) * 0.1 - 3.0)
        .collect();
    let x = Tensor::from_slice(&values, [3, 200], &cpu).unwrap();
    let w = Tensor::from_vec(
        (0..200).map(|k| 1.0 + k as f32 * 0.01).collect(),
        [200],
        &cpu,
    )
    .unwrap();
    let b = Tensor::from_vec((0..200).map(|k| k as f32 * -0.02).collect(), [200], &cpu).unwrap();
    let (gx, gw, gb) = (
        x.to_device_async(&dev).await.unwrap(),
        w.to_device_async(&dev).await.unwrap(),
        b.to_device_async(&dev).await.unwrap(),
    );
    let want = x.layer_norm(&[200], Some(&w), Some(&b), 1e-5).unwrap();
    let got = gx.layer_norm(&[200], Some(&gw), Some(&gb), 1e-5).unwrap();
    close(
        &read(&got).await,
        &want.to_vec_async::<f32>().await.unwrap(),
        "layer_norm",
    );
    let want = x.rms_norm(&[200], Some(&w), None).unwrap();
    let got = gx.rms_norm(&[200], Some(&gw), None).unwrap();
    close(
        &read(&got).await,
        &want.to_vec_async::<f32>().await.unwrap(),
        "rms_norm",
    );
    // group_norm (one kernel) and batch_norm (one fused chain) over
    // (1, 200 channels, 3) in 8 groups.
    let (x, gx) = (x.transpose(0, 1).unwrap(), gx.transpose(0, 1).unwrap());
    let (x, gx) = (x.unsqueeze(0).unwrap(), gx.unsqueeze(0).unwrap());
    let want = x.group_norm(8, Some(&w), Some(&b), 1e-5).unwrap();
    let got = gx.group_norm(8, Some(&gw), Some(&gb), 1e-5).unwrap();
    close(
        &read(&got).await,
        &want.to_vec_async::<f32>().await.unwrap(),
        "group_norm",
    );
    let var = w.mul(&w).unwrap();
    let gvar = gw.mul(&gw).unwrap();
    let want = x.batch_norm(&b, &var, Some(&w), Some(&b), 1e-5).unwrap();
    let got = gx
        .batch_norm(&gb, &gvar, Some(&gw), Some(&gb), 1e-5)
        .unwrap();
    close(
        &read(&got).await,
        &want.to_vec_async::<f32>().await.unwrap(),
        "batch_norm",
    );
    // Two lines of 20,000: split over workgroups (a statistics kernel and
    // an apply kernel), layer and RMS.
    let long: Vec<f32> = (0..2 * 20_000)
        .map(|k| ((k * 37 % 1001) as f32) * 0.01 + 2.0)
        .collect();
    let x = Tensor::from_slice(&long, [2, 20_000], &cpu).unwrap();
    let gx = x.to_device_async(&dev).await.unwrap();
    let want = x.layer_norm(&[20_000], None, None, 1e-5).unwrap();
    let got = gx.layer_norm(&[20_000], None, None, 1e-5).unwrap();
    let want = want.to_vec_async::<f32>().await.unwrap();
    close(&read(&got).await, &want, "split layer_norm");
    let want = x.rms_norm(&[20_000], None, None).unwrap();
    let got = gx.rms_norm(&[20_000], None, None).unwrap();
    let want = want.to_vec_async::<f32>().await.unwrap();
    close(&read(&got).await, &want, "split rms_norm");
}

/// Yields to the page's event loop (a macrotask: the browser's own tasks,
/// a device's lost promise among them, run first).
async fn next_task() {
    use wasm_bindgen::JsCast;
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into())
            .expect("setTimeout")
            .dyn_into::<js_sys::Function>()
            .expect("a function");
        set_timeout
            .call2(&global, &resolve, &0.into())
            .expect("setTimeout(resolve, 0)");
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("the timer");
}

#[wasm_bindgen_test]
async fn a_destroyed_device_is_lost_and_every_call_fails_at_once() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dev = gpu().await;
    let heard = Arc::new(AtomicUsize::new(0));
    let h = heard.clone();
    dev.on_lost(move |reason| {
        assert!(reason.contains("destroyed"), "{reason}");
        h.fetch_add(1, Ordering::SeqCst);
    });
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev).unwrap();
    let b = a.exp().unwrap();
    assert_eq!(read(&b).await.len(), 3);
    // Ops pending when the device goes fail at their readback.
    let pending = b.mul_scalar(2.0).unwrap();
    let (device, _) = dev.wgpu().expect("a GPU");
    device.destroy();
    let read_pending = pending.to_vec_async::<f32>().await;
    assert!(
        matches!(read_pending, Err(Error::DeviceLost { .. })),
        "{read_pending:?}"
    );
    next_task().await;
    assert!(dev.is_lost());
    assert_eq!(heard.load(Ordering::SeqCst), 1);
    let lost = |r: Result<Tensor, Error>, op: &str| match r {
        Err(Error::DeviceLost { op: got, .. }) => assert_eq!(got, op),
        other => panic!("{op}: {other:?}"),
    };
    lost(a.add(&b), "add");
    lost(a.sum(..), "sum");
    lost(Tensor::zeros([4], DType::F32, &dev), "zeros");
    assert!(matches!(
        b.to_vec_async::<f32>().await,
        Err(Error::DeviceLost { op: "to_vec", .. })
    ));
    assert!(matches!(
        dev.sync_async().await,
        Err(Error::DeviceLost { op: "sync", .. })
    ));
}

#[wasm_bindgen_test]
async fn a_destroyed_device_recovers_with_its_kept_tensors() {
    use webtensor::Persist;
    let dev = gpu().await;
    dev.set_persist(Persist::HostCopy);
    let weights = Tensor::from_slice(&[1.5f32, -2.0, 0.25, 8.0], [2, 2], &dev).unwrap();
    dev.set_persist(Persist::Nothing);
    let state = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
    state.add_(&weights).unwrap();
    state.checkpoint_async().await.unwrap();
    state.add_(&weights).unwrap();
    let plain = Tensor::ones([4], DType::F32, &dev).unwrap();
    let (device, _) = dev.wgpu().expect("a GPU");
    device.destroy();
    assert!(matches!(
        dev.sync_async().await,
        Err(Error::DeviceLost { .. })
    ));
    next_task().await;
    assert!(dev.is_lost());
    dev.recover_async().await.unwrap();
    assert!(!dev.is_lost() && dev.is_gpu());
    assert_eq!(dev.recoveries(), 1);
    assert_eq!(read(&weights).await, [1.5, -2.0, 0.25, 8.0]);
    assert_eq!(read(&state).await, [1.5, -2.0, 0.25, 8.0], "the checkpoint");
    assert!(plain.is_lost());
    assert!(matches!(
        plain.to_vec_async::<f32>().await,
        Err(Error::DeviceLost { .. })
    ));
    // The new device runs ops, the restored tensors' among them.
    let got = state.matmul(&weights).unwrap().add_scalar(1.0).unwrap();
    let cpu = Device::cpu();
    let w = Tensor::from_slice(&[1.5f32, -2.0, 0.25, 8.0], [2, 2], &cpu).unwrap();
    let want = w.matmul(&w).unwrap().add_scalar(1.0).unwrap();
    close(&read(&got).await, &read(&want).await, "after the recovery");
}

#[wasm_bindgen_test]
async fn a_page_that_recovers_by_itself_gets_its_kept_tensors_back() {
    use webtensor::{GpuOptions, Persist};
    let dev = Device::gpu_async_with(GpuOptions {
        auto_recover: Some(true),
        ..Default::default()
    })
    .await
    .expect("the browser's adapter");
    dev.set_persist(Persist::HostCopy);
    let kept = Tensor::from_slice(&[4.0f32, -1.0, 0.5], [3], &dev).unwrap();
    let (device, _) = dev.wgpu().expect("a GPU");
    device.destroy();
    let _ = dev.sync_async().await;
    // The page's event loop tells of the loss, and the recovery runs as a
    // task of its own.
    for _ in 0..1000 {
        if dev.recoveries() == 1 && !dev.is_lost() {
            break;
        }
        next_task().await;
    }
    assert_eq!(dev.recoveries(), 1);
    assert_eq!(read(&kept).await, [4.0, -1.0, 0.5]);
    assert_eq!(read(&kept.mul_scalar(2.0).unwrap()).await, [8.0, -2.0, 1.0]);
}

#[wasm_bindgen_test]
async fn transformer_blocks_gguf_and_special_functions_agree_with_the_cpu() {
    use webtensor::io::{GgmlType, Gguf, GgufValue, GgufWriter};
    use webtensor::{Attention, Rope, RopeStyle};
    let dev = gpu().await;
    let cpu = Device::cpu();
    let x = Tensor::randn([2, 3, 5, 16], DType::F32, 3, &cpu).unwrap();
    let on_gpu = x.to_device_async(&dev).await.unwrap();
    for style in [RopeStyle::HalfSplit, RopeStyle::Interleaved] {
        let here = Rope::new(4, 5, 16, 10000.0, style, &cpu).unwrap();
        let there = Rope::new(0, 9, 16, 10000.0, style, &dev)
            .unwrap()
            .positions(4, 5)
            .unwrap();
        let want = read(&x.rope(&here).unwrap()).await;
        close(&read(&on_gpu.rope(&there).unwrap()).await, &want, "rope");
    }
    let k = Tensor::randn([2, 1, 7, 16], DType::F32, 4, &cpu).unwrap();
    let a = Attention::new().causal();
    let want = read(&x.sdpa(&k, &k, &a).unwrap()).await;
    let k_gpu = k.to_device_async(&dev).await.unwrap();
    close(
        &read(&on_gpu.sdpa(&k_gpu, &k_gpu, &a).unwrap()).await,
        &want,
        "sdpa",
    );
    // A decoding step over 100 keys split over workgroups, a bool mask,
    // in f16: the flash kernel's partial results merged by a second one.
    let long = Tensor::randn([2, 1, 100, 16], DType::F32, 5, &cpu).unwrap();
    let keep = Tensor::rand([1, 100], DType::F32, 6, &cpu)
        .unwrap()
        .lt_scalar(0.7)
        .unwrap();
    let step = x.slice(webtensor::s![.., .., -1.., ..]).unwrap();
    let half = |t: &Tensor| t.to_dtype(DType::F16).unwrap();
    let a = Attention::new().mask(&keep);
    let f32_of = |t: Tensor| t.to_dtype(DType::F32).unwrap();
    let want = read(&f32_of(
        half(&step).sdpa(&half(&long), &half(&long), &a).unwrap(),
    ))
    .await;
    let (long_gpu, keep_gpu) = (
        half(&long).to_device_async(&dev).await.unwrap(),
        keep.to_device_async(&dev).await.unwrap(),
    );
    let a = Attention::new().mask(&keep_gpu);
    let step_gpu = half(&on_gpu.slice(webtensor::s![.., .., -1.., ..]).unwrap());
    let got = read(&f32_of(step_gpu.sdpa(&long_gpu, &long_gpu, &a).unwrap())).await;
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        // Both round one f32 result to f16: at most an f16 step apart.
        assert!(
            (g - w).abs() <= 2e-3 * (1.0 + w.abs()),
            "sdpa decoding step: {g} vs {w}"
        );
    }
    // A GGUF file written and read in the page, its blocks decoded on
    // the host and placed on the GPU.
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", GgufValue::String("llama".into()))
        .unwrap();
    w.add_tensor("x", &on_gpu).unwrap();
    w.add_quantized("q", GgmlType::Q8_0, &on_gpu.reshape([15, 32]).unwrap())
        .unwrap();
    let file = Gguf::from_bytes(w.to_bytes_async().await.unwrap()).unwrap();
    let xs = read(&x).await;
    close(&read(&file.tensor("x", &dev).unwrap()).await, &xs, "gguf");
    let q = file.dequantize("q", DType::F32, &dev).unwrap();
    assert_eq!(q.dims(), &[15, 32]);
    // Sampling and the special functions, as on the CPU.
    let logits = Tensor::randn([3, 20], DType::F32, 8, &cpu).unwrap();
    let u = Tensor::rand([3], DType::F32, 9, &cpu).unwrap();
    let s = webtensor::Sampling::new(0.9).top_k(5).top_p(0.9);
    let want = logits
        .sample_with(&s, &u)
        .unwrap()
        .to_vec_async::<i32>()
        .await
        .unwrap();
    let (l_gpu, u_gpu) = (
        logits.to_device_async(&dev).await.unwrap(),
        u.to_device_async(&dev).await.unwrap(),
    );
    let got = l_gpu
        .sample_with(&s, &u_gpu)
        .unwrap()
        .to_vec_async::<i32>()
        .await
        .unwrap();
    assert_eq!(got, want, "sample");
    let y = logits.mul_scalar(0.5).unwrap();
    let y_gpu = y.to_device_async(&dev).await.unwrap();
    let want = read(&logits.logaddexp(&y).unwrap()).await;
    close(
        &read(&l_gpu.logaddexp(&y_gpu).unwrap()).await,
        &want,
        "logaddexp",
    );
    let want = read(&logits.sinc().unwrap()).await;
    close(&read(&l_gpu.sinc().unwrap()).await, &want, "sinc");
    // Q8_0 keeps each value within half a step of its block's largest / 127.
    for (g, w) in read(&q).await.iter().zip(&xs) {
        assert!((g - w).abs() <= 0.05, "gguf q8_0: {g} vs {w}");
    }
}

#[wasm_bindgen_test]
async fn quantized_products_agree_with_the_cpu() {
    use webtensor::{GgmlType, QTensor};
    let dev = gpu().await;
    let cpu = Device::cpu();
    // Blocks of two types whose scales sit apart (Q4_1's 20-byte blocks
    // at every byte offset, Q6_K's scale at the end), decoded in the
    // page's WGSL without SHADER_F16.
    let w = Tensor::randn([9, 256], DType::F32, 5, &cpu).unwrap();
    let q41 = QTensor::quantize_async(&w, GgmlType::Q4_1).await.unwrap();
    let x = Tensor::randn([3, 256], DType::F32, 6, &cpu).unwrap();
    let x_gpu = x.to_device_async(&dev).await.unwrap();
    let q_gpu = q41.to_device_async(&dev).await.unwrap();
    let want = read(&x.qmatmul(&q41).unwrap()).await;
    near(
        &read(&x_gpu.qmatmul(&q_gpu).unwrap()).await,
        &want,
        "q4_1 qmatmul",
    );
    let bytes: Vec<u8> = (0..9 * 210).map(|i| (i * 13 % 256) as u8).collect();
    let mut bytes = bytes;
    for block in bytes.chunks_exact_mut(210) {
        block[208..210].copy_from_slice(&webtensor::f16::from_f32(0.01).to_le_bytes());
    }
    let q6 = QTensor::from_blocks(GgmlType::Q6_K, [9, 256], &bytes, &cpu).unwrap();
    let q6_gpu = QTensor::from_blocks(GgmlType::Q6_K, [9, 256], &bytes, &dev).unwrap();
    let want = read(&q6.dequantize(DType::F32).unwrap()).await;
    assert_eq!(
        read(&q6_gpu.dequantize(DType::F32).unwrap()).await,
        want,
        "q6_K"
    );
    let want = read(&x.qmatmul(&q6).unwrap()).await;
    near(
        &read(&x_gpu.qmatmul(&q6_gpu).unwrap()).await,
        &want,
        "q6_K qmatmul",
    );
    // A prompt's 40 rows: the tiled kernel, decoding single elements.
    let x = Tensor::randn([40, 256], DType::F32, 7, &cpu).unwrap();
    let x_gpu = x.to_device_async(&dev).await.unwrap();
    for (w, w_gpu, what) in [(&q41, &q_gpu, "q4_1"), (&q6, &q6_gpu, "q6_K")] {
        let want = read(&x.qmatmul(w).unwrap()).await;
        let got = read(&x_gpu.qmatmul(w_gpu).unwrap()).await;
        near(&got, &want, &format!("{what} qmatmul of 40 rows"));
    }
}

/// Sums of 256 products in another order: within 1e-5 of the largest.
fn near(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 * scale * 16.0, "{what}: {g} vs {w}");
    }
}

/// The generator in the browser: the words and uniforms of the reference
/// implementation (tests/data/make_random_cases.py) and the wasm CPU's
/// normals, bit for bit, for every float dtype.
#[wasm_bindgen_test]
async fn the_generator_draws_the_same_bits_in_the_browser() {
    use std::collections::HashMap;
    let dev = gpu().await;
    let cpu = Device::cpu();
    let data = include_bytes!("data/random_cases.npz");
    let cases: HashMap<String, Tensor> = webtensor::io::from_npz_bytes(data, &cpu)
        .expect("the cases")
        .into_iter()
        .collect();
    let words: Vec<u32> = cases["seed_words"].to_vec_async().await.unwrap();
    let seed = u64::from(words[0]) | u64::from(words[1]) << 32;
    let n = 4099;
    let bits = Generator::new(seed).bits([n], &dev).unwrap();
    let want: Vec<u32> = cases["bits"].to_vec_async().await.unwrap();
    assert_eq!(bits.to_vec_async::<u32>().await.unwrap(), want);
    let uniform = Generator::new(seed).rand([n], DType::F32, &dev).unwrap();
    let want: Vec<f32> = cases["rand_f32"].to_vec_async().await.unwrap();
    assert_eq!(uniform.to_vec_async::<f32>().await.unwrap(), want);
    let range: Vec<i64> = cases["int_odd_range"].to_vec_async().await.unwrap();
    let ints = Generator::new(seed).randint([n], range[0], range[1], DType::I64, &dev);
    let want: Vec<i64> = cases["int_odd"].to_vec_async().await.unwrap();
    assert_eq!(ints.unwrap().to_vec_async::<i64>().await.unwrap(), want);
    // Normals in every float dtype, read as f32 (exact for f16 and bf16).
    let normals = |d: &Device, dtype| {
        let t = Generator::new(seed)
            .normal([n], 0.25, 2.0, dtype, d)
            .unwrap();
        t.to_dtype(DType::F32).unwrap()
    };
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let got = normals(&dev, dtype).to_vec_async::<f32>().await.unwrap();
        let want = normals(&cpu, dtype).to_vec_async::<f32>().await.unwrap();
        assert_eq!((got.len(), want.len()), (n, n));
        let same = got
            .iter()
            .zip(&want)
            .all(|(g, w)| g.to_bits() == w.to_bits());
        assert!(same, "normals in {dtype}");
    }
}

/// Searching and counting in the browser: NumPy's answers
/// (tests/data/make_counting_cases.py) from the search and count kernels.
#[wasm_bindgen_test]
async fn searches_and_counts_give_numpys_answers_in_the_browser() {
    use std::collections::HashMap;
    let dev = gpu().await;
    let cpu = Device::cpu();
    let data = include_bytes!("data/counting_cases.npz");
    let cases: HashMap<String, Tensor> = webtensor::io::from_npz_bytes(data, &cpu)
        .expect("the cases")
        .into_iter()
        .collect();
    let on = |name: &str| cases[name].to_device_async(&dev);
    let want = |name: &str| cases[name].to_vec_async::<i64>();
    let sorted = on("sorted_f32").await.unwrap();
    let values = on("values_f32").await.unwrap();
    let got = sorted
        .searchsorted(&values, webtensor::Side::Right)
        .unwrap();
    assert_eq!(
        got.to_vec_async::<i64>().await.unwrap(),
        want("f32_right").await.unwrap()
    );
    let x = on("digitize_x").await.unwrap();
    let bins = on("bins_down").await.unwrap();
    let got = x.digitize(&bins, true).unwrap();
    assert_eq!(
        got.to_vec_async::<i64>().await.unwrap(),
        want("digitize_down_1").await.unwrap()
    );
    let ints = on("bincount_x").await.unwrap();
    let got = ints.bincount_async(None, 80).await.unwrap();
    assert_eq!(
        got.to_vec_async::<i64>().await.unwrap(),
        want("bincount_min80").await.unwrap()
    );
    let data = on("hist_data").await.unwrap();
    let (counts, edges) = data.histogram_async(17, None, None, false).await.unwrap();
    assert_eq!(
        counts.to_vec_async::<i64>().await.unwrap(),
        want("hist_auto").await.unwrap()
    );
    let want_edges: Vec<f32> = cases["hist_auto_edges"].to_vec_async().await.unwrap();
    assert_eq!(edges.to_vec_async::<f32>().await.unwrap(), want_edges);
    let cube = on("cube").await.unwrap();
    let at = cube.argwhere_async().await.unwrap();
    assert_eq!(
        at.to_vec_async::<i64>().await.unwrap(),
        want("cube_argwhere").await.unwrap()
    );
    let ints = on("uniq_i64").await.unwrap();
    let all = ints.unique_all_async().await.unwrap();
    assert_eq!(
        all.values.to_vec_async::<i64>().await.unwrap(),
        want("uniq_i64_values").await.unwrap()
    );
    assert_eq!(
        all.counts.to_vec_async::<i64>().await.unwrap(),
        want("uniq_i64_counts").await.unwrap()
    );
}

/// lgamma, digamma, erfinv, erfc and i0 in the browser, against the wasm CPU's
/// (computed in f64 and rounded): within the bounds lavapipe is tested to.
#[wasm_bindgen_test]
async fn special_functions_in_the_browser() {
    let dev = gpu().await;
    let cpu = Device::cpu();
    let xs: Vec<f32> = (1..400).map(|k| k as f32 * 0.071 - 10.0).collect();
    // erfinv's whole range: its tail polynomial takes 1 - |y| below 0.0034.
    let mut ys: Vec<f32> = (1..400).map(|k| k as f32 / 400.0 * 1.99 - 0.995).collect();
    ys.extend([0.999, -0.9999, 0.99999, 0.9999999]);
    let cases = [
        ("lgamma", &xs),
        ("digamma", &xs),
        ("erfinv", &ys),
        ("erfc", &xs),
        ("i0", &xs),
    ];
    for (name, input) in cases {
        let run = |t: &Tensor| match name {
            "lgamma" => t.lgamma(),
            "digamma" => t.digamma(),
            "erfc" => t.erfc(),
            "i0" => t.i0(),
            _ => t.erfinv(),
        };
        let on = |d: &Device| Tensor::from_slice(input, [input.len()], d).unwrap();
        let got = run(&on(&dev)).unwrap().to_vec_async::<f32>().await.unwrap();
        let want = run(&on(&cpu)).unwrap().to_vec_async::<f32>().await.unwrap();
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            // Below 0 the reflection's terms set the scale (tested
            // natively); here a relative 2e-5 of the larger of 1 and |w|.
            let close =
                (g - w).abs() <= 2e-5 * w.abs().max(1.0) || (g.is_nan() && w.is_nan()) || g == w;
            assert!(close, "{name}({}) = {g}, want {w}", input[k]);
        }
    }
}

/// solve (LU past one block), cholesky_async and a singular matrix's
/// Error::LinAlg in the browser, against the wasm CPU's answers.
#[wasm_bindgen_test]
async fn linear_algebra_in_the_browser() {
    use webtensor::linalg::{self, Triangle};
    let dev = gpu().await;
    let cpu = Device::cpu();
    let n = 70;
    let data: Vec<f32> = (0..n * n)
        .map(|k| ((k * 37 % 101) as f32 - 50.0) / 25.0 + if k % (n + 1) == 0 { 8.0 } else { 0.0 })
        .collect();
    let rhs: Vec<f32> = (0..n * 2).map(|k| (k % 7) as f32 - 3.0).collect();
    let on = |d: &Device| {
        let a = Tensor::from_slice(&data, [n, n], d).unwrap();
        (a.clone(), Tensor::from_slice(&rhs, [n, 2], d).unwrap())
    };
    let (a_gpu, b_gpu) = on(&dev);
    let (a_cpu, b_cpu) = on(&cpu);
    let got = linalg::solve_async(&a_gpu, &b_gpu).await.unwrap();
    let want = linalg::solve_async(&a_cpu, &b_cpu).await.unwrap();
    let got = got.to_vec_async::<f32>().await.unwrap();
    let want = want.to_vec_async::<f32>().await.unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "solve: {g} against {w}"
        );
    }
    let spd_gpu = a_gpu.matmul(&a_gpu.transpose(0, 1).unwrap()).unwrap();
    let spd_cpu = a_cpu.matmul(&a_cpu.transpose(0, 1).unwrap()).unwrap();
    let l_gpu = linalg::cholesky_async(&spd_gpu, Triangle::Lower)
        .await
        .unwrap();
    let l_cpu = linalg::cholesky_async(&spd_cpu, Triangle::Lower)
        .await
        .unwrap();
    let got = l_gpu.to_vec_async::<f32>().await.unwrap();
    let want = l_cpu.to_vec_async::<f32>().await.unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "cholesky: {g} against {w}"
        );
    }
    let singular = Tensor::from_slice(&[1.0f32, 2.0, 2.0, 4.0], [2, 2], &dev).unwrap();
    let err = linalg::inv_async(&singular).await.unwrap_err();
    assert!(
        matches!(err, webtensor::Error::LinAlg { op: "inv", .. }),
        "{err:?}"
    );
}

/// qr, svdvals and eigh in the browser against the wasm CPU's.
#[wasm_bindgen_test]
async fn factorizations_by_reflections_and_rotations_in_the_browser() {
    use webtensor::linalg::{self, QrMode, Triangle};
    let dev = gpu().await;
    let cpu = Device::cpu();
    let (n, m) = (40, 12);
    let data: Vec<f32> = (0..n * m)
        .map(|k| ((k * 29 % 83) as f32 - 41.0) / 13.0)
        .collect();
    let on = |d: &Device| Tensor::from_slice(&data, [n, m], d).unwrap();
    let close = |got: Vec<f32>, want: Vec<f32>, what: &str| {
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 2e-4 * w.abs().max(1.0),
                "{what}: {g} against {w}"
            );
        }
    };
    let (_, r_gpu) = linalg::qr(&on(&dev), QrMode::Reduced).unwrap();
    let (_, r_cpu) = linalg::qr(&on(&cpu), QrMode::Reduced).unwrap();
    close(
        r_gpu.to_vec_async::<f32>().await.unwrap(),
        r_cpu.to_vec_async::<f32>().await.unwrap(),
        "qr",
    );
    let s_gpu = linalg::svdvals_async(&on(&dev)).await.unwrap();
    let s_cpu = linalg::svdvals_async(&on(&cpu)).await.unwrap();
    let s_gpu = s_gpu.to_vec_async::<f32>().await.unwrap();
    let s_cpu = s_cpu.to_vec_async::<f32>().await.unwrap();
    close(s_gpu, s_cpu, "svdvals");
    let sym = |d: &Device| {
        let a = on(d);
        a.transpose(0, 1).unwrap().matmul(&a).unwrap()
    };
    let w_gpu = linalg::eigvalsh_async(&sym(&dev), Triangle::Lower)
        .await
        .unwrap();
    let w_cpu = linalg::eigvalsh_async(&sym(&cpu), Triangle::Lower)
        .await
        .unwrap();
    close(
        w_gpu.to_vec_async::<f32>().await.unwrap(),
        w_cpu.to_vec_async::<f32>().await.unwrap(),
        "eigvalsh",
    );
}

/// `pad`'s copies of views (`Edge`, `Reflect`, `Wrap`: the middle and each
/// band from a view of the tensor) in the browser, of a transposed view,
/// against the CPU's; and a reflection wider than its axis, which gathers.
#[wasm_bindgen_test]
async fn pads_copy_views_as_the_cpu_pads() {
    use webtensor::PadMode;
    let dev = gpu().await;
    let cpu = Device::cpu();
    let values: Vec<f32> = (0..60).map(|k| (k * 7 % 61) as f32).collect();
    let x = Tensor::from_slice(&values, [3, 5, 4], &cpu).unwrap();
    let gx = x.to_device_async(&dev).await.unwrap();
    let cases: [(PadMode, &[(usize, usize)]); 4] = [
        (PadMode::Edge, &[(2, 1), (0, 6)]),
        (PadMode::Reflect, &[(1, 2), (3, 3)]),
        (PadMode::Wrap, &[(4, 0), (5, 1)]),
        (PadMode::Reflect, &[(0, 0), (9, 2)]),
    ];
    for (mode, widths) in cases {
        let want = x.transpose(1, 2).unwrap().pad(widths, mode).unwrap();
        let got = gx.transpose(1, 2).unwrap().pad(widths, mode).unwrap();
        assert_eq!(got.dims(), want.dims());
        let want = want.to_vec_async::<f32>().await.unwrap();
        close(&read(&got).await, &want, &format!("{mode:?} {widths:?}"));
    }
}
