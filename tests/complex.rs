//! Complex (c64) tensors on every device: construction, zero-copy real/imag
//! views written through, arithmetic against an f64 reference on strided
//! views, reductions, matmul, printing, device moves and errors.

mod common;

use common::{devices, gpu, noise};
use num_complex::{Complex32, Complex64};
use webtensor::{Axes, DType, Device, Error, Tensor, s};

fn c(re: f32, im: f32) -> Complex32 {
    Complex32::new(re, im)
}

/// Complex values from noise, distinct per seed.
fn values(n: usize, seed: u64) -> Vec<Complex32> {
    let re = noise(n, seed);
    let im = noise(n, seed + 100);
    re.iter()
        .zip(&im)
        .map(|(&a, &b)| c(2.0 * a, 2.0 * b))
        .collect()
}

fn close(got: &[Complex32], want: &[Complex64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = ((g.re as f64 - w.re).powi(2) + (g.im as f64 - w.im).powi(2)).sqrt();
        assert!(
            err <= tol * w.norm().max(1.0),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

fn wide(v: &[Complex32]) -> Vec<Complex64> {
    v.iter()
        .map(|z| Complex64::new(z.re as f64, z.im as f64))
        .collect()
}

#[test]
fn construction_and_readback() {
    for dev in devices() {
        let z = Tensor::from_complex(&[c(1.0, 2.0), c(3.0, -4.0)], [2], &dev).unwrap();
        assert_eq!(z.dtype(), DType::C64);
        assert_eq!(z.to_complex_vec().unwrap(), [c(1.0, 2.0), c(3.0, -4.0)]);
        let w = Tensor::from_interleaved(&[1.0, 2.0, 3.0, -4.0], [2, 1], &dev).unwrap();
        assert_eq!(w.dims(), &[2, 1]);
        assert_eq!(w.to_complex_vec().unwrap(), [c(1.0, 2.0), c(3.0, -4.0)]);
        // From parts, broadcast together.
        let re = Tensor::from_slice(&[1.0f32, 2.0], [2, 1], &dev).unwrap();
        let im = Tensor::from_slice(&[10.0f32, 20.0, 30.0], [3], &dev).unwrap();
        let p = Tensor::complex(&re, &im).unwrap();
        assert_eq!(p.dims(), &[2, 3]);
        assert_eq!(p.to_complex_vec().unwrap()[4], c(2.0, 20.0));
        assert_eq!(
            Tensor::zeros([2], DType::C64, &dev)
                .unwrap()
                .to_complex_vec()
                .unwrap(),
            [c(0.0, 0.0); 2]
        );
        assert_eq!(
            Tensor::ones([1], DType::C64, &dev)
                .unwrap()
                .to_complex_vec()
                .unwrap(),
            [c(1.0, 0.0)]
        );
        let full = Tensor::full([2], c(0.5, -1.5), DType::C64, &dev).unwrap();
        assert_eq!(full.to_complex_vec().unwrap(), [c(0.5, -1.5); 2]);
        let promoted = re.to_dtype(DType::C64).unwrap();
        assert_eq!(
            promoted.to_complex_vec().unwrap(),
            [c(1.0, 0.0), c(2.0, 0.0)]
        );
        assert_eq!(
            format!(
                "{}",
                Tensor::from_complex(&[c(1.0, 2.0), c(0.5, -0.25)], [2], &dev).unwrap()
            ),
            "[1. +2.j   0.5-0.25j]"
        );
    }
}

#[test]
fn real_and_imag_are_views_written_through() {
    for dev in devices() {
        let z = Tensor::from_complex(&values(12, 1), [3, 4], &dev).unwrap();
        let before = z.to_complex_vec().unwrap();
        let (re, im) = (z.real().unwrap(), z.imag().unwrap());
        assert!(re.shares_storage(&z) && im.shares_storage(&z));
        assert_eq!(re.dtype(), DType::F32);
        assert_eq!(re.strides(), &[8, 2]);
        assert_eq!((re.offset(), im.offset()), (0, 1));
        // The example: conjugate in place through the imag view.
        z.imag().unwrap().mul_scalar_(-1.0).unwrap();
        let conj: Vec<Complex32> = before.iter().map(|v| v.conj()).collect();
        assert_eq!(z.to_complex_vec().unwrap(), conj);
        // Views of a complex view: a reversed, stepped column block.
        let v = z.slice(s![..;-1, 1..;2]).unwrap();
        assert_eq!(v.real().unwrap().strides(), &[-8, 4]);
        v.real().unwrap().fill_(7.0).unwrap();
        let after = z.to_complex_vec().unwrap();
        for (k, (a, b)) in after.iter().zip(&conj).enumerate() {
            let want = if k % 4 % 2 == 1 { c(7.0, b.im) } else { *b };
            assert_eq!(*a, want, "element {k}");
        }
        assert_eq!(
            v.to_complex_vec().unwrap(),
            [conj[9], conj[11], conj[5], conj[7], conj[1], conj[3]].map(|x| c(7.0, x.im))
        );
        // f32 ops read the views: |z|^2 from the parts.
        let mag2 = z
            .real()
            .unwrap()
            .square()
            .unwrap()
            .add(&z.imag().unwrap().square().unwrap())
            .unwrap();
        let abs = z.abs().unwrap();
        assert_eq!(abs.dtype(), DType::F32);
        let (m, a) = (mag2.to_vec::<f32>().unwrap(), abs.to_vec::<f32>().unwrap());
        for (m, a) in m.iter().zip(&a) {
            assert!((m.sqrt() - a).abs() <= 1e-6 * a.max(1.0));
        }
    }
}

#[test]
fn arithmetic_matches_an_f64_reference_on_strided_views() {
    for dev in devices() {
        let (av, bv) = (values(24, 3), values(24, 4));
        let a_full = Tensor::from_complex(&av, [4, 6], &dev).unwrap();
        let b_full = Tensor::from_complex(&bv, [6, 4], &dev).unwrap();
        // Transposed and reversed operands.
        let a = a_full.slice(s![..;-1, ..]).unwrap();
        let b = b_full.t();
        let (aw, bw) = (
            wide(&a.to_complex_vec().unwrap()),
            wide(&b.to_complex_vec().unwrap()),
        );
        let check = |t: Tensor, f: &dyn Fn(Complex64, Complex64) -> Complex64, what: &str| {
            let want: Vec<Complex64> = aw.iter().zip(&bw).map(|(&x, &y)| f(x, y)).collect();
            close(
                &t.to_complex_vec().unwrap(),
                &want,
                1e-5,
                &format!("{dev} {what}"),
            );
        };
        check(a.add(&b).unwrap(), &|x, y| x + y, "add");
        check(a.sub(&b).unwrap(), &|x, y| x - y, "sub");
        check(a.mul(&b).unwrap(), &|x, y| x * y, "mul");
        check(a.div(&b).unwrap(), &|x, y| x / y, "div");
        check(a.neg().unwrap(), &|x, _| -x, "neg");
        check(a.conj().unwrap(), &|x, _| x.conj(), "conj");
        check(a.exp().unwrap(), &|x, _| x.exp(), "exp");
        check(
            a.mul_scalar(c(0.5, 2.0)).unwrap(),
            &|x, _| x * Complex64::new(0.5, 2.0),
            "mul complex scalar",
        );
        check(
            a.add_scalar(3.0).unwrap(),
            &|x, _| x + 3.0,
            "add real scalar",
        );
        check(a.div_scalar(2).unwrap(), &|x, _| x / 2.0, "div int scalar");
        let abs = a.abs().unwrap().to_vec::<f32>().unwrap();
        let angle = a.angle().unwrap().to_vec::<f32>().unwrap();
        for (k, x) in aw.iter().enumerate() {
            assert!((abs[k] as f64 - x.norm()).abs() < 1e-5, "abs {k}");
            assert!((angle[k] as f64 - x.arg()).abs() < 1e-5, "angle {k}");
        }
        // Broadcasting a row, and a real f32 operand promoted.
        let row = Tensor::from_complex(
            &[
                c(1.0, 1.0),
                c(0.0, -1.0),
                c(2.0, 0.0),
                c(1.0, 0.0),
                c(0.0, 0.0),
                c(-1.0, 0.5),
            ],
            [6],
            &dev,
        )
        .unwrap();
        let rw = wide(&row.to_complex_vec().unwrap());
        let got = a.mul(&row).unwrap().to_complex_vec().unwrap();
        let want: Vec<Complex64> = aw.iter().enumerate().map(|(k, &x)| x * rw[k % 6]).collect();
        close(&got, &want, 1e-5, "broadcast mul");
        let real = Tensor::from_slice(&[2.0f32; 6], [6], &dev).unwrap();
        let got = a.mul(&real).unwrap().to_complex_vec().unwrap();
        let want: Vec<Complex64> = aw.iter().map(|&x| x * 2.0).collect();
        close(&got, &want, 1e-6, "real operand");
        // In place through a view of a complex tensor.
        let z = Tensor::from_complex(&av, [4, 6], &dev).unwrap();
        z.slice(s![.., ..;3])
            .unwrap()
            .mul_(&Tensor::from_complex(&[c(0.0, 1.0)], [1], &dev).unwrap())
            .unwrap();
        z.slice(s![0]).unwrap().exp_().unwrap();
        let got = z.to_complex_vec().unwrap();
        let orig = wide(&av);
        for (k, g) in got.iter().enumerate() {
            let mut w = orig[k];
            if k % 6 % 3 == 0 {
                w *= Complex64::new(0.0, 1.0);
            }
            if k < 6 {
                w = w.exp();
            }
            close(&[*g], &[w], 1e-5, &format!("in place {k}"));
        }
    }
}

/// A mean divides the complex sum by the count as a complex number, as
/// NumPy's and PyTorch's: an infinite or NaN part makes the other part NaN.
/// Expected values from NumPy 2 (`np.mean(a, axis=1)` of c64 rows).
#[test]
fn means_spread_an_infinite_or_nan_part() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let rows = [
        [c(inf, 0.0), c(1.0, 0.0)],
        [c(1.0, nan), c(1.0, 0.0)],
        [c(-1.0, -0.0), c(-3.0, -0.0)],
        [c(2.0, -inf), c(0.0, 1.0)],
    ];
    // (re, im) as NumPy gives them; NaN where NumPy's is NaN.
    let want = [(inf, nan), (nan, nan), (-2.0, 0.0), (nan, -inf)];
    for dev in devices() {
        let flat: Vec<Complex32> = rows.iter().flatten().copied().collect();
        let z = Tensor::from_complex(&flat, [4, 2], &dev).unwrap();
        let got = z.mean(1).unwrap().to_complex_vec().unwrap();
        for (i, (g, &(re, im))) in got.iter().zip(&want).enumerate() {
            let same = |x: f32, y: f32| {
                (x.is_nan() && y.is_nan())
                    || (x == y && x.is_sign_negative() == y.is_sign_negative())
            };
            assert!(
                same(g.re, re) && same(g.im, im),
                "{dev:?}: row {i}: got {g}, want ({re}, {im})"
            );
        }
        // A single pair: its mean is NaN in the other part too.
        let one = Tensor::from_complex(&rows[0], [2], &dev).unwrap();
        let m = one.mean(..).unwrap().to_complex_vec().unwrap()[0];
        assert!(m.re == inf && m.im.is_nan(), "{dev:?}: mean all {m}");
    }
}

#[test]
fn sums_means_and_matmul() {
    for dev in devices() {
        let zv = values(24, 7);
        let z = Tensor::from_complex(&zv, [2, 3, 4], &dev).unwrap();
        let zw = wide(&zv);
        let total: Complex64 = zw.iter().sum();
        close(
            &z.sum(..).unwrap().to_complex_vec().unwrap(),
            &[total],
            1e-5,
            "sum all",
        );
        let s1 = z.sum_keepdim(-2).unwrap();
        assert_eq!(s1.dims(), &[2, 1, 4]);
        let want: Vec<Complex64> = (0..8)
            .map(|k| (0..3).map(|j| zw[(k / 4) * 12 + j * 4 + k % 4]).sum())
            .collect();
        close(&s1.to_complex_vec().unwrap(), &want, 1e-5, "sum axis -2");
        let m = z.mean(Axes::from([0, 2])).unwrap();
        let want: Vec<Complex64> = (0..3)
            .map(|j| {
                (0..2)
                    .flat_map(|i| (0..4).map(move |k| (i, k)))
                    .map(|(i, k)| zw[i * 12 + j * 4 + k])
                    .sum::<Complex64>()
                    / 8.0
            })
            .collect();
        close(&m.to_complex_vec().unwrap(), &want, 1e-5, "mean");

        // Batched matmul with a transposed (strided) right operand.
        let av = values(2 * 3 * 5, 8);
        let bv = values(2 * 4 * 5, 9);
        let a = Tensor::from_complex(&av, [2, 3, 5], &dev).unwrap();
        let b = Tensor::from_complex(&bv, [2, 4, 5], &dev)
            .unwrap()
            .transpose(-1, -2)
            .unwrap();
        let prod = a.matmul(&b).unwrap();
        assert_eq!(prod.dims(), &[2, 3, 4]);
        let (aw, bw) = (wide(&av), wide(&bv));
        let want: Vec<Complex64> = (0..24)
            .map(|q| {
                let (n, i, j) = (q / 12, q / 4 % 3, q % 4);
                (0..5)
                    .map(|k| aw[n * 15 + i * 5 + k] * bw[n * 20 + j * 5 + k])
                    .sum()
            })
            .collect();
        close(
            &prod.to_complex_vec().unwrap(),
            &want,
            1e-5,
            &format!("{dev} matmul"),
        );
        // A complex matrix times a real vector.
        let v = Tensor::from_slice(&[1.0f32, 0.0, -1.0, 2.0, 0.5], [5], &dev).unwrap();
        let mv = a.slice(s![0]).unwrap().matmul(&v).unwrap();
        let want: Vec<Complex64> = (0..3)
            .map(|i| {
                (0..5)
                    .map(|k| aw[i * 5 + k] * [1.0, 0.0, -1.0, 2.0, 0.5][k])
                    .sum()
            })
            .collect();
        close(&mv.to_complex_vec().unwrap(), &want, 1e-5, "matrix-vector");
    }
}

#[test]
fn joins_copies_and_device_moves() {
    let cpu = Device::cpu();
    let z = Tensor::from_complex(&values(6, 11), [2, 3], &cpu).unwrap();
    let zv = z.to_complex_vec().unwrap();
    let joined = Tensor::concat(&[&z, &z.slice(s![..1, ..;-1]).unwrap()], 0).unwrap();
    let jv = joined.to_complex_vec().unwrap();
    assert_eq!(&jv[..6], &zv[..]);
    assert_eq!(&jv[6..], &[zv[2], zv[1], zv[0]]);
    let t = z.t().contiguous().unwrap();
    assert!(t.is_contiguous());
    assert_eq!(
        t.to_complex_vec().unwrap(),
        [zv[0], zv[3], zv[1], zv[4], zv[2], zv[5]]
    );
    if let Some(g) = gpu() {
        let on_gpu = z.t().to_device(&g).unwrap();
        assert_eq!(
            on_gpu.to_complex_vec().unwrap(),
            t.to_complex_vec().unwrap()
        );
        let back = on_gpu.mul(&on_gpu).unwrap().to_device(&cpu).unwrap();
        let want: Vec<Complex64> = wide(&t.to_complex_vec().unwrap())
            .iter()
            .map(|x| x * x)
            .collect();
        close(
            &back.to_complex_vec().unwrap(),
            &want,
            1e-5,
            "gpu round trip",
        );
    }
}

#[test]
fn complex_errors_name_the_op() {
    let dev = Device::cpu();
    let z = Tensor::from_complex(&[c(1.0, 1.0)], [1], &dev).unwrap();
    let r = Tensor::from_slice(&[1.0f32], [1], &dev).unwrap();
    let is_dtype = |e: Error, op: &str| matches!(e, Error::DType { op: o, .. } if o == op);
    assert!(is_dtype(z.max(..).unwrap_err(), "max"));
    assert!(is_dtype(z.gt(&z).unwrap_err(), "gt"));
    assert!(is_dtype(z.cumsum(0).unwrap_err(), "cumsum"));
    assert!(is_dtype(z.pow(&z).unwrap_err(), "pow"));
    assert!(is_dtype(z.sqrt().unwrap_err(), "sqrt"));
    assert!(is_dtype(
        z.take(&Tensor::from_slice(&[0i32], [1], &dev).unwrap(), 0)
            .unwrap_err(),
        "take"
    ));
    assert!(is_dtype(z.to_vec::<f32>().unwrap_err(), "to_vec"));
    assert!(is_dtype(r.imag().unwrap_err(), "imag"));
    assert!(is_dtype(r.to_complex_vec().unwrap_err(), "to_complex_vec"));
    assert!(is_dtype(z.to_dtype(DType::F32).unwrap_err(), "to_dtype"));
    assert!(is_dtype(r.assign(&z).unwrap_err(), "assign"));
    // In place, a complex scalar would make a real destination c64.
    assert!(is_dtype(r.add_scalar_(c(1.0, 1.0)).unwrap_err(), "add"));
    // A bool scalar is 1 (NumPy's `(1+1j) + True`).
    let plus = z.add_scalar(true).unwrap().to_complex_vec().unwrap();
    assert_eq!(plus, vec![c(2.0, 1.0)]);
    assert!(is_dtype(z.abs_().unwrap_err(), "abs_"));
    let ints = Tensor::from_slice(&[1i32], [1], &dev).unwrap();
    assert!(is_dtype(Tensor::complex(&ints, &r).unwrap_err(), "complex"));
    // c64 with f64 has no common dtype (no complex128).
    let wide = ints.to_dtype(DType::F64).unwrap();
    assert!(is_dtype(z.mul(&wide).unwrap_err(), "mul"));
    // Ops whose kernels take any tensor refuse c64 by name, before a
    // kernel could see it, whichever operand is complex.
    let mask = Tensor::from_slice(&[true], [1], &dev).unwrap();
    assert!(is_dtype(
        Tensor::where_cond(&mask, &z, &z).unwrap_err(),
        "where_cond"
    ));
    assert!(is_dtype(
        Tensor::where_cond(&mask, &r, &z).unwrap_err(),
        "where_cond"
    ));
    assert!(is_dtype(
        z.masked_fill(&mask, 0.0).unwrap_err(),
        "masked_fill"
    ));
    let index = Tensor::from_slice(&[0i32], [1], &dev).unwrap();
    assert!(is_dtype(r.scatter(&index, &z, 0).unwrap_err(), "scatter"));
    assert!(matches!(
        Tensor::from_interleaved(&[1.0, 2.0, 3.0], [2], &dev),
        Err(Error::Shape {
            op: "from_interleaved",
            ..
        })
    ));
    // Comparisons and fills say the op has no c64 form, not that the
    // scalar does not fit (and a real tensor is not cast to c64 first).
    let says_no_c64 = |e: Error, op: &str| matches!(&e, Error::DType { op: o, msg } if *o == op && msg.contains("not defined for dtype c64"));
    assert!(says_no_c64(z.eq_scalar(c(1.0, 2.0)).unwrap_err(), "eq"));
    assert!(says_no_c64(r.ne_scalar(c(1.5, 0.0)).unwrap_err(), "ne"));
    assert!(says_no_c64(r.lt(&z).unwrap_err(), "lt"));
    assert!(says_no_c64(
        z.masked_fill(&mask, 0.0).unwrap_err(),
        "masked_fill"
    ));
    assert!(says_no_c64(
        z.masked_fill_(&mask, 0.0).unwrap_err(),
        "masked_fill_"
    ));
    // In place, the operand broadcasts to the destination's shape, as a
    // real operand must: a higher rank is refused, naming the op and the
    // shapes as given.
    let pair = Tensor::from_complex(&[c(1.0, 1.0), c(2.0, 2.0)], [2], &dev).unwrap();
    for other in [
        Tensor::from_complex(&[c(1.0, 1.0), c(2.0, 2.0)], [1, 2], &dev).unwrap(),
        Tensor::from_slice(&[1.0f32, 2.0], [1, 2], &dev).unwrap(),
    ] {
        match pair.add_(&other) {
            Err(Error::Shape { op: "add", msg }) => assert!(msg.contains("[1, 2]"), "{msg}"),
            other => panic!("{other:?}"),
        }
    }
    match z.mul_(&Tensor::from_complex(&[c(1.0, 0.0); 3], [3], &dev).unwrap()) {
        Err(Error::Shape { op: "mul", msg }) => assert!(msg.contains("[3]"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(pair.to_complex_vec().unwrap(), [c(1.0, 1.0), c(2.0, 2.0)]);
    // A real tensor's real part is itself; its conjugate a copy.
    assert!(r.real().unwrap().shares_storage(&r));
    assert!(!r.conj().unwrap().shares_storage(&r));
}

/// The cases NumPy computed (tests/data/numpy_complex_cases.npz, written by
/// make_complex_cases.py), on the CPU.
fn numpy_complex_cases() -> Vec<(String, Tensor)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/numpy_complex_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

/// The elements of `got` that differ from `want` in their bits (any NaN
/// equal to any NaN) and from `flushed` (NumPy's answer for operands with
/// their subnormal parts flushed to zero, its subnormals flushed too: what
/// WGSL lets a GPU answer, and NVIDIA's driver does), with their inputs,
/// for a failure message.
fn differing(got: &[f32], want: &[f32], flushed: &[f32]) -> Vec<(usize, f32, f32)> {
    assert_eq!((got.len(), flushed.len()), (want.len(), want.len()));
    got.iter()
        .zip(want)
        .zip(flushed)
        .enumerate()
        .filter(|(_, ((g, w), f))| !common::same_or_flushed(**g, **w, Some(**f)))
        .map(|(i, ((&g, &w), _))| (i, g, w))
        .collect()
}

/// The quotients' references, per part (each complex case's real part,
/// then its imaginary part): NumPy's (`quot`, and `quot_ftz` on flushed
/// operands), and where NumPy's own Smith steps leave f32's normal range
/// (`out`, `out_ftz`), the quotient computed in complex128 and rounded
/// (`near`, `near_ftz`).
struct Quotients {
    quot: Vec<f32>,
    quot_ftz: Vec<f32>,
    near: Vec<f32>,
    near_ftz: Vec<f32>,
    out: Vec<bool>,
    out_ftz: Vec<bool>,
}

impl Quotients {
    fn load(cases: &[(String, Tensor)]) -> Self {
        let get = |name: &str| cases.iter().find(|(n, _)| n == name).unwrap().1.clone();
        let parts = |name: &str| -> Vec<f32> {
            let c = get(name).to_complex_vec().unwrap();
            c.iter().flat_map(|c| [c.re, c.im]).collect()
        };
        let twice = |name: &str| -> Vec<bool> {
            let m = get(name).to_vec::<bool>().unwrap();
            m.iter().flat_map(|&m| [m, m]).collect()
        };
        Quotients {
            quot: parts("quot"),
            quot_ftz: parts("quot_ftz"),
            near: parts("quot_near"),
            near_ftz: parts("quot_near_ftz"),
            out: twice("smith_out_of_range"),
            out_ftz: twice("smith_out_of_range_ftz"),
        }
    }

    /// The parts of `got` that are none of: NumPy's, NumPy's on flushed
    /// operands (flushed), or where NumPy's steps left the normal range,
    /// no farther from the complex128 quotient than NumPy's is (an
    /// infinite one is farther than any finite) give or take 2 ulp (16 ulp on flushed operands: a flushing device loses
    /// terms below 2^-126 that NumPy keeps), equal to it, or not finite
    /// where NumPy's is not either (NumPy's steps overflowed).
    fn rejected(&self, got: &[f32]) -> Vec<(usize, f32, f32, f32)> {
        let close = |g: f32, exact: f32, numpy: f32, ulps: f64| {
            let same = g.to_bits() == exact.to_bits() || (g.is_nan() && exact.is_nan());
            let far = |x: f32| (x as f64 - exact as f64).abs();
            let ulp = (exact.abs().next_up() as f64 - exact.abs() as f64).abs();
            // An overflowed NumPy answer is farther than any finite one.
            let numpy_far = if numpy.is_finite() { far(numpy) } else { 0.0 };
            let near = g.is_finite() && exact.is_finite() && far(g) <= numpy_far + ulps * ulp;
            same || near || (!g.is_finite() && !numpy.is_finite())
        };
        (0..got.len())
            .filter(|&i| {
                let g = got[i];
                !(common::same_or_flushed(g, self.quot[i], Some(self.quot_ftz[i]))
                    || (self.out[i] && close(g, self.near[i], self.quot[i], 2.0))
                    || (self.out_ftz[i]
                        && close(g, common::ftz(self.near_ftz[i]), self.quot_ftz[i], 16.0)))
            })
            .map(|i| (i, got[i], self.quot[i], self.near[i]))
            .collect()
    }
}

fn complex_parts(t: &Tensor) -> Vec<f32> {
    let c = t.to_complex_vec().unwrap();
    c.iter().flat_map(|c| [c.re, c.im]).collect()
}

#[test]
fn division_and_magnitude_neither_overflow_nor_underflow_as_numpys() {
    let cases = numpy_complex_cases();
    let get = |name: &str| cases.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let quotients = Quotients::load(&cases);
    let mag = get("abs").to_vec::<f32>().unwrap();
    let mag_ftz = get("abs_ftz").to_vec::<f32>().unwrap();
    for dev in devices() {
        let (a, b) = (
            get("a").to_device(&dev).unwrap(),
            get("b").to_device(&dev).unwrap(),
        );
        let n = a.dims()[0];
        // Contiguous, and reversed views of reversed copies.
        let flip = common::reversed_view;
        for (layout, a, b) in [
            ("contiguous", a.clone(), b.clone()),
            ("reversed", flip(&a), flip(&b)),
        ] {
            let got = complex_parts(&a.div(&b).unwrap());
            let bad = quotients.rejected(&got);
            assert!(
                bad.is_empty(),
                "{dev} {layout}: {} of {} parts of a / b differ, first (part, got, NumPy, complex128's) {:?}",
                bad.len(),
                2 * n,
                &bad[..bad.len().min(6)]
            );
            let bad = differing(&a.abs().unwrap().to_vec::<f32>().unwrap(), &mag, &mag_ftz);
            // hypot composed of f32 steps: within 2 ulp of C's.
            let far: Vec<_> = bad
                .iter()
                .filter(|(_, g, w)| {
                    !g.is_finite()
                        || !w.is_finite()
                        || (g.to_bits() as i64 - w.to_bits() as i64).abs() > 2
                })
                .collect();
            assert!(
                far.is_empty(),
                "{dev} {layout}: |a| differs: {:?}",
                &far[..far.len().min(6)]
            );
        }
        // The repro, with a scalar divisor and in place too.
        let z = Tensor::from_complex(&[Complex32::new(3.0, 4.0)], [1], &dev).unwrap();
        let q = z
            .div_scalar(Complex32::new(1e-25, 0.0))
            .unwrap()
            .to_complex_vec()
            .unwrap();
        assert_eq!(q, vec![Complex32::new(3e25, 4e25)], "{dev}");
        z.div_(&Tensor::from_complex(&[Complex32::new(0.0, 0.0)], [], &dev).unwrap())
            .unwrap();
        let inf = z.to_complex_vec().unwrap()[0];
        assert!(
            inf.re == f32::INFINITY && inf.im == f32::INFINITY,
            "{dev}: {inf}"
        );
        // Divisors past 2^126 (NVIDIA's GPUs answered 0 and NaN here, the
        // subnormal `1 / b` of Smith's form flushed to zero).
        let huge = |re: f32, im: f32| Tensor::from_complex(&[Complex32::new(re, im)], [1], &dev);
        for (a, b, want) in [
            ((0.0, 3e38), (0.0, 3e38), Complex32::new(1.0, 0.0)),
            ((3e38, -6e37), (1e38, 0.0), Complex32::new(3.0, -0.6)),
            ((1e30, 1e30), (3e38, 3e38), Complex32::new(1e30 / 3e38, 0.0)),
            // A dividend near f32's end: `a.re + a.im r` overflowed to inf.
            ((3e38, 3e38), (3e38, 3e38), Complex32::new(1.0, 0.0)),
            ((3e38, -3e38), (0.0, 2e38), Complex32::new(-1.5, -1.5)),
            ((3e38, 3e38), (1e20, 1e20), Complex32::new(3e18, 0.0)),
        ] {
            let q = huge(a.0, a.1)
                .unwrap()
                .div(&huge(b.0, b.1).unwrap())
                .unwrap()
                .to_complex_vec()
                .unwrap()[0];
            assert!(
                (q - want).norm() <= 2.0 * f32::EPSILON * want.norm(),
                "{dev}: {a:?} / {b:?} gave {q}"
            );
        }
    }
}

/// Complex division on a device that flushes subnormals to zero, as
/// NVIDIA's GPUs do (WGSL allows it), where no such GPU is lent: the CPU
/// device with the processor's flush-to-zero and denormals-are-zero modes
/// set on this thread, which runs its elementwise ops.
#[cfg(target_arch = "x86_64")]
#[test]
fn division_on_a_device_that_flushes_subnormals() {
    #[allow(deprecated)]
    use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
    let cases = numpy_complex_cases();
    let get = |name: &str| cases.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let quotients = Quotients::load(&cases);
    let dev = Device::cpu();
    let (a, b) = (get("a"), get("b"));
    let tiny = Tensor::from_slice(&[1e-40f32], [1], &dev).unwrap();
    // FTZ is bit 15 of MXCSR, DAZ bit 6.
    #[allow(deprecated)]
    let saved = unsafe { _mm_getcsr() };
    #[allow(deprecated)]
    unsafe {
        _mm_setcsr(saved | 0x8040)
    };
    let got = complex_parts(&a.div(&b).unwrap());
    let flushed = tiny.mul_scalar(1.0).unwrap().to_vec::<f32>().unwrap()[0];
    #[allow(deprecated)]
    unsafe {
        _mm_setcsr(saved)
    };
    assert_eq!(flushed, 0.0, "the CPU device's ops did not flush");
    let bad = quotients.rejected(&got);
    assert!(
        bad.is_empty(),
        "{} of {} parts of a / b differ when flushing, first (part, got, NumPy, complex128's) {:?}",
        bad.len(),
        got.len(),
        &bad[..bad.len().min(6)]
    );
}

/// `all` and `any` of c64: an element is true where either part is nonzero
/// (NumPy's `np.all([1j, 0j])` is False, `np.any` True).
#[test]
fn all_and_any_of_complex_tensors() {
    for dev in devices() {
        let z = Tensor::from_complex(
            &[
                Complex32::new(0.0, 1.0),
                Complex32::new(0.0, 0.0),
                Complex32::new(-2.0, 0.0),
                Complex32::new(f32::NAN, 0.0),
            ],
            [2, 2],
            &dev,
        )
        .unwrap();
        assert!(!z.all(..).unwrap().item::<bool>().unwrap(), "{dev}");
        assert!(z.any(..).unwrap().item::<bool>().unwrap(), "{dev}");
        assert_eq!(z.all(1).unwrap().to_vec::<bool>().unwrap(), [false, true]);
        assert_eq!(z.any(0).unwrap().to_vec::<bool>().unwrap(), [true, true]);
    }
}

/// `angle` of real tensors, as NumPy's `np.angle`: 0 or pi by sign in the
/// float dtype, f32 for integers and bool.
#[test]
fn angle_of_real_tensors() {
    let pi = std::f32::consts::PI;
    for dev in devices() {
        let ints = Tensor::from_slice(&[1i32, -2, 0], [3], &dev).unwrap();
        let got = ints.angle().unwrap();
        assert_eq!(got.dtype(), DType::F32);
        assert_eq!(got.to_vec::<f32>().unwrap(), [0.0, pi, 0.0], "{dev}");
        let flags = Tensor::from_slice(&[true, false], [2], &dev).unwrap();
        assert_eq!(flags.angle().unwrap().to_vec::<f32>().unwrap(), [0.0, 0.0]);
        let halves = Tensor::from_slice(&[-1.5f32, 2.0], [2], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        assert_eq!(halves.angle().unwrap().dtype(), DType::F16);
    }
}

/// `exp` of c64 is C99's `cexp`, as NumPy's and PyTorch's (values from
/// `np.exp` on complex64): a real argument past e^88 is `(inf, 0)`, not
/// `(inf, NaN)`; a finite result whose e^re overflows stays finite; e^re
/// of 0 with a non-finite angle is 0; the zero's sign of a real argument
/// is kept.
#[test]
fn complex_exp_follows_c99() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let cases = [
        (c(100.0, 0.0), c(inf, 0.0)),
        (c(89.0, 1.5), c(3.175_826e37, inf)),
        (c(nan, 0.0), c(nan, 0.0)),
        (c(-inf, inf), c(0.0, 0.0)),
        // glibc's cexpf (NumPy's): the zero takes the sign of the angle.
        (c(-inf, -inf), c(0.0, -0.0)),
        (c(-inf, 2.0), c(-0.0, 0.0)),
        (c(1.0, 2.0), c(-1.131_204_4, 2.471_726_7)),
        (c(0.0, -0.0), c(1.0, -0.0)),
        (c(inf, inf), c(inf, nan)),
        (c(inf, nan), c(inf, nan)),
        (c(-200.0, 1.0), c(0.0, 0.0)),
        (c(150.0, -3.0), c(-inf, -inf)),
        (c(-inf, nan), c(0.0, 0.0)),
        (c(2.0, inf), c(nan, nan)),
        // A finite re whose e^re underflows, with a non-finite angle: NaN.
        (c(-200.0, inf), c(nan, nan)),
        (c(-200.0, nan), c(nan, nan)),
        (c(-90.0, inf), c(nan, nan)),
    ];
    let z: Vec<Complex32> = cases.iter().map(|p| p.0).collect();
    for dev in devices() {
        let got = Tensor::from_complex(&z, [z.len()], &dev)
            .unwrap()
            .exp()
            .unwrap()
            .to_complex_vec()
            .unwrap();
        for ((arg, want), g) in cases.iter().zip(&got) {
            let same = |g: f32, w: f32| {
                (g.is_nan() && w.is_nan())
                    || (g == w && g.is_sign_negative() == w.is_sign_negative())
                    || (w.is_finite() && w != 0.0 && ((g - w) / w).abs() < 1e-6)
            };
            assert!(
                same(g.re, want.re) && same(g.im, want.im),
                "exp({arg}) on {dev}: got {g}, want {want}"
            );
        }
    }
}
