//! `einsum` against NumPy's answers (`tests/data/make_einsum_cases.py`):
//! products, batches, traces, diagonals, transposes, sums, outer products,
//! chains of three and four operands, `...` broadcasting and NumPy's
//! implicit output, on every device and over strided views; and its bad
//! subscripts.

mod common;

use std::collections::HashMap;
use webtensor::{DType, Device, Error, Tensor, io};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/einsum_cases.npz");
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn einsum_matches_numpy_on_every_device_and_view() {
    let c = cases();
    let count = (0..)
        .take_while(|k| c.contains_key(&format!("{k}_n")))
        .count();
    assert!(count >= 27);
    for dev in common::devices() {
        for k in 0..count {
            let subs =
                String::from_utf8(c[&format!("{k}_subscripts")].to_vec::<u8>().unwrap()).unwrap();
            let n = c[&format!("{k}_n")].to_vec::<i32>().unwrap()[0] as usize;
            let ops: Vec<Tensor> = (0..n)
                .map(|i| c[&format!("{k}_op{i}")].to_device(&dev).unwrap())
                .collect();
            let want = &c[&format!("{k}_out")];
            // The operands as given, and as reversed strided views of the
            // same values.
            let views: Vec<Tensor> = ops.iter().map(common::reversed_view).collect();
            for (what, operands) in [("contiguous", &ops), ("strided", &views)] {
                let refs: Vec<&Tensor> = operands.iter().collect();
                let got = Tensor::einsum(&subs, &refs).unwrap();
                assert_eq!(got.dims(), want.dims(), "{subs:?} ({what}) on {dev}");
                let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
                for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5 * (1.0 + b.abs()) * 8.0,
                        "{subs:?} ({what}) on {dev}: element {i} is {a}, NumPy's {b}"
                    );
                }
            }
        }
    }
}

#[test]
fn tensordot_matches_numpy_on_every_device() {
    let c = cases();
    for dev in common::devices() {
        for k in 0..5 {
            let get = |p: &str| c[&format!("td{k}_{p}")].clone();
            let (a, b) = (
                get("a").to_device(&dev).unwrap(),
                get("b").to_device(&dev).unwrap(),
            );
            let axes = |p: &str| -> Vec<isize> {
                get(p)
                    .to_vec::<i64>()
                    .unwrap()
                    .iter()
                    .map(|&x| x as isize)
                    .collect()
            };
            let got = a.tensordot(&b, &axes("axes_a"), &axes("axes_b")).unwrap();
            let want = get("out");
            assert_eq!(got.dims(), want.dims(), "case {k} on {dev}");
            for (g, w) in got
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .zip(want.to_vec::<f32>().unwrap())
            {
                assert!(
                    (g - w).abs() <= 1e-5 * (1.0 + w.abs()) * 8.0,
                    "case {k} on {dev}: {g} vs {w}"
                );
            }
        }
    }
    let dev = Device::cpu();
    let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
    assert!(matches!(
        a.tensordot(&a, &[0], &[0, 1]),
        Err(Error::Argument {
            op: "tensordot",
            ..
        })
    ));
    assert!(matches!(
        a.tensordot(&a, &[0, 0], &[0, 1]),
        Err(Error::Argument {
            op: "tensordot",
            ..
        })
    ));
    assert!(matches!(
        a.tensordot(&a, &[2], &[0]),
        Err(Error::Axis {
            op: "tensordot",
            ..
        })
    ));
    assert!(a.tensordot(&a, &[1], &[1]).is_ok());
    assert!(matches!(
        a.tensordot(&a, &[0], &[1]),
        Err(Error::Shape {
            op: "tensordot",
            ..
        })
    ));
}

#[test]
fn einsum_refuses_bad_subscripts() {
    let dev = Device::cpu();
    let m = Tensor::zeros([3, 4], DType::F32, &dev).unwrap();
    let v = Tensor::zeros([4], DType::F32, &dev).unwrap();
    let argument = |r: webtensor::Result<Tensor>, what: &str| match r {
        Err(Error::Argument { op: "einsum", msg }) => assert!(msg.contains(what), "{what}: {msg}"),
        other => panic!("{what}: {other:?}"),
    };
    argument(Tensor::einsum("ij,j->i,", &[&m, &v]), "not a subscript");
    argument(Tensor::einsum("i2", &[&v]), "not a subscript");
    argument(Tensor::einsum("......", &[&m]), "two '...'");
    argument(Tensor::einsum("ij->ii", &[&m]), "repeats");
    argument(Tensor::einsum("ij->k", &[&m]), "in no operand");
    argument(Tensor::einsum("ij", &[&m, &v]), "operands");
    argument(Tensor::einsum("...j->j", &[&m]), "needs a '...'");
    let shape = |r: webtensor::Result<Tensor>, what: &str| match r {
        Err(Error::Shape { op: "einsum", msg }) => assert!(msg.contains(what), "{what}: {msg}"),
        other => panic!("{what}: {other:?}"),
    };
    shape(Tensor::einsum("ijk", &[&m]), "axes");
    shape(Tensor::einsum("i", &[&m]), "axes");
    shape(Tensor::einsum("ij,i->j", &[&m, &v]), "spans");
    shape(Tensor::einsum("ii", &[&m]), "spans");
}

/// A label of extent 1 broadcasts against 0 as any other extent (NumPy's
/// and PyTorch's `einsum("ij,jk->ik", zeros(2, 0), ones(1, 3))` is zeros
/// of 2 x 3; `"i,i->i"` of extents 0 and 1 is empty).
#[test]
fn an_extent_of_one_broadcasts_against_zero() {
    for dev in common::devices() {
        let t = |dims: &[usize]| Tensor::ones(dims, DType::F32, &dev).unwrap();
        let got = Tensor::einsum("ij,jk->ik", &[&t(&[2, 0]), &t(&[1, 3])]).unwrap();
        assert_eq!(got.dims(), &[2, 3], "{dev}");
        assert_eq!(got.to_vec::<f32>().unwrap(), [0.0; 6], "{dev}");
        let got = Tensor::einsum("i,i->i", &[&t(&[0]), &t(&[1])]).unwrap();
        assert_eq!(got.dims(), &[0], "{dev}");
    }
}

/// A label summed over no elements gives sums of nothing, 0, as NumPy's
/// `einsum`, even where another operand holds inf or NaN (the empty sum
/// was taken first, and its 0 times inf gave NaN).
#[test]
fn a_label_summed_over_nothing_gives_zeros_beside_inf_and_nan() {
    for dev in common::devices() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        let a = Tensor::from_slice(&[inf, nan], [2], &dev).unwrap();
        let m = Tensor::from_slice(&[inf, 1.0, nan, 2.0], [2, 2], &dev).unwrap();
        let e = Tensor::from_slice::<f32>(&[], [0], &dev).unwrap();
        let k = Tensor::from_slice(&[1.0f32, 0.0], [2], &dev).unwrap();
        for (subscripts, operands, want) in [
            ("i,j->i", vec![&a, &e], vec![0.0, 0.0]),
            ("i,j->", vec![&a, &e], vec![0.0]),
            ("ij,k->i", vec![&m, &e], vec![0.0, 0.0]),
            ("i,j,k->k", vec![&a, &e, &k], vec![0.0, 0.0]),
        ] {
            let got = Tensor::einsum(subscripts, &operands).unwrap();
            assert_eq!(
                got.to_vec::<f32>().unwrap(),
                want,
                "{subscripts} on {dev:?}"
            );
        }
        let h = a.to_dtype(DType::F16).unwrap();
        let got = Tensor::einsum("i,j->i", &[&h, &e.to_dtype(DType::F16).unwrap()]).unwrap();
        assert_eq!(got.dtype(), DType::F16);
        assert_eq!(common::read_f32(&got), [0.0, 0.0], "f16 on {dev:?}");
    }
}

#[test]
fn einsum_products_of_u8_and_bool_as_numpys() {
    // NumPy 2.4's answers: a product of u8 wraps in u8, one of bool is the
    // `or` of the `and`s (the batched product refused both dtypes).
    for dev in common::devices() {
        let a = Tensor::from_slice(&[200u8, 3, 7, 255], [2, 2], &dev).unwrap();
        let b = Tensor::from_slice(&[2u8, 100, 9, 1], [2, 2], &dev).unwrap();
        let y = Tensor::einsum("ij,jk->ik", &[&a, &b]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<u8>().unwrap()),
            (DType::U8, vec![171, 35, 5, 187])
        );
        let x = Tensor::from_slice(&[200u8, 16], [2], &dev).unwrap();
        let z = Tensor::from_slice(&[2u8, 16], [2], &dev).unwrap();
        let y = Tensor::einsum("i,i->i", &[&x, &z]).unwrap();
        assert_eq!(y.to_vec::<u8>().unwrap(), vec![144, 0]);
        let p = [true, false, true, false, false, true];
        let p = Tensor::from_slice(&p, [2, 3], &dev).unwrap();
        let q = [false, true, true, true, false, false];
        let q = Tensor::from_slice(&q, [3, 2], &dev).unwrap();
        let y = Tensor::einsum("ij,jk->ik", &[&p, &q]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<bool>().unwrap()),
            (DType::Bool, vec![false, true, false, false])
        );
        let y = p.tensordot(&q, &[1], &[0]).unwrap();
        assert_eq!(y.to_vec::<bool>().unwrap(), vec![false, true, false, false]);
        let u = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        let v = Tensor::from_slice(&[true, true, false], [3], &dev).unwrap();
        let y = Tensor::einsum("i,i->i", &[&u, &v]).unwrap();
        assert_eq!(y.to_vec::<bool>().unwrap(), vec![true, false, false]);
        let y = Tensor::einsum(
            "i,i->",
            &[
                &u.narrow(0, 0, 2).unwrap(),
                &v.flip(&[0]).unwrap().narrow(0, 0, 2).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(y.to_vec::<bool>().unwrap(), vec![false]);
        // An operand's own labels summed first kept its dtype: its sum
        // widened u8 and bool and the product refused the mixed pair.
        for (subscripts, first, second) in [("ij,jk->k", &a, &b), ("jk,ij->k", &b, &a)] {
            let y = Tensor::einsum(subscripts, &[first, second]).unwrap();
            assert_eq!(
                (y.dtype(), y.to_vec::<u8>().unwrap()),
                (DType::U8, vec![176, 222]),
                "{subscripts}"
            );
        }
        let y = Tensor::einsum("ij,jk->k", &[&p, &q]).unwrap();
        assert_eq!(y.to_vec::<bool>().unwrap(), vec![false, true]);
        let w = Tensor::from_slice(&[2u8, 16], [2], &dev).unwrap();
        let y = Tensor::einsum("ij,j->", &[&a, &w]).unwrap();
        assert_eq!(y.to_vec::<u8>().unwrap(), vec![190]);
        let y = Tensor::einsum("ij->", &[&a]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<u8>().unwrap()),
            (DType::U8, vec![209])
        );
    }
}

#[test]
fn einsum_keeps_numpys_dtypes() {
    // NumPy 2.4's answers: a sum of u8 wraps in u8, one of bool is their
    // `or`, and operands of two dtypes promote (they were refused by the
    // product, and sums of u8 and bool widened to u32 and i32).
    for dev in common::devices() {
        let u8s = Tensor::from_slice(&[200u8, 100], [2], &dev).unwrap();
        let y = Tensor::einsum("i->", &[&u8s]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<u8>().unwrap()),
            (DType::U8, vec![44])
        );
        let diagonal = Tensor::from_slice(&[200u8, 1, 2, 100], [2, 2], &dev).unwrap();
        let y = Tensor::einsum("ii->", &[&diagonal]).unwrap();
        assert_eq!(y.to_vec::<u8>().unwrap(), vec![44]);
        let b = Tensor::from_slice(&[true, false, false, false], [2, 2], &dev).unwrap();
        let y = Tensor::einsum("ij->i", &[&b]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<bool>().unwrap()),
            (DType::Bool, vec![true, false])
        );
        let f = Tensor::from_slice(&[1.0f32, 2.0], [2], &dev).unwrap();
        let h = Tensor::from_slice(&[3.0f32, 4.0], [2], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let y = Tensor::einsum("i,i->", &[&f, &h]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<f32>().unwrap()),
            (DType::F32, vec![11.0])
        );
        let i = Tensor::from_slice(&[1i32, 2], [2], &dev).unwrap();
        let l = Tensor::from_slice(&[3i64, 4], [2], &dev).unwrap();
        let y = Tensor::einsum("i,i->", &[&i, &l]).unwrap();
        assert_eq!(
            (y.dtype(), y.to_vec::<i64>().unwrap()),
            (DType::I64, vec![11])
        );
    }
}
