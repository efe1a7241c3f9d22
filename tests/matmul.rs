//! Matrix products on every device: hand-worked values, NumPy's 1-D and
//! batch-broadcast rules, strided operands, sizes that are not multiples of
//! the GPU tile, empty dimensions, and errors. Float results are checked
//! against a float64 reference by relative norm error.

mod common;

use common::{assert_close, devices, noise, read_f32};
use webtensor::{DType, Device, Error, Tensor, s};

/// `a @ b` in f64 for row-major [batch, m, k] and [batch, k, n] values.
fn reference(a: &[f64], b: &[f64], batch: usize, m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; batch * m * n];
    for q in 0..batch {
        for i in 0..m {
            for p in 0..k {
                let x = a[q * m * k + i * k + p];
                for j in 0..n {
                    c[q * m * n + i * n + j] += x * b[q * k * n + p * n + j];
                }
            }
        }
    }
    c
}

/// ||got - want|| / ||want||.
fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let diff: f64 = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (g as f64 - w).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|w| w * w).sum();
    (diff / norm.max(1e-300)).sqrt()
}

/// `got` (from a GPU) equals `want` (from the CPU): exactly for integers,
/// within `f32_tolerance` relative error for f32, 2e-3 for f16 and 1.6e-2
/// for bf16, and each element within 4 times that of the largest (one
/// wrong output among thousands moves the norm too little).
fn assert_matches(got: &Tensor, want: &Tensor, f32_tolerance: f64, label: &str) {
    assert_eq!(got.dims(), want.dims(), "{label}");
    if want.dtype() == DType::I32 {
        let exact = |t: &Tensor| t.to_vec::<i32>().unwrap();
        assert_eq!(exact(got), exact(want), "{label}");
        return;
    }
    let want_dtype = want.dtype();
    let (got, want) = (read_f32(got), as_f64(want));
    let err = relative_error(&got, &want);
    let tol = common::half_tol(want_dtype, 2e-3, f32_tolerance as f32) as f64;
    assert!(err < tol, "{label}: relative error {err}");
    let largest = want.iter().fold(1e-30, |m: f64, w| m.max(w.abs()));
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let off = (f64::from(g) - w).abs();
        assert!(
            off <= 4.0 * tol * largest,
            "{label}: element {i} is {g}, want {w}"
        );
    }
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    read_f32(t).iter().map(|&x| x as f64).collect()
}

#[test]
fn hand_worked_products() {
    for dev in devices() {
        let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &dev).unwrap();
        let b = Tensor::from_slice(&[7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0], [3, 2], &dev).unwrap();
        let c = a.matmul(&b).unwrap();
        assert_eq!(c.dims(), &[2, 2]);
        assert_eq!(
            c.to_vec::<f32>().unwrap(),
            [58.0, 64.0, 139.0, 154.0],
            "{dev}"
        );
        // a @ a.t() reads a transposed view of one storage.
        assert_eq!(
            a.matmul(&a.t()).unwrap().to_vec::<f32>().unwrap(),
            [14.0, 32.0, 32.0, 77.0]
        );
        let v = Tensor::from_slice(&[1.0f32, 0.0, -1.0], [3], &dev).unwrap();
        let av = a.matmul(&v).unwrap();
        assert_eq!(av.dims(), &[2]);
        assert_eq!(av.to_vec::<f32>().unwrap(), [-2.0, -2.0]);
        let w = Tensor::from_slice(&[1.0f32, -1.0], [2], &dev).unwrap();
        let wa = w.matmul(&a).unwrap();
        assert_eq!(wa.dims(), &[3]);
        assert_eq!(wa.to_vec::<f32>().unwrap(), [-3.0, -3.0, -3.0]);
        let d = v.dot(&v).unwrap();
        assert_eq!(d.rank(), 0);
        assert_eq!(d.item::<f32>().unwrap(), 2.0);
        let o = w.outer(&v).unwrap();
        assert_eq!(o.dims(), &[2, 3]);
        assert_eq!(o.to_vec::<f32>().unwrap(), [1.0, 0.0, -1.0, -1.0, 0.0, 1.0]);
        let i = Tensor::from_slice(&[i32::MAX, 2, 3, 4], [2, 2], &dev).unwrap();
        let one = Tensor::from_slice(&[1i32, 0, 1, 1], [2, 2], &dev).unwrap();
        // Wrapping, as elementwise integer arithmetic.
        assert_eq!(
            i.matmul(&one).unwrap().to_vec::<i32>().unwrap(),
            [i32::MIN + 1, 2, 7, 4]
        );
        let u = Tensor::from_slice(&[3u32, 4], [1, 2], &dev).unwrap();
        assert_eq!(u.matmul(&u.t()).unwrap().item::<u32>().unwrap(), 25);
    }
}

/// Sizes around the 64 x 64 x 16 GPU tile.
const SIZES: [(usize, usize, usize); 6] = [
    (1, 1, 1),
    (5, 7, 3),
    (65, 130, 67),
    (64, 16, 64),
    (17, 200, 1),
    (128, 33, 96),
];

/// Each element of `got`, a product of `k` terms rounded once to `dtype`
/// from an f32 sum, within that of the exact `want`: half an ulp of the
/// dtype (twice, for slack) of the value, and the f32 sum's roundings,
/// `k` of 2^-24 of the terms' magnitude `absum` (twice as well). A norm
/// alone lets one wrong output in thousands through.
fn assert_each_close(got: &[f32], want: &[f64], absum: &[f64], k: usize, dtype: DType, what: &str) {
    let unit = match dtype {
        DType::F16 => 2f64.powi(-11),
        DType::BF16 => 2f64.powi(-8),
        _ => 2f64.powi(-24),
    };
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(absum).enumerate() {
        let bound = 2.0 * unit * w.abs() + 2.0 * k as f64 * 2f64.powi(-24) * s + 1e-30;
        assert!(
            (f64::from(g) - w).abs() <= bound,
            "{what}: element {i} is {g}, want {w} (within {bound})"
        );
    }
}

#[test]
fn float_products_match_float64() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let tol = common::half_tol(dtype, 2e-3, 1e-6) as f64;
            for (case, &(m, k, n)) in SIZES.iter().enumerate() {
                let a = Tensor::from_vec(noise(m * k, case as u64 + 1), [m, k], &dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap();
                let b = Tensor::from_vec(noise(k * n, case as u64 + 100), [k, n], &dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap();
                let want = reference(&as_f64(&a), &as_f64(&b), 1, m, k, n);
                let abs = |t: &Tensor| as_f64(t).iter().map(|v| v.abs()).collect::<Vec<_>>();
                let absum = reference(&abs(&a), &abs(&b), 1, m, k, n);
                let c = a.matmul(&b).unwrap();
                assert_eq!(c.dtype(), dtype);
                let err = relative_error(&read_f32(&c), &want);
                assert!(err < tol, "{dev} {dtype} {m}x{k}x{n}: relative error {err}");
                let what = format!("{dev} {dtype} {m}x{k}x{n}");
                assert_each_close(&read_f32(&c), &want, &absum, k, dtype, &what);
                // The same product from transposed storage: (b.t() @ a.t()).t().
                let at = a.t().contiguous().unwrap().t();
                let bt = b.t().contiguous().unwrap().t();
                assert!(!at.is_contiguous() || m == 1 || k == 1);
                let c2 = at.matmul(&bt).unwrap();
                let err = relative_error(&read_f32(&c2), &want);
                assert!(
                    err < tol,
                    "{dev} {dtype} transposed {m}x{k}x{n}: relative error {err}"
                );
                let what = format!("{dev} {dtype} transposed {m}x{k}x{n}");
                assert_each_close(&read_f32(&c2), &want, &absum, k, dtype, &what);
            }
        }
    }
}

#[test]
fn strided_and_reversed_operands() {
    for dev in devices() {
        let big = Tensor::from_vec(noise(20 * 30, 7), [20, 30], &dev).unwrap();
        // Stepped rows, reversed columns, an offset: a [5, 10] view.
        let a = big.slice(s![2..;4, ..;-3]).unwrap();
        let b = big.slice(s![..10, 1..30;5]).unwrap().flip(&[0]).unwrap();
        assert_eq!((a.dims(), b.dims()), (&[5usize, 10][..], &[10usize, 6][..]));
        let want = reference(&as_f64(&a), &as_f64(&b), 1, 5, 10, 6);
        let err = relative_error(&read_f32(&a.matmul(&b).unwrap()), &want);
        assert!(err < 1e-6, "{dev}: {err}");
        // A broadcast (stride-0) operand.
        let row = Tensor::from_vec(noise(10, 8), [1, 10], &dev).unwrap();
        let rows = row.broadcast_to([4, 10]).unwrap();
        let want = reference(&as_f64(&rows), &as_f64(&b), 1, 4, 10, 6);
        let err = relative_error(&read_f32(&rows.matmul(&b).unwrap()), &want);
        assert!(err < 1e-6, "{dev}: {err}");
    }
}

#[test]
fn a_long_k_splits_over_slices_and_matches_float64() {
    // A GPU's f32 product of few output tiles over a long k runs as a batch
    // over even slices of k, read through strided views, and a fixed sum
    // (split-k): contiguous, transposed, reversed, stepped-and-offset and
    // broadcast operands (along m and along k), a row by a column, 1-D
    // operands, and a k that no slice count divides (no split), against
    // float64, on every device. The same bits every run.
    for dev in devices() {
        let k = 8192;
        let big = Tensor::from_vec(noise(2 * 40 * k, 11), [2 * 40, k], &dev).unwrap();
        let bt = Tensor::from_vec(noise(k * 24, 12), [24, k], &dev).unwrap();
        let cases: Vec<(&str, Tensor, Tensor)> = vec![
            (
                "contiguous",
                big.narrow(0, 0, 40).unwrap(),
                bt.t().contiguous().unwrap(),
            ),
            ("transposed b", big.narrow(0, 0, 40).unwrap(), bt.t()),
            (
                "reversed k, stepped rows",
                big.slice(s![1..;2, ..;-1]).unwrap(),
                bt.t().flip(&[0]).unwrap(),
            ),
            (
                "broadcast row",
                big.narrow(0, 3, 1).unwrap().broadcast_to([5, k]).unwrap(),
                bt.t(),
            ),
            (
                "row by column",
                big.narrow(0, 7, 1).unwrap(),
                bt.narrow(0, 2, 1).unwrap().t(),
            ),
            (
                "transposed a",
                big.narrow(0, 0, 40).unwrap().t().contiguous().unwrap().t(),
                bt.t(),
            ),
            (
                "broadcast along k",
                big.narrow(1, 5, 1)
                    .unwrap()
                    .narrow(0, 0, 6)
                    .unwrap()
                    .broadcast_to([6, k])
                    .unwrap(),
                bt.t(),
            ),
            (
                "prime k",
                big.narrow(1, 0, 4099).unwrap().narrow(0, 0, 9).unwrap(),
                bt.narrow(1, 0, 4099).unwrap().t(),
            ),
        ];
        for (what, a, b) in cases {
            let (m, kk, n) = (a.dims()[0], a.dims()[1], b.dims()[1]);
            let want = reference(&as_f64(&a), &as_f64(&b.contiguous().unwrap()), 1, m, kk, n);
            let got = a.matmul(&b).unwrap();
            // Sums of thousands of f32 products: a few ulps of the norm.
            let err = relative_error(&read_f32(&got), &want);
            assert!(err < 1e-5, "{what} on {dev}: {err}");
            let again = read_f32(&a.matmul(&b).unwrap());
            assert_eq!(read_f32(&got), again, "{what} on {dev}: the same bits");
        }
        // 1-D operands (a vector times a matrix, a dot product): the
        // unsqueezed axes dropped again after the split.
        let v = big.narrow(0, 3, 1).unwrap().squeeze_axis(0).unwrap();
        let w = bt.narrow(0, 1, 1).unwrap().squeeze_axis(0).unwrap();
        let bc = bt.t().contiguous().unwrap();
        let want = reference(&as_f64(&v), &as_f64(&bc), 1, 1, k, 24);
        let got = v.matmul(&bt.t()).unwrap();
        assert_eq!(got.dims(), &[24], "{dev}");
        assert!(
            relative_error(&read_f32(&got), &want) < 1e-5,
            "vector on {dev}"
        );
        let want: f64 = as_f64(&v).iter().zip(as_f64(&w)).map(|(x, y)| x * y).sum();
        let got = v.dot(&w).unwrap();
        assert!(got.dims().is_empty(), "{dev}");
        assert!(
            relative_error(&read_f32(&got), &[want]) < 1e-5,
            "dot on {dev}"
        );
    }
}

#[test]
fn batched_products_and_contractions_over_a_long_k_keep_their_digits() {
    // A batch of a few small matrices over a long k, and einsum's and
    // tensordot's products (a batch of one), split k as a 2-D product
    // does: a GPU thread summing all of k in one chain was 247 ulps off
    // on values on a coarse grid (1e4 + noise), where NumPy float32 is 15
    // and the split 2-D product 3. Every output within 2e-6 of its
    // sum |a||b| (about 25 ulps), against float64, on every device; the
    // same bits every run.
    let k = 1 << 16;
    let coarse = |n: usize, seed| -> Vec<f32> { noise(n, seed).iter().map(|x| 1e4 + x).collect() };
    for dev in devices() {
        let a = Tensor::from_vec(coarse(3 * 2 * k, 21), [3, 2, k], &dev).unwrap();
        let b = Tensor::from_vec(coarse(3 * k * 2, 22), [3, k, 2], &dev).unwrap();
        let bt = b.transpose(-1, -2).unwrap().contiguous().unwrap();
        let a2 = a.reshape([6, k]).unwrap();
        let b2 = b.narrow(0, 0, 1).unwrap().squeeze_axis(0).unwrap();
        let cases: Vec<(&str, Tensor, Tensor, Tensor)> = vec![
            ("batched", a.clone(), b.clone(), a.matmul(&b).unwrap()),
            (
                "batched, transposed b",
                a.clone(),
                bt.transpose(-1, -2).unwrap(),
                a.matmul(&bt.transpose(-1, -2).unwrap()).unwrap(),
            ),
            (
                "broadcast batch",
                a.narrow(0, 1, 1).unwrap().broadcast_to([3, 2, k]).unwrap(),
                b.clone(),
                a.narrow(0, 1, 1).unwrap().matmul(&b).unwrap(),
            ),
            (
                "einsum",
                a2.clone(),
                b2.clone(),
                Tensor::einsum("ij,jk->ik", &[&a2, &b2]).unwrap(),
            ),
            (
                "tensordot",
                a2.clone(),
                b2.clone(),
                a2.tensordot(&b2, &[-1], &[0]).unwrap(),
            ),
        ];
        for (what, x, y, got) in cases {
            let x = x.contiguous().unwrap();
            let y = y.contiguous().unwrap();
            let batch = x.numel() / (x.dims()[x.rank() - 2] * k);
            let (m, n) = (x.dims()[x.rank() - 2], y.dims()[y.rank() - 1]);
            let (xs, ys) = (as_f64(&x), as_f64(&y));
            let want = reference(&xs, &ys, batch, m, k, n);
            let magnitude = reference(
                &xs.iter().map(|v| v.abs()).collect::<Vec<_>>(),
                &ys.iter().map(|v| v.abs()).collect::<Vec<_>>(),
                batch,
                m,
                k,
                n,
            );
            let values = read_f32(&got);
            assert_eq!(values.len(), want.len(), "{what} on {dev}");
            for (i, ((&g, w), size)) in values.iter().zip(&want).zip(&magnitude).enumerate() {
                let off = (f64::from(g) - w).abs() / size;
                assert!(
                    off < 2e-6,
                    "{what} on {dev}: output {i} is {g}, want {w} ({off})"
                );
            }
        }
        let again = read_f32(&a.matmul(&b).unwrap());
        assert_eq!(
            read_f32(&a.matmul(&b).unwrap()),
            again,
            "{dev}: the same bits"
        );
        // Rank-8 operands take no slice axis: unsplit, still the product.
        let a8 = a.reshape([3, 1, 1, 1, 1, 1, 2, k]).unwrap();
        let b8 = b.reshape([3, 1, 1, 1, 1, 1, k, 2]).unwrap();
        let flat = read_f32(&a8.matmul(&b8).unwrap());
        let want = reference(&as_f64(&a), &as_f64(&b), 3, 2, k, 2);
        assert!(relative_error(&flat, &want) < 1e-4, "rank 8 on {dev}");
    }
}

#[test]
fn half_products_over_a_long_k_round_once_on_every_device() {
    // An f16 or bf16 product over k past a GPU's slice of k (8,192) keeps
    // its partial sums in f32 and rounds once, as the CPU does: the first
    // 8,192 of these products sum past 65,536, beyond f16's 65,504, where
    // the whole product is a few thousand (every output was inf
    // on a GPU, and bf16 rounded each slice's sum to 8 bits). The operands
    // are small integers, so every partial sum is exact in f32 and the
    // product is its exact value rounded once to the dtype, for a tiled,
    // a matrix-vector, a vector-matrix and a batched product.
    let k = 4 * 8192;
    // a: integers of 8 to 23, the second half of each row's k the first
    // half negated; b: 1 or 2.
    let a_values = |n: usize, seed| -> Vec<f32> {
        let v = noise(n, seed);
        (0..n)
            .map(|i| {
                let first = i - i % k + (i % k) % (k / 2);
                let m = 8.0 + ((v[first] + 1.0) * 8.0).floor().min(15.0);
                if i % k < k / 2 { m } else { -m }
            })
            .collect()
    };
    let b_values = |n: usize, seed| -> Vec<f32> {
        noise(n, seed)
            .iter()
            .map(|&x| if x > 0.0 { 2.0 } else { 1.0 })
            .collect()
    };
    let cpu = Device::cpu();
    let (m, n) = (20, 18);
    let a = Tensor::from_vec(a_values(2 * m * k, 31), [2, m, k], &cpu).unwrap();
    let b = Tensor::from_vec(b_values(2 * k * n, 32), [2, n, k], &cpu).unwrap();
    let b = b.transpose(-1, -2).unwrap().contiguous().unwrap();
    let exact = reference(&as_f64(&a), &as_f64(&b), 2, m, k, n);
    assert!(exact.iter().all(|w| w.abs() < 32768.0 && *w == w.round()));
    // Outputs (batch, row, column) of the whole product.
    let at = |q: usize, i: usize, j: usize| q * m * n + i * n + j;
    for dtype in [DType::F16, DType::BF16] {
        let rounded = |w: f64| match dtype {
            DType::F16 => half::f16::from_f64(w).to_f32(),
            _ => half::bf16::from_f64(w).to_f32(),
        };
        for dev in devices() {
            let to = |t: &Tensor| t.to_dtype(dtype).unwrap().to_device(&dev).unwrap();
            let (a, b) = (to(&a), to(&b));
            let grid = |q: std::ops::Range<usize>,
                        rows: std::ops::Range<usize>,
                        columns: std::ops::Range<usize>| {
                let mut picks = Vec::new();
                for qq in q {
                    for i in rows.clone() {
                        picks.extend(columns.clone().map(|j| at(qq, i, j)));
                    }
                }
                picks
            };
            let cases = [
                ("tiled", a.matmul(&b).unwrap(), grid(0..2, 0..m, 0..n)),
                (
                    "per output",
                    a.narrow(1, 3, 5)
                        .unwrap()
                        .matmul(&b.narrow(2, 4, 3).unwrap())
                        .unwrap(),
                    grid(0..2, 3..8, 4..7),
                ),
                (
                    "row",
                    a.narrow(1, 2, 1).unwrap().matmul(&b).unwrap(),
                    grid(0..2, 2..3, 0..n),
                ),
                (
                    "column",
                    a.matmul(&b.narrow(2, 1, 1).unwrap()).unwrap(),
                    grid(0..2, 0..m, 1..2),
                ),
            ];
            for (what, got, picks) in cases {
                assert_eq!(got.dtype(), dtype, "{what} on {dev}");
                let want: Vec<f32> = picks.iter().map(|&p| rounded(exact[p])).collect();
                assert_eq!(read_f32(&got), want, "{what} {dtype} on {dev}");
            }
        }
    }
}

#[test]
fn batches_broadcast_as_numpy() {
    for dev in devices() {
        let a = Tensor::from_vec(noise(2 * 5 * 4, 11), [2, 1, 5, 4], &dev).unwrap();
        let b = Tensor::from_vec(noise(3 * 4 * 6, 12), [3, 4, 6], &dev).unwrap();
        let c = a.matmul(&b).unwrap();
        assert_eq!(c.dims(), &[2, 3, 5, 6]);
        // The broadcast operands built on the host: batch (i, j) is a's
        // matrix i and b's matrix j.
        let (av, bv) = (as_f64(&a), as_f64(&b));
        let (mut a_full, mut b_full) = (Vec::new(), Vec::new());
        for i in 0..2 {
            for j in 0..3 {
                a_full.extend_from_slice(&av[i * 20..(i + 1) * 20]);
                b_full.extend_from_slice(&bv[j * 24..(j + 1) * 24]);
            }
        }
        let want = reference(&a_full, &b_full, 6, 5, 4, 6);
        let err = relative_error(&read_f32(&c), &want);
        assert!(err < 1e-6, "{dev}: {err}");
        // A batch of matrices times one vector, and a transposed batch.
        let v = Tensor::from_vec(noise(4, 13), [4], &dev).unwrap();
        let av_times_v = a.matmul(&v).unwrap();
        assert_eq!(av_times_v.dims(), &[2, 1, 5]);
        let vv = as_f64(&v).repeat(2);
        let want = reference(&av, &vv, 2, 5, 4, 1);
        let err = relative_error(&read_f32(&av_times_v), &want);
        assert!(err < 1e-6, "batch times a vector on {dev}: {err}");
        let at = a.transpose(-1, -2).unwrap(); // [2, 1, 4, 5]
        let ct = at.matmul(&a).unwrap();
        assert_eq!(ct.dims(), &[2, 1, 4, 4]);
        let want = reference(&as_f64(&at), &as_f64(&a), 2, 4, 5, 4);
        assert!(relative_error(&read_f32(&ct), &want) < 1e-6, "{dev}");
    }
}

#[test]
fn empty_dimensions() {
    for dev in devices() {
        let z = |m: usize, n: usize| Tensor::zeros([m, n], DType::F32, &dev).unwrap();
        assert_eq!(z(0, 3).matmul(&z(3, 4)).unwrap().dims(), &[0, 4]);
        assert_eq!(z(3, 4).matmul(&z(4, 0)).unwrap().dims(), &[3, 0]);
        // k == 0: a sum of nothing.
        let a = Tensor::from_vec(Vec::<f32>::new(), [3, 0], &dev).unwrap();
        let b = Tensor::from_vec(Vec::<f32>::new(), [0, 2], &dev).unwrap();
        // Fill a reused pool buffer with garbage first, so zeros are earned.
        drop(Tensor::full([3, 2], 7.0f32, DType::F32, &dev).unwrap());
        assert_eq!(
            a.matmul(&b).unwrap().to_vec::<f32>().unwrap(),
            [0.0; 6],
            "{dev}"
        );
        // And through the matrix-vector kernel.
        let v = Tensor::from_vec(Vec::<f32>::new(), [0], &dev).unwrap();
        drop(Tensor::full([3], 7.0f32, DType::F32, &dev).unwrap());
        assert_eq!(a.matmul(&v).unwrap().to_vec::<f32>().unwrap(), [0.0; 3]);
        let e = Tensor::zeros([0, 3, 4], DType::F32, &dev).unwrap();
        assert_eq!(e.matmul(&z(4, 2)).unwrap().dims(), &[0, 3, 2]);
    }
}

#[test]
fn bad_operands_are_errors() {
    for dev in devices() {
        let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
        match a.matmul(&a) {
            Err(Error::Shape { op: "matmul", msg }) => assert!(msg.contains("3 != 2"), "{msg}"),
            other => panic!("{:?}", other.map(|t| t.dims().to_vec())),
        }
        let scalar = Tensor::full((), 1.0f32, DType::F32, &dev).unwrap();
        assert!(matches!(a.matmul(&scalar), Err(Error::Shape { .. })));
        let i = Tensor::zeros([3, 2], DType::I32, &dev).unwrap();
        assert!(matches!(a.matmul(&i), Err(Error::DType { .. })));
        let u = Tensor::zeros([3, 3], DType::U8, &dev).unwrap();
        assert!(matches!(u.matmul(&u), Err(Error::DType { .. })));
        let x = Tensor::zeros([2, 5, 3], DType::F32, &dev).unwrap();
        let y = Tensor::zeros([4, 3, 2], DType::F32, &dev).unwrap();
        assert!(matches!(x.matmul(&y), Err(Error::Shape { .. })));
        assert!(matches!(a.dot(&a), Err(Error::Shape { op: "dot", .. })));
    }
    let cpu = Tensor::zeros([2, 2], DType::F32, &Device::cpu()).unwrap();
    if let Some(gpu) = common::gpu() {
        let g = Tensor::zeros([2, 2], DType::F32, &gpu).unwrap();
        assert!(matches!(cpu.matmul(&g), Err(Error::DeviceMismatch { .. })));
    }
}

#[test]
fn outer_reads_strided_views_and_rejects_matrices() {
    for dev in devices() {
        let x = Tensor::arange(0.0f32, 6.0, 1.0, &dev).unwrap();
        let a = x.slice(s![..;-2]).unwrap(); // [5, 3, 1]
        let b = x.slice(s![1..3]).unwrap(); // [1, 2]
        let o = a.outer(&b).unwrap();
        assert_eq!(o.dims(), &[3, 2]);
        assert_eq!(
            o.to_vec::<f32>().unwrap(),
            [5.0, 10.0, 3.0, 6.0, 1.0, 2.0],
            "{dev}"
        );
        assert_eq!(
            a.dot(&x.slice(s![..3]).unwrap())
                .unwrap()
                .item::<f32>()
                .unwrap(),
            5.0
        );
        let m = x.reshape([2, 3]).unwrap();
        assert!(matches!(m.outer(&a), Err(Error::Shape { op: "outer", .. })));
    }
}

/// Every GPU matmul tile, native and packed f16, on odd sizes across the
/// tiles' edges and on every operand layout, against the CPU: f32 and f16
/// by relative error, i32 exactly (wrapping).
#[test]
fn every_tile_matches_the_cpu_on_every_layout() {
    use webtensor::{GpuOptions, MatmulTile};
    let cpu = Device::cpu();
    for tile in MatmulTile::FIXED {
        for packed in [false, true] {
            let Some(gpu) = common::own_gpu(GpuOptions {
                matmul_tile: Some(tile),
                force_packed_f16: packed,
                ..Default::default()
            }) else {
                return;
            };
            assert_eq!(gpu.matmul_tile(), tile);
            if tile == MatmulTile::Subgroup && gpu.info().name.contains("llvmpipe") {
                // lavapipe's subgroups have eight lanes: the shuffles run.
                assert!(gpu.info().subgroups && gpu.info().subgroup_min_size >= 8);
            }
            for (case, &(m, k, n)) in [
                (1, 1, 1),
                (7, 65, 3),
                (65, 7, 129),
                (129, 33, 63),
                (33, 1000, 65),
                // Multiples of four: vec4 loads along either axis, and k
                // across the kernel's slices.
                (132, 36, 68),
                (64, 1028, 96),
            ]
            .iter()
            .enumerate()
            {
                let seed = case as u64 * 10;
                // Contiguous bases (to_device copies a view row-major, so
                // every view below is taken on the device it runs on).
                let bases = [
                    Tensor::from_vec(noise(m * k, seed), [m, k], &cpu).unwrap(),
                    Tensor::from_vec(noise(k * n, seed + 1), [k, n], &cpu).unwrap(),
                    Tensor::from_vec(noise(k * (2 * n + 1), seed + 2), [k, 2 * n + 1], &cpu)
                        .unwrap(),
                    // a and b inside wider rows, at offsets of four and one.
                    Tensor::from_vec(noise(m * (k + 8), seed + 3), [m, k + 8], &cpu).unwrap(),
                    Tensor::from_vec(noise(k * (n + 8), seed + 4), [k, n + 8], &cpu).unwrap(),
                ];
                let views = |[a, b, b_wide, a_wider, b_wider]: [Tensor; 5]| {
                    let a_t = a.t().contiguous().unwrap().t();
                    let b_t = b.t().contiguous().unwrap().t();
                    vec![
                        ("a @ b", a.clone(), b.clone()),
                        ("a.t() @ b (a stored transposed)", a_t, b.clone()),
                        ("a @ b.t() (b stored transposed)", a.clone(), b_t),
                        (
                            "reversed a @ stepped b",
                            a.flip(&[0, 1]).unwrap(),
                            b_wide.slice(s![.., 1..;2]).unwrap(),
                        ),
                        (
                            "a @ b at offset 4",
                            a_wider.slice(s![.., 4..4 + k]).unwrap(),
                            b_wider.slice(s![.., 4..4 + n]).unwrap(),
                        ),
                        (
                            "a @ b at offset 1",
                            a_wider.slice(s![.., 1..1 + k]).unwrap(),
                            b_wider.slice(s![.., 1..1 + n]).unwrap(),
                        ),
                    ]
                };
                // Packing stores f16 alone. The fast form takes one dtype
                // per shape in turn; the long form every one. bf16 is
                // packed on every device.
                let dtypes = [DType::F32, DType::F16, DType::I32, DType::BF16];
                let dtypes: Vec<DType> = if packed {
                    vec![DType::F16]
                } else if common::long_tests() {
                    dtypes.to_vec()
                } else {
                    vec![dtypes[case % 4]]
                };
                for dtype in dtypes {
                    let typed = |dev: &Device| -> [Tensor; 5] {
                        bases.clone().map(|t| {
                            let t = if dtype == DType::I32 {
                                t.mul_scalar(100.0).unwrap().to_dtype(DType::I32).unwrap()
                            } else {
                                t.to_dtype(dtype).unwrap()
                            };
                            t.to_device(dev).unwrap()
                        })
                    };
                    let on_cpu = views(typed(&cpu));
                    let on_gpu = views(typed(&gpu));
                    for ((what, xc, yc), (_, xg, yg)) in on_cpu.iter().zip(&on_gpu) {
                        assert_eq!(xg.strides(), xc.strides(), "{what}");
                        let want = xc.matmul(yc).unwrap();
                        let got = xg.matmul(yg).unwrap();
                        let label = format!("{tile:?} packed={packed} {what} {dtype} {m}x{k}x{n}");
                        assert_matches(&got, &want, 1e-6, &label);
                    }
                }
            }
            // Batches broadcast against one matrix, across the tile edge.
            let a = Tensor::from_vec(noise(3 * 65 * 9, 5), [3, 1, 65, 9], &cpu).unwrap();
            let b = Tensor::from_vec(noise(2 * 9 * 130, 6), [2, 9, 130], &cpu).unwrap();
            let want: Vec<f64> = read_f32(&a.matmul(&b).unwrap())
                .iter()
                .map(|&v| v as f64)
                .collect();
            let got = a
                .to_device(&gpu)
                .unwrap()
                .matmul(&b.to_device(&gpu).unwrap())
                .unwrap();
            assert_eq!(got.dims(), &[3, 2, 65, 130]);
            let err = relative_error(&read_f32(&got), &want);
            assert!(err < 1e-6, "{tile:?} batched: {err}");
            // The tile named ran: a kernel its probe dropped would have
            // left its products to another, right all the same.
            let dropped = gpu.info().dropped_kernels;
            assert!(dropped.is_empty(), "{tile:?} packed={packed}: {dropped:?}");
        }
    }
}

/// Batches of small matrices (the per-output kernel when the tile is
/// automatic): more outputs than one row of the dispatch grid holds, a
/// transposed left operand and a right operand broadcast over the batch,
/// and a batch of 8 x 8 products in f16 and i32.
#[test]
fn batches_of_small_matrices_match_the_cpu() {
    let cpu = Device::cpu();
    let Some(gpu) = common::gpu() else { return };
    // 70,000 x 16 x 16 outputs: 17.9M threads, past 65535 workgroups of 256.
    let batches = 70_000;
    let a = Tensor::from_vec(noise(batches * 3 * 16, 21), [batches, 3, 16], &cpu).unwrap();
    let b = Tensor::from_vec(noise(3 * 16, 22), [1, 3, 16], &cpu).unwrap();
    let want = a.transpose(-1, -2).unwrap().matmul(&b).unwrap();
    let got = a
        .to_device(&gpu)
        .unwrap()
        .transpose(-1, -2)
        .unwrap()
        .matmul(&b.to_device(&gpu).unwrap())
        .unwrap();
    assert_eq!(got.dims(), &[batches, 16, 16]);
    assert_matches(
        &got,
        &want,
        1e-6,
        "70,000 transposed 16 x 3 @ broadcast 3 x 16",
    );
    for dtype in [DType::F16, DType::BF16, DType::I32] {
        let a = Tensor::from_vec(noise(500 * 8 * 9, 23), [500, 8, 9], &cpu)
            .unwrap()
            .mul_scalar(10.0)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let b = Tensor::from_vec(noise(500 * 9 * 8, 24), [500, 9, 8], &cpu)
            .unwrap()
            .mul_scalar(10.0)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let want = a.matmul(&b).unwrap();
        let got = a
            .to_device(&gpu)
            .unwrap()
            .matmul(&b.to_device(&gpu).unwrap())
            .unwrap();
        assert_matches(&got, &want, 1e-6, &format!("500 x 8 x 9 x 8 {dtype}"));
    }
}

/// Matrix-vector and vector-matrix products (the GPU's own kernel when the
/// tile is automatic): both memory orders of the matrix, reversed and
/// stepped vectors, batches, k across the kernel's lanes and slices, every
/// dtype; f32 and f16 by relative error, i32 exactly.
#[test]
fn matrix_vector_products_on_every_layout() {
    let cpu = Device::cpu();
    let Some(gpu) = common::gpu() else { return };
    assert_eq!(gpu.matmul_tile(), webtensor::MatmulTile::Auto);
    for (case, &(rows, k)) in [(1, 1), (3, 63), (65, 64), (257, 129), (5, 9000), (1000, 7)]
        .iter()
        .enumerate()
    {
        let seed = 100 + case as u64 * 10;
        let mat = Tensor::from_vec(noise(rows * k, seed), [rows, k], &cpu).unwrap();
        let mat_t = Tensor::from_vec(noise(rows * k, seed + 1), [k, rows], &cpu)
            .unwrap()
            .t();
        let wide = Tensor::from_vec(noise(2 * k + 1, seed + 2), [2 * k + 1], &cpu).unwrap();
        let vecs = [
            (
                "v",
                Tensor::from_vec(noise(k, seed + 3), [k], &cpu).unwrap(),
            ),
            (
                "reversed v",
                wide.slice(s![..k]).unwrap().flip(&[0]).unwrap(),
            ),
            ("stepped v", wide.slice(s![1..;2]).unwrap()),
        ];
        for (m_name, m) in [("A", &mat), ("A.t()", &mat_t)] {
            for (v_name, v) in &vecs {
                for dtype in [DType::F32, DType::F16, DType::BF16, DType::I32] {
                    let cast = |t: &Tensor| {
                        if dtype == DType::I32 {
                            t.mul_scalar(100.0).unwrap().to_dtype(DType::I32).unwrap()
                        } else {
                            t.to_dtype(dtype).unwrap()
                        }
                    };
                    let (mc, vc) = (cast(m), cast(v));
                    let (mg, vg) = (mc.to_device(&gpu).unwrap(), vc.to_device(&gpu).unwrap());
                    let mt_c = mc.t();
                    let mt_g = mg.t();
                    let pairs = [
                        ("M @ v", mc.matmul(&vc).unwrap(), mg.matmul(&vg).unwrap()),
                        (
                            "v @ M.t",
                            vc.matmul(&mt_c).unwrap(),
                            vg.matmul(&mt_g).unwrap(),
                        ),
                    ];
                    for (what, want, got) in pairs {
                        let label = format!("{m_name} {v_name} {what} {dtype} {rows}x{k}");
                        // Both sides round; sums of 9000 terms differ in order.
                        assert_matches(&got, &want, 1e-5, &label);
                    }
                }
            }
        }
    }
    // A batch of matrices times one vector, and one vector times a batch.
    let a = Tensor::from_vec(noise(4 * 70 * 33, 5), [4, 70, 33], &cpu).unwrap();
    let v = Tensor::from_vec(noise(33, 6), [33, 1], &cpu).unwrap();
    let w = Tensor::from_vec(noise(70, 7), [1, 70], &cpu).unwrap();
    for (want, got) in [
        (
            a.matmul(&v).unwrap(),
            a.to_device(&gpu)
                .unwrap()
                .matmul(&v.to_device(&gpu).unwrap())
                .unwrap(),
        ),
        (
            w.matmul(&a).unwrap(),
            w.to_device(&gpu)
                .unwrap()
                .matmul(&a.to_device(&gpu).unwrap())
                .unwrap(),
        ),
    ] {
        let want: Vec<f64> = read_f32(&want).iter().map(|&x| x as f64).collect();
        assert!(relative_error(&read_f32(&got), &want) < 1e-6);
    }
}

/// Autotuning (on where asked; off by default on a software adapter such
/// as lavapipe, whose timings are the CPU's): the first product of a class
/// times every tile that fits it, later products of the class reuse the
/// winner without timing, another class (another layout, size or dtype)
/// is timed again, and every result equals the CPU's.
#[test]
fn autotuning_times_each_class_once_and_keeps_results_exact() {
    use webtensor::GpuOptions;
    let Some(gpu) = common::own_gpu(GpuOptions {
        autotune: Some(true),
        ..Default::default()
    }) else {
        return;
    };
    assert!(gpu.info().autotune, "{}", gpu.info());
    if let Some(default) = common::gpu() {
        let info = default.info();
        if info.is_software() && std::env::var("WEBTENSOR_AUTOTUNE").is_err() {
            assert!(!info.autotune, "{info}");
        }
    }
    let cpu = Device::cpu();
    let product = |m: usize, k: usize, n: usize, seed: u64, transposed: bool, dtype: DType| {
        let a = Tensor::from_vec(noise(m * k, seed), [m, k], &cpu).unwrap();
        let b = Tensor::from_vec(noise(k * n, seed + 1), [k, n], &cpu).unwrap();
        let (a, b) = (a.to_dtype(dtype).unwrap(), b.to_dtype(dtype).unwrap());
        let want = a.matmul(&b).unwrap();
        // Stored transposed on the GPU: a view whose k axis is not the fast one.
        let on_gpu = a.to_device(&gpu).unwrap();
        let a = if transposed {
            on_gpu.t().contiguous().unwrap().t()
        } else {
            on_gpu
        };
        let before = gpu.stats().tuning_runs;
        let got = a.matmul(&b.to_device(&gpu).unwrap()).unwrap();
        assert_matches(
            &got,
            &want,
            1e-6,
            &format!("{m}x{k}x{n} {dtype} t={transposed}"),
        );
        gpu.stats().tuning_runs - before
    };
    // Each timed kernel runs once untimed, then five times timed. The square
    // tiles (large, medium, small) and the oblong ones (tall, wide) fit
    // every product; the subgroup kernel
    // is timed where the adapter's subgroups have eight lanes or more
    // (lavapipe's do), and is the medium tile elsewhere.
    let info = gpu.info();
    let subgroup = usize::from(info.subgroups && info.subgroup_min_size >= 8);
    let runs = |kernels: usize| (kernels + subgroup) as u64 * 6;
    // f16 products also time the cooperative-matrix tile where the
    // adapter has cooperative matrices (an NVIDIA GPU's Vulkan driver).
    let coop = u64::from(info.cooperative_matrix) * 6;
    let started = std::time::Instant::now();
    assert_eq!(product(100, 80, 100, 1, false, DType::F32), runs(5));
    // The same class (sizes 64..127): no timing.
    assert_eq!(product(120, 90, 70, 3, false, DType::F32), 0);
    // Another layout, another dtype, another size: timed again.
    assert_eq!(product(100, 80, 100, 5, true, DType::F32), runs(5));
    assert_eq!(product(100, 80, 100, 7, false, DType::F16), runs(5) + coop);
    assert_eq!(product(300, 40, 20, 9, false, DType::F32), runs(5));
    assert_eq!(product(300, 40, 20, 11, false, DType::F32), 0);
    // A product of few rows times the few-rows tile too.
    assert_eq!(product(8, 64, 300, 15, false, DType::F32), runs(6));
    // Small matrices: the square and skinny tiles, and the per-output
    // kernel.
    assert_eq!(product(12, 20, 10, 17, false, DType::F32), runs(8));
    // Matrix-vector products have one kernel: nothing to time.
    assert_eq!(product(100, 80, 1, 13, false, DType::F32), 0);
    // The timed runs measured some time, within the time they ran in (a
    // timer reading zeros, or GPU timestamps scaled by the wrong period,
    // shows here). Natively with TIMESTAMP_QUERY (lavapipe, Vulkan
    // drivers) it is GPU time.
    let ns = gpu.stats().tuning_ns;
    let wall = started.elapsed().as_nanos() as u64;
    let by = if gpu.info().gpu_timestamps {
        "GPU timestamps"
    } else {
        "the host clock"
    };
    assert!(ns > 0 && ns < wall, "{ns} ns by {by} in {wall} ns");
    // What each class chose is public: the six classes timed (the
    // matrix-vector product has no class). A winner other than the size
    // rule's tile ran at least 10% faster by the median.
    let tuned = gpu.info().tuned_matmuls;
    assert_eq!(tuned.len(), 6, "{tuned:#?}");
    for t in &tuned {
        let (Some(time), Some(rule)) = (t.time, t.size_rule_time) else {
            panic!("a timed class without its times: {t}");
        };
        assert!(
            t.winner == t.size_rule || time.as_secs_f64() <= 0.9 * rule.as_secs_f64(),
            "{t}"
        );
        assert!(time <= rule, "{t}");
    }
    let f16 = tuned.iter().filter(|t| t.dtype == DType::F16).count();
    assert_eq!(f16, 1, "{tuned:#?}");
    // A device that does not tune never times.
    let Some(fixed) = common::own_gpu(GpuOptions {
        autotune: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let a = Tensor::ones([100, 100], DType::F32, &fixed).unwrap();
    a.matmul(&a).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(fixed.stats().tuning_runs, 0);
    assert!(!fixed.info().autotune);
}

/// Autotuning runs each timed run's dispatches in the one flush it times,
/// whatever the flush threshold: with a threshold of one op they were
/// submitted untimed as they were recorded, the timer timed an empty
/// pass, and the winner was drawn by noise.
#[test]
fn autotuning_times_its_runs_under_any_flush_threshold() {
    use webtensor::GpuOptions;
    let tuned_submits = |threshold: usize| {
        let gpu = common::own_gpu(GpuOptions {
            autotune: Some(true),
            flush_threshold: Some(threshold),
            ..Default::default()
        })?;
        // A first product checks the kernels (probes submit as they
        // go), the second, of another class, is tuned alone.
        let warm = Tensor::ones([100, 80], DType::F32, &gpu).unwrap();
        warm.matmul(&warm.t()).unwrap().to_vec::<f32>().unwrap();
        let a = Tensor::from_vec(noise(200 * 160, 1), [200, 160], &gpu).unwrap();
        let b = Tensor::from_vec(noise(160 * 200, 2), [160, 200], &gpu).unwrap();
        gpu.sync().unwrap();
        let before = gpu.stats();
        let product = a.matmul(&b).unwrap();
        let after = gpu.stats();
        let cpu = Device::cpu();
        let want = a
            .to_device(&cpu)
            .unwrap()
            .matmul(&b.to_device(&cpu).unwrap());
        let what = format!("threshold {threshold}");
        assert_close(&read_f32(&product), &read_f32(&want.unwrap()), 1e-5, &what);
        let runs = after.tuning_runs - before.tuning_runs;
        assert!(runs > 0, "{threshold}: not tuned");
        Some((after.submits - before.submits, runs))
    };
    let (Some(every_op), Some(batched)) = (tuned_submits(1), tuned_submits(1024)) else {
        return;
    };
    // One submit per timed run; flushing at every op, the product itself
    // is submitted as it is recorded too.
    let (submits, runs) = batched;
    assert_eq!(submits, runs, "{batched:?}");
    assert_eq!(every_op, (runs + 1, runs));
}

/// The self-check: a kernel made wrong on purpose (`sabotage_matmul`, each
/// output off by one) fails its probe products before its first use, is
/// dropped, named in `info()` and counted in `stats()`, and its products
/// go to another kernel, so every result still equals the CPU's: with the
/// tile fixed, under autotuning, and, when the reference kernel itself is
/// the wrong one and also the one asked for, as an `Err`.
#[test]
fn the_self_check_drops_a_wrong_kernel_and_results_stay_exact() {
    use webtensor::{GpuOptions, MatmulTile};
    let cpu = Device::cpu();
    let operands = |m: usize, k: usize, n: usize| {
        let a = Tensor::from_vec(noise(m * k, 7), [m, k], &cpu).unwrap();
        let b = Tensor::from_vec(noise(k * n, 8), [n, k], &cpu).unwrap().t();
        (a.matmul(&b).unwrap().to_vec::<f32>().unwrap(), a, b)
    };
    let cases = [
        // (made wrong, asked for, autotune, output extents)
        (MatmulTile::Small, MatmulTile::Small, false, [35, 37]),
        (MatmulTile::Medium, MatmulTile::Auto, true, [70, 66]),
        (MatmulTile::Large, MatmulTile::Large, false, [130, 129]),
    ];
    for (wrong, asked, autotune, [m, n]) in cases {
        let Some(gpu) = common::own_gpu(GpuOptions {
            sabotage_matmul: Some(wrong),
            matmul_tile: Some(asked),
            autotune: Some(autotune),
            ..Default::default()
        }) else {
            return;
        };
        let (want, a, b) = operands(m, 29, n);
        let got = a
            .to_device(&gpu)
            .unwrap()
            .matmul(&b.to_device(&gpu).unwrap())
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let name = format!("matmul {wrong:?} f32").to_ascii_lowercase();
        assert_close(
            &got,
            &want,
            1e-5,
            &format!("{name} made wrong, {asked:?} asked"),
        );
        let info = gpu.info();
        assert_eq!(info.dropped_kernels, vec![name.clone()], "{info}");
        assert!(
            info.to_string().contains(&format!("dropped {name}")),
            "{info}"
        );
        let stats = gpu.stats();
        assert_eq!(stats.kernels_dropped, 1, "{stats:?}");
        assert!(stats.kernels_checked >= 2, "{stats:?}");
    }
    // The per-output kernel is the reference the others give way to: when
    // it is wrong and asked for, nothing is left to compute with.
    let Some(gpu) = common::own_gpu(GpuOptions {
        sabotage_matmul: Some(MatmulTile::PerOutput),
        matmul_tile: Some(MatmulTile::PerOutput),
        ..Default::default()
    }) else {
        return;
    };
    let (_, a, b) = operands(5, 7, 3);
    let err = a
        .to_device(&gpu)
        .unwrap()
        .matmul(&b.to_device(&gpu).unwrap())
        .unwrap_err();
    assert!(matches!(err, Error::Gpu { op: "matmul", .. }), "{err}");
    assert!(err.to_string().contains("matmul peroutput f32"), "{err}");
}

/// On every device the suite runs on, no kernel in use disagrees with the
/// exact probe products: after products of every kind (each tile, the
/// matrix-vector kernel, f32 and f16), nothing was dropped.
#[test]
fn no_kernel_of_this_device_is_dropped() {
    use webtensor::{GpuOptions, MatmulTile};
    let Some(gpu) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let cpu = Device::cpu();
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for tile in [MatmulTile::Auto].into_iter().chain(MatmulTile::FIXED) {
            gpu.set_matmul_tile(tile);
            for [m, k, n] in [[33, 20, 31], [1, 20, 40], [40, 20, 1]] {
                let a = Tensor::from_vec(noise(m * k, 3), [m, k], &cpu).unwrap();
                let b = Tensor::from_vec(noise(k * n, 4), [k, n], &cpu).unwrap();
                let (a, b) = (a.to_dtype(dtype).unwrap(), b.to_dtype(dtype).unwrap());
                let want = read_f32(&a.matmul(&b).unwrap());
                let got = a
                    .to_device(&gpu)
                    .unwrap()
                    .matmul(&b.to_device(&gpu).unwrap())
                    .unwrap();
                // Each side sums in f32 in its own order, then rounds
                // once: 2 ulps of a half type.
                let rel = common::half_tol(dtype, 2e-3, 1e-5);
                let what = format!("{dtype} {tile:?} {m}x{k}x{n}");
                assert_close(&read_f32(&got), &want, rel, &what);
            }
        }
    }
    let info = gpu.info();
    assert!(info.dropped_kernels.is_empty(), "{info}");
    assert!(gpu.stats().kernels_checked >= 8, "{:?}", gpu.stats());
}

/// Cooperative matrices and `MatmulPrecision::Fast`: `info()` reports
/// both; where the device has no cooperative matrices (bookworm's
/// lavapipe, browsers) the cooperative tile runs the medium one and f32
/// stays exact under `Fast`; where it has them (an NVIDIA GPU's Vulkan
/// driver, 16 x 16 fragments; Mesa 25's lavapipe, 8 x 8, see
/// `scripts/cooperative-tests`), f16 products and fast f32 ones run on
/// them, pass the self-check and agree with the CPU to f16's precision.
///
/// Sizes cross the kernel's blocks (64 and 128 outputs), its k steps (16
/// and 32) and the launcher's k slices (8192); the operands come in every
/// layout (each staged along its axis of smaller stride, four elements a
/// load where aligned), at offsets, reversed, stepped, broadcast and
/// batched. `WEBTENSOR_REQUIRE_COOPERATIVE=1`
/// makes a device without cooperative matrices a failure.
#[test]
fn cooperative_products_match_the_cpu_on_every_layout() {
    let Some((gpu, on)) = common::fast_gpu(Some(webtensor::MatmulTile::Cooperative)) else {
        return;
    };
    let info = gpu.info();
    assert_eq!(
        info.matmul_precision,
        webtensor::MatmulPrecision::Fast,
        "{info}"
    );
    assert!(info.to_string().contains(if on {
        "cooperative matrices on"
    } else {
        "cooperative matrices off"
    }));
    let cpu = Device::cpu();
    let shapes = [
        (1, 1, 1),
        (7, 17, 3),
        (65, 33, 129),
        (131, 40, 66),
        (129, 100, 257),
        // Multiples of four: vec4 loads along either axis of either
        // operand.
        (132, 72, 136),
        (67, 8192 + 40, 9),
    ];
    for (case, &(m, k, n)) in shapes.iter().enumerate() {
        let seed = 100 + case as u64 * 10;
        let bases = [
            Tensor::from_vec(noise(m * k, seed), [m, k], &cpu).unwrap(),
            Tensor::from_vec(noise(k * n, seed + 1), [k, n], &cpu).unwrap(),
            Tensor::from_vec(noise(k * (2 * n + 1), seed + 2), [k, 2 * n + 1], &cpu).unwrap(),
            Tensor::from_vec(noise(m * (k + 8), seed + 3), [m, k + 8], &cpu).unwrap(),
            Tensor::from_vec(noise(n + 3, seed + 4), [n + 3], &cpu).unwrap(),
        ];
        let views = |[a, b, b_wide, a_wider, row]: [Tensor; 5]| {
            let a_t = a.t().contiguous().unwrap().t();
            let b_t = b.t().contiguous().unwrap().t();
            vec![
                ("a @ b", a.clone(), b.clone()),
                ("a.t() @ b", a_t.clone(), b.clone()),
                ("a @ b.t()", a.clone(), b_t.clone()),
                ("a.t() @ b.t()", a_t, b_t),
                (
                    "reversed a @ stepped b",
                    a.flip(&[0, 1]).unwrap(),
                    b_wide.slice(s![.., 1..;2]).unwrap(),
                ),
                (
                    "a at offset 4 @ b",
                    a_wider.slice(s![.., 4..4 + k]).unwrap(),
                    b.clone(),
                ),
                (
                    "a at offset 1 @ a broadcast row",
                    a_wider.slice(s![.., 1..1 + k]).unwrap(),
                    row.slice(s![3..]).unwrap().broadcast_to([k, n]).unwrap(),
                ),
            ]
        };
        for dtype in [DType::F16, DType::F32, DType::BF16] {
            let typed = |dev: &Device| {
                bases
                    .clone()
                    .map(|t| t.to_dtype(dtype).unwrap().to_device(dev).unwrap())
            };
            for ((what, xc, yc), (_, xg, yg)) in views(typed(&cpu)).iter().zip(&views(typed(&gpu)))
            {
                // Fast f32 on cooperative matrices rounds its operands to
                // f16: the CPU's product of the rounded operands, where
                // only the order of the sums differs. f16 and bf16 round
                // their results.
                let rounded = |t: &Tensor| match dtype == DType::F32 && on {
                    true => t
                        .to_dtype(DType::F16)
                        .unwrap()
                        .to_dtype(DType::F32)
                        .unwrap(),
                    false => t.clone(),
                };
                let want = read_f32(&rounded(xc).matmul(&rounded(yc)).unwrap());
                let got = read_f32(&xg.matmul(yg).unwrap());
                // A kernel the self-check dropped is named, not hidden
                // behind its stand-in's answers.
                assert!(gpu.info().dropped_kernels.is_empty(), "{}", gpu.info());
                // Sums in another order drift with the root of k; f16
                // rounds once, past a k slice (8192) too.
                let rel = match dtype {
                    DType::F32 => 1e-5 + 1e-6 * (k as f32).sqrt(),
                    DType::F16 => 2e-3,
                    _ => 1.6e-2,
                };
                let label = format!("{what} {dtype} {m}x{k}x{n}, cooperative {on}");
                assert_close(&got, &want, rel, &label);
            }
        }
        // Batches: a stack against one matrix, and broadcast stacks.
        if k < 1000 {
            let a = Tensor::from_vec(noise(3 * m * k, seed + 5), [3, 1, m, k], &cpu).unwrap();
            let b = Tensor::from_vec(noise(2 * k * n, seed + 6), [2, k, n], &cpu).unwrap();
            for dtype in [DType::F16, DType::F32] {
                let (a, b) = (a.to_dtype(dtype).unwrap(), b.to_dtype(dtype).unwrap());
                let want = read_f32(&a.matmul(&b).unwrap());
                let got = a
                    .to_device(&gpu)
                    .unwrap()
                    .matmul(&b.to_device(&gpu).unwrap())
                    .unwrap();
                assert_eq!(got.dims(), &[3, 2, m, n]);
                assert_close(
                    &read_f32(&got),
                    &want,
                    1e-2,
                    &format!("batched {dtype} {m}x{k}x{n}"),
                );
            }
        }
    }
    assert!(gpu.info().dropped_kernels.is_empty(), "{}", gpu.info());
}

/// A race test of the cooperative kernel's staging (one pair of barriers a
/// k step, the next step's values loading meanwhile; naga's barriers under
/// the Vulkan memory model have had open questions, wgpu #8805): products
/// of small integers, exact in f16 and in f32 sums, many workgroups and k
/// steps, repeated, each equal to the CPU's bit for bit. A value staged
/// out of turn changes some output.
#[test]
fn cooperative_products_are_exact_every_time() {
    let Some((gpu, _)) = common::fast_gpu(Some(webtensor::MatmulTile::Cooperative)) else {
        return;
    };
    let cpu = Device::cpu();
    let (m, k, n) = (256, 520, 264);
    let ints = |len: usize, seed: u64| -> Vec<f32> {
        noise(len, seed)
            .iter()
            .map(|v| (v * 8.0).round().clamp(-3.0, 3.0))
            .collect()
    };
    let a = Tensor::from_vec(ints(m * k, 1), [m, k], &cpu).unwrap();
    let b = Tensor::from_vec(ints(k * n, 2), [n, k], &cpu).unwrap().t();
    let want = a.matmul(&b).unwrap().to_vec::<f32>().unwrap();
    let (ag, bg) = (a.to_device(&gpu).unwrap(), b.to_device(&gpu).unwrap());
    for round in 0..8 {
        let got = ag.matmul(&bg).unwrap().to_vec::<f32>().unwrap();
        let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        assert_eq!(
            wrong,
            0,
            "round {round}: {wrong} outputs differ ({})",
            gpu.info()
        );
    }
    assert!(gpu.info().dropped_kernels.is_empty(), "{}", gpu.info());
}

/// A cooperative product in a captured step replays: the step writes
/// `a @ b` (f16) into a tensor, runs, `a` is doubled, and it runs again.
/// The kernel's probe runs before the capture (a captured step cannot
/// submit one).
#[test]
fn cooperative_products_replay_from_a_captured_step() {
    let Some((gpu, on)) = common::fast_gpu(Some(webtensor::MatmulTile::Cooperative)) else {
        return;
    };
    let cpu = Device::cpu();
    let (m, k, n) = (70, 40, 130);
    let half = |len, seed, dims: [usize; 2]| {
        let t = Tensor::from_vec(noise(len, seed), dims, &cpu).unwrap();
        t.to_dtype(DType::F16).unwrap()
    };
    let (a, b) = (half(m * k, 31, [m, k]), half(k * n, 32, [k, n]));
    let want = read_f32(&a.matmul(&b).unwrap());
    let (ag, bg) = (a.to_device(&gpu).unwrap(), b.to_device(&gpu).unwrap());
    assert_close(&read_f32(&ag.matmul(&bg).unwrap()), &want, 2e-3, "eager");
    let out = Tensor::zeros([m, n], DType::F16, &gpu).unwrap();
    let (a2, b2, o2) = (ag.clone(), bg.clone(), out.clone());
    let mut graph = gpu.capture(move || o2.assign(&a2.matmul(&b2)?)).unwrap();
    for scale in [1.0, 2.0] {
        if scale > 1.0 {
            ag.mul_scalar_(2.0).unwrap();
        }
        graph.run().unwrap();
        let want: Vec<f32> = want.iter().map(|v| v * scale).collect();
        let what = format!("replayed, a times {scale}, cooperative {on}");
        assert_close(&read_f32(&out), &want, 2e-3, &what);
    }
    assert!(gpu.info().dropped_kernels.is_empty(), "{}", gpu.info());
}

/// A cooperative kernel made wrong on purpose is dropped and named, on a
/// device that has cooperative matrices, whether asked for or chosen by
/// `MatmulTile::Auto` (which runs f16 products on it there), and its
/// products go to the tile by size: results stay right.
#[test]
fn a_sabotaged_cooperative_kernel_is_dropped_and_named() {
    use webtensor::{GpuOptions, MatmulPrecision, MatmulTile};
    let cpu = Device::cpu();
    let a = Tensor::from_vec(noise(66 * 35, 41), [66, 35], &cpu).unwrap();
    let b = Tensor::from_vec(noise(35 * 67, 42), [35, 67], &cpu).unwrap();
    let (a, b) = (
        a.to_dtype(DType::F16).unwrap(),
        b.to_dtype(DType::F16).unwrap(),
    );
    let want = read_f32(&a.matmul(&b).unwrap());
    for asked in [MatmulTile::Cooperative, MatmulTile::Auto] {
        let Some(gpu) = common::own_gpu(GpuOptions {
            matmul_precision: Some(MatmulPrecision::Fast),
            matmul_tile: Some(asked),
            sabotage_matmul: Some(MatmulTile::Cooperative),
            autotune: Some(false),
            ..Default::default()
        }) else {
            return;
        };
        let got = a
            .to_device(&gpu)
            .unwrap()
            .matmul(&b.to_device(&gpu).unwrap())
            .unwrap();
        assert_close(
            &read_f32(&got),
            &want,
            2e-3,
            &format!("{asked:?}, after the drop"),
        );
        let info = gpu.info();
        let named = info
            .dropped_kernels
            .contains(&"matmul cooperative f16".to_string());
        assert_eq!(named, info.cooperative_matrix, "{asked:?}: {info}");
        if named {
            // The cooperative probe, then the tile by size's.
            assert!(gpu.stats().kernels_checked >= 2, "{:?}", gpu.stats());
        }
    }
}

/// The self-check's probes read back their own products, submitting what
/// the application recorded before: an index fault of its ops stays for
/// its own next readback, not the matmul that probed.
#[test]
fn a_probe_leaves_index_faults_to_the_applications_readback() {
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions::default()) else {
        return;
    };
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &gpu).unwrap();
    let bad = Tensor::from_slice(&[5i32], [1], &gpu).unwrap();
    let picked = x.take(&bad, 0).unwrap();
    // The device's first product: its kernel is probed now.
    let a = Tensor::ones([20, 20], DType::F32, &gpu).unwrap();
    let product = a.matmul(&a).unwrap();
    assert!(gpu.stats().kernels_checked >= 1, "{:?}", gpu.stats());
    let err = picked.to_vec::<f32>().unwrap_err();
    assert!(matches!(err, Error::Index { op: "take", .. }), "{err}");
    assert_eq!(product.to_vec::<f32>().unwrap(), vec![20.0; 400]);
}

/// Batch axes that do not broadcast: the error names both operands' whole
/// shapes, not only their batch axes.
#[test]
fn unbroadcastable_batches_name_the_operands() {
    let dev = Device::cpu();
    let a = Tensor::zeros([2, 3, 4], DType::F32, &dev).unwrap();
    let b = Tensor::zeros([5, 4, 6], DType::F32, &dev).unwrap();
    let e = a.matmul(&b).unwrap_err().to_string();
    assert!(
        e.contains("matmul") && e.contains("[2, 3, 4] @ [5, 4, 6]"),
        "{e}"
    );
}

/// A row vector times a matrix over a long inner axis of positive values:
/// the CPU's matrix-vector product (gemm's) kept one running sum per
/// output over all 2^20 terms, and late terms rounded away (1.6e-4 off,
/// every output low; NumPy's float32 is 6e-6 off). The reference is
/// worked out in f64.
#[test]
fn long_inner_axes_keep_their_digits_in_matrix_vector_products() {
    let k = 1 << 20;
    let x = Tensor::rand([1, k], DType::F32, 3, &Device::cpu()).unwrap();
    let b = Tensor::rand([k, 4], DType::F32, 4, &Device::cpu()).unwrap();
    let (xv, bv) = (read_f32(&x), read_f32(&b));
    let want: Vec<f64> = (0..4)
        .map(|j| (0..k).map(|i| xv[i] as f64 * bv[i * 4 + j] as f64).sum())
        .collect();
    for dev in devices() {
        let (x, b) = (x.to_device(&dev).unwrap(), b.to_device(&dev).unwrap());
        // As [1, k] x [k, 4], as [k] x [k, 4], and as [4, k] x [k] (the
        // other matrix-vector form).
        let products = [
            read_f32(&x.matmul(&b).unwrap()),
            read_f32(&x.reshape([k]).unwrap().matmul(&b).unwrap()),
            read_f32(
                &b.transpose(0, 1)
                    .unwrap()
                    .matmul(&x.reshape([k]).unwrap())
                    .unwrap(),
            ),
        ];
        for (form, got) in products.iter().enumerate() {
            for (g, w) in got.iter().zip(&want) {
                let e = (*g as f64 - w).abs() / w;
                assert!(e <= 2e-6, "form {form} on {dev}: {g} for {w} ({e:.1e})");
            }
        }
    }
}
