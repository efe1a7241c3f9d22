//! i64 (NumPy's default integer, PyTorch's `long`) on the CPU: exact past
//! 2^53 and wrapping at 2^63 as i32 does at 2^31, through creation, views,
//! casts, arithmetic, comparisons, `where`, reductions, scans, sorting,
//! indexing (as data and as indices), products, printing and files. A GPU
//! holds no i64 yet: each way in is an `UnsupportedDType` naming the op.

mod common;

use webtensor::{DType, Device, Error, Scalar, SortOrder, Tensor, io, s};

const BIG: i64 = (1 << 60) + 1;

fn vals(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

#[test]
fn i64_is_exact_and_wraps_through_every_op_family() {
    let cpu = Device::cpu();
    let x = Tensor::from_vec(vec![BIG, -3, i64::MAX, 7, i64::MIN, 0], [2, 3], &cpu).unwrap();
    assert_eq!(x.dtype(), DType::I64);
    // Views and copies.
    assert_eq!(
        vals(&x.t().contiguous().unwrap()),
        [BIG, 7, -3, i64::MIN, i64::MAX, 0]
    );
    assert_eq!(
        vals(&x.slice(s![.., ..;-2]).unwrap()),
        [i64::MAX, BIG, 0, 7]
    );
    // Arithmetic wraps; scalars are exact past 2^53.
    assert_eq!(vals(&x.add_scalar(1).unwrap())[2], i64::MIN);
    assert_eq!(vals(&x.sub_scalar(BIG).unwrap())[0], 0);
    assert_eq!(vals(&x.mul_scalar(2).unwrap())[0], BIG.wrapping_mul(2));
    assert_eq!(vals(&x.neg().unwrap())[4], i64::MIN);
    assert_eq!(vals(&x.abs().unwrap())[1], 3);
    let y = Tensor::full([2, 3], Scalar::Int(BIG - 1), DType::I64, &cpu).unwrap();
    assert_eq!(vals(&x.sub(&y).unwrap())[0], 1);
    assert_eq!(vals(&x.div_scalar(-2).unwrap())[1], 1);
    assert_eq!(vals(&x.floor_divide_scalar(-2).unwrap())[1], 1);
    assert_eq!(vals(&x.remainder_scalar(5).unwrap())[1], 2);
    // Comparisons and where, exact where f64 would not be: BIG and BIG - 1
    // are one f64.
    assert_eq!(
        x.gt(&y).unwrap().to_vec::<bool>().unwrap(),
        [true, false, true, false, false, false]
    );
    let pick = Tensor::where_cond(&x.gt(&y).unwrap(), &x, &y).unwrap();
    assert_eq!(vals(&pick)[..2], [BIG, BIG - 1]);
    // Reductions and scans wrap; argmax finds the exact maximum.
    assert_eq!(
        vals(&x.sum(1).unwrap()),
        [BIG.wrapping_sub(3).wrapping_add(i64::MAX), 7 + i64::MIN]
    );
    assert_eq!(vals(&x.max(..).unwrap()), [i64::MAX]);
    assert_eq!(x.argmax(1).unwrap().to_vec::<i32>().unwrap(), [2, 0]);
    let c = x.cumsum(1).unwrap();
    assert_eq!(vals(&c)[2], BIG.wrapping_sub(3).wrapping_add(i64::MAX));
    assert_eq!(vals(&x.prod(0).unwrap())[1], (-3i64).wrapping_mul(i64::MIN));
    // Sorting.
    let flat = x.reshape([6]).unwrap();
    assert_eq!(
        vals(&flat.sort(0, SortOrder::Ascending).unwrap()),
        [i64::MIN, -3, 0, 7, BIG, i64::MAX]
    );
    // Casts: to f64 rounds once, to i32 wraps (Rust `as`), from f32 exact.
    let wide = Tensor::from_vec(vec![BIG, -1, 3_000_000_000], [3], &cpu).unwrap();
    assert_eq!(
        wide.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(),
        [BIG as f64, -1.0, 3e9]
    );
    assert_eq!(
        wide.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(),
        [1, -1, 3_000_000_000i64 as i32]
    );
    let f = Tensor::from_vec(vec![1e15f32, -2.5], [2], &cpu).unwrap();
    assert_eq!(vals(&f.to_dtype(DType::I64).unwrap()), [1e15f32 as i64, -2]);
    // Products.
    let a = Tensor::from_vec(vec![BIG, 2, 3, 4], [2, 2], &cpu).unwrap();
    assert_eq!(
        vals(&a.matmul(&a).unwrap())[1],
        BIG.wrapping_mul(2).wrapping_add(8)
    );
    // Printing.
    assert_eq!(
        wide.to_string(),
        "[1152921504606846977                  -1          3000000000]"
    );
}

#[test]
fn i64_indices_index_and_i64_data_is_indexed() {
    let cpu = Device::cpu();
    let data = Tensor::arange(0.0f32, 12.0, 1.0, &cpu)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let idx = Tensor::from_vec(vec![2i64, 0], [2], &cpu).unwrap();
    let rows = data.index_select(&idx, 0).unwrap();
    assert_eq!(
        rows.to_vec::<f32>().unwrap(),
        [8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0]
    );
    let g = Tensor::from_vec(vec![3i64, 1, 0], [3, 1], &cpu).unwrap();
    assert_eq!(
        data.gather(&g, 1).unwrap().to_vec::<f32>().unwrap(),
        [3.0, 5.0, 8.0]
    );
    let bad = Tensor::from_vec(vec![BIG], [1], &cpu).unwrap();
    assert!(matches!(
        data.index_select(&bad, 0),
        Err(Error::Index { .. })
    ));
    let ids = Tensor::from_vec(vec![BIG, 5, -7], [3], &cpu).unwrap();
    let picked = ids
        .take(&Tensor::from_vec(vec![2i64, 0], [2], &cpu).unwrap(), 0)
        .unwrap();
    assert_eq!(vals(&picked), [-7, BIG]);
    let dest = Tensor::zeros([3], DType::I64, &cpu).unwrap();
    let at = Tensor::from_vec(vec![1i64, 1, 2], [3], &cpu).unwrap();
    dest.scatter_add_(&at, &ids, 0).unwrap();
    assert_eq!(vals(&dest), [0, BIG + 5, -7]);
}

#[test]
fn i64_files_load_without_narrowing() {
    let cpu = Device::cpu();
    let t = Tensor::from_vec(vec![BIG, -1, i64::MIN], [3], &cpu).unwrap();
    let back =
        io::from_npy_bytes(&io::to_npy_bytes(&t.flip(&[0]).unwrap()).unwrap(), &cpu).unwrap();
    assert_eq!(vals(&back), [i64::MIN, -1, BIG]);
    let st = io::to_safetensors_bytes(&[("ids", &t)]).unwrap();
    assert_eq!(
        vals(&io::from_safetensors_bytes(&st, &cpu).unwrap()[0].1),
        vals(&t)
    );
}

#[test]
fn a_gpu_refuses_i64_naming_the_op() {
    let cpu = Device::cpu();
    let t = Tensor::from_vec(vec![1i64, 2], [2], &cpu).unwrap();
    for gpu in common::devices().iter().filter(|d| d.is_gpu()) {
        let f = Tensor::zeros([2], DType::F32, gpu).unwrap();
        let i = Tensor::zeros([2], DType::I32, gpu).unwrap();
        let u = Tensor::zeros([2], DType::U32, gpu).unwrap();
        for (op, got) in [
            ("zeros", Tensor::zeros([2], DType::I64, gpu)),
            ("to_device", t.to_device(gpu)),
            ("to_dtype", f.to_dtype(DType::I64)),
            ("add", i.add(&u)),
        ] {
            match got {
                Err(Error::UnsupportedDType {
                    op: named,
                    dtype: DType::I64,
                    ..
                }) => assert_eq!(named, op),
                other => panic!("{op} on {gpu}: {other:?}"),
            }
        }
    }
}
