//! Joins, splits and axis moves on every device: hand-worked values, inputs
//! of differing layouts, packed dtypes, the rank-limit fallbacks of tile and
//! repeat, and errors.

mod common;

use common::{devices, gpu};
use webtensor::{DType, Device, Error, Tensor, s};

fn range(n: usize, shape: &[usize], dev: &Device) -> Tensor {
    Tensor::arange(0.0f32, n as f32, 1.0, dev)
        .unwrap()
        .reshape(shape)
        .unwrap()
}

fn f(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn concat_joins_views_of_differing_layouts() {
    for dev in devices() {
        let a = range(6, &[2, 3], &dev);
        // [[10, 12, 14], [11, 13, 15]]: a transposed view.
        let b = range(6, &[3, 2], &dev).add_scalar(10.0).unwrap().t();
        // [[25, 24, 23]]: a reversed, offset row.
        let c = range(6, &[2, 3], &dev)
            .add_scalar(20.0)
            .unwrap()
            .slice(s![1..2, ..;-1])
            .unwrap();
        let rows = Tensor::concat(&[&a, &b, &c], 0).unwrap();
        assert_eq!(rows.dims(), &[5, 3]);
        assert_eq!(
            f(&rows),
            [
                0., 1., 2., 3., 4., 5., 10., 12., 14., 11., 13., 15., 25., 24., 23.
            ]
        );
        let cols = Tensor::concat(&[&a, &b], -1).unwrap();
        assert_eq!(cols.dims(), &[2, 6]);
        assert_eq!(
            f(&cols),
            [0., 1., 2., 10., 12., 14., 3., 4., 5., 11., 13., 15.]
        );
        // An empty input contributes nothing; a single input is copied.
        let empty = Tensor::zeros([2, 0], DType::F32, &dev).unwrap();
        assert_eq!(f(&Tensor::concat(&[&empty, &a, &empty], 1).unwrap()), f(&a));
        let copy = Tensor::concat(&[&b], 0).unwrap();
        assert!(!copy.shares_storage(&b) && copy.is_contiguous());
        assert_eq!(f(&copy), f(&b));
    }
}

#[test]
fn concat_of_packed_dtypes_keeps_neighbours() {
    // Odd extents put elements of different inputs in one u32 word of the
    // packed f16/u8/bool storage.
    for dev in devices() {
        let a = Tensor::from_slice(&[1u8, 2, 3], [3, 1], &dev).unwrap();
        let b = Tensor::from_slice(&[4u8, 5, 6, 7, 8, 9], [3, 2], &dev).unwrap();
        let j = Tensor::concat(&[&a, &b], 1).unwrap();
        assert_eq!(j.to_vec::<u8>().unwrap(), [1, 4, 5, 2, 6, 7, 3, 8, 9]);
        let h = Tensor::concat(
            &[
                &a.to_dtype(DType::F16).unwrap(),
                &b.to_dtype(DType::F16).unwrap(),
            ],
            1,
        )
        .unwrap();
        assert_eq!(
            h.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
            [1., 4., 5., 2., 6., 7., 3., 8., 9.]
        );
        let t = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        let u = Tensor::from_slice(&[false, true], [2], &dev).unwrap();
        assert_eq!(
            Tensor::concat(&[&t, &u, &t], 0)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [true, false, true, false, true, true, false, true]
        );
    }
}

#[test]
fn stack_adds_an_axis() {
    for dev in devices() {
        let a = range(6, &[2, 3], &dev);
        // -a in column-major storage.
        let b = a.mul_scalar(-1.0).unwrap().t().contiguous().unwrap().t();
        let s0 = Tensor::stack(&[&a, &b], 0).unwrap();
        assert_eq!(s0.dims(), &[2, 2, 3]);
        assert_eq!(
            f(&s0),
            [0., 1., 2., 3., 4., 5., -0., -1., -2., -3., -4., -5.]
        );
        let s1 = Tensor::stack(&[&a, &b], 1).unwrap();
        assert_eq!(s1.dims(), &[2, 2, 3]);
        assert_eq!(
            f(&s1),
            [0., 1., 2., -0., -1., -2., 3., 4., 5., -3., -4., -5.]
        );
        let last = Tensor::stack(&[&a, &b], -1).unwrap();
        assert_eq!(last.dims(), &[2, 3, 2]);
        assert_eq!(
            f(&last),
            [0., -0., 1., -1., 2., -2., 3., -3., 4., -4., 5., -5.]
        );
        let scalars: Vec<Tensor> = (0..3)
            .map(|_| Tensor::full([], 1.5, DType::F32, &dev).unwrap())
            .collect();
        let refs: Vec<&Tensor> = scalars.iter().collect();
        assert_eq!(f(&Tensor::stack(&refs, 0).unwrap()), [1.5; 3]);
    }
}

#[test]
fn split_chunk_and_narrow_are_views() {
    for dev in devices() {
        let t = range(20, &[4, 5], &dev);
        let parts = t.split(&[2, 0, 3], 1).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].dims(), &[4, 2]);
        assert_eq!(parts[1].dims(), &[4, 0]);
        assert_eq!(f(&parts[2].slice(s![0]).unwrap()), [2., 3., 4.]);
        assert!(parts.iter().all(|p| p.shares_storage(&t)));
        // Writing through a piece changes the parent.
        parts[2].slice(s![1..;2]).unwrap().fill_(-1.0).unwrap();
        assert_eq!(f(&t.slice(s![1]).unwrap()), [5., 6., -1., -1., -1.]);
        assert_eq!(f(&t.slice(s![2]).unwrap()), [10., 11., 12., 13., 14.]);

        let sizes = |v: Vec<Tensor>| v.iter().map(|c| c.dims()[0]).collect::<Vec<_>>();
        let r = range(7, &[7], &dev);
        assert_eq!(sizes(r.chunk(3, 0).unwrap()), [3, 3, 1]);
        assert_eq!(sizes(r.chunk(7, 0).unwrap()), [1; 7]);
        assert_eq!(sizes(r.chunk(10, 0).unwrap()), [1; 7]);
        assert_eq!(sizes(range(4, &[4], &dev).chunk(3, 0).unwrap()), [2, 2]);
        assert_eq!(sizes(range(0, &[0], &dev).chunk(3, 0).unwrap()), [0, 0, 0]);
        assert_eq!(f(&r.chunk(3, -1).unwrap()[2]), [6.]);
        // Pieces of a reversed view follow the view's order.
        let rev = r.flip(&[0]).unwrap();
        assert_eq!(f(&rev.chunk(2, 0).unwrap()[1]), [2., 1., 0.]);
        assert_eq!(f(&rev.narrow(0, 1, 3).unwrap()), [5., 4., 3.]);
        assert_eq!(rev.narrow(0, 7, 0).unwrap().numel(), 0);
        // More pieces than the host can list: an error, not an abort (an
        // empty axis into 2^40 pieces; a broadcast axis of 2^40 into as
        // many).
        let empty = range(0, &[0], &dev);
        assert!(matches!(
            empty.chunk(1 << 40, 0),
            Err(Error::OutOfMemory { op: "chunk", .. })
        ));
        let wide = range(1, &[1], &dev).broadcast_to([1usize << 40]).unwrap();
        assert!(matches!(
            wide.chunk(1 << 40, 0),
            Err(Error::OutOfMemory { op: "chunk", .. })
        ));
    }
}

#[test]
fn moveaxis_and_rollaxis_match_numpy() {
    let dev = Device::cpu();
    let a = Tensor::zeros([3, 4, 5, 6], DType::F32, &dev).unwrap();
    let dims = |t: Tensor| t.dims().to_vec();
    assert_eq!(dims(a.moveaxis(0, -1).unwrap()), [4, 5, 6, 3]);
    assert_eq!(dims(a.moveaxis(-1, 0).unwrap()), [6, 3, 4, 5]);
    assert_eq!(dims(a.moveaxis(1, 2).unwrap()), [3, 5, 4, 6]);
    // NumPy's rollaxis docs: shapes for a of shape (3, 4, 5, 6).
    assert_eq!(dims(a.rollaxis(3, 1).unwrap()), [3, 6, 4, 5]);
    assert_eq!(dims(a.rollaxis(2, 0).unwrap()), [5, 3, 4, 6]);
    assert_eq!(dims(a.rollaxis(1, 4).unwrap()), [3, 5, 6, 4]);
    assert_eq!(dims(a.rollaxis(1, 2).unwrap()), [3, 4, 5, 6]);
    assert!(matches!(
        a.moveaxis(4, 0),
        Err(Error::Axis { op: "moveaxis", .. })
    ));
    assert!(matches!(
        a.rollaxis(0, 5),
        Err(Error::Axis { op: "rollaxis", .. })
    ));
    for dev in devices() {
        let t = range(24, &[2, 3, 4], &dev);
        let m = t.moveaxis(2, 0).unwrap();
        assert!(m.shares_storage(&t));
        assert_eq!(
            f(&m.contiguous().unwrap()),
            f(&t.permute(&[2, 0, 1]).unwrap().contiguous().unwrap())
        );
    }
}

/// Row-major values of `t` tiled by `reps` (same rank), by index arithmetic.
fn tiled(values: &[f32], dims: &[usize], reps: &[usize]) -> Vec<f32> {
    let out: Vec<usize> = dims.iter().zip(reps).map(|(d, r)| d * r).collect();
    let n: usize = out.iter().product();
    (0..n)
        .map(|mut i| {
            let mut src = 0;
            let mut scale = 1;
            for k in (0..dims.len()).rev() {
                let c = i % out[k];
                i /= out[k];
                src += (c % dims[k]) * scale;
                scale *= dims[k];
            }
            values[src]
        })
        .collect()
}

#[test]
fn tile_repeats_whole_tensors() {
    for dev in devices() {
        let v = range(3, &[3], &dev);
        assert_eq!(f(&v.tile(&[2]).unwrap()), [0., 1., 2., 0., 1., 2.]);
        let m = range(4, &[2, 2], &dev);
        let t = m.tile(&[2, 3]).unwrap();
        assert_eq!(t.dims(), &[4, 6]);
        assert_eq!(f(&t), tiled(&[0., 1., 2., 3.], &[2, 2], &[2, 3]));
        // Fewer reps than axes pads with 1s; more adds leading axes.
        assert_eq!(f(&m.tile(&[2]).unwrap()), [0., 1., 0., 1., 2., 3., 2., 3.]);
        let up = v.tile(&[2, 1, 2]).unwrap();
        assert_eq!(up.dims(), &[2, 1, 6]);
        assert_eq!(f(&up), [0., 1., 2., 0., 1., 2., 0., 1., 2., 0., 1., 2.]);
        // A transposed input, and zero repetitions.
        assert_eq!(
            f(&m.t().tile(&[1, 2]).unwrap()),
            [0., 2., 0., 2., 1., 3., 1., 3.]
        );
        assert_eq!(m.tile(&[0, 2]).unwrap().dims(), &[0, 4]);
        // Rank 6 with every axis tiled needs 12 axes as one view: the
        // one-axis-at-a-time path.
        let dims = [2, 1, 3, 2, 1, 2];
        let reps = [2, 3, 1, 2, 2, 3];
        let big = range(24, &dims, &dev).flip(&[0, 2]).unwrap();
        let values = f(&big.contiguous().unwrap());
        let got = big.tile(&reps).unwrap();
        assert_eq!(got.dims(), &[4, 3, 3, 4, 2, 6]);
        assert_eq!(f(&got), tiled(&values, &dims, &reps));
    }
}

#[test]
fn repeat_repeats_each_element() {
    for dev in devices() {
        let m = range(4, &[2, 2], &dev);
        assert_eq!(
            f(&m.repeat(2, 0).unwrap()),
            [0., 1., 0., 1., 2., 3., 2., 3.]
        );
        assert_eq!(
            f(&m.repeat(2, -1).unwrap()),
            [0., 0., 1., 1., 2., 2., 3., 3.]
        );
        assert_eq!(
            f(&m.t().repeat(3, 1).unwrap()),
            [0., 0., 0., 2., 2., 2., 1., 1., 1., 3., 3., 3.]
        );
        assert_eq!(m.repeat(0, 1).unwrap().dims(), &[2, 0]);
        let bits = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        assert_eq!(
            bits.repeat(3, 0).unwrap().to_vec::<bool>().unwrap(),
            [true, true, true, false, false, false, true, true, true]
        );
        // Rank 8 leaves no room for the inserted axis: the 4-d block path.
        let full = range(16, &[2, 1, 2, 1, 1, 2, 1, 2], &dev)
            .slice(s![..;-1])
            .unwrap();
        let got = full.repeat(2, 5).unwrap();
        assert_eq!(got.dims(), &[2, 1, 2, 1, 1, 4, 1, 2]);
        let src = f(&full.contiguous().unwrap());
        let want: Vec<f32> = (0..32)
            .map(|i| {
                // Output index split around axis 5 (extent 4 = 2 * 2 repeats).
                let (outer, rest) = (i / 8, i % 8);
                let (a5, inner) = (rest / 2, rest % 2);
                src[outer * 4 + (a5 / 2) * 2 + inner]
            })
            .collect();
        assert_eq!(f(&got), want);
    }
}

#[test]
fn joins_reject_bad_input() {
    let dev = Device::cpu();
    let a = range(6, &[2, 3], &dev);
    let b = range(4, &[2, 2], &dev);
    assert!(matches!(
        Tensor::concat(&[], 0),
        Err(Error::Argument { op: "concat", .. })
    ));
    let e = Tensor::concat(&[&a, &b], 0).unwrap_err();
    assert!(
        e.to_string().contains("[2, 2]") && e.to_string().contains("concat"),
        "{e}"
    );
    assert!(Tensor::concat(&[&a, &b], 1).is_ok());
    assert!(matches!(
        Tensor::concat(&[&a, &a], 2),
        Err(Error::Axis { op: "concat", .. })
    ));
    assert!(matches!(
        Tensor::concat(&[&a, &a.unsqueeze(0).unwrap()], 0),
        Err(Error::Shape { op: "concat", .. })
    ));
    let scalar = Tensor::full([], 1.0, DType::F32, &dev).unwrap();
    assert!(matches!(
        Tensor::concat(&[&scalar], 0),
        Err(Error::Shape { .. })
    ));
    // Mixed dtypes promote.
    let ints = a.to_dtype(DType::I32).unwrap();
    assert_eq!(Tensor::concat(&[&a, &ints], 0).unwrap().dtype(), DType::F32);
    // i32 with u32 is i64; c64 with f64 has no common dtype.
    let unsigned = a.to_dtype(DType::U32).unwrap();
    let wide = Tensor::concat(&[&ints, &unsigned], 0).unwrap();
    assert_eq!(wide.dtype(), DType::I64);
    let cpu = Device::cpu();
    let doubles = Tensor::zeros([2, 3], DType::F64, &cpu).unwrap();
    let waves = Tensor::zeros([2, 3], DType::C64, &cpu).unwrap();
    let e = Tensor::concat(&[&waves, &doubles], 0).unwrap_err();
    assert!(matches!(e, Error::DType { op: "concat", .. }), "{e}");
    assert!(matches!(
        Tensor::stack(&[&a, &b], 0),
        Err(Error::Shape { op: "stack", .. })
    ));
    assert!(matches!(
        Tensor::stack(&[&a, &a], 3),
        Err(Error::Axis { op: "stack", .. })
    ));
    assert!(matches!(
        a.split(&[1, 1], 1),
        Err(Error::Shape { op: "split", .. })
    ));
    assert!(matches!(
        a.chunk(0, 0),
        Err(Error::Argument { op: "chunk", .. })
    ));
    assert!(matches!(
        a.narrow(1, 2, 2),
        Err(Error::Index {
            op: "narrow",
            size: 3,
            ..
        })
    ));
    assert!(matches!(
        scalar.repeat(2, 0),
        Err(Error::Shape { op: "repeat", .. })
    ));
    assert!(matches!(
        a.tile(&[1; 9]),
        Err(Error::Shape { op: "tile", .. })
    ));
    if let Some(gpu) = gpu() {
        let g = a.to_device(&gpu).unwrap();
        assert!(matches!(
            Tensor::concat(&[&a, &g], 0),
            Err(Error::DeviceMismatch { op: "concat", .. })
        ));
    }
}
