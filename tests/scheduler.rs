//! The scheduler's contract, checked on its stats (never on time): batched
//! submits, fused chains, pooled buffers that never leak or get written
//! while pending work still needs their old contents.
//!
//! Each test opens a GPU device of its own so that its stats are its own.

mod common;

use common::{assert_close, own_gpu, read_f32};
use webtensor::{DType, Device, DeviceStats, Error, GpuOptions, Tensor, s};

/// A device of its own with the settings of the environment
/// (`WEBTENSOR_FLUSH_THRESHOLD`, `WEBTENSOR_FUSION`), which CI varies.
fn gpu() -> Option<Device> {
    own_gpu(GpuOptions::default())
}

/// A device of its own that batches 256 ops per submit, fusing or not
/// whatever the environment says (fusion happens within a batch).
fn batched_gpu(fusion: bool) -> Option<Device> {
    own_gpu(GpuOptions {
        fusion: Some(fusion),
        flush_threshold: Some(256),
        ..Default::default()
    })
}

fn delta(before: DeviceStats, after: DeviceStats) -> DeviceStats {
    DeviceStats {
        submits: after.submits - before.submits,
        ops_recorded: after.ops_recorded - before.ops_recorded,
        dispatches: after.dispatches - before.dispatches,
        fused_kernels: after.fused_kernels - before.fused_kernels,
        fused_ops: after.fused_ops - before.fused_ops,
        buffers_created: after.buffers_created - before.buffers_created,
        buffers_reused: after.buffers_reused - before.buffers_reused,
        buffers_avoided: after.buffers_avoided - before.buffers_avoided,
        dead_ops: after.dead_ops - before.dead_ops,
        bind_groups_created: after.bind_groups_created - before.bind_groups_created,
        bind_groups_reused: after.bind_groups_reused - before.bind_groups_reused,
        bytes_uploaded: after.bytes_uploaded - before.bytes_uploaded,
        readbacks: after.readbacks - before.readbacks,
        ..after
    }
}

/// The operands of [`in_place_workload`].
fn workload_inputs(dev: &Device) -> (Tensor, Tensor) {
    let x = Tensor::arange(0.0f32, 64.0 * 64.0, 1.0, dev)
        .unwrap()
        .reshape([64, 64])
        .unwrap()
        .mul_scalar(0.01)
        .unwrap();
    (x, Tensor::rand([32, 64], DType::F32, 5, dev).unwrap())
}

/// 1000 in-place ops through views of `x` (reading what earlier ones
/// wrote) and 100 permute-contiguous copies. Returns the copies.
fn in_place_workload(x: &Tensor, w: &Tensor) -> Vec<Tensor> {
    let mut copies = Vec::new();
    for k in 0..1000 {
        match k % 4 {
            0 => x.slice(s![..;2, ..]).unwrap().add_scalar_(1.0).unwrap(),
            1 => x.t().slice(s![1..;3]).unwrap().mul_scalar_(0.5).unwrap(),
            2 => x.slice(s![1..;2, ..;-1]).unwrap().add_(w).unwrap(),
            _ => {
                // Reads the odd rows that op 2 just wrote.
                let odd = x.slice(s![1..;2]).unwrap();
                x.slice(s![..;2]).unwrap().maximum_(&odd).unwrap()
            }
        }
        if k % 10 == 9 {
            copies.push(x.permute(&[1, 0]).unwrap().contiguous().unwrap());
        }
    }
    copies
}

#[test]
fn a_thousand_ops_on_views_take_few_submits_and_match_the_cpu() {
    let Some(dev) = gpu() else { return };
    let threshold = dev.flush_threshold() as u64;
    let (x_cpu, w_cpu) = workload_inputs(&Device::cpu());
    let copies_cpu = in_place_workload(&x_cpu, &w_cpu);
    let (x, w) = workload_inputs(&dev);
    dev.sync().unwrap();
    let before = dev.stats();
    let copies = in_place_workload(&x, &w);
    let got = read_f32(&x);
    let d = delta(before, dev.stats());
    assert_eq!(copies.len(), 100);
    assert_eq!(d.ops_recorded, 1100, "{d:?}");
    let bound = 1100u64.div_ceil(threshold) + 1;
    assert!(
        d.submits <= bound,
        "{} submits over {bound} for {d:?}",
        d.submits
    );
    assert_close(&got, &read_f32(&x_cpu), 0.0, "x after 1000 ops");
    for k in [0, 37, 99] {
        let what = format!("copy {k}");
        assert_close(&read_f32(&copies[k]), &read_f32(&copies_cpu[k]), 0.0, &what);
    }
}

#[test]
fn one_submit_per_op_when_the_threshold_is_one() {
    let Some(dev) = gpu() else { return };
    dev.set_flush_threshold(1);
    assert_eq!(dev.flush_threshold(), 1);
    let x = Tensor::zeros([8, 8], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    for _ in 0..10 {
        x.slice(s![.., 1..;2]).unwrap().add_scalar_(1.0).unwrap();
    }
    let d = delta(before, dev.stats());
    assert_eq!((d.submits, d.dispatches), (10, 10), "{d:?}");
    assert_eq!(read_f32(&x).iter().sum::<f32>(), 320.0);
}

/// `((a * 2 + b).exp() - c).relu()` with `b` transposed and `c` stepped.
fn chain(a: &Tensor, b: &Tensor, c: &Tensor) -> Tensor {
    a.mul_scalar(2.0)
        .unwrap()
        .add(&b.t())
        .unwrap()
        .exp()
        .unwrap()
        .sub(&c.slice(s![..;2]).unwrap())
        .unwrap()
        .relu()
        .unwrap()
}

fn chain_inputs(dev: &Device, dtype: DType) -> [Tensor; 3] {
    let cast = |t: Tensor| t.to_dtype(dtype).unwrap();
    [
        cast(Tensor::randn([40, 30], DType::F32, 1, dev).unwrap()),
        cast(Tensor::randn([30, 40], DType::F32, 2, dev).unwrap()),
        cast(
            Tensor::rand([80, 30], DType::F32, 3, dev)
                .unwrap()
                .mul_scalar(4.0)
                .unwrap(),
        ),
    ]
}

#[test]
fn an_elementwise_chain_runs_as_one_fused_kernel() {
    let Some(dev) = batched_gpu(true) else { return };
    for (dtype, tol) in [
        (DType::F32, 1e-5),
        (DType::F16, 4e-3),
        (DType::BF16, 3.2e-2),
    ] {
        let [a, b, c] = chain_inputs(&dev, dtype);
        dev.sync().unwrap();
        let before = dev.stats();
        let out = chain(&a, &b, &c);
        dev.sync().unwrap();
        let d = delta(before, dev.stats());
        let got = read_f32(&out);
        assert_eq!(d.ops_recorded, 5, "{dtype}: {d:?}");
        assert_eq!(d.dispatches, 1, "{dtype}: {d:?}");
        assert_eq!((d.fused_kernels, d.fused_ops), (1, 4), "{dtype}: {d:?}");
        // The four intermediates never took a buffer; the result took one.
        assert_eq!(d.buffers_avoided, 4, "{dtype}: {d:?}");
        assert_eq!(d.buffers_created + d.buffers_reused, 1, "{dtype}: {d:?}");
        let [ca, cb, cc] = chain_inputs(&Device::cpu(), dtype);
        let want = read_f32(&chain(&ca, &cb, &cc));
        assert_close(&got, &want, tol, &format!("fused chain in {dtype}"));
    }
}

#[test]
fn fusion_can_be_switched_off() {
    let Some(dev) = batched_gpu(false) else {
        return;
    };
    assert!(!dev.fusion());
    let [a, b, c] = chain_inputs(&dev, DType::F32);
    dev.sync().unwrap();
    let before = dev.stats();
    let out = chain(&a, &b, &c);
    let got = read_f32(&out);
    let d = delta(before, dev.stats());
    assert_eq!((d.dispatches, d.fused_kernels), (5, 0), "{d:?}");
    let [ca, cb, cc] = chain_inputs(&Device::cpu(), DType::F32);
    assert_close(
        &got,
        &read_f32(&chain(&ca, &cb, &cc)),
        1e-5,
        "unfused chain",
    );
    dev.set_fusion(true);
    let before = dev.stats();
    let again = read_f32(&chain(&a, &b, &c));
    assert_eq!(delta(before, dev.stats()).dispatches, 1);
    assert_close(&again, &got, 1e-5, "fused again");
}

#[test]
fn intermediates_the_user_holds_are_written_out() {
    let Some(dev) = batched_gpu(true) else { return };
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev).unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    let kept = a.mul_scalar(2.0).unwrap();
    let out = kept.add(&a.t()).unwrap().neg().unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), [-3.0, -7.0, -8.0, -12.0]);
    let d = delta(before, dev.stats());
    // `kept` has its own kernel; add and neg fuse.
    assert_eq!((d.dispatches, d.fused_ops), (2, 1), "{d:?}");
    assert_eq!(kept.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn a_long_loop_that_drops_temporaries_keeps_memory_flat() {
    for fusion in [true, false] {
        let Some(dev) = batched_gpu(fusion) else {
            return;
        };
        let step = |x: Tensor, k: usize| -> Tensor {
            match k % 3 {
                0 => x.mul_scalar(0.5).unwrap(),
                1 => x.add_scalar(1.0).unwrap(),
                _ => x.t().sqrt().unwrap().t(),
            }
        };
        let mut x = Tensor::rand([64, 48], DType::F32, 9, &dev).unwrap();
        let mut x_cpu = Tensor::rand([64, 48], DType::F32, 9, &Device::cpu()).unwrap();
        let mut marks = Vec::new();
        for k in 0..10_000 {
            x = step(x, k);
            x_cpu = step(x_cpu, k);
            if k % 2000 == 1999 {
                dev.sync().unwrap();
                marks.push(dev.stats());
            }
        }
        let first = marks[0];
        for m in &marks[1..] {
            assert_eq!(
                m.buffers_created, first.buffers_created,
                "fusion {fusion}: {m:?}"
            );
            assert_eq!(m.bytes_live, first.bytes_live, "fusion {fusion}: {m:?}");
            assert_eq!(m.peak_bytes_live, first.peak_bytes_live, "fusion {fusion}");
        }
        let last = marks[marks.len() - 1];
        assert_eq!(last.fused_ops > 0, fusion, "{last:?}");
        if fusion {
            // Outputs fused away and dropped never take a buffer.
            assert_eq!(last.buffers_avoided, last.fused_ops, "{last:?}");
            assert!(last.buffers_avoided >= 9_000, "{last:?}");
        } else {
            assert_eq!(last.buffers_avoided, 0, "{last:?}");
        }
        // Without fusion each op writes a buffer, but the flush lends a
        // dropped output's buffer on to the next: the pool serves few.
        assert!(
            last.buffers_reused + last.buffers_created < 1_000,
            "fusion {fusion}: {last:?}"
        );
        assert_close(&read_f32(&x), &read_f32(&x_cpu), 1e-5, "loop result");
    }
}

/// An upload takes an idle buffer that no pending op reads when the pool
/// has one, rather than the newest, which a pending op still reads and
/// which the upload would have to flush first (a submit, and in a capture
/// an error).
#[test]
fn an_upload_takes_a_buffer_no_pending_op_reads() {
    let Some(dev) = batched_gpu(true) else {
        return;
    };
    let x = Tensor::from_slice(&[1.0f32; 256], [256], &dev).unwrap();
    let y = Tensor::from_slice(&[2.0f32; 256], [256], &dev).unwrap();
    let total = y.sum(..).unwrap();
    drop(x);
    dev.flush().unwrap();
    // x's buffer is idle; y's, dropped now, is read by the pending product.
    let e = y.mul_scalar(3.0).unwrap();
    drop(y);
    let before = dev.stats();
    let z = Tensor::from_slice(&[3.0f32; 256], [256], &dev).unwrap();
    let after = delta(before, dev.stats());
    assert_eq!((after.submits, after.buffers_created), (0, 0), "{after:?}");
    assert_eq!(after.buffers_reused, 1, "{after:?}");
    assert_eq!(total.to_vec::<f32>().unwrap(), [512.0]);
    assert_eq!(e.to_vec::<f32>().unwrap(), [6.0; 256]);
    assert_eq!(z.to_vec::<f32>().unwrap(), [3.0; 256]);
}

/// A buffer freed and claimed again within a batch can hold operands of
/// two dtypes, and a fused kernel reading both bound it once, as the first
/// one's dtype: the bool mask's `array<u32>` read as f32 failed the
/// kernel's validation and with it every result of the batch. Here `a`'s
/// buffer, dropped after `logical_not` read it, is claimed by `y` (f32, of
/// the same bytes) for the sum; `where` then folds `logical_not` in and
/// reads both. (`y` is never written: `m` is all false, so `where` takes
/// `f` throughout.)
#[test]
fn a_fused_kernel_reads_one_buffer_as_two_dtypes() {
    for fusion in [true, false] {
        let Some(dev) = batched_gpu(fusion) else {
            return;
        };
        let f = Tensor::zeros([64], DType::F32, &dev).unwrap();
        let a = Tensor::from_slice(&[true; 64], [64], &dev).unwrap();
        let m = a.logical_not().unwrap();
        drop(a);
        let y = f.empty_like().unwrap();
        let sum = y.sum(0).unwrap();
        let z = Tensor::where_cond(&m, &y, &f).unwrap();
        drop(m);
        assert_eq!(z.to_vec::<f32>().unwrap(), [0.0; 64], "fusion {fusion}");
        assert_eq!(f.to_vec::<f32>().unwrap(), [0.0; 64], "fusion {fusion}");
        sum.to_vec::<f32>().unwrap();
    }
}

/// Fused chains that write over what they read give NumPy 2.4's answers:
/// an overlapping shifted view (`a[1:] = exp(a[:-1])` reads every element
/// before any is written), a transposed one (`m[...] = exp(m.T)`), and a
/// kernel write between a producer and its reader (`t = a * 2; a[[0, 2]] =
/// ...; u = t + 1` reads `a` as it was).
#[test]
fn fused_chains_over_their_own_inputs_match_numpy() {
    let shifted = [0.0, 1.0, 1.2840255, 1.6487212, 2.117, std::f32::consts::E];
    let transposed = [
        1.0,
        1.4549913,
        2.117,
        1.1331484,
        1.6487212,
        2.3988755,
        1.2840255,
        1.8682458,
        std::f32::consts::E,
    ];
    let mut devices = vec![Device::cpu()];
    devices.extend([true, false].into_iter().filter_map(batched_gpu));
    for dev in devices {
        let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)
            .unwrap()
            .div_scalar(4.0)
            .unwrap();
        let exp = a.slice(s![..-1]).unwrap().exp().unwrap();
        a.slice(s![1..]).unwrap().assign(&exp).unwrap();
        drop(exp);
        assert_close(&read_f32(&a), &shifted, 1e-6, &format!("shifted on {dev}"));
        let m = Tensor::arange(0.0f32, 9.0, 1.0, &dev)
            .unwrap()
            .div_scalar(8.0)
            .unwrap();
        let m = m.reshape([3, 3]).unwrap();
        let exp = m.t().exp().unwrap();
        m.assign(&exp).unwrap();
        drop(exp);
        assert_close(
            &read_f32(&m),
            &transposed,
            1e-6,
            &format!("transposed on {dev}"),
        );
        let a = Tensor::arange(0.0f32, 4.0, 1.0, &dev).unwrap();
        let t = a.mul_scalar(2.0).unwrap();
        let index = Tensor::from_slice(&[0i64, 2], [2], &dev).unwrap();
        let src = Tensor::from_slice(&[10.0f32, 20.0], [2], &dev).unwrap();
        a.scatter_(&index, &src, 0).unwrap();
        let u = t.add_scalar(1.0).unwrap();
        drop(t);
        assert_eq!(read_f32(&u), [1.0, 3.0, 5.0, 7.0], "{dev}");
        assert_eq!(read_f32(&a), [10.0, 1.0, 20.0, 3.0], "{dev}");
    }
}

#[test]
fn an_upload_waits_for_pending_reads_of_its_reused_buffer() {
    let Some(dev) = gpu() else { return };
    let a = Tensor::from_slice(&[1.0f32; 64], [64], &dev).unwrap();
    let doubled = a.mul_scalar(2.0).unwrap(); // pending: reads a's buffer
    drop(a);
    let reused_before = dev.stats().buffers_reused;
    // Same size bucket: gets a's buffer, and writes it from the host.
    let c = Tensor::from_slice(&[5.0f32; 64], [64], &dev).unwrap();
    assert_eq!(dev.stats().buffers_reused, reused_before + 1);
    assert_eq!(doubled.to_vec::<f32>().unwrap(), [2.0; 64]);
    assert_eq!(c.to_vec::<f32>().unwrap(), [5.0; 64]);
}

#[test]
fn fusion_never_moves_a_read_past_a_write_to_its_buffer() {
    let Some(dev) = batched_gpu(true) else { return };
    // A GPU write into the freed buffer of a fused op's input.
    let a = Tensor::full([64], 1.0, DType::F32, &dev).unwrap();
    let t = a.mul_scalar(2.0).unwrap();
    drop(a);
    // Same size as a: the flush must not give it a's buffer before the
    // fused t + 1 has read a.
    let d = Tensor::full([64], 7.0, DType::F32, &dev).unwrap();
    let u = t.add_scalar(1.0).unwrap();
    drop(t);
    assert_eq!(u.to_vec::<f32>().unwrap(), [3.0; 64]);
    assert_eq!(d.to_vec::<f32>().unwrap(), [7.0; 64]);

    // An in-place write to a live input between producer and reader.
    let a = Tensor::full([64], 1.0, DType::F32, &dev).unwrap();
    let t = a.mul_scalar(2.0).unwrap();
    a.slice(s![..;2]).unwrap().fill_(0.0).unwrap();
    let u = t.add_scalar(1.0).unwrap();
    drop(t);
    assert_eq!(u.to_vec::<f32>().unwrap(), [3.0; 64]);

    // An in-place reader that writes the producer's input element for
    // element may fuse: x += x * 2.
    let x = Tensor::full([64], 1.5, DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    x.add_(&x.mul_scalar(2.0).unwrap()).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [4.5; 64]);
    assert_eq!(delta(before, dev.stats()).dispatches, 1);
}

#[test]
fn an_output_takes_a_buffer_freed_in_its_batch_only_after_its_last_read() {
    // Outputs take their buffers when the flush (or another family's
    // kernel) first needs them, after `a` is dropped: a's buffer, the one
    // idle buffer of their size, is still to be read by `t`'s op (fused
    // into `u` when fusion is on, so read after `y` is written).
    for fusion in [true, false] {
        let Some(dev) = batched_gpu(fusion) else {
            return;
        };
        // t = a * 2 and y = exp(b) recorded, then a dropped.
        let start = || {
            let a = Tensor::full([64], 1.0, DType::F32, &dev).unwrap();
            let b = Tensor::full([64], 3.0, DType::F32, &dev).unwrap();
            dev.sync().unwrap();
            let t = a.mul_scalar(2.0).unwrap();
            (t, b.exp().unwrap(), b)
        };
        let (t, y, b) = start();
        let u = t.add_scalar(1.0).unwrap();
        drop(t);
        assert_eq!(u.to_vec::<f32>().unwrap(), [3.0; 64], "fusion {fusion}");
        for v in y.to_vec::<f32>().unwrap() {
            assert!((v - 3.0f32.exp()).abs() < 1e-4, "fusion {fusion}: {v}");
        }
        drop((b, y, u));

        // Taken by a reduction before the flush: the same holds.
        let (t, y, _b) = start();
        let total = y.sum(..).unwrap();
        let u = t.add_scalar(1.0).unwrap();
        drop(t);
        assert_eq!(u.to_vec::<f32>().unwrap(), [3.0; 64], "fusion {fusion}");
        let expected = 64.0 * 3.0f32.exp();
        let got = total.to_vec::<f32>().unwrap()[0];
        assert!((got - expected).abs() < 1e-3, "fusion {fusion}: {got}");
    }
}

#[test]
fn a_result_dropped_unread_is_never_computed() {
    for fusion in [true, false] {
        let Some(dev) = batched_gpu(fusion) else {
            return;
        };
        let a = Tensor::full([1000], 2.0, DType::F32, &dev).unwrap();
        dev.sync().unwrap();
        let before = dev.stats();
        let unused = a.exp().unwrap();
        let kept = a.add_scalar(1.0).unwrap();
        drop(unused);
        assert_eq!(kept.to_vec::<f32>().unwrap(), [3.0; 1000]);
        let d = delta(before, dev.stats());
        assert_eq!((d.dead_ops, d.dispatches), (1, 1), "fusion {fusion}: {d:?}");
        // A dropped chain: fused, none of it runs; unfused, its last op
        // does not (the first one's result is still read by it).
        let before = dev.stats();
        drop(a.mul_scalar(3.0).unwrap().sin().unwrap());
        // An in-place write into a live tensor always runs.
        kept.add_scalar_(1.0).unwrap();
        assert_eq!(kept.to_vec::<f32>().unwrap(), [4.0; 1000]);
        let d = delta(before, dev.stats());
        let want = if fusion { (2, 1) } else { (1, 2) };
        assert_eq!((d.dead_ops, d.dispatches), want, "fusion {fusion}: {d:?}");
    }
}

#[test]
fn a_reader_recorded_before_a_folded_write_reads_the_old_values() {
    // The write into `a` folds into its one later reader, but `b` was
    // recorded before it and must read what `a` held then.
    for fusion in [true, false] {
        let Some(dev) = batched_gpu(fusion) else {
            return;
        };
        let mut a = Tensor::arange(0.0f32, 4.0, 1.0, &dev)
            .unwrap()
            .reshape([2, 2])
            .unwrap();
        let c = Tensor::from_slice(&[10.0f32, 20.0, 30.0, 40.0], [2, 2], &dev).unwrap();
        let b = a.flip(&[0]).unwrap().add_scalar(0.0).unwrap();
        a.t().assign(&c).unwrap();
        a = b.add(&a).unwrap();
        assert_eq!(
            b.to_vec::<f32>().unwrap(),
            [2.0, 3.0, 0.0, 1.0],
            "fusion {fusion}"
        );
        assert_eq!(
            a.to_vec::<f32>().unwrap(),
            [12.0, 33.0, 20.0, 41.0],
            "fusion {fusion}"
        );
    }
}

#[test]
fn pipelines_are_compiled_once_per_kernel_not_per_shape() {
    let Some(dev) = gpu() else { return };
    let run = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        let a = Tensor::arange(0.0f32, n as f32, 1.0, &dev)
            .unwrap()
            .reshape(shape.to_vec())
            .unwrap();
        let b = a.flip(&[0]).unwrap();
        let _ = a.add(&b).unwrap().to_vec::<f32>().unwrap();
    };
    // Rows starting at multiples of 4 read whole entries, other rows of
    // four or more run along the row, shorter ones element by element:
    // three kernels for this program.
    run(&[4, 4]);
    run(&[4, 5]);
    run(&[4, 2]);
    let compiled = dev.stats().pipelines;
    for shape in [[3, 7], [9, 2], [16, 5], [2, 33], [5, 3], [3, 8], [7, 36]] {
        run(&shape);
    }
    assert_eq!(dev.stats().pipelines, compiled);
    // Rows read at a step of 2 as whole entries: a kernel of that step,
    // whatever the shape.
    let stepped = |rows: usize, cols: usize| {
        let a = Tensor::arange(0.0f32, (rows * cols) as f32, 1.0, &dev)
            .unwrap()
            .reshape([rows, cols])
            .unwrap();
        let _ = a
            .slice(s![.., ..;2])
            .unwrap()
            .add_scalar(1.0)
            .unwrap()
            .to_vec::<f32>();
    };
    stepped(4, 16);
    let compiled = dev.stats().pipelines;
    for (rows, cols) in [(3, 8), (7, 40), (1, 24), (9, 12)] {
        stepped(rows, cols);
    }
    assert_eq!(dev.stats().pipelines, compiled);
}

/// Every new fused chain is a pipeline: a device keeps at most its limit
/// of them, dropping the least recently used, and a chain run again after
/// its pipeline went is compiled again and computes the same.
#[test]
fn the_pipeline_cache_keeps_its_limit_dropping_the_least_recently_used() {
    let Some(dev) = own_gpu(GpuOptions {
        pipeline_cache: Some(4),
        fusion: Some(true),
        flush_threshold: Some(256),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::arange(0.0f32, 37.0, 1.0, &dev)
        .unwrap()
        .mul_scalar(0.05)
        .unwrap();
    let host = read_f32(&x);
    // Chain `i`: its digits in base 3 pick five ops, so every `i` below
    // 3^5 is a program of its own.
    let chain = |i: usize| {
        let (mut t, mut want, mut k) = (x.clone(), host.clone(), i);
        for _ in 0..5 {
            let op: fn(f32) -> f32 = match k % 3 {
                0 => f32::sin,
                1 => f32::cos,
                _ => |v| -v,
            };
            t = match k % 3 {
                0 => t.sin(),
                1 => t.cos(),
                _ => t.neg(),
            }
            .unwrap()
            .mul_scalar(0.5)
            .unwrap();
            want = want.iter().map(|&v| op(v) * 0.5).collect();
            k /= 3;
        }
        assert_close(&read_f32(&t), &want, 1e-5, &format!("chain {i}"));
    };
    chain(0);
    let start = dev.stats();
    for i in 1..=12 {
        chain(i);
        // Chain 0, used after every new chain, is never the oldest.
        chain(0);
        let now = dev.stats();
        assert!(now.pipelines <= 4, "{} pipelines held", now.pipelines);
    }
    let after = dev.stats();
    assert!(
        after.pipelines_evicted - start.pipelines_evicted >= 12 - 4,
        "{} evicted",
        after.pipelines_evicted - start.pipelines_evicted
    );
    chain(0);
    assert_eq!(dev.stats().pipelines_evicted, after.pipelines_evicted);
    // Chain 1 went long ago: compiled again, evicting one, same values.
    chain(1);
    assert_eq!(dev.stats().pipelines_evicted, after.pipelines_evicted + 1);
}

/// A captured step's bind groups are created at its capture and reused
/// by every later run, as the counters say.
#[test]
fn a_captured_step_counts_its_bind_groups() {
    let Some(dev) = own_gpu(GpuOptions {
        fusion: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let (xs, os) = (
        Tensor::arange(0.0f32, 64.0, 1.0, &dev).unwrap(),
        Tensor::zeros([64], DType::F32, &dev).unwrap(),
    );
    dev.sync().unwrap();
    let (xc, oc) = (xs.clone(), os.clone());
    let before = dev.stats();
    let mut graph = dev.capture(move || oc.assign(&xc.sin()?.cos()?)).unwrap();
    let d = delta(before, dev.stats());
    assert_eq!(d.dispatches, 3, "{d:?}");
    assert_eq!(
        (d.bind_groups_created, d.bind_groups_reused),
        (3, 0),
        "{d:?}"
    );
    for _ in 0..2 {
        let before = dev.stats();
        graph.run().unwrap();
        let d = delta(before, dev.stats());
        assert_eq!(d.dispatches, 3, "{d:?}");
        assert_eq!(
            (d.bind_groups_created, d.bind_groups_reused),
            (0, 3),
            "{d:?}"
        );
    }
    assert!((os.to_vec::<f32>().unwrap()[1] - 1f32.sin().cos()).abs() < 1e-5);
}

/// The pipeline cache's limit holds for flushes of one op, whose kept
/// plans hold their pipelines: once the cache evicts, the plans go too, so
/// an evicted kernel is compiled again (and evicts another).
#[test]
fn the_pipeline_limit_holds_for_one_op_flushes() {
    let Some(dev) = own_gpu(GpuOptions {
        pipeline_cache: Some(2),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::arange(0.0f32, 16.0, 1.0, &dev).unwrap();
    let ops: [fn(&Tensor) -> webtensor::Result<Tensor>; 4] =
        [Tensor::exp, Tensor::sin, Tensor::cos, Tensor::tanh];
    for op in ops {
        op(&x).unwrap().to_vec::<f32>().unwrap();
    }
    let start = dev.stats().pipelines_evicted;
    // With room for two, each of four kernels used in turn was evicted
    // since its last use.
    for round in 0..3 {
        for op in ops {
            op(&x).unwrap().to_vec::<f32>().unwrap();
        }
        let evicted = dev.stats().pipelines_evicted - start;
        assert_eq!(evicted, 4 * (round + 1), "round {round}");
        assert!(dev.stats().pipelines <= 2);
    }
}

#[test]
fn the_memory_cap_is_an_error_not_an_abort() {
    let Some(dev) = gpu() else { return };
    dev.set_memory_cap(Some(1 << 20));
    let small = Tensor::zeros([1000], DType::F32, &dev).unwrap();
    let err = Tensor::zeros([1 << 20], DType::F32, &dev).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("zeros") && msg.contains("1048576"), "{msg}");
    // A readback needs staging memory under the cap too.
    let big = Tensor::zeros([200_000], DType::F32, &dev).unwrap();
    let err = big.to_vec::<f32>().unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { op: "to_vec", .. }),
        "{err}"
    );
    // Dropping tensors frees room under the cap, and their buffers get reused.
    drop((small, big));
    let reused = dev.stats().buffers_reused;
    let half = Tensor::full([100_000], 3.0, DType::F32, &dev).unwrap();
    assert_eq!(half.to_vec::<f32>().unwrap(), vec![3.0; 100_000]);
    drop(half);
    let again = Tensor::zeros([100_000], DType::F32, &dev).unwrap();
    // A reused buffer is zeroed like a new one.
    assert_eq!(again.to_vec::<f32>().unwrap(), vec![0.0; 100_000]);
    assert!(dev.stats().buffers_reused > reused, "{:?}", dev.stats());
    drop(again);
    dev.set_memory_cap(None);
    dev.release_pooled_memory();
    assert_eq!(dev.stats().bytes_pooled, 0);
}

/// A request the cap refuses whatever goes leaves the idle buffers
/// pooled (they were all dropped first, for nothing); one that fits once
/// they go takes their room.
#[test]
fn a_request_the_cap_refuses_keeps_the_idle_buffers() {
    let Some(dev) = own_gpu(GpuOptions {
        memory_cap: Some(1 << 20),
        ..Default::default()
    }) else {
        return;
    };
    let live = Tensor::zeros([1 << 16], DType::F32, &dev).unwrap();
    let idle = Tensor::zeros([1 << 17], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    drop(idle);
    let pooled = dev.stats().bytes_pooled;
    assert!(pooled >= 1 << 19, "{:?}", dev.stats());
    let err = Tensor::from_vec(vec![0.0f32; 1 << 18], [1 << 18], &dev).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert_eq!(dev.stats().bytes_pooled, pooled);
    let fits = Tensor::full([3 << 16], 1.0, DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    assert_eq!(dev.stats().bytes_pooled, 0);
    drop((live, fits));
}

#[test]
fn scheduler_settings_are_harmless_on_the_cpu() {
    let cpu = Device::cpu();
    cpu.set_flush_threshold(1);
    cpu.set_fusion(true);
    cpu.set_memory_cap(Some(1));
    cpu.release_pooled_memory();
    assert_eq!((cpu.flush_threshold(), cpu.fusion()), (0, false));
    cpu.flush().unwrap();
    // No cap applies to host memory.
    let t = Tensor::zeros([1000], DType::F32, &cpu).unwrap();
    let sum: f32 = read_f32(&t.add_scalar(1.0).unwrap()).iter().sum();
    assert_eq!(sum, 1000.0);
    assert_eq!(cpu.stats(), DeviceStats::default());
}

/// In-place ops on one view fuse into one kernel (each overwrites what the
/// one before it wrote); a read of the view, a write through another view
/// or a read of other elements in between keeps the order, and every
/// result equals the CPU's.
#[test]
fn in_place_chains_on_one_view_fuse_and_keep_their_order() {
    let Some(dev) = batched_gpu(true) else { return };
    let chain = |dev: &Device| {
        let x = Tensor::arange(0.0f32, 48.0, 1.0, dev)
            .unwrap()
            .reshape([6, 8])
            .unwrap();
        let v = x.slice(s![1.., ..;2]).unwrap();
        for _ in 0..10 {
            v.add_scalar_(1.0).unwrap();
            v.mul_scalar_(0.5).unwrap();
        }
        x
    };
    dev.sync().unwrap();
    let before = dev.stats();
    let x = chain(&dev);
    dev.sync().unwrap();
    let d = delta(before, dev.stats());
    assert_eq!(read_f32(&x), read_f32(&chain(&Device::cpu())));
    // The 20 in-place ops take a few kernels (as many as the node limit of
    // one program needs), not 20.
    assert_eq!(d.ops_recorded, 20, "{d:?}");
    assert!(d.dispatches <= 4, "{d:?}");
    assert_eq!(d.fused_ops + d.dispatches, 20, "{d:?}");

    // Breaks in the chain: a reader in between sees the value of its turn,
    // a write through an overlapping view and a read of other elements
    // (x += x.flip()) are never folded across. (Long enough for several
    // workgroups, so that a wrong fold would race.)
    let broken = |dev: &Device| {
        let x = Tensor::arange(0.0f32, 4096.0, 1.0, dev).unwrap();
        x.add_scalar_(1.0).unwrap();
        let seen = x.mul_scalar(2.0).unwrap();
        x.add_scalar_(1.0).unwrap();
        x.slice(s![..;2]).unwrap().mul_scalar_(3.0).unwrap();
        x.add_scalar_(1.0).unwrap();
        x.add_(&x.flip(&[0]).unwrap()).unwrap();
        x.add_scalar_(1.0).unwrap();
        x.slice(s![1..])
            .unwrap()
            .add_(&x.slice(s![..4095]).unwrap())
            .unwrap();
        [read_f32(&seen), read_f32(&x)]
    };
    assert_eq!(broken(&dev), broken(&Device::cpu()));
}

/// A loop of scalar ops (`x = x + 1`, `x += 1`, and a chain of sixteen
/// different scalars) fuses into programs of many ops each: a program
/// holds each distinct scalar once, so the repeated `1.0` does not fill its
/// scalar slots; the results equal the CPU's.
#[test]
fn programs_split_where_their_reads_outgrow_one_kernel() {
    let Some(dev) = batched_gpu(true) else { return };
    let inputs = |dev: &Device| {
        let base = Tensor::arange(0.0f32, 64.0, 1.0, dev)
            .unwrap()
            .reshape([8, 8])
            .unwrap();
        let own: Vec<Tensor> = (0..12)
            .map(|k| base.add_scalar(k as f32).unwrap())
            .collect();
        (base, own)
    };
    // Twelve tensors of their own, then six views of one tensor: more
    // reads than one program binds (eight operands, the destination
    // included), in a chain whose intermediates all fold.
    let sum = |base: &Tensor, own: &[Tensor]| {
        let mut acc = own[0].add(&own[1]).unwrap();
        for t in &own[2..] {
            acc = acc.add(t).unwrap();
        }
        let t = base.t();
        let views = [
            t.clone(),
            base.flip(&[0]).unwrap(),
            base.flip(&[1]).unwrap(),
            t.flip(&[0]).unwrap(),
            t.flip(&[1]).unwrap(),
            base.flip(&[0, 1]).unwrap(),
        ];
        for v in &views {
            acc = acc.add(v).unwrap();
        }
        acc
    };
    let (base, own) = inputs(&dev);
    dev.sync().unwrap();
    let before = dev.stats();
    let got = read_f32(&sum(&base, &own));
    let d = delta(before, dev.stats());
    let (cpu_base, cpu_own) = inputs(&Device::cpu());
    assert_eq!(got, read_f32(&sum(&cpu_base, &cpu_own)));
    assert_eq!(d.ops_recorded, 17, "{d:?}");
    // At most seven reads a program: six adds each, at least three kernels.
    assert!((3..=5).contains(&d.dispatches), "{d:?}");
    assert_eq!(d.dispatches + d.fused_ops, 17, "{d:?}");
}

#[test]
fn scalar_loops_fuse_into_long_programs() {
    let Some(dev) = batched_gpu(true) else { return };
    let run = |dev: &Device, in_place: bool| {
        let x = Tensor::arange(0.0f32, 300.0, 1.0, dev).unwrap();
        let mut y = x.clone();
        for k in 0..1000 {
            if in_place {
                x.add_scalar_(1.0).unwrap();
            } else {
                y = y.add_scalar(1.0).unwrap();
            }
            if k % 100 == 99 {
                // Sixteen scalars in a row, each its own slot.
                for s in 0..16 {
                    y = y.mul_scalar(1.0 + s as f32 / 64.0).unwrap();
                }
            }
        }
        [read_f32(&x), read_f32(&y)]
    };
    for in_place in [false, true] {
        dev.sync().unwrap();
        let before = dev.stats();
        let got = run(&dev, in_place);
        let d = delta(before, dev.stats());
        assert_eq!(got, run(&Device::cpu(), in_place), "in place {in_place}");
        assert_eq!(d.ops_recorded, 1160, "{d:?}");
        // A program holds 128 nodes: some 40 of these ops (8 scalar
        // slots, each 1.0 counted again, made it 8).
        assert!(d.dispatches <= 48, "in place {in_place}: {d:?}");
    }
}

/// A loop that runs the same dispatches on the same buffers (the pool
/// hands them back) reuses their bind groups instead of creating one per
/// dispatch, and gives the right values; releasing pooled memory drops the
/// kept groups with the buffers.
#[test]
fn a_loop_reuses_its_bind_groups() {
    let Some(dev) = gpu() else { return };
    let cpu = Device::cpu();
    let step = |x: &Tensor, w: &Tensor| -> webtensor::Result<Tensor> {
        let y = x.matmul(w)?.add_scalar(1.0)?;
        let s = y.sum_keepdim(1)?;
        y.div(&s.abs()?.add_scalar(1.0)?)
    };
    let run = |dev: &Device, rounds: usize| -> (Vec<f32>, Vec<DeviceStats>) {
        let w =
            Tensor::from_vec((0..64).map(|i| (i % 7) as f32 - 3.0).collect(), [8, 8], dev).unwrap();
        let mut x =
            Tensor::from_vec((0..32).map(|i| (i % 5) as f32).collect(), [4, 8], dev).unwrap();
        let mut stats = vec![dev.stats()];
        for _ in 0..rounds {
            x = step(&x, &w).unwrap();
            dev.sync().unwrap();
            stats.push(dev.stats());
        }
        (x.to_vec().unwrap(), stats)
    };
    let (want, _) = run(&cpu, 16);
    let (got, stats) = run(&dev, 16);
    assert_close(&got, &want, 1e-5, "the loop");
    // The pool hands the loop's buffers round in a cycle of a few rounds;
    // once round, every dispatch finds its group kept.
    for pair in stats[8..].windows(2) {
        let d = delta(pair[0], pair[1]);
        assert!(d.dispatches > 0, "{d:?}");
        assert_eq!(d.bind_groups_created, 0, "{d:?}");
        assert_eq!(d.bind_groups_reused, d.dispatches, "{d:?}");
    }
    dev.release_pooled_memory();
    let before = dev.stats();
    let x = Tensor::ones([4, 8], DType::F32, &dev).unwrap();
    x.add_scalar(1.0).unwrap().to_vec::<f32>().unwrap();
    let d = delta(before, dev.stats());
    assert_eq!(d.bind_groups_reused, 0, "{d:?}");
}

/// One flush binding more distinct buffer sets than the bind-group cache
/// keeps (1024): every dispatch gets its group (the cache then drops its
/// least recently used), and every result is right, twice over.
#[test]
fn a_flush_past_the_bind_group_cache_size_stays_right() {
    let Some(dev) = own_gpu(GpuOptions {
        flush_threshold: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    let values = |k: usize| -> Vec<f32> { (0..4).map(|i| (k * 4 + i) as f32).collect() };
    let inputs: Vec<Tensor> = (0..1500)
        .map(|k| Tensor::from_vec(values(k), [4], &dev).unwrap())
        .collect();
    for round in 0..2 {
        let before = dev.stats();
        let sums: Vec<Tensor> = inputs.iter().map(|x| x.sum(0).unwrap()).collect();
        dev.sync().unwrap();
        let d = delta(before, dev.stats());
        assert_eq!(d.submits, 1, "round {round}: {d:?}");
        assert!(d.dispatches >= 1500, "round {round}: {d:?}");
        assert_eq!(
            d.bind_groups_created + d.bind_groups_reused,
            d.dispatches,
            "{d:?}"
        );
        if round == 0 {
            assert_eq!(d.bind_groups_created, d.dispatches, "{d:?}");
        }
        for (k, s) in sums.iter().enumerate() {
            let want: f32 = values(k).iter().sum();
            assert_eq!(
                s.to_vec::<f32>().unwrap(),
                vec![want],
                "round {round}, sum {k}"
            );
        }
    }
}

/// One op a submit, cycling through more distinct parameter blocks than
/// the parameter arena remembers (32 regions) and back: blocks found again
/// are bound where they were written, the others are written over old
/// ones, and one large batch grows the arena in between; every result is
/// right.
#[test]
fn parameter_blocks_reused_across_submits_stay_right() {
    let Some(dev) = own_gpu(GpuOptions {
        flush_threshold: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    // Each readback below submits the one op recorded before it.
    let values: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let x = Tensor::from_vec(values.clone(), [64], &dev).unwrap();
    let m = Tensor::from_vec(values.clone(), [8, 8], &dev).unwrap();
    let check = |n: usize, round: usize| {
        let sum = x.narrow(0, 0, n).unwrap().sum(0).unwrap();
        let want: f32 = values[..n].iter().sum();
        assert_eq!(
            sum.to_vec::<f32>().unwrap(),
            vec![want],
            "round {round}, n {n}"
        );
        let k = 1 + n % 8;
        let p = m
            .narrow(1, 0, k)
            .unwrap()
            .matmul(&m.narrow(0, 0, k).unwrap());
        let want: Vec<f32> = (0..64)
            .map(|e| {
                (0..k)
                    .map(|j| values[e / 8 * 8 + j] * values[j * 8 + e % 8])
                    .sum()
            })
            .collect();
        assert_eq!(
            p.unwrap().to_vec::<f32>().unwrap(),
            want,
            "round {round}, k {k}"
        );
    };
    for round in 0..3 {
        for n in 1..=40 {
            check(n, round);
        }
        if round == 1 {
            // 1,200 blocks in one submit: past the arena's first 64 KiB
            // whatever the device's uniform offset alignment.
            let sums: Vec<Tensor> = (0..1200)
                .map(|i| x.narrow(0, 0, 1 + i % 64).unwrap().sum(0).unwrap())
                .collect();
            for (i, sum) in sums.iter().enumerate() {
                let want: f32 = values[..1 + i % 64].iter().sum();
                assert_eq!(sum.to_vec::<f32>().unwrap(), vec![want], "batched sum {i}");
            }
        }
    }
}

/// webtensor's kernels run without wgpu's runtime checks unless a device
/// asks for them; both compute the same bits, and `info()` says which.
#[test]
fn kernels_compute_alike_with_and_without_runtime_checks() {
    let Some(plain) = own_gpu(GpuOptions {
        runtime_checks: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let checked = own_gpu(GpuOptions {
        runtime_checks: Some(true),
        ..Default::default()
    })
    .expect("a second GPU device");
    assert!(!plain.info().runtime_checks && checked.info().runtime_checks);
    assert!(checked.info().to_string().contains("runtime checks on"));
    let run = |dev: &Device| -> webtensor::Result<Vec<Vec<f32>>> {
        let a = Tensor::from_vec(common::noise(37 * 29, 1), [37, 29], dev)?;
        let b = Tensor::from_vec(common::noise(41 * 29, 2), [41, 29], dev)?;
        let f16 = a.to_dtype(DType::F16)?;
        let index = Tensor::from_slice(&[3i32, 0, 36, 5], [4], dev)?;
        let outs = [
            a.matmul(&b.t())?,
            f16.matmul(&b.t().to_dtype(DType::F16)?)?,
            a.sum(0)?,
            a.t().cumsum(1)?,
            a.softmax(-1)?,
            a.sort(1, webtensor::SortOrder::Descending)?,
            a.take(&index, 0)?,
            &a.slice(s![..;-2, 1..;3])? * 2.0 + 1.0,
        ];
        outs.iter().map(read_f32).map(Ok).collect()
    };
    assert_eq!(run(&plain).unwrap(), run(&checked).unwrap());
}

/// A flush of one elementwise op reuses the plan of the previous one when
/// the op matches it (see `scheduler/one_op.rs`). Each case below runs
/// twice in a row (the second a reuse) after a case that differs from it
/// in one thing the plan depends on (an offset, a stride, a dtype, a
/// shared storage or buffer, a buffer's size, a scalar's value or slot,
/// writing in place), and every result equals the CPU's, on native and
/// packed f16 devices alike.
#[test]
fn one_op_flushes_reuse_plans_only_for_the_same_op() {
    type Case = (&'static str, fn(&[Tensor]) -> webtensor::Result<Tensor>);
    fn narrow(t: &Tensor, start: usize) -> webtensor::Result<Tensor> {
        t.narrow(0, start, 1024)
    }
    let cases: Vec<Case> = vec![
        ("add", |t| narrow(&t[0], 0)?.add(&narrow(&t[1], 0)?)),
        ("add i32", |t| narrow(&t[3], 0)?.add(&narrow(&t[4], 0)?)),
        ("add at offset 1", |t| {
            narrow(&t[0], 1)?.add(&narrow(&t[1], 0)?)
        }),
        ("add at offset 4", |t| {
            narrow(&t[0], 4)?.add(&narrow(&t[1], 4)?)
        }),
        ("add on a smaller buffer", |t| t[2].add(&narrow(&t[1], 0)?)),
        ("add to itself", |t| {
            narrow(&t[0], 0)?.add(&narrow(&t[0], 0)?)
        }),
        ("add to itself shifted", |t| {
            narrow(&t[0], 0)?.add(&narrow(&t[0], 4)?)
        }),
        ("add transposed", |t| {
            let m = narrow(&t[0], 0)?.reshape([32, 32])?;
            m.t().add(&narrow(&t[1], 0)?.reshape([32, 32])?)
        }),
        ("add to a transposed", |t| {
            let m = narrow(&t[0], 0)?.reshape([32, 32])?;
            m.add(&narrow(&t[1], 0)?.reshape([32, 32])?.t())
        }),
        ("add stepped", |t| {
            t[0].slice(s![..;2])?.add(&t[1].slice(s![1..;2])?)
        }),
        ("add reversed", |t| t[0].flip(&[0])?.add(&t[1])),
        ("add a broadcast row", |t| {
            let m = narrow(&t[0], 0)?.reshape([32, 32])?;
            m.add(&t[1].narrow(0, 3, 32)?)
        }),
        ("add 1", |t| narrow(&t[0], 0)?.add_scalar(1.0)),
        ("add 2.5", |t| narrow(&t[0], 0)?.add_scalar(2.5)),
        ("add 2.5 at offset 2", |t| narrow(&t[0], 2)?.add_scalar(2.5)),
        ("clamp to -3, 3", |t| t[0].clamp(-3.0, 3.0)),
        ("clamp to 2, 2", |t| t[0].clamp(2.0, 2.0)),
        ("clamp to 1, 5", |t| t[0].clamp(1.0, 5.0)),
        ("add f16", |t| narrow(&t[5], 0)?.add(&narrow(&t[6], 0)?)),
        ("where", |t| Tensor::where_cond(&t[7], &t[0], &t[1])),
        ("where, one operand twice", |t| {
            Tensor::where_cond(&t[7], &t[0], &t[0])
        }),
        ("add in place", |t| {
            let c = t[0].add_scalar(0.0)?;
            c.add_(&t[1])?;
            Ok(c)
        }),
        ("add in place to itself", |t| {
            let c = t[0].add_scalar(0.0)?;
            c.add_(&c)?;
            Ok(c)
        }),
        ("add in place, overlapping", |t| {
            let c = t[0].add_scalar(0.0)?;
            c.narrow(0, 1, 1029)?.add_(&c.narrow(0, 0, 1029)?)?;
            Ok(c)
        }),
    ];
    let inputs = |dev: &Device| -> Vec<Tensor> {
        let a: Vec<f32> = (0..1030).map(|i| i as f32 * 0.5 - 100.0).collect();
        let b: Vec<f32> = (0..1030).map(|i| ((i * 7) % 31) as f32).collect();
        let a = Tensor::from_vec(a, [1030], dev).unwrap();
        let b = Tensor::from_vec(b, [1030], dev).unwrap();
        let small = Tensor::from_vec((0..1024).map(|i| i as f32).collect(), [1024], dev);
        let as_dtype = |t: &Tensor, d| t.to_dtype(d).unwrap();
        vec![
            as_dtype(&a, DType::F32),
            b.clone(),
            small.unwrap(),
            as_dtype(&a.mul_scalar(2.0).unwrap(), DType::I32),
            as_dtype(&b, DType::I32),
            as_dtype(&a, DType::F16),
            as_dtype(&b, DType::F16),
            a.gt_scalar(0.0).unwrap(),
        ]
    };
    let cpu = Device::cpu();
    let on_cpu = inputs(&cpu);
    let want: Vec<Vec<f32>> = cases
        .iter()
        .map(|(_, case)| read_f32(&case(&on_cpu).unwrap()))
        .collect();
    for packed in [false, true] {
        let Some(dev) = own_gpu(GpuOptions {
            flush_threshold: Some(1),
            force_packed_f16: packed,
            elementwise_run: packed.then_some(4),
            ..Default::default()
        }) else {
            return;
        };
        let on_gpu = inputs(&dev);
        let mut order: Vec<usize> = (0..cases.len()).collect();
        for round in 0..2 {
            for &c in &order {
                let (name, case) = cases[c];
                for run in 0..2 {
                    let got = read_f32(&case(&on_gpu).unwrap());
                    assert_eq!(
                        got, want[c],
                        "{name}, round {round}, run {run}, packed {packed}"
                    );
                }
            }
            order.reverse();
        }
        // More distinct ops than the plans kept: the oldest are replaced.
        for round in 0..3 {
            for n in 1..=40 {
                let got = on_gpu[0].narrow(0, n, 8 * n).unwrap().mul_scalar(2.0);
                let want: Vec<f32> = (n..9 * n).map(|i| i as f32 - 200.0).collect();
                assert_eq!(read_f32(&got.unwrap()), want, "round {round}, n {n}");
            }
        }
    }
}

/// A one-op flush whose result was dropped unread runs nothing, even when
/// the op matches the plan the last one-op flush kept.
#[test]
fn a_dropped_result_is_not_computed_by_a_kept_plan() {
    let Some(dev) = own_gpu(GpuOptions {
        flush_threshold: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    let a = Tensor::from_vec(vec![1.0f32; 256], [256], &dev).unwrap();
    let b = Tensor::from_vec(vec![2.0f32; 256], [256], &dev).unwrap();
    assert_eq!(a.add(&b).unwrap().to_vec::<f32>().unwrap(), vec![3.0; 256]);
    let before = dev.stats();
    drop(a.add(&b).unwrap());
    dev.sync().unwrap();
    let d = delta(before, dev.stats());
    assert_eq!((d.dead_ops, d.dispatches), (1, 0), "{d:?}");
    assert_eq!(a.add(&b).unwrap().to_vec::<f32>().unwrap(), vec![3.0; 256]);
}

#[test]
fn uploads_never_write_a_buffer_an_unsubmitted_op_still_reads() {
    // Issue 44: under threads, an upload took a buffer released in a newer
    // batch than the one it had read as open, and wrote it before that
    // batch's reader ran. Here one thread uploads a tensor, records an op
    // reading it, drops it and reads the result, while others upload
    // sentinel tensors of the same size and drop them, and flush.
    let Some(dev) = gpu() else {
        return;
    };
    const N: usize = 4096;
    let rounds = if common::long_tests() { 4000 } else { 400 };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..2 {
            let (dev, stop) = (&dev, &stop);
            scope.spawn(move || {
                let sentinel = vec![-1.0e9f32 - t as f32; N];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    drop(Tensor::from_slice(&sentinel, [N], dev).unwrap());
                    if t == 1 {
                        dev.sync().unwrap();
                    }
                }
            });
        }
        let check = scope.spawn(|| {
            for k in 0..rounds {
                let x = Tensor::full([N], k as f32, DType::F32, &dev).unwrap();
                let x = Tensor::from_slice(&read_f32(&x), [N], &dev).unwrap();
                let y = x.add_scalar(1.0).unwrap();
                drop(x);
                let got = read_f32(&y);
                if let Some(bad) = got.iter().find(|&&v| v != k as f32 + 1.0) {
                    return Err(format!("round {k}: read {bad}"));
                }
            }
            Ok(())
        });
        let result = check.join().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        result.unwrap();
    });
}

#[test]
fn issue_44_composed_ops_keep_their_kernel_budget() {
    // The ops issue 44 recomposed, pinned at what they dispatch today so
    // that they cannot grow unseen (issue 45 is to make them single
    // kernels): complex division (Smith's form scaled to stay in f32's
    // normal range, 72 ops: 26 kernels, where the unscaled form, wrong on
    // GPUs that flush subnormals, took 12, and the form before a dividend
    // near f32's end was scaled down 23), the magnitude
    // (a hypotenuse, 18), a global adaptive average (a reduction and a
    // divide per axis) and a bilinear resize with an axis kept (now one
    // kernel).
    let Some(dev) = batched_gpu(true) else { return };
    let z: Vec<webtensor::Complex32> = (0..64)
        .map(|k| webtensor::Complex32::new(k as f32, 1.0 - k as f32))
        .collect();
    let a = Tensor::from_complex(&z, [64], &dev).unwrap();
    let b = a.flip(&[0]).unwrap();
    let img = Tensor::ones([2, 3, 8, 8], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    let run = |f: &dyn Fn() -> Tensor| {
        let before = dev.stats();
        let _kept = f(); // alive until the sync: a result dropped unread never runs
        dev.sync().unwrap();
        delta(before, dev.stats())
    };
    let d = run(&|| a.div(&b).unwrap());
    assert!(d.submits == 1 && d.dispatches <= 26, "div: {d:?}");
    let d = run(&|| a.abs().unwrap());
    assert!(d.submits == 1 && d.dispatches <= 5, "abs: {d:?}");
    let d = run(&|| img.adaptive_avg_pool2d(1).unwrap());
    assert!(d.submits == 1 && d.dispatches <= 4, "adaptive: {d:?}");
    // One kernel since issue 45 (tests/kernel_budgets.rs has its budget).
    let d = run(&|| img.resize([8, 16], webtensor::Resize::Bilinear).unwrap());
    let one = d.submits == 1 && d.dispatches == 1 && d.bytes_uploaded == 0;
    assert!(one, "resize: {d:?}");
}

#[test]
fn a_flush_survives_results_dropped_on_another_thread_while_it_encodes() {
    // A flush of a batch of one elementwise op reuses a kept plan; it once
    // checked that the result's tensor was alive and then took its buffer,
    // and a thread dropping the result between the two made the flush fail
    // with an internal error ("a kept plan needs a temporary"); a drop
    // between the check and the take inside the claim left a buffer that
    // nobody gave back. Here one thread records sums and drops them while
    // another flushes.
    let Some(dev) = batched_gpu(true) else { return };
    let a = Tensor::from_vec(vec![1.0f32; 64], [64], &dev).unwrap();
    let b = Tensor::from_vec(vec![2.0f32; 64], [64], &dev).unwrap();
    assert_eq!(read_f32(&a.add(&b).unwrap()), vec![3.0; 64]);
    let live = dev.stats().bytes_live;
    let rounds = if common::long_tests() {
        200_000
    } else {
        20_000
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let flusher = scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                dev.flush()?;
            }
            Ok::<(), Error>(())
        });
        for _ in 0..rounds {
            drop(a.add(&b).unwrap());
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        flusher.join().unwrap().unwrap();
    });
    dev.sync().unwrap();
    // Every result's buffer went back to the pool: a take that raced the
    // drop once kept one for good.
    assert_eq!(dev.stats().bytes_live, live);
    assert_eq!(read_f32(&a.add(&b).unwrap()), vec![3.0; 64]);
}

/// A tensor of `empty_like` whose only reader's result was dropped (the
/// read skipped as dead at the flush, so nothing ever took its buffer)
/// reads back its unspecified values, as any empty tensor does; it was an
/// internal error.
#[test]
fn an_empty_tensor_whose_only_reader_was_dropped_reads_back() {
    let Some(dev) = batched_gpu(true) else { return };
    let x = Tensor::ones([5], DType::F32, &dev).unwrap();
    let e = x.empty_like().unwrap();
    drop(x.add(&e).unwrap());
    assert_eq!(e.to_vec::<f32>().unwrap().len(), 5);
    // Written afterwards, it holds what was written.
    e.fill_(2.0).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), [2.0; 5]);
}

/// A fused chain over a tensor past one binding runs as several windowed
/// dispatches of one kernel: its ops are counted as folded once (each
/// window counted them again), so `fused_kernels` is 1.
#[test]
fn a_windowed_fused_chain_counts_its_fused_ops_once() {
    let Some(dev) = own_gpu(GpuOptions {
        fusion: Some(true),
        flush_threshold: Some(256),
        max_binding_bytes: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::arange(0.0f32, 4096.0, 1.0, &dev).unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    let y = x
        .mul_scalar(2.0)
        .unwrap()
        .add_scalar(1.0)
        .unwrap()
        .neg()
        .unwrap();
    dev.sync().unwrap();
    let d = delta(before, dev.stats());
    assert!(d.dispatches >= 4, "{d:?}");
    assert_eq!((d.fused_kernels, d.fused_ops), (1, 2), "{d:?}");
    assert_eq!(read_f32(&y)[4095], -8191.0);
}
