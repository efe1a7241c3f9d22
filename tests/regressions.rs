//! Defects found by adversarial testing (issues 17 and 26), each pinned on
//! every device: overflowing shapes, empty views with an offset, rank-8
//! complex ops, impossible host allocations (pad's index too), narrow-dtype
//! sums past the binding limit, long float sums, and complex pads. Fusion ordering and the long-line kernels
//! have theirs in scheduler.rs and size_sweeps.rs.

mod common;

use common::devices;
use half::f16;
use webtensor::{
    Complex32, Conv, DType, Device, Error, Fft, Layout, PadMode, Resize, Shape, Tensor, s,
};

#[test]
fn overflowing_shapes_are_errors_not_panics() {
    for dev in devices() {
        let shape_err = |r: webtensor::Result<Tensor>, what: &str| match r {
            Err(Error::Shape { .. }) => {}
            Err(e) => panic!("{what} on {dev}: wrong error {e}"),
            Ok(t) => panic!("{what} on {dev}: Ok with shape {:?}", t.dims()),
        };
        shape_err(Tensor::zeros([1 << 62, 4], DType::F32, &dev), "zeros");
        shape_err(
            Tensor::ones([0, 1 << 62, 4], DType::F32, &dev),
            "ones with a 0",
        );
        let empty = Tensor::zeros([0], DType::F32, &dev).unwrap();
        shape_err(empty.reshape([1usize << 32, 1 << 32]), "reshape");
        let three = Tensor::ones([3], DType::F32, &dev).unwrap();
        shape_err(three.broadcast_to([1 << 62, 4, 3]), "broadcast_to");
        let col = three.reshape([3, 1]).unwrap();
        let wide = Tensor::ones([1, 3], DType::F32, &dev).unwrap();
        shape_err(
            col.broadcast_to([1 << 40, 1])
                .and_then(|a| a.add(&wide.broadcast_to([1, 1 << 40]).unwrap())),
            "add broadcasting past the limit",
        );
        // A `Shape` holding usize::MAX wrapped to -1, the extent to infer.
        let twelve = Tensor::ones([12], DType::F32, &dev).unwrap();
        shape_err(twelve.reshape(Shape::from([usize::MAX])), "reshape to MAX");
        shape_err(twelve.reshape(Shape::from([2, usize::MAX])), "reshape");
        // An outer product past usize: its ordering estimate overflowed.
        let long = Tensor::zeros([1], DType::F32, &dev)
            .unwrap()
            .broadcast_to([1usize << 32])
            .unwrap();
        shape_err(Tensor::einsum("i,j->ij", &[&long, &long]), "outer einsum");
        shape_err(long.tensordot(&long, &[], &[]), "outer tensordot");
        shape_err(three.tile(&[1 << 61]), "tile");
        shape_err(three.repeat(usize::MAX, 0), "repeat");
        shape_err(Tensor::rand([1 << 62, 4], DType::F32, 0, &dev), "rand");
        // The count it would have, not a saturated one.
        let err = Tensor::arange(0.0f32, 1e30, 1e-30, &dev).unwrap_err();
        assert!(matches!(err, Error::Shape { op: "arange", .. }), "{err}");
        assert!(err.to_string().contains("1.000e60 elements"), "{err}");
        common::assert_op_err(three.split(&[usize::MAX, 4], 0), "split");
        // Steps far past the axis leave one element.
        let t = Tensor::arange(0i32, 6, 1, &dev).unwrap();
        let one = t.slice(s![..;isize::MAX]).unwrap();
        assert_eq!(one.to_vec::<i32>().unwrap(), [0]);
        let last = t.slice(s![..;isize::MIN]).unwrap();
        assert_eq!(last.to_vec::<i32>().unwrap(), [5]);
        // Steps past isize saturate as the bounds do (NumPy's `[::2**64]`
        // is `[0]`): `as isize` made `usize::MAX` a step of -1, which
        // reversed the axis, and `1 << 63` isize::MIN, the last element.
        for one in [t.slice(s![..;usize::MAX]), t.slice(s![..;1u64 << 63])] {
            assert_eq!(one.unwrap().to_vec::<i32>().unwrap(), [0]);
        }
        let last = t.slice(s![..;-(1i128 << 70)]).unwrap();
        assert_eq!(last.to_vec::<i32>().unwrap(), [5]);
        // Outputs past the limits from sizes that each fit one axis fail
        // before the first axis's work: resizes made 2^31 taps (48 GB)
        // first, the adaptive pool 2^31 bins and the FFT a 32 GB first
        // transform.
        let image = Tensor::ones([1, 1, 2, 2], DType::F32, &dev).unwrap();
        let huge = [1usize << 31, 1 << 31];
        for mode in [Resize::Nearest, Resize::Bilinear, Resize::BilinearAntialias] {
            shape_err(image.resize(huge, mode), "resize");
        }
        shape_err(image.adaptive_avg_pool2d(huge), "adaptive_avg_pool2d");
        let spectrum = image.to_dtype(DType::C64).unwrap();
        shape_err(spectrum.fft(Fft::over([-2, -1]).sizes(&huge)), "fft2");
        // Products of sizes that wrapped (a debug build's overflow panic):
        // zero input channels divide into 2^32 groups, and an einsum of
        // broadcast views.
        let none = Tensor::zeros([1, 0, 2, 2], DType::F32, &dev).unwrap();
        let taps = Tensor::zeros([0, 1 << 32, 1, 1], DType::F32, &dev).unwrap();
        let groups = Conv::new().groups(1 << 32);
        shape_err(none.conv_transpose2d(&taps, &groups), "conv_transpose2d");
        let point = Tensor::zeros([1, 1], DType::F32, &dev).unwrap();
        let row = point.broadcast_to([1, 1 << 32]).unwrap();
        let column = point.broadcast_to([1 << 32, 1]).unwrap();
        shape_err(Tensor::einsum("ij,ij->ij", &[&row, &column]), "einsum");
        // Sizes past the limits, refused before their values are made.
        let past = webtensor::MAX_ELEMENTS + 1;
        shape_err(Tensor::fftfreq(past, 1.0, &dev), "fftfreq");
        shape_err(Tensor::rfftfreq(2 * past, 1.0, &dev), "rfftfreq");
        shape_err(Tensor::hann_window(past, &dev), "hann_window");
    }
}

#[test]
fn empty_views_with_an_offset_read_as_empty() {
    for dev in devices() {
        for dtype in [DType::F32, DType::I32, DType::C64] {
            let t = Tensor::zeros([0, 4], dtype, &dev).unwrap();
            let views = [
                t.flip(&[1]).unwrap(),
                t.slice(s![.., 3..]).unwrap(),
                Tensor::zeros([5, 4], dtype, &dev)
                    .unwrap()
                    .slice(s![5.., 2..])
                    .unwrap(),
            ];
            for v in views {
                assert_eq!(v.numel(), 0);
                assert_eq!(v.contiguous().unwrap().numel(), 0, "{dev} {dtype}");
                if dtype == DType::C64 {
                    assert!(v.to_complex_vec().unwrap().is_empty());
                } else {
                    assert!(common::read_f32(&v).is_empty());
                }
                assert_eq!(v.sum(..).unwrap().numel(), 1);
                assert_eq!(format!("{v}"), "[]");
            }
        }
    }
}

#[test]
fn rank_8_complex_tensors_reduce_and_combine() {
    // A rank-8 c64 tensor through a permuted view, against the same values
    // at rank 2 (pair views would be rank 9, past the limit).
    let dims = [2, 1, 2, 1, 3, 1, 2, 1];
    let values: Vec<Complex32> = (0..24)
        .map(|k| Complex32::new(k as f32 - 5.0, 0.5 * k as f32))
        .collect();
    for dev in devices() {
        let z = Tensor::from_complex(&values, dims, &dev).unwrap();
        let zt = z.permute(&[7, 6, 5, 4, 3, 2, 1, 0]).unwrap();
        let flat = Tensor::from_complex(&values, [24], &dev).unwrap();
        assert_eq!(
            zt.sum(..).unwrap().to_complex_vec().unwrap(),
            flat.sum(..).unwrap().to_complex_vec().unwrap(),
            "{dev}"
        );
        let by_rows = z.reshape([4, 6]).unwrap().sum(1).unwrap();
        let rank8 = z.sum(vec![4isize, 6]).unwrap();
        assert_eq!(rank8.dims(), &[2, 1, 2, 1, 1, 1]);
        assert_eq!(
            rank8.to_complex_vec().unwrap(),
            by_rows.to_complex_vec().unwrap()
        );
        let twice = zt.add(&zt).unwrap().sub(&zt.neg().unwrap()).unwrap();
        let want: Vec<Complex32> = zt
            .to_complex_vec()
            .unwrap()
            .iter()
            .map(|c| c * 3.0)
            .collect();
        assert_eq!(twice.to_complex_vec().unwrap(), want, "{dev}");
        let copy = Tensor::zeros(zt.shape().clone(), DType::C64, &dev).unwrap();
        copy.assign(&zt).unwrap();
        assert_eq!(copy.to_complex_vec().unwrap(), zt.to_complex_vec().unwrap());
        let moved = zt.to_device(&Device::cpu()).unwrap();
        assert_eq!(
            moved.to_complex_vec().unwrap(),
            zt.to_complex_vec().unwrap()
        );
        assert!(format!("{zt}").contains("j"));
        let zeros = Tensor::zeros([1; 8], DType::C64, &dev).unwrap();
        assert_eq!(
            zeros.sum(..).unwrap().to_complex_vec().unwrap(),
            [Complex32::new(0.0, 0.0)]
        );
    }
}

#[test]
fn impossible_host_allocations_are_out_of_memory_errors() {
    // 4 PiB: more than any machine's address space, so refused even where
    // the kernel overcommits.
    let cpu = Device::cpu();
    let err = Tensor::zeros([1 << 50], DType::F32, &cpu).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfMemory {
                op: "zeros",
                cap: None,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("allocator refused"), "{err}");
    let one = Tensor::ones([1], DType::F32, &cpu).unwrap();
    let huge = one.broadcast_to([1 << 50]).unwrap();
    assert!(matches!(
        huge.to_vec::<f32>(),
        Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(huge.contiguous(), Err(Error::OutOfMemory { .. })));
    for dev in devices().into_iter().skip(1) {
        // The GPU refuses by its limits, as before.
        assert!(matches!(
            Tensor::zeros([1 << 50], DType::F32, &dev),
            Err(Error::TooLarge { .. })
        ));
    }
}

#[test]
fn narrow_sums_read_the_input_as_it_is() {
    // 2^26 u8 ones: 64 MiB, under the 128 MiB binding; its u32 widening
    // (256 MiB) would not be.
    for dev in devices() {
        let n = 1usize << 26;
        let ones = Tensor::ones([n], DType::U8, &dev).unwrap();
        assert_eq!(
            ones.sum(..).unwrap().to_vec::<u32>().unwrap(),
            [n as u32],
            "{dev}"
        );
        let flags = Tensor::ones([3, 5], DType::Bool, &dev).unwrap();
        let counts = flags.slice(s![.., ..;2]).unwrap().sum(1).unwrap();
        assert_eq!(counts.dtype(), DType::I32);
        assert_eq!(counts.to_vec::<i32>().unwrap(), [3, 3, 3], "{dev}");
        let small = Tensor::from_slice(&[2u8, 3, 4], [3], &dev).unwrap();
        assert_eq!(small.prod(..).unwrap().to_vec::<u32>().unwrap(), [24]);
    }
}

#[test]
fn long_float_sums_stay_accurate() {
    // 2^27 + 5 twos: eight running f32 accumulators lose the count past
    // 2^25 each; pairwise blocks keep it exact.
    for dev in devices() {
        let n = (1usize << 27) + 5;
        if dev.is_gpu() && n * 4 > (128 << 20) {
            // One binding holds 128 MiB on lavapipe; the GPU tree is tested
            // at 2^24 below.
            let t = Tensor::full([1 << 24], 2.0, DType::F32, &dev).unwrap();
            assert_eq!(t.sum(..).unwrap().item::<f32>().unwrap(), (1 << 25) as f32);
            continue;
        }
        let t = Tensor::full([n], 2.0, DType::F32, &dev).unwrap();
        assert_eq!(
            t.sum(..).unwrap().item::<f32>().unwrap(),
            (2 * n) as f32,
            "{dev}"
        );
        let mean = t.reshape([1, n]).unwrap().mean(1).unwrap();
        assert_eq!(mean.item::<f32>().unwrap(), 2.0);
    }
}

#[test]
fn huge_pads_are_out_of_memory_errors_in_every_mode() {
    for dev in devices() {
        let t = Tensor::ones([3], DType::F32, &dev).unwrap();
        for mode in [
            PadMode::Constant(0.0.into()),
            PadMode::Edge,
            PadMode::Reflect,
            PadMode::Wrap,
        ] {
            match t.pad(&[(1 << 50, 0)], mode) {
                Err(Error::OutOfMemory { .. } | Error::TooLarge { .. }) => {}
                other => panic!("{dev} {mode:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn complex_tensors_pad_in_every_mode() {
    for dev in devices() {
        let z = Tensor::from_complex(
            &[
                Complex32::new(1.0, -1.0),
                Complex32::new(2.0, -2.0),
                Complex32::new(3.0, -3.0),
            ],
            [3],
            &dev,
        )
        .unwrap();
        for (mode, order) in [
            (PadMode::Edge, [1, 1, 2, 3, 3, 3]),
            (PadMode::Reflect, [2, 1, 2, 3, 2, 1]),
            (PadMode::Wrap, [3, 1, 2, 3, 1, 2]),
        ] {
            let got = z.pad(&[(1, 2)], mode).unwrap().to_complex_vec().unwrap();
            let want: Vec<Complex32> = order
                .iter()
                .map(|&k| Complex32::new(k as f32, -(k as f32)))
                .collect();
            assert_eq!(got, want, "{dev} {mode:?}");
        }
    }
}

/// A nearest resize to an output that cannot exist is refused at once: the
/// check for whole factors walked every output index of both axes first,
/// 2^40 of them here (a hang found by bad_input's property test).
#[test]
fn a_nearest_resize_past_every_limit_fails_at_once() {
    for dev in common::devices() {
        let x = Tensor::ones([1, 1, 1, 1], DType::F32, &dev).unwrap();
        let start = std::time::Instant::now();
        let r = x.resize([1, 1 << 40], webtensor::Resize::Nearest);
        // Past the device's limits, or refused by the allocator at once
        // (the CPU's fallible reservation, where the machine's memory
        // decides which).
        assert!(
            matches!(
                r,
                Err(webtensor::Error::TooLarge { op: "resize", .. }
                    | webtensor::Error::OutOfMemory { op: "resize", .. })
            ),
            "{dev}: {r:?}"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{dev}: {:?}",
            start.elapsed()
        );
    }
}

/// A resize of an empty batch to huge planes is an empty tensor at once:
/// the check for whole factors walked 2^40 output indices (an empty batch
/// left it no output to bound the walk by); PyTorch fails to allocate.
#[test]
fn a_resize_of_an_empty_batch_is_empty_at_once() {
    for dev in common::devices() {
        let x = Tensor::ones([0, 1, 1, 1], DType::F32, &dev).unwrap();
        let start = std::time::Instant::now();
        for mode in [webtensor::Resize::Nearest, webtensor::Resize::Bilinear] {
            let y = x.resize([1 << 40, 1], mode).unwrap();
            assert_eq!(y.dims(), [0, 1, 1 << 40, 1], "{dev} {mode:?}");
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{dev}: {:?}",
            start.elapsed()
        );
    }
}

/// `arange` refuses a non-finite start or end, as NumPy and PyTorch do
/// (NaN, or an infinite end against the step, counted 0 elements: an
/// empty tensor, where an infinite end along the step was an error).
#[test]
fn arange_of_non_finite_ends_is_an_error() {
    for dev in devices() {
        for (start, end, step) in [
            (f64::NAN, 10.0, 1.0),
            (0.0, f64::NAN, 1.0),
            (0.0, f64::NEG_INFINITY, 1.0),
            (0.0, f64::INFINITY, -1.0),
            (f64::INFINITY, 0.0, -1.0),
        ] {
            let r = Tensor::arange(start, end, step, &dev);
            assert!(
                matches!(r, Err(Error::Argument { op: "arange", .. })),
                "arange({start}, {end}, {step}) on {dev}: {r:?}"
            );
        }
        let r = Tensor::arange(f32::NAN, 1.0, 1.0, &dev);
        assert!(matches!(r, Err(Error::Argument { .. })), "{dev}");
    }
}

/// The layout helpers take unchecked shapes: strides of a shape whose
/// element count passes `isize::MAX` (the product past the first axis
/// overflowed), and a no-copy reshape to another element count (it
/// indexed past the new shape).
#[test]
fn layout_helpers_take_unchecked_shapes() {
    let s = Shape::from([1usize << 32, 1usize << 32]);
    assert_eq!(s.contiguous_strides().as_slice(), &[1isize << 32, 1]);
    let t = Layout::contiguous([2, 3]).transpose(0, 1).unwrap();
    assert_eq!(t.reshaped(&Shape::from([5])), None);
    assert_eq!(Layout::contiguous([2, 3]).reshaped(&Shape::from([7])), None);
}

/// A float `arange` whose quotient `(end - start) / step` underflows to 0
/// holds `start` alone where the span is not empty and the step points
/// toward `end`, as NumPy's; a `linspace` whose step underflows spreads
/// `i / (n - 1) * (end - start)`. Lengths and values from NumPy 2.4.
#[test]
fn underflowing_steps_count_as_numpys() {
    let f32_cases = [
        (1.0, 1.0000001, 3e38, 1),
        (0.0, 1e-30, 1e20, 1),
        (0.0, -1e-30, -1e20, 1),
        (0.0, -1e-30, 1e20, 0),
        (0.0, 1e-4, 60000.0, 1),
    ];
    for dev in devices() {
        for (start, end, step, len) in f32_cases {
            let t = Tensor::arange(start as f32, end as f32, step as f32, &dev).unwrap();
            let want = vec![start as f32; len];
            assert_eq!(
                t.to_vec::<f32>().unwrap(),
                want,
                "arange({start}, {end}, {step})"
            );
        }
        let (s, e, st) = (
            f16::from_f64(0.0),
            f16::from_f64(1e-4),
            f16::from_f64(60000.0),
        );
        let t = Tensor::arange(s, e, st, &dev).unwrap();
        assert_eq!(t.to_vec::<f16>().unwrap(), [s], "f16 on {dev}");
    }
    let cpu = Device::cpu();
    let t = Tensor::linspace(-5e-324, 5e-324, 5, DType::F64, &cpu).unwrap();
    assert_eq!(
        t.to_vec::<f64>().unwrap(),
        [-5e-324, -5e-324, 0.0, 5e-324, 5e-324]
    );
    let t = Tensor::linspace(0.0, 1e-323, 10, DType::F64, &cpu).unwrap();
    let tiny = 5e-324;
    let want = [
        0.0,
        0.0,
        0.0,
        tiny,
        tiny,
        tiny,
        tiny,
        2.0 * tiny,
        2.0 * tiny,
        2.0 * tiny,
    ];
    assert_eq!(t.to_vec::<f64>().unwrap(), want);
}

/// A float `arange` counts in its own precision, as NumPy's arange of its
/// scalars: `np.arange(np.float32(0), np.float32(0.3), np.float32(0.1))`
/// has 3 elements (counted in f64 it had a fourth, equal to `end`) and
/// the same in float16 has 4. Lengths from NumPy 2.4.
#[test]
fn float_aranges_count_in_their_own_precision() {
    let cases = [
        (0.0, 0.3, 0.1, 3, 4),
        (1.0, 0.0, -0.1, 10, 10),
        (0.1, 2.9, 0.3, 10, 10),
        (-1.0, 1.0, 0.2, 10, 10),
        (0.0, 1.0, 0.1, 10, 10),
    ];
    for dev in devices() {
        for (start, end, step, f32_len, f16_len) in cases {
            let t = Tensor::arange(start as f32, end as f32, step as f32, &dev).unwrap();
            let v = t.to_vec::<f32>().unwrap();
            assert_eq!(
                v.len(),
                f32_len,
                "f32 arange({start}, {end}, {step}) on {dev}: {v:?}"
            );
            assert!(
                v.iter()
                    .all(|&x| (x - end as f32) * step as f32 <= 0.0 && x != end as f32)
            );
            let (s, e, st) = (
                f16::from_f64(start),
                f16::from_f64(end),
                f16::from_f64(step),
            );
            let t = Tensor::arange(s, e, st, &dev).unwrap();
            assert_eq!(
                t.numel(),
                f16_len,
                "f16 arange({start}, {end}, {step}) on {dev}"
            );
        }
    }
}

/// Three threads: products and gathers reading two storages, in-place ops
/// writing each of them while reading the other. A kernel that took its
/// two reads in its operands' order (matmul, gather) could hold one while
/// a writer of the other waited on a third thread's pending write: a
/// cycle. The watchdog fails the test rather than hang it. (Here, not in
/// cpu_threads.rs, whose host-pool test counts the process's buffers:
/// this one's seconds of allocations beside it made that one flaky.)
#[test]
fn products_beside_in_place_writers_finish() {
    use std::sync::mpsc;
    use std::time::Duration;
    let cpu = Device::cpu();
    let a = Tensor::zeros([64, 64], DType::F32, &cpu).unwrap();
    let b = Tensor::zeros([64, 64], DType::F32, &cpu).unwrap();
    let z = Tensor::zeros([64, 64], DType::F32, &cpu).unwrap();
    let index = Tensor::arange(0i64, 64, 1, &cpu).unwrap();
    let rounds = 20000;
    let (done, finished) = mpsc::channel();
    for flip in [false, true] {
        let (x, y) = if flip {
            (b.clone(), a.clone())
        } else {
            (a.clone(), b.clone())
        };
        let (x1, y1, i, d) = (x.clone(), y.clone(), index.clone(), done.clone());
        std::thread::spawn(move || {
            for _ in 0..rounds {
                drop(x1.matmul(&y1).unwrap());
                drop(
                    x1.gather(
                        &i.reshape([64, 1]).unwrap().broadcast_to([64, 64]).unwrap(),
                        0,
                    )
                    .unwrap(),
                );
            }
            d.send(()).unwrap();
        });
        let (x2, y2, d) = (x.clone(), y.clone(), done.clone());
        std::thread::spawn(move || {
            for _ in 0..rounds {
                y2.add_(&x2).unwrap();
            }
            d.send(()).unwrap();
        });
        let (x3, z3, d) = (x.clone(), z.clone(), done.clone());
        std::thread::spawn(move || {
            for _ in 0..rounds {
                x3.add_(&z3).unwrap();
            }
            d.send(()).unwrap();
        });
    }
    for _ in 0..6 {
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("a thread is still waiting for a lock after 120 s");
    }
}

/// Empty matrices are triangled and padded at once, whatever the length
/// of their other side (torch's `zeros(0, 2**40).triu()` and NumPy's
/// `pad(zeros((0, 3)), ((0, 0), (2**40, 0)), 'edge')` give their shapes
/// at once): the triangle's masks and the pad's index along the long
/// side were built first, an i32 shape error or an allocation past the
/// host's memory. A 0-d tensor's axis 0 squeezes (NumPy's and torch's
/// `squeeze(0)` of a 0-d array is itself); a c64 assignment's shape error
/// names the shapes as given.
#[test]
fn empty_matrices_are_triangled_and_padded_at_once() {
    for dev in devices() {
        for dims in [[0usize, 1 << 40], [1 << 33, 0]] {
            let x = Tensor::zeros([1, 0, 1], DType::F32, &dev)
                .unwrap()
                .broadcast_to([dims[0].max(1), 0, dims[1].max(1)])
                .unwrap()
                .narrow(0, 0, dims[0])
                .unwrap()
                .narrow(2, 0, dims[1])
                .unwrap();
            for t in [x.triu(0), x.tril(3)] {
                assert_eq!(t.unwrap().dims(), &[dims[0], 0, dims[1]], "{dev}");
            }
        }
        let e = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
        e.triu_(1).unwrap();
        e.tril_(-1).unwrap();
        assert!(matches!(
            Tensor::zeros([0], DType::F32, &dev).unwrap().triu(0),
            Err(Error::Shape { op: "triu", .. })
        ));
        for mode in [PadMode::Edge, PadMode::Reflect, PadMode::Wrap] {
            let p = e.pad(&[(0, 0), (1 << 40, 2)], mode).unwrap();
            assert_eq!(p.dims(), &[0, (1 << 40) + 5], "{dev} {mode:?}");
            // Padding the empty axis itself stays NumPy's error.
            assert!(matches!(
                e.pad(&[(1, 0), (0, 0)], mode),
                Err(Error::Shape { op: "pad", .. })
            ));
        }
        let c = Tensor::from_complex(&[Complex32::new(1.0, 2.0); 6], [2, 3], &dev).unwrap();
        let p = c
            .slice(s![..0, ..])
            .unwrap()
            .pad(&[(0, 0), (0, 1 << 40)], PadMode::Wrap);
        assert_eq!(p.unwrap().dims(), &[0, (1 << 40) + 3], "{dev}");
        let seven = Tensor::full([], 7, DType::I32, &dev).unwrap();
        for axis in [0, -1] {
            let s = seven.squeeze_axis(axis).unwrap();
            assert_eq!((s.rank(), s.to_vec::<i32>().unwrap()), (0, vec![7]));
        }
        assert!(matches!(seven.squeeze_axis(1), Err(Error::Axis { .. })));
        match c.assign(&Tensor::zeros([2, 4], DType::C64, &dev).unwrap()) {
            Err(Error::Shape { op: "assign", msg }) => {
                assert!(msg.contains("[2, 4]") && msg.contains("[2, 3]"), "{msg}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// At rank 8 (`MAX_RANK`), the ops that add an axis inside work as below
/// it: a GPU's i64 product (a batch entry at a time), a GPU's blocked scan
/// of lines past 65,536, and grouped-query attention whose keys repeat
/// their heads. Products from NumPy (`[[1, 2, 3], [4, 5, 6]] @ [[1, 2], [3,
/// 4], [5, 6]]` and the next six values' product).
#[test]
fn rank_eight_products_scans_and_grouped_attention() {
    let rank8 = |lead: usize, tail: &[usize]| -> Vec<usize> {
        let mut d = vec![lead, 1, 1, 1, 1];
        d.resize(8 - tail.len(), 1);
        d.extend_from_slice(tail);
        d
    };
    for dev in devices() {
        let a = Tensor::from_vec((1..=12).collect::<Vec<i64>>(), rank8(2, &[2, 3]), &dev).unwrap();
        let b = Tensor::from_vec((1..=6).collect::<Vec<i64>>(), [3, 2], &dev).unwrap();
        let p = a.matmul(&b).unwrap();
        assert_eq!(p.dims(), rank8(2, &[2, 2]).as_slice(), "{dev}");
        let want = [22, 28, 49, 64, 76, 100, 103, 136];
        assert_eq!(p.to_vec::<i64>().unwrap(), want, "{dev}");

        let n = 70_000;
        let ones = Tensor::ones(rank8(1, &[2, n]), DType::F32, &dev).unwrap();
        let sums = ones.cumsum(-1).unwrap().to_vec::<f32>().unwrap();
        let want: Vec<f32> = (0..2).flat_map(|_| (1..=n).map(|i| i as f32)).collect();
        assert_eq!(sums, want, "{dev}");

        // Four query heads in two groups, keys of two heads, values of one.
        let data = |n: usize, scale: f32| (0..n).map(|i| i as f32 * scale).collect::<Vec<f32>>();
        let q = Tensor::from_vec(data(16, 0.01), rank8(1, &[4, 2, 2]), &dev).unwrap();
        let k = Tensor::from_vec(data(12, 0.02), rank8(1, &[2, 3, 2]), &dev).unwrap();
        for v_heads in [2, 1] {
            let v =
                Tensor::from_vec(data(6 * v_heads, 1.0), rank8(1, &[v_heads, 3, 2]), &dev).unwrap();
            let attention = webtensor::Attention::new();
            let got = q.sdpa(&k, &v, &attention).unwrap();
            // Rank 7, tested against NumPy elsewhere, gives the same.
            let below = |t: &Tensor| t.squeeze_axis(0).unwrap();
            let want = below(&q).sdpa(&below(&k), &below(&v), &attention).unwrap();
            assert_eq!(got.dims(), q.dims(), "{dev}");
            common::assert_close(
                &got.to_vec::<f32>().unwrap(),
                &want.to_vec::<f32>().unwrap(),
                1e-6,
                "rank 8 attention",
            );
        }
    }
}
