//! i64 (NumPy's default integer, PyTorch's `long`) on the CPU: exact past
//! 2^53 and wrapping at 2^63 as i32 does at 2^31, through creation, views,
//! casts, arithmetic, comparisons, `where`, reductions, scans, sorting,
//! indexing (as data and as indices), products, printing and files. GPUs
//! hold i64 as two u32 words and run every op on it bit for bit as the
//! CPU does: elementwise ops, copies, casts, indexing, reductions and scans
//! in kernels, sorts and products composed from 32-bit kernels.

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
    // Neighbours past 2^53 are one f64: the sort keys are the integers.
    let close = Tensor::from_vec(vec![BIG, BIG - 1, BIG + 1], [3], &cpu).unwrap();
    let order = close.argsort(0, SortOrder::Descending).unwrap();
    assert_eq!(order.to_vec::<i32>().unwrap(), [2, 0, 1]);
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
        vals(&io::from_safetensors_bytes(&st, &cpu).unwrap()["ids"]),
        vals(&t)
    );
}

/// Values that exercise both words: carries between them, signs, the
/// extremes, and f32 rounding ties past 2^24.
fn wide_values() -> Vec<i64> {
    let mut v = vec![
        0,
        1,
        -1,
        BIG,
        -BIG,
        i64::MAX,
        i64::MIN,
        0xffff_ffff,
        1 << 32,
        -(1 << 32),
    ];
    for k in [24, 25, 31, 40, 53, 62] {
        let base = 1i64 << k;
        // Exact, a tie (rounds to even), just past a tie, in f32.
        let half_ulp = 1i64 << (k - 24);
        v.extend([
            base + 1,
            base + 3 * half_ulp,
            base + half_ulp + 1,
            -(base + half_ulp),
        ]);
    }
    v.extend((0..16).map(|k: i64| k.wrapping_mul(0x1234_5678_9abc_def1).wrapping_mul(k - 7)));
    v
}

type Op = fn(&Tensor, &Tensor) -> webtensor::Result<Tensor>;

#[test]
fn gpus_compute_i64_elementwise_as_the_cpu_does() {
    let cpu = Device::cpu();
    let values = wide_values();
    let n = values.len();
    let a = Tensor::from_vec(values.clone(), [n], &cpu).unwrap();
    let b = a.flip(&[0]).unwrap().contiguous().unwrap();
    let grid = Tensor::from_vec(
        values.iter().cycle().take(8 * 9).copied().collect(),
        [8, 9],
        &cpu,
    )
    .unwrap();
    let ops: [(&str, Op); 18] = [
        // Zeros, -1 and i64::MIN among the divisors.
        ("div", |a, b| a.div(b)),
        ("remainder", |a, b| a.remainder(b)),
        ("floor_divide", |a, b| a.floor_divide(b)),
        ("pow", |a, b| {
            a.pow(&b.remainder_scalar(70)?)?.add(&a.pow(b)?)
        }),
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("neg abs sign", |a, _| a.neg()?.abs()?.add(&a.sign()?)),
        ("relu square", |a, _| a.relu()?.square()),
        ("scalars", |a, _| {
            a.add_scalar(3)?.mul_scalar(-5)?.sub_scalar(BIG)
        }),
        ("compare", |a, b| {
            let all = [a.lt(b)?, a.le(b)?, a.gt(b)?, a.ge(b)?, a.eq(b)?, a.ne(b)?];
            Tensor::stack(&all.iter().collect::<Vec<_>>(), 0)
        }),
        ("where", |a, b| Tensor::where_cond(&a.lt(b)?, a, b)),
        ("to f32", |a, _| a.to_dtype(DType::F32)),
        ("casts", |a, _| {
            let parts = [
                a.to_dtype(DType::I32)?.to_dtype(DType::I64)?,
                a.to_dtype(DType::U32)?.to_dtype(DType::I64)?,
                a.to_dtype(DType::U8)?.to_dtype(DType::I64)?,
                a.to_dtype(DType::Bool)?.to_dtype(DType::I64)?,
                a.to_dtype(DType::F16)?
                    .to_dtype(DType::F32)?
                    .to_dtype(DType::I64)?,
                a.to_dtype(DType::BF16)?
                    .to_dtype(DType::F32)?
                    .to_dtype(DType::I64)?,
            ];
            Tensor::stack(&parts.iter().collect::<Vec<_>>(), 0)
        }),
        ("from f32", |a, _| {
            // Exact f32 values, out-of-range ones (saturated), NaN (0).
            let f = a.to_dtype(DType::F32)?.mul_scalar(3.0)?;
            let odd = Tensor::from_vec(vec![f32::NAN, -0.9, 2.5e19, -2.5e19], [4], a.device())?;
            Tensor::concat(&[&f.to_dtype(DType::I64)?, &odd.to_dtype(DType::I64)?], 0)
        }),
        ("fused chain", |a, b| {
            a.mul(b)?.add(a)?.sub_scalar(7)?.maximum(b)
        }),
    ];
    for gpu in common::devices().iter().filter(|d| d.is_gpu()) {
        let (ag, bg) = (a.to_device(gpu).unwrap(), b.to_device(gpu).unwrap());
        for (name, op) in ops {
            let (want, got) = (op(&a, &b).unwrap(), op(&ag, &bg).unwrap());
            if want.dtype() == DType::I64 {
                assert_eq!(
                    vals(&got.to_device(&cpu).unwrap()),
                    vals(&want),
                    "{name} on {gpu}"
                );
            } else {
                // f32 and bool results, exactly (NaN only from NaN).
                let g = got.to_device(&cpu).unwrap();
                assert_eq!(g.to_string(), want.to_string(), "{name} on {gpu}");
            }
        }
        // Views: transposed (a tiled copy), reversed and stepped, written
        // through in place.
        let gg = grid.to_device(gpu).unwrap();
        assert_eq!(
            vals(&gg.t().contiguous().unwrap().to_device(&cpu).unwrap()),
            vals(&grid.t().contiguous().unwrap())
        );
        let (vc, vg) = (
            grid.slice(s![..;-2, 1..;3]).unwrap(),
            gg.slice(s![..;-2, 1..;3]).unwrap(),
        );
        vc.add_(&vc.t().t()).unwrap();
        vg.add_(&vg.t().t()).unwrap();
        vc.mul_scalar_(BIG).unwrap();
        vg.mul_scalar_(BIG).unwrap();
        assert_eq!(
            vals(&gg.to_device(&cpu).unwrap()),
            vals(&grid),
            "in place on {gpu}"
        );
        // Creation with values past i32, and masked fills.
        let full = Tensor::full([5], Scalar::Int(BIG), DType::I64, gpu).unwrap();
        assert_eq!(vals(&full.to_device(&cpu).unwrap()), [BIG; 5]);
        full.slice(s![1..;2]).unwrap().fill_(i64::MIN).unwrap();
        let mask = full.eq_scalar(BIG).unwrap();
        let filled = full.masked_fill(&mask, -BIG).unwrap();
        assert_eq!(
            vals(&filled.to_device(&cpu).unwrap()),
            [-BIG, i64::MIN, -BIG, i64::MIN, -BIG]
        );
        let z = Tensor::zeros([3], DType::I64, gpu).unwrap();
        assert_eq!(vals(&z.to_device(&cpu).unwrap()), [0; 3]);
    }
}

#[test]
fn gpus_index_with_i64_and_move_i64_as_the_cpu_does() {
    let cpu = Device::cpu();
    let data = Tensor::from_vec(wide_values(), [5, 10], &cpu).unwrap();
    let idx = Tensor::from_vec(vec![4i64, -1, 0, 2], [4], &cpu).unwrap();
    let picks: Vec<i64> = (0..20).map(|k| (k * 7 % 10) as i64).collect();
    let picks = Tensor::from_vec(picks, [5, 4], &cpu).unwrap();
    // Distinct along each line (a scatter's duplicates may land in any order).
    let spots = picks.remainder_scalar(5).unwrap();
    let run = |d: &Tensor, i: &Tensor, p: &Tensor, at: &Tensor| -> Vec<Tensor> {
        // Scatter through a stepped view, and add into zeros (i64 sums).
        // A copy: `d` itself stays as it is for the next device.
        let dest = d.add_scalar(0).unwrap();
        let cols = dest.slice(s![.., ..;2]).unwrap();
        cols.scatter_(at, &d.slice(s![.., ..4]).unwrap(), 1)
            .unwrap();
        let sums = Tensor::zeros([5, 10], DType::I64, d.device()).unwrap();
        sums.scatter_add_(p, &d.slice(s![.., 5..9]).unwrap(), 1)
            .unwrap();
        vec![
            d.take(i, 0).unwrap(),
            d.t().index_select(i, 1).unwrap(),
            d.gather(p, 1).unwrap(),
            dest,
            sums,
            d.to_dtype(DType::F32)
                .unwrap()
                .index_select(i, 0)
                .unwrap()
                .to_dtype(DType::I64)
                .unwrap(),
        ]
    };
    let want = run(&data, &idx, &picks, &spots);
    // Devices of their own: this test causes an index fault on purpose.
    for gpu in common::own_devices().iter().filter(|d| d.is_gpu()) {
        let [d, i, p, at] = [&data, &idx, &picks, &spots].map(|t| t.to_device(gpu).unwrap());
        for (k, (got, want)) in run(&d, &i, &p, &at).iter().zip(&want).enumerate() {
            assert_eq!(
                vals(&got.to_device(&cpu).unwrap()),
                vals(want),
                "form {k} on {gpu}"
            );
        }
        // An i64 index past i32 is reported whole.
        let far = Tensor::from_vec(vec![1i64, BIG], [2], gpu).unwrap();
        let taken = d.take(&far, 0).unwrap();
        match taken.to_vec::<i64>() {
            Err(Error::Index { index, size: 5, .. }) => assert_eq!(index as i64, BIG, "{gpu}"),
            other => panic!("{gpu}: {other:?}"),
        }
    }
}

#[test]
fn gpus_reduce_and_scan_i64_as_the_cpu_does() {
    let cpu = Device::cpu();
    let values = wide_values();
    let cycle = |n: usize| -> Vec<i64> { values.iter().cycle().take(n).copied().collect() };
    let x = Tensor::from_vec(cycle(37 * 300), [37, 300], &cpu).unwrap();
    // One line past the blocked scan's threshold (65,536).
    let long = Tensor::from_vec(cycle(70_001), [70_001], &cpu).unwrap();
    let run = |x: &Tensor, long: &Tensor| -> Vec<Tensor> {
        let arg = |t: Tensor| t.to_dtype(DType::I64).unwrap();
        vec![
            x.sum(1).unwrap(),
            x.t().sum(1).unwrap(),
            x.sum(..).unwrap(),
            x.slice(s![..;-3, 5..9]).unwrap().prod(0).unwrap(),
            x.max(1).unwrap(),
            x.t().min(1).unwrap(),
            arg(x.argmax(1).unwrap()),
            arg(x.t().argmin(1).unwrap()),
            x.cumsum(1).unwrap(),
            x.t().cumprod(1).unwrap(),
            long.cumsum(0).unwrap(),
            long.sum(..).unwrap(),
        ]
    };
    let want = run(&x, &long);
    for gpu in common::devices().iter().filter(|d| d.is_gpu()) {
        let (xg, lg) = (x.to_device(gpu).unwrap(), long.to_device(gpu).unwrap());
        for (k, (got, want)) in run(&xg, &lg).iter().zip(&want).enumerate() {
            assert_eq!(
                vals(&got.to_device(&cpu).unwrap()),
                vals(want),
                "form {k} on {gpu}"
            );
        }
        // A mean of integers is f32 on every device.
        assert_eq!(xg.mean(1).unwrap().dtype(), DType::F32);
    }
}

/// Sorts (two stable passes over the words) and products (summed
/// products) compose on a GPU, which has 32-bit kernels for both.
#[test]
fn gpus_sort_and_multiply_i64_as_the_cpu_does() {
    let cpu = Device::cpu();
    let values = wide_values();
    // Ties, equal high words and equal low words, and every sign.
    let mut line: Vec<i64> = values.clone();
    line.extend(values.iter().map(|v| v ^ 0xffff_ffff));
    line.extend(values.iter().map(|v| v.wrapping_add(1 << 32)));
    line.extend(&values[..20]);
    let n = line.len();
    let x = Tensor::from_vec(line, [1, n], &cpu).unwrap();
    let x = x.broadcast_to([3, n]).unwrap().contiguous().unwrap();
    let small = Tensor::from_vec(
        (0..35).map(|k| (k * 7919 % 97) as i64 - 48).collect(),
        [5, 7],
        &cpu,
    )
    .unwrap();
    let big = Tensor::from_vec(values[..21].to_vec(), [3, 7], &cpu).unwrap();
    let run = |x: &Tensor, small: &Tensor, big: &Tensor| -> Vec<Tensor> {
        let as_i64 = |t: Tensor| t.to_dtype(DType::I64).unwrap();
        vec![
            x.sort(1, SortOrder::Ascending).unwrap(),
            x.flip(&[1])
                .unwrap()
                .sort(1, SortOrder::Descending)
                .unwrap(),
            as_i64(x.argsort(1, SortOrder::Descending).unwrap()),
            as_i64(x.t().argsort(0, SortOrder::Ascending).unwrap()),
            x.topk(5, 1, webtensor::TopK::Largest).unwrap().0,
            small.matmul(&small.t()).unwrap(),
            big.t().matmul(big).unwrap(),
            big.slice(s![0]).unwrap().matmul(&big.t()).unwrap(),
        ]
    };
    let want = run(&x, &small, &big);
    for gpu in common::devices().iter().filter(|d| d.is_gpu()) {
        let [x, small, big] = [&x, &small, &big].map(|t| t.to_device(gpu).unwrap());
        for (k, (got, want)) in run(&x, &small, &big).iter().zip(&want).enumerate() {
            assert_eq!(
                vals(&got.to_device(&cpu).unwrap()),
                vals(want),
                "form {k} on {gpu}"
            );
        }
    }
}

/// `arange` of i64 counts and steps in integers, as NumPy's: past 2^53
/// (`np.arange(2**53 + 1, 2**53 + 5) - (2**53 + 1)` is `[0, 1, 2, 3]`,
/// `np.arange(2**60, 2**60 + 3)` has 3 elements), falling, and empty.
#[test]
fn arange_of_i64_is_exact_past_2_pow_53() {
    let dev = Device::cpu();
    let s = (1i64 << 53) + 1;
    let got = Tensor::arange(s, s + 4, 1, &dev)
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert_eq!(got, [s, s + 1, s + 2, s + 3]);
    let big = 1i64 << 60;
    assert_eq!(Tensor::arange(big, big + 3, 1, &dev).unwrap().numel(), 3);
    let down = Tensor::arange(i64::MAX, i64::MAX - 7, -3, &dev).unwrap();
    assert_eq!(
        down.to_vec::<i64>().unwrap(),
        [i64::MAX, i64::MAX - 3, i64::MAX - 6]
    );
    let across = Tensor::arange(i64::MIN, i64::MAX, i64::MAX, &dev).unwrap();
    assert_eq!(
        across.to_vec::<i64>().unwrap(),
        [i64::MIN, -1, i64::MAX - 1]
    );
    assert_eq!(Tensor::arange(5i64, 5, 1, &dev).unwrap().numel(), 0);
    assert_eq!(Tensor::arange(5i64, 9, -1, &dev).unwrap().numel(), 0);
    assert!(matches!(
        Tensor::arange(0i64, 9, 0, &dev),
        Err(webtensor::Error::Argument { op: "arange", .. })
    ));
}

/// A scalar past i32 written through an overlapping view is refused naming
/// the op the caller used on every device (a GPU's wide scalars go through
/// `assign`, whose name its errors carried).
#[test]
fn wide_fills_through_overlapping_views_name_their_op() {
    for dev in common::devices() {
        let base = Tensor::zeros([2], DType::I64, &dev).unwrap();
        let v = base.slice(s![..1]).unwrap().broadcast_to([3]).unwrap();
        let mask = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        for value in [1i64, 1 << 40] {
            common::assert_op_err(v.fill_(value), "fill_");
            common::assert_op_err(v.masked_fill_(&mask, value), "masked_fill_");
        }
    }
}
