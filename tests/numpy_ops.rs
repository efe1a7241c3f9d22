//! The ops a NumPy user reaches for first, on every device (CPU, GPU with
//! native f16, GPU with packed f16) and views of every layout, against
//! references written here or NumPy's own outputs: tan/log1p/expm1/log2/
//! exp2, floor_divide, isnan/isinf/isfinite, clamp, isclose/allclose, roll,
//! pad, diagonal/diag/triu/tril, norm, the `_like` constructors, linspace.

mod common;

use common::{devices, read_f32, views_of};
use webtensor::{DType, Device, PadMode, Tensor, s};

const SPECIAL: [f32; 12] = [
    0.0,
    -0.0,
    1e-7,
    -1e-7,
    1e-40,
    0.5,
    -0.75,
    3.0,
    -20.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
];

type Reference = fn(f64) -> f64;
type Unary = fn(&Tensor) -> webtensor::Result<Tensor>;

fn unary_cases() -> Vec<(&'static str, Unary, Reference)> {
    vec![
        ("tan", Tensor::tan, f64::tan),
        ("log1p", Tensor::log1p, f64::ln_1p),
        ("expm1", Tensor::expm1, f64::exp_m1),
        ("log2", Tensor::log2, f64::log2),
        ("exp2", Tensor::exp2, f64::exp2),
        ("log", Tensor::log, f64::ln),
        ("erf", Tensor::erf, libm::erf),
    ]
}

/// Whether `got` is `want` within `rel` (NaN matches NaN, infinities exactly).
fn near(got: f32, want: f64, rel: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got as f64 == want;
    }
    (got as f64 - want).abs() <= rel * want.abs().max(1e-30)
}

#[test]
fn new_float_functions_on_every_view_and_special_values() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let rel = common::half_tol(dtype, 2e-3, 2e-6) as f64;
            for (name, f, reference) in unary_cases() {
                for (view, x) in views_of(&dev, dtype) {
                    let got = read_f32(&f(&x).unwrap());
                    for (k, (&g, &v)) in got.iter().zip(&read_f32(&x)).enumerate() {
                        let want = common::round_to(dtype, reference(v as f64)) as f64;
                        // Near its poles tan amplifies the argument
                        // reduction's rounding: by its condition number,
                        // |x| (1 + tan^2) / |tan|, times a few f32 ulps
                        // (not 20 times the tolerance everywhere: 32% in
                        // bf16).
                        let rel = if name == "tan" {
                            let (x, t) = (f64::from(v), f64::from(v).tan());
                            let condition = x.abs() * (1.0 + t * t) / t.abs().max(1e-300);
                            rel + condition * 2f64.powi(-21)
                        } else {
                            rel
                        };
                        assert!(
                            near(g, want, rel),
                            "{dev} {dtype} {name} {view} [{k}] of {v}: got {g}, want {want}"
                        );
                    }
                }
                let x = Tensor::from_slice(&SPECIAL, [SPECIAL.len()], &dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap();
                let got = read_f32(&f(&x).unwrap());
                for (&g, &v) in got.iter().zip(&read_f32(&x)) {
                    let want = common::round_to(dtype, reference(v as f64)) as f64;
                    // WGSL lets a GPU flush a subnormal to zero.
                    let flushed = common::round_to(dtype, reference(0.0)) as f64;
                    let ok = near(g, want, rel)
                        || (v != 0.0 && v.abs() < 1e-38 && near(g, flushed, rel));
                    assert!(ok, "{dev} {dtype} {name}({v:e}): got {g:e}, want {want:e}");
                }
            }
        }
    }
}

#[test]
fn logarithms_of_subnormals_agree_with_the_cpu() {
    // log(1e-40) is -92.1034; a GPU reading the exponent as normal gave -88.
    for dev in devices() {
        let x = Tensor::from_slice(&[1e-40f32, 1e-45, 5e-39], [3], &dev).unwrap();
        for (name, f, reference) in unary_cases() {
            if !matches!(name, "log" | "log2" | "log1p") {
                continue;
            }
            let got: Vec<f32> = f(&x).unwrap().to_vec().unwrap();
            for (&g, v) in got.iter().zip([1e-40f32, 1e-45, 5e-39]) {
                let want = reference(v as f64);
                let flushed = reference(0.0);
                assert!(
                    near(g, want, 1e-5) || (dev.is_gpu() && g as f64 == flushed),
                    "{dev} {name}({v:e}) = {g}, want {want}"
                );
            }
        }
    }
}

/// f32 floor_divide and remainder by subnormal divisors, bit for bit as
/// NumPy's (`tests/data/make_subnormal_floor_divide.py`: (a, b, a // b,
/// a % b) as bits): a GPU took the floor of the rounded quotient, one too
/// large where its fraction rounded away (-1061490 for -1061491), and gave
/// inf // b as inf where NumPy gives NaN. Both operands subnormal, mixed
/// signs, zeros, NaN, quotients past f32's range; then 4,096 more pairs
/// against the CPU, and the identity (a // b) * b + a % b == a where the
/// quotient is below 2^21.
#[test]
fn floor_divide_by_subnormals_follows_numpy() {
    let cases: [(u32, u32, u32, u32); CASES] = [
        (0x0849b20d, 0x800639ef, 0xc9819398, 0x8006345d),
        (0x7f800000, 0x00000001, 0xffc00000, 0xffc00000),
        (0xff800000, 0x8000a000, 0xffc00000, 0xffc00000),
        (0x7fc00000, 0x00000003, 0x7fc00000, 0x7fc00000),
        (0x00000000, 0x80000005, 0x80000000, 0x80000000),
        (0x80000000, 0x00000005, 0x80000000, 0x00000000),
        (0x00000007, 0x00000002, 0x40400000, 0x00000001),
        (0x80000007, 0x00000002, 0xc0800000, 0x00000001),
        (0x00000001, 0x807fffff, 0xbf800000, 0x807ffffe),
        (0x3f800000, 0x00000001, 0x7f800000, 0x00000000),
        (0x7149f2ca, 0x00400000, 0x7f800000, 0x00000000),
        (0x0c000000, 0x00000003, 0x55aaaaab, 0x00000001),
        (0x8f1e54a8, 0x80500321, 0x4e7d4a58, 0x8028b9a5),
        (0x8940af96, 0x006349ab, 0xc8786840, 0x00059f8b),
        (0x00e37515, 0x80266bd9, 0xc0c00000, 0x80031201),
        (0x0e9a1ac7, 0x8000ac89, 0xd164a750, 0x80003668),
        (0x021a6196, 0x0066065f, 0x41400000, 0x000ac03c),
        (0x0d103dc4, 0x0026c9c4, 0x4cedff18, 0x0011f410),
        (0x8b82f3ef, 0x00209f91, 0xcb80736c, 0x000248c7),
        (0x87a67f72, 0x8040950a, 0x4724ff00, 0x800da30a),
        (0x8826b237, 0x807f6c8d, 0x47277300, 0x800dc1a9),
        (0x0b3452fb, 0x804fa392, 0xca90e9d2, 0x804a07e2),
        (0x8775ae1f, 0x001b8f3d, 0xc78ea200, 0x00051534),
        (0x0db81cb6, 0x004e67b3, 0x4d164931, 0x0004ec6a),
        (0x071dbb41, 0x8004912c, 0xc88a25a0, 0x800450bc),
        (0x8f86343f, 0x803baca4, 0x4f0feea1, 0x80379bc4),
        (0x0d2ce797, 0x80508a7c, 0xcc896509, 0x804dc864),
        (0x0442a459, 0x003f998c, 0x43c38000, 0x002ea7ac),
        (0x0fe45bc8, 0x00018278, 0x5217443a, 0x00004c58),
        (0x8f811937, 0x00589482, 0xceba8cc4, 0x0020aa8a),
        (0x0b891e72, 0x002f4cf7, 0x4b398743, 0x00099a5b),
        (0x89e173a6, 0x006a3f01, 0xc907ce80, 0x003d94e8),
    ];
    const CASES: usize = 32;
    let a: Vec<f32> = cases.iter().map(|c| f32::from_bits(c.0)).collect();
    let b: Vec<f32> = cases.iter().map(|c| f32::from_bits(c.1)).collect();
    // More pairs: dividends from 2^-149 to about 2^-60, subnormal divisors.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut more_a = Vec::new();
    let mut more_b = Vec::new();
    for _ in 0..4096 {
        let r = next();
        more_a.push(f32::from_bits(
            (r as u32 % 0x0c00_0000 + 1) | ((r >> 32) as u32 & 0x8000_0000),
        ));
        more_b.push(f32::from_bits(
            ((r >> 33) as u32 % 0x7f_ffff + 1) | ((r >> 20) as u32 & 0x8000_0000),
        ));
    }
    let cpu = Device::cpu();
    let on_cpu = |x: &[f32], y: &[f32]| -> (Vec<f32>, Vec<f32>) {
        let x = Tensor::from_slice(x, [x.len()], &cpu).unwrap();
        let y = Tensor::from_slice(y, [y.len()], &cpu).unwrap();
        (
            x.floor_divide(&y).unwrap().to_vec().unwrap(),
            x.remainder(&y).unwrap().to_vec().unwrap(),
        )
    };
    let (more_q, more_r) = on_cpu(&more_a, &more_b);
    let bits = |v: &[f32]| -> Vec<u32> { v.iter().map(|x| x.to_bits()).collect() };
    for dev in devices() {
        let x = Tensor::from_slice(&a, [a.len()], &dev).unwrap();
        let y = Tensor::from_slice(&b, [b.len()], &dev).unwrap();
        let q: Vec<f32> = x.floor_divide(&y).unwrap().to_vec().unwrap();
        let r: Vec<f32> = x.remainder(&y).unwrap().to_vec().unwrap();
        for (k, c) in cases.iter().enumerate() {
            // Any NaN is NaN (its sign is the device's).
            let same = |got: f32, want: u32| {
                let want = f32::from_bits(want);
                (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
            };
            assert!(
                same(q[k], c.2),
                "{dev}: {} // {}: {}, want {}",
                a[k],
                b[k],
                q[k],
                f32::from_bits(c.2)
            );
            assert!(
                same(r[k], c.3),
                "{dev}: {} % {}: {}, want {}",
                a[k],
                b[k],
                r[k],
                f32::from_bits(c.3)
            );
        }
        let x = Tensor::from_slice(&more_a, [more_a.len()], &dev).unwrap();
        let y = Tensor::from_slice(&more_b, [more_b.len()], &dev).unwrap();
        let q: Vec<f32> = x.floor_divide(&y).unwrap().to_vec().unwrap();
        let r: Vec<f32> = x.remainder(&y).unwrap().to_vec().unwrap();
        assert!(
            bits(&q) == bits(&more_q),
            "{dev}: floor_divide against the CPU"
        );
        assert!(
            bits(&r) == bits(&more_r),
            "{dev}: remainder against the CPU"
        );
        let mut checked = 0;
        for k in 0..more_a.len() {
            let (qa, rb) = (f64::from(q[k]), f64::from(r[k]));
            // Below 2^21 NumPy's quotient (of the rounded a - a % b) is
            // the floor itself, and q * b is exact in f64.
            if q[k].abs() < (1u32 << 21) as f32 {
                let back = qa * f64::from(more_b[k]) + rb;
                assert!(
                    back == f64::from(more_a[k]),
                    "{dev}: {} // {}",
                    more_a[k],
                    more_b[k]
                );
                checked += 1;
            }
        }
        assert!(checked > 1000, "{dev}: {checked} pairs below 2^21");
    }
}

#[test]
fn floor_divide_follows_numpy() {
    let a = [
        7.0f32, -7.0, 7.0, -7.0, 0.0, 1.0, -1.0, 5.5, -5.5, 1e-7, -0.0, 0.0,
    ];
    let b = [
        2.0f32,
        2.0,
        -2.0,
        -2.0,
        3.0,
        0.1,
        f32::INFINITY,
        0.0,
        0.0,
        0.0,
        1.0,
        -1.0,
    ];
    // np.floor_divide on these f32 pairs.
    let want = [
        3.0f32,
        -4.0,
        -4.0,
        3.0,
        0.0,
        9.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::INFINITY,
        -0.0,
        -0.0,
    ];
    let ia = [-7i32, 7, 0, -1, i32::MIN, 9, -9];
    let ib = [2i32, 0, -3, 3, -1, -4, -4];
    for dev in devices() {
        let x = Tensor::from_slice(&a, [a.len()], &dev).unwrap();
        let y = Tensor::from_slice(&b, [b.len()], &dev).unwrap();
        let got: Vec<f32> = x.floor_divide(&y).unwrap().to_vec().unwrap();
        for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w && g.is_sign_negative() == w.is_sign_negative(),
                "{dev} {} // {}: {g}, want {w}",
                a[k],
                b[k]
            );
        }
        let nan: Vec<f32> =
            Tensor::from_slice(&[f32::INFINITY, f32::NAN, f32::NEG_INFINITY], [3], &dev)
                .unwrap()
                .floor_divide_scalar(1.0)
                .unwrap()
                .to_vec()
                .unwrap();
        assert!(nan.iter().all(|v| v.is_nan()), "{dev}: {nan:?}");
        let x = Tensor::from_slice(&ia, [ia.len()], &dev).unwrap();
        let y = Tensor::from_slice(&ib, [ib.len()], &dev).unwrap();
        let q = x.floor_divide(&y).unwrap();
        assert_eq!(
            q.to_vec::<i32>().unwrap(),
            [-4, 0, 0, -1, i32::MIN, -3, 2],
            "{dev}"
        );
        // a == (a // b) * b + a % b wherever b != 0.
        let back = q.mul(&y).unwrap().add(&x.remainder(&y).unwrap()).unwrap();
        let back = back.to_vec::<i32>().unwrap();
        for k in 0..ia.len() {
            if ib[k] != 0 {
                assert_eq!(back[k], ia[k], "{dev} {} // {}", ia[k], ib[k]);
            }
        }
        let u = Tensor::from_slice(&[7u8, 200, 3], [3], &dev).unwrap();
        assert_eq!(
            u.floor_divide_scalar(2u8).unwrap().to_vec::<u8>().unwrap(),
            [3, 100, 1]
        );
        // Strided and broadcast operands, f16, in place through a view.
        for (view, v) in views_of(&dev, DType::F16) {
            let got = read_f32(&v.floor_divide_scalar(0.75).unwrap());
            for (&g, &x) in got.iter().zip(&read_f32(&v)) {
                assert_eq!(g, (x / 0.75).floor(), "{dev} {view}: {x} // 0.75");
            }
        }
        let t = Tensor::arange(-6i32, 6, 1, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        t.slice(s![.., ..;-2])
            .unwrap()
            .floor_divide_scalar_(4)
            .unwrap();
        assert_eq!(
            t.to_vec::<i32>().unwrap(),
            [-6, -2, -4, -1, -2, -1, 0, 0, 2, 0, 4, 1],
            "{dev}"
        );
        assert!(
            Tensor::from_slice(&[true], [1], &dev)
                .unwrap()
                .floor_divide_scalar(true)
                .is_err()
        );
    }
}

#[test]
fn float_classes_of_every_dtype() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = Tensor::from_slice(&SPECIAL, [SPECIAL.len()], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let nan = x.isnan().unwrap().to_vec::<bool>().unwrap();
            let inf = x.isinf().unwrap().to_vec::<bool>().unwrap();
            let fin = x.isfinite().unwrap().to_vec::<bool>().unwrap();
            for (k, v) in SPECIAL.iter().enumerate() {
                assert_eq!(
                    (nan[k], inf[k], fin[k]),
                    (v.is_nan(), v.is_infinite(), v.is_finite()),
                    "{dev} {dtype} {v}"
                );
            }
        }
        let i = Tensor::from_slice(&[1i32, -5], [2], &dev)
            .unwrap()
            .broadcast_to([3, 2])
            .unwrap();
        assert_eq!(i.isnan().unwrap().to_vec::<bool>().unwrap(), [false; 6]);
        assert_eq!(i.isfinite().unwrap().dims(), &[3, 2]);
        assert_eq!(i.isfinite().unwrap().to_vec::<bool>().unwrap(), [true; 6]);
        let z = Tensor::from_complex(
            &[
                webtensor::Complex32::new(1.0, f32::NAN),
                webtensor::Complex32::new(f32::INFINITY, 0.0),
                webtensor::Complex32::new(1.0, 2.0),
            ],
            [3],
            &dev,
        )
        .unwrap();
        assert_eq!(
            z.isnan().unwrap().to_vec::<bool>().unwrap(),
            [true, false, false],
            "{dev}"
        );
        assert_eq!(
            z.isinf().unwrap().to_vec::<bool>().unwrap(),
            [false, true, false]
        );
        assert_eq!(
            z.isfinite().unwrap().to_vec::<bool>().unwrap(),
            [false, false, true]
        );
    }
}

#[test]
fn clamp_keeps_nan_and_writes_through_views() {
    for dev in devices() {
        let x = Tensor::from_slice(&[-3.0f32, 0.5, 9.0, f32::NAN], [4], &dev).unwrap();
        let got: Vec<f32> = x.clamp(-1.0, 1.0).unwrap().to_vec().unwrap();
        assert_eq!(&got[..3], [-1.0, 0.5, 1.0], "{dev}");
        assert!(got[3].is_nan());
        // min > max gives max everywhere, as np.clip.
        let got: Vec<f32> = x.clamp(2.0, 1.0).unwrap().to_vec().unwrap();
        assert_eq!(&got[..3], [1.0, 1.0, 1.0]);
        let i = Tensor::arange(0i32, 12, 1, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        i.t().slice(s![..;-1]).unwrap().clamp_(2, 8).unwrap();
        assert_eq!(
            i.to_vec::<i32>().unwrap(),
            [2, 2, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8],
            "{dev}"
        );
        // A float bound computes in f32, as PyTorch's; in place it cannot.
        assert_eq!(i.clamp(0.5, 3).unwrap().dtype(), DType::F32);
        let e = i.clamp_(0.5, 3).unwrap_err().to_string();
        assert!(e.contains("clamp_") && e.contains("0.5"), "{e}");
        let b = Tensor::from_slice(&[true], [1], &dev).unwrap();
        assert!(
            b.clamp(false, true)
                .unwrap_err()
                .to_string()
                .contains("clamp")
        );
        for (view, v) in views_of(&dev, DType::F16) {
            let got = read_f32(&v.clamp(-1.0, 2.0).unwrap());
            let want: Vec<f32> = read_f32(&v).iter().map(|x| x.clamp(-1.0, 2.0)).collect();
            assert_eq!(got, want, "{dev} {view}");
        }
    }
}

#[test]
fn isclose_and_allclose_follow_numpy() {
    for dev in devices() {
        let a = Tensor::from_slice(
            &[1.0f32, 1e10, f32::INFINITY, f32::NAN, 1.0, -0.0],
            [6],
            &dev,
        )
        .unwrap();
        let b = Tensor::from_slice(
            &[
                1.000005f32,
                1.0001e10,
                f32::INFINITY,
                f32::NAN,
                f32::INFINITY,
                0.0,
            ],
            [6],
            &dev,
        )
        .unwrap();
        let close = a
            .isclose(&b, 1e-5, 1e-8, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        assert_eq!(close, [true, false, true, false, false, true], "{dev}");
        let close = a
            .isclose(&b, 1e-5, 1e-8, true)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        assert!(close[3]);
        assert!(!a.allclose(&b, 1e-5, 1e-8, true).unwrap());
        let x = Tensor::from_slice(&[1.0f32, 2.0], [2], &dev).unwrap();
        let y = Tensor::from_slice(&[1.0f32, 2.000001], [2], &dev).unwrap();
        assert!(x.allclose(&y, 1e-5, 1e-8, false).unwrap());
        assert!(
            x.broadcast_to([3, 2])
                .unwrap()
                .allclose(&y, 1e-5, 0.0, false)
                .unwrap()
        );
        let i = Tensor::from_slice(&[100i32, 200], [2], &dev).unwrap();
        let j = Tensor::from_slice(&[101i32, 200], [2], &dev).unwrap();
        assert_eq!(
            i.isclose(&j, 0.0, 1.0, false)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [true, true]
        );
        assert!(!i.allclose(&j, 0.0, 0.5, false).unwrap());
        // i32 with u32 compares in i64.
        let unsigned = i.abs().unwrap().to_dtype(DType::U32).unwrap();
        let close = i.isclose(&unsigned, 1e-5, 1e-8, false).unwrap();
        assert_eq!(close.to_vec::<bool>().unwrap(), [true, true], "{dev}");
        assert!(
            x.isclose(&y, -1.0, 0.0, false)
                .unwrap_err()
                .to_string()
                .contains("isclose")
        );
        let empty = Tensor::zeros([0], DType::F32, &dev).unwrap();
        assert!(empty.allclose(&empty, 1e-5, 1e-8, false).unwrap());
    }
}

#[test]
fn roll_moves_elements_around_each_axis() {
    for dev in devices() {
        for (view, v) in views_of(&dev, DType::F32) {
            let host = read_f32(&v);
            for (shift, axis) in [(1isize, 0isize), (-2, 1), (7, -1), (0, 0), (-9, 0)] {
                let got = read_f32(&v.roll(shift, axis).unwrap());
                let (r, c) = (4usize, 6usize);
                let a = if axis < 0 { axis + 2 } else { axis } as usize;
                let n = [r, c][a] as isize;
                let want: Vec<f32> = (0..r * c)
                    .map(|k| {
                        let (mut i, mut j) = ((k / c) as isize, (k % c) as isize);
                        if a == 0 {
                            i = (i - shift).rem_euclid(n);
                        } else {
                            j = (j - shift).rem_euclid(n);
                        }
                        host[i as usize * c + j as usize]
                    })
                    .collect();
                assert_eq!(got, want, "{dev} {view} roll({shift}, {axis})");
            }
        }
        let empty = Tensor::zeros([0, 3], DType::I32, &dev).unwrap();
        assert_eq!(empty.roll(2, 0).unwrap().dims(), &[0, 3]);
        assert!(empty.roll(1, 2).unwrap_err().to_string().contains("roll"));
    }
}

#[test]
fn pad_in_every_mode_matches_numpy() {
    // np.pad(np.arange(6).reshape(2, 3), ((1, 2), (2, 1)), mode)
    let constant = [
        9, 9, 9, 9, 9, 9, //
        9, 9, 0, 1, 2, 9, //
        9, 9, 3, 4, 5, 9, //
        9, 9, 9, 9, 9, 9, //
        9, 9, 9, 9, 9, 9,
    ];
    let edge = [
        0, 0, 0, 1, 2, 2, //
        0, 0, 0, 1, 2, 2, //
        3, 3, 3, 4, 5, 5, //
        3, 3, 3, 4, 5, 5, //
        3, 3, 3, 4, 5, 5,
    ];
    let reflect = [
        5, 4, 3, 4, 5, 4, //
        2, 1, 0, 1, 2, 1, //
        5, 4, 3, 4, 5, 4, //
        2, 1, 0, 1, 2, 1, //
        5, 4, 3, 4, 5, 4,
    ];
    let wrap = [
        4, 5, 3, 4, 5, 3, //
        1, 2, 0, 1, 2, 0, //
        4, 5, 3, 4, 5, 3, //
        1, 2, 0, 1, 2, 0, //
        4, 5, 3, 4, 5, 3,
    ];
    for dev in devices() {
        // The same matrix through a transposed, reversed view.
        let base = Tensor::from_slice(&[5i32, 2, 4, 1, 3, 0], [3, 2], &dev).unwrap();
        let m = base.t().flip(&[0, 1]).unwrap();
        assert_eq!(m.to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4, 5]);
        for (mode, want) in [
            (PadMode::Constant(9.into()), constant),
            (PadMode::Edge, edge),
            (PadMode::Reflect, reflect),
            (PadMode::Wrap, wrap),
        ] {
            let p = m.pad(&[(1, 2), (2, 1)], mode).unwrap();
            assert_eq!(p.dims(), &[5, 6]);
            assert_eq!(p.to_vec::<i32>().unwrap(), want, "{dev} {mode:?}");
        }
        // Only the last axis, f16, a constant that rounds.
        let h = m.to_dtype(DType::F16).unwrap();
        let p = h.pad(&[(0, 1)], PadMode::Constant(0.1.into())).unwrap();
        assert_eq!(read_f32(&p)[3], half::f16::from_f32(0.1).to_f32(), "{dev}");
        assert!(
            m.pad(&[(1, 1); 3], PadMode::Edge)
                .unwrap_err()
                .to_string()
                .contains("pad")
        );
        let e = m
            .pad(&[(1, 1)], PadMode::Constant(0.5.into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pad") && e.contains("0.5"), "{e}");
        let empty = Tensor::zeros([2, 0], DType::F32, &dev).unwrap();
        common::assert_op_err(empty.pad(&[(1, 1)], PadMode::Reflect), "pad");
        assert_eq!(
            empty
                .pad(&[(1, 1)], PadMode::Constant(1.into()))
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [1.0; 4]
        );
    }
}

#[test]
fn diagonals_and_triangles_on_views_and_batches() {
    for dev in devices() {
        let m = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        assert_eq!(
            m.diagonal(0).unwrap().to_vec::<f32>().unwrap(),
            [0.0, 5.0, 10.0],
            "{dev}"
        );
        assert_eq!(m.diagonal(2).unwrap().to_vec::<f32>().unwrap(), [2.0, 7.0]);
        assert_eq!(m.diagonal(-1).unwrap().to_vec::<f32>().unwrap(), [4.0, 9.0]);
        assert_eq!(m.diagonal(5).unwrap().numel(), 0);
        assert_eq!(
            m.t().diagonal(1).unwrap().to_vec::<f32>().unwrap(),
            [4.0, 9.0]
        );
        // The view writes into the matrix; diag copies.
        let d = m.diag(0).unwrap();
        m.diagonal(0).unwrap().fill_(-1.0).unwrap();
        assert_eq!(d.to_vec::<f32>().unwrap(), [0.0, 5.0, 10.0]);
        assert_eq!(read_f32(&m)[5], -1.0);
        let v = Tensor::from_slice(&[1i32, 2], [2], &dev).unwrap();
        assert_eq!(
            v.diag(1).unwrap().to_vec::<i32>().unwrap(),
            [0, 1, 0, 0, 0, 2, 0, 0, 0],
            "{dev}"
        );
        assert_eq!(
            v.diag(-1).unwrap().to_vec::<i32>().unwrap(),
            [0, 0, 0, 1, 0, 0, 0, 2, 0]
        );
        assert!(v.diagonal(0).unwrap_err().to_string().contains("diagonal"));
        assert!(
            m.unsqueeze(0)
                .unwrap()
                .diag(0)
                .unwrap_err()
                .to_string()
                .contains("diag")
        );

        // Batched triangles of a stepped, reversed view, for each k.
        let base = Tensor::arange(1i32, 1 + 2 * 4 * 10, 1, &dev)
            .unwrap()
            .reshape([2, 4, 10])
            .unwrap();
        let x = base.slice(s![.., .., ..;-2]).unwrap();
        let host = x.to_vec::<i32>().unwrap();
        for k in [-5isize, -1, 0, 2, 9] {
            let up = x.triu(k).unwrap().to_vec::<i32>().unwrap();
            let low = x.tril(k).unwrap().to_vec::<i32>().unwrap();
            for (n, &h) in host.iter().enumerate() {
                let (i, j) = ((n / 5) % 4, n % 5);
                let diff = j as isize - i as isize;
                assert_eq!(up[n], if diff >= k { h } else { 0 }, "{dev} triu({k})");
                assert_eq!(low[n], if diff <= k { h } else { 0 }, "{dev} tril({k})");
            }
        }
        let t = x.to_dtype(DType::F16).unwrap();
        let copy = t.contiguous().unwrap();
        copy.triu_(1).unwrap();
        assert_eq!(read_f32(&copy), read_f32(&t.triu(1).unwrap()), "{dev}");
        let b = Tensor::ones([3, 3], DType::Bool, &dev).unwrap();
        b.tril_(-1).unwrap();
        assert_eq!(
            b.to_vec::<bool>().unwrap(),
            [false, false, false, true, false, false, true, true, false]
        );
        let z = Tensor::complex(&m, &m.neg().unwrap()).unwrap();
        let zt = z.tril(0).unwrap();
        assert_eq!(
            read_f32(&zt.imag().unwrap()),
            read_f32(&m.neg().unwrap().tril(0).unwrap())
        );
        assert!(v.triu(0).unwrap_err().to_string().contains("triu"));
    }
}

#[test]
fn norms_over_axes() {
    let data = [3.0f32, -4.0, 0.0, 12.0, -0.5, 2.0];
    for dev in devices() {
        for (view, x) in views_of(&dev, DType::F32) {
            let host = read_f32(&x);
            for p in [1.0, 2.0, 3.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 0.5] {
                let got = read_f32(&x.norm(p, 1).unwrap());
                for (r, &g) in got.iter().enumerate() {
                    let row: Vec<f64> = host[r * 6..r * 6 + 6]
                        .iter()
                        .map(|v| v.abs() as f64)
                        .collect();
                    let want = if p == f64::INFINITY {
                        row.iter().cloned().fold(0.0, f64::max)
                    } else if p == f64::NEG_INFINITY {
                        row.iter().cloned().fold(f64::INFINITY, f64::min)
                    } else if p == 0.0 {
                        row.iter().filter(|&&v| v != 0.0).count() as f64
                    } else {
                        row.iter().map(|v| v.powf(p)).sum::<f64>().powf(1.0 / p)
                    };
                    assert!(
                        near(g, want, 1e-5),
                        "{dev} {view} p={p} row {r}: {g} vs {want}"
                    );
                }
            }
        }
        let m = Tensor::from_slice(&data, [2, 3], &dev).unwrap();
        let fro: f32 = m.norm(2.0, ..).unwrap().item().unwrap();
        assert!((fro - 13.1624).abs() < 1e-3, "{dev}: {fro}");
        assert_eq!(m.norm_keepdim(2.0, [0, 1]).unwrap().dims(), &[1, 1]);
        // No axes is every axis, as PyTorch's vector_norm(dim=()) (it
        // reduced nothing, as sum does).
        let none: &[isize] = &[];
        let all: f32 = m.norm(2.0, none).unwrap().item().unwrap();
        assert_eq!(all, fro, "{dev}");
        assert_eq!(m.norm_keepdim(1.0, none).unwrap().dims(), &[1, 1]);
        // f16 squares past 65504 do not overflow.
        let h = Tensor::full([4], 300.0, DType::F16, &dev).unwrap();
        let n = h.norm(2.0, ..).unwrap();
        assert_eq!(n.dtype(), DType::F16);
        assert_eq!(read_f32(&n), [600.0], "{dev}");
        let i = Tensor::from_slice(&[3i32, 4], [2], &dev).unwrap();
        assert_eq!(i.norm(2.0, ..).unwrap().item::<f32>().unwrap(), 5.0);
        let z = Tensor::from_complex(&[webtensor::Complex32::new(3.0, 4.0)], [1], &dev).unwrap();
        assert_eq!(z.norm(1.0, ..).unwrap().item::<f32>().unwrap(), 5.0);
        // The 0-norm counts by dtype: c64 where either part is non-zero, f64
        // in f64 (the CPU's), f16 in f16 (torch.linalg.vector_norm(x, 0):
        // 2, 2, and 1 for the f16 values, where -1e-300 is -0).
        let c = webtensor::Complex32::new;
        let z =
            Tensor::from_complex(&[c(3.0, 4.0), c(0.0, 0.0), c(0.0, -1e-3)], [3], &dev).unwrap();
        assert_eq!(z.norm(0.0, ..).unwrap().item::<f32>().unwrap(), 2.0);
        let cpu = Device::cpu();
        let d = Tensor::from_slice(&[0.0f64, -1e-300, 7.0], [3], &cpu).unwrap();
        let n = d.norm(0.0, ..).unwrap();
        assert_eq!((n.dtype(), n.item::<f64>().unwrap()), (DType::F64, 2.0));
        let d = d.to_dtype(DType::F16).unwrap().to_device(&dev).unwrap();
        let n = d.norm(0.0, ..).unwrap();
        assert_eq!((n.dtype(), read_f32(&n)), (DType::F16, vec![1.0]));
        assert!(
            m.norm(f64::NAN, ..)
                .unwrap_err()
                .to_string()
                .contains("norm")
        );
        let empty = Tensor::zeros([0], DType::F32, &dev).unwrap();
        assert_eq!(empty.norm(2.0, ..).unwrap().item::<f32>().unwrap(), 0.0);
        let e = empty.norm(f64::INFINITY, ..).unwrap_err().to_string();
        assert!(e.starts_with("norm"), "{e}");
        // PyTorch 2.15 refuses a negative p over an empty axis (0^(1/p) was
        // inf), even where the output is empty, and takes it over a
        // non-empty axis of an empty tensor, as p = inf.
        for p in [-1.0, -0.5, f64::NEG_INFINITY] {
            for (dims, axis) in [([0usize, 3], 0isize), ([3, 0], 1), ([0, 0], 1)] {
                let t = Tensor::zeros(dims, DType::F32, &dev).unwrap();
                let e = t.norm(p, axis).unwrap_err().to_string();
                assert!(
                    e.starts_with("norm") && e.contains("empty"),
                    "{p} {dims:?}: {e}"
                );
            }
            let t = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
            assert_eq!(t.norm(p, 1).unwrap().dims(), &[0]);
            assert_eq!(t.norm(0.0, 0).unwrap().to_vec::<f32>().unwrap(), [0.0; 3]);
        }
        assert!(m.norm(2.0, 5).unwrap_err().to_string().starts_with("norm"));
    }
}

#[test]
fn like_constructors_and_linspace() {
    for dev in devices() {
        let x = Tensor::zeros([2, 3], DType::F16, &dev).unwrap().t();
        for t in [
            x.zeros_like().unwrap(),
            x.ones_like().unwrap(),
            x.full_like(2.5).unwrap(),
            x.empty_like().unwrap(),
        ] {
            assert_eq!(
                (t.dims(), t.dtype(), t.device()),
                (&[3usize, 2][..], DType::F16, &dev)
            );
            assert!(t.is_contiguous());
        }
        assert_eq!(read_f32(&x.full_like(2.5).unwrap()), [2.5; 6]);
        assert_eq!(read_f32(&x.ones_like().unwrap()), [1.0; 6]);
        // A bool is 1 in any dtype (NumPy's and PyTorch's full_like(x, True)).
        assert_eq!(read_f32(&x.full_like(true).unwrap()), [1.0; 6]);
        let l = Tensor::linspace(0.0, 1.0, 7, DType::F32, &dev).unwrap();
        assert_eq!(
            l.to_vec::<f32>().unwrap(),
            [0.0, 0.16666667, 0.33333334, 0.5, 0.6666667, 0.8333333, 1.0],
            "{dev}"
        );
        let i = Tensor::linspace(-1.0, 1.0, 5, DType::I32, &dev).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), [-1, -1, 0, 0, 1]);
        assert_eq!(
            Tensor::linspace(3.0, 9.0, 1, DType::F32, &dev)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [3.0]
        );
        assert_eq!(
            Tensor::linspace(3.0, 9.0, 0, DType::F32, &dev)
                .unwrap()
                .numel(),
            0
        );
        let e = Tensor::linspace(0.0, f64::NAN, 3, DType::F32, &dev)
            .unwrap_err()
            .to_string();
        assert!(e.contains("linspace"), "{e}");
        common::assert_op_err(Tensor::linspace(0.0, 1.0, 3, DType::Bool, &dev), "linspace");
    }
    let d = Tensor::linspace(1.0, 2.0, 3, DType::F64, &Device::cpu()).unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), [1.0, 1.5, 2.0]);
}

/// `pad` in every mode against NumPy's np.pad (tests/data/make_pad_cases.py):
/// widths of 0, 1, the axis less one, the axis and past it (a reflection
/// or wrap that repeats, which takes the gather; the rest are copies of
/// views), on one, two or three axes; of contiguous, transposed, reversed,
/// stepped, offset and broadcast views; i32, f32, f16, bf16 and u8; every
/// device.
#[test]
fn pad_matches_numpy_in_every_mode_and_view() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pad_cases.npz");
    let cases = webtensor::io::load_npz(path, &Device::cpu()).unwrap();
    let get = |name: &str| &cases.iter().find(|(n, _)| n == name).unwrap().1;
    let x = get("x");
    let count = cases.iter().filter(|(n, _)| n.starts_with("mode_")).count();
    assert_eq!(count, 72);
    let modes = [PadMode::Edge, PadMode::Reflect, PadMode::Wrap];
    for dev in devices() {
        for dtype in [DType::I32, DType::F32, DType::F16, DType::BF16, DType::U8] {
            let v = x.to_dtype(dtype).unwrap().to_device(&dev).unwrap();
            // Views whose values are x's.
            let transposed = v.permute(&[2, 1, 0]).unwrap().contiguous().unwrap();
            let flipped = v.flip(&[0, 2]).unwrap().contiguous().unwrap();
            let big = Tensor::zeros([7, 8, 11], dtype, &dev).unwrap();
            big.slice(s![1..;2, ..;2, 1..;2])
                .unwrap()
                .assign(&v)
                .unwrap();
            let around = Tensor::zeros([5, 6, 8], dtype, &dev).unwrap();
            let inner = around.slice(s![1..4, 2..6, 3..8]).unwrap();
            inner.assign(&v).unwrap();
            let views = [
                ("contiguous", v.clone()),
                ("transposed", transposed.permute(&[2, 1, 0]).unwrap()),
                ("reversed", flipped.flip(&[0, 2]).unwrap()),
                ("stepped", big.slice(s![1..;2, ..;2, 1..;2]).unwrap()),
                ("offset", inner),
            ];
            for k in 0..count {
                let mode = modes[get(&format!("mode_{k}")).item::<i32>().unwrap() as usize];
                let widths = widths_of(get(&format!("widths_{k}")));
                let want = get(&format!("want_{k}")).to_dtype(DType::F32).unwrap();
                let want = want.to_vec::<f32>().unwrap();
                for (name, view) in &views {
                    let got = view.pad(&widths, mode).unwrap();
                    assert_eq!(got.dtype(), dtype);
                    assert_eq!(
                        read_f32(&got),
                        want,
                        "{dev} {dtype} {name} case {k} {mode:?} {widths:?}"
                    );
                }
                // A broadcast view: every row x's first, so every row of
                // the padded tensor NumPy's at x's first row.
                let row = v.narrow(0, 0, 1).unwrap().broadcast_to([3, 4, 5]).unwrap();
                let got = read_f32(&row.pad(&widths, mode).unwrap());
                let want_t = get(&format!("want_{k}"));
                let d = want_t.dims().to_vec();
                let at = if widths.len() == 3 { widths[0].0 } else { 0 };
                let first = want_t.narrow(0, at, 1).unwrap().broadcast_to(d).unwrap();
                let first = read_f32(&first.to_dtype(DType::F32).unwrap());
                assert_eq!(
                    got, first,
                    "{dev} {dtype} broadcast case {k} {mode:?} {widths:?}"
                );
            }
        }
    }
}

/// A case's (before, after) pairs.
fn widths_of(t: &Tensor) -> Vec<(usize, usize)> {
    let v = t.to_vec::<i64>().unwrap();
    v.chunks(2)
        .map(|p| (p[0] as usize, p[1] as usize))
        .collect()
}
