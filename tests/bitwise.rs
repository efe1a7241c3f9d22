//! Bitwise ops and shifts against NumPy's values (`tests/data/
//! make_bitwise_cases.py`; PyTorch 2.15 agrees on every case it takes) on
//! every device: each integer dtype's extremes, shifts by negative amounts
//! and past every width, bool's logical forms, views, fused chains,
//! operators, in-place writes through views, promotion and refusals.

mod common;

use common::{assert_op_err, devices};
use std::collections::HashMap;
use webtensor::{DType, Device, Error, Tensor, s};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bitwise_cases.npz");
    webtensor::io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

/// Any integer or bool tensor's values, exactly, as i64.
fn values(t: &Tensor) -> Vec<i64> {
    t.to_device(&Device::cpu())
        .unwrap()
        .to_dtype(DType::I64)
        .unwrap()
        .to_vec::<i64>()
        .unwrap()
}

const DTYPES: [(&str, DType); 5] = [
    ("i32", DType::I32),
    ("i64", DType::I64),
    ("u32", DType::U32),
    ("u8", DType::U8),
    ("bool", DType::Bool),
];

#[test]
fn bitwise_ops_and_shifts_match_numpy_on_every_device() {
    let c = cases();
    for dev in devices() {
        for (name, dtype) in DTYPES {
            let get = |key: &str| c[&format!("{name}_{key}")].to_device(&dev).unwrap();
            let (a, b) = (get("a"), get("b"));
            assert_eq!(a.dtype(), dtype);
            let mut ops: Vec<(&str, Tensor)> = vec![
                ("and", a.bitwise_and(&b).unwrap()),
                ("or", a.bitwise_or(&b).unwrap()),
                ("xor", a.bitwise_xor(&b).unwrap()),
                ("not", a.bitwise_not().unwrap()),
            ];
            if dtype != DType::Bool {
                ops.push(("shl", a.bitwise_left_shift(&b).unwrap()));
                ops.push(("shr", a.bitwise_right_shift(&b).unwrap()));
                // The operators and a fused chain: u8 computes in u32 on a
                // GPU, and its bits past 8 must be cut between the ops.
                let chain = ((&a << 3) ^ !&get("small")) >> 2 & 0x5A;
                ops.push(("chain", chain));
            }
            for (op, got) in ops {
                assert_eq!(got.dtype(), dtype, "{op} of {name} on {dev}");
                assert_eq!(
                    values(&got),
                    values(&c[&format!("{name}_{op}")]),
                    "{op} of {name} on {dev}"
                );
            }
        }
    }
}

#[test]
fn bitwise_ops_of_views_and_in_place_match_the_cpu() {
    // Transposed, reversed, stepped, offset and broadcast operands, and
    // writes through a transposed view, on every device against the CPU.
    let c = cases();
    let cpu = Device::cpu();
    for (name, dtype) in DTYPES {
        let base = |dev: &Device, key: &str| {
            c[&format!("{name}_{key}")]
                .narrow(0, 0, 480)
                .unwrap()
                .reshape([24, 20])
                .unwrap()
                .to_device(dev)
                .unwrap()
        };
        let run = |dev: &Device| -> Vec<Vec<i64>> {
            let (a, b) = (base(dev, "a"), base(dev, "b"));
            let pairs = [
                ("transposed", a.t(), b.t()),
                (
                    "reversed and stepped",
                    a.flip(&[0, 1]).unwrap().slice(s![..12]).unwrap(),
                    b.slice(s![..;2, ..])
                        .unwrap()
                        .broadcast_to([2, 12, 20])
                        .unwrap(),
                ),
                (
                    "offset, broadcast row",
                    a.slice(s![3..17, 1..;3]).unwrap(),
                    b.slice(s![5..6, 2..9]).unwrap(),
                ),
            ];
            let mut out = Vec::new();
            for (_, x, y) in &pairs {
                out.push(values(&x.bitwise_xor(y).unwrap()));
                out.push(values(&x.bitwise_not().unwrap()));
                if dtype != DType::Bool {
                    out.push(values(&x.bitwise_left_shift(y).unwrap()));
                    out.push(values(&x.bitwise_right_shift(y).unwrap()));
                }
            }
            // In place through a transposed view, tensor and scalar.
            // A copy: `a` may share the cases' storage (on the CPU).
            let target = a.empty_like().unwrap();
            target.assign(&a).unwrap();
            let view = target.t();
            view.bitwise_or_(&b.t()).unwrap();
            if dtype == DType::Bool {
                view.bitwise_and_scalar_(true).unwrap();
            } else {
                let mut v = view.clone();
                v >>= 1;
                v ^= 0x33;
                view.bitwise_left_shift_scalar_(2).unwrap();
            }
            view.bitwise_not_().unwrap();
            out.push(values(&target));
            out
        };
        let want = run(&cpu);
        for dev in devices().iter().filter(|d| d.is_gpu()) {
            assert_eq!(run(dev), want, "{name} on {dev}");
        }
    }
}

#[test]
fn bitwise_operands_promote_and_refuse_floats() {
    for dev in devices() {
        let i = Tensor::from_slice(&[1i32, -8, 5], [3], &dev).unwrap();
        let l = Tensor::from_slice(&[2i64, 1, 40], [3], &dev).unwrap();
        let u = Tensor::from_slice(&[255u8, 16, 1], [3], &dev).unwrap();
        let t = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        // i32 << i64 is i64 (NumPy's and PyTorch's promotion); u8 with bool
        // stays u8; a scalar takes the tensor's dtype.
        let shifted = i.bitwise_left_shift(&l).unwrap();
        assert_eq!(shifted.dtype(), DType::I64);
        assert_eq!(values(&shifted), vec![4, -16, 5 << 40]);
        let masked = u.bitwise_and(&t).unwrap();
        assert_eq!(masked.dtype(), DType::U8);
        assert_eq!(values(&masked), vec![1, 0, 1]);
        assert_eq!(values(&(&u << 4)), vec![240, 0, 16]);
        assert_eq!(values(&(1 << &i.abs().unwrap())), vec![2, 256, 32]);
        assert_eq!(values(&(&i >> 1)), vec![0, -4, 2]);
        // i64 amounts past the low word: 2^32 + 1 is past every width.
        let far = Tensor::from_slice(&[(1i64 << 32) + 1, -(1i64 << 32), 1], [3], &dev).unwrap();
        let wide = i.to_dtype(DType::I64).unwrap();
        assert_eq!(values(&(&wide << &far)), vec![0, 0, 10]);
        assert_eq!(values(&(&wide >> &far)), vec![0, -1, 2]);
        assert_eq!(values(&!&t), vec![0, 1, 0]);
        assert_eq!(values(&(&t ^ true)), vec![0, 1, 0]);

        let f = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev).unwrap();
        assert_op_err(f.bitwise_and(&f), "bitwise_and");
        assert_op_err(f.bitwise_not(), "bitwise_not");
        assert_op_err(i.bitwise_or(&f), "bitwise_or");
        assert_op_err(i.bitwise_xor_scalar(1.5), "bitwise_xor");
        assert_op_err(t.bitwise_left_shift(&t), "bitwise_left_shift");
        assert_op_err(t.bitwise_right_shift_scalar(true), "bitwise_right_shift");
        assert_op_err(
            f.to_dtype(DType::F16).unwrap().bitwise_not_(),
            "bitwise_not",
        );
        let z = Tensor::complex(&f, &f).unwrap();
        assert!(matches!(z.bitwise_and(&z), Err(Error::DType { .. })));
        // A scalar the dtype cannot hold, and a write through a broadcast.
        assert_op_err(u.bitwise_or_scalar(256), "bitwise_or");
        let row = u.reshape([1, 3]).unwrap().broadcast_to([2, 3]).unwrap();
        assert!(matches!(
            row.bitwise_not_(),
            Err(Error::OverlappingWrite { .. })
        ));
    }
}
