//! Elementwise ops on every device and on every kind of view, against
//! reference values computed here in f64.

mod common;

use common::{assert_close, assert_relative, devices, read_f32, round_to, views_of};
use std::collections::HashMap;
use webtensor::{DType, Device, Tensor, s};

type F = fn(f64) -> f64;
type UnaryCase = (&'static str, fn(&Tensor) -> webtensor::Result<Tensor>, F);
type BinaryCase = (
    &'static str,
    fn(&Tensor, &Tensor) -> webtensor::Result<Tensor>,
    fn(f64, f64) -> f64,
);

/// The float dtypes every float op is checked in, with the relative
/// tolerance of each against an f64 reference rounded to the dtype (f16 on
/// the GPU computes in f16, a few units in its last place; bf16 has three
/// fewer bits).
const FLOAT_TOLERANCES: [(DType, f32); 3] = [
    (DType::F32, 5e-5),
    (DType::F16, 4e-3),
    (DType::BF16, 3.2e-2),
];

/// x (1 + tanh(u)) / 2 as x / (1 + e^-2u), the same function, which keeps
/// its digits in f64 where 1 + tanh(u) cancels (negative x).
fn gelu_tanh(x: f64) -> f64 {
    let u = 0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * u).exp())
}

#[test]
fn unary_float_ops_on_every_layout() {
    let cases: Vec<UnaryCase> = vec![
        ("neg", Tensor::neg, |x| -x),
        ("abs", Tensor::abs, f64::abs),
        ("exp", Tensor::exp, f64::exp),
        ("log", |t| t.abs()?.log(), |x| x.abs().ln()),
        ("sqrt", |t| t.abs()?.sqrt(), |x| x.abs().sqrt()),
        ("rsqrt", |t| t.abs()?.rsqrt(), |x| 1.0 / x.abs().sqrt()),
        ("sin", Tensor::sin, f64::sin),
        ("cos", Tensor::cos, f64::cos),
        ("tanh", Tensor::tanh, f64::tanh),
        ("sigmoid", Tensor::sigmoid, |x| 1.0 / (1.0 + (-x).exp())),
        ("relu", Tensor::relu, |x| x.max(0.0)),
        ("gelu", Tensor::gelu, |x| {
            x / 2.0 * (1.0 + libm::erf(x / 2f64.sqrt()))
        }),
        ("gelu_tanh", Tensor::gelu_tanh, gelu_tanh),
        ("erf", Tensor::erf, libm::erf),
        ("silu", Tensor::silu, |x| x / (1.0 + (-x).exp())),
        ("floor", Tensor::floor, f64::floor),
        ("ceil", Tensor::ceil, f64::ceil),
        ("round", Tensor::round, f64::round_ties_even),
        ("sign", Tensor::sign, |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        ("recip", Tensor::recip, |x| 1.0 / x),
        ("square", Tensor::square, |x| x * x),
    ];
    for dev in devices() {
        for (dtype, tol) in FLOAT_TOLERANCES {
            for (view_name, input) in views_of(&dev, dtype) {
                let x = read_f32(&input);
                for (name, op, reference) in &cases {
                    let out = op(&input).unwrap();
                    assert_eq!(out.dtype(), dtype, "{name}");
                    let want: Vec<f32> = x
                        .iter()
                        .map(|&v| round_to(dtype, reference(v as f64)))
                        .collect();
                    let what = format!("{name} on {dtype} {view_name} ({dev})");
                    if *name == "gelu" {
                        // PyTorch's form, (x / 2) (1 + erf(x / sqrt 2)),
                        // cancels for negative x: within an ulp of 1
                        // times |x| / 2, not of the value.
                        assert_close(&read_f32(&out), &want, tol, &what);
                    } else {
                        assert_relative(&read_f32(&out), &want, tol, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn binary_ops_broadcast_over_every_layout() {
    let cases: Vec<BinaryCase> = vec![
        ("add", Tensor::add, |a, b| a + b),
        ("sub", Tensor::sub, |a, b| a - b),
        ("mul", Tensor::mul, |a, b| a * b),
        ("div", Tensor::div, |a, b| a / b),
        ("maximum", Tensor::maximum, f64::max),
        ("minimum", Tensor::minimum, f64::min),
        ("remainder", Tensor::remainder, |a, b| {
            a - b * (a / b).floor()
        }),
        ("pow", |a, b| a.abs()?.pow(b), |a, b| a.abs().powf(b)),
        ("atan2", Tensor::atan2, f64::atan2),
    ];
    for dev in devices() {
        for (dtype, tol) in FLOAT_TOLERANCES {
            // A [6] row broadcast against each [4, 6] view.
            let row = Tensor::from_slice(&[1.5f32, -2.0, 0.75, 3.0, -0.5, 2.5], [6], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let r = read_f32(&row);
            for (view_name, input) in views_of(&dev, dtype) {
                let x = read_f32(&input);
                for (name, op, reference) in &cases {
                    let want: Vec<f32> = x
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| round_to(dtype, reference(v as f64, r[i % 6] as f64)))
                        .collect();
                    let what = format!("{name} on {dtype} {view_name} ({dev})");
                    assert_relative(&read_f32(&op(&input, &row).unwrap()), &want, tol, &what);
                }
            }
        }
    }
}

#[test]
fn scalar_forms_and_comparisons() {
    for dev in devices() {
        let t = Tensor::from_slice(&[1.0f32, -2.0, 3.0, f32::NAN], [4], &dev).unwrap();
        assert_close(
            &t.add_scalar(1.0).unwrap().to_vec().unwrap(),
            &[2.0, -1.0, 4.0, f32::NAN],
            0.0,
            "add_scalar",
        );
        assert_close(
            &t.pow_scalar(2.0).unwrap().to_vec().unwrap(),
            &[1.0, 4.0, 9.0, f32::NAN],
            1e-6,
            "pow_scalar",
        );
        assert_eq!(
            t.gt_scalar(0.0).unwrap().to_vec::<bool>().unwrap(),
            [true, false, true, false]
        );
        assert_eq!(
            t.ne(&t).unwrap().to_vec::<bool>().unwrap(),
            [false, false, false, true],
            "NaN != NaN on {dev}"
        );
        assert!(
            t.maximum_scalar(0.0).unwrap().to_vec::<f32>().unwrap()[3].is_nan(),
            "maximum propagates NaN on {dev}"
        );
        let other = Tensor::from_slice(&[1.0f32, 2.0, 2.0, 0.0], [4], &dev).unwrap();
        assert_eq!(
            t.le(&other).unwrap().to_vec::<bool>().unwrap(),
            [true, true, false, false]
        );
        assert_eq!(
            t.eq(&other).unwrap().to_vec::<bool>().unwrap(),
            [true, false, false, false]
        );
        // Negative base with an integer exponent, as NumPy.
        assert_close(
            &t.pow_scalar(3.0).unwrap().to_vec().unwrap()[..3],
            &[1.0, -8.0, 27.0],
            1e-5,
            "pow of negative base",
        );
    }
}

#[test]
fn where_and_logical_ops() {
    for dev in devices() {
        let c = Tensor::from_slice(&[true, false, true, false], [2, 2], &dev).unwrap();
        let x = Tensor::from_slice(&[1i32, 2, 3, 4], [2, 2], &dev).unwrap();
        let y = Tensor::from_slice(&[-10i32, -20], [2], &dev).unwrap();
        let w = Tensor::where_cond(&c, &x, &y).unwrap();
        assert_eq!(w.to_vec::<i32>().unwrap(), [1, -20, 3, -20], "{dev}");
        // Transposed condition.
        let wt = Tensor::where_cond(&c.t(), &x, &y).unwrap();
        assert_eq!(wt.to_vec::<i32>().unwrap(), [1, 2, -10, -20], "{dev}");
        let d = Tensor::from_slice(&[true, true, false, false], [2, 2], &dev).unwrap();
        assert_eq!(
            c.logical_and(&d).unwrap().to_vec::<bool>().unwrap(),
            [true, false, false, false]
        );
        assert_eq!(
            c.logical_or(&d).unwrap().to_vec::<bool>().unwrap(),
            [true, true, true, false]
        );
        assert_eq!(
            c.logical_xor(&d).unwrap().to_vec::<bool>().unwrap(),
            [false, true, true, false]
        );
        assert_eq!(
            c.t().logical_not().unwrap().to_vec::<bool>().unwrap(),
            [false, false, true, true]
        );
    }
}

/// Arithmetic on bools is NumPy's and PyTorch's: `add` and `maximum` a
/// logical or, `mul` and `minimum` a logical and (NumPy 2.4: `a + b` of
/// `[F, F, T, T]` and `[F, T, F, T]` is `[F, T, T, T]`, `a * b` `[F, F, F,
/// T]`), in every form and through views; `sub` stays refused, as theirs.
#[test]
fn bool_arithmetic_is_logic() {
    let or = [false, true, true, true];
    let and = [false, false, false, true];
    for dev in devices() {
        let a = Tensor::from_slice(&[false, false, true, true], [4], &dev).unwrap();
        let b = Tensor::from_slice(&[false, true, false, true], [4], &dev).unwrap();
        let got = |t: webtensor::Result<Tensor>| {
            let t = t.unwrap();
            assert_eq!(t.dtype(), DType::Bool, "{dev}");
            t.to_vec::<bool>().unwrap()
        };
        assert_eq!(got(a.add(&b)), or, "{dev}");
        assert_eq!(got(a.maximum(&b)), or, "{dev}");
        assert_eq!(got(a.mul(&b)), and, "{dev}");
        assert_eq!(got(a.minimum(&b)), and, "{dev}");
        assert_eq!(got(Ok(&a + &b)), or, "{dev}");
        assert_eq!(got(Ok(&a * &b)), and, "{dev}");
        // Scalars, a reversed view and a broadcast column.
        assert_eq!(got(a.add_scalar(true)), [true; 4], "{dev}");
        assert_eq!(got(a.mul_scalar(false)), [false; 4], "{dev}");
        assert_eq!(
            got(a.flip(&[0]).unwrap().add(&b)),
            [true, true, false, true]
        );
        let col = Tensor::from_slice(&[true, false], [2, 1], &dev).unwrap();
        assert_eq!(
            got(b.add(&col)),
            [true, true, true, true, false, true, false, true],
            "{dev}"
        );
        // In place, through a stepped view.
        let c = Tensor::from_slice(&[false; 8], [8], &dev).unwrap();
        c.slice(s![1..;2]).unwrap().add_(&b).unwrap();
        assert_eq!(
            c.to_vec::<bool>().unwrap(),
            [false, false, false, true, false, false, false, true],
            "{dev}"
        );
        c.mul_scalar_(false).unwrap();
        assert_eq!(c.to_vec::<bool>().unwrap(), [false; 8], "{dev}");
        // Other dtypes still promote: bool + i32 is i32.
        let i = Tensor::from_slice(&[1i32, 2, 3, 4], [4], &dev).unwrap();
        assert_eq!(a.add(&i).unwrap().to_vec::<i32>().unwrap(), [1, 2, 4, 5]);
        match a.sub(&b) {
            Err(webtensor::Error::DType { op: "sub", .. }) => {}
            other => panic!("{dev}: {other:?}"),
        }
        assert!(a.div_scalar(true).is_err(), "{dev}");
    }
}

#[test]
fn integer_semantics_are_identical_on_every_device() {
    for dev in devices() {
        let a = Tensor::from_slice(&[7i32, -7, i32::MIN, 5, i32::MAX, 0], [6], &dev).unwrap();
        let b = Tensor::from_slice(&[2i32, 2, -1, 0, 1, 3], [6], &dev).unwrap();
        assert_eq!(
            a.div(&b).unwrap().to_vec::<i32>().unwrap(),
            [3, -3, i32::MIN, 0, i32::MAX, 0],
            "div {dev}"
        );
        assert_eq!(
            a.remainder(&b).unwrap().to_vec::<i32>().unwrap(),
            [1, 1, 0, 0, 0, 0],
            "remainder {dev}"
        );
        assert_eq!(
            a.add(&b).unwrap().to_vec::<i32>().unwrap(),
            [9, -5, i32::MAX, 5, i32::MIN, 3],
            "add wraps {dev}"
        );
        assert_eq!(
            a.abs().unwrap().to_vec::<i32>().unwrap(),
            [7, 7, i32::MIN, 5, i32::MAX, 0],
            "abs {dev}"
        );
        assert_eq!(
            b.pow_scalar(3).unwrap().to_vec::<i32>().unwrap(),
            [8, 8, -1, 0, 1, 27],
            "pow {dev}"
        );
        let p = Tensor::from_slice(&[2i32, 1, -1, -1], [4], &dev).unwrap();
        let e = Tensor::from_slice(&[-1i32, -5, -3, -2], [4], &dev).unwrap();
        assert_eq!(
            p.pow(&e).unwrap().to_vec::<i32>().unwrap(),
            [0, 1, -1, 1],
            "negative exponents {dev}"
        );

        let u = Tensor::from_slice(&[250u8, 3, 0, 200], [4], &dev).unwrap();
        let v = Tensor::from_slice(&[10u8, 5, 0, 100], [4], &dev).unwrap();
        assert_eq!(
            u.add(&v).unwrap().to_vec::<u8>().unwrap(),
            [4, 8, 0, 44],
            "u8 add wraps {dev}"
        );
        assert_eq!(
            u.sub(&v).unwrap().to_vec::<u8>().unwrap(),
            [240, 254, 0, 100],
            "u8 sub wraps {dev}"
        );
        assert_eq!(
            u.mul(&v).unwrap().to_vec::<u8>().unwrap(),
            [196, 15, 0, 32],
            "u8 mul wraps {dev}"
        );
        assert_eq!(
            u.div(&v).unwrap().to_vec::<u8>().unwrap(),
            [25, 0, 0, 2],
            "u8 div {dev}"
        );
        assert_eq!(
            u.neg().unwrap().to_vec::<u8>().unwrap(),
            [6, 253, 0, 56],
            "u8 neg {dev}"
        );

        let w = Tensor::from_slice(&[4_000_000_000u32, 1, 5], [3], &dev).unwrap();
        assert_eq!(
            w.add_scalar(500_000_000u32)
                .unwrap()
                .to_vec::<u32>()
                .unwrap(),
            [205_032_704, 500_000_001, 500_000_005],
            "u32 wraps {dev}"
        );
        assert_eq!(
            w.remainder_scalar(3u32).unwrap().to_vec::<u32>().unwrap(),
            [1, 1, 2],
            "{dev}"
        );
    }
}

#[test]
fn casts_follow_rust_as_on_every_device() {
    for dev in devices() {
        let f = Tensor::from_slice(&[1.7f32, -1.7, f32::NAN, 3e9, -3e9, 300.0, 0.0], [7], &dev)
            .unwrap();
        assert_eq!(
            f.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(),
            [1, -1, 0, i32::MAX, i32::MIN, 300, 0],
            "{dev}"
        );
        assert_eq!(
            f.to_dtype(DType::U8).unwrap().to_vec::<u8>().unwrap(),
            [1, 0, 0, 255, 0, 255, 0],
            "{dev}"
        );
        assert_eq!(
            f.to_dtype(DType::Bool).unwrap().to_vec::<bool>().unwrap(),
            [true, true, true, true, true, true, false],
            "{dev}"
        );
        let i = Tensor::from_slice(&[-1i32, 256, 7], [3], &dev).unwrap();
        assert_eq!(
            i.to_dtype(DType::U32).unwrap().to_vec::<u32>().unwrap(),
            [u32::MAX, 256, 7],
            "{dev}"
        );
        assert_eq!(
            i.to_dtype(DType::U8).unwrap().to_vec::<u8>().unwrap(),
            [255, 0, 7],
            "{dev}"
        );
        assert_eq!(
            i.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
            [-1.0, 256.0, 7.0],
            "{dev}"
        );
        // Past 2^24, rounded once to nearest, ties to even (NumPy 2.4's
        // and PyTorch 2.15's; WGSL leaves the direction open), in casts
        // and promotions alike; bf16 through f32, as PyTorch's.
        let big = [
            16777217,
            16777219,
            i32::MAX,
            -i32::MAX,
            i32::MIN,
            33554435,
            -16777219,
        ];
        let big = Tensor::from_slice(&big, [7], &dev).unwrap();
        let want = [
            16777216.0f32,
            16777220.0,
            2147483648.0,
            -2147483648.0,
            -2147483648.0,
            33554436.0,
            -16777220.0,
        ];
        assert_eq!(
            big.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
            want,
            "{dev}"
        );
        let zeros = Tensor::zeros([7], DType::F32, &dev).unwrap();
        assert_eq!(
            big.add(&zeros).unwrap().to_vec::<f32>().unwrap(),
            want,
            "{dev}"
        );
        let b = big
            .to_dtype(DType::BF16)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        let want = [16777216.0f32, 16777216.0, 2147483648.0, -2147483648.0];
        assert_eq!(&b.to_vec::<f32>().unwrap()[..4], want, "{dev}");
        let u = Tensor::from_slice(&[u32::MAX, 16777217, 2147483777], [3], &dev).unwrap();
        assert_eq!(
            u.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
            [4294967296.0, 16777216.0, 2147483904.0],
            "{dev}"
        );
        let h = f.slice(s![..2]).unwrap().to_dtype(DType::F16).unwrap();
        assert_eq!(
            h.to_vec::<half::f16>().unwrap(),
            [half::f16::from_f32(1.7), half::f16::from_f32(-1.7)],
            "{dev}"
        );
    }
}

#[test]
fn f16_on_every_device_and_storage_mode() {
    for dev in devices() {
        let x: Vec<half::f16> = (0..10)
            .map(|k| half::f16::from_f32(k as f32 * 0.5 - 2.0))
            .collect();
        let t = Tensor::from_vec(x.clone(), [2, 5], &dev).unwrap();
        // Strided f16 read and a packed/native store through a stepped view.
        let y = t.t().mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap();
        let want: Vec<half::f16> = [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
            .iter()
            .map(|&k| half::f16::from_f32(x[k].to_f32() * 2.0 + 1.0))
            .collect();
        assert_eq!(
            y.to_vec::<half::f16>().unwrap(),
            want,
            "{dev} f16 native: {}",
            dev.info().native_f16
        );
        t.slice(s![.., ..;2]).unwrap().fill_(7.0).unwrap();
        let got = t.to_vec::<half::f16>().unwrap();
        assert_eq!(got[0].to_f32(), 7.0);
        assert_eq!(got[1], x[1], "odd elements untouched on {dev}");
        // Overflow rounds to infinity as the CPU does.
        let big = Tensor::full([3], 60000.0, DType::F16, &dev)
            .unwrap()
            .mul_scalar(2.0)
            .unwrap();
        assert!(
            big.to_vec::<half::f16>()
                .unwrap()
                .iter()
                .all(|v| v.is_infinite()),
            "{dev}"
        );
    }
}

#[test]
fn gpu_equals_cpu_on_a_random_transposed_chain() {
    let cpu = Device::cpu();
    for dev in devices().into_iter().skip(1) {
        let run = |d: &Device| -> Vec<f32> {
            let a = Tensor::randn([33, 17], DType::F32, 7, d).unwrap();
            let b = Tensor::rand([17, 33], DType::F32, 8, d).unwrap();
            let c = a
                .t()
                .mul(&b)
                .unwrap()
                .sigmoid()
                .unwrap()
                .sub_scalar(0.25)
                .unwrap();
            c.slice(s![..;-3, 1..;2])
                .unwrap()
                .exp()
                .unwrap()
                .to_vec()
                .unwrap()
        };
        assert_close(&run(&dev), &run(&cpu), 1e-5, &format!("chain on {dev}"));
    }
}

#[test]
fn bool_comparisons_order_false_before_true() {
    for dev in devices() {
        let a = Tensor::from_slice(&[false, false, true, true], [4], &dev).unwrap();
        let b = Tensor::from_slice(&[false, true, false, true], [4], &dev).unwrap();
        assert_eq!(
            a.lt(&b).unwrap().to_vec::<bool>().unwrap(),
            [false, true, false, false],
            "{dev}"
        );
        assert_eq!(
            a.ge(&b).unwrap().to_vec::<bool>().unwrap(),
            [true, false, true, true],
            "{dev}"
        );
    }
}

#[test]
fn atan2_quadrants_and_float_only() {
    for dev in devices() {
        let y = Tensor::from_slice(&[1.0f32, 1.0, -1.0, -1.0, 0.0], [5], &dev).unwrap();
        let x = Tensor::from_slice(&[1.0f32, -1.0, -1.0, 1.0, -2.0], [5], &dev).unwrap();
        let q = std::f32::consts::FRAC_PI_4;
        let want = [q, 3.0 * q, -3.0 * q, -q, std::f32::consts::PI];
        // WGSL leaves atan2's precision to the implementation (lavapipe is
        // a few ulp off), hence 1e-5.
        assert_close(
            &y.atan2(&x).unwrap().to_vec::<f32>().unwrap(),
            &want,
            1e-5,
            "atan2",
        );
        y.atan2_scalar_(1.0).unwrap();
        assert_close(
            &y.to_vec::<f32>().unwrap(),
            &[q, q, -q, -q, 0.0],
            1e-5,
            "atan2_",
        );
        let i = Tensor::from_slice(&[1i32], [1], &dev).unwrap();
        let e = i.atan2(&i).unwrap_err();
        assert!(
            matches!(e, webtensor::Error::DType { op: "atan2", .. }),
            "{e}"
        );
    }
}

/// Contiguous runs at every alignment and length: the GPU takes four
/// elements per thread when every operand starts at a multiple of 4 and
/// one otherwise; either way the result, and every element outside the
/// written run, equals the CPU's. Out of place, in place with a misaligned
/// or aligned second operand, aliasing itself, and a fused chain.
/// The bool part of [`contiguous_runs_at_every_alignment_and_length`]:
/// a run of a bool tensor `len` long at `start`, with a second run at
/// `other`; what each op gives and what the whole tensor holds after.
fn bool_run(dev: &Device, start: usize, len: usize, other: usize) -> [Vec<bool>; 4] {
    let n = Tensor::arange(0i32, 48, 1, dev).unwrap();
    let base = n.remainder_scalar(3).unwrap().eq_scalar(0).unwrap();
    let x = base.slice(s![start..start + len]).unwrap();
    let y = base.slice(s![other..other + len]).unwrap();
    let ints = n.slice(s![other..other + len]).unwrap();
    let xor = x.logical_xor(&y).unwrap();
    let chain = ints
        .mul_scalar(5)
        .unwrap()
        .add_scalar(1)
        .unwrap()
        .gt_scalar(60)
        .unwrap();
    x.logical_or_(&y).unwrap();
    let again = base.slice(s![start..start + len]).unwrap();
    again.logical_xor_(&again.clone()).unwrap();
    let read = |t: &Tensor| t.to_vec::<bool>().unwrap();
    [read(&xor), read(&chain), read(&x), read(&base)]
}

#[test]
fn contiguous_runs_at_every_alignment_and_length() {
    let cpu = Device::cpu();
    let run = |dev: &Device, dtype: DType, start: usize, len: usize, other: usize| {
        let base = Tensor::arange(0i32, 48, 1, dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let x = base.slice(s![start..start + len]).unwrap();
        let y = base.slice(s![other..other + len]).unwrap();
        let sum = x.add(&y).unwrap();
        let chain = x.mul_scalar(3).unwrap().add(&y).unwrap().sub(&x).unwrap();
        x.add_(&y).unwrap();
        let again = base.slice(s![start..start + len]).unwrap();
        again.add_(&again.clone()).unwrap();
        let read = |t: &Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        [read(&sum), read(&chain), read(&base)]
    };
    // The CPU's answers once, for every GPU device.
    let (mut want, mut bool_want) = (HashMap::new(), HashMap::new());
    for dev in devices().into_iter().skip(1) {
        for dtype in [
            DType::F32,
            DType::I32,
            DType::I64,
            DType::U32,
            DType::F16,
            DType::BF16,
            DType::U8,
        ] {
            for start in 0..5 {
                for len in [0, 1, 3, 4, 5, 7, 8, 9, 21] {
                    for other in [0, 1, 4, 24] {
                        let want = want
                            .entry((dtype, start, len, other))
                            .or_insert_with(|| run(&cpu, dtype, start, len, other));
                        assert_eq!(
                            &run(&dev, dtype, start, len, other),
                            want,
                            "{dev} {dtype} start {start} len {len} other {other}"
                        );
                    }
                }
            }
        }
        // bool destinations (four to a word): comparisons, logical ops in
        // place and a fused chain ending in a comparison.
        for start in 0..5 {
            for len in [0, 1, 3, 4, 5, 7, 8, 9, 21] {
                for other in [0, 1, 4, 24] {
                    let want = bool_want
                        .entry((start, len, other))
                        .or_insert_with(|| bool_run(&cpu, start, len, other));
                    assert_eq!(
                        &bool_run(&dev, start, len, other),
                        want,
                        "{dev} bool start {start} len {len} other {other}"
                    );
                }
            }
        }
        // Long runs, aligned and not, across many workgroups.
        for (offset, n) in [(0, (1 << 20) + 3), (4, 1023), (1, 1025), (8, 4096)] {
            let a = Tensor::arange(0.0f32, (offset + n) as f32, 1.0, &dev).unwrap();
            let v = a.slice(s![offset..]).unwrap();
            let got = v.add(&v).unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = (offset..offset + n).map(|i| 2.0 * i as f32).collect();
            assert_eq!(got, want, "{dev} offset {offset} n {n}");
        }
    }
}

/// Strided and contiguous kernels take runs of elements: each thread up to
/// `elementwise_run` of them, interleaved with its neighbours' (32 on a software
/// adapter, 4 on a GPU; every length here, 1 to 64, runs on this adapter
/// too). Rows of every length around the runs' multiples, through views
/// that step, reverse, start inside their buffer and broadcast, rows too
/// short to run along, and contiguous runs at odd and aligned offsets; out of
/// place, in place (through an interior view, the Gray-Scott update, and
/// overlapping itself) and in a fused chain; in f32, f16 (native and
/// packed), i64 and u8: each equals the CPU's, and nothing outside the
/// written views changes.
#[test]
fn strided_rows_equal_the_cpu_at_every_run_length() {
    let cpu = Device::cpu();
    let run = |dev: &Device, dtype: DType, rows: usize, n: usize| {
        let base = Tensor::arange(0i32, ((rows + 2) * (n + 2) * 2) as i32, 1, dev)
            .unwrap()
            .remainder_scalar(97)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
            .reshape([rows + 2, 2 * (n + 2)])
            .unwrap();
        let grid = base.slice(s![.., ..n + 2]).unwrap();
        let inner = grid.slice(s![1..-1, 1..-1]).unwrap();
        let left = grid.slice(s![1..-1, ..-2]).unwrap();
        let reversed = grid
            .slice(s![..;-1, ..;-1])
            .unwrap()
            .slice(s![1..-1, 1..-1])
            .unwrap();
        let stepped = base.slice(s![1..-1, 1..2 * n + 1;2]).unwrap();
        let column = grid.slice(s![1..-1, 0..1]).unwrap();
        let sum = left.add(&reversed).unwrap().add(&stepped).unwrap();
        let mixed = left.mul(&column).unwrap().sub(&reversed).unwrap();
        let picked = Tensor::where_cond(&left.gt(&stepped).unwrap(), &reversed, &column).unwrap();
        // Three columns: too short for rows, strided element by element.
        let narrow = grid
            .slice(s![1..-1, 1..4])
            .unwrap()
            .add(&grid.slice(s![1..-1, ..3]).unwrap())
            .unwrap();
        inner.add_(&sum).unwrap();
        // Contiguous at an odd offset, out of place and in place.
        let total = (rows + 2) * 2 * (n + 2);
        let flat = base.reshape([total]).unwrap();
        let (head, tail) = (
            flat.slice(s![1..total - 2]).unwrap(),
            flat.slice(s![3..]).unwrap(),
        );
        let shifted = head.sub(&tail).unwrap();
        head.add_(&tail).unwrap();
        // Contiguous from multiples of 4: four elements a thread, as vec4s.
        let (from4, to4) = (
            flat.slice(s![4..total - 4]).unwrap(),
            flat.slice(s![..total - 8]).unwrap(),
        );
        let aligned = from4.mul(&to4).unwrap().add(&from4).unwrap();
        from4.sub_(&aligned).unwrap();
        let read = |t: &Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        [
            read(&sum),
            read(&mixed),
            read(&picked),
            read(&narrow),
            read(&shifted),
            read(&aligned),
            read(&base),
        ]
    };
    // The CPU's answers once, for the twelve GPU devices.
    let mut want = HashMap::new();
    for elementwise_run in [1, 3, 4, 16, 32, 64] {
        for force_packed_f16 in [false, true] {
            let Some(dev) = common::own_gpu(webtensor::GpuOptions {
                elementwise_run: Some(elementwise_run),
                force_packed_f16,
                ..Default::default()
            }) else {
                return;
            };
            for dtype in [DType::F32, DType::F16, DType::I64, DType::U8] {
                for n in [4, 5, 15, 16, 17, 63, 64, 65, 190] {
                    for rows in [1, 3] {
                        let want = want
                            .entry((dtype, rows, n))
                            .or_insert_with(|| run(&cpu, dtype, rows, n));
                        assert_eq!(
                            &run(&dev, dtype, rows, n),
                            want,
                            "run {elementwise_run} packed {force_packed_f16} {dtype} {rows} x {n}"
                        );
                    }
                }
            }
        }
    }
}

/// Rows that start at multiples of 4 walk whole 16-byte entries
/// (`Access::Spans`): `x[:, ::k]` for k = 1 to 4 and broadcast rows and
/// columns, read as the entries their elements lie in, the destination
/// written an entry at a time. Row lengths around multiples of 4 (the last
/// entry of a row merged into what was there), enough rows for several
/// workgroups, one group of four a thread (the packed device) and four (the
/// other); out of place, to bool, and in place through an interior view, in
/// f32, f16, bf16, i32 and u8: each equals the CPU's, and nothing outside
/// the written view changes.
#[test]
fn aligned_rows_at_small_steps_equal_the_cpu() {
    let run = |dev: &Device, dtype: DType, rows: usize, w: usize, k: usize, n: usize| {
        let make = |mul: i32, add: i32, modulo: i32| {
            Tensor::arange(0i32, (rows * w) as i32, 1, dev)
                .unwrap()
                .mul_scalar(mul)
                .unwrap()
                .add_scalar(add)
                .unwrap()
                .remainder_scalar(modulo)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .reshape([rows, w])
                .unwrap()
        };
        let (base, other) = (make(1, 0, 97), make(7, 3, 89));
        let span = k * (n - 1) + 1;
        let a = base.slice(s![.., 4..4 + span;k]).unwrap();
        let b = other.slice(s![.., ..span;k]).unwrap();
        let bias = Tensor::arange(0i32, n as i32, 1, dev)
            .unwrap()
            .remainder_scalar(5)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        // A column at an odd offset: one element per row, anywhere.
        let column = other.slice(s![.., 1..2]).unwrap();
        let sum = a.add(&b).unwrap();
        let mixed = a.mul(&bias).unwrap().sub(&column).unwrap();
        let above = a.gt(&b).unwrap();
        let picked = Tensor::where_cond(&above, &a, &column).unwrap();
        let target = base.add_scalar(1).unwrap();
        target.slice(s![.., 8..8 + n]).unwrap().add_(&b).unwrap();
        let read = |t: &Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        [
            read(&sum),
            read(&mixed),
            read(&above),
            read(&picked),
            read(&target),
        ]
    };
    let devs = devices();
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8] {
        for (rows, w, lengths) in [(3, 76, &[4, 5, 6, 7, 9, 16, 17][..]), (70, 200, &[65][..])] {
            for k in 1..=4 {
                for &n in lengths.iter().filter(|&&n| 4 + k * (n - 1) < w) {
                    let want = run(&devs[0], dtype, rows, w, k, n);
                    for dev in &devs[1..] {
                        assert_eq!(
                            run(dev, dtype, rows, w, k, n),
                            want,
                            "{dev:?} {dtype} {rows} x {n} step {k}"
                        );
                    }
                }
            }
        }
    }
}

/// 16-bit programs move 16 bytes a thread (eight f16 or bf16 elements,
/// `Access::Vec8`) where every operand starts at a multiple of 8, four from
/// a multiple of 4, one at a time elsewhere: every start and length around
/// those, with subnormal halves, signed zeros, infinities and NaN, equal
/// the CPU bit for bit (a NaN as a NaN) on native and packed f16, through
/// binary ops, a fused chain and casts between the 16-bit types.
#[test]
fn sixteen_bit_programs_at_every_alignment_and_length() {
    let cpu = Device::cpu();
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect();
    let n = 1100;
    let mut values: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 * 0.37 - 17.0)
        .collect();
    let specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        5.960_464_5e-8, // the least f16 subnormal
        -9.536_743e-7,  // an f16 subnormal
        6.097_555e-5,   // the largest f16 subnormal
        65504.0,
        1e-40, // a bf16 subnormal
    ];
    for (k, v) in specials.iter().enumerate() {
        values[3 + 11 * k] = *v;
    }
    // Each result the CPU's, or (WGSL lets a GPU flush f32 subnormals, and
    // NVIDIA's driver does) the CPU's on flushed operands, flushed: bf16
    // shares f32's exponents, so its subnormals and tiny products flush.
    let same = |got: &[f32], want: &[f32], flushed: &[f32]| {
        (0..got.len()).all(|i| common::same_or_flushed(got[i], want[i], Some(flushed[i])))
    };
    for dtype in [DType::F16, DType::BF16] {
        let make = |d: &Device, seed: usize| {
            let v: Vec<f32> = values.iter().cycle().skip(seed).take(n).copied().collect();
            Tensor::from_vec(v, [n], d)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
        };
        let (ca, cb) = (make(&cpu, 0), make(&cpu, 5));
        let flush = |t: &Tensor| {
            let v: Vec<f32> = read_f32(t).into_iter().map(common::ftz).collect();
            Tensor::from_vec(v, [n], &cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
        };
        let (fa, fb) = (flush(&ca), flush(&cb));
        for gpu in &gpus {
            let (ga, gb) = (make(gpu, 0), make(gpu, 5));
            for start in [0, 1, 4, 8, 12, 16] {
                for len in [1, 7, 8, 9, 15, 16, 17, 63, 1023, 1025] {
                    if start + len > n {
                        continue;
                    }
                    let part = |t: &Tensor| t.narrow(0, start, len).unwrap();
                    type Op = fn(&Tensor, &Tensor) -> Tensor;
                    let ops: [(&str, Op); 4] = [
                        ("add", |a, b| a.add(b).unwrap()),
                        ("mul", |a, b| a.mul(b).unwrap()),
                        ("chain", |a, b| {
                            a.mul_scalar(0.5).unwrap().sub(b).unwrap().abs().unwrap()
                        }),
                        ("cast", |a, _| {
                            let other = if a.dtype() == DType::F16 {
                                DType::BF16
                            } else {
                                DType::F16
                            };
                            a.to_dtype(other).unwrap()
                        }),
                    ];
                    for (name, op) in ops {
                        let want = read_f32(&op(&part(&ca), &part(&cb)));
                        let flushed = read_f32(&op(&part(&fa), &part(&fb)));
                        let got = read_f32(&op(&part(&ga), &part(&gb)));
                        assert!(
                            same(&got, &want, &flushed),
                            "{gpu} {dtype} {name} from {start}, {len} long:\n{got:?}\nwant\n{want:?}"
                        );
                    }
                }
            }
        }
    }
}

/// `sign` of -0 is +0, as NumPy's and PyTorch's (`np.signbit(np.sign(-0.))`
/// is false); NaN is kept, as NumPy's; on every device, fused and alone.
#[test]
fn sign_of_minus_zero_is_plus_zero_as_numpys() {
    for dev in common::devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = Tensor::from_slice(&[-0.0f32, 0.0, f32::NAN, -2.5, 3.0], [5], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            for y in [
                x.sign().unwrap(),
                x.mul_scalar(2.0).unwrap().sign().unwrap(),
            ] {
                let y = y.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
                assert!(
                    y[0] == 0.0 && y[0].is_sign_positive(),
                    "{dtype} on {dev}: {y:?}"
                );
                assert!(
                    y[1] == 0.0 && y[1].is_sign_positive(),
                    "{dtype} on {dev}: {y:?}"
                );
                assert!(
                    y[2].is_nan() && y[3] == -1.0 && y[4] == 1.0,
                    "{dtype} on {dev}: {y:?}"
                );
            }
        }
    }
}

/// An in-place clamp of integers by float bounds is refused naming
/// `clamp_` (PyTorch: "result type Float can't be cast to the desired
/// output type Int"); it named `maximum`, the op it is made of.
#[test]
fn an_in_place_clamp_refused_names_clamp_() {
    for dev in common::devices() {
        let t = Tensor::from_slice(&[-3i32, 9], [2], &dev).unwrap();
        let e = t.clamp_(0.5, 6.0).unwrap_err();
        assert!(e.to_string().starts_with("clamp_: "), "{dev}: {e}");
        t.clamp_(0, 6).unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), [0, 6], "{dev}");
    }
}

/// The tanh GELU of negative inputs to a few f32 ulp of its f64 value on
/// every device: PyTorch's form, x (1 + tanh(u)) / 2, cancels there (1e-5
/// of the value lost at -3, all of it by -10); webtensor computes
/// x / (1 + e^(-2u)), one division: as x times a sigmoid, the sigmoid
/// was subnormal from about -10 (0 on a GPU that flushes them) where the
/// value is still normal.
#[test]
fn the_tanh_gelu_keeps_its_digits_for_negative_inputs() {
    // Down to -7.9, where the value is 1e-21, then to -10.04, where it is
    // 4.8e-38 (normal; it is subnormal from about -10.1).
    let mut xs: Vec<f32> = (0..31).map(|i| -1.0 - i as f32 * 0.23).collect();
    xs.extend([-8.5, -9.0, -9.5, -10.0, -10.02, -10.04]);
    for dev in devices() {
        let x = Tensor::from_slice(&xs, [xs.len()], &dev).unwrap();
        let got = x.gelu_tanh().unwrap().to_vec::<f32>().unwrap();
        for (&x, &g) in xs.iter().zip(&got) {
            let want = gelu_tanh(f64::from(x));
            let off = (f64::from(g) - want).abs() / want.abs();
            // Within 16 ulp (the exp is a few ulp off, and x u's rounding
            // moves sigmoid(2u) by 2 x u ulp).
            let bound = 16.0 * f64::from(f32::EPSILON) * (1.0 + f64::from(x).abs().powi(3) / 20.0);
            assert!(
                off <= bound,
                "{dev}: gelu_tanh({x}) = {g}, want {want} ({off:e})"
            );
        }
    }
}

/// A 16-bit tensor of these bits.
fn sixteen_bit(bits: &[u16], dtype: DType, dev: &Device) -> Tensor {
    let n = [bits.len()];
    match dtype {
        DType::F16 => {
            let v: Vec<half::f16> = bits.iter().map(|&b| half::f16::from_bits(b)).collect();
            Tensor::from_slice(&v, n, dev).unwrap()
        }
        _ => {
            let v: Vec<half::bf16> = bits.iter().map(|&b| half::bf16::from_bits(b)).collect();
            Tensor::from_slice(&v, n, dev).unwrap()
        }
    }
}

fn bits_of_16(t: &Tensor) -> Vec<u16> {
    match t.dtype() {
        DType::F16 => t
            .to_vec::<half::f16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        _ => t
            .to_vec::<half::bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
    }
}

/// An op through a view that ends inside a vector entry (eight 16-bit
/// elements a thread from a multiple of 8, four from a multiple of 4)
/// leaves the elements past its end as they were, bit for bit: NaNs of
/// either sign and their payloads, subnormals. The last entry was decoded
/// and encoded again, which made every such NaN 0x7e00.
#[test]
fn elements_past_a_views_end_keep_their_bits() {
    let tails = [
        (
            DType::F16,
            0x3c00u16,
            [0xfe00u16, 0x7c01, 0xfd55, 0x0001, 0x8001],
        ),
        (
            DType::BF16,
            0x3f80,
            [0xffc0, 0x7f81, 0xff95, 0x0001, 0x8001],
        ),
    ];
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        for (dtype, one, tail) in tails {
            // Views from 0 (eight a thread) and 4 (four), ending in every lane.
            for start in [0, 4] {
                for len in 1..12 {
                    let bits: Vec<u16> = (0..32)
                        .map(|i| [one, tail[i % 5]][usize::from(i >= start + len)])
                        .collect();
                    let t = sixteen_bit(&bits, dtype, &dev);
                    t.narrow(0, start, len).unwrap().add_scalar_(1.0).unwrap();
                    let got = bits_of_16(&t);
                    // 2.0 is 0x4000 in both.
                    let two = 0x4000;
                    for (i, (&g, &b)) in got.iter().zip(&bits).enumerate() {
                        let want = if (start..start + len).contains(&i) {
                            two
                        } else {
                            b
                        };
                        assert_eq!(
                            g,
                            want,
                            "{dev} {dtype} [{start}, {}) element {i}: {got:04x?}",
                            start + len
                        );
                    }
                }
            }
        }
    }
}

/// f32 to f16 on every device rounds as the CPU (and NumPy) does: to
/// nearest, ties to even, at every f16's neighbours and midpoints: normal,
/// subnormal (WGSL lets `pack2x16float` round and flush them as the
/// adapter likes), and past 65504 up to 65520, where infinity begins.
#[test]
fn f32_to_f16_rounds_to_nearest_even_everywhere() {
    let mut values = Vec::new();
    // (0x7bff's neighbour is infinity: its midpoint, 65520, comes below.)
    for h in 0..0x7bffu16 {
        let lo = half::f16::from_bits(h).to_f32();
        let hi = half::f16::from_bits(h + 1).to_f32();
        let mid = (lo as f64 + hi as f64) / 2.0;
        let mid32 = mid as f32;
        for v in [
            lo,
            mid32,
            f32::from_bits(mid32.to_bits() - 1),
            f32::from_bits(mid32.to_bits() + 1),
        ] {
            values.extend([v, -v]);
        }
    }
    values.extend([
        65519.996f32,
        65520.0,
        1e-8,
        2.980_232_2e-8,
        2.980_233e-8,
        f32::MAX,
        f32::INFINITY,
    ]);
    let n = [values.len()];
    let cpu = Tensor::from_slice(&values, n, &Device::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    let want = bits_of_16(&cpu);
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        let got = bits_of_16(
            &Tensor::from_slice(&values, n, &dev)
                .unwrap()
                .to_dtype(DType::F16)
                .unwrap(),
        );
        for i in 0..values.len() {
            assert_eq!(
                got[i],
                want[i],
                "{dev}: {:e} ({:08x})",
                values[i],
                values[i].to_bits()
            );
        }
    }
}

/// A fill fused into `pow` gives the kernel no value that differs between
/// invocations: lavapipe's compiler never finished `pow_f32` of uniform
/// operands (the process hung at the readback). Each case runs on a
/// thread of its own and must finish within a minute, with the CPU's
/// values.
#[test]
fn fills_fused_into_pow_finish_with_the_cpus_values() {
    type Case = fn(DType, &Device) -> webtensor::Result<Tensor>;
    let cases: [(&str, Case); 4] = [
        ("square", |d, dev| {
            Tensor::full([17], -2.5, d, dev)?.pow_scalar(2.0)
        }),
        ("cube", |d, dev| {
            Tensor::full([4], 3.0, d, dev)?.pow_scalar(3.0)
        }),
        ("root", |d, dev| {
            Tensor::full([5], 2.5, d, dev)?.pow_scalar(0.5)
        }),
        ("self", |d, dev| {
            let x = || Tensor::full([6], 1.5, d, dev);
            x()?.pow(&x()?)
        }),
    ];
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for (name, case) in cases {
                let want = read_f32(&case(dtype, &Device::cpu()).unwrap());
                let (send, done) = std::sync::mpsc::channel();
                let on = dev.clone();
                std::thread::spawn(move || {
                    let _ = send.send(
                        case(dtype, &on).and_then(|t| t.to_dtype(DType::F32)?.to_vec::<f32>()),
                    );
                });
                let got = done
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .unwrap_or_else(|_| panic!("{name} {dtype} on {dev} did not finish"));
                assert_eq!(got.unwrap(), want, "{name} {dtype} on {dev}");
            }
        }
    }
}
