//! Type promotion on every device, pair by pair: binary ops, comparisons,
//! `where_cond`, `concat`, in-place ops and Rust scalars compute in the
//! dtype `Tensor::result_type` names (PyTorch's rules), with the values of
//! the same op on operands cast by hand; in place, the result is stored in
//! the destination's dtype within its category; pairs without a common
//! dtype, and in-place ops that would store across categories (a float
//! into an integer), are errors naming the op and the dtypes.

mod common;

use common::devices;
use webtensor::{Complex32, DType, Device, Error, Scalar, Tensor};

/// Every dtype a device computes in (f64 on the CPU only).
fn dtypes(dev: &Device) -> Vec<DType> {
    DType::ALL
        .into_iter()
        .filter(|&d| d != DType::F64 || !dev.is_gpu())
        .collect()
}

/// The rank of a dtype's category: bool < integers < floats < complex.
fn category(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::U8 | DType::I32 | DType::I64 | DType::U32 => 1,
        DType::C64 => 3,
        _ => 2,
    }
}

/// A [2, 3] tensor of `dtype` holding small values every dtype holds
/// exactly (bool: their truth), broadcast against [3] where `row`.
fn operand(dtype: DType, seed: usize, dev: &Device) -> Tensor {
    let values: Vec<f32> = (0..6).map(|k| ((k * 3 + seed) % 5) as f32).collect();
    let t = Tensor::from_vec(values, [2, 3], dev).unwrap();
    t.to_dtype(dtype).unwrap()
}

/// The elements as f64 pairs (re, im), whatever the dtype.
fn values(t: &Tensor) -> (DType, Vec<(f64, f64)>) {
    let d = t.dtype();
    let v = match d {
        DType::C64 => t
            .to_complex_vec()
            .unwrap()
            .into_iter()
            .map(|c| (c.re as f64, c.im as f64))
            .collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(|b| (f64::from(u8::from(b)), 0.0))
            .collect(),
        _ => t
            .to_dtype(DType::F64)
            .and_then(|w| w.to_vec::<f64>())
            .or_else(|_| t.to_device(&Device::cpu())?.to_dtype(DType::F64)?.to_vec())
            .unwrap()
            .into_iter()
            .map(|x| (x, 0.0))
            .collect(),
    };
    (d, v)
}

/// Both results alike: the same dtype and values, or both errors.
fn same(got: webtensor::Result<Tensor>, want: webtensor::Result<Tensor>, what: &str) {
    match (got, want) {
        (Ok(g), Ok(w)) => assert_eq!(values(&g), values(&w), "{what}"),
        (Err(_), Err(_)) => {}
        (g, w) => panic!("{what}: got {g:?}, want {w:?}"),
    }
}

#[test]
fn every_pair_of_dtypes_promotes_as_the_table_says() {
    for dev in devices() {
        for a_dtype in dtypes(&dev) {
            for b_dtype in dtypes(&dev) {
                let what = format!("{dev} {a_dtype} with {b_dtype}");
                let a = operand(a_dtype, 1, &dev);
                let b = operand(b_dtype, 2, &dev).slice(webtensor::s![1]).unwrap();
                let Some(common) = a_dtype.promote(b_dtype) else {
                    for err in [
                        Tensor::result_type(&a, &b).unwrap_err(),
                        a.add(&b).unwrap_err(),
                        a.lt(&b).unwrap_err(),
                        Tensor::concat(&[&a, &b.unsqueeze(0).unwrap()], 0).unwrap_err(),
                    ] {
                        assert!(matches!(err, Error::DType { .. }), "{what}: {err}");
                        let msg = err.to_string();
                        assert!(
                            msg.contains(a_dtype.name()) && msg.contains(b_dtype.name()),
                            "{what}: {msg}"
                        );
                    }
                    continue;
                };
                assert_eq!(Tensor::result_type(&a, &b).unwrap(), common, "{what}");
                let (ac, bc) = (a.to_dtype(common).unwrap(), b.to_dtype(common).unwrap());
                // Arithmetic: the op in the common dtype (or the same error,
                // for an op the common dtype lacks, as add of bools).
                let got = a.add(&b);
                if let Ok(g) = &got {
                    assert_eq!(g.dtype(), common, "{what}");
                }
                same(got, ac.add(&bc), &format!("{what}: add"));
                same(b.mul(&a), bc.mul(&ac), &format!("{what}: mul"));
                if common != DType::C64 {
                    same(a.lt(&b), ac.lt(&bc), &format!("{what}: lt"));
                    let cond = operand(DType::Bool, 3, &dev);
                    same(
                        Tensor::where_cond(&cond, &a, &b),
                        Tensor::where_cond(&cond, &ac, &bc),
                        &format!("{what}: where"),
                    );
                }
                let rows = [&a, &b.unsqueeze(0).unwrap()];
                let joined = Tensor::concat(&rows, 0).unwrap();
                assert_eq!(joined.dtype(), common, "{what}: concat");
                let cast = [&ac, &bc.unsqueeze(0).unwrap()];
                same(
                    Ok(joined),
                    Tensor::concat(&cast, 0),
                    &format!("{what}: concat"),
                );
                // In place: computed in the common dtype and stored in the
                // destination's where that keeps its category (PyTorch's
                // `can_cast`: f32 into f16, i32 into u8, not f32 into i32).
                let want = ac
                    .add(&bc)
                    .and_then(|t| t.to_dtype(a_dtype))
                    .map(|t| values(&t));
                let done = a.add_(&b);
                if category(common) <= category(a_dtype) {
                    match (done, want) {
                        (Ok(()), Ok(want)) => assert_eq!(values(&a), want, "{what}: add_"),
                        (Err(_), Err(_)) => {}
                        (g, w) => panic!("{what}: add_ gave {g:?}, out of place {w:?}"),
                    }
                } else {
                    let err = done.unwrap_err();
                    assert!(err.to_string().contains("in place"), "{what}: {err}");
                }
            }
        }
    }
}

#[test]
fn rust_scalars_widen_only_across_categories() {
    for dev in devices() {
        let i = Tensor::from_slice(&[1i32, 2, 3], [3], &dev).unwrap();
        let half = &i * 0.5;
        assert_eq!(half.dtype(), DType::F32, "{dev}");
        assert_eq!(half.to_vec::<f32>().unwrap(), vec![0.5, 1.0, 1.5]);
        assert_eq!((0.5 * &i).dtype(), DType::F32);
        assert_eq!((&i + 2).dtype(), DType::I32);
        assert_eq!(
            i.gt_scalar(1.5).unwrap().to_vec::<bool>().unwrap(),
            vec![false, true, true]
        );
        let b = i.gt_scalar(1).unwrap();
        assert_eq!((&b + 1).dtype(), DType::I32);
        assert_eq!((&b + 1).to_vec::<i32>().unwrap(), vec![1, 2, 2]);
        let h = i.to_dtype(DType::F16).unwrap();
        assert_eq!((&h * 2.0).dtype(), DType::F16, "a scalar never widens f16");
        let z = &i * Complex32::new(0.0, 1.0);
        assert_eq!(z.dtype(), DType::C64);
        assert_eq!(z.to_complex_vec().unwrap()[2], Complex32::new(0.0, 3.0));
        // The scalar must fit the dtype it computes in.
        let u = i.to_dtype(DType::U8).unwrap();
        let err = u.add_scalar(300).unwrap_err();
        assert!(err.to_string().contains("300"), "{err}");
        // In place, a scalar of a higher category would change the dtype.
        let err = i.add_scalar_(0.5).unwrap_err();
        assert!(
            err.to_string().contains("in place") && err.to_string().contains("f32"),
            "{err}"
        );
        let err = i.mul_scalar_(Scalar::from(2.0)).unwrap_err();
        assert!(matches!(err, Error::DType { op: "mul", .. }), "{err}");
        i.add_scalar_(1).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![2, 3, 4]);
        // A u64 past i64::MAX is an integer no integer dtype holds (NumPy's
        // OverflowError), not a float that makes the tensor f32.
        let wide = Tensor::from_slice(&[i64::MAX], [1], &dev).unwrap();
        for (r, shown) in [
            (wide.add_scalar(u64::MAX), u64::MAX),
            (wide.eq_scalar(1u64 << 63), 1 << 63),
        ] {
            let err = r.unwrap_err();
            assert!(matches!(err, Error::DType { .. }), "{err}");
            assert!(err.to_string().contains(&shown.to_string()), "{err}");
        }
        let f = Tensor::zeros([1], DType::F32, &dev).unwrap();
        assert_eq!(
            f.add_scalar(u64::MAX).unwrap().to_vec::<f32>().unwrap(),
            [u64::MAX as f32]
        );
        // An integer scalar rounds once to f32 (PyTorch's, and the 0-d
        // tensor's cast): 2^60 + 2^37, where rounding through f64 gave 2^60.
        let v: i64 = (1 << 60) + (1 << 36) + 1;
        let zero_d = Tensor::from_vec(vec![v], [], &dev).unwrap();
        assert_eq!(
            f.add_scalar(v).unwrap().to_vec::<f32>().unwrap(),
            [v as f32]
        );
        assert_eq!(f.add(&zero_d).unwrap().to_vec::<f32>().unwrap(), [v as f32]);
        // Into bf16 through f32, as PyTorch and the crate's own cast:
        // 2^24 + 2^16 + 1 is 2^24 (16908288 from its f64 rounded once).
        let n = 16_842_753;
        let full = Tensor::full([1], n, DType::BF16, &dev).unwrap();
        let cast = Tensor::full([1], n, DType::I32, &dev)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        for t in [full, cast] {
            assert_eq!(
                t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
                [16_777_216.0]
            );
        }
    }
}

/// The dtype a line of torch_promotion_cases.txt names (`c32`, PyTorch's
/// half complex, is c64 here: the one complex dtype, which holds it).
fn torch_dtype(name: &str) -> Option<DType> {
    match name {
        "none" => None,
        "c32" => Some(DType::C64),
        _ => Some(DType::ALL.into_iter().find(|d| d.name() == name).unwrap()),
    }
}

#[test]
fn zero_d_tensors_and_bool_scalars_promote_as_pytorch() {
    let cases = include_str!("data/torch_promotion_cases.txt");
    for dev in devices() {
        let mut ran = 0;
        for line in cases.lines() {
            let w: Vec<&str> = line.split(' ').collect();
            let (a, mut want) = (torch_dtype(w[1]).unwrap(), torch_dtype(w[3]));
            // By design (README): an integer scalar takes a bool tensor to
            // i32, where PyTorch's default integer is i64.
            if line == "scalar bool int i64" {
                want = Some(DType::I32);
            }
            let what = format!("{dev} {line}");
            let tensor = |d: DType, zero_d: bool| {
                let t = operand(d, 1, &dev);
                match zero_d {
                    true => t.slice(webtensor::s![1, 2]).unwrap(),
                    false => t,
                }
            };
            if w[0] == "scalar" {
                if !dtypes(&dev).contains(&a) {
                    continue;
                }
                let x = tensor(a, false);
                let s = match w[2] {
                    "bool" => Scalar::from(true),
                    "int" => Scalar::from(2),
                    "float" => Scalar::from(0.5),
                    _ => Scalar::from(Complex32::new(0.0, 1.0)),
                };
                // (Bool with a bool has no arithmetic: PyTorch's result_type
                // is bool, and mul is an error naming the dtype.)
                match x.mul_scalar(s) {
                    Ok(p) => assert_eq!(Some(p.dtype()), want, "{what}"),
                    Err(e) if want == Some(DType::Bool) => assert!(e.to_string().contains("bool")),
                    Err(e) => assert_eq!(None, want, "{what}: {e}"),
                }
                // A bool scalar is 1 in any dtype (PyTorch's `u8 + True`).
                if w[2] == "bool" && a != DType::Bool {
                    let (sum, one) = (x.add_scalar(true).unwrap(), x.add_scalar(1).unwrap());
                    assert_eq!(values(&sum), values(&one), "{what}: add");
                }
                ran += 1;
                continue;
            }
            let b = torch_dtype(w[2]).unwrap();
            if !dtypes(&dev).contains(&a) || !dtypes(&dev).contains(&b) {
                continue;
            }
            let x = tensor(a, w[0].starts_with("0d"));
            let y = tensor(b, w[0].ends_with("0d"));
            let common = Tensor::result_type(&x, &y).ok();
            assert_eq!(common, want, "{what}: result_type");
            // The op computes in that dtype, with the values of the
            // operands cast by hand (or fails, with no common dtype).
            match (x.mul(&y), common) {
                (Ok(p), Some(c)) => {
                    let cast = x.to_dtype(c).unwrap().mul(&y.to_dtype(c).unwrap());
                    assert_eq!(values(&p), values(&cast.unwrap()), "{what}: mul");
                }
                (Err(_), None | Some(DType::Bool)) => {}
                (p, c) => panic!("{what}: mul gave {p:?} for {c:?}"),
            }
            ran += 1;
        }
        assert!(ran >= 200, "{dev}: only {ran} cases");
    }
}

/// Two-operand special functions promote a 0-d operand as a scalar, as
/// PyTorch's (`xlogy` of an f16 [3] and a 0-d f32 is f16; it broadcast
/// the 0-d one first and gave f32).
#[test]
fn special_functions_promote_a_zero_d_operand_as_a_scalar() {
    for dev in devices() {
        let x = operand(DType::F16, 1, &dev).abs().unwrap();
        let half = x.slice(webtensor::s![1, 2]).unwrap();
        let y = operand(DType::F32, 2, &dev)
            .slice(webtensor::s![1, 2])
            .unwrap();
        for (what, got) in [
            ("xlogy", x.xlogy(&y)),
            ("xlogy of the 0-d first", y.xlogy(&x)),
            ("logaddexp", x.logaddexp(&y)),
            ("logaddexp2", y.logaddexp2(&x)),
        ] {
            assert_eq!(got.unwrap().dtype(), DType::F16, "{what} on {dev}");
        }
        // Two 0-d operands promote across the table.
        assert_eq!(half.xlogy(&y).unwrap().dtype(), DType::F32, "{dev}");
    }
}

/// clamp computes in the dtype the tensor takes with its bounds, as
/// PyTorch's: float bounds of an integer tensor give f32 (fractional ones
/// were refused, whole ones silently changed the dtype); integer bounds
/// keep it, and one the dtype cannot hold is still refused.
#[test]
fn clamp_promotes_with_its_bounds_as_pytorch() {
    for dev in common::devices() {
        let i = Tensor::from_slice(&[1i32, 5], [2], &dev).unwrap();
        let c = i.clamp(0.5, 2.5).unwrap();
        assert_eq!(c.dtype(), DType::F32, "{dev}");
        assert_eq!(c.to_vec::<f32>().unwrap(), [1.0, 2.5], "{dev}");
        let k = i.clamp(0, 3).unwrap();
        assert_eq!(k.to_vec::<i32>().unwrap(), [1, 3], "{dev}");
        let u = Tensor::from_slice(&[7u8], [1], &dev).unwrap();
        common::assert_op_err(u.clamp(0, 300), "clamp");
        common::assert_op_err(i.clamp_(0.5, 2.5), "clamp_"); // in place stays i32
    }
}
