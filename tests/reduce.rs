//! Reductions on every device: hand-worked values, every view layout against
//! an f64 reference, integer and bool dtypes, empty axes, NaN, the split
//! (two-stage) GPU path, errors, and their interplay with the scheduler.

mod common;

use common::{
    assert_close, assert_relative, noise, own_batching_gpu, read_f32, round_to, views_of,
};
use std::sync::OnceLock;
use webtensor::{Axes, DType, Device, Error, GpuOptions, Tensor, s};

/// The CPU and every GPU device present, one splitting as a big GPU does
/// (`gpu_big_grids`: a full reduction into up to 1,024 partials), plus,
/// where the GPU combines a workgroup's results across subgroup lanes, one
/// that combines them in workgroup memory (the path of adapters and
/// browsers without subgroups).
fn devices() -> Vec<Device> {
    static PLAIN: OnceLock<Option<Device>> = OnceLock::new();
    let mut v = common::devices();
    v.extend(common::gpu_big_grids());
    let subgroups = v.iter().any(|d| d.info().subgroups);
    if subgroups {
        v.extend(
            PLAIN
                .get_or_init(|| {
                    common::own_gpu(GpuOptions {
                        subgroups: Some(false),
                        ..Default::default()
                    })
                })
                .clone(),
        );
    }
    v
}

/// Rows long enough for one workgroup per output, with many ties and a
/// NaN: both ways of combining a workgroup's states (subgroup shuffles,
/// workgroup memory) give the CPU's answers.
#[test]
fn subgroup_and_workgroup_memory_combines_agree() {
    let devs = devices();
    let gpus: Vec<&Device> = devs
        .iter()
        .filter(|d| d.info().kind == webtensor::DeviceKind::Gpu)
        .collect();
    if gpus.iter().any(|d| d.info().subgroups) {
        assert!(gpus.iter().any(|d| !d.info().subgroups));
    }
    let (rows, n) = (7, 5000);
    let mut values: Vec<f32> = (0..rows * n).map(|i| ((i * 37) % 97) as f32).collect();
    values[3 * n + 4000] = f32::NAN;
    let want = |dev: &Device| -> Vec<Vec<f32>> {
        let x = Tensor::from_slice(&values, [rows, n], dev).unwrap();
        let ints: Vec<i32> = values
            .iter()
            .map(|&v| if v.is_nan() { 96 } else { v as i32 })
            .collect();
        let xi = Tensor::from_vec(ints, [rows, n], dev).unwrap();
        let f = |t: Tensor| read_f32(&t);
        let i = |t: Tensor| -> Vec<f32> {
            t.to_vec::<i32>()
                .unwrap()
                .into_iter()
                .map(|v| v as f32)
                .collect()
        };
        vec![
            f(x.sum(1).unwrap()),
            f(x.max(1).unwrap()),
            f(x.min(1).unwrap()),
            i(x.argmax(1).unwrap()),
            i(x.argmin(1).unwrap()),
            i(xi.argmax(1).unwrap()),
            i(xi.argmin(1).unwrap()),
            i(xi.sum(1).unwrap()),
        ]
    };
    let cpu = want(&Device::cpu());
    for dev in gpus {
        let got = want(dev);
        for (k, (g, w)) in got.iter().zip(&cpu).enumerate() {
            assert_close(g, w, 1e-6, &format!("{} result {k}", dev.info()));
        }
    }
}

fn grid(dev: &Device) -> Tensor {
    Tensor::arange(0.0f32, 12.0, 1.0, dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap()
}

#[test]
fn hand_worked_values() {
    for dev in devices() {
        let t = grid(&dev);
        let f = |x: Tensor| x.to_vec::<f32>().unwrap();
        assert_eq!(f(t.sum(..).unwrap()), [66.0]);
        assert_eq!(t.sum(..).unwrap().rank(), 0);
        assert_eq!(f(t.sum(0).unwrap()), [12.0, 15.0, 18.0, 21.0]);
        assert_eq!(f(t.sum(-1).unwrap()), [6.0, 22.0, 38.0]);
        assert_eq!(t.sum_keepdim(-1).unwrap().dims(), &[3, 1]);
        assert_eq!(t.sum_keepdim([0, 1]).unwrap().dims(), &[1, 1]);
        assert_eq!(f(t.mean(1).unwrap()), [1.5, 5.5, 9.5]);
        assert_eq!(f(t.max(0).unwrap()), [8.0, 9.0, 10.0, 11.0]);
        assert_eq!(f(t.min(1).unwrap()), [0.0, 4.0, 8.0]);
        assert_eq!(
            f(t.slice(s![.., 1..3]).unwrap().prod(1).unwrap()),
            [2.0, 30.0, 90.0]
        );
        // var of [0, 1, 2, 3] is 1.25 (ddof 0) or 5/3 (ddof 1).
        assert_close(&f(t.var(1, 0).unwrap()), &[1.25; 3], 1e-6, "var");
        assert_close(&f(t.var(1, 1).unwrap()), &[5.0 / 3.0; 3], 1e-6, "var1");
        assert_close(
            &f(t.std(0, 0).unwrap()),
            &[(32.0f32 / 3.0).sqrt(); 4],
            1e-6,
            "std",
        );
        let ties = Tensor::from_slice(&[1.0f32, 3.0, 3.0, 0.0, 0.0, -1.0], [2, 3], &dev).unwrap();
        assert_eq!(ties.argmax(1).unwrap().to_vec::<i32>().unwrap(), [1, 0]);
        assert_eq!(ties.argmin(1).unwrap().to_vec::<i32>().unwrap(), [0, 2]);
        assert_eq!(ties.argmax(..).unwrap().item::<i32>().unwrap(), 1);
        assert_eq!(ties.argmin(..).unwrap().item::<i32>().unwrap(), 5);
        assert_eq!(ties.argmax_keepdim(0).unwrap().dims(), &[1, 3]);
        assert_eq!(ties.argmax(0).unwrap().dtype(), DType::I32);
        let b =
            Tensor::from_slice(&[true, true, false, false, false, false], [3, 2], &dev).unwrap();
        assert_eq!(
            b.all(1).unwrap().to_vec::<bool>().unwrap(),
            [true, false, false]
        );
        assert_eq!(b.any(0).unwrap().to_vec::<bool>().unwrap(), [true, true]);
        assert!(!b.all(..).unwrap().item::<bool>().unwrap());
        assert!(b.any(..).unwrap().item::<bool>().unwrap());
    }
}

/// The f64 reference of `op` over `axes` of row-major [4, 6] `values`.
fn reference(values: &[f64], op: &str, axes: &[usize]) -> Vec<f64> {
    let dims = [4usize, 6];
    let kept: Vec<usize> = (0..2).filter(|k| !axes.contains(k)).collect();
    let outputs: usize = kept.iter().map(|&k| dims[k]).product();
    let mut groups = vec![Vec::new(); outputs];
    for i in 0..4 {
        for j in 0..6 {
            let index = [i, j];
            let o = kept.iter().fold(0, |acc, &k| acc * dims[k] + index[k]);
            groups[o].push(values[i * 6 + j]);
        }
    }
    groups
        .iter()
        .map(|g| {
            let n = g.len() as f64;
            let mean = g.iter().sum::<f64>() / n;
            match op {
                "sum" => g.iter().sum(),
                "mean" => mean,
                "prod" => g.iter().product(),
                "max" => g.iter().copied().fold(f64::MIN, f64::max),
                "min" => g.iter().copied().fold(f64::MAX, f64::min),
                "var" => g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0),
                "argmax" => {
                    g.iter()
                        .enumerate()
                        .fold((0, f64::MIN), |b, (i, &x)| if x > b.1 { (i, x) } else { b })
                        .0 as f64
                }
                "argmin" => {
                    g.iter()
                        .enumerate()
                        .fold((0, f64::MAX), |b, (i, &x)| if x < b.1 { (i, x) } else { b })
                        .0 as f64
                }
                _ => unreachable!(),
            }
        })
        .collect()
}

#[test]
fn every_view_layout_matches_the_reference() {
    let axes_sets: [(Axes, &[usize]); 5] = [
        ((..).into(), &[0, 1]),
        (0.into(), &[0]),
        (1.into(), &[1]),
        ((-1).into(), &[1]),
        ([1, 0].into(), &[0, 1]),
    ];
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let rel = common::half_tol(dtype, 4e-3, 2e-5);
            for (name, view) in views_of(&dev, dtype) {
                let values: Vec<f64> = read_f32(&view).iter().map(|&x| x as f64).collect();
                for (axes, list) in &axes_sets {
                    for op in [
                        "sum", "mean", "prod", "max", "min", "var", "argmax", "argmin",
                    ] {
                        let got = match op {
                            "sum" => view.sum(axes.clone()),
                            "mean" => view.mean(axes.clone()),
                            "prod" => view.prod(axes.clone()),
                            "max" => view.max(axes.clone()),
                            "min" => view.min(axes.clone()),
                            "var" => view.var(axes.clone(), 1),
                            "argmax" if list.len() == 1 || matches!(axes, Axes::All) => {
                                view.argmax(axes.clone())
                            }
                            "argmin" if list.len() == 1 || matches!(axes, Axes::All) => {
                                view.argmin(axes.clone())
                            }
                            _ => continue,
                        }
                        .unwrap();
                        let what = format!("{dev} {dtype} {name} {op} {axes:?}");
                        let want = reference(&values, op, list);
                        if op.starts_with("arg") {
                            // The broadcast view repeats values: ties pick the first.
                            let got: Vec<f64> = got
                                .to_vec::<i32>()
                                .unwrap()
                                .iter()
                                .map(|&i| i as f64)
                                .collect();
                            assert_eq!(got, want, "{what}");
                        } else {
                            assert_eq!(got.dtype(), dtype, "{what}");
                            let want: Vec<f32> = want.iter().map(|&x| round_to(dtype, x)).collect();
                            assert_close(&read_f32(&got), &want, rel, &what);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn integer_and_bool_dtypes() {
    for dev in devices() {
        let i = Tensor::from_slice(&[i32::MAX, 1, -5, 7], [2, 2], &dev).unwrap();
        // Sums wrap, as elementwise integer arithmetic does.
        assert_eq!(i.sum(1).unwrap().to_vec::<i32>().unwrap(), [i32::MIN, 2]);
        assert_eq!(
            i.sum(0).unwrap().to_vec::<i32>().unwrap(),
            [i32::MAX - 5, 8]
        );
        assert_eq!(i.max(..).unwrap().item::<i32>().unwrap(), i32::MAX);
        assert_eq!(i.min(1).unwrap().to_vec::<i32>().unwrap(), [1, -5]);
        assert_eq!(i.prod(1).unwrap().to_vec::<i32>().unwrap(), [i32::MAX, -35]);
        assert_eq!(i.argmin(..).unwrap().item::<i32>().unwrap(), 2);
        assert_close(
            &i.mean(1).unwrap().to_vec::<f32>().unwrap(),
            &[1073741824.0, 1.0],
            1e-6,
            "mean i32",
        );
        let u = Tensor::from_slice(&[200u8, 100, 50, 255], [4], &dev).unwrap();
        let su = u.sum(..).unwrap();
        assert_eq!(su.dtype(), DType::U32);
        assert_eq!(su.item::<u32>().unwrap(), 605);
        assert_eq!(u.max(..).unwrap().item::<u8>().unwrap(), 255);
        assert_eq!(u.argmin(..).unwrap().item::<i32>().unwrap(), 2);
        let w = Tensor::from_slice(&[u32::MAX, 2], [2], &dev).unwrap();
        assert_eq!(w.sum(..).unwrap().item::<u32>().unwrap(), 1);
        let b = Tensor::from_slice(&[true, false, true, true], [4], &dev).unwrap();
        let count = b.sum(..).unwrap();
        assert_eq!(count.dtype(), DType::I32);
        assert_eq!(count.item::<i32>().unwrap(), 3);
        assert!(b.max(..).unwrap().item::<bool>().unwrap());
        assert_eq!(b.argmin(..).unwrap().item::<i32>().unwrap(), 1);
        // all/any on numbers test for non-zero.
        let n = Tensor::from_slice(&[0.0f32, 2.0, 0.5, 0.0], [2, 2], &dev).unwrap();
        assert_eq!(n.any(1).unwrap().to_vec::<bool>().unwrap(), [true, true]);
        assert_eq!(n.all(0).unwrap().to_vec::<bool>().unwrap(), [false, false]);
    }
}

#[test]
fn empty_axes_follow_numpy() {
    for dev in devices() {
        let e = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
        assert_eq!(e.sum(0).unwrap().to_vec::<f32>().unwrap(), [0.0; 3]);
        assert_eq!(e.prod(0).unwrap().to_vec::<f32>().unwrap(), [1.0; 3]);
        assert_eq!(e.sum(..).unwrap().item::<f32>().unwrap(), 0.0);
        assert!(e.mean(0).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
        // No outputs: nothing to reduce, no error.
        assert_eq!(e.max(1).unwrap().dims(), &[0]);
        assert_eq!(e.sum_keepdim(1).unwrap().dims(), &[0, 1]);
        // An empty reduced axis has no maximum, even where the output is
        // empty too (NumPy and PyTorch raise).
        let both = Tensor::zeros([0, 0], DType::F32, &dev).unwrap();
        for r in [
            e.max(0),
            e.min(..),
            e.argmax(0),
            e.argmin(..),
            both.max(1),
            both.argmax(0),
        ] {
            match r {
                Err(Error::Argument { op, msg }) => assert!(msg.contains("empty"), "{op}: {msg}"),
                other => panic!(
                    "expected an error, got {:?}",
                    other.map(|t| t.dims().to_vec())
                ),
            }
        }
        assert!(e.all(..).unwrap().item::<bool>().unwrap());
        assert!(!e.any(..).unwrap().item::<bool>().unwrap());
        // Reducing no axes keeps every element.
        let t = grid(&dev);
        let none: &[isize] = &[];
        assert_eq!(
            t.sum(none).unwrap().to_vec::<f32>().unwrap(),
            t.to_vec::<f32>().unwrap()
        );
    }
}

#[test]
fn nan_propagates_and_wins_argmax() {
    for dev in devices() {
        let t =
            Tensor::from_slice(&[1.0f32, f32::NAN, 5.0, f32::NAN, 2.0, 0.0], [2, 3], &dev).unwrap();
        let m = t.max(1).unwrap().to_vec::<f32>().unwrap();
        assert!(m[0].is_nan() && m[1].is_nan(), "{dev}: {m:?}");
        assert!(t.min(..).unwrap().item::<f32>().unwrap().is_nan());
        assert_eq!(t.argmax(1).unwrap().to_vec::<i32>().unwrap(), [1, 0]);
        assert_eq!(t.argmin(..).unwrap().item::<i32>().unwrap(), 1);
        assert_eq!(t.argmax(0).unwrap().to_vec::<i32>().unwrap(), [1, 0, 0]);
    }
}

/// The f64 sum of `values` and the sum of their magnitudes.
fn exact_sum<'a>(values: impl Iterator<Item = &'a f32>) -> (f64, f64) {
    values.fold((0.0, 0.0), |(s, a), &x| {
        (s + x as f64, a + (x as f64).abs())
    })
}

/// f32 sums in any order are within a few ulps of the magnitude sum of the
/// exact result; a lost or repeated element is off by far more.
fn assert_sums(got: &[f32], want: &[(f64, f64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (&g, &(sum, magnitude))) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - sum).abs();
        assert!(
            err <= 1e-6 * magnitude + 1e-6,
            "{what}: output {k}: got {g}, want {sum}"
        );
    }
}

#[test]
fn long_and_wide_reductions_take_every_gpu_path() {
    // [rows, cols]: thread mode (short rows), group mode, split into
    // partials (few long rows), and a full reduction.
    let shapes = [[3000usize, 10], [100, 1000], [8, 100_000], [1, 1 << 20]];
    for dev in devices() {
        for (k, [rows, cols]) in shapes.into_iter().enumerate() {
            let data = noise(rows * cols, k as u64 + 1);
            // Plant ties for the maximum in the middle and at the end of row 0.
            let mut data = data;
            data[cols / 2] = 3.0;
            data[cols - 1] = 3.0;
            let t = Tensor::from_vec(data.clone(), [rows, cols], &dev).unwrap();
            let row = |i: usize| &data[i * cols..(i + 1) * cols];
            let sums: Vec<(f64, f64)> = (0..rows).map(|i| exact_sum(row(i).iter())).collect();
            let got = t.sum(1).unwrap().to_vec::<f32>().unwrap();
            assert_sums(&got, &sums, &format!("{dev} row sums {rows}x{cols}"));
            let am = t.argmax(1).unwrap().to_vec::<i32>().unwrap();
            assert_eq!(am[0], (cols / 2) as i32, "{dev} argmax {rows}x{cols}");
            let col_sums = t.t().sum(1).unwrap().to_vec::<f32>().unwrap();
            let want: Vec<(f64, f64)> = (0..cols)
                .map(|j| exact_sum((0..rows).map(|i| &data[i * cols + j])))
                .collect();
            assert_sums(
                &col_sums,
                &want,
                &format!("{dev} column sums {rows}x{cols}"),
            );
            let got = t.sum(..).unwrap().item::<f32>().unwrap();
            assert_sums(
                &[got],
                &[exact_sum(data.iter())],
                &format!("{dev} total {rows}x{cols}"),
            );
            assert_eq!(
                t.argmax(..).unwrap().item::<i32>().unwrap(),
                (cols / 2) as i32
            );
        }
    }
}

#[test]
fn reductions_of_reversed_and_stepped_views() {
    for dev in devices() {
        let t = grid(&dev);
        let v = t.slice(s![..;-1, ..;-2]).unwrap(); // [[11, 9], [7, 5], [3, 1]]
        assert_eq!(v.sum(0).unwrap().to_vec::<f32>().unwrap(), [21.0, 15.0]);
        assert_eq!(v.argmax(0).unwrap().to_vec::<i32>().unwrap(), [0, 0]);
        assert_eq!(v.argmin(..).unwrap().item::<i32>().unwrap(), 5);
        assert_eq!(
            v.max_keepdim(1).unwrap().to_vec::<f32>().unwrap(),
            [11.0, 7.0, 3.0]
        );
        // A broadcast view reduces each repeated element.
        let b = t.slice(s![0..1, ..]).unwrap().broadcast_to([5, 4]).unwrap();
        assert_eq!(
            b.sum(0).unwrap().to_vec::<f32>().unwrap(),
            [0.0, 5.0, 10.0, 15.0]
        );
    }
}

#[test]
fn bad_axes_are_errors() {
    for dev in devices() {
        let t = grid(&dev);
        assert!(matches!(t.sum(2), Err(Error::Axis { op: "sum", .. })));
        assert!(matches!(t.max(-3), Err(Error::Axis { .. })));
        // A usize past isize's range is no axis (it wrapped to -1, the last).
        assert!(matches!(
            t.sum(usize::MAX),
            Err(Error::Axis { op: "sum", .. })
        ));
        assert!(matches!(t.argmax([usize::MAX]), Err(Error::Axis { .. })));
        for axes in [vec![usize::MAX], vec![usize::MAX - 1], vec![0, usize::MAX]] {
            assert!(matches!(t.sum(axes), Err(Error::Axis { op: "sum", .. })));
        }
        match t.sum([1, -1]) {
            Err(Error::Argument { op: "sum", msg }) => assert!(msg.contains("repeated"), "{msg}"),
            other => panic!("{:?}", other.map(|t| t.dims().to_vec())),
        }
        assert!(matches!(
            t.argmax([0, 1]),
            Err(Error::Argument { op: "argmax", .. })
        ));
    }
}

/// A 0-d tensor is one line of one element along axis 0 or -1, as PyTorch
/// takes it (torch 2.5.1: `sum(tensor(3.), 0)` is `tensor(3.)`, `var(..., 0)`
/// NaN with one degree of freedom and 0 with none, `argmax` 0, `cumsum` of
/// `tensor(True)` `tensor(1)`, each 0-d, kept dims or not); axis 1 and a
/// repeated axis stay errors, and so does `topk` of 2 (`topk` of 0 is the
/// element, as PyTorch's). c64 sums and means too.
#[test]
fn a_scalar_is_one_line_along_axis_zero_or_minus_one() {
    use webtensor::{SortOrder, TopK};
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = Tensor::full([], 3.0, dtype, &dev).unwrap();
            let value = |r: webtensor::Result<Tensor>, what: &str| {
                let r = r.unwrap_or_else(|e| panic!("{what} {dtype} on {dev}: {e}"));
                assert_eq!(r.rank(), 0, "{what} {dtype} on {dev}");
                read_f32(&r.to_dtype(DType::F32).unwrap())[0]
            };
            for axis in [0isize, -1] {
                assert_eq!(value(x.sum(axis), "sum"), 3.0);
                assert_eq!(value(x.sum_keepdim(axis), "sum_keepdim"), 3.0);
                assert_eq!(value(x.prod([axis]), "prod"), 3.0);
                assert_eq!(value(x.mean_keepdim(axis), "mean"), 3.0);
                assert_eq!(value(x.max(axis), "max"), 3.0);
                assert_eq!(value(x.min_keepdim(axis), "min"), 3.0);
                assert_eq!(value(x.var(axis, 0), "var"), 0.0);
                assert!(value(x.var(axis, 1), "var ddof 1").is_nan());
                assert!(value(x.std(axis, 1), "std").is_nan());
                assert_eq!(value(x.norm(2.0, axis), "norm"), 3.0);
                assert_eq!(value(x.all(axis), "all"), 1.0);
                assert_eq!(value(x.any_keepdim(axis), "any"), 1.0);
                assert_eq!(value(x.argmax(axis), "argmax"), 0.0);
                assert_eq!(value(x.argmin_keepdim(axis), "argmin"), 0.0);
                assert_eq!(value(x.cumsum(axis), "cumsum"), 3.0);
                assert_eq!(value(x.cumprod(axis), "cumprod"), 3.0);
                assert_eq!(value(x.sort(axis, SortOrder::Descending), "sort"), 3.0);
                assert_eq!(value(x.argsort(axis, SortOrder::Ascending), "argsort"), 0.0);
                let (v, i) = x.topk(1, axis, TopK::Largest).unwrap();
                assert_eq!((value(Ok(v), "topk"), value(Ok(i), "topk")), (3.0, 0.0));
                assert!(x.topk(2, axis, TopK::Largest).is_err(), "{dev}");
                // k = 0 too (PyTorch's result keeps the 0-d shape); it was
                // a reshape error.
                let (v, i) = x.topk(0, axis, TopK::Smallest).unwrap();
                assert_eq!((value(Ok(v), "topk 0"), value(Ok(i), "topk 0")), (3.0, 0.0));
            }
            assert!(matches!(x.sum(1), Err(Error::Axis { op: "sum", .. })));
            assert!(matches!(x.cumsum(-2), Err(Error::Axis { .. })));
            assert!(matches!(
                x.sort(1, SortOrder::Ascending),
                Err(Error::Axis { .. })
            ));
            assert!(matches!(x.sum([0, -1]), Err(Error::Axis { .. })));
            assert!(matches!(x.argmax([0, 0]), Err(Error::Argument { .. })));
        }
        // c64 too (its sums resolved axes apart: axis 0 was out of range).
        let z = Tensor::from_complex(&[webtensor::Complex32::new(2.0, -3.0)], [], &dev).unwrap();
        for axis in [0isize, -1] {
            for s in [z.sum(axis).unwrap(), z.mean_keepdim(axis).unwrap()] {
                assert_eq!(s.rank(), 0, "{dev}");
                let v = s.to_complex_vec().unwrap();
                assert_eq!((v[0].re, v[0].im), (2.0, -3.0), "{dev}");
            }
        }
        assert!(matches!(z.sum(1), Err(Error::Axis { op: "sum", .. })));
        let yes = Tensor::from_slice(&[true], [], &dev).unwrap();
        let counted = yes.cumsum(0).unwrap();
        assert_eq!((counted.dtype(), counted.rank()), (DType::I32, 0));
        assert_eq!(counted.to_vec::<i32>().unwrap(), [1]);
        assert_eq!(yes.sum(-1).unwrap().to_vec::<i32>().unwrap(), [1]);
    }
}

#[test]
fn gpu_reductions_batch_and_never_fuse_their_input_away() {
    let Some(dev) = own_batching_gpu() else {
        return;
    };
    let cpu = Device::cpu();
    let data = noise(1 << 16, 9);
    let a = Tensor::from_vec(data.clone(), [256, 256], &dev).unwrap();
    let a_cpu = Tensor::from_vec(data, [256, 256], &cpu).unwrap();
    let before = dev.stats();
    // exp's output is dead once the sum is recorded: it must still be
    // written, because the reduction (not an elementwise op) reads it.
    let run = |x: &Tensor| {
        let e = x.exp().unwrap();
        let s = e.sum(1).unwrap();
        drop(e);
        s.mul_scalar(2.0).unwrap().max(..).unwrap()
    };
    let got = run(&a);
    let mid = dev.stats();
    assert_eq!(mid.submits, before.submits, "recorded, not yet submitted");
    let got = got.item::<f32>().unwrap();
    let want = run(&a_cpu).item::<f32>().unwrap();
    assert_close(&[got], &[want], 1e-5, "exp-sum-max chain");
    assert_eq!(dev.stats().submits, before.submits + 1);
}

#[test]
fn fusion_does_not_move_a_read_past_a_reduction_scratch_write() {
    // `y = a * 2` reads `a`; `a` is dropped, its pooled buffer goes to the
    // scratch partials of a split reduction, which writes it; then `z = y +
    // 1` with `y` dead. Folding `y` into `z` would read `a` after the
    // scratch write.
    let Some(dev) = own_batching_gpu() else {
        return;
    };
    // `a` fills the pool's smallest bucket (256 bytes), as the partials of
    // the split sum do on every adapter (at most 64 splits of 2^18).
    let a_values = noise(64, 3);
    let a = Tensor::from_vec(a_values.clone(), [64], &dev).unwrap();
    let big = Tensor::from_vec(noise(1 << 18, 4), [1 << 18], &dev).unwrap();
    dev.sync().unwrap();
    let y = a.mul_scalar(2.0).unwrap();
    drop(a);
    let reused = dev.stats().buffers_reused;
    let total = big.sum(..).unwrap();
    assert!(
        dev.stats().buffers_reused > reused,
        "the scratch took a pooled buffer"
    );
    let z = y.add_scalar(1.0).unwrap();
    drop(y);
    let want: Vec<f32> = a_values.iter().map(|&x| x * 2.0 + 1.0).collect();
    assert_eq!(z.to_vec::<f32>().unwrap(), want);
    assert!(total.item::<f32>().unwrap().is_finite());
}

#[test]
fn std_all_and_any_read_strided_views() {
    for dev in devices() {
        let t = grid(&dev);
        // Columns 3 and 1, rows reversed: [[11, 9], [7, 5], [3, 1]].
        let v = t.slice(s![..;-1, ..;-2]).unwrap();
        let sd = v.std(0, 0).unwrap().to_vec::<f32>().unwrap();
        assert_close(&sd, &[(32.0f32 / 3.0).sqrt(); 2], 1e-6, "std of a view");
        // Stepped and transposed bool views.
        let b = t.gt_scalar(4.0).unwrap(); // rows: FFFF, FTTT, TTTT
        let bt = b.t(); // [4, 3]
        assert_eq!(
            bt.all(1).unwrap().to_vec::<bool>().unwrap(),
            [false, false, false, false]
        );
        assert_eq!(bt.any(1).unwrap().to_vec::<bool>().unwrap(), [true; 4]);
        let stepped = b.slice(s![1..;1, 1..;2]).unwrap(); // [[T, T], [T, T]]
        assert!(stepped.all(..).unwrap().item::<bool>().unwrap());
        assert!(matches!(b.all(3), Err(Error::Axis { op: "all", .. })));
        assert!(matches!(v.std_keepdim(0, 0).map(|s| s.dims().to_vec()), Ok(d) if d == [1, 2]));
        assert!(matches!(
            v.std([0, 0], 1),
            Err(Error::Argument { op: "std", .. })
        ));
    }
}

/// Reductions across the fast axis (columns of a row-major tensor) take
/// one thread per output and split, long ones in two stages: every op and
/// dtype equals the CPU, argmax keeps the first of tied maxima across the
/// splits, and transposed inputs (the fast axis reduced) agree too.
#[test]
fn column_reductions_split_by_threads_match_the_cpu() {
    let cpu = Device::cpu();
    let Some(gpu) = common::gpu() else { return };
    for (rows, cols) in [(65, 64), (300, 200), (5000, 70), (70_000, 3)] {
        // Small integers, so every order of summation is exact; a tie for
        // the maximum in every column, at rows 1 and rows - 1.
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                if r == 1 || r == rows - 1 {
                    1000.0
                } else {
                    ((r * 7 + c * 3) % 11) as f32 - 5.0
                }
            })
            .collect();
        let host = Tensor::from_vec(values, [rows, cols], &cpu).unwrap();
        let dtypes = [
            DType::F32,
            DType::I32,
            DType::I64,
            DType::F16,
            DType::BF16,
            DType::U8,
            DType::Bool,
        ];
        for dtype in dtypes {
            let x = host.to_dtype(dtype).unwrap();
            let g = x.to_device(&gpu).unwrap();
            for t in [false, true] {
                let (xc, xg, axis) = if t {
                    (x.t(), g.t(), 1)
                } else {
                    (x.clone(), g.clone(), 0)
                };
                let label = format!("{rows}x{cols} {dtype} transposed={t}");
                let same = |a: Tensor, b: Tensor, what: &str| {
                    assert_eq!(read_f32(&a), read_f32(&b), "{label} {what}");
                };
                same(xc.sum(axis).unwrap(), xg.sum(axis).unwrap(), "sum");
                if dtype != DType::Bool {
                    same(
                        xc.max_keepdim(axis).unwrap(),
                        xg.max_keepdim(axis).unwrap(),
                        "max",
                    );
                    same(
                        xc.argmax(axis).unwrap().to_dtype(DType::F32).unwrap(),
                        xg.argmax(axis).unwrap().to_dtype(DType::F32).unwrap(),
                        "argmax",
                    );
                }
            }
        }
    }
}

/// A view of `dims` starting at element `start` of `n` small integers of
/// `dtype` on `dev` (exact sums in any order), 9 at the view's elements
/// `e` (row-major) where `peak(e)` holds, the largest (planted ties).
fn planted(
    dev: &Device,
    dtype: DType,
    start: usize,
    n: usize,
    dims: &[usize],
    peak: impl Fn(usize) -> bool,
) -> Tensor {
    let values: Vec<i32> = (0..n)
        .map(|i| {
            if i >= start && peak(i - start) {
                9
            } else {
                (i * 7 % 5) as i32
            }
        })
        .collect();
    let numel: usize = dims.iter().product();
    Tensor::from_vec(values, [n], dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .slice(s![start..start + numel])
        .unwrap()
        .reshape(dims)
        .unwrap()
}

/// Columns reduced four a thread (one 16-byte entry of each row, in every
/// storage dtype) where the kept run has stride 1, a multiple of four
/// outputs and aligned rows, and one a thread where not: at every start,
/// widths around four, short columns (one stage) and long ones (split),
/// two reduced axes, a reversed or stepped kept axis, and four columns of
/// rows whose length is not a multiple of four, sums, means,
/// extremes and arg extremes (a tie planted in every column) equal the
/// CPU's on every GPU device.
#[test]
fn columns_are_read_four_a_thread_at_every_alignment() {
    let cpu = Device::cpu();
    let run = |dev: &Device, dtype: DType, start: usize, [a, rows, cols]: [usize; 3]| {
        let n = start + a * rows * cols + 5;
        // Small integers (exact sums in any order), largest at rows 1 and
        // rows - 1 of every column (the first wins).
        let x = planted(dev, dtype, start, n, &[a, rows, cols], |e| {
            let r = e / cols % rows;
            r == 1 || r == rows - 1
        });
        let f = |t: Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let views = [
            x.clone(),
            x.flip(&[2]).unwrap(),
            x.slice(s![.., .., ..;2]).unwrap(),
            x.slice(s![.., .., ..cols / 4 * 4]).unwrap(),
        ];
        let mut got = Vec::new();
        for v in &views {
            got.push(f(v.sum(1).unwrap()));
            got.push(f(v.sum([0, 1]).unwrap()));
            got.push(f(v.argmax(1).unwrap()));
            if dtype != DType::Bool {
                got.push(f(v.max(1).unwrap()));
                got.push(f(v.argmin(1).unwrap()));
            }
            if dtype.is_float() {
                got.push(f(v.mean(1).unwrap()));
            }
        }
        got
    };
    let shapes = [
        [1, 70, 4],
        [1, 60, 6],
        [1, 65, 70],
        [2, 65, 8],
        [1, 200, 68],
        [3, 3, 132],
        [1, 66, 130],
        [1, 5000, 64],
    ];
    let gpus: Vec<Device> = devices().into_iter().filter(|d| !d.is_cpu()).collect();
    // The long form takes every dtype at every start and shape; the fast
    // form (which CI runs again with fusion off, where no column reduction
    // changes) one dtype a case in turn: with eight shapes a start, every
    // dtype still meets every start.
    let all = common::STORAGE_DTYPES;
    let mut case = 0;
    for start in [0, 1, 4] {
        for shape in shapes {
            let dtypes = if common::long_tests() {
                &all[..]
            } else {
                std::slice::from_ref(&all[case % all.len()])
            };
            case += 1;
            for &dtype in dtypes {
                // The CPU's answer once, for every GPU device.
                let want = run(&cpu, dtype, start, shape);
                for dev in &gpus {
                    assert_eq!(
                        run(dev, dtype, start, shape),
                        want,
                        "{dev} {dtype} start {start} {shape:?}"
                    );
                }
            }
        }
    }
}

/// Rows of a contiguous run are reduced four elements at a time where each
/// row starts at a multiple of four (in whole 16-byte entries, packed
/// f16, u8 and bool too), and one element at a time where not: at every
/// start and row length around four, in group mode (rows over 64) and split
/// (one long row), sums, extremes and arg extremes (with a planted tie)
/// equal the CPU's, in every dtype.
#[test]
fn rows_read_in_quads_at_every_alignment() {
    let cpu = Device::cpu();
    let run = |dev: &Device, dtype: DType, start: usize, rows: usize, len: usize| {
        let n = start + rows * len + 3;
        // Small integers (exact sums in any order), largest at 1/3 and
        // at 2/3 of each row (a tie: the first wins).
        let x = planted(dev, dtype, start, n, &[rows, len], |e| {
            e % len == len / 3 || e % len == 2 * len / 3
        });
        let f = |t: Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let mut got = vec![
            f(x.sum(1).unwrap()),
            f(x.argmax(1).unwrap()),
            f(x.sum(..).unwrap()),
        ];
        if dtype != DType::Bool {
            got.push(f(x.max(1).unwrap()));
            got.push(f(x.argmin(1).unwrap()));
        }
        got
    };
    let dtypes = common::STORAGE_DTYPES;
    let gpus: Vec<Device> = devices().into_iter().filter(|d| !d.is_cpu()).collect();
    for dtype in dtypes {
        for start in 0..5 {
            for (rows, len) in [(3, 65), (3, 68), (2, 127), (2, 1024), (1, 20003)] {
                // The CPU's answer once, for every GPU device.
                let want = run(&cpu, dtype, start, rows, len);
                for dev in &gpus {
                    assert_eq!(
                        run(dev, dtype, start, rows, len),
                        want,
                        "{dev} {dtype} start {start} {rows} x {len}"
                    );
                }
            }
        }
    }
}

/// var and std sum each element's squared deviation as they read it (one
/// pass after the mean, no tensor of squares) on every GPU path: short rows
/// (a thread per output), long rows (a workgroup each, read in quads and,
/// at an offset of one, not), one long row split into partials, columns
/// and everything; values far from zero (a mean of 100) against an f64
/// reference, and an f16 input.
#[test]
fn variance_takes_every_reduction_path() {
    let reference = |v: &[f32], rows: usize, cols: usize, axis: Option<usize>, ddof: usize| {
        let at = |i: usize, j: usize| v[i * cols + j] as f64;
        let lines: Vec<Vec<f64>> = match axis {
            Some(1) => (0..rows)
                .map(|i| (0..cols).map(|j| at(i, j)).collect())
                .collect(),
            Some(_) => (0..cols)
                .map(|j| (0..rows).map(|i| at(i, j)).collect())
                .collect(),
            None => vec![v.iter().map(|&x| x as f64).collect()],
        };
        lines
            .iter()
            .map(|g| {
                let n = g.len() as f64;
                let mean = g.iter().sum::<f64>() / n;
                let ss: f64 = g.iter().map(|x| (x - mean).powi(2)).sum();
                (ss / (n - ddof as f64)) as f32
            })
            .collect::<Vec<f32>>()
    };
    for dev in devices() {
        for (k, [rows, cols]) in [[300, 10], [5, 1000], [3, 1001], [1, 1 << 18]]
            .into_iter()
            .enumerate()
        {
            let data: Vec<f32> = noise(rows * cols, 40 + k as u64)
                .iter()
                .map(|x| 100.0 + 3.0 * x)
                .collect();
            let t = Tensor::from_vec(data.clone(), [rows, cols], &dev).unwrap();
            let what = |w: &str| format!("{dev} {w} of {rows} x {cols}");
            let f = |t: Tensor| t.to_vec::<f32>().unwrap();
            let rows_var = f(t.var(1, 1).unwrap());
            assert_close(
                &rows_var,
                &reference(&data, rows, cols, Some(1), 1),
                1e-4,
                &what("row var"),
            );
            let cols_var = f(t.var(0, 0).unwrap());
            assert_close(
                &cols_var,
                &reference(&data, rows, cols, Some(0), 0),
                1e-4,
                &what("column var"),
            );
            let all_std = t.std_keepdim(.., 0).unwrap();
            assert_eq!(all_std.dims(), &[1, 1]);
            let want = reference(&data, rows, cols, None, 0)[0].sqrt();
            assert_close(&f(all_std), &[want], 1e-4, &what("std"));
            // Rows at an offset of one: read one element at a time.
            let shifted = t.slice(s![.., 1..]).unwrap();
            let tail: Vec<f32> = (0..rows)
                .flat_map(|i| data[i * cols + 1..(i + 1) * cols].to_vec())
                .collect();
            let got = f(shifted.var(1, 0).unwrap());
            assert_close(
                &got,
                &reference(&tail, rows, cols - 1, Some(1), 0),
                1e-4,
                &what("offset row var"),
            );
            // f16 input: computed in f32, rounded to f16 once.
            let half = t.to_dtype(DType::F16).unwrap();
            let got = f(half.var(1, 1).unwrap().to_dtype(DType::F32).unwrap());
            let rounded: Vec<f32> = half.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = reference(&rounded, rows, cols, Some(1), 1)
                .iter()
                .map(|&v| round_to(DType::F16, v as f64))
                .collect();
            assert_close(&got, &want, 2e-3, &what("f16 row var"));
        }
    }
}

/// Sums and variances of f32 data on a coarse grid (1e4 + N(0, 1): f32's
/// spacing there is 2^-10, so the squared deviations' low bits are those
/// of squares, not uniform) keep NumPy's accuracy on the CPU: within 4
/// ulps of the f64 value, rows, columns and everything (NumPy float32's
/// pairwise sums: 0.04 to 2.8; its column sums add in order). Lanes adding
/// 128 elements in order before the pairwise tree rounded such values the
/// same way each time: 7 to 9 ulps off.
#[test]
fn cpu_sums_of_values_on_a_coarse_grid_keep_numpys_accuracy() {
    let u = noise(1 << 18, 91);
    let v = noise(1 << 18, 92);
    let data: Vec<f32> = u
        .iter()
        .zip(&v)
        .map(|(&a, &b)| {
            let r = (-2.0 * (0.5 + 0.5 * a).max(1e-7).ln()).sqrt();
            1e4 + r * (std::f32::consts::PI * b).cos()
        })
        .collect();
    let ulps = |got: f32, want: f64| {
        let w = want as f32;
        (f64::from(got) - want).abs() / (f64::from(f32::from_bits(w.to_bits() + 1)) - f64::from(w))
    };
    let variance = |line: &[f64]| {
        let mean = line.iter().sum::<f64>() / line.len() as f64;
        line.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / line.len() as f64
    };
    let dev = Device::cpu();
    for (rows, cols) in [
        (1, 1000),
        (1, 1 << 18),
        (1 << 16, 4),
        (4096, 64),
        (64, 4096),
    ] {
        let x = &data[..rows * cols];
        let t = Tensor::from_slice(x, [rows, cols], &dev).unwrap();
        let at = |i: usize, j: usize| f64::from(x[i * cols + j]);
        let row = |i: usize| (0..cols).map(|j| at(i, j)).collect::<Vec<f64>>();
        let column = |j: usize| (0..rows).map(|i| at(i, j)).collect::<Vec<f64>>();
        let what = |w: &str, k: usize| format!("{rows}x{cols} {w} {k}");
        let got = t.var(1, 0).unwrap().to_vec::<f32>().unwrap();
        for (i, &g) in got.iter().enumerate() {
            let off = ulps(g, variance(&row(i)));
            assert!(off <= 4.0, "{}: {off:.1} ulps", what("row var", i));
        }
        let got = t.var(0, 0).unwrap().to_vec::<f32>().unwrap();
        for (j, &g) in got.iter().enumerate() {
            let off = ulps(g, variance(&column(j)));
            assert!(off <= 4.0, "{}: {off:.1} ulps", what("column var", j));
        }
        // The squared deviations themselves, summed along either axis.
        let mean = t.mean(..).unwrap().to_vec::<f32>().unwrap()[0];
        let squares: Vec<f32> = x.iter().map(|&v| (v - mean) * (v - mean)).collect();
        let sq = Tensor::from_slice(&squares, [rows, cols], &dev).unwrap();
        let exact = |k: usize, axis: usize| -> f64 {
            let n = if axis == 0 { rows } else { cols };
            (0..n)
                .map(|i| {
                    f64::from(
                        squares[if axis == 0 {
                            i * cols + k
                        } else {
                            k * cols + i
                        }],
                    )
                })
                .sum()
        };
        for axis in [0, 1] {
            let got = sq.sum(axis as isize).unwrap().to_vec::<f32>().unwrap();
            for (k, &g) in got.iter().enumerate() {
                let off = ulps(g, exact(k, axis));
                assert!(
                    off <= 4.0,
                    "{}: {off:.1} ulps",
                    what(&format!("sum along {axis}"), k)
                );
            }
        }
    }
}

/// The variance of each line of `lines` (i128 values) in f64, from
/// deviations taken exactly in i128: the reference for integer variances.
fn integer_variance(lines: &[Vec<i128>], ddof: usize) -> Vec<f32> {
    lines
        .iter()
        .map(|g| {
            let d: Vec<f64> = g.iter().map(|&x| (x - g[0]) as f64).collect();
            let mean = d.iter().sum::<f64>() / d.len() as f64;
            let ss: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
            (ss / (d.len() - ddof) as f64) as f32
        })
        .collect()
}

/// `values` as rows of `width`, in i128.
fn rows_of<T: Copy + Into<i128>>(values: &[T], width: usize) -> Vec<Vec<i128>> {
    values
        .chunks(width)
        .map(|r| r.iter().map(|&v| v.into()).collect())
        .collect()
}

/// Integers past f32's 2^24 keep their variance: an f32 copy of the Unix
/// times of one minute (in seconds or milliseconds) rounds them onto a few
/// values, and var was 0 for NumPy's 297.9; values spanning a whole i32 or
/// i64 range (a difference from the least that wraps) too. Odd sizes,
/// reversed and transposed views, ddof 0 and 1, std.
#[test]
fn integer_variance_keeps_the_digits_past_f32s_integers() {
    let f = |t: Tensor| t.to_vec::<f32>().unwrap();
    let seconds: Vec<i64> = (0..3 * 257)
        .map(|i| 1_700_000_000 + (i * 7919) % 60)
        .collect();
    let millis: Vec<i64> = seconds.iter().map(|s| s * 1000 + s % 7).collect();
    for dev in devices() {
        let what = |w: &str| format!("{dev}: {w}");
        for (name, values) in [("seconds", &seconds), ("milliseconds", &millis)] {
            let t = Tensor::from_slice(values, [3, 257], &dev).unwrap();
            let rows = rows_of(values, 257);
            let got = f(t.var(1, 1).unwrap());
            assert_relative(&got, &integer_variance(&rows, 1), 1e-5, &what(name));
            // The rows reversed, as columns of the transpose.
            let flipped = t.slice(s![..;-1, ..]).unwrap().t();
            let got = f(flipped.std(0, 0).unwrap());
            let want: Vec<f32> = integer_variance(&rows, 0)
                .iter()
                .rev()
                .map(|v| v.sqrt())
                .collect();
            assert_relative(&got, &want, 1e-5, &what(&format!("{name} std")));
            let narrow: Vec<i32> = values
                .iter()
                .map(|&v| (v % 2_000_000_000) as i32 + 100_000_000)
                .collect();
            let t = Tensor::from_slice(&narrow, [3, 257], &dev).unwrap();
            let rows = rows_of(&narrow, 257);
            assert_relative(
                &f(t.var(1, 0).unwrap()),
                &integer_variance(&rows, 0),
                1e-5,
                &what(&format!("i32 {name}")),
            );
            let wide: Vec<u32> = narrow.iter().map(|&v| v as u32 + 2_000_000_000).collect();
            let t = Tensor::from_slice(&wide, [3, 257], &dev).unwrap();
            assert_relative(
                &f(t.var(1, 0).unwrap()),
                &integer_variance(&rows, 0),
                1e-5,
                &what(&format!("u32 {name}")),
            );
        }
        let ends: Vec<i32> = vec![i32::MIN, i32::MAX, 0, -5, 7, i32::MIN + 3];
        let t = Tensor::from_slice(&ends, [2, 3], &dev).unwrap();
        let columns: Vec<Vec<i128>> = (0..3)
            .map(|j| vec![ends[j].into(), ends[j + 3].into()])
            .collect();
        assert_relative(
            &f(t.var(0, 0).unwrap()),
            &integer_variance(&columns, 0),
            1e-5,
            &what("i32 range"),
        );
        let all = rows_of(&ends, ends.len());
        assert_relative(
            &f(t.var(.., 1).unwrap()),
            &integer_variance(&all, 1),
            1e-5,
            &what("i32 range, all"),
        );
        let ends: Vec<i64> = vec![i64::MIN, i64::MAX, 0, -5, 7, i64::MIN + 3];
        let t = Tensor::from_slice(&ends, [2, 3], &dev).unwrap();
        let rows = rows_of(&ends, 3);
        assert_relative(
            &f(t.var(1, 0).unwrap()),
            &integer_variance(&rows, 0),
            1e-5,
            &what("i64 range"),
        );
    }
}

#[test]
fn reductions_cross_every_boundary_of_their_plans() {
    // Small integers, so every order of summing is exact and a GPU must
    // give the CPU's bits; maxima repeat, so arg ops must find the first.
    // Rows around the rows mode's threshold and its outputs per workgroup
    // (256 over the subgroup's lanes: 129 rows pass it for 8 lanes, 257
    // for the packed device's 4 planned, whose 64 rows a workgroup its
    // subgroups take two each), lengths around the lanes, quads (lines of
    // multiples of four), the four loads in flight and the workgroups;
    // full reductions around the split thresholds and the loop budget's
    // splits.
    let cpu = Device::cpu();
    let rows_list = [1usize, 127, 129, 257];
    let lengths = [63usize, 65, 256, 257, 1025, 4096, 4099];
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for &r in &rows_list {
        for &n in &lengths {
            shapes.push(vec![r, n]);
        }
    }
    for n in [8191usize, 8193, 16387, 524_289] {
        shapes.push(vec![n]);
    }
    let gpus: Vec<Device> = devices().into_iter().filter(|d| !d.is_cpu()).collect();
    for shape in &shapes {
        let n: usize = shape.iter().product();
        let line = *shape.last().unwrap();
        // The pattern, and the pattern with each line's extremes planted
        // twice at positions that move from line to line (so the first of
        // them falls to every thread and every state in flight).
        let pattern: Vec<f32> = (0..n).map(|k| ((k * 7) % 13) as f32 - 6.0).collect();
        let mut planted = pattern.clone();
        for (l, chunk) in planted.chunks_mut(line).enumerate() {
            let p = (l * 37 + 11 + line * 2 / 3) % line;
            for (q, v) in [(p, 100.0), ((p + line / 2) % line, 100.0)] {
                chunk[q] = v;
                chunk[(q + 5) % line] = -v;
            }
        }
        for (data, dtype) in [
            (&pattern, DType::F32),
            (&pattern, DType::F16),
            (&pattern, DType::I32),
            (&planted, DType::F32),
            (&planted, DType::I32),
        ] {
            let run = |d: &Device| -> Vec<Vec<f32>> {
                let x = Tensor::from_slice(data, shape.clone(), d)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap();
                let as_f32 = |t: Tensor| read_f32(&t.to_dtype(DType::F32).unwrap());
                vec![
                    as_f32(x.sum(-1).unwrap()),
                    as_f32(x.max(-1).unwrap()),
                    as_f32(x.min(-1).unwrap()),
                    as_f32(x.argmax(-1).unwrap()),
                    as_f32(x.argmin(-1).unwrap()),
                ]
            };
            let want = run(&cpu);
            for dev in &gpus {
                for (k, (g, w)) in run(dev).iter().zip(&want).enumerate() {
                    assert_close(g, w, 0.0, &format!("{dev} {shape:?} {dtype} result {k}"));
                }
            }
        }
    }
}

/// Per-channel means of channels-last images (squeeze-excite's pooling),
/// channel counts on both sides of the CPU's blocks of 64 outputs held in
/// registers, in f32, f16 and bf16, of the dense image, a channel slice
/// (an offset, channels side by side) and the slice's channels reversed,
/// against an f64 loop over the rounded inputs. On the CPU the reversed
/// channels (a stride of -1, the general loop) give the slice's means bit
/// for bit: the blocks fold each output's pixels in the same order.
#[test]
fn channels_last_means_over_pixels_match_the_reference() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for c in [3usize, 64, 65, 130] {
                let (n, h, w) = (2, 5, 7);
                let data: Vec<f32> = noise(n * (c + 2) * h * w, c as u64)
                    .iter()
                    .map(|&x| round_to(dtype, x as f64))
                    .collect();
                let image = Tensor::from_vec(data.clone(), [n, c + 2, h, w], &dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
                    .to_channels_last()
                    .unwrap();
                let slice = image.slice(s![.., 1..c + 1]).unwrap();
                let flipped = slice.flip(&[1]).unwrap();
                type Channel = Box<dyn Fn(usize) -> usize>;
                let views: [(&str, &Tensor, usize, Channel); 3] = [
                    ("dense", &image, c + 2, Box::new(|k| k)),
                    ("slice", &slice, c, Box::new(|k| k + 1)),
                    ("flipped", &flipped, c, Box::new(move |k| c - k)),
                ];
                let mut means = Vec::new();
                for (what, view, channels, channel) in views {
                    let got = read_f32(&view.mean_keepdim([2, 3]).unwrap());
                    let want: Vec<f32> = (0..n * channels)
                        .map(|k| {
                            let (b, ch) = (k / channels, channel(k % channels));
                            let plane = &data[(b * (c + 2) + ch) * h * w..][..h * w];
                            let mean =
                                plane.iter().map(|&x| x as f64).sum::<f64>() / (h * w) as f64;
                            round_to(dtype, mean)
                        })
                        .collect();
                    let rel = if dtype == DType::F32 { 1e-5 } else { 1e-2 };
                    let what = format!("{dev} {dtype:?} {c} channels, {what}");
                    assert_close(&got, &want, rel, &what);
                    means.push(got);
                }
                if dev.is_cpu() {
                    let reversed: Vec<f32> = means[2]
                        .chunks(c)
                        .flat_map(|image| image.iter().rev().copied())
                        .collect();
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&means[1]), bits(&reversed), "{dtype:?} {c} channels");
                }
            }
        }
    }
}

/// Sums, products and means of f16 and bf16 over views cut into parts (a
/// device whose bindings hold 64 KiB: 32768 halves a part) accumulate in
/// f32 as over one part, and round once: the mean of 2^20 ones is 1 (its
/// parts' totals, rounded to f16, were infinite), blocks of +60000 and
/// -60000 sum to 0 (not inf - inf), and the CPU's answers are the GPU's.
#[test]
fn half_reductions_in_parts_accumulate_in_f32() {
    let Some(gpu) = common::own_gpu(GpuOptions {
        max_binding_bytes: Some(1 << 16),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let block = |v: f32| vec![v; 1 << 15];
    let signed: Vec<f32> = [
        block(60000.0),
        block(60000.0),
        block(-60000.0),
        block(-60000.0),
    ]
    .concat();
    for dtype in [DType::F16, DType::BF16] {
        let cases: [(&str, Vec<f32>); 3] = [
            ("ones", vec![1.0; (1 << 20) + 4096]),
            ("signed blocks", signed.clone()),
            ("noise", noise((1 << 17) + 8, 7)),
        ];
        for (name, values) in &cases {
            let n = values.len();
            let on = |dev: &Device| {
                Tensor::from_vec(values.clone(), [n], dev)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            };
            let (x, y) = (on(&cpu), on(&gpu));
            let read = |t: Tensor| read_f32(&t.to_dtype(DType::F32).unwrap());
            for (op, want, got) in [
                ("mean", x.mean(..).unwrap(), y.mean(..).unwrap()),
                ("sum", x.sum(..).unwrap(), y.sum(..).unwrap()),
                (
                    "mean of rows",
                    x.reshape([n / 8, 8]).unwrap().mean(0).unwrap(),
                    y.reshape([n / 8, 8]).unwrap().mean(0).unwrap(),
                ),
            ] {
                let (want, got) = (read(want), read(got));
                let what = format!("{op} of {name} in {dtype}");
                match *name {
                    // Summed in another order, rounded once into the half:
                    // within two of its ulps of each value (the means are
                    // near 1e-3, where an absolute tolerance passed zeros).
                    "noise" => {
                        let rel = if dtype == DType::F16 {
                            2.0 / 2048.0
                        } else {
                            2.0 / 256.0
                        };
                        for (g, w) in got.iter().zip(&want) {
                            let ok = (g - w).abs() <= rel * w.abs();
                            assert!(ok && *w != 0.0, "{what}: got {g}, want {w}");
                        }
                    }
                    _ => assert_eq!(got, want, "{what}"),
                }
                assert!(
                    got.iter().all(|v| v.is_finite()) || op == "sum",
                    "{op} of {name}"
                );
            }
        }
        let ones = Tensor::ones([1 << 20], dtype, &gpu).unwrap();
        assert_eq!(
            read_f32(&ones.mean(..).unwrap().to_dtype(DType::F32).unwrap()),
            [1.0]
        );
    }
}

/// Column sums on the CPU (outputs side by side in memory, swept across
/// the rows) combine blocks of rows pairwise, as one output's sum does:
/// a million rows of 0.1 sum to 1e5 within f32's log-length error, as on
/// a GPU (each row added in turn, the sum was 100958, 1% off), and the
/// variance of a constant column is 0 to the same order.
#[test]
fn column_sums_on_the_cpu_grow_their_error_with_the_log_of_the_rows() {
    let cpu = Device::cpu();
    for (rows, cols) in [(1_000_000, 2), (300_000, 70)] {
        let x = Tensor::full([rows, cols], 0.1, DType::F32, &cpu).unwrap();
        let want = rows as f32 * 0.1;
        for got in read_f32(&x.sum(0).unwrap()) {
            assert!((got - want).abs() <= 5e-5 * want, "{rows} x {cols}: {got}");
        }
        for got in read_f32(&x.mean(0).unwrap()) {
            assert!((got - 0.1).abs() <= 1e-6, "{rows} x {cols}: mean {got}");
        }
        for got in read_f32(&x.var(0, 0).unwrap()) {
            assert!(got.abs() <= 1e-12, "{rows} x {cols}: var {got}");
        }
        if let Some(gpu) = common::gpu() {
            let g = read_f32(&x.to_device(&gpu).unwrap().sum(0).unwrap());
            assert_close(&g, &read_f32(&x.sum(0).unwrap()), 5e-5, "GPU against CPU");
        }
    }
}

/// `std` of f16 and bf16 takes the root of the f32 variance and rounds
/// once, as PyTorch does: `torch.tensor(x, dtype=torch.float16)
/// .std(correction=0)` is 1.9375 here, where rounding the variance to f16
/// first gives 1.9365 (NumPy's `np.std`, which rounds twice). On every
/// device, every row of a random batch equals the f32 root rounded once.
#[test]
fn half_std_rounds_once() {
    let x = [
        -2.125f32,
        -4.617_187_5,
        2.355_468_8,
        -1.315_429_7,
        -1.786_132_8,
        -0.623_046_9,
        0.887_207_03,
        -1.009_765_6,
    ];
    let rows: Vec<f32> = noise(512 * 8, 7).iter().map(|v| v * 3.0).collect();
    for dev in devices() {
        let t = Tensor::from_slice(&x, [8], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        assert_eq!(read_f32(&t.std(.., 0).unwrap()), [1.9375], "{dev}");
        for dtype in [DType::F16, DType::BF16] {
            let t = Tensor::from_slice(&rows, [512, 8], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            // Each row's deviation on the host in f64 over the rounded
            // values, rounded once to the dtype (not the library's own
            // f32 std, which the op is built from).
            let held = read_f32(&t);
            let exact: Vec<f32> = held
                .chunks(8)
                .map(|row| {
                    let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / 8.0;
                    let var = row
                        .iter()
                        .map(|&v| (f64::from(v) - mean).powi(2))
                        .sum::<f64>()
                        / 8.0;
                    common::round_to(dtype, var.sqrt())
                })
                .collect();
            assert_eq!(read_f32(&t.std(1, 0).unwrap()), exact, "{dev} {dtype}");
        }
    }
}

/// `argmax`/`argmin` order subnormals by value, as `max`/`min` do: the GPU
/// compares floats by their order keys (bits), so a GPU that flushes
/// subnormals (NVIDIA's driver does) still tells them apart. NumPy 2.4 and
/// PyTorch 2.15 (bf16): argmax 2, argmin 4. (lavapipe keeps subnormals, so
/// there this holds before the change too.)
#[test]
fn arg_reductions_order_subnormals() {
    let values = [0.0f32, 1e-40, 2e-40, 1e-40, -1e-40, -0.0];
    for dev in common::devices() {
        for dtype in [DType::F32, DType::BF16] {
            let x = Tensor::from_slice(&values, [6], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let arg = |t: Tensor| t.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap();
            assert_eq!(arg(x.argmax(0).unwrap()), [2], "{dev} {dtype}");
            assert_eq!(arg(x.argmin(0).unwrap()), [4], "{dev} {dtype}");
        }
    }
}

/// Integers over a large offset (a million and 0 to 9, each exact in
/// f32): a mean summed in f32 is off by several of its ulps there, and a
/// variance that sums squared deviations from it without correcting for
/// that (rather than the corrected two-pass sum) was off by up to 70% on
/// the CPU and 0.6% on a GPU. Every reduction path: short and long rows,
/// columns (a thread per output), one row split into partials, a
/// strided view; against the exact variance (f64 sums of small integers).
#[test]
fn variance_of_integers_over_a_large_offset_is_exact_to_rounding() {
    let digit = |i: usize| ((i * 7 + i / 13) % 10) as f64;
    for dev in devices() {
        for [rows, cols] in [[64, 4096], [4096, 64], [1, 1 << 18], [3, 65537]] {
            let data: Vec<f32> = (0..rows * cols).map(|i| 1e6 + digit(i) as f32).collect();
            let t = Tensor::from_vec(data, [rows, cols], &dev).unwrap();
            let exact = |line: &[f64], ddof: usize| {
                let n = line.len() as f64;
                let mean = line.iter().sum::<f64>() / n;
                let ss: f64 = line.iter().map(|x| (x - mean).powi(2)).sum();
                (ss / (n - ddof as f64)) as f32
            };
            let row = |i: usize| (0..cols).map(|j| digit(i * cols + j)).collect::<Vec<_>>();
            let col = |j: usize| (0..rows).map(|i| digit(i * cols + j)).collect::<Vec<_>>();
            let what = |w: &str| format!("{dev} {w} of {rows} x {cols}");
            let rows_want: Vec<f32> = (0..rows).map(|i| exact(&row(i), 1)).collect();
            let got = t.var(1, 1).unwrap().to_vec::<f32>().unwrap();
            assert_close(&got, &rows_want, 1e-4, &what("row var"));
            let cols_want: Vec<f32> = (0..cols).map(|j| exact(&col(j), 0)).collect();
            let got = t.var(0, 0).unwrap().to_vec::<f32>().unwrap();
            assert_close(&got, &cols_want, 1e-4, &what("column var"));
            let all: Vec<f64> = (0..rows * cols).map(digit).collect();
            let got = t.std(.., 0).unwrap().item::<f32>().unwrap();
            assert_close(&[got], &[exact(&all, 0).sqrt()], 1e-4, &what("std"));
            // Every other row, reversed: a strided view.
            let view = t.slice(s![..;2, ..;-1]).unwrap();
            let want: Vec<f32> = (0..rows).step_by(2).map(|i| exact(&row(i), 0)).collect();
            let got = view.var(1, 0).unwrap().to_vec::<f32>().unwrap();
            assert_close(&got, &want, 1e-4, &what("strided row var"));
        }
        // Constant lines: zero, never negative.
        let t = Tensor::full([3, 1000], 1e6 + 0.5, DType::F32, &dev).unwrap();
        for v in t.var(1, 0).unwrap().to_vec::<f32>().unwrap() {
            assert_eq!(v.to_bits(), 0, "{dev} constant line's var {v}");
        }
        // Columns of 1000 over 3e7 (f32's grid there is 2): the CPU summed
        // each in order, its mean 110 standard deviations off and its
        // variance 1e-3 (against the f32 values' exact one).
        let data: Vec<f32> = (0..1000 * 8).map(|i| 3e7 + digit(i) as f32).collect();
        let want: Vec<f32> = (0..8)
            .map(|j| {
                let col: Vec<f64> = (0..1000).map(|i| data[i * 8 + j] as f64 - 3e7).collect();
                let mean = col.iter().sum::<f64>() / 1000.0;
                (col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 1000.0) as f32
            })
            .collect();
        let t = Tensor::from_vec(data, [1000, 8], &dev).unwrap();
        let got = t.var(0, 0).unwrap().to_vec::<f32>().unwrap();
        assert_close(&got, &want, 1e-4, &format!("{dev} column var over 3e7"));
        // Deviations whose sum squared passes f32's range though their
        // squares' sum need not (1e24 and a few of its ulps, 2^56): the
        // correction overflowed first and the variance came out 0. Where
        // the mean is far enough off that the squares overflow too, inf.
        for n in [512, 1024] {
            let data: Vec<f32> = (0..n)
                .map(|i| 1e24 + digit(i) as f32 * 2f32.powi(56))
                .collect();
            let exact = {
                let v: Vec<f64> = data.iter().map(|&x| x as f64).collect();
                let mean = v.iter().sum::<f64>() / n as f64;
                (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64) as f32
            };
            let t = Tensor::from_vec(data, [n], &dev).unwrap();
            let got = t.var(.., 0).unwrap().item::<f32>().unwrap();
            if got != f32::INFINITY {
                assert_relative(
                    &[got],
                    &[exact],
                    1e-3,
                    &format!("{dev} var of {n} over 1e24"),
                );
            }
        }
        // Squares past f32's range: inf, as NumPy's f32 (the corrected
        // sum's inf - inf was NaN); a constant line's deviations are 0
        // where its mean is exact, else they overflow too.
        for (values, zero) in [([1e30f32; 3], true), ([1e30, 3e30, 1e30], false)] {
            let t = Tensor::from_slice(&values, [3], &dev).unwrap();
            let got = t.var(.., 0).unwrap().item::<f32>().unwrap();
            let ok = got == f32::INFINITY || zero && got == 0.0;
            assert!(ok, "{dev} var of {values:?}: {got}");
        }
    }
}

/// Integer means come from the exact sum: casting each element to f32
/// first made the mean of `[-2^31, 2^31 - 1]` 0 rather than -0.5 (found
/// probing against NumPy). The reference is the exact mean (an i128 sum)
/// rounded through f64, within an f32 ulp.
#[test]
fn integer_means_keep_their_low_digits() {
    let exact =
        |v: &[i64]| (v.iter().map(|&x| i128::from(x)).sum::<i128>() as f64 / v.len() as f64) as f32;
    let i64s = [
        -1i64,
        0,
        1,
        1 << 32,
        -(1 << 32),
        (1 << 32) - 1,
        -(1 << 32) - 1,
        (1 << 40) + 7,
        -(1 << 40) + 3,
    ];
    // Nanosecond times: their sum is past 2^63, their differences not.
    let times: Vec<i64> = (0..64)
        .map(|k| 1_700_000_000_000_000_000 + k * 999_999_937)
        .collect();
    for dev in devices() {
        let wide = Tensor::from_slice(&[i32::MIN, i32::MAX], [2], &dev).unwrap();
        assert_eq!(wide.mean(..).unwrap().item::<f32>().unwrap(), -0.5, "{dev}");
        // Means between -1 and 0: the parts of one sign.
        let mut small = vec![0i64; 1000];
        small[17] = -1;
        for v in [
            &i64s[..],
            &times[..],
            &small[..],
            &[0, 0, -1][..],
            &[-7, 2][..],
        ] {
            let t = Tensor::from_slice(v, [v.len()], &dev).unwrap();
            let got = t.mean(..).unwrap().item::<f32>().unwrap();
            let want = exact(v);
            // An ulp of the exact mean.
            assert!(
                (got - want).abs() <= want.abs() * 1.2e-7,
                "{got} vs {want} on {dev}"
            );
        }
        // Along axes, kept or not, over u8 and bool views.
        let bytes: Vec<u8> = (0..60).map(|k| (k * 37 % 256) as u8).collect();
        let u = Tensor::from_slice(&bytes, [3, 4, 5], &dev)
            .unwrap()
            .flip(&[1])
            .unwrap();
        let want = u
            .to_dtype(DType::F32)
            .unwrap()
            .mean_keepdim([0, 2])
            .unwrap();
        let got = u.mean_keepdim([0, 2]).unwrap();
        assert_eq!(got.dims(), &[1, 4, 1]);
        assert_close(
            &read_f32(&got),
            &read_f32(&want),
            2.4e-7,
            &format!("u8 on {dev}"),
        );
        let b = u.gt_scalar(100).unwrap();
        let got = b.mean(1).unwrap();
        let want = b.to_dtype(DType::F32).unwrap().mean(1).unwrap();
        assert_close(
            &read_f32(&got),
            &read_f32(&want),
            2.4e-7,
            &format!("bool on {dev}"),
        );
    }
}
