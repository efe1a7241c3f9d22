//! cumsum, cumprod, softmax and log_softmax on every device: hand-worked
//! values, every view layout against an f64 reference, both GPU scan modes,
//! integer dtypes, overflow-prone inputs, empty tensors and errors.

mod common;

use common::{assert_close, devices, noise, read_f32, round_to, views_of};
use webtensor::{DType, Device, Error, Tensor, s};

/// Running sums (or products) of the row-major `values` of shape `dims`
/// along `axis`, in f64.
fn scan_ref(values: &[f32], dims: &[usize], axis: usize, prod: bool) -> Vec<f64> {
    let inner: usize = dims[axis + 1..].iter().product();
    let n = dims[axis];
    let mut out: Vec<f64> = values.iter().map(|&v| v as f64).collect();
    for (i, _) in values.iter().enumerate() {
        if !(i / inner).is_multiple_of(n) {
            let prev = out[i - inner];
            out[i] = if prod { prev * out[i] } else { prev + out[i] };
        }
    }
    out
}

#[test]
fn cumsum_and_cumprod_hand_worked() {
    for dev in devices() {
        let t = Tensor::from_slice(&[1.0f32, 2., 3., 4., 5., 6.], [2, 3], &dev).unwrap();
        let f = |x: Tensor| x.to_vec::<f32>().unwrap();
        assert_eq!(f(t.cumsum(0).unwrap()), [1., 2., 3., 5., 7., 9.]);
        assert_eq!(f(t.cumsum(1).unwrap()), [1., 3., 6., 4., 9., 15.]);
        assert_eq!(f(t.cumsum(-1).unwrap()), [1., 3., 6., 4., 9., 15.]);
        assert_eq!(f(t.cumprod(1).unwrap()), [1., 2., 6., 4., 20., 120.]);
        assert_eq!(f(t.t().cumprod(0).unwrap()), [1., 4., 2., 20., 6., 120.]);
        // Integers wrap; bool counts into i32 and u8 into u32.
        let big = Tensor::from_slice(&[65536i32, 65536, 3], [3], &dev).unwrap();
        assert_eq!(
            big.cumprod(0).unwrap().to_vec::<i32>().unwrap(),
            [65536, 0, 0]
        );
        let bits = Tensor::from_slice(&[true, false, true, true], [4], &dev).unwrap();
        let counts = bits.cumsum(0).unwrap();
        assert_eq!(counts.dtype(), DType::I32);
        assert_eq!(counts.to_vec::<i32>().unwrap(), [1, 1, 2, 3]);
        let bytes = Tensor::from_slice(&[200u8, 100, 7], [3], &dev).unwrap();
        assert_eq!(
            bytes.cumsum(0).unwrap().to_vec::<u32>().unwrap(),
            [200, 300, 307]
        );
        // Empty axes give empty results.
        assert_eq!(
            Tensor::zeros([0, 3], DType::F32, &dev)
                .unwrap()
                .cumsum(0)
                .unwrap()
                .dims(),
            &[0, 3]
        );
        assert_eq!(
            Tensor::zeros([3, 0], DType::F32, &dev)
                .unwrap()
                .cumprod(1)
                .unwrap()
                .dims(),
            &[3, 0]
        );
    }
}

#[test]
fn scans_read_every_view_layout() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for (name, v) in views_of(&dev, dtype) {
                let values = read_f32(&v.contiguous().unwrap());
                for axis in 0..2 {
                    for prod in [false, true] {
                        let got = if prod {
                            v.cumprod(axis as isize)
                        } else {
                            v.cumsum(axis as isize)
                        };
                        let got = got.unwrap();
                        assert_eq!(got.dtype(), dtype);
                        let want: Vec<f32> = scan_ref(&values, &[4, 6], axis, prod)
                            .iter()
                            .map(|&x| round_to(dtype, x))
                            .collect();
                        let tol = common::half_tol(dtype, 4e-3, 1e-5);
                        assert_close(
                            &read_f32(&got),
                            &want,
                            tol,
                            &format!("{dev} {dtype} {name} axis {axis} prod {prod}"),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn long_lines_scan_in_workgroups() {
    // Lines over 64 elements take the GPU's workgroup mode, with a carry
    // across chunks; a reversed view steps backwards.
    for dev in devices() {
        for (lines, length) in [(1, 1000), (3, 65), (70, 129)] {
            let values = noise(lines * length, 7);
            let t = Tensor::from_vec(values.clone(), [lines, length], &dev).unwrap();
            let want = scan_ref(&values, &[lines, length], 1, false);
            let bound: Vec<f32> = want.iter().map(|&x| x as f32).collect();
            assert_close(
                &t.cumsum(1).unwrap().to_vec::<f32>().unwrap(),
                &bound,
                1e-4,
                &format!("{dev} {lines}x{length}"),
            );
            let rev = t.flip(&[1]).unwrap();
            let rev_values = rev.contiguous().unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = scan_ref(&rev_values, &[lines, length], 1, false)
                .iter()
                .map(|&x| x as f32)
                .collect();
            assert_close(
                &rev.cumsum(-1).unwrap().to_vec::<f32>().unwrap(),
                &want,
                1e-4,
                &format!("{dev} reversed {lines}x{length}"),
            );
            // Integers are exact whatever the order of combination.
            let ints = Tensor::arange(0i32, (lines * length) as i32, 1, &dev)
                .unwrap()
                .reshape([lines, length])
                .unwrap();
            let got = ints.t().cumsum(0).unwrap().to_vec::<i32>().unwrap();
            let want: Vec<i32> = (0..length * lines)
                .map(|i| {
                    let (k, l) = (i / lines, i % lines);
                    (0..=k).map(|j| (l * length + j) as i32).sum()
                })
                .collect();
            assert_eq!(got, want, "{dev} i32 {lines}x{length}");
        }
    }
}

fn softmax_ref(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

/// `(x - max) - ln(sum(exp(x - max)))`, finite where softmax underflows.
fn log_softmax_ref(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = row.iter().map(|x| (x - m).exp()).sum();
    row.iter().map(|x| (x - m) - s.ln()).collect()
}

#[test]
fn softmax_is_stable_and_matches_a_reference() {
    for dev in devices() {
        let t = Tensor::from_slice(&[1.0f32, 2., 3., 1000., 1001., 1002.], [2, 3], &dev).unwrap();
        let want: Vec<f32> = softmax_ref(&[1., 2., 3.])
            .iter()
            .chain(softmax_ref(&[1., 2., 3.]).iter())
            .map(|&x| x as f32)
            .collect();
        assert_close(
            &t.softmax(1).unwrap().to_vec::<f32>().unwrap(),
            &want,
            1e-6,
            "softmax",
        );
        let logs: Vec<f32> = want.iter().map(|x| x.ln()).collect();
        assert_close(
            &t.log_softmax(-1).unwrap().to_vec::<f32>().unwrap(),
            &logs,
            1e-6,
            "log_softmax",
        );
        // Down the columns the large row takes everything.
        let col = t.softmax(0).unwrap().to_vec::<f32>().unwrap();
        assert_close(&col, &[0., 0., 0., 1., 1., 1.], 1e-6, "column softmax");
        // log_softmax stays finite where softmax underflows.
        let far = Tensor::from_slice(&[0.0f32, -1000.0], [2], &dev).unwrap();
        assert_eq!(far.softmax(0).unwrap().to_vec::<f32>().unwrap(), [1.0, 0.0]);
        assert_close(
            &far.log_softmax(0).unwrap().to_vec::<f32>().unwrap(),
            &[0.0, -1000.0],
            1e-6,
            "far",
        );

        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for (name, v) in views_of(&dev, dtype) {
                let values = read_f32(&v.contiguous().unwrap());
                let got = v.softmax(0).unwrap();
                assert_eq!(got.dtype(), dtype);
                let got = read_f32(&got);
                let lsm = read_f32(&v.log_softmax(0).unwrap());
                for c in 0..6 {
                    let col: Vec<f64> = (0..4).map(|r| values[r * 6 + c] as f64).collect();
                    let want = softmax_ref(&col);
                    let tol = common::half_tol(dtype, 2e-3, 1e-6);
                    for r in 0..4 {
                        let what = format!("{dev} {dtype} {name} [{r}, {c}]");
                        assert_close(&[got[r * 6 + c]], &[want[r] as f32], tol, &what);
                        assert_close(&[lsm[r * 6 + c]], &[want[r].ln() as f32], tol, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn along_axis_errors() {
    let dev = Device::cpu();
    let t = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
    assert!(matches!(t.cumsum(2), Err(Error::Axis { op: "cumsum", .. })));
    assert!(matches!(
        t.cumprod(-3),
        Err(Error::Axis { op: "cumprod", .. })
    ));
    let scalar = Tensor::full([], 1.0, DType::F32, &dev).unwrap();
    // A 0-d tensor is one line along axis 0 or -1 (PyTorch's reading), no
    // other.
    assert!(matches!(scalar.cumsum(1), Err(Error::Axis { .. })));
    assert!(matches!(
        t.softmax(2),
        Err(Error::Axis { op: "softmax", .. })
    ));
    let ints = Tensor::zeros([2], DType::I32, &dev).unwrap();
    let e = ints.log_softmax(0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DType {
                op: "log_softmax",
                ..
            }
        ),
        "{e}"
    );
    let empty = Tensor::zeros([0, 4], DType::F32, &dev).unwrap();
    assert_eq!(empty.softmax(1).unwrap().dims(), &[0, 4]);
}

/// Softmax lines across the GPU kernel's boundaries (one workgroup of 128
/// threads per line, or a subgroup per aligned line that fits its
/// registers; lines past `2^20` composed from reductions), many
/// lines (a two-dimensional grid), and lines holding NaN, +inf, -inf or
/// only -inf: every device agrees with the f64 reference, NaN where it has
/// NaN.
#[test]
fn softmax_lines_of_every_length_and_special_values() {
    let check = |dev: &Device, t: &Tensor, axis: isize, what: &str| {
        let values = read_f32(&t.moveaxis(axis, -1).unwrap().contiguous().unwrap());
        let length = t.dims()[axis as usize];
        for log in [false, true] {
            let got = if log {
                t.log_softmax(axis).unwrap()
            } else {
                t.softmax(axis).unwrap()
            };
            let got = read_f32(&got.moveaxis(axis, -1).unwrap().contiguous().unwrap());
            for (l, row) in values.chunks(length.max(1)).enumerate() {
                let row64: Vec<f64> = row.iter().map(|&x| x as f64).collect();
                let bad = row.iter().any(|x| x.is_nan() || *x == f32::INFINITY)
                    || row.iter().all(|x| *x == f32::NEG_INFINITY);
                let want = if log {
                    log_softmax_ref(&row64)
                } else {
                    softmax_ref(&row64)
                };
                for (i, &g) in got[l * length..(l + 1) * length].iter().enumerate() {
                    let label = format!("{dev} {what} log={log} line {l} element {i}");
                    if bad {
                        assert!(g.is_nan(), "{label}: {g}");
                        continue;
                    }
                    let w = want[i];
                    if w == f64::NEG_INFINITY {
                        assert_eq!(g, f32::NEG_INFINITY, "{label}");
                    } else {
                        let err = (g as f64 - w).abs() / (1.0 + w.abs());
                        assert!(err < 1e-5, "{label}: {g} vs {w}");
                    }
                }
            }
        }
    };
    for dev in devices() {
        // Rows whose length is a multiple of four, from aligned starts, are
        // read and written four elements at a time.
        // Aligned lines of up to 8 quads a lane run a subgroup per line
        // where the adapter has subgroups (256 elements with lavapipe's 8
        // lanes, 1,024 with 32): lengths across its registers' steps.
        for length in [
            1, 2, 4, 32, 36, 68, 127, 128, 129, 252, 256, 260, 1000, 1024, 1028, 4097,
        ] {
            let t = Tensor::randn([3, length], DType::F32, length as u64, &dev)
                .unwrap()
                .mul_scalar(10.0)
                .unwrap();
            check(&dev, &t, 1, &format!("length {length}"));
            check(&dev, &t.t(), 0, &format!("transposed, length {length}"));
        }
        let wide = Tensor::randn([3, 1032], DType::F32, 7, &dev).unwrap();
        for (what, start) in [("aligned", 4), ("unaligned", 1)] {
            let view = wide.slice(s![.., start..start + 1024]).unwrap();
            check(&dev, &view, 1, &format!("{what} rows inside wider ones"));
        }
        // f16, stored natively or packed, against the CPU's f16 softmax.
        let half = wide
            .slice(s![.., ..1024])
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let cpu_half = half.to_device(&Device::cpu()).unwrap();
        assert_close(
            &read_f32(&half.softmax(1).unwrap()),
            &read_f32(&cpu_half.softmax(1).unwrap()),
            1e-3,
            &format!("{dev} f16 softmax"),
        );
        // Lines around a rows-mode workgroup's count (256 over the lanes).
        for lines in [31, 33, 65, 129] {
            let t = Tensor::randn([lines, 64], DType::F32, lines as u64, &dev).unwrap();
            check(&dev, &t, 1, &format!("{lines} lines of 64"));
        }
        let small = wide
            .slice(s![.., ..256])
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        assert_close(
            &read_f32(&small.log_softmax(1).unwrap()),
            &read_f32(
                &small
                    .to_device(&Device::cpu())
                    .unwrap()
                    .log_softmax(1)
                    .unwrap(),
            ),
            1e-3,
            &format!("{dev} f16 log_softmax of 256"),
        );
        // Lines past one workgroup per grid row, and past the kernel's line limit.
        let many = Tensor::randn([70_000, 2], DType::F32, 1, &dev).unwrap();
        check(&dev, &many, 1, "70000 lines");
        let long = Tensor::randn([(1 << 20) + 3], DType::F32, 2, &dev).unwrap();
        check(&dev, &long, 0, "a line past 2^20");
        let inf = f32::INFINITY;
        let special = Tensor::from_slice(
            &[
                1.0,
                f32::NAN,
                2.0,
                3.0, // NaN
                1.0,
                inf,
                2.0,
                3.0, // +inf
                -inf,
                -inf,
                -inf,
                -inf, // only -inf
                -inf,
                0.0,
                -inf,
                1.0, // some -inf
                -1e30,
                1e30,
                0.0,
                -0.0, // far apart
            ],
            [5, 4],
            &dev,
        )
        .unwrap();
        check(&dev, &special, 1, "special values");
    }
}

/// Long lines scan in blocks on a GPU (the blocks side by side, then their
/// running totals): wrapping integer sums and products, bool counts and a
/// transposed view with a tail shorter than a block equal the CPU's
/// sequential scans exactly.
#[test]
fn long_lines_scan_in_blocks_exactly() {
    let cpu = Device::cpu();
    for dev in devices().into_iter().skip(1) {
        for n in [(1 << 16) - 1, 1 << 16, 70_001, 3 * 4096 * 5 + 17] {
            let values: Vec<i32> = (0..n).map(|i| (i % 7) as i32 - 2).collect();
            let host = Tensor::from_vec(values, [n], &cpu).unwrap();
            let odd = host.mul_scalar(2).unwrap().add_scalar(1).unwrap();
            let cases: [(&str, Tensor); 3] = [
                ("i32 cumsum", host.cumsum(0).unwrap()),
                ("i32 cumprod (wrapping)", odd.cumprod(0).unwrap()),
                ("bool count", host.gt_scalar(0).unwrap().cumsum(0).unwrap()),
            ];
            let got = [
                host.to_device(&dev).unwrap().cumsum(0).unwrap(),
                odd.to_device(&dev).unwrap().cumprod(0).unwrap(),
                host.to_device(&dev)
                    .unwrap()
                    .gt_scalar(0)
                    .unwrap()
                    .cumsum(0)
                    .unwrap(),
            ];
            for ((what, want), got) in cases.iter().zip(&got) {
                assert_eq!(
                    got.to_vec::<i32>().unwrap(),
                    want.to_vec::<i32>().unwrap(),
                    "{dev} {what} n={n}"
                );
            }
            // Two long columns of a row-major matrix.
            let cols = host
                .narrow(0, 0, n / 2 * 2)
                .unwrap()
                .reshape([n / 2, 2])
                .unwrap();
            assert_eq!(
                cols.to_device(&dev)
                    .unwrap()
                    .cumsum(0)
                    .unwrap()
                    .to_vec::<i32>()
                    .unwrap(),
                cols.cumsum(0).unwrap().to_vec::<i32>().unwrap(),
                "{dev} columns n={n}"
            );
        }
    }
}

/// A 0-d tensor is one line of one element, as PyTorch takes it
/// (`softmax(tensor(3.), 0)` is 1, `log_softmax` 0, NaN stays NaN); other
/// axes are errors.
#[test]
fn softmax_of_a_scalar_is_one() {
    for dev in devices() {
        let x = Tensor::full([], 3.0, DType::F32, &dev).unwrap();
        let y = x.softmax(0).unwrap();
        assert_eq!((y.dims().len(), read_f32(&y)), (0, vec![1.0]), "{dev}");
        assert_eq!(read_f32(&x.log_softmax(-1).unwrap()), [0.0], "{dev}");
        let nan = Tensor::full([], f64::NAN, DType::F16, &dev).unwrap();
        assert!(read_f32(&nan.softmax(-1).unwrap())[0].is_nan(), "{dev}");
        assert!(matches!(x.softmax(1), Err(Error::Axis { .. })), "{dev}");
    }
}

/// The error of `got` from `want` in ulps of `want` (as f32).
fn ulps_off(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = f64::from(f32::from_bits(w.to_bits() + 1)) - f64::from(w);
    (f64::from(got) - want).abs() / ulp
}

/// Softmax of logits spread over f32's whole range of exp, U(-87, 0) with
/// a 0 in each line (so `x - max` is exact): every element within 6 ulps of
/// the f64 softmax of the same inputs (NumPy float32: 2.7 at most, the CPU
/// 3.7, lavapipe 2.9; a driver whose `/` is `a * (1 / b)` adds one) on every
/// kernel form (a subgroup per line, a workgroup per line read four or one
/// at a time, strided columns). A GPU's built-in `exp` (WGSL allows it 3 +
/// 2|x| ulp) gave 30 ulps here and 14 on the short line.
#[test]
fn softmax_of_logits_spread_over_exps_range_keeps_its_digits() {
    let short = [0.0f32, -85.5, -70.25, -50.125, -30.0625, -17.3, -5.7, -1.1];
    for dev in devices() {
        for (k, (rows, cols, axis)) in [(1, 8, 1), (16, 1024, 1), (3, 1001, 1), (64, 64, 0)]
            .into_iter()
            .enumerate()
        {
            let mut data: Vec<f32> = if k == 0 {
                short.to_vec()
            } else {
                noise(rows * cols, 70 + k as u64)
                    .iter()
                    .map(|x| 43.5 * (x - 1.0))
                    .collect()
            };
            // Line l's maximum, 0, at element l of it.
            let at = |l: usize, i: usize| {
                if axis == 1 {
                    l * cols + i
                } else {
                    i * cols + l
                }
            };
            let (lines, length) = if axis == 1 {
                (rows, cols)
            } else {
                (cols, rows)
            };
            for l in 0..lines {
                data[at(l, l % length)] = 0.0;
            }
            let t = Tensor::from_slice(&data, [rows, cols], &dev).unwrap();
            let got = read_f32(&t.softmax(axis as isize).unwrap());
            for l in 0..lines {
                let line: Vec<f64> = (0..length).map(|i| f64::from(data[at(l, i)])).collect();
                for (i, w) in softmax_ref(&line).into_iter().enumerate() {
                    let g = got[at(l, i)];
                    let off = ulps_off(g, w);
                    assert!(
                        off <= 4.0,
                        "{dev} {rows}x{cols} axis {axis} line {l} element {i}: {g} vs {w}, {off:.1} ulps"
                    );
                }
            }
        }
    }
}

/// A cumsum keeps -0.0 as NumPy's does (`np.cumsum(np.float32([-0., -0.,
/// 1., -1.]))` is `[-0., -0., 1., 0.]`): a line starts at its first
/// element, and on a GPU lines of blocks carry -0.0, the identity of an
/// addition of any sign (0.0 + -0.0 is 0.0).
#[test]
fn cumsum_keeps_minus_zero() {
    for dev in common::devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = Tensor::from_slice(&[-0.0f32, -0.0, 1.0, -1.0], [4], &dev).unwrap();
            let y = read_f32(&x.to_dtype(dtype).unwrap().cumsum(0).unwrap());
            let bits: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
            assert_eq!(
                bits,
                [0x8000_0000, 0x8000_0000, 1f32.to_bits(), 0],
                "{dev} {dtype}"
            );
            let long = Tensor::full([5000], -0.0, dtype, &dev)
                .unwrap()
                .cumsum(0)
                .unwrap();
            assert!(
                read_f32(&long).iter().all(|v| v.to_bits() == 0x8000_0000),
                "{dev} {dtype}"
            );
        }
    }
}

/// f16 and bf16 cumsums accumulate in f32 over lines longer than one pass
/// of the GPU's scan (65,536): each pass restarted from the last output
/// rounded to the dtype, 16,937 of 200,000 random f16 outputs were off.
/// Multiples of 1/64 keep every running sum exact in f32, so each output
/// is that sum rounded once, as the CPU's.
#[test]
fn half_cumsums_past_one_pass_round_once() {
    let n = 140_000;
    let values: Vec<f32> = noise(n, 5)
        .iter()
        .map(|v| (v * 64.0).round() / 64.0)
        .collect();
    let cpu = Device::cpu();
    for dtype in [DType::F16, DType::BF16] {
        let want = read_f32(
            &Tensor::from_slice(&values, [n], &cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .cumsum(0)
                .unwrap(),
        );
        for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
            let x = Tensor::from_slice(&values, [n], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let got = read_f32(&x.cumsum(0).unwrap());
            let first = (0..n).find(|&i| got[i].to_bits() != want[i].to_bits());
            assert_eq!(first, None, "{dev} {dtype}");
        }
    }
}

/// One line of 2^20 whose exponentials (but the first's) are all equal:
/// the CPU summed them in eight running sums of 131,072 elements each,
/// which left softmax 4e-4 off (late additions rounded away; NumPy's
/// pairwise sum is 6e-8 off). The reference is worked out in f64.
#[test]
fn a_long_lines_sum_of_exponentials_keeps_its_digits() {
    let n = 1 << 20;
    let mut x = vec![0.0f32; n];
    x[0] = 3f32.ln();
    let max = x[0] as f64;
    let sum = 1.0 + (n - 1) as f64 * (-max).exp();
    for dev in devices() {
        let t = Tensor::from_slice(&x, [n], &dev).unwrap();
        let p = read_f32(&t.softmax(-1).unwrap());
        let want = (-max).exp() / sum;
        let e = (p[1] as f64 - want).abs() / want;
        assert!(e <= 2e-6, "softmax on {dev}: {} for {want} ({e:.1e})", p[1]);
        let l = read_f32(&t.log_softmax(-1).unwrap());
        let want = -sum.ln();
        let e = (l[0] as f64 - want).abs();
        assert!(
            e <= 1e-5,
            "log_softmax on {dev}: {} for {want} ({e:.1e})",
            l[0]
        );
    }
}

/// A cumprod of 2^20 factors 1 + U(-1e-3, 1e-3), as compounding growth
/// rates are: a GPU multiplied 64-element chunk totals whose tree of
/// products of factors near 1 rounded low on average (0.55 ulp a chunk),
/// which ended the line 1e-3 off (NumPy's running product: 1e-5). The
/// reference is the running product in f64 of the same f32 factors.
#[test]
fn a_long_cumprod_of_factors_near_one_keeps_its_digits() {
    let n = 1 << 20;
    let u = Tensor::rand([n], DType::F32, 7, &Device::cpu()).unwrap();
    let x = u
        .sub_scalar(0.5)
        .unwrap()
        .mul_scalar(2e-3)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    let values = read_f32(&x);
    let mut run = 1.0f64;
    let want: Vec<f64> = values
        .iter()
        .map(|&v| {
            run *= v as f64;
            run
        })
        .collect();
    for dev in devices() {
        let got = read_f32(&x.to_device(&dev).unwrap().cumprod(0).unwrap());
        let worst = got
            .iter()
            .zip(&want)
            .map(|(&g, w)| (g as f64 - w).abs() / w)
            .fold(0f64, f64::max);
        // The CPU 2.6e-5, lavapipe 1.3e-5 (it was 8.9e-4).
        assert!(worst <= 1e-4, "cumprod on {dev}: {worst:.1e}");
    }
}
