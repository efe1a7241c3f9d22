//! Zero-copy views, in-place ops through them, creation, readback, devices
//! and errors, on every device.

mod common;

use common::devices;
use webtensor::{DType, Device, Error, NewAxis, Tensor, s};

fn grid(dev: &Device) -> Tensor {
    Tensor::arange(0i32, 12, 1, dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap()
}

#[test]
fn views_share_storage_and_compose() {
    for dev in devices() {
        let t = grid(&dev);
        let v = t.slice(s![1.., ..;-2]).unwrap();
        assert!(v.shares_storage(&t));
        assert_eq!(v.dims(), &[2, 2]);
        assert_eq!(v.strides(), &[4, -2]);
        assert_eq!(v.to_vec::<i32>().unwrap(), [7, 5, 11, 9]);
        // NumPy's negative ends, written as Rust ranges (and clippy-clean).
        let inner = t.slice(s![1..-1, 1..-1]).unwrap();
        assert_eq!(inner.to_vec::<i32>().unwrap(), [5, 6]);
        // A view of a view of a view.
        let w = v.t().slice(s![NewAxis, -1, ..]).unwrap();
        assert_eq!(w.dims(), &[1, 2]);
        assert_eq!(w.to_vec::<i32>().unwrap(), [5, 9]);
        // Writing through the innermost view is seen by the parent.
        w.fill_(-1).unwrap();
        assert_eq!(
            t.to_vec::<i32>().unwrap(),
            [0, 1, 2, 3, 4, -1, 6, 7, 8, -1, 10, 11],
            "{dev}"
        );
        // And writing the parent is seen by the view.
        t.add_scalar_(100).unwrap();
        assert_eq!(w.to_vec::<i32>().unwrap(), [99, 99]);
    }
}

#[test]
fn view_ops_match_numpy() {
    for dev in devices() {
        let t = grid(&dev);
        assert_eq!(
            t.permute(&[1, 0]).unwrap().to_vec::<i32>().unwrap(),
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        );
        assert_eq!(t.transpose(0, -1).unwrap().dims(), &[4, 3]);
        assert_eq!(
            t.flip(&[0]).unwrap().to_vec::<i32>().unwrap(),
            [8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3]
        );
        let b = t
            .slice(s![.., 1])
            .unwrap()
            .unsqueeze(1)
            .unwrap()
            .broadcast_to([3, 2])
            .unwrap();
        assert_eq!(b.strides(), &[4, 0]);
        assert_eq!(b.to_vec::<i32>().unwrap(), [1, 1, 5, 5, 9, 9]);
        assert_eq!(t.unsqueeze(0).unwrap().squeeze().dims(), &[3, 4]);
        assert_eq!(
            t.slice(s![..1]).unwrap().squeeze_axis(0).unwrap().dims(),
            &[4]
        );
        assert_eq!(t.slice(s![.., 5..]).unwrap().numel(), 0, "empty slice");
        // Reshape: a view when strides allow, a copy otherwise (as NumPy).
        let r = t.slice(s![..2]).unwrap().reshape([4, 2]).unwrap();
        assert!(r.shares_storage(&t));
        let c = t.t().reshape([12]).unwrap();
        assert!(!c.shares_storage(&t));
        assert_eq!(
            c.to_vec::<i32>().unwrap(),
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        );
        assert!(t.t().contiguous().unwrap().is_contiguous());
    }
}

#[test]
fn in_place_ops_write_through_stepped_and_transposed_views() {
    for dev in devices() {
        let t = Tensor::zeros([4, 4], DType::F32, &dev).unwrap();
        let ones = Tensor::ones([2], DType::F32, &dev).unwrap();
        t.slice(s![..;2, 1..;2]).unwrap().add_(&ones).unwrap();
        t.t().slice(s![0]).unwrap().sub_scalar_(5.0).unwrap();
        t.slice(s![3, ..;-1])
            .unwrap()
            .assign(&Tensor::arange(0.0f32, 4.0, 1.0, &dev).unwrap())
            .unwrap();
        t.slice(s![1..3, 2]).unwrap().exp_().unwrap();
        assert_eq!(
            t.to_vec::<f32>().unwrap(),
            [
                -5.0, 1.0, 0.0, 1.0, -5.0, 0.0, 1.0, 0.0, -5.0, 1.0, 1.0, 1.0, 3.0, 2.0, 1.0, 0.0
            ],
            "{dev}"
        );
        // u8 and bool are packed on the GPU: neighbours must survive.
        let u = Tensor::zeros([9], DType::U8, &dev).unwrap();
        u.slice(s![1..;3]).unwrap().fill_(200u8).unwrap();
        u.slice(s![..;-4]).unwrap().add_scalar_(7u8).unwrap();
        assert_eq!(
            u.to_vec::<u8>().unwrap(),
            [7, 200, 0, 0, 207, 0, 0, 200, 7],
            "{dev}"
        );
        let m = Tensor::zeros([2, 3], DType::Bool, &dev).unwrap();
        m.t().slice(s![1]).unwrap().fill_(true).unwrap();
        assert_eq!(
            m.to_vec::<bool>().unwrap(),
            [false, true, false, false, true, false],
            "{dev}"
        );
    }
}

#[test]
fn overlapping_input_gives_numpy_result() {
    for dev in devices() {
        // a[1:] += a[:-1] reads the original values in NumPy.
        let a = Tensor::arange(0.0f32, 5.0, 1.0, &dev).unwrap();
        a.slice(s![1..])
            .unwrap()
            .add_(&a.slice(s![..-1]).unwrap())
            .unwrap();
        assert_eq!(
            a.to_vec::<f32>().unwrap(),
            [0.0, 1.0, 3.0, 5.0, 7.0],
            "{dev}"
        );
        // m += m.T
        let m = Tensor::arange(0i32, 4, 1, &dev)
            .unwrap()
            .reshape([2, 2])
            .unwrap();
        m.add_(&m.t()).unwrap();
        assert_eq!(m.to_vec::<i32>().unwrap(), [0, 3, 3, 6], "{dev}");
        // x = x[::-1]
        let x = Tensor::arange(0i32, 5, 1, &dev).unwrap();
        x.assign(&x.flip(&[0]).unwrap()).unwrap();
        assert_eq!(x.to_vec::<i32>().unwrap(), [4, 3, 2, 1, 0], "{dev}");
    }
}

/// Ops that return copies return them in their edge cases too (a roll by
/// the axis's length, a pad of nothing, a diagonal of one element, shifts
/// of axes of one, an adaptive pool or resize to the input's own size):
/// writing through the result leaves the input alone, as NumPy's and
/// PyTorch's copies do.
#[test]
fn copies_in_their_edge_cases_are_copies() {
    use webtensor::{PadMode, Resize};
    for dev in devices() {
        let fresh = || Tensor::arange(0.0f32, 4.0, 1.0, &dev).unwrap();
        let image = || fresh().reshape([1, 1, 2, 2]).unwrap();
        type Op = Box<dyn Fn(&Tensor) -> webtensor::Result<Tensor>>;
        let ops: Vec<(&str, bool, Op)> = vec![
            ("roll", false, Box::new(|x| x.roll(4, 0))),
            ("roll 0", false, Box::new(|x| x.roll(0, 0))),
            (
                "pad edge",
                false,
                Box::new(|x| x.pad(&[(0, 0)], PadMode::Edge)),
            ),
            ("pad wrap", false, Box::new(|x| x.pad(&[], PadMode::Wrap))),
            ("diag", true, Box::new(|x| x.reshape([2, 2])?.diag(1))),
            ("fftshift", true, Box::new(|x| x.fftshift([0, 1]))),
            (
                "ifftshift",
                true,
                Box::new(|x| x.ifftshift(Vec::<isize>::new())),
            ),
            (
                "adaptive_avg_pool2d",
                true,
                Box::new(|x| x.adaptive_avg_pool2d(2)),
            ),
            (
                "resize nearest",
                true,
                Box::new(|x| x.resize([2, 2], Resize::Nearest)),
            ),
            (
                "resize antialias",
                true,
                Box::new(|x| x.resize([2, 2], Resize::BilinearAntialias)),
            ),
        ];
        for (name, is_image, op) in &ops {
            let x = if *is_image { image() } else { fresh() };
            let before = x.to_vec::<f32>().unwrap();
            let y = op(&x).unwrap();
            y.fill_(-7.0).unwrap();
            assert_eq!(x.to_vec::<f32>().unwrap(), before, "{name} on {dev}");
        }
    }
}

#[test]
fn creation_and_readback() {
    for dev in devices() {
        assert_eq!(
            Tensor::eye(3, DType::I32, &dev)
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [1, 0, 0, 0, 1, 0, 0, 0, 1]
        );
        assert_eq!(
            Tensor::full([2], 2.5, DType::F32, &dev)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [2.5, 2.5]
        );
        assert_eq!(
            Tensor::ones([2], DType::Bool, &dev)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [true, true]
        );
        assert!(matches!(
            Tensor::arange(0.0f32, 1.0, 0.0, &dev),
            Err(Error::Argument { op: "arange", .. })
        ));
        assert_eq!(
            Tensor::arange(1.0f32, 0.0, -0.25, &dev)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [1.0, 0.75, 0.5, 0.25]
        );
        assert_eq!(
            Tensor::from_slice(&[9u32], (), &dev)
                .unwrap()
                .item::<u32>()
                .unwrap(),
            9
        );
        let r = Tensor::rand([1000], DType::F32, 3, &dev)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(r.iter().all(|&v| (0.0..1.0).contains(&v)));
        let same = Tensor::rand([1000], DType::F32, 3, &Device::cpu())
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(r, same, "a seed gives the same values on every device");
        let n = Tensor::randn([10000], DType::F32, 1, &dev)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let mean = n.iter().sum::<f32>() / n.len() as f32;
        assert!(mean.abs() < 0.05, "randn mean {mean}");
        // Moving between devices both ways keeps the values of a view.
        let v = grid(&dev).slice(s![..;-1, 1..3]).unwrap();
        let there = v.to_device(&Device::cpu()).unwrap();
        let back = there.to_device(&dev).unwrap();
        assert_eq!(back.to_vec::<i32>().unwrap(), [9, 10, 5, 6, 1, 2]);
        assert_eq!(back.device(), &dev);
    }
}

#[test]
fn display_is_numpy_like() {
    let t = Tensor::from_slice(&[1.0f32, 2.5, -3.0, 4.0], [2, 2], &Device::cpu()).unwrap();
    assert_eq!(t.to_string(), "[[ 1.   2.5]\n [-3.   4. ]]");
    let b = Tensor::from_slice(&[true, false], [2], &Device::cpu()).unwrap();
    assert_eq!(b.to_string(), "[ True False]");
    let big = Tensor::zeros([2000], DType::I32, &Device::cpu()).unwrap();
    assert_eq!(big.to_string(), "[0 0 0 ... 0 0 0]");
}

#[test]
fn bad_input_is_an_error_naming_op_and_values() {
    for dev in devices() {
        let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
        let b = Tensor::zeros([4], DType::F32, &dev).unwrap();
        let msg = |e: Error| e.to_string();
        assert_eq!(
            msg(a.add(&b).unwrap_err()),
            "add: cannot broadcast shapes [2, 3] and [4]"
        );
        assert!(matches!(
            a.transpose(0, 2),
            Err(Error::Axis {
                axis: 2,
                rank: 2,
                ..
            })
        ));
        assert!(matches!(
            a.slice(s![5]),
            Err(Error::Index {
                index: 5,
                size: 2,
                ..
            })
        ));
        assert!(msg(a.slice(s![..;0]).unwrap_err()).contains("step must not be zero"));
        let ints = a.to_dtype(DType::I32).unwrap();
        let cpu = Device::cpu();
        let waves = Tensor::zeros([2, 3], DType::C64, &cpu).unwrap();
        let doubles = Tensor::zeros([2, 3], DType::F64, &cpu).unwrap();
        assert!(
            msg(waves.add(&doubles).unwrap_err())
                .contains("dtypes c64 and f64 have no common dtype")
        );
        assert!(
            msg(a.to_dtype(DType::I32).unwrap().exp().unwrap_err())
                .contains("exp: not defined for dtype i32")
        );
        assert!(matches!(
            a.broadcast_to([3, 2, 3]).unwrap().add_scalar_(1.0),
            Err(Error::OverlappingWrite { .. })
        ));
        assert!(msg(a.reshape([4]).unwrap_err()).contains("cannot reshape [2, 3]"));
        assert!(
            msg(a.to_vec::<i32>().unwrap_err()).contains("tensor has dtype f32, asked for i32")
        );
        assert!(
            msg(a.to_dtype(DType::U8).unwrap().add_scalar(300).unwrap_err())
                .contains("300 cannot be represented in dtype u8")
        );
        assert!(
            msg(ints.add_scalar_(2.5).unwrap_err())
                .contains("in place, the scalar 2.5 would make the i32 destination f32")
        );
        assert!(
            msg(Tensor::from_slice(&[1.0f32; 5], [2, 3], &dev).unwrap_err())
                .contains("5 values cannot fill shape [2, 3]")
        );
        assert!(matches!(a.item::<f32>(), Err(Error::Shape { .. })));
        assert!(matches!(
            Tensor::zeros([1; 9], DType::F32, &dev),
            Err(Error::Shape { .. })
        ));
        let row = Tensor::zeros([3], DType::F32, &dev).unwrap();
        assert!(
            msg(row.add_(&a).unwrap_err())
                .contains("cannot broadcast shape [2, 3] into the destination's shape [3]")
        );
        // Promoted in place (an f16 destination, f32 operand): the same
        // error, naming the op (it named `assign`, after computing).
        let half = row.to_dtype(DType::F16).unwrap();
        assert_eq!(
            msg(half.mul_(&a).unwrap_err()),
            "mul: cannot broadcast shape [2, 3] into the destination's shape [3]"
        );
    }
    if let Some(gpu) = common::gpu() {
        let a = Tensor::zeros([2], DType::F32, &gpu).unwrap();
        let c = Tensor::zeros([2], DType::F32, &Device::cpu()).unwrap();
        assert!(matches!(a.add(&c), Err(Error::DeviceMismatch { .. })));
        assert!(matches!(
            Tensor::zeros([2], DType::F64, &gpu),
            Err(Error::UnsupportedDType {
                dtype: DType::F64,
                ..
            })
        ));
        // One element past the device's largest buffer (tensors over one
        // storage binding are allowed: tests/large_tensors.rs).
        let limit = gpu.info().max_buffer_size;
        let too_big = (limit / 4 + 1) as usize;
        assert!(matches!(
            Tensor::zeros([too_big], DType::F32, &gpu),
            Err(Error::TooLarge { op: "zeros", requested, limit: l, .. }) if requested > l && l == limit
        ));
    }
}

#[test]
fn dispatch_beyond_65535_workgroups_works() {
    // The reversed read below walks rows; with runs of one element a
    // thread in workgroups of 256, 17M elements are 66,407 workgroups: a
    // 2-D grid. (A GPU's runs of 4 reach one past 67M elements, a software
    // adapter's runs of 32 past 134M.)
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        elementwise_run: Some(1),
        ..Default::default()
    }) else {
        return;
    };
    for dev in [Device::cpu(), gpu] {
        let n = 17_000_000;
        // Values that tell every position apart from its neighbours (a
        // wrong index reads a wrong value; all one value hid that).
        let values: Vec<f32> = (0..n).map(|i| (i % 1021) as f32).collect();
        let a = Tensor::from_vec(values, [n], &dev).unwrap();
        let b = a
            .t()
            .add_scalar(1.0)
            .unwrap()
            .slice(s![..;-1])
            .unwrap()
            .mul_scalar(2.0)
            .unwrap();
        let v = b.to_vec::<f32>().unwrap();
        assert_eq!(v.len(), n);
        for (k, &x) in v.iter().enumerate() {
            let want = (((n - 1 - k) % 1021) as f32 + 1.0) * 2.0;
            assert_eq!(x, want, "{dev} at {k}");
        }
    }
}

type Op = fn(&Tensor) -> Tensor;

/// Copies and casts whose input's fastest axis is not the destination's
/// (the GPU passes 32 x 32 tiles through workgroup memory): transposes and
/// permutations of every dtype, sizes on both sides of the tile and of
/// the tiling threshold, batches, reversed, stepped and offset inputs, and
/// one-input chains, all equal to the CPU.
#[test]
fn transposing_copies_and_casts_match_the_cpu() {
    let cpu = Device::cpu();
    let devices: Vec<Device> = common::devices().into_iter().skip(1).collect();
    for gpu in &devices {
        for (a, b, c) in [
            (15, 17, 3),
            (16, 16, 1),
            (31, 33, 2),
            (32, 64, 1),
            (100, 37, 2),
        ] {
            let base = Tensor::arange(0i32, a * b * c * 2, 1, &cpu)
                .unwrap()
                .reshape([c, 2 * a, b])
                .unwrap();
            // Stepped rows, then reversed columns: an offset, strided view.
            let view = base.slice(s![.., 1..;2, ..;-1]).unwrap();
            for dtype in common::STORAGE_DTYPES {
                let x = view.to_dtype(dtype).unwrap();
                let g = x.to_device(gpu).unwrap();
                let cases: [(&str, Op); 5] = [
                    ("t().contiguous()", |t| {
                        t.transpose(1, 2).unwrap().contiguous().unwrap()
                    }),
                    ("permute(2, 0, 1)", |t| {
                        t.permute(&[2, 0, 1]).unwrap().contiguous().unwrap()
                    }),
                    ("t() to f32", |t| {
                        t.transpose(1, 2).unwrap().to_dtype(DType::F32).unwrap()
                    }),
                    ("t() to u8", |t| {
                        t.transpose(1, 2).unwrap().to_dtype(DType::U8).unwrap()
                    }),
                    ("t() to i32, negated", |t| {
                        t.transpose(1, 2)
                            .unwrap()
                            .to_dtype(DType::I32)
                            .unwrap()
                            .neg()
                            .unwrap()
                    }),
                ];
                for (what, f) in cases {
                    let want = f(&x);
                    let got = f(&g);
                    assert_eq!(got.dims(), want.dims());
                    assert_eq!(
                        got.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
                        want.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
                        "{gpu} {dtype} {a}x{b}x{c} {what}"
                    );
                }
            }
        }
    }
}

/// Copies whose output's unit-stride axis is short (2 to 17 long) from an
/// input read across it (a transpose, a pixel shuffle's interleave) or
/// broadcast along it (a nearest upsampling's repeats), also stepped
/// along the other axis and cast on the way, large enough to split over
/// threads: every element from where its index says.
#[test]
fn copies_with_a_short_unit_stride_axis_take_each_element_from_its_place() {
    for dev in devices() {
        let (c, w) = (40usize, 301usize);
        for r in 2..=17usize {
            let n = (c * r * w) as i32;
            let src = Tensor::arange(0i32, n, 1, &dev)
                .unwrap()
                .reshape([c, r, w])
                .unwrap();
            let got = src.permute(&[0, 2, 1]).unwrap().contiguous().unwrap();
            let want: Vec<i32> = (0..c * w * r)
                .map(|e| {
                    let (ci, x, k) = (e / (w * r), e / r % w, e % r);
                    ((ci * r + k) * w + x) as i32
                })
                .collect();
            assert_eq!(
                got.to_vec::<i32>().unwrap(),
                want,
                "transpose, {r} on {dev}"
            );
            // Every other column, into f32.
            let stepped = src
                .slice(s![.., .., ..;2])
                .unwrap()
                .permute(&[0, 2, 1])
                .unwrap();
            let got = stepped
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let half = w.div_ceil(2);
            let want: Vec<f32> = (0..c * half * r)
                .map(|e| {
                    let (ci, x, k) = (e / (half * r), e / r % half, e % r);
                    ((ci * r + k) * w + 2 * x) as f32
                })
                .collect();
            assert_eq!(got, want, "stepped, {r} on {dev}");
            // Each element r times in a row.
            let rows = src.slice(s![.., 0, ..]).unwrap().unsqueeze(-1).unwrap();
            let spread = rows.broadcast_to([c, w, r]).unwrap().contiguous().unwrap();
            let want: Vec<i32> = (0..c * w * r)
                .map(|e| ((e / (w * r) * r) * w + e / r % w) as i32)
                .collect();
            assert_eq!(
                spread.to_vec::<i32>().unwrap(),
                want,
                "repeats, {r} on {dev}"
            );
        }
    }
}
