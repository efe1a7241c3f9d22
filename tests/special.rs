//! Special functions against NumPy's and SciPy's float64 values at the
//! same f32 inputs (`tests/data/make_special_cases.py`), over every sign
//! and magnitude and the special values, on every device: the error in
//! ulps of the f32 result stays within each function's stated bound;
//! NaN, infinities and signed zeros where the reference has them.

mod common;

use std::collections::HashMap;
use webtensor::{DType, Device, Tensor, io};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/special_cases.npz");
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

/// The error of `got` from `want` (f64) in ulps (in f32) of the larger of
/// `|want|` and `scale`, past an absolute `floor`; `None` when the special
/// values differ (NaN, an infinity).
fn error(got: f32, want: f64, scale: f64, floor: f64) -> Option<f64> {
    let w = want as f32;
    if w.is_nan() || w.is_infinite() || got.is_nan() || got.is_infinite() {
        return (got.to_bits() == w.to_bits() || (got.is_nan() && w.is_nan())).then_some(0.0);
    }
    let off = (f64::from(got) - want).abs();
    if off <= floor {
        return Some(0.0);
    }
    let at = (want.abs().max(scale) as f32).min(f32::MAX);
    let ulp = (f64::from(f32::from_bits(at.to_bits() + 1)) - f64::from(at)).max(1e-45);
    Some(off / ulp)
}

/// Asserts every element of `got` within `ulps` of `want`, the ulps of
/// the larger of `|want|` and `scale`'s element (none: `|want|` alone),
/// past `floor`; returns the largest error.
#[track_caller]
fn within(
    got: &Tensor,
    want: &Tensor,
    scale: Option<&[f64]>,
    ulps: f64,
    floor: f64,
    what: &str,
) -> f64 {
    let (got, want) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f64>().unwrap());
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let sc = scale.map_or(0.0, |s| s[i]);
        match error(*g, *w, sc, floor) {
            Some(e) if e <= ulps => worst = worst.max(e),
            Some(e) => panic!("{what}: element {i}: {g} vs {w}, {e:.1} ulps (bound {ulps})"),
            None => panic!("{what}: element {i}: {g} vs {w}"),
        }
    }
    worst
}

#[test]
fn special_functions_stay_within_their_bounds_on_every_device() {
    let c = cases();
    for dev in common::devices() {
        let on = |k: &str| c[k].to_device(&dev).unwrap();
        let (x, y, p, s) = (on("x"), on("y"), on("p"), on("s"));
        // The larger operand: logaddexp adds a term of at most ln 2 to it,
        // so its error is ulps of the operands, not of a sum near 0.
        let xs = c["x"].to_vec::<f32>().unwrap();
        let ys = c["y"].to_vec::<f32>().unwrap();
        let operand: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(a, b)| f64::from(a.abs().max(b.abs())))
            .collect();
        // Bounds as measured on this machine's libm and lavapipe, with a
        // margin; a GPU's exp, log and sin (WGSL leaves their precision to
        // the driver) cost a few ulps more than the host's libm.
        let gpu = dev.is_gpu();
        let f = format!("on {dev}");
        let b = |cpu: f64, gpu_bound: f64| if gpu { gpu_bound } else { cpu };
        within(
            &x.logaddexp(&y).unwrap(),
            &c["logaddexp"],
            Some(&operand),
            b(2.0, 4.0),
            0.0,
            &format!("logaddexp {f}"),
        );
        within(
            &x.logaddexp2(&y).unwrap(),
            &c["logaddexp2"],
            Some(&operand),
            b(2.0, 4.0),
            0.0,
            &format!("logaddexp2 {f}"),
        );
        within(
            &x.xlogy(&y.abs().unwrap()).unwrap(),
            &c["xlogy"],
            None,
            b(2.0, 8.0),
            0.0,
            &format!("xlogy {f}"),
        );
        // sinc near its zeros: pi x rounds to f32 first, as NumPy's f32
        // sinc does, an absolute error.
        within(
            &s.sinc().unwrap(),
            &c["sinc"],
            None,
            b(1.0, 1.0),
            2e-7,
            &format!("sinc {f}"),
        );
        // logit near 1/2: ln of a ratio near 1, an absolute error.
        within(
            &p.logit(None).unwrap(),
            &c["logit"],
            None,
            b(1.0, 2.0),
            2e-7,
            &format!("logit {f}"),
        );
    }
}

#[test]
fn special_functions_keep_their_edges_and_dtypes() {
    for dev in common::devices() {
        let t = |v: &[f32]| Tensor::from_slice(v, [v.len()], &dev).unwrap();
        let inf = f32::INFINITY;
        // Equal infinities, and a NaN beside one.
        let l = t(&[inf, -inf, f32::NAN, 0.0])
            .logaddexp(&t(&[inf, -inf, inf, 0.0]))
            .unwrap();
        let l = l.to_vec::<f32>().unwrap();
        assert_eq!(l[..2], [inf, -inf]);
        assert!(l[2].is_nan());
        assert_eq!(l[3], std::f32::consts::LN_2);
        // 0 * ln 0 is 0; 0 * ln NaN is NaN.
        let xl = t(&[0.0, 0.0, 2.0])
            .xlogy(&t(&[0.0, f32::NAN, 1.0]))
            .unwrap();
        let xl = xl.to_vec::<f32>().unwrap();
        assert_eq!(xl[0], 0.0);
        assert!(xl[1].is_nan());
        assert_eq!(xl[2], 0.0);
        assert_eq!(
            t(&[0.0, 1.0]).sinc().unwrap().to_vec::<f32>().unwrap()[0],
            1.0
        );
        // 1 at 0 in every float dtype (NumPy's `sinc` of f16 0 is 1; 1e-20,
        // its old divisor, is 0 in f16).
        for dtype in [DType::F16, DType::BF16] {
            let y = t(&[0.0, -0.0, 0.5])
                .to_dtype(dtype)
                .unwrap()
                .sinc()
                .unwrap();
            let y = y.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(&y[..2], &[1.0, 1.0], "{dtype}");
            assert!((y[2] - 0.63661975).abs() < 4e-3, "{dtype}: {y:?}");
        }
        let lg = t(&[0.0, 1.0, 0.5])
            .logit(Some(1e-6))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(
            lg[0].is_finite() && lg[0] < -13.0 && lg[1] > 13.0 && lg[2] == 0.0,
            "{lg:?}"
        );
        assert_eq!(
            t(&[0.0]).logit(None).unwrap().to_vec::<f32>().unwrap(),
            [-inf]
        );
        // Half types compute through their ops; ints are refused naming the op.
        let h = t(&[1.0, 2.0]).to_dtype(DType::F16).unwrap();
        assert_eq!(h.logaddexp(&h).unwrap().dtype(), DType::F16);
        let i = Tensor::from_slice(&[1i32], [1], &dev).unwrap();
        match i.sinc() {
            Err(webtensor::Error::DType { op: "sinc", .. }) => {}
            other => panic!("{other:?}"),
        }
        // logit of integers (PyTorch's is a float): an error, not values
        // cast back into the integer dtype.
        for x in [i.clone(), i.to_dtype(DType::U8).unwrap()] {
            for eps in [None, Some(0.25)] {
                match x.logit(eps) {
                    Err(webtensor::Error::DType { op: "logit", .. }) => {}
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

/// lgamma, digamma, erfinv, erfc and i0 against SciPy's f64 values at f32
/// inputs over their whole ranges (tests/data/make_special_cases.py): ulps of the
/// value for x > 0 and for erfinv; below 0, where the reflection formula
/// subtracts two logarithms (or digamma a cotangent) and the result
/// passes through zeros, ulps of the larger of the value and the terms'
/// size (`scale`), past an absolute floor.
#[test]
fn gamma_functions_and_erfinv_stay_within_their_bounds() {
    let c = cases();
    for dev in common::devices() {
        let on = |k: &str| c[k].to_device(&dev).unwrap();
        let (pos, neg, e) = (on("g_pos"), on("g_neg"), on("e_in"));
        let gpu = dev.is_gpu();
        let f = format!("on {dev}");
        let b = |cpu: f64, gpu_bound: f64| if gpu { gpu_bound } else { cpu };
        // The size of the terms below 0: ln(pi / |sin(pi x)|) and
        // lgamma(1 - x) for lgamma, pi cot(pi x) and digamma(1 - x).
        let negs: Vec<f64> = c["g_neg"]
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect();
        let lg_terms: Vec<f64> = negs
            .iter()
            .map(|x| libm::lgamma(1.0 - x).abs() + 1.0)
            .collect();
        let dg_terms: Vec<f64> = negs
            .iter()
            .map(|x| {
                (1.0 - x).ln().abs()
                    + (std::f64::consts::PI / (std::f64::consts::PI * x).tan()).abs()
            })
            .collect();
        let w = [
            within(
                &pos.lgamma().unwrap(),
                &c["lgamma_pos"],
                None,
                b(0.501, 5.0),
                0.0,
                &format!("lgamma x > 0 {f}"),
            ),
            within(
                &neg.lgamma().unwrap(),
                &c["lgamma_neg"],
                Some(&lg_terms),
                b(0.501, 6.0),
                0.0,
                &format!("lgamma x < 0 {f}"),
            ),
            within(
                &pos.digamma().unwrap(),
                &c["digamma_pos"],
                None,
                b(0.501, 5.0),
                0.0,
                &format!("digamma x > 0 {f}"),
            ),
            within(
                &neg.digamma().unwrap(),
                &c["digamma_neg"],
                Some(&dg_terms),
                b(0.501, 5.0),
                0.0,
                &format!("digamma x < 0 {f}"),
            ),
            within(
                &e.erfinv().unwrap(),
                &c["erfinv"],
                None,
                b(0.501, 4.0),
                0.0,
                &format!("erfinv {f}"),
            ),
        ];
        let (ci, ii) = (on("c_in"), on("i_in"));
        // erfc's results below f32's smallest normal (past 9.2) are
        // compared past an absolute floor, as GPUs may flush them.
        let w2 = [
            within(
                &ci.erfc().unwrap(),
                &c["erfc"],
                None,
                b(0.501, 5.0),
                1.2e-38,
                &format!("erfc {f}"),
            ),
            within(
                &ii.i0().unwrap(),
                &c["i0"],
                None,
                b(0.501, 5.0),
                0.0,
                &format!("i0 {f}"),
            ),
        ];
        eprintln!("worst {f}: {w:?} {w2:?}");
        tiny_fractions(&c, &dev);
    }
}

/// lgamma and digamma where `sin(pi x)` is tiny: negative subnormals, tiny
/// negative normals and the f32 neighbours of negative integers, within
/// the bounds below 0 (a GPU that flushes subnormal operands answers for
/// -0: +inf). The polynomial for `sin(pi x)` halved a subnormal first:
/// lgamma(-2^-149) was +inf, digamma(-2.94e-39) 9.5 ulps off.
fn tiny_fractions(c: &HashMap<String, Tensor>, dev: &Device) {
    let x: Vec<f32> = c["g_tiny"].to_vec().unwrap();
    let t = c["g_tiny"].to_device(dev).unwrap();
    let pi = std::f64::consts::PI;
    // Whether this device flushes subnormal operands (NVIDIA's does).
    let tiny = Tensor::from_slice(&[1e-45f32], [1], dev).unwrap();
    let flushes = tiny.mul_scalar(2.0).unwrap().to_vec::<f32>().unwrap()[0] == 0.0;
    let cases: [(&str, Tensor, Vec<f64>, f64); 2] = [
        (
            "lgamma",
            t.lgamma().unwrap(),
            c["lgamma_tiny"].to_vec().unwrap(),
            6.0,
        ),
        (
            "digamma",
            t.digamma().unwrap(),
            c["digamma_tiny"].to_vec().unwrap(),
            5.0,
        ),
    ];
    for (name, got, want, gpu_bound) in cases {
        let got: Vec<f32> = got.to_vec().unwrap();
        assert_eq!((got.len(), want.len()), (x.len(), x.len()), "{name}");
        let bound = if dev.is_gpu() { gpu_bound } else { 0.501 };
        for (i, ((&g, &w), &v)) in got.iter().zip(&want).zip(&x).enumerate() {
            let v64 = f64::from(v);
            let scale = if name == "lgamma" {
                libm::lgamma(1.0 - v64).abs() + 1.0
            } else {
                (1.0 - v64).ln().abs() + (pi / (pi * v64).tan()).abs()
            };
            let flushed = flushes && v.is_subnormal() && g == f32::INFINITY;
            let e = error(g, w, scale, 0.0);
            assert!(
                flushed || e.is_some_and(|e| e <= bound),
                "{name}({v:e}) element {i} on {dev}: {g} vs {w} ({e:?} ulps)"
            );
        }
    }
}

#[test]
fn gamma_functions_and_erfinv_keep_their_edges_and_dtypes() {
    let inf = f32::INFINITY;
    for dev in common::devices() {
        let t = |v: &[f32]| Tensor::from_slice(v, [v.len()], &dev).unwrap();
        let bits = |r: webtensor::Result<Tensor>| -> Vec<u32> {
            r.unwrap()
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() })
                .collect()
        };
        let want = |v: &[f32]| -> Vec<u32> {
            v.iter()
                .map(|v| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() })
                .collect()
        };
        let edges = t(&[0.0, -0.0, -1.0, -7.0, inf, -inf, f32::NAN, 1.0, 2.0]);
        // C's and PyTorch's lgamma: +inf at both infinities (SciPy says -inf
        // at -inf); exactly 0 at 1 and 2.
        assert_eq!(
            bits(edges.lgamma()),
            want(&[inf, inf, inf, inf, inf, inf, f32::NAN, 0.0, 0.0]),
            "{dev:?}"
        );
        let d = bits(edges.digamma());
        assert_eq!(
            d[..7],
            want(&[-inf, inf, f32::NAN, f32::NAN, inf, f32::NAN, f32::NAN]),
            "{dev:?}"
        );
        let e = t(&[1.0, -1.0, 1.5, -0.0, 0.0, f32::NAN]);
        assert_eq!(
            bits(e.erfinv()),
            want(&[inf, -inf, f32::NAN, -0.0, 0.0, f32::NAN]),
            "{dev:?}"
        );
        // 16-bit floats compute in f32 and round once.
        for dtype in [DType::F16, DType::BF16] {
            let x = t(&[0.3, 2.5, 7.0, -1.5]).to_dtype(dtype).unwrap();
            let got = x
                .lgamma()
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let want = x
                .to_dtype(DType::F32)
                .unwrap()
                .lgamma()
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            assert_eq!(
                got,
                want.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
                "{dtype} on {dev:?}"
            );
        }
        assert!(matches!(
            Tensor::zeros([2], DType::I32, &dev).unwrap().lgamma(),
            Err(webtensor::Error::DType { .. })
        ));
    }
}

/// logaddexp and logaddexp2 of operands of two float dtypes compute in
/// their common dtype whichever comes first: NumPy's
/// `logaddexp(float16(1), float32(1))` is float32 `1.6931472` (the equal
/// operands' branch rounded `1 + ln 2` to f16 when the f16 came first).
#[test]
fn logaddexp_of_two_dtypes_computes_in_their_common_one() {
    for dev in common::devices() {
        let one = Tensor::from_slice(&[1.0f32, 3.0], [2], &dev).unwrap();
        let half = one.to_dtype(DType::F16).unwrap();
        for (a, b) in [(&half, &one), (&one, &half)] {
            let e = a.logaddexp(b).unwrap();
            assert_eq!(e.dtype(), DType::F32, "{dev}");
            assert_eq!(e.to_vec::<f32>().unwrap(), [1.6931472, 3.6931472], "{dev}");
            let t = a.logaddexp2(b).unwrap();
            assert_eq!(t.to_vec::<f32>().unwrap(), [2.0, 4.0], "{dev}");
        }
    }
}

/// What PyTorch 2.15 gives (values printed by it): f16 `logaddexp` and
/// `logaddexp2` computed in f32 and rounded once (each step rounded to f16
/// made -8.06e-5 exactly 0, and 0.001235 0.001465; `logit` too, one
/// rounding where PyTorch's f16 kernel rounds each step); `xlogy` takes its
/// logarithm in the result's dtype (an f32 `y` beside an f64 `x` was
/// f32's); `logit` clamps as PyTorch does for an `eps` past 1/2 (every
/// element became `1 - eps`) and not at all for a NaN `eps`.
#[test]
fn mixed_and_half_precision_follow_pytorch() {
    let h = |v: &[f32], dev: &Device| {
        Tensor::from_slice(v, [v.len()], dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap()
    };
    let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    for dev in common::devices() {
        let got = h(&[-0.602_539_06, -0.5], &dev)
            .logaddexp(&h(&[-0.792_968_75, -1.2], &dev))
            .unwrap();
        assert_eq!(got.dtype(), DType::F16);
        // Within the f32 bounds (2 ulps of the larger operand, 0.6, and of
        // a logit: a GPU's exp, log and log1p) and the one f16 rounding.
        let near = |got: Vec<f32>, want: &[f32]| {
            assert_eq!(got.len(), want.len());
            let off = got.iter().zip(want).map(|(g, w)| (g - w).abs());
            let worst = off.fold(
                0.0,
                |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
            );
            assert!(worst <= 2.5e-7, "{dev}: {got:?} {want:?}");
        };
        near(f32s(got), &[-8.058_548e-5, -0.096_862_79]);
        let got = h(&[-2.861_328], &dev)
            .logaddexp2(&h(&[-0.212_158_2], &dev))
            .unwrap();
        near(f32s(got), &[0.001_235_008_2]);
        let x = Tensor::from_slice(&[1000.0f32], [1], &dev).unwrap();
        let got = x.xlogy(&h(&[3.0], &dev)).unwrap();
        assert_eq!(got.to_vec::<f32>().unwrap(), [1_098.612_3], "{dev}");
        let p = Tensor::from_slice(&[0.5f32, 0.1, 0.9], [3], &dev).unwrap();
        let got = p.logit(Some(0.7)).unwrap().to_vec::<f32>().unwrap();
        near(got, &[0.847_297_85, 0.847_297_85, -0.847_297_8]);
        let p = Tensor::from_slice(&[0.2f32, 1.5], [2], &dev).unwrap();
        let got = p.logit(Some(f64::NAN)).unwrap().to_vec::<f32>().unwrap();
        near(got[..1].to_vec(), &[-1.386_294_4]);
        assert!(got[1].is_nan(), "{dev}");
        // f16 in f32, rounded once: ln(0.30005 / 0.69995) = -0.847065 is
        // -0.847168 in f16 (PyTorch's f16 kernel rounds its steps:
        // -0.847656).
        let got = h(&[0.3, 0.999], &dev).logit(None).unwrap();
        assert_eq!(f32s(got), [-0.847_167_97, 6.929_687_5], "{dev}");
    }
    let cpu = Device::cpu();
    let x = Tensor::from_slice(&[1.0f64], [1], &cpu).unwrap();
    let y = Tensor::from_slice(&[3.0f32], [1], &cpu).unwrap();
    assert_eq!(
        x.xlogy(&y).unwrap().to_vec::<f64>().unwrap(),
        [1.098_612_288_668_109_8]
    );
}

/// The inverse trigonometric and hyperbolic functions and log10 against
/// NumPy's float64 values at the same inputs (tests/data/
/// make_trig_cases.py), across their domains and past them, on every
/// device, as they are and as reversed views: f32 within each function's
/// bound in ulps (past an absolute 1e-38, where a GPU may flush a
/// subnormal), NaN, infinities and signed zeros where NumPy has them; f16
/// and bf16 within one step of NumPy's value rounded to them.
#[test]
fn inverse_and_hyperbolic_functions_stay_within_their_bounds() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/numpy_trig_cases.npz"
    );
    let c: HashMap<String, Tensor> =
        io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
            .unwrap()
            .into_iter()
            .collect();
    type Op = fn(&Tensor) -> webtensor::Result<Tensor>;
    // (name, op, bound on the CPU, bound on a GPU): measured 0.5 (f64,
    // rounded) and 1.1 to 3.1 on lavapipe, with a margin.
    let ops: [(&str, Op, f64, f64); 9] = [
        ("asin", Tensor::asin, 1.0, 4.0),
        ("acos", Tensor::acos, 1.0, 4.0),
        ("atan", Tensor::atan, 1.0, 4.0),
        ("sinh", Tensor::sinh, 1.0, 4.0),
        ("cosh", Tensor::cosh, 1.0, 4.0),
        ("asinh", Tensor::asinh, 1.0, 4.0),
        ("acosh", Tensor::acosh, 1.0, 4.0),
        ("atanh", Tensor::atanh, 1.0, 4.0),
        ("log10", Tensor::log10, 1.0, 4.0),
    ];
    for dev in common::devices() {
        let x = c["x"].to_device(&dev).unwrap();
        let reversed = x
            .flip(&[0])
            .unwrap()
            .contiguous()
            .unwrap()
            .flip(&[0])
            .unwrap();
        for (name, f, cpu, gpu) in ops {
            let bound = if dev.is_gpu() { gpu } else { cpu };
            for (layout, x) in [("contiguous", &x), ("reversed", &reversed)] {
                let what = format!("{name} {layout} on {dev}");
                within(&f(x).unwrap(), &c[name], None, bound, 1e-38, &what);
            }
            for (dtype, suffix) in [(DType::F16, "f16"), (DType::BF16, "bf16")] {
                let xh = c[&format!("x_{suffix}")]
                    .to_device(&dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap();
                let got = f(&xh).unwrap();
                assert_eq!(got.dtype(), dtype);
                let got = got.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
                let want = c[&format!("{name}_{suffix}")].to_vec::<f64>().unwrap();
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    // NumPy's value rounded to the dtype, and its neighbours.
                    let (w, g) = match dtype {
                        DType::F16 => (
                            half::f16::from_f64(*w).to_bits() as i32,
                            half::f16::from_f32(*g).to_bits() as i32,
                        ),
                        _ => (
                            half::bf16::from_f64(*w).to_bits() as i32,
                            half::bf16::from_f32(*g).to_bits() as i32,
                        ),
                    };
                    let nan = |b: i32| match dtype {
                        DType::F16 => half::f16::from_bits(b as u16).is_nan(),
                        _ => half::bf16::from_bits(b as u16).is_nan(),
                    };
                    // A flushed subnormal result is a zero of its sign.
                    let tiny = (w & 0x7fff) < if dtype == DType::F16 { 0x0400 } else { 0x0080 };
                    let ok = (nan(w) && nan(g)) || (g - w).abs() <= 1 || tiny && (g & 0x7fff) == 0;
                    assert!(
                        ok,
                        "{name} {dtype} on {dev}: element {i}: got bits {g:#x}, want {w:#x}"
                    );
                }
            }
        }
    }
}
