//! take, index_select, gather, scatter, scatter_add and masked_fill on every
//! device: hand-worked values (PyTorch's documented examples), strided
//! sources, indices and destinations, packed dtypes, out-of-range indices
//! (an `Err` on the CPU; on the GPU a defined result and an `Err` at the
//! next readback), GPU against the CPU on random data, and bad input.

mod common;

use common::{devices, gpu, noise, own_devices, own_gpu};
use webtensor::{DType, Device, Error, GpuOptions, Tensor, s};

fn ints(values: &[i32], shape: &[usize], dev: &Device) -> Tensor {
    Tensor::from_slice(values, shape, dev).unwrap()
}

fn floats(values: &[f32], shape: &[usize], dev: &Device) -> Tensor {
    Tensor::from_slice(values, shape, dev).unwrap()
}

fn f(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn take_and_index_select_hand_worked() {
    for dev in devices() {
        let t = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        let rows = ints(&[2, 0, -1], &[3], &dev);
        assert_eq!(
            f(&t.index_select(&rows, 0).unwrap()),
            [8., 9., 10., 11., 0., 1., 2., 3., 8., 9., 10., 11.]
        );
        let cols = Tensor::from_slice(&[3u32, 1], [2], &dev).unwrap();
        let picked = t.index_select(&cols, -1).unwrap();
        assert_eq!(picked.dims(), &[3, 2]);
        assert_eq!(f(&picked), [3., 1., 7., 5., 11., 9.]);
        // take with a 2-D index replaces the axis by the index's shape.
        let grid = ints(&[0, 3, 1, 1], &[2, 2], &dev);
        let taken = t.take(&grid, 1).unwrap();
        assert_eq!(taken.dims(), &[3, 2, 2]);
        assert_eq!(f(&taken.slice(s![1]).unwrap()), [4., 7., 5., 5.]);
        // A transposed source and a reversed index view.
        let rev = ints(&[0, 1, 2], &[3], &dev).flip(&[0]).unwrap();
        assert_eq!(
            f(&t.t().index_select(&rev, 1).unwrap()),
            [8., 4., 0., 9., 5., 1., 10., 6., 2., 11., 7., 3.]
        );
        // A 0-d index drops the axis.
        let one = Tensor::full([], 2, DType::I32, &dev).unwrap();
        assert_eq!(f(&t.take(&one, 0).unwrap()), [8., 9., 10., 11.]);
        // Packed dtypes: neighbouring outputs share a word.
        let bytes = Tensor::from_slice(&[1u8, 2, 3, 4, 5], [5], &dev).unwrap();
        let idx = ints(&[4, 4, 0, 2, 1, 3, 0], &[7], &dev);
        assert_eq!(
            bytes.take(&idx, 0).unwrap().to_vec::<u8>().unwrap(),
            [5, 5, 1, 3, 2, 4, 1]
        );
        let bits = Tensor::from_slice(&[true, false], [2], &dev).unwrap();
        assert_eq!(
            bits.take(&ints(&[1, 0, 0, 1, 1], &[5], &dev), 0)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [false, true, true, false, false]
        );
        let halves = bytes.to_dtype(DType::F16).unwrap();
        assert_eq!(
            f(&halves.take(&idx, 0).unwrap().to_dtype(DType::F32).unwrap()),
            [5., 5., 1., 3., 2., 4., 1.]
        );
    }
}

#[test]
fn gather_follows_pytorch() {
    for dev in devices() {
        // torch.gather(t, 1, [[0, 0], [1, 0]]) of [[1, 2], [3, 4]].
        let t = floats(&[1., 2., 3., 4.], &[2, 2], &dev);
        let i = ints(&[0, 0, 1, 0], &[2, 2], &dev);
        assert_eq!(f(&t.gather(&i, 1).unwrap()), [1., 1., 4., 3.]);
        assert_eq!(f(&t.gather(&i, 0).unwrap()), [1., 2., 3., 2.]);
        // An index smaller than the source on the other axis, and longer
        // along the gathered one; a transposed source.
        let m = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
            .unwrap()
            .reshape([4, 3])
            .unwrap();
        let i = ints(&[2, 2, 0, -1, 1, 0], &[2, 3], &dev);
        let g = m.t().gather(&i, 1).unwrap();
        assert_eq!(g.dims(), &[2, 3]);
        // m.t() is [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]].
        assert_eq!(f(&g), [6., 6., 0., 10., 4., 1.]);
        // Integers stay exact.
        let mi = m.to_dtype(DType::I32).unwrap();
        assert_eq!(
            mi.gather(&ints(&[3, 0, 1], &[1, 3], &dev), 0)
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [9, 1, 5]
        );
        // 0-d operands are of one element (PyTorch's): gather(5, 0, 0) is
        // 5 (0-d), gather(5, -1, [0, 0]) [5, 5], gather([1, 2], 0, 1) 2;
        // index_select([1, 2, 3], 0, 2) is [3], index_select(5, 0, [0]) 5.
        let five = Tensor::full([], 5.0, DType::F32, &dev).unwrap();
        let zero = Tensor::full([], 0, DType::I32, &dev).unwrap();
        let g = five.gather(&zero, 0).unwrap();
        assert_eq!((g.dims(), f(&g)), (&[][..], vec![5.]), "{dev}");
        let g = five.gather(&ints(&[0, 0], &[2], &dev), -1).unwrap();
        assert_eq!((g.dims(), f(&g)), (&[2][..], vec![5., 5.]), "{dev}");
        let one = Tensor::full([], 1, DType::I32, &dev).unwrap();
        let g = floats(&[1., 2.], &[2], &dev).gather(&one, 0).unwrap();
        assert_eq!((g.dims(), f(&g)), (&[][..], vec![2.]), "{dev}");
        common::assert_op_err(five.gather(&zero, 1), "gather");
        let two = Tensor::full([], 2, DType::I64, &dev).unwrap();
        let s = floats(&[1., 2., 3.], &[3], &dev)
            .index_select(&two, 0)
            .unwrap();
        assert_eq!((s.dims(), f(&s)), (&[1][..], vec![3.]), "{dev}");
        let s = five.index_select(&ints(&[0], &[1], &dev), 0).unwrap();
        assert_eq!((s.dims(), f(&s)), (&[][..], vec![5.]), "{dev}");
        common::assert_op_err(
            five.index_select(&ints(&[0, 0], &[2], &dev), 0),
            "index_select",
        );
    }
}

#[test]
fn scatter_and_scatter_add_follow_pytorch() {
    for dev in devices() {
        // 0-d operands are of one element (PyTorch's): tensor(1.).scatter(0,
        // tensor(0), tensor(5.)) is tensor(5.); arange(3.).scatter_add(0,
        // tensor(1), tensor(5.)) [0, 6, 2]; in place through a 0-d view.
        let scalar = |v: f32| Tensor::full([], v, DType::F32, &dev).unwrap();
        let index = |i: i64| Tensor::full([], i, DType::I64, &dev).unwrap();
        let s = scalar(1.).scatter(&index(0), &scalar(5.), 0).unwrap();
        assert_eq!((s.dims(), s.to_vec::<f32>().unwrap()), (&[][..], vec![5.]));
        let a = floats(&[0., 1., 2.], &[3], &dev);
        let s = a.scatter_add(&index(1), &scalar(5.), -1).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), [0., 6., 2.], "{dev}");
        let one = a.slice(s![1]).unwrap();
        one.scatter_add_(&index(0), &scalar(2.), 0).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), [0., 3., 2.], "{dev}");
        common::assert_op_err(scalar(1.).scatter(&index(0), &scalar(5.), 1), "scatter");
        // torch.zeros(3, 5).scatter_(0, [[0, 1, 2, 0]], arange(1, 11).reshape(2, 5)).
        let src = Tensor::arange(1.0f32, 11.0, 1.0, &dev)
            .unwrap()
            .reshape([2, 5])
            .unwrap();
        let zeros = Tensor::zeros([3, 5], DType::F32, &dev).unwrap();
        let out = zeros
            .scatter(&ints(&[0, 1, 2, 0], &[1, 4], &dev), &src, 0)
            .unwrap();
        assert_eq!(
            f(&out),
            [1., 0., 0., 4., 0., 0., 2., 0., 0., 0., 0., 0., 3., 0., 0.]
        );
        assert_eq!(f(&zeros), [0.0; 15], "scatter leaves its input alone");
        // torch.zeros(3, 5).scatter_add_(0, [[0,1,2,0,0],[0,1,2,2,2]], ones(2, 5)).
        let ones = Tensor::ones([2, 5], DType::F32, &dev).unwrap();
        let idx = ints(&[0, 1, 2, 0, 0, 0, 1, 2, 2, 2], &[2, 5], &dev);
        assert_eq!(
            f(&zeros.scatter_add(&idx, &ones, 0).unwrap()),
            [2., 0., 0., 1., 1., 0., 2., 0., 0., 0., 0., 0., 2., 1., 1.]
        );
        // Repeated indices: the last write wins; sums accumulate.
        let v = floats(&[5., 6., 7.], &[3], &dev);
        let same = ints(&[1, 1, 1], &[3], &dev);
        let line = Tensor::zeros([3], DType::F32, &dev).unwrap();
        assert_eq!(f(&line.scatter(&same, &v, 0).unwrap()), [0., 7., 0.]);
        assert_eq!(f(&line.scatter_add(&same, &v, -1).unwrap()), [0., 18., 0.]);
        // In place through a column view of a matrix, with negative indices.
        let m = Tensor::zeros([4, 3], DType::F32, &dev).unwrap();
        let col = m.slice(s![.., 1]).unwrap();
        col.scatter_(
            &ints(&[-1, 0], &[2], &dev),
            &floats(&[9., 8.], &[2], &dev),
            0,
        )
        .unwrap();
        col.scatter_add_(&ints(&[3], &[1], &dev), &floats(&[1.], &[1], &dev), 0)
            .unwrap();
        assert_eq!(f(&m), [0., 8., 0., 0., 0., 0., 0., 0., 0., 0., 10., 0.]);
        // Packed u8 wraps; neighbours in one word survive.
        let bytes = Tensor::from_slice(&[250u8, 1, 2, 3], [4], &dev).unwrap();
        let add = Tensor::from_slice(&[10u8, 20, 30], [3], &dev).unwrap();
        bytes
            .scatter_add_(&ints(&[0, 2, 0], &[3], &dev), &add, 0)
            .unwrap();
        assert_eq!(bytes.to_vec::<u8>().unwrap(), [34, 1, 22, 3]);
        // f16 adds in f32 and rounds once per write.
        let h = Tensor::zeros([2], DType::F16, &dev).unwrap();
        let hv = floats(&[0.5, 0.25, 2.0], &[3], &dev)
            .to_dtype(DType::F16)
            .unwrap();
        let hs = h
            .scatter_add(&ints(&[1, 1, 0], &[3], &dev), &hv, 0)
            .unwrap();
        assert_eq!(f(&hs.to_dtype(DType::F32).unwrap()), [2.0, 0.75]);
        // f16 and bf16 sums round once, as PyTorch 2.15's CPU gives them:
        // `zeros(1, dtype=float16).scatter_add(0, zeros(5, dtype=long),
        // tensor([2048., 1, 1, 1, 1], dtype=float16))` is 2052 (an f16
        // rounding per add would stay at 2048), bf16's `[256, 1, 1, 1, 1]`
        // 260, and `full((2,), 0.5).scatter_add(0, tensor([1] * 1000),
        // full((1000,), 0.1))` in f16 is [0.5, 100.5] (105.8125 rounding
        // each add); in place through a transposed view, the same 2052.
        let zero_index = ints(&[0; 5], &[5], &dev);
        for (dtype, big, want) in [(DType::F16, 2048.0, 2052.0), (DType::BF16, 256.0, 260.0)] {
            let z = Tensor::zeros([1], dtype, &dev).unwrap();
            let v = floats(&[big, 1., 1., 1., 1.], &[5], &dev)
                .to_dtype(dtype)
                .unwrap();
            let got = z.scatter_add(&zero_index, &v, 0).unwrap();
            assert_eq!(
                f(&got.to_dtype(DType::F32).unwrap()),
                [want],
                "{dtype} on {dev}"
            );
        }
        let halves = Tensor::full([2], 0.5, DType::F16, &dev).unwrap();
        let tenths = Tensor::full([1000], 0.1, DType::F16, &dev).unwrap();
        let ones = ints(&[1; 1000], &[1000], &dev);
        let got = halves.scatter_add(&ones, &tenths, 0).unwrap();
        assert_eq!(f(&got.to_dtype(DType::F32).unwrap()), [0.5, 100.5], "{dev}");
        let m = Tensor::zeros([3, 2], DType::F16, &dev).unwrap();
        let mt = m.transpose(0, 1).unwrap();
        let v = floats(&[2048., 1., 1., 1., 1.], &[1, 5], &dev)
            .to_dtype(DType::F16)
            .unwrap();
        mt.scatter_add_(&ints(&[2; 5], &[1, 5], &dev), &v, 1)
            .unwrap();
        let want = [0., 0., 0., 0., 2052., 0.];
        assert_eq!(f(&m.to_dtype(DType::F32).unwrap()), want, "{dev}");
    }
}

#[test]
fn masked_fill_writes_where_the_mask_is_set() {
    for dev in devices() {
        let t = Tensor::arange(0.0f32, 6.0, 1.0, &dev)
            .unwrap()
            .reshape([2, 3])
            .unwrap();
        let row = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        assert_eq!(
            f(&t.masked_fill(&row, -1.0).unwrap()),
            [-1., 1., -1., -1., 4., -1.]
        );
        let mask = t.gt_scalar(3.0).unwrap();
        t.t().masked_fill_(&mask.t(), 9.0).unwrap();
        assert_eq!(f(&t), [0., 1., 2., 3., 9., 9.]);
        let b = Tensor::from_slice(&[1u8, 2, 3, 4, 5], [5], &dev).unwrap();
        let m = Tensor::from_slice(&[false, true, false, true, true], [5], &dev).unwrap();
        b.masked_fill_(&m, 0).unwrap();
        assert_eq!(b.to_vec::<u8>().unwrap(), [1, 0, 3, 0, 0]);
        // A mask of more axes broadcasts the tensor too, as PyTorch's
        // (torch.zeros(3).masked_fill(mask [2, 3], 1) is [2, 3]); in place,
        // the mask must fit the tensor.
        let row = Tensor::arange(0.0f32, 3.0, 1.0, &dev).unwrap();
        let grid =
            Tensor::from_slice(&[true, false, true, false, true, false], [2, 3], &dev).unwrap();
        let wide = row.masked_fill(&grid, 9.0).unwrap();
        assert_eq!(wide.dims(), [2, 3]);
        assert_eq!(f(&wide), [9., 1., 9., 0., 9., 2.]);
        assert!(matches!(
            row.masked_fill_(&grid, 9.0),
            Err(Error::Shape {
                op: "masked_fill_",
                ..
            })
        ));
        // NumPy's `a[...] = src` drops a source's leading axes of one.
        row.assign(&Tensor::full([1, 1, 3], 4.0, DType::F32, &dev).unwrap())
            .unwrap();
        assert_eq!(f(&row), [4., 4., 4.]);
        assert!(matches!(
            row.assign(&Tensor::full([2, 3], 4.0, DType::F32, &dev).unwrap()),
            Err(Error::Shape { .. })
        ));
    }
}

/// An index out of range where an axis after the indexed one empties the
/// result is an error, as NumPy's `take` checks it (it was an empty
/// result); only an axis before skips the check, as NumPy's.
#[test]
fn indices_are_checked_where_a_later_axis_empties_the_result() {
    // Devices of its own: the faults it causes are reported at the next
    // readback of the device, whichever test thread makes it.
    for dev in own_devices() {
        for (dims, axis, index) in [
            (vec![2, 0], 0, 5),
            (vec![2, 0], 0, -3),
            (vec![2, 0, 3], 0, 2),
            (vec![3, 2, 0], 1, 7),
            (vec![0, 0], 0, 0),
        ] {
            let x = Tensor::zeros(dims.clone(), DType::F32, &dev).unwrap();
            let i = ints(&[index], &[1], &dev);
            // One at a time: a sync reports the device's first fault.
            type Op = fn(&Tensor, &Tensor, isize) -> webtensor::Result<Tensor>;
            let ops: [(&str, Op); 2] = [
                ("take", Tensor::take),
                ("index_select", Tensor::index_select),
            ];
            for (op, run) in ops {
                let e = run(&x, &i, axis).and_then(|out| {
                    assert_eq!(out.numel(), 0);
                    dev.sync()
                });
                let size = dims[axis as usize];
                assert!(
                    matches!(e, Err(Error::Index { op: got, index: got_index, axis: got_axis, size: got_size })
                        if got == op && got_index == index as isize && got_axis == axis as usize && got_size == size),
                    "{op} of {index} along {axis} of {dims:?} on {dev:?}: {e:?}"
                );
            }
            // In range, it is the empty result.
            if dims[axis as usize] > 0 {
                let ok = x.take(&ints(&[-1], &[1], &dev), axis).unwrap();
                assert_eq!(ok.numel(), 0);
                dev.sync().unwrap();
            }
        }
        // An empty axis before the indexed one: no index is checked.
        let x = Tensor::zeros([0, 2], DType::F32, &dev).unwrap();
        assert_eq!(x.take(&ints(&[5], &[1], &dev), 1).unwrap().dims(), &[0, 1]);
        dev.sync().unwrap();
    }
}

#[test]
fn cpu_rejects_out_of_range_indices() {
    let dev = Device::cpu();
    let t = floats(&[1., 2., 3.], &[3], &dev);
    let bad = ints(&[0, 3], &[2], &dev);
    let e = t.take(&bad, 0).unwrap_err();
    assert_eq!(
        e,
        Error::Index {
            op: "take",
            index: 3,
            axis: 0,
            size: 3
        }
    );
    assert!(e.to_string().contains("take: index 3"), "{e}");
    let low = ints(&[-4], &[1], &dev);
    assert!(matches!(
        t.index_select(&low, 0),
        Err(Error::Index {
            op: "index_select",
            index: -4,
            ..
        })
    ));
    let m = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
    assert!(matches!(
        m.gather(&ints(&[0, 2], &[1, 2], &dev), 1),
        Err(Error::Index {
            op: "gather",
            index: 2,
            axis: 1,
            size: 2
        })
    ));
    // A failed scatter writes nothing, even where its other indices are good.
    let e = m
        .scatter_(
            &ints(&[1, 5], &[1, 2], &dev),
            &floats(&[7., 7.], &[1, 2], &dev),
            0,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Index {
                op: "scatter",
                index: 5,
                axis: 0,
                size: 2
            }
        ),
        "{e}"
    );
    assert_eq!(f(&m), [0.0; 4]);
    let big = Tensor::from_slice(&[3_000_000_000u32], [1], &dev).unwrap();
    assert!(matches!(
        m.scatter_add(&big.unsqueeze(0).unwrap(), &floats(&[1.], &[1, 1], &dev), 1),
        Err(Error::Index {
            op: "scatter_add",
            index: 3_000_000_000,
            ..
        })
    ));
}

#[test]
fn gpu_reports_out_of_range_indices_at_the_next_readback() {
    // A device of its own: the report goes to whichever readback of the
    // device comes next, so tests sharing one would see each other's.
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let t = floats(&[1., 2., 3.], &[3], &dev);
    // The op itself succeeds: its indices are on the device.
    let got = t.take(&ints(&[2, 7, 0], &[3], &dev), 0).unwrap();
    let e = got.to_vec::<f32>().unwrap_err();
    assert_eq!(
        e,
        Error::Index {
            op: "take",
            index: 7,
            axis: 0,
            size: 3
        }
    );
    // Reported once; the bad element reads as 0.
    assert_eq!(f(&got), [3., 0., 1.]);
    // Any readback from the device reports it, and so does sync.
    let m = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
    m.scatter_(
        &ints(&[1, -3], &[1, 2], &dev),
        &floats(&[7., 8.], &[1, 2], &dev),
        0,
    )
    .unwrap();
    let unrelated = floats(&[4.], &[1], &dev);
    assert!(matches!(
        unrelated.to_vec::<f32>(),
        Err(Error::Index {
            op: "scatter",
            index: -3,
            axis: 0,
            size: 2
        })
    ));
    // The bad write was skipped, the good one made.
    assert_eq!(f(&m), [0., 0., 7., 0.]);
    let u = Tensor::from_slice(&[9u32], [1, 1], &dev).unwrap();
    m.gather(&u, 1).unwrap();
    assert!(matches!(
        dev.sync(),
        Err(Error::Index {
            op: "gather",
            index: 9,
            axis: 1,
            size: 2
        })
    ));
    dev.sync().unwrap();
    // Reported by a readback inside another op, it still names the op
    // whose index was out of range (not `to_device`, `masked_select` ...).
    let mask = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
    type Reader<'a> = Box<dyn Fn() -> webtensor::Result<Tensor> + 'a>;
    let readers: [(&str, Reader); 4] = [
        ("to_device", Box::new(|| t.to_device(&Device::cpu()))),
        ("masked_select", Box::new(|| t.masked_select(&mask))),
        ("nonzero", Box::new(|| Ok(t.nonzero()?.remove(0)))),
        ("unique", Box::new(|| t.unique())),
    ];
    for (reader, read) in readers {
        t.take(&ints(&[5], &[1], &dev), 0).unwrap();
        assert_eq!(
            read().unwrap_err(),
            Error::Index {
                op: "take",
                index: 5,
                axis: 0,
                size: 3
            },
            "read by {reader}"
        );
    }
    // Good indices arm the check without tripping it.
    let ok = t.take(&ints(&[-1], &[1], &dev), 0).unwrap();
    assert_eq!(f(&ok), [3.]);
}

/// Random indices in `-n..n` (signed) for `count` positions.
fn random_indices(count: usize, n: usize, seed: u64) -> Vec<i32> {
    noise(count, seed)
        .iter()
        .map(|&x| ((x + 1.0) * n as f32) as i32 % (2 * n as i32) - n as i32)
        .collect()
}

#[test]
fn gpu_matches_cpu_on_random_data() {
    let Some(g) = gpu() else { return };
    let cpu = Device::cpu();
    let data = noise(40 * 30, 3);
    let src_c = Tensor::from_vec(data, [40, 30], &cpu).unwrap();
    let src_g = src_c.to_device(&g).unwrap();
    let idx_c = Tensor::from_vec(random_indices(25 * 30, 40, 5), [25, 30], &cpu).unwrap();
    let idx_g = idx_c.to_device(&g).unwrap();
    // gather and scatter_add down the columns of a transposed view.
    let both = |c: Tensor, g: Tensor| assert_eq!(f(&c), f(&g));
    both(
        src_c.gather(&idx_c, 0).unwrap(),
        src_g.gather(&idx_g, 0).unwrap(),
    );
    let vals_c = Tensor::from_vec(noise(25 * 30, 9), [25, 30], &cpu).unwrap();
    let vals_g = vals_c.to_device(&g).unwrap();
    let sc = src_c.scatter_add(&idx_c, &vals_c, 0).unwrap();
    let sg = src_g.scatter_add(&idx_g, &vals_g, 0).unwrap();
    // The same additions in the same order: bit-identical.
    both(sc, sg);
    let tc = src_c.t().take(&idx_c.slice(s![..3]).unwrap(), 1).unwrap();
    let tg = src_g.t().take(&idx_g.slice(s![..3]).unwrap(), 1).unwrap();
    assert_eq!(tc.dims(), &[30, 3, 30]);
    both(tc, tg);
}

#[test]
fn indexing_rejects_bad_input() {
    let dev = Device::cpu();
    let t = Tensor::zeros([3, 4], DType::F32, &dev).unwrap();
    let fidx = Tensor::zeros([2], DType::F32, &dev).unwrap();
    assert!(matches!(
        t.take(&fidx, 0),
        Err(Error::DType { op: "take", .. })
    ));
    let i2 = ints(&[0, 1], &[1, 2], &dev);
    assert!(matches!(
        t.index_select(&i2, 0),
        Err(Error::Shape {
            op: "index_select",
            ..
        })
    ));
    assert!(matches!(
        t.take(&ints(&[0], &[1], &dev), 2),
        Err(Error::Axis { op: "take", .. })
    ));
    let e = t.gather(&ints(&[0], &[1], &dev), 0).unwrap_err();
    assert!(matches!(e, Error::Shape { op: "gather", .. }), "{e}");
    let wide = Tensor::zeros([1, 5], DType::I32, &dev).unwrap();
    assert!(matches!(
        t.gather(&wide, 0),
        Err(Error::Shape { op: "gather", .. })
    ));
    assert!(t.gather(&wide, 1).is_ok());
    let src = Tensor::zeros([1, 4], DType::F32, &dev).unwrap();
    let e = t.scatter(&wide, &src, 1).unwrap_err();
    assert!(e.to_string().contains("src"), "{e}");
    let isrc = Tensor::zeros([1, 5], DType::I32, &dev).unwrap();
    assert!(matches!(
        t.scatter(&wide, &isrc, 1),
        Err(Error::DType { op: "scatter", .. })
    ));
    let flags = Tensor::zeros([3, 4], DType::Bool, &dev).unwrap();
    let fsrc = Tensor::zeros([1, 5], DType::Bool, &dev).unwrap();
    assert!(matches!(
        flags.scatter_add(&wide, &fsrc, 1),
        Err(Error::DType {
            op: "scatter_add",
            ..
        })
    ));
    let bcast = Tensor::zeros([4], DType::F32, &dev)
        .unwrap()
        .broadcast_to([3, 4])
        .unwrap();
    assert!(matches!(
        bcast.scatter_(&wide, &Tensor::zeros([1, 5], DType::F32, &dev).unwrap(), 1),
        Err(Error::OverlappingWrite { .. })
    ));
    let empty = Tensor::zeros([0, 4], DType::F32, &dev).unwrap();
    assert!(matches!(
        empty.take(&ints(&[0], &[1], &dev), 0),
        Err(Error::Index {
            op: "take",
            size: 0,
            ..
        })
    ));
    assert_eq!(
        empty.take(&ints(&[], &[0], &dev), 0).unwrap().dims(),
        &[0, 4]
    );
    assert!(matches!(
        t.masked_fill(&t, 1.0),
        Err(Error::DType {
            op: "masked_fill",
            ..
        })
    ));
    let short = Tensor::zeros([3], DType::Bool, &dev).unwrap();
    assert!(matches!(
        t.masked_fill(&short, 1.0),
        Err(Error::Shape {
            op: "masked_fill",
            ..
        })
    ));
    // A bool fill is 1 in any dtype, as PyTorch's masked_fill(mask, True).
    let all = flags.logical_not().unwrap();
    let filled = t.masked_fill(&all, true).unwrap();
    assert_eq!(filled.to_vec::<f32>().unwrap(), vec![1.0; 12]);
    if let Some(g) = gpu() {
        let gi = ints(&[0], &[1], &g);
        assert!(matches!(
            t.take(&gi, 0),
            Err(Error::DeviceMismatch { op: "take", .. })
        ));
    }
}
