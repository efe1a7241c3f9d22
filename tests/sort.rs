//! sort / argsort / topk on every device (CPU, GPU with native f16, GPU
//! with packed f16) against a stable reference sort written here: every
//! dtype, views of every layout, both directions, NaN / ±0 / ±inf and
//! repeated values (stability), line lengths across the kernel's
//! boundaries (the 512-element workgroup block, powers of two and one past
//! them) and more lines than one dispatch row holds.

mod common;

use common::{devices, noise, read_f32, views_of};
use std::cmp::Ordering;
use webtensor::{DType, Device, SortOrder, Tensor, TopK, s};

/// NumPy's stable order of one line: NaN last ascending, first descending.
fn reference_order(line: &[f64], dir: SortOrder) -> Vec<i32> {
    let cmp = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap(),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    };
    let mut order: Vec<usize> = (0..line.len()).collect();
    if dir == SortOrder::Descending {
        order.sort_by(|&i, &j| cmp(line[j], line[i]));
    } else {
        order.sort_by(|&i, &j| cmp(line[i], line[j]));
    }
    order.into_iter().map(|i| i as i32).collect()
}

/// Checks argsort and sort of `t` along its last axis, lines of `n`.
fn check_lines(t: &Tensor, dir: SortOrder, what: &str) {
    let n = *t.dims().last().unwrap();
    let host = read_f32(&t.to_dtype(DType::F32).unwrap());
    let order = t.argsort(-1, dir).unwrap().to_vec::<i32>().unwrap();
    let sorted = read_f32(&t.sort(-1, dir).unwrap().to_dtype(DType::F32).unwrap());
    for (l, line) in host.chunks(n.max(1)).enumerate() {
        let line64: Vec<f64> = line.iter().map(|&v| v as f64).collect();
        let want = reference_order(&line64, dir);
        assert_eq!(
            &order[l * n..(l + 1) * n],
            &want[..],
            "{what}: argsort of line {l}"
        );
        for (k, &i) in want.iter().enumerate() {
            let (g, w) = (sorted[l * n + k], line[i as usize]);
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "{what}: sort line {l}[{k}]: {g} vs {w}"
            );
        }
    }
}

#[test]
fn lines_of_every_length_across_the_block() {
    for dev in devices() {
        for n in [
            1usize, 2, 3, 7, 255, 256, 257, 511, 512, 513, 1000, 1024, 1025, 4097,
        ] {
            // Few distinct values, so that ties test the stability.
            let data: Vec<f32> = noise(2 * n, n as u64)
                .iter()
                .map(|v| (v * 8.0).round())
                .collect();
            let t = Tensor::from_vec(data, [2, n], &dev).unwrap();
            for dir in [SortOrder::Ascending, SortOrder::Descending] {
                check_lines(&t, dir, &format!("{dev} n={n} {dir:?}"));
            }
        }
    }
}

#[test]
fn special_values_sort_as_numpy() {
    let v = [
        0.0f32,
        f32::NAN,
        -0.0,
        f32::INFINITY,
        1e-40,
        -1.0,
        f32::NEG_INFINITY,
        f32::NAN,
        -0.0,
        1.0,
        -f32::NAN,
        0.0,
    ];
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let t = Tensor::from_slice(&v, [v.len()], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            for dir in [SortOrder::Ascending, SortOrder::Descending] {
                check_lines(&t, dir, &format!("{dev} {dtype} special {dir:?}"));
            }
        }
        // -0 and +0 come back as they were, in their original order.
        let z = Tensor::from_slice(&[0.0f32, -0.0, 0.0, -0.0], [4], &dev).unwrap();
        let bits: Vec<u32> = z
            .sort(0, SortOrder::Ascending)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(bits, [0, 0x8000_0000, 0, 0x8000_0000], "{dev}");
    }
}

#[test]
fn every_dtype_and_view_along_each_axis() {
    for dev in devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for (view, t) in views_of(&dev, dtype) {
                for axis in [0isize, 1, -1] {
                    for dir in [SortOrder::Ascending, SortOrder::Descending] {
                        let moved = t.moveaxis(axis, -1).unwrap();
                        let want = moved.argsort(-1, dir).unwrap();
                        let got = t.argsort(axis, dir).unwrap().moveaxis(axis, -1).unwrap();
                        assert_eq!(got.to_vec::<i32>().unwrap(), want.to_vec::<i32>().unwrap());
                        check_lines(&moved, dir, &format!("{dev} {dtype} {view} axis {axis}"));
                    }
                }
            }
        }
        let ints: Vec<i32> = noise(60, 3).iter().map(|v| (v * 1e9) as i32).collect();
        let i = Tensor::from_vec(ints, [6, 10], &dev).unwrap();
        for t in [
            i.clone(),
            i.t(),
            i.slice(s![..;-2, 1..;3]).unwrap(),
            i.to_dtype(DType::U32).unwrap(),
            i.to_dtype(DType::U8).unwrap().t(),
            i.gt_scalar(0).unwrap(),
        ] {
            for dir in [SortOrder::Ascending, SortOrder::Descending] {
                let order = t.argsort(-1, dir).unwrap().to_vec::<i32>().unwrap();
                let n = t.dims()[1];
                let host: Vec<f64> = match t.dtype() {
                    DType::I32 => t
                        .to_vec::<i32>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as f64)
                        .collect(),
                    DType::U32 => t
                        .to_vec::<u32>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as f64)
                        .collect(),
                    DType::U8 => t
                        .to_vec::<u8>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as f64)
                        .collect(),
                    _ => t
                        .to_vec::<bool>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as u8 as f64)
                        .collect(),
                };
                for (l, line) in host.chunks(n).enumerate() {
                    assert_eq!(
                        &order[l * n..(l + 1) * n],
                        &reference_order(line, dir)[..],
                        "{dev} {} line {l}",
                        t.dtype()
                    );
                }
                let sorted = t.sort(-1, dir).unwrap();
                assert_eq!(sorted.dtype(), t.dtype());
            }
        }
    }
}

#[test]
fn many_short_lines_and_one_long_line() {
    for dev in devices() {
        // 70,000 lines: more workgroups than one grid row takes.
        let data: Vec<f32> = noise(70_000 * 3, 11)
            .iter()
            .map(|v| (v * 4.0).round())
            .collect();
        let t = Tensor::from_vec(data, [70_000, 3], &dev).unwrap();
        check_lines(&t, SortOrder::Ascending, &format!("{dev} 70000 x 3"));
        check_lines(
            &t.t(),
            SortOrder::Descending,
            &format!("{dev} 3 x 70000 transposed"),
        );
        // One line of 2^17 + 5: global steps, several local finishes.
        let n = (1 << 17) + 5;
        let long = Tensor::from_vec(noise(n, 5), [n], &dev).unwrap();
        check_lines(
            &long,
            SortOrder::Ascending,
            &format!("{dev} one line of {n}"),
        );
    }
}

#[test]
fn topk_picks_the_extremes_in_order() {
    for dev in devices() {
        let t = Tensor::from_slice(&[4.0f32, 9.0, f32::NAN, 9.0, -2.0, 0.5], [2, 3], &dev).unwrap();
        let (v, i) = t.topk(2, 1, TopK::Largest).unwrap();
        let v: Vec<f32> = v.to_vec().unwrap();
        assert!(v[0].is_nan() && v[1] == 9.0, "{dev}: {v:?}");
        assert_eq!(&v[2..], [9.0, 0.5]);
        assert_eq!(i.to_vec::<i32>().unwrap(), [2, 1, 0, 2]);
        let (v, i) = t.topk(1, 0, TopK::Smallest).unwrap();
        assert_eq!(v.dims(), &[1, 3]);
        // The smallest of column 2 is 0.5: NaN counts as the largest.
        assert_eq!(v.to_vec::<f32>().unwrap(), [4.0, -2.0, 0.5]);
        assert_eq!(i.to_vec::<i32>().unwrap(), [0, 1, 1]);
        let (v, i) = t.topk(0, 1, TopK::Largest).unwrap();
        assert_eq!((v.dims(), i.dims()), (&[2usize, 0][..], &[2usize, 0][..]));
        let all = t.topk(3, -1, TopK::Smallest).unwrap().1;
        assert_eq!(
            all.to_vec::<i32>().unwrap(),
            t.argsort(-1, SortOrder::Ascending)
                .unwrap()
                .to_vec::<i32>()
                .unwrap()
        );
        // Ties keep the earlier position first.
        let ties = Tensor::from_slice(&[5i32, 7, 7, 5, 7], [5], &dev).unwrap();
        assert_eq!(
            ties.topk(3, 0, TopK::Largest)
                .unwrap()
                .1
                .to_vec::<i32>()
                .unwrap(),
            [1, 2, 4]
        );
    }
}

#[test]
fn empty_and_bad_input() {
    for dev in devices() {
        let e = Tensor::zeros([0, 4], DType::F32, &dev).unwrap();
        assert_eq!(e.sort(0, SortOrder::Ascending).unwrap().dims(), &[0, 4]);
        assert_eq!(e.argsort(1, SortOrder::Descending).unwrap().dims(), &[0, 4]);
        let t = Tensor::zeros([3], DType::F32, &dev).unwrap();
        let err = t.sort(1, SortOrder::Ascending).unwrap_err().to_string();
        assert!(err.contains("sort"), "{err}");
        let err = t.topk(4, 0, TopK::Largest).unwrap_err().to_string();
        assert!(
            err.contains("topk") && err.contains('4') && err.contains('3'),
            "{err}"
        );
        // A 0-d tensor is one line along axis 0 or -1 (PyTorch's
        // reading), no other axis.
        let scalar = Tensor::zeros([], DType::F32, &dev).unwrap();
        assert!(
            scalar
                .argsort(1, SortOrder::Ascending)
                .unwrap_err()
                .to_string()
                .contains("argsort")
        );
        let z = Tensor::zeros([2], DType::C64, &dev).unwrap();
        assert!(
            z.sort(0, SortOrder::Ascending)
                .unwrap_err()
                .to_string()
                .contains("sort")
        );
    }
    let f = Tensor::from_slice(&[2.0f64, -1.0, 0.5], [3], &Device::cpu()).unwrap();
    assert_eq!(
        f.sort(0, SortOrder::Ascending)
            .unwrap()
            .to_vec::<f64>()
            .unwrap(),
        [-1.0, 0.5, 2.0]
    );
}

#[test]
fn no_lines_of_any_length_sort_at_once() {
    // NumPy sorts (0, 2^30) at once; a GPU refused a line longer than its
    // scratch binding and the CPU asked for one line's 16 GiB of pairs.
    for dev in devices() {
        let long = if dev.is_gpu() { 1 << 25 } else { 1 << 30 };
        for dims in [[0, long], [long, 0]] {
            let x = Tensor::zeros(dims, DType::F32, &dev).unwrap();
            let axis = if dims[0] == 0 { 1 } else { 0 };
            let sorted = x.sort(axis, SortOrder::Ascending).unwrap();
            assert_eq!(sorted.dims(), dims, "{dev}");
            assert_eq!(x.argsort(axis, SortOrder::Descending).unwrap().dims(), dims);
            let (values, indices) = x.topk(0, axis, TopK::Largest).unwrap();
            assert_eq!((values.numel(), indices.numel()), (0, 0), "{dev}");
        }
        let wide = Tensor::zeros([0, long], DType::I64, &dev).unwrap();
        assert_eq!(
            wide.sort(1, SortOrder::Ascending).unwrap().dims(),
            [0, long]
        );
    }
}
