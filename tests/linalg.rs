//! Linear algebra against NumPy's and SciPy's answers
//! (`tests/data/make_linalg_cases.py`, computed in f64 from the same f32
//! and c64 inputs) on every device: `solve`, `inv`, `det`, `slogdet`,
//! `cholesky`, `solve_triangular`, `lu`, at sizes crossing the block of
//! 64 columns, in f32, c64 and (on the CPU) f64, with errors scaled by
//! each matrix's condition number; views, broadcast batches, singular
//! and non-positive-definite matrices, empty ones, bad input.

mod common;

use std::collections::HashMap;
use webtensor::linalg::{self, Triangle};
use webtensor::{DType, Device, Error, Side, Tensor};

fn cases() -> HashMap<String, Tensor> {
    stored("linalg_cases.npz")
}

/// The arrays of `tests/data/<file>`, by name.
fn stored(file: &str) -> HashMap<String, Tensor> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    webtensor::io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

type C = (f64, f64);

/// A stored answer (real, or `_re` and `_im` parts).
fn want(cases: &HashMap<String, Tensor>, name: &str) -> Vec<C> {
    if let Some(t) = cases.get(name) {
        return t
            .to_vec::<f64>()
            .unwrap()
            .into_iter()
            .map(|x| (x, 0.0))
            .collect();
    }
    let re = cases[&format!("{name}_re")].to_vec::<f64>().unwrap();
    let im = cases[&format!("{name}_im")].to_vec::<f64>().unwrap();
    re.into_iter().zip(im).collect()
}

fn scalar(cases: &HashMap<String, Tensor>, name: &str) -> f64 {
    cases[name]
        .to_vec::<f64>()
        .unwrap()
        .into_iter()
        .fold(1.0, f64::max)
}

/// A tensor's values as complex f64 pairs.
fn values(t: &Tensor) -> Vec<C> {
    match t.dtype() {
        DType::C64 => t
            .to_complex_vec()
            .unwrap()
            .iter()
            .map(|c| (c.re as f64, c.im as f64))
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()
            .unwrap()
            .into_iter()
            .map(|x| (x, 0.0))
            .collect(),
        _ => t
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(|x| (x as f64, 0.0))
            .collect(),
    }
}

/// The largest difference, relative to the largest reference magnitude.
fn error(got: &[C], want: &[C]) -> f64 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().map(|w| w.0.hypot(w.1)).fold(1e-30, f64::max);
    got.iter()
        .zip(want)
        .map(|(g, w)| (g.0 - w.0).hypot(g.1 - w.1))
        .fold(
            0.0,
            |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        )
        / scale
}

fn eps(dtype: DType) -> f64 {
    if dtype == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    }
}

fn check(got: &Tensor, want: &[C], tol: f64, what: &str) {
    let e = error(&values(got), want);
    assert!(e <= tol, "{what}: error {e:.3e} over {tol:.3e}");
}

/// Each case's name, its size, and the dtypes it runs in on `dev`.
fn runs(dev: &Device) -> Vec<(String, usize, DType)> {
    let mut out = vec![];
    for n in [1, 3, 8, 64, 65, 130] {
        out.push((format!("f{n}"), n, DType::F32));
        if dev.is_cpu() {
            out.push((format!("f{n}"), n, DType::F64));
        }
    }
    for n in [1, 3, 8, 65] {
        out.push((format!("c{n}"), n, DType::C64));
    }
    out
}

fn input(cases: &HashMap<String, Tensor>, name: &str, dtype: DType, dev: &Device) -> Tensor {
    cases[name].to_dtype(dtype).unwrap().to_device(dev).unwrap()
}

#[test]
fn solve_inv_det_and_slogdet_give_numpys_answers() {
    let cases = cases();
    for dev in common::devices() {
        for (name, n, dtype) in runs(&dev) {
            let a = input(&cases, &format!("{name}_a"), dtype, &dev);
            let b = input(&cases, &format!("{name}_b"), dtype, &dev);
            let cond = scalar(&cases, &format!("{name}_cond"));
            let tol = 8.0 * cond * (n as f64).sqrt() * eps(dtype);
            let what = |op: &str| format!("{op} {name} {dtype} on {dev:?}");
            let x = linalg::solve(&a, &b).unwrap();
            assert_eq!(x.shape(), b.shape());
            check(
                &x,
                &want(&cases, &format!("{name}_solve")),
                tol,
                &what("solve"),
            );
            if n <= 8 {
                let inv = linalg::inv(&a).unwrap();
                check(
                    &inv,
                    &want(&cases, &format!("{name}_inv")),
                    tol,
                    &what("inv"),
                );
            }
            // det and slogdet: relative to the magnitude, the error of the
            // log is what the factors' diagonal carries.
            let (sign, logabs) = linalg::slogdet(&a).unwrap();
            // The log's absolute error is the determinant's relative one.
            let logabs_want = want(&cases, &format!("{name}_logabs"));
            let worst = (values(&logabs).iter().zip(&logabs_want))
                .map(|(g, w)| (g.0 - w.0).abs())
                .fold(
                    0.0,
                    |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
                );
            assert!(
                worst <= tol,
                "{}: {worst:.3e} over {tol:.3e}",
                what("logabsdet")
            );
            check(
                &sign,
                &want(&cases, &format!("{name}_sign")),
                tol,
                &what("sign"),
            );
            // det where it is within f32's range (NumPy's overflows too).
            if n <= 8 {
                let det = linalg::det(&a).unwrap();
                check(
                    &det,
                    &want(&cases, &format!("{name}_det")),
                    tol,
                    &what("det"),
                );
            }
        }
    }
}

/// A real determinant whose partial products leave f32's range though it
/// does not: NumPy's (from the logs) is 1 for diag(1e30, 1e30, 1e-30,
/// 1e-30), the product of the diagonal was NaN (inf · 0) or inf; signed
/// by the row swaps and the negative entries; one truly past the range
/// infinite, as NumPy's.
#[test]
fn real_determinants_whose_partial_products_overflow() {
    for dev in common::devices() {
        for (diagonal, want) in [
            ([1e30f32, 1e30, 1e-30, 1e-30], 1.0f32),
            ([1e20, 1e20, 1e-20, 1e-20], 1.0),
            ([-1e30, 1e30, 1e-30, 1e-30], -1.0),
            ([1e30, 1e30, 1e30, 1e-30], f32::INFINITY),
        ] {
            let a = Tensor::from_slice(&diagonal, [4], &dev)
                .unwrap()
                .diag(0)
                .unwrap();
            // Rows 0 and 1 swapped: the opposite sign.
            let swapped = a
                .index_select(&Tensor::from_slice(&[1i32, 0, 2, 3], [4], &dev).unwrap(), 0)
                .unwrap();
            for (a, want) in [(a, want), (swapped, -want)] {
                let got = linalg::det(&a).unwrap().item::<f32>().unwrap();
                let close = got == want || (got - want).abs() <= 1e-5;
                assert!(close, "det of {diagonal:?} on {dev}: {got}, NumPy's {want}");
            }
        }
    }
}

/// The phase of a c64 determinant is the product of its factor's unit
/// phases (NumPy's `slogdet(1j * eye(n))` is `(1, 0)` for n a multiple of
/// 4): a sum of the f32 angles was off by 1e-5 at n = 256.
#[test]
fn complex_determinants_keep_their_phase_as_n_grows() {
    let n = 256;
    for dev in common::devices() {
        let eye = Tensor::eye(n, DType::F32, &dev).unwrap();
        let zeros = Tensor::zeros([n, n], DType::F32, &dev).unwrap();
        for (what, a) in [
            ("i eye", Tensor::complex(&zeros, &eye).unwrap()),
            (
                "-i eye",
                Tensor::complex(&zeros, &eye.neg().unwrap()).unwrap(),
            ),
        ] {
            let (sign, logabs) = linalg::slogdet(&a).unwrap();
            let s = sign.to_complex_vec().unwrap()[0];
            assert!(
                (s.re - 1.0).abs() < 1e-6 && s.im.abs() < 1e-6,
                "{what} on {dev}: {s}"
            );
            assert_eq!(logabs.to_vec::<f32>().unwrap(), [0.0]);
        }
        // A singular one: sign 0.
        let singular = Tensor::complex(&zeros, &zeros).unwrap();
        let s = linalg::slogdet(&singular)
            .unwrap()
            .0
            .to_complex_vec()
            .unwrap()[0];
        assert!(s.re == 0.0 && s.im == 0.0, "{dev}: {s}");
    }
}

/// A c64 determinant past f32's range: NumPy's `det` of the c64 matrix
/// diag(1e20, 1e20) is inf + 0i (the sign times the magnitude was a
/// complex product, whose 0 · inf made the imaginary part NaN).
#[test]
fn complex_determinants_past_f32s_range_are_infinite_not_nan() {
    for dev in common::devices() {
        let re = Tensor::from_slice(&[1e20f32, 0.0, 0.0, 1e20], [2, 2], &dev).unwrap();
        let im = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
        let d = linalg::det(&Tensor::complex(&re, &im).unwrap()).unwrap();
        let got = (
            d.real().unwrap().item::<f32>().unwrap(),
            d.imag().unwrap().item::<f32>().unwrap(),
        );
        assert_eq!(got, (f32::INFINITY, 0.0), "{dev}");
        // Singular: 0, both parts.
        let zero = Tensor::complex(&re.mul_scalar(0.0).unwrap(), &im).unwrap();
        let d = linalg::det(&zero)
            .unwrap()
            .real()
            .unwrap()
            .item::<f32>()
            .unwrap();
        assert_eq!(d, 0.0, "{dev}");
    }
}

#[test]
fn cholesky_gives_numpys_factor_in_either_triangle() {
    let cases = cases();
    for dev in common::devices() {
        for (name, n, dtype) in runs(&dev) {
            let a = input(&cases, &format!("{name}_spd"), dtype, &dev);
            let cond = scalar(&cases, &format!("{name}_chol_cond"));
            let tol = 8.0 * cond * (n as f64).sqrt() * eps(dtype);
            let l_want = want(&cases, &format!("{name}_chol"));
            let l = linalg::cholesky(&a, Triangle::Lower).unwrap();
            check(
                &l,
                &l_want,
                tol,
                &format!("cholesky {name} {dtype} on {dev:?}"),
            );
            // The upper factor reads only the upper triangle: garbage
            // below it changes nothing.
            let upper_only = a.clone().contiguous().unwrap();
            let junk = Tensor::full(a.shape().clone(), 1e3, dtype, &dev).unwrap();
            upper_only.assign(&a).unwrap();
            let mixed = junk
                .tril(-1)
                .unwrap()
                .add(&upper_only.triu(0).unwrap())
                .unwrap();
            let lower_only = junk.triu(1).unwrap().add(&a.tril(0).unwrap()).unwrap();
            let l = linalg::cholesky(&lower_only, Triangle::Lower).unwrap();
            check(
                &l,
                &l_want,
                tol,
                &format!("cholesky lower only {name} {dtype} on {dev:?}"),
            );
            let u = linalg::cholesky(&mixed, Triangle::Upper).unwrap();
            let lh = u.transpose(-2, -1).unwrap();
            let lh = if dtype == DType::C64 {
                lh.conj().unwrap()
            } else {
                lh
            };
            check(
                &lh,
                &l_want,
                tol,
                &format!("cholesky upper {name} {dtype} on {dev:?}"),
            );
        }
    }
}

#[test]
fn solve_triangular_gives_numpys_answers_on_either_side() {
    let cases = cases();
    for dev in common::devices() {
        for (name, n, dtype) in runs(&dev) {
            // The stored factor, rounded to the dtype: a lower triangle.
            let low = if dtype == DType::C64 {
                let part = |p: &str| {
                    cases[&format!("{name}_chol_{p}")]
                        .to_dtype(DType::F32)
                        .unwrap()
                };
                Tensor::complex(&part("re"), &part("im")).unwrap()
            } else {
                let f32 = cases[&format!("{name}_chol")].to_dtype(DType::F32).unwrap();
                f32.to_dtype(dtype).unwrap()
            }
            .to_device(&dev)
            .unwrap();
            let b = input(&cases, &format!("{name}_b"), dtype, &dev);
            let tol = 64.0 * n as f64 * eps(dtype);
            let want_x = want(&cases, &format!("{name}_low_solve"));
            let what = format!("{name} {dtype} on {dev:?}");
            // Junk above the diagonal is never read.
            let junk = Tensor::full(low.shape().clone(), 7.0, dtype, &dev)
                .unwrap()
                .triu(1)
                .unwrap();
            let a = low.add(&junk).unwrap();
            let x = linalg::solve_triangular(&a, &b, Triangle::Lower, Side::Left, false).unwrap();
            check(&x, &want_x, tol, &format!("left lower {what}"));
            // X · Lᵀ = Bᵀ is (L · Xᵀ = B)ᵀ: an upper triangle on the right,
            // read through a transposed view.
            let at = low.transpose(-2, -1).unwrap();
            let bt = b.transpose(-2, -1).unwrap();
            let xt =
                linalg::solve_triangular(&at, &bt, Triangle::Upper, Side::Right, false).unwrap();
            check(
                &xt.transpose(-2, -1).unwrap(),
                &want_x,
                tol,
                &format!("right upper {what}"),
            );
            // A unit diagonal is not read: L1 = strict lower part + I
            // solves, with a residual of rounding; on the right, the
            // lower triangle of a transposed view.
            let l1 = a
                .tril(-1)
                .unwrap()
                .add(&Tensor::eye(n, dtype, &dev).unwrap())
                .unwrap();
            let x = linalg::solve_triangular(&a, &b, Triangle::Lower, Side::Left, true).unwrap();
            let scale = values(&x)
                .iter()
                .map(|v| v.0.hypot(v.1))
                .fold(1.0, f64::max);
            let what_unit = format!("unit lower {what}");
            check(
                &l1.matmul(&x).unwrap(),
                &values(&b),
                tol * scale,
                &what_unit,
            );
            let u1 = l1.transpose(-2, -1).unwrap();
            let ut = a.transpose(-2, -1).unwrap();
            let xr =
                linalg::solve_triangular(&ut, &bt, Triangle::Upper, Side::Right, true).unwrap();
            let bt_values = values(&bt.contiguous().unwrap());
            check(
                &xr.matmul(&u1).unwrap(),
                &bt_values,
                tol * scale,
                &format!("unit right {what}"),
            );
        }
    }
}

#[test]
fn lu_gives_scipys_factors_and_pivots() {
    let cases = cases();
    for dev in common::devices() {
        for name in ["lu_square", "lu_wide", "lu_tall"] {
            let a = input(&cases, &format!("{name}_a"), DType::F32, &dev);
            let (p, l, u) = linalg::lu(&a).unwrap();
            let what = format!("{name} on {dev:?}");
            check(
                &p,
                &want(&cases, &format!("{name}_p")),
                0.0,
                &format!("P {what}"),
            );
            check(
                &l,
                &want(&cases, &format!("{name}_l")),
                1e-5,
                &format!("L {what}"),
            );
            check(
                &u,
                &want(&cases, &format!("{name}_u")),
                1e-5,
                &format!("U {what}"),
            );
            if let Some(piv) = cases.get(&format!("{name}_piv")) {
                let (_, got) = linalg::lu_factor(&a).unwrap();
                assert_eq!(
                    got.to_vec::<i32>().unwrap(),
                    piv.to_vec::<i32>().unwrap(),
                    "{what}"
                );
            }
        }
        // P · L · U rebuilds every matrix, past one block and batched.
        for (name, _, dtype) in runs(&dev) {
            let a = input(&cases, &format!("{name}_a"), dtype, &dev);
            let (p, l, u) = linalg::lu(&a).unwrap();
            let back = p.matmul(&l.matmul(&u).unwrap()).unwrap();
            let n = a.dims()[a.rank() - 1] as f64;
            check(
                &back,
                &values(&a),
                16.0 * n * eps(dtype),
                &format!("PLU {name} {dtype} on {dev:?}"),
            );
        }
    }
}

#[test]
fn views_and_broadcast_batches_solve_as_their_copies() {
    let cases = cases();
    for dev in common::devices() {
        for (name, dtype) in [("f65", DType::F32), ("c8", DType::C64), ("f3", DType::F32)] {
            let a = input(&cases, &format!("{name}_a"), dtype, &dev);
            let b = input(&cases, &format!("{name}_b"), dtype, &dev);
            let r = a.rank();
            // A transposed and a reversed view of the matrices.
            for view in [
                a.transpose(-2, -1).unwrap(),
                a.flip(&[(r - 1) as isize]).unwrap(),
            ] {
                let copy = view.contiguous_copy_for_test();
                let x = linalg::solve(&view, &b).unwrap();
                let y = linalg::solve(&copy, &b).unwrap();
                assert_eq!(values(&x), values(&y), "{name} view on {dev:?}");
            }
            // One matrix against a batch of right-hand sides, and a vector.
            let one = a
                .reshape([-1, a.dims()[r - 2] as isize, a.dims()[r - 1] as isize])
                .unwrap();
            let one = one.narrow(0, 0, 1).unwrap().squeeze_axis(0).unwrap();
            let bs = Tensor::stack(
                &[&b.reshape([-1, b.dims()[r - 2] as isize, 3])
                    .unwrap()
                    .narrow(0, 0, 1)
                    .unwrap()
                    .squeeze_axis(0)
                    .unwrap(); 2],
                0,
            )
            .unwrap();
            let x = linalg::solve(&one, &bs).unwrap();
            assert_eq!(x.dims()[0], 2);
            let x0 =
                linalg::solve(&one, &bs.narrow(0, 0, 1).unwrap().squeeze_axis(0).unwrap()).unwrap();
            // Other widths take other product kernels: equal to rounding.
            check(
                &x.narrow(0, 1, 1).unwrap().squeeze_axis(0).unwrap(),
                &values(&x0),
                1e-5,
                "batch",
            );
            let v = bs
                .narrow(0, 0, 1)
                .unwrap()
                .squeeze_axis(0)
                .unwrap()
                .narrow(1, 1, 1)
                .unwrap()
                .squeeze_axis(1)
                .unwrap();
            let xv = linalg::solve(&one, &v).unwrap();
            assert_eq!(xv.rank(), 1);
            check(
                &xv,
                &values(&x0.narrow(1, 1, 1).unwrap().squeeze_axis(1).unwrap()),
                1e-5,
                "vector",
            );
        }
    }
}

trait CopyForTest {
    fn contiguous_copy_for_test(&self) -> Tensor;
}

impl CopyForTest for Tensor {
    fn contiguous_copy_for_test(&self) -> Tensor {
        let out = Tensor::zeros(self.shape().clone(), self.dtype(), self.device()).unwrap();
        out.assign(self).unwrap();
        out
    }
}

#[test]
fn singular_and_indefinite_matrices_are_linalg_errors_naming_the_batch_index() {
    for dev in common::devices() {
        for dtype in [DType::F32, DType::C64] {
            // The second of three matrices is singular (its rows are
            // multiples). Its pivot's multiplier 3/7 is inexact: by the
            // reciprocal (LAPACK's getf2), 3 - 3 * fl(1/7) * 7 left a
            // pivot of -2.4e-7 on the CPU, and inv answered 1e7s.
            let data = [
                1.0f32, 2.0, 3.0, 4.0, 3.0, 3.0, 7.0, 7.0, 2.0, 0.0, 0.0, 2.0,
            ];
            let a = Tensor::from_slice(&data, [3, 2, 2], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let b = Tensor::ones([3, 2, 1], dtype, &dev).unwrap();
            for (op, e) in [
                ("solve", linalg::solve(&a, &b).unwrap_err()),
                ("inv", linalg::inv(&a).unwrap_err()),
            ] {
                match &e {
                    Error::LinAlg { op: got, msg } => {
                        assert_eq!(*got, op);
                        assert!(
                            msg.contains("batch index 1") && msg.contains("singular"),
                            "{msg}"
                        );
                    }
                    other => panic!("{op}: {other:?}"),
                }
            }
            let (_, info) = linalg::solve_ex(&a, &b).unwrap();
            assert_eq!(info.to_vec::<i32>().unwrap(), vec![0, 2, 0]);
            let (_, _, info) = linalg::lu_factor_ex(&a).unwrap();
            assert_eq!(info.to_vec::<i32>().unwrap(), vec![0, 2, 0]);
            let (sign, logabs) = linalg::slogdet(&a).unwrap();
            assert_eq!(values(&sign)[1], (0.0, 0.0));
            assert_eq!(values(&logabs)[1].0, f64::NEG_INFINITY);
            assert_eq!(values(&linalg::det(&a).unwrap())[1], (0.0, 0.0));
            // Not positive definite: the third matrix's second minor, and
            // NaN in the first.
            let spd = [
                f32::NAN,
                0.0,
                0.0,
                1.0,
                4.0,
                2.0,
                2.0,
                5.0,
                1.0,
                2.0,
                2.0,
                1.0,
            ];
            let s = Tensor::from_slice(&spd, [3, 2, 2], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            match linalg::cholesky(&s, Triangle::Lower).unwrap_err() {
                Error::LinAlg {
                    op: "cholesky",
                    msg,
                } => {
                    assert!(
                        msg.contains("batch index 0") && msg.contains("not positive definite"),
                        "{msg}"
                    )
                }
                other => panic!("cholesky: {other:?}"),
            }
            let (_, info) = linalg::cholesky_ex(&s, Triangle::Lower).unwrap();
            assert_eq!(info.to_vec::<i32>().unwrap(), vec![1, 0, 2]);
        }
    }
}

#[test]
fn empty_matrices_and_bad_input() {
    for dev in common::devices() {
        let empty = Tensor::zeros([2, 0, 0], DType::F32, &dev).unwrap();
        assert_eq!(
            linalg::det(&empty).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 1.0]
        );
        assert_eq!(linalg::inv(&empty).unwrap().shape().dims(), &[2, 0, 0]);
        // NumPy's shapes for empty matrices.
        let wide = Tensor::zeros([2, 0, 3], DType::F32, &dev).unwrap();
        let (u, s, vh) = linalg::svd(&wide, true).unwrap();
        assert_eq!(
            (u.dims(), s.dims(), vh.dims()),
            (&[2, 0, 0][..], &[2, 0][..], &[2, 3, 3][..])
        );
        assert_eq!(linalg::pinv(&wide, None).unwrap().dims(), &[2, 3, 0]);
        let (q, r) =
            linalg::qr(&wide.transpose(-2, -1).unwrap(), linalg::QrMode::Complete).unwrap();
        assert_eq!((q.dims(), r.dims()), (&[2, 3, 3][..], &[2, 3, 0][..]));
        let (w, v) = linalg::eigh(&empty, Triangle::Lower).unwrap();
        assert_eq!((w.dims(), v.dims()), (&[2, 0][..], &[2, 0, 0][..]));
        assert_eq!(
            linalg::matrix_rank(&wide, None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            vec![0, 0]
        );
        assert!(matches!(
            linalg::cond(&empty, None),
            Err(Error::LinAlg { op: "cond", .. })
        ));
        // 0 x 0 matrices (as NumPy's: `svdvals` of `(2, 0, 0)` is `(2, 0)`,
        // their rank and nuclear norm 0).
        assert_eq!(linalg::svdvals(&empty).unwrap().dims(), &[2, 0]);
        let square = Tensor::zeros([0, 0], DType::C64, &dev).unwrap();
        assert_eq!(linalg::svdvals(&square).unwrap().dims(), &[0]);
        assert_eq!(
            linalg::matrix_rank(&empty, None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            vec![0, 0]
        );
        let nuclear = linalg::matrix_norm(&empty, linalg::MatrixNorm::Nuclear).unwrap();
        assert_eq!(nuclear.to_vec::<f32>().unwrap(), vec![0.0, 0.0]);
        let a = Tensor::ones([3, 4], DType::F32, &dev).unwrap();
        let b = Tensor::ones([3], DType::F32, &dev).unwrap();
        assert!(matches!(
            linalg::solve(&a, &b),
            Err(Error::Shape { op: "solve", .. })
        ));
        assert!(matches!(
            linalg::inv(&b),
            Err(Error::Shape { op: "inv", .. })
        ));
        let sq = Tensor::eye(3, DType::F32, &dev).unwrap();
        let wrong = Tensor::ones([4, 2], DType::F32, &dev).unwrap();
        assert!(matches!(
            linalg::solve(&sq, &wrong),
            Err(Error::Shape { op: "solve", .. })
        ));
        let ints = Tensor::eye(3, DType::I32, &dev).unwrap();
        assert!(matches!(
            linalg::det(&ints),
            Err(Error::DType { op: "det", .. })
        ));
        let half = Tensor::eye(3, DType::F16, &dev).unwrap();
        assert!(matches!(
            linalg::cholesky(&half, Triangle::Lower),
            Err(Error::DType { op: "cholesky", .. })
        ));
        assert!(matches!(linalg::lu(&b), Err(Error::Shape { op: "lu", .. })));
    }
}

#[test]
fn qr_gives_numpys_factors_in_both_modes() {
    let cases = cases();
    let shapes = [
        (
            "f",
            DType::F32,
            vec![
                vec![3, 3],
                vec![2, 5, 4],
                vec![65, 65],
                vec![90, 30],
                vec![30, 90],
            ],
        ),
        (
            "c",
            DType::C64,
            vec![vec![3, 3], vec![2, 5, 4], vec![70, 20], vec![20, 70]],
        ),
    ];
    for dev in common::devices() {
        for (kind, base, list) in &shapes {
            let mut dtypes = vec![*base];
            if dev.is_cpu() && *base == DType::F32 {
                dtypes.push(DType::F64);
            }
            for shape in list {
                for &dtype in &dtypes {
                    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                    let name = format!("qr_{kind}{}", dims.join("x"));
                    let a = input(&cases, &format!("{name}_a"), dtype, &dev);
                    let (n, m) = (shape[shape.len() - 2], shape[shape.len() - 1]);
                    let k = n.min(m);
                    let cond = scalar(&cases, &format!("{name}_cond"));
                    let tol = 16.0 * cond * (n.max(m) as f64).sqrt() * eps(dtype);
                    let q_all = cases_tensor(&cases, &format!("{name}_q"));
                    let r_all = cases_tensor(&cases, &format!("{name}_r"));
                    let rank = shape.len() as isize;
                    for (mode, cols) in
                        [(linalg::QrMode::Complete, n), (linalg::QrMode::Reduced, k)]
                    {
                        let (q, r) = linalg::qr(&a, mode).unwrap();
                        let what = format!("{name} {mode:?} {dtype} on {dev:?}");
                        let q_want = q_all.narrow(rank - 1, 0, cols).unwrap();
                        let r_want = r_all.narrow(rank - 2, 0, cols).unwrap();
                        assert_eq!(q.shape(), q_want.shape(), "{what}");
                        assert_eq!(r.shape(), r_want.shape(), "{what}");
                        check(&q, &values_of(&q_want), tol, &format!("Q {what}"));
                        check(&r, &values_of(&r_want), tol, &format!("R {what}"));
                        // Q·R rebuilds A to rounding, whatever the condition.
                        let back = q.matmul(&r).unwrap();
                        check(
                            &back,
                            &values(&a),
                            8.0 * (n as f64) * eps(dtype),
                            &format!("QR {what}"),
                        );
                    }
                }
            }
        }
    }
}

/// A column led by -0 reflects as LAPACK's (`-sign(r, alpha)` with -0
/// negative), so R's diagonal is positive there, as NumPy 2.4's (f32 and
/// c64): -0 counted as positive and R was [[-1, 0], [0, -1]].
#[test]
fn qr_takes_a_leading_negative_zero_as_negative() {
    let cases: [([f32; 4], [f32; 4], [f32; 4]); 2] = [
        (
            [-0.0, 1.0, 1.0, 0.0],
            [0.0, 1.0, 1.0, 0.0],
            [1.0, 0.0, 0.0, 1.0],
        ),
        (
            [-0.0, 2.0, -1.0, 0.0],
            [0.0, -1.0, -1.0, 0.0],
            [1.0, 0.0, 0.0, -2.0],
        ),
    ];
    for dev in common::devices() {
        for (a, q_want, r_want) in cases {
            for dtype in [DType::F32, DType::C64] {
                let (q, r) = qr_2x2_real_parts(a, dtype, &dev);
                for (got, want, what) in [(q, q_want, "Q"), (r, r_want, "R")] {
                    for (g, w) in got.iter().zip(want) {
                        assert!(
                            (g - w).abs() < 1e-6,
                            "{what} {dtype} {dev}: {got:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }
}

/// The real parts of `Q` and `R` of the 2 x 2 matrix `a` (row-major) in
/// `dtype` on `dev`, reduced.
fn qr_2x2_real_parts(a: [f32; 4], dtype: DType, dev: &Device) -> (Vec<f32>, Vec<f32>) {
    let a = Tensor::from_slice(&a, [2, 2], dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
    let real = |t: &Tensor| match dtype {
        DType::C64 => t.real().unwrap().to_vec::<f32>().unwrap(),
        _ => t.to_vec::<f32>().unwrap(),
    };
    (real(&q), real(&r))
}

/// A column below the diagonal of squares past f32's range: the GPU's
/// kernel summed them in f32, where LAPACK's nrm2 scales them. 1e-30's
/// square underflowed to a zero column (no reflection: R's diagonal
/// +1 where NumPy's is -1, or 0 for 1e-30), 1e20's overflowed (a NaN
/// tau). The answers are NumPy 2's `np.linalg.qr` of the f32 matrices.
#[test]
fn qr_scales_columns_whose_squares_leave_f32s_range() {
    type Case = ([f32; 4], [f32; 4], [f32; 4]);
    let cases: [Case; 3] = [
        (
            [1.0, 0.0, 1e-30, 1.0],
            [-1.0, -1e-30, -1e-30, 1.0],
            [-1.0, -1e-30, 0.0, 1.0],
        ),
        (
            [1e20, 0.0, 1e20, 1.0],
            [-0.70710677, -0.70710677, -0.70710677, 0.70710677],
            [-1.4142136e20, -0.70710677, 0.0, 0.70710677],
        ),
        (
            [0.0, 1.0, 1e-30, 1.0],
            [0.0, -1.0, -1.0, 0.0],
            [-1e-30, -1.0, 0.0, -1.0],
        ),
    ];
    for dev in common::devices() {
        for (a, q_want, r_want) in cases {
            for dtype in [DType::F32, DType::C64] {
                let (q, r) = qr_2x2_real_parts(a, dtype, &dev);
                for (got, want, what) in [(q, q_want, "Q"), (r, r_want, "R")] {
                    let scale = want.iter().fold(0f32, |m, w| m.max(w.abs()));
                    for (k, (g, w)) in got.iter().zip(want).enumerate() {
                        // R's diagonal to 1e-5 of itself, however small.
                        let diagonal = what == "R" && k % 3 == 0;
                        let tol = 1e-5 * w.abs() + if diagonal { 0.0 } else { 1e-6 * scale };
                        assert!(
                            (g - w).abs() <= tol,
                            "{what} {dtype} {dev}: {got:?} vs {want:?}"
                        );
                    }
                }
            }
        }
        // A zero column below a tiny imaginary alpha: NumPy's R is
        // [[-1e-30, 0], [0, 1]], its Q [[-i, 0], [0, 1]].
        let re = Tensor::from_slice(&[0.0f32, 0.0, 0.0, 1.0], [2, 2], &dev).unwrap();
        let im = Tensor::from_slice(&[1e-30f32, 0.0, 0.0, 0.0], [2, 2], &dev).unwrap();
        let (q, r) =
            linalg::qr(&Tensor::complex(&re, &im).unwrap(), linalg::QrMode::Reduced).unwrap();
        let r00 = r.real().unwrap().to_vec::<f32>().unwrap()[0];
        let q00 = q.imag().unwrap().to_vec::<f32>().unwrap()[0];
        assert!(
            (r00 + 1e-30).abs() <= 1e-35 && (q00 + 1.0).abs() <= 1e-6,
            "{dev}: {r00} {q00}"
        );
    }
}

/// f64 columns whose squares leave f64's range, on the CPU (GPUs take no
/// f64): 1e-160's squares vanished (R's diagonal off by 1e-5 of itself
/// and Q's columns 1e-5 from orthonormal; below 1e-162 no reflection at
/// all), 1e160's overflowed (NaN). The answers are NumPy 2's
/// `np.linalg.qr`.
#[test]
fn qr_scales_f64_columns_whose_squares_leave_f64s_range() {
    let cpu = Device::cpu();
    for x in [1e-160, 1e-170, 1e-300, 1e160, 1e300] {
        let a = Tensor::from_slice(&[1.0, 0.0, 0.0, x, 0.0, x], [3, 2], &cpu).unwrap();
        let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
        let (q, r) = (q.to_vec::<f64>().unwrap(), r.to_vec::<f64>().unwrap());
        let h = -std::f64::consts::FRAC_1_SQRT_2;
        let what = format!("{x}: Q {q:?} R {r:?}");
        for (g, w) in q.iter().zip([1.0, 0.0, 0.0, h, 0.0, h]) {
            assert!((g - w).abs() <= 1e-15, "{what}");
        }
        let want = [1.0, 0.0, 0.0, -std::f64::consts::SQRT_2 * x];
        for (g, w) in r.iter().zip(want) {
            assert!((g - w).abs() <= 1e-15 * w.abs(), "{what}");
        }
    }
}

/// A stored answer, kept as tensors so that it can be narrowed.
fn cases_tensor(cases: &HashMap<String, Tensor>, name: &str) -> Stored {
    match cases.get(name) {
        Some(t) => Stored(t.clone(), None),
        None => Stored(
            cases[&format!("{name}_re")].clone(),
            Some(cases[&format!("{name}_im")].clone()),
        ),
    }
}

/// A stored answer: real, or real and imaginary parts (f64 each).
struct Stored(Tensor, Option<Tensor>);

impl Stored {
    fn narrow(&self, axis: isize, start: usize, len: usize) -> webtensor::Result<Stored> {
        let im = match &self.1 {
            Some(t) => Some(t.narrow(axis, start, len)?),
            None => None,
        };
        Ok(Stored(self.0.narrow(axis, start, len)?, im))
    }

    fn shape(&self) -> &webtensor::Shape {
        self.0.shape()
    }
}

fn values_of(s: &Stored) -> Vec<C> {
    let re = s.0.contiguous().unwrap().to_vec::<f64>().unwrap();
    match &s.1 {
        Some(im) => re
            .into_iter()
            .zip(im.contiguous().unwrap().to_vec::<f64>().unwrap())
            .collect(),
        None => re.into_iter().map(|x| (x, 0.0)).collect(),
    }
}

/// The largest `|(Xᴴ·X - I)|` over the matrices of `x` (`[.., r, c]`).
fn orthogonality(x: &Tensor) -> f64 {
    let xh = x.transpose(-2, -1).unwrap();
    let xh = if x.dtype() == DType::C64 {
        xh.conj().unwrap()
    } else {
        xh
    };
    let c = x.dims()[x.rank() - 1];
    let eye = Tensor::eye(c, x.dtype(), x.device()).unwrap();
    let gram = xh.matmul(x).unwrap().sub(&eye).unwrap();
    // A NaN (a 0/0 normalisation) is the worst, not skipped.
    values(&gram)
        .iter()
        .map(|g| g.0.hypot(g.1))
        .fold(
            0.0,
            |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        )
}

#[test]
fn svd_gives_numpys_singular_values_and_orthonormal_vectors() {
    let cases = cases();
    let mut names: Vec<(String, DType)> = vec![
        ("svd_rank2".into(), DType::F32),
        ("svd_f100x40".into(), DType::F32),
        ("svd_c40x70".into(), DType::C64),
        ("svd_c2x36x33".into(), DType::C64),
    ];
    for (kind, dtype, shapes) in [
        (
            "f",
            DType::F32,
            vec!["3x3", "2x5x4", "65x65", "90x30", "30x90"],
        ),
        ("c", DType::C64, vec!["3x3", "2x5x4", "70x20", "20x70"]),
    ] {
        names.extend(shapes.into_iter().map(|s| (format!("qr_{kind}{s}"), dtype)));
    }
    for dev in common::devices() {
        for (name, base) in &names {
            let mut dtypes = vec![*base];
            if dev.is_cpu() && *base == DType::F32 {
                dtypes.push(DType::F64);
            }
            for dtype in dtypes {
                let a = input(&cases, &format!("{name}_a"), dtype, &dev);
                let (n, m) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
                let k = n.min(m);
                let what = format!("{name} {dtype} on {dev:?}");
                let s_want = want(&cases, &format!("{name}_s"));
                // Singular values to a few ulps of the largest.
                let tol = 8.0 * (n.max(m) as f64).sqrt() * eps(dtype);
                check(
                    &linalg::svdvals(&a).unwrap(),
                    &s_want,
                    tol,
                    &format!("svdvals {what}"),
                );
                for full in [false, true] {
                    let (u, s, vh) = linalg::svd(&a, full).unwrap();
                    let (uc, vc) = if full { (n, m) } else { (k, k) };
                    assert_eq!(u.dims()[u.rank() - 2..], [n, uc], "{what}");
                    assert_eq!(vh.dims()[vh.rank() - 2..], [vc, m], "{what}");
                    check(&s, &s_want, tol, &format!("S {what}"));
                    assert!(
                        orthogonality(&u) <= tol * 4.0,
                        "U {what}: {}",
                        orthogonality(&u)
                    );
                    let v = vh.transpose(-2, -1).unwrap();
                    assert!(
                        orthogonality(&v) <= tol * 4.0,
                        "V {what}: {}",
                        orthogonality(&v)
                    );
                    let r = u.rank();
                    let us = u.narrow(r as isize - 1, 0, k).unwrap();
                    let us = us.mul(&s.unsqueeze(-2).unwrap()).unwrap();
                    let back = us
                        .matmul(&vh.narrow(r as isize - 2, 0, k).unwrap())
                        .unwrap();
                    check(&back, &values(&a), tol * 4.0, &format!("U·S·Vh {what}"));
                }
            }
        }
    }
}

#[test]
fn huge_pivots_panels_in_slices_and_binding_limits() {
    let cases = cases();
    for dev in common::devices() {
        // A pivot whose reciprocal is subnormal (flushed on some GPUs):
        // the column below is divided by it, not multiplied.
        let a = Tensor::from_slice(&[1e38f32, 1.0, 5e37, 1.0], [2, 2], &dev).unwrap();
        let (lu, _) = linalg::lu_factor(&a).unwrap();
        assert_eq!(
            lu.to_vec::<f32>().unwrap(),
            vec![1e38, 1.0, 0.5, 0.5],
            "{dev:?}"
        );
        // A subnormal pivot (kept on the CPU; GPUs may flush it), whose
        // reciprocal overflows.
        if dev.is_cpu() {
            let a = Tensor::from_slice(&[1e-39f32, 0.0, 0.0, 1.0], [2, 2], &dev).unwrap();
            let b = Tensor::from_slice(&[1e-39f32, 1.0], [2], &dev).unwrap();
            assert_eq!(
                linalg::solve(&a, &b).unwrap().to_vec::<f32>().unwrap(),
                vec![1.0, 1.0]
            );
        }
        // Panels of several dispatches (480 rows: 256 threads, about 58
        // columns a dispatch) and several panels of wide and tall LU.
        let mut g = webtensor::Generator::new(7);
        for (n, m) in [(480, 480), (200, 130), (130, 200)] {
            let a = g.randn([n, m], DType::F32, &dev).unwrap();
            let (p, l, u) = linalg::lu(&a).unwrap();
            let back = p.matmul(&l.matmul(&u).unwrap()).unwrap();
            let tol = 64.0 * (n as f64) * eps(DType::F32);
            check(&back, &values(&a), tol, &format!("PLU {n}x{m} on {dev:?}"));
        }
    }
    // Under a 17,408-byte binding: a 65x65 matrix (16,900 bytes) fits;
    // a batch of two does not, and the factorizations bind a whole
    // batch: a clear error, not a validation failure.
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        max_binding_bytes: Some(17_408),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let a = input(&cases, "f65_a", DType::F32, &gpu);
    let b = input(&cases, "f65_b", DType::F32, &gpu);
    let spd = input(&cases, "f65_spd", DType::F32, &gpu);
    let tol = 8.0 * scalar(&cases, "f65_cond") * 65f64.sqrt() * eps(DType::F32);
    let x = linalg::solve(&a, &b).unwrap();
    check(&x, &want(&cases, "f65_solve"), tol, "solve under the limit");
    let l = linalg::cholesky(&spd, Triangle::Lower).unwrap();
    let l_cpu = linalg::cholesky(&spd.to_device(&cpu).unwrap(), Triangle::Lower).unwrap();
    check(&l, &values(&l_cpu), 1e-5, "cholesky under the limit");
    let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
    check(
        &q.matmul(&r).unwrap(),
        &values(&a),
        1e-5,
        "qr under the limit",
    );
    let two = Tensor::stack(&[&a, &a], 0).unwrap();
    for (op, e) in [
        ("lu_factor", linalg::lu_factor(&two).unwrap_err()),
        (
            "cholesky",
            linalg::cholesky(&two, Triangle::Lower).unwrap_err(),
        ),
        ("qr", linalg::qr(&two, linalg::QrMode::Reduced).unwrap_err()),
        ("svd", linalg::svd(&two, false).unwrap_err()),
    ] {
        assert!(
            matches!(e, Error::TooLarge { op: got, .. } if got == op),
            "{op}: {e:?}"
        );
    }
}

#[test]
fn eigh_gives_numpys_eigenvalues_and_orthonormal_eigenvectors() {
    let cases = cases();
    let names = [
        ("eigh_f3x3", DType::F32),
        ("eigh_f2x3x8x8", DType::F32),
        ("eigh_f65x65", DType::F32),
        ("eigh_c3x3", DType::C64),
        ("eigh_c2x20x20", DType::C64),
        ("eigh_c40x40", DType::C64),
        ("eigh_f2x33x33", DType::F32),
    ];
    for dev in common::devices() {
        for (name, base) in names {
            let mut dtypes = vec![base];
            if dev.is_cpu() && base == DType::F32 {
                dtypes.push(DType::F64);
            }
            for dtype in dtypes {
                let a = input(&cases, &format!("{name}_a"), dtype, &dev);
                let n = a.dims()[a.rank() - 1];
                let what = format!("{name} {dtype} on {dev:?}");
                let w_want = want(&cases, &format!("{name}_w"));
                // The shift c (the largest row sum, up to sqrt(n) times the
                // spectral radius) enters the rounding.
                let tol = 32.0 * (n as f64).sqrt() * eps(dtype);
                check(
                    &linalg::eigvalsh(&a, Triangle::Lower).unwrap(),
                    &w_want,
                    tol,
                    &format!("eigvalsh {what}"),
                );
                // Junk in the triangle not read changes nothing.
                let junk = Tensor::full(a.shape().clone(), 5.0, dtype, &dev).unwrap();
                let upper = junk.tril(-1).unwrap().add(&a.triu(0).unwrap()).unwrap();
                let (w, v) = linalg::eigh(&upper, Triangle::Upper).unwrap();
                check(&w, &w_want, tol, &format!("eigh {what}"));
                assert!(
                    orthogonality(&v) <= tol * 4.0,
                    "V {what}: {}",
                    orthogonality(&v)
                );
                // A·V = V·diag(w), to rounding of ‖A‖.
                let av = a.matmul(&v).unwrap();
                let vw = v
                    .mul(&w.unsqueeze(-2).unwrap().to_dtype(dtype).unwrap())
                    .unwrap();
                check(&av, &values(&vw), tol * 4.0, &format!("A·V {what}"));
            }
        }
    }
}

/// Eigenvalues far below the largest: the GPU's (and the CPU's under
/// 8 x 8) were `σ(A + cI) - c`, and diag(1, 1e-8)'s 1e-8 was lost in
/// c's rounding: 0 for a positive definite matrix. NumPy's `eigvalsh` of
/// a diagonal matrix is its diagonal, sorted; of `Q D Qᵀ` for a
/// permutation `Q`, the same.
#[test]
fn eigenvalues_far_below_the_largest_are_kept() {
    for dev in common::devices() {
        for n in [2usize, 3, 8, 9] {
            let diagonal: Vec<f32> = (0..n)
                .map(|i| [1.0, 1e-8, -3e-7, 0.5][i % 4] / (1 + i / 4) as f32)
                .collect();
            let mut sorted = diagonal.clone();
            sorted.sort_by(f32::total_cmp);
            // The diagonal matrix, and the same with rows and columns in
            // reverse (an exact similarity).
            let d = Tensor::from_slice(&diagonal, [n], &dev)
                .unwrap()
                .diag(0)
                .unwrap();
            for (a, what) in [(d.clone(), "diag"), (d.flip(&[0, 1]).unwrap(), "reversed")] {
                for dtype in [DType::F32, DType::C64] {
                    let a = a.to_dtype(dtype).unwrap();
                    let w = linalg::eigvalsh(&a, Triangle::Lower)
                        .unwrap()
                        .to_vec::<f32>()
                        .unwrap();
                    let (w2, _) = linalg::eigh(&a, Triangle::Upper).unwrap();
                    let w2 = w2.to_vec::<f32>().unwrap();
                    for (got, which) in [(&w, "eigvalsh"), (&w2, "eigh")] {
                        for (g, want) in got.iter().zip(&sorted) {
                            assert!(
                                (g - want).abs() <= 1e-6 * want.abs(),
                                "{which} {what} {n} {dtype} on {dev}: {got:?} vs {sorted:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Singular values far below the largest keep their value: the norm of
/// a column of 1e-23s (f32; 1e-170s in f64) was taken by a plain sum of
/// squares, which vanished, so `svdvals` gave 0 and `cond` infinity for a
/// matrix NumPy finds well defined (`svdvals` [1, 1e-23], `cond` 1e23,
/// `matrix_rank(tol=0)` 2). Jacobi's sizes (below 8 on the CPU, all on
/// a GPU) and the CPU's dense path (9).
#[test]
fn singular_values_far_below_the_largest_are_kept() {
    let mut runs: Vec<(Device, DType, f64)> = vec![(Device::cpu(), DType::F64, 1e-170)];
    for dev in common::devices() {
        runs.push((dev.clone(), DType::F32, 1e-23));
        runs.push((dev, DType::C64, 1e-23));
    }
    // Read as f64 on the CPU (GPUs hold no f64).
    let host = |t: Tensor| -> Vec<f64> {
        let t = t.to_device(&Device::cpu()).unwrap();
        t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
    };
    for (dev, dtype, tiny) in runs {
        for n in [2usize, 3, 9] {
            let diagonal: Vec<f64> = (0..n).map(|i| if i == 1 { tiny } else { 1.0 }).collect();
            let a = Tensor::from_slice(&diagonal, [n], &Device::cpu())
                .unwrap()
                .diag(0)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(&dev)
                .unwrap();
            let what = format!("{n} {dtype} on {dev}");
            let s = host(linalg::svdvals(&a).unwrap());
            assert!((s[n - 1] - tiny).abs() <= 1e-6 * tiny, "{what}: {s:?}");
            let s = host(linalg::svd(&a, false).unwrap().1);
            assert!((s[n - 1] - tiny).abs() <= 1e-6 * tiny, "{what}: {s:?}");
            let cond = host(linalg::cond(&a, None).unwrap())[0];
            assert!((cond * tiny - 1.0).abs() <= 1e-6, "{what}: cond {cond}");
            let rank = host(linalg::matrix_rank(&a, Some(0.0)).unwrap());
            assert_eq!(rank, [n as f64], "{what}");
        }
        // Not diagonal: [[1, t], [0, t]] has singular values of about 1
        // and t (t / σ1 exactly), which Jacobi must rotate to, its second
        // column's squares below f32's normal range (f64's for 1e-170):
        // a guard leaving such columns unrotated gave 1.41 t.
        let a = Tensor::from_slice(&[1.0, tiny, 0.0, tiny], [2, 2], &Device::cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
            .to_device(&dev)
            .unwrap();
        let t = host(
            a.narrow(0, 0, 1)
                .unwrap()
                .narrow(1, 1, 1)
                .unwrap()
                .real()
                .unwrap(),
        )[0];
        let s = host(linalg::svdvals(&a).unwrap());
        let big =
            ((1.0 + 2.0 * t * t + ((1.0 + 2.0 * t * t).powi(2) - 4.0 * t * t).sqrt()) / 2.0).sqrt();
        let want = t / big;
        assert!(
            (s[1] - want).abs() <= 1e-6 * want,
            "graded {dtype} on {dev}: {s:?} for {want:e}"
        );
    }
}

#[test]
fn norms_cond_rank_pinv_and_lstsq_give_numpys_answers() {
    use linalg::MatrixNorm;
    let cases = cases();
    let mut names: Vec<(String, DType)> = vec![("svd_rank2".into(), DType::F32)];
    for (kind, dtype, shapes) in [
        (
            "f",
            DType::F32,
            vec!["3x3", "2x5x4", "65x65", "90x30", "30x90"],
        ),
        ("c", DType::C64, vec!["3x3", "2x5x4", "70x20", "20x70"]),
    ] {
        names.extend(shapes.into_iter().map(|s| (format!("qr_{kind}{s}"), dtype)));
    }
    let ords = [
        ("fro", MatrixNorm::Frobenius),
        ("nuc", MatrixNorm::Nuclear),
        ("two", MatrixNorm::Two),
        ("negtwo", MatrixNorm::NegTwo),
        ("one", MatrixNorm::One),
        ("negone", MatrixNorm::NegOne),
        ("inf", MatrixNorm::Inf),
        ("neginf", MatrixNorm::NegInf),
    ];
    for dev in common::devices() {
        for (name, base) in &names {
            let mut dtypes = vec![*base];
            // The rank-2 matrix is rank 4 at f64's resolution.
            if dev.is_cpu() && *base == DType::F32 && name != "svd_rank2" {
                dtypes.push(DType::F64);
            }
            for dtype in dtypes {
                let a = input(&cases, &format!("{name}_a"), dtype, &dev);
                let (n, m) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
                let what = format!("{name} {dtype} on {dev:?}");
                let tol = 16.0 * (n.max(m) as f64).sqrt() * eps(dtype);
                for (key, ord) in ords {
                    let got = linalg::matrix_norm(&a, ord).unwrap();
                    let want_norm = want(&cases, &format!("{name}_norm_{key}"));
                    if name == "svd_rank2" && key == "negtwo" {
                        // The smallest singular value of the rank-2 matrix
                        // is rounding: within tol of the largest.
                        let top = values(&linalg::matrix_norm(&a, MatrixNorm::Two).unwrap())[0].0;
                        assert!(values(&got)[0].0 <= tol * top, "norm -2 {what}");
                        continue;
                    }
                    check(&got, &want_norm, tol, &format!("norm {key} {what}"));
                }
                let rank = linalg::matrix_rank(&a, None).unwrap();
                let rank_want = cases[&format!("{name}_rank")].to_vec::<i64>().unwrap();
                assert_eq!(rank.to_vec::<i64>().unwrap(), rank_want, "rank {what}");
                let pinv = linalg::pinv(&a, None).unwrap();
                assert_eq!(pinv.dims()[pinv.rank() - 2..], [m, n], "{what}");
                let cond = scalar(&cases, &format!("{name}_cond2"));
                let p_want = want(&cases, &format!("{name}_pinv"));
                if name == "svd_rank2" {
                    // Past the cutoff, the pseudo-inverse of the rank-2
                    // part: conditioned by its own two singular values.
                    check(&pinv, &p_want, 1e-4, &format!("pinv {what}"));
                } else {
                    check(&pinv, &p_want, tol * cond, &format!("pinv {what}"));
                    let c = linalg::cond(&a, None).unwrap();
                    check(
                        &c,
                        &want(&cases, &format!("{name}_cond2")),
                        tol * cond,
                        &format!("cond {what}"),
                    );
                }
                if n == m {
                    let c1 = linalg::cond(&a, Some(MatrixNorm::One)).unwrap();
                    let c1_want = want(&cases, &format!("{name}_cond1"));
                    check(&c1, &c1_want, tol * cond * 4.0, &format!("cond 1 {what}"));
                }
            }
        }
        // Least squares, over- and underdetermined.
        for name in ["qr_f90x30", "qr_f30x90"] {
            let a = input(&cases, &format!("{name}_a"), DType::F32, &dev);
            let b = input(&cases, &format!("{name}_lstsq_b"), DType::F32, &dev);
            let cond = scalar(&cases, &format!("{name}_cond2"));
            let tol = 16.0 * 90f64.sqrt() * eps(DType::F32) * cond;
            let fit = linalg::lstsq(&a, &b, None).unwrap();
            check(
                &fit.solution,
                &want(&cases, &format!("{name}_lstsq_x")),
                tol,
                &format!("lstsq {name} on {dev:?}"),
            );
            let res = want(&cases, &format!("{name}_lstsq_res"));
            if res.is_empty() {
                assert_eq!(fit.residuals.numel(), 0, "{name}");
            } else {
                check(
                    &fit.residuals,
                    &res,
                    tol,
                    &format!("residuals {name} on {dev:?}"),
                );
            }
            assert_eq!(fit.rank.to_vec::<i64>().unwrap(), vec![30], "{name}");
        }
    }
}

#[test]
fn dense_decompositions_of_degenerate_and_non_finite_matrices() {
    // The CPU's dense path (8 rows and columns or more): repeated
    // eigenvalues and zero singular values still give orthonormal
    // vectors; NaN or infinity is Error::LinAlg naming the batch index.
    let dev = Device::cpu();
    for dtype in [DType::F32, DType::F64, DType::C64] {
        let tol = 64.0 * eps(dtype);
        let eye = Tensor::eye(40, dtype, &dev).unwrap();
        let (w, v) = linalg::eigh(&eye.mul_scalar(3.0).unwrap(), Triangle::Lower).unwrap();
        check(&w, &vec![(3.0, 0.0); 40], tol, &format!("eigh 3I {dtype}"));
        assert!(orthogonality(&v) <= tol, "eigh 3I {dtype}");
        let zeros = Tensor::zeros([40, 50], dtype, &dev).unwrap();
        let (u, s, vh) = linalg::svd(&zeros, true).unwrap();
        check(&s, &vec![(0.0, 0.0); 40], tol, &format!("svd 0 {dtype}"));
        assert!(
            orthogonality(&u) <= tol && orthogonality(&vh) <= tol,
            "svd 0 {dtype}"
        );
        // Rank one: x yᵀ with |x| = |y| = 1 has σ = (1, 0, ...).
        let x = Tensor::ones([36, 1], dtype, &dev)
            .unwrap()
            .div_scalar(6.0)
            .unwrap();
        let y = Tensor::ones([1, 49], dtype, &dev)
            .unwrap()
            .div_scalar(7.0)
            .unwrap();
        let (u, s, vh) = linalg::svd(&x.matmul(&y).unwrap(), false).unwrap();
        let mut want = vec![(0.0, 0.0); 36];
        want[0] = (1.0, 0.0);
        check(&s, &want, tol, &format!("svd rank 1 {dtype}"));
        assert!(orthogonality(&u) <= tol, "svd rank 1 U {dtype}");
        let v = vh.transpose(-2, -1).unwrap();
        assert!(orthogonality(&v) <= tol, "svd rank 1 V {dtype}");
        // Near f32's overflow and underflow (faer's reductions do not
        // scale; the op does): the values of a scaled matrix are the
        // scaled values, on both sides of faer's divide-and-conquer
        // crossover (128).
        for n in [16, 130] {
            let part = |seed| Tensor::randn([n, n], DType::F32, seed, &dev).unwrap();
            let a = match dtype {
                DType::C64 => Tensor::complex(&part(3), &part(4)).unwrap(),
                _ => part(3).to_dtype(dtype).unwrap(),
            };
            let h = a.add(&a.transpose(0, 1).unwrap().conj().unwrap()).unwrap();
            let (w, s) = (
                values(&linalg::eigvalsh(&h, Triangle::Lower).unwrap()),
                values(&linalg::svdvals(&a).unwrap()),
            );
            for scale in [1e36, 1e-37] {
                let big = |t: &Tensor| t.mul_scalar(scale).unwrap();
                let w_scaled = linalg::eigvalsh(&big(&h), Triangle::Lower)
                    .unwrap()
                    .div_scalar(scale)
                    .unwrap();
                let s_scaled = linalg::svdvals(&big(&a))
                    .unwrap()
                    .div_scalar(scale)
                    .unwrap();
                let what = format!("{n}x{n} {dtype} scaled by {scale:e}");
                let tol = 16.0 * (n as f64).sqrt() * eps(dtype);
                check(&w_scaled, &w, tol, &format!("eigvalsh {what}"));
                check(&s_scaled, &s, tol, &format!("svdvals {what}"));
            }
        }
        let mut data = vec![0.5f32; 2 * 40 * 40];
        data[40 * 40 + 3 * 40 + 7] = f32::NAN;
        let bad = Tensor::from_slice(&data, [2, 40, 40], &dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        for (op, e) in [
            ("svd", linalg::svd(&bad, false).map(drop).unwrap_err()),
            ("svdvals", linalg::svdvals(&bad).map(drop).unwrap_err()),
            (
                "eigh",
                linalg::eigh(&bad, Triangle::Upper).map(drop).unwrap_err(),
            ),
        ] {
            match e {
                Error::LinAlg { op: got, msg } => {
                    assert_eq!(got, op);
                    assert!(msg.contains("batch index 1"), "{msg}");
                }
                other => panic!("{op} {dtype}: {other:?}"),
            }
        }
        let (_, s, _, info) = linalg::svd_ex(&bad, false).unwrap();
        assert_eq!(info.to_vec::<i32>().unwrap(), vec![0, 1], "{dtype}");
        let s = values(&s);
        assert!(s[..40].iter().all(|x| x.0.is_finite()) && s[40..].iter().all(|x| x.0.is_nan()));
    }
}

#[test]
fn non_finite_matrices_are_linalg_errors_for_svd_and_eigh() {
    for dev in common::devices() {
        for dtype in [DType::F32, DType::C64] {
            // The second of three matrices holds NaN, as NumPy's SVD
            // raises "did not converge"; infinity likewise for eigh.
            let mut data = vec![
                1.0f32,
                2.0,
                3.0,
                4.0,
                1.0,
                f32::NAN,
                0.0,
                1.0,
                2.0,
                0.0,
                0.0,
                2.0,
            ];
            let a = Tensor::from_slice(&data, [3, 2, 2], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            for (op, e) in [
                ("svd", linalg::svd(&a, false).map(drop).unwrap_err()),
                ("svdvals", linalg::svdvals(&a).map(drop).unwrap_err()),
            ] {
                match e {
                    Error::LinAlg { op: got, msg } => {
                        assert_eq!(got, op);
                        assert!(
                            msg.contains("batch index 1") && msg.contains("NaN"),
                            "{msg}"
                        );
                    }
                    other => panic!("{op}: {other:?}"),
                }
            }
            let (u, s, vh, info) = linalg::svd_ex(&a, false).unwrap();
            assert_eq!(
                info.to_vec::<i32>().unwrap(),
                vec![0, 1, 0],
                "{dtype} on {dev:?}"
            );
            // Its factors are all NaN, as svd_ex says (Jacobi's rotations
            // left [[NaN, 1], [1, 1]]'s second column and its σ finite:
            // a finite -2 norm, a rank of 1), the others finite.
            for (name, f) in [("u", &u), ("s", &s), ("vh", &vh)] {
                for (b, nan) in [(0, false), (1, true), (2, false)] {
                    let v = values(&f.narrow(0, b, 1).unwrap());
                    assert!(
                        v.iter().all(|v| (v.0.is_nan() || v.1.is_nan()) == nan),
                        "{name} of matrix {b} {dtype} on {dev:?}: {v:?}"
                    );
                }
            }
            let least = linalg::matrix_norm(&a, linalg::MatrixNorm::NegTwo).unwrap();
            let least = least.to_vec::<f32>().unwrap();
            assert!(
                least[1].is_nan() && least[0].is_finite() && least[2].is_finite(),
                "{least:?}"
            );
            data[5] = 0.0;
            data[6] = f32::INFINITY;
            let h = Tensor::from_slice(&data, [3, 2, 2], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            for (op, e) in [
                (
                    "eigh",
                    linalg::eigh(&h, Triangle::Lower).map(drop).unwrap_err(),
                ),
                (
                    "eigvalsh",
                    linalg::eigvalsh(&h, Triangle::Lower).map(drop).unwrap_err(),
                ),
            ] {
                assert!(
                    matches!(&e, Error::LinAlg { op: got, msg } if *got == op && msg.contains("batch index 1")),
                    "{op}: {e:?}"
                );
            }
            // The upper triangle alone is finite: no error.
            assert!(
                linalg::eigh(&h, Triangle::Upper).is_ok(),
                "{dtype} on {dev:?}"
            );
            // What reads nothing back gives NaN.
            let p = linalg::pinv(&a, None).unwrap();
            let p = values(&p.narrow(0, 1, 1).unwrap());
            assert!(
                p.iter().all(|v| v.0.is_nan() || v.1.is_nan()),
                "pinv {dtype} on {dev:?}"
            );
        }
    }
}

#[test]
fn one_column_scaled_and_hermitian_corner_cases() {
    let c = |re: f32, im: f32| webtensor::Complex32::new(re, im);
    for dev in common::devices() {
        let t =
            |data: &[f32], dims: &[usize]| Tensor::from_slice(data, dims.to_vec(), &dev).unwrap();
        let close = |got: &Tensor, want: &[f64], rel: f64, what: &str| {
            let want: Vec<C> = want.iter().map(|&w| (w, 0.0)).collect();
            check(got, &want, rel, &format!("{what} on {dev:?}"));
        };
        // One column, one row, one element: nothing to rotate.
        close(
            &linalg::svdvals(&t(&[3.0, 4.0], &[2, 1])).unwrap(),
            &[5.0],
            1e-6,
            "svdvals 2x1",
        );
        close(
            &linalg::svdvals(&t(&[3.0, 0.0, 4.0, 0.0], &[1, 4])).unwrap(),
            &[5.0],
            1e-6,
            "svdvals 1x4",
        );
        let (u, s, vh) = linalg::svd(&t(&[-2.0], &[1, 1]), true).unwrap();
        let back = u
            .mul(&s.unsqueeze(0).unwrap())
            .unwrap()
            .matmul(&vh)
            .unwrap();
        close(&back, &[-2.0], 1e-6, "svd 1x1");
        let (w, v) = linalg::eigh(&t(&[2.0, 7.0], &[2, 1, 1]), Triangle::Lower).unwrap();
        close(&w, &[2.0, 7.0], 1e-6, "eigh 1x1");
        close(&v.abs().unwrap(), &[1.0, 1.0], 1e-6, "eigh 1x1 vectors");
        // Entries far from 1 either way: the matrices are scaled.
        let golden = [1.618_033_988_749_895, 0.618_033_988_749_895];
        let big = t(&[1.0, 1.0, 0.0, 1.0], &[2, 2]).mul_scalar(5e9).unwrap();
        close(
            &linalg::svdvals(&big).unwrap(),
            &golden.map(|x| x * 5e9),
            1e-6,
            "svdvals 5e9",
        );
        let tiny = t(&[1.0, 1.0, 0.0, 1.0], &[2, 2]).mul_scalar(1e-24).unwrap();
        close(
            &linalg::svdvals(&tiny).unwrap(),
            &golden.map(|x| x * 1e-24),
            1e-6,
            "svdvals 1e-24",
        );
        let huge = t(&[3e19, 0.0, 0.0, 3e19], &[2, 2]);
        close(
            &linalg::svdvals(&huge).unwrap(),
            &[3e19, 3e19],
            1e-6,
            "svdvals 3e19",
        );
        let swap = t(&[0.0, 4e9, 4e9, 0.0], &[2, 2]);
        close(
            &linalg::eigvalsh(&swap, Triangle::Lower).unwrap(),
            &[-4e9, 4e9],
            1e-6,
            "eigvalsh 4e9",
        );
        for scale in [1e-24f32, 1e19] {
            let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).mul_scalar(scale).unwrap();
            let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
            let want: Vec<f64> = [1.0, 2.0, 3.0, 4.0]
                .iter()
                .map(|x| x * f64::from(scale))
                .collect();
            close(
                &q.matmul(&r).unwrap(),
                &want,
                1e-6,
                &format!("qr at {scale:e}"),
            );
        }
        // The zero matrix's condition number is infinite, as NumPy's.
        let zero = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
        assert_eq!(
            values(&linalg::cond(&zero, None).unwrap())[0].0,
            f64::INFINITY
        );
        // Hermitian from one triangle: the other, and the diagonal's
        // imaginary parts, are not read.
        let h = Tensor::from_complex(
            &[c(2.0, 0.0), c(9.0, 9.0), c(1.0, -1.0), c(3.0, 0.0)],
            [2, 2],
            &dev,
        );
        let noisy = Tensor::from_complex(
            &[c(2.0, 5.0), c(-7.0, 2.0), c(1.0, -1.0), c(3.0, -4.0)],
            [2, 2],
            &dev,
        );
        let (h, noisy) = (h.unwrap(), noisy.unwrap());
        let want = values(&linalg::eigvalsh(&h, Triangle::Lower).unwrap());
        check(
            &linalg::eigvalsh(&noisy, Triangle::Lower).unwrap(),
            &want,
            1e-6,
            "eigvalsh junk",
        );
        let (w, _) = linalg::eigh(&h, Triangle::Lower).unwrap();
        // [[2, 1+i], [1-i, 3]]: (5 ± 3) / 2.
        close(&w, &[1.0, 4.0], 1e-6, "eigh hermitian");
        // Far taller than wide: QR first, then Jacobi on R.
        let mut g = webtensor::Generator::new(17);
        let tall = g.randn([2, 200, 3], DType::F32, &dev).unwrap();
        for full in [false, true] {
            let (u, s, vh) = linalg::svd(&tall, full).unwrap();
            assert_eq!(u.dims(), &[2, 200, if full { 200 } else { 3 }]);
            assert!(
                orthogonality(&u) <= 1e-5,
                "tall U {full} on {dev:?}: {}",
                orthogonality(&u)
            );
            let us = u
                .narrow(-1, 0, 3)
                .unwrap()
                .mul(&s.unsqueeze(-2).unwrap())
                .unwrap();
            check(
                &us.matmul(&vh).unwrap(),
                &values(&tall),
                1e-5,
                &format!("tall U·S·Vh on {dev:?}"),
            );
        }
    }
}

#[test]
fn rank_deficient_least_squares_and_complex_panels() {
    let cases = cases();
    for dev in common::devices() {
        for (kind, dtype) in [("f", DType::F32), ("c", DType::C64)] {
            let a = input(&cases, &format!("lstsq_{kind}_rank_a"), dtype, &dev);
            let b = input(&cases, &format!("lstsq_{kind}_rank_b"), dtype, &dev);
            let fit = linalg::lstsq(&a, &b, Some(6.0 * f64::from(f32::EPSILON))).unwrap();
            let what = format!("lstsq rank 2 {dtype} on {dev:?}");
            check(
                &fit.solution,
                &want(&cases, &format!("lstsq_{kind}_rank_x")),
                1e-4,
                &what,
            );
            let rank = cases[&format!("lstsq_{kind}_rank_rank")]
                .to_vec::<i64>()
                .unwrap();
            assert_eq!(fit.rank.to_vec::<i64>().unwrap(), rank, "{what}");
        }
        // Complex QR over three panels (130 x 150: k = 130), wide.
        let mut g = webtensor::Generator::new(23);
        let re = g.randn([130, 150], DType::F32, &dev).unwrap();
        let im = g.randn([130, 150], DType::F32, &dev).unwrap();
        let a = Tensor::complex(&re, &im).unwrap();
        let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
        assert!(
            orthogonality(&q) <= 1e-5,
            "complex Q on {dev:?}: {}",
            orthogonality(&q)
        );
        check(
            &q.matmul(&r).unwrap(),
            &values(&a),
            2e-6 * 130.0,
            &format!("complex QR on {dev:?}"),
        );
        let lower = values(&r.tril(-1).unwrap());
        assert!(
            lower.iter().all(|v| *v == (0.0, 0.0)),
            "R is upper on {dev:?}"
        );
    }
}

/// Edges where NumPy's answer was missed: lstsq with a negative rcond (ε,
/// as LAPACK's gelsd: `np.linalg.lstsq([[1, 0], [0, 0], [0, 0]], [1, 1,
/// 1], rcond=-1)` is `[1, 0]` of rank 1; 1/0 made it infinite, of rank
/// 2); eigenvalues of finite f32 matrices near f32's largest (`eigvalsh`
/// of `[[2e38, 0], [0, 1]]` is `[1, 2e38]`, of `[[1.5e38, 1e38], [1e38,
/// 1]]` about `[-5e37, 2e38]`: the shift overflowed and gave an error); the
/// -2 norm of an empty matrix (NumPy raises; the 2 norm is 0).
#[test]
fn negative_rcond_huge_eigenvalues_and_empty_norms_follow_numpy() {
    for dev in common::devices() {
        let a = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 0.0, 0.0, 0.0], [3, 2], &dev).unwrap();
        let b = Tensor::from_slice(&[1.0f32, 1.0, 1.0], [3], &dev).unwrap();
        let fit = linalg::lstsq(&a, &b, Some(-1.0)).unwrap();
        assert_eq!(fit.solution.to_vec::<f32>().unwrap(), [1.0, 0.0], "{dev:?}");
        assert_eq!(fit.rank.to_vec::<i64>().unwrap(), [1], "{dev:?}");
        for (m, want) in [
            ([2e38f32, 0.0, 0.0, 1.0], [1.0f64, 2e38]),
            ([1.5e38, 1e38, 1e38, 1.0], [-5e37, 2e38]),
        ] {
            let a = Tensor::from_slice(&m, [2, 2], &dev).unwrap();
            let w = linalg::eigvalsh(&a, Triangle::Lower).unwrap();
            let w: Vec<f64> = w
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect();
            // A few ulps of the norm (2e38 and about 2.1e38).
            for (g, x) in w.iter().zip(want) {
                assert!((g - x).abs() <= 1e33, "{m:?} on {dev:?}: {w:?}");
            }
        }
        let empty = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
        let two = linalg::matrix_norm(&empty, linalg::MatrixNorm::Two).unwrap();
        assert_eq!(two.to_vec::<f32>().unwrap(), [0.0]);
        // In an empty batch too (NumPy and PyTorch raise for (0, 0, 3)).
        for dims in [[0, 3].as_slice(), &[0, 0, 3]] {
            let empty = Tensor::zeros(dims, DType::F32, &dev).unwrap();
            let neg = linalg::matrix_norm(&empty, linalg::MatrixNorm::NegTwo);
            assert!(
                matches!(
                    neg,
                    Err(Error::Argument {
                        op: "matrix_norm",
                        ..
                    })
                ),
                "{dims:?}: {neg:?}"
            );
        }
    }
}

/// Empty matrices in the 1 and inf norms are 0 (the largest of no sums),
/// as NumPy's and PyTorch's (`np.linalg.norm(zeros((2, 3, 0)), 1, axis=(-2,
/// -1))` is `[0, 0]`); lstsq promotes before it checks dtypes (an i32 `a`
/// beside an f32 `b`, as NumPy's and `solve`), and the residual of a
/// vector `b` is NumPy's `(1,)` (`lstsq([[1, 0], [0, 1], [1, 1]], [1, 2,
/// 4])` gives `[1/3]`; it was 0-d), of an underdetermined one `(0,)`.
#[test]
fn empty_norms_and_promoted_lstsq_follow_numpy() {
    use linalg::MatrixNorm;
    for dev in common::devices() {
        for dims in [[2, 3, 0], [2, 0, 3], [1, 0, 0]] {
            let a = Tensor::zeros(dims, DType::F32, &dev).unwrap();
            for ord in [MatrixNorm::One, MatrixNorm::Inf] {
                let got = linalg::matrix_norm(&a, ord).unwrap();
                assert_eq!(got.dims(), &dims[..1], "{dims:?} {ord:?} on {dev}");
                assert!(got.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
            }
        }
        let a = Tensor::from_slice(&[1i32, 0, 0, 1, 1, 1], [3, 2], &dev).unwrap();
        let b = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev).unwrap();
        let x = linalg::lstsq(&a, &b, None).unwrap().solution;
        let x = x.to_vec::<f32>().unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-5 && (x[1] - 2.0).abs() < 1e-5,
            "{dev}: {x:?}"
        );
        let b = Tensor::from_slice(&[1.0f32, 2.0, 4.0], [3], &dev).unwrap();
        let fit = linalg::lstsq(&a, &b, None).unwrap();
        assert_eq!(fit.residuals.dims(), [1], "{dev}");
        let r = fit.residuals.to_vec::<f32>().unwrap()[0];
        assert!((r - 1.0 / 3.0).abs() < 1e-5, "{dev}: {r}");
        let wide = a.transpose(0, 1).unwrap();
        let fit = linalg::lstsq(&wide, &b.narrow(0, 0, 2).unwrap(), None).unwrap();
        assert_eq!(fit.residuals.dims(), [0], "{dev}");
        assert_eq!(fit.solution.dims(), [3], "{dev}");
    }
}

/// A real determinant is the product of the LU diagonal, signed by the
/// swaps (PyTorch's): exact wherever the products are (`diag(3, 5, 7)` is
/// 105, not exp(log 3 + log 5 + log 7) = 104.99998 in f32), -1 for a
/// swap, 1 for no matrix.
#[test]
fn real_determinants_are_products() {
    for dev in common::devices() {
        let diag = |v: &[f32]| {
            Tensor::from_slice(v, [v.len()], &dev)
                .unwrap()
                .diag(0)
                .unwrap()
        };
        let det = |a: &Tensor| linalg::det(a).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(det(&diag(&[3.0, 5.0, 7.0])), [105.0], "{dev}");
        assert_eq!(det(&diag(&[2.0, 3.0, 4.0, 5.0, 6.0])), [720.0], "{dev}");
        let swap = Tensor::from_slice(&[0.0f32, 2.0, 3.0, 0.0], [2, 2], &dev).unwrap();
        assert_eq!(det(&swap), [-6.0], "{dev}");
        let none = Tensor::zeros([2, 0, 0], DType::F32, &dev).unwrap();
        assert_eq!(det(&none), [1.0, 1.0], "{dev}");
    }
}

/// A matrix holding NaN: PyTorch's `slogdet` gives a real sign 0 and a
/// NaN log-magnitude (`[[nan, 1], [1, 1]]` and `diag(nan, -2)`), a c64
/// one NaN for both; `det` is NaN. The sign was ±1.
/// LU pivots as LAPACK's `i?amax` chooses: a NaN on the diagonal stays
/// (nothing is larger), so a matrix holding NaN there is no singular
/// matrix: NumPy's `inv([[nan, 1], [0, 1]])` is NaN in its first row, not
/// an error. The zero pivot was taken instead ("U[0, 0] is exactly
/// zero"). A NaN below a zero diagonal is never larger: NumPy's
/// `inv([[0, 1], [nan, 1]])` is singular, and so is ours.
#[test]
fn a_nan_on_the_diagonal_is_its_pivot() {
    for dev in common::devices() {
        for dtype in [DType::F32, DType::C64] {
            let a = Tensor::from_slice(&[f32::NAN, 1.0, 0.0, 1.0], [2, 2], &dev).unwrap();
            let a = a.to_dtype(dtype).unwrap();
            let inverse = linalg::inv(&a).unwrap().real().unwrap();
            let inverse = inverse.to_vec::<f32>().unwrap();
            assert!(
                inverse.iter().any(|x| x.is_nan()),
                "{dev} {dtype}: {inverse:?}"
            );
            let b = Tensor::from_slice(&[1.0f32, 2.0], [2], &dev).unwrap();
            let x = linalg::solve(&a, &b.to_dtype(dtype).unwrap()).unwrap();
            assert!(
                x.real().unwrap().to_vec::<f32>().unwrap()[0].is_nan(),
                "{dev} {dtype}"
            );
            let below = Tensor::from_slice(&[0.0f32, 1.0, f32::NAN, 1.0], [2, 2], &dev).unwrap();
            let below = below.to_dtype(dtype).unwrap();
            assert!(
                matches!(linalg::inv(&below), Err(Error::LinAlg { .. })),
                "{dev} {dtype}"
            );
        }
    }
}

#[test]
fn determinants_of_matrices_holding_nan() {
    for dev in common::devices() {
        for data in [[f32::NAN, 1.0, 1.0, 1.0], [f32::NAN, 0.0, 0.0, -2.0]] {
            let a = Tensor::from_slice(&data, [2, 2], &dev).unwrap();
            let (sign, logabs) = linalg::slogdet(&a).unwrap();
            assert_eq!(sign.to_vec::<f32>().unwrap(), [0.0], "{dev} {data:?}");
            assert!(logabs.to_vec::<f32>().unwrap()[0].is_nan(), "{dev}");
            assert!(linalg::det(&a).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
            let zeros = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
            let c = Tensor::complex(&a, &zeros).unwrap();
            let (sign, logabs) = linalg::slogdet(&c).unwrap();
            let s = sign.to_complex_vec().unwrap()[0];
            assert!(s.re.is_nan() && s.im.is_nan(), "{dev} {data:?}: {s}");
            assert!(logabs.to_vec::<f32>().unwrap()[0].is_nan(), "{dev}");
        }
    }
}

#[test]
fn equal_columns_decompose_without_nan() {
    // Every column of a rank-1 matrix equal: after the first rotation or
    // reflection, the others' noise shrinks by an ulp a step until it is
    // subnormal, where Jacobi's 1 / |γ| and Householder's 1 / (α - β)
    // were infinite: svd and svdvals of ones(7, 7) and up, and Q of
    // ones(20, 8), were NaN on both devices with a status of 0.
    for dev in common::devices() {
        for dtype in [DType::F32, DType::C64] {
            for (n, m) in [
                (7, 7),
                (8, 8),
                (12, 12),
                (20, 20),
                (10, 3),
                (20, 8),
                (8, 20),
                (3, 12),
            ] {
                let what = format!("ones({n}, {m}) {dtype} on {dev:?}");
                let a = Tensor::ones([n, m], dtype, &dev).unwrap();
                let k = n.min(m);
                let mut want = vec![(0.0, 0.0); k];
                want[0] = (((n * m) as f64).sqrt(), 0.0);
                let tol = 8.0 * (n * m) as f64 * eps(dtype);
                check(&linalg::svdvals(&a).unwrap(), &want, tol, &what);
                let (u, s, vh) = linalg::svd(&a, false).unwrap();
                check(&s, &want, tol, &what);
                assert!(orthogonality(&u) <= tol, "U of {what}");
                let v = vh.transpose(-2, -1).unwrap();
                assert!(orthogonality(&v) <= tol, "V of {what}");
                let back = u
                    .mul(&s.to_dtype(dtype).unwrap())
                    .unwrap()
                    .matmul(&vh)
                    .unwrap();
                check(
                    &back,
                    &vec![(1.0, 0.0); n * m],
                    tol,
                    &format!("U S Vh of {what}"),
                );
                let (q, r) = linalg::qr(&a, linalg::QrMode::Reduced).unwrap();
                assert!(orthogonality(&q) <= tol, "Q of {what}");
                check(
                    &q.matmul(&r).unwrap(),
                    &vec![(1.0, 0.0); n * m],
                    tol,
                    &format!("QR of {what}"),
                );
                if n == m {
                    let mut want = vec![(0.0, 0.0); n];
                    want[n - 1] = (n as f64, 0.0);
                    let w = linalg::eigvalsh(&a, Triangle::Lower).unwrap();
                    check(&w, &want, tol, &format!("eigvalsh of {what}"));
                }
            }
        }
    }
}

#[test]
fn singular_values_past_f32s_range_are_infinite_not_errors() {
    // A finite matrix whose largest singular value overflows f32 is inf,
    // as NumPy's; it was Error::LinAlg ("holds NaN or infinity") where
    // Jacobi runs (every GPU, the CPU under 8 x 8).
    for dev in common::devices() {
        let a = Tensor::from_slice(&[3e38f32, 3e38, 3e38, -3e38], [2, 2], &dev).unwrap();
        let s = linalg::svdvals(&a).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(s, vec![f32::INFINITY; 2], "on {dev:?}");
        let big = Tensor::full([12, 12], 3e37f32, DType::F32, &dev).unwrap();
        let s = linalg::svdvals(&big).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(s[0], f32::INFINITY, "on {dev:?}");
        assert!(s[1..].iter().all(|x| x.is_finite()), "on {dev:?}: {s:?}");
        let (_, _, _, info) = linalg::svd_ex(&a, false).unwrap();
        assert_eq!(info.to_vec::<i32>().unwrap(), vec![0], "on {dev:?}");
    }
}

#[test]
fn an_empty_batch_of_large_matrices_inverts_at_once() {
    // NumPy gives the empty batch; a GPU made the 4 GiB identity first,
    // and refused it (naming `zeros`).
    for dev in common::devices() {
        let a = Tensor::zeros([0, 1 << 15, 1 << 15], DType::F32, &dev).unwrap();
        let x = linalg::inv(&a).unwrap();
        assert_eq!(x.dims(), [0, 1 << 15, 1 << 15], "{dev}");
    }
}

/// The GPU's one-sided Jacobi against NumPy (tests/data/
/// make_jacobi_cases.py): its rotations' drift from unit columns made
/// the singular values and eigenvalues of 129 x 129 matrices 200 ulps of
/// the largest off (an ulp a rotation); the CPU's f32 reductions (faer)
/// were 50 to 70. Errors in ulps of the largest value.
#[test]
fn jacobi_keeps_unit_columns_and_the_cpu_rounds_once() {
    let cases = stored("jacobi_cases.npz");
    let ulps = |got: &Tensor, want: &Tensor| -> f64 {
        let (got, want) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f64>().unwrap());
        assert_eq!(got.len(), want.len());
        let top = want.iter().fold(0f64, |m, w| m.max(w.abs()));
        let worst = got
            .iter()
            .zip(&want)
            .fold(0f64, |m, (&g, w)| m.max((g as f64 - w).abs()));
        worst / (top * f32::EPSILON as f64)
    };
    for dev in common::devices() {
        let on = |name: &str| cases[name].to_device(&dev).unwrap();
        let s = linalg::svdvals(&on("general_a")).unwrap();
        let e_general = ulps(&s, &cases["general_s"]);
        let (w, v) = linalg::eigh(&on("symmetric_a"), Triangle::Lower).unwrap();
        let e_sym = ulps(&w, &cases["symmetric_w"]);
        // lavapipe: 3.7 and 1.9 ulps; the CPU (in f64) 0.3 and 0.2.
        for (what, e) in [("svdvals", e_general), ("eigh", e_sym)] {
            assert!(e <= 16.0, "{what} on {dev}: {e} ulps of the largest");
        }
        // Unit eigenvectors: their squared norms were 1 ± 5e-5.
        let lengths = v.square().unwrap().sum(0).unwrap().to_vec::<f32>().unwrap();
        for (j, l) in lengths.iter().enumerate() {
            assert!(
                (l - 1.0).abs() <= 2e-6,
                "eigenvector {j} on {dev}: |v|^2 = {l}"
            );
        }
    }
}

/// Matrices whose rows are scaled by powers of ten up to 1e10 apart
/// (tests/data/make_jacobi_cases.py) have singular values below f32's
/// precision, whose columns are rounding noise: a GPU's sweeps rotated
/// them until they ran out and reported "did not converge", though the
/// values were right. Rotations of such columns do not count now (as in
/// LAPACK's `gesvj`); the values stay a few ulps of the largest from
/// NumPy's, the vectors orthonormal, and U·S·Vh near A.
#[test]
fn row_graded_matrices_converge() {
    let cases = stored("jacobi_cases.npz");
    let want = cases["graded_s"].to_vec::<f64>().unwrap();
    for dev in common::devices() {
        let a = cases["graded_a"].to_device(&dev).unwrap();
        let (u, s, vh) = linalg::svd(&a, false).unwrap();
        let got = s.to_vec::<f32>().unwrap();
        for (b, (got, want)) in got.chunks(90).zip(want.chunks(90)).enumerate() {
            let worst = got
                .iter()
                .zip(want)
                .fold(0f64, |m, (&g, w)| m.max((g as f64 - w).abs()));
            // lavapipe: 6 and 8 ulps of the largest; the CPU 0.04 and 0.3.
            let ulps = worst / (want[0] * f32::EPSILON as f64);
            assert!(ulps <= 32.0, "matrix {b} on {dev}: {ulps} ulps");
        }
        let v = vh.transpose(-2, -1).unwrap();
        for (what, x) in [("U", &u), ("V", &v)] {
            let e = orthogonality(x);
            assert!(e <= 1e-5, "{what} on {dev}: {e}");
        }
        // U·S·Vh within some ulps of A's norm: a U completed from the
        // good columns alone was 120 ulps off (its negligible columns
        // dropped their part of A); lavapipe 10, the CPU 1.
        let back = u
            .mul(&s.unsqueeze(-2).unwrap())
            .unwrap()
            .matmul(&vh)
            .unwrap();
        let (back, a) = (
            back.to_vec::<f32>().unwrap(),
            cases["graded_a"].to_vec::<f32>().unwrap(),
        );
        for (b, (back, a)) in back.chunks(90 * 90).zip(a.chunks(90 * 90)).enumerate() {
            let norm = |x: &mut dyn Iterator<Item = f64>| x.map(|x| x * x).sum::<f64>().sqrt();
            let off = norm(&mut back.iter().zip(a).map(|(&x, &y)| x as f64 - y as f64));
            let ulps = off / norm(&mut a.iter().map(|&y| y as f64)) / f32::EPSILON as f64;
            assert!(
                ulps <= 24.0,
                "U·S·Vh of matrix {b} on {dev}: {ulps} ulps of |A|"
            );
        }
    }
}

/// An ill-conditioned complex 90 x 30 matrix (singular values 1 to 1e-6,
/// tests/data/make_jacobi_cases.py): the CPU's dense path decomposed c64
/// matrices in complex f32, which left U·S·Vh 1,500 ulps of the largest
/// entry off (LAPACK's cgesdd: 5) and the pseudo-inverse far less
/// accurate than LAPACK's. It computes them in complex f64 now, as real
/// f32 matrices in f64.
#[test]
fn ill_conditioned_complex_matrices_decompose_accurately() {
    let cases = stored("jacobi_cases.npz");
    let pinv_want = want(&cases, "ill_c_pinv");
    for dev in common::devices() {
        let a = cases["ill_c_a"].to_device(&dev).unwrap();
        let (u, s, vh) = linalg::svd(&a, false).unwrap();
        let back = u
            .mul(&s.to_dtype(DType::C64).unwrap().unsqueeze(-2).unwrap())
            .unwrap()
            .matmul(&vh)
            .unwrap();
        let a_values = values(&a);
        // Entries of U·S·Vh within 48 ulps of A's largest: the CPU 2,
        // lavapipe (Jacobi) 14; in complex f32 the CPU was 1,660.
        let ulps = error(&values(&back), &a_values) / f32::EPSILON as f64;
        assert!(ulps <= 48.0, "U·S·Vh on {dev}: {ulps} ulps");
        // The pseudo-inverse cut between the 11th and 12th singular
        // values (cond 117): the CPU 1e-7 of its largest entry, lavapipe
        // 8e-6; in complex f32 the CPU was 4e-3.
        let e = error(
            &values(&linalg::pinv(&a, Some(6.7e-3)).unwrap()),
            &pinv_want,
        );
        assert!(e <= 1e-4, "pinv on {dev}: {e}");
    }
}
