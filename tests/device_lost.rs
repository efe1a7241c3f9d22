//! Losing the GPU on purpose (`wgpu::Device::destroy`) at every point: each
//! affected call fails cleanly with `Error::DeviceLost`, nothing hangs (a
//! watchdog bounds every wait), nothing panics, and the device's listeners
//! hear of it once.

mod common;

use common::lost::{destroy as lose, heard_within, within_watchdog};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use webtensor::{Conv, CustomKernel, DType, Device, Error, Fft, GpuOptions, Tensor};

/// A fresh GPU device of this test's own (each test destroys one).
fn own(flush_threshold: usize) -> Option<Device> {
    common::own_gpu(GpuOptions {
        flush_threshold: Some(flush_threshold),
        fusion: Some(true),
        ..Default::default()
    })
}

/// Asserts that `result` is `Error::DeviceLost` naming `op`, with a reason.
#[track_caller]
fn assert_lost<T: std::fmt::Debug>(result: webtensor::Result<T>, op: &str) {
    match result {
        Err(Error::DeviceLost { op: got, reason }) => {
            assert_eq!(got, op, "the error names the call");
            assert!(!reason.is_empty(), "{op}: the error says why");
            let message = Error::DeviceLost { op: got, reason }.to_string();
            assert!(message.contains("lost"), "{message}");
        }
        other => panic!("{op}: expected Error::DeviceLost, got {other:?}"),
    }
}

/// Counts the calls of a listener given to `Device::on_lost`, and keeps the
/// last reason.
fn listen(dev: &Device) -> (Arc<AtomicUsize>, Arc<std::sync::Mutex<String>>) {
    let heard = Arc::new(AtomicUsize::new(0));
    let reason = Arc::new(std::sync::Mutex::new(String::new()));
    let (h, r) = (heard.clone(), reason.clone());
    dev.on_lost(move |why| {
        h.fetch_add(1, Ordering::SeqCst);
        *r.lock().unwrap() = why.to_string();
    });
    (heard, reason)
}

#[test]
fn the_cpu_is_never_lost() {
    let cpu = Device::cpu();
    let (heard, _) = listen(&cpu);
    let a = Tensor::from_slice(&[1.0f32, 2.0], [2], &cpu).unwrap();
    assert_eq!(a.add(&a).unwrap().to_vec::<f32>().unwrap(), [2.0, 4.0]);
    cpu.sync().unwrap();
    assert!(!cpu.is_lost());
    assert_eq!(heard.load(Ordering::SeqCst), 0);
}

#[test]
fn every_call_after_the_loss_fails_at_once_naming_itself() {
    let Some(dev) = own(1024) else {
        return;
    };
    let (heard, reason) = listen(&dev);
    let cpu = Device::cpu();
    let host = Tensor::rand([8, 8], DType::F32, 1, &cpu).unwrap();
    let a = host.to_device(&dev).unwrap();
    let b = a.exp().unwrap();
    let kernel = CustomKernel::new(
        "twice",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = 2.0 * x;",
    )
    .unwrap();
    // Buffers handed out and a captured step, made while the device lives.
    let handed = a.gpu_buffer().unwrap();
    let index = Tensor::from_slice(&[0i32, 2], [2], &dev).unwrap();
    let empty = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
    let no_complex = Tensor::from_complex(&[], [0], &dev).unwrap();
    let complex = Tensor::from_complex(&[webtensor::Complex32::new(1.0, 2.0)], [1], &dev).unwrap();
    let held = a.clone();
    let mut graph = dev.capture(move || held.add_(&held).map(drop)).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap().len(), 64);
    assert!(!dev.is_lost());

    let outcome = within_watchdog("the first sync after the loss", {
        let dev = dev.clone();
        move || {
            lose(&dev);
            dev.sync()
        }
    });
    assert_lost(outcome, "sync");
    assert!(dev.is_lost());
    heard_within(&heard, 1, "the listener hears once");
    assert!(
        reason.lock().unwrap().contains("destroyed"),
        "{}",
        reason.lock().unwrap()
    );

    // Every family, upload, readback, interop call and replay: at once.
    assert_lost(a.add(&b), "add");
    assert_lost(a.add_scalar(1.0), "add");
    assert_lost(a.exp(), "exp");
    assert_lost(a.matmul(&b), "matmul");
    assert_lost(a.sum(..), "sum");
    assert_lost(a.softmax(-1), "softmax");
    assert_lost(a.cumsum(0), "cumsum");
    assert_lost(a.sort(-1, webtensor::SortOrder::Ascending), "sort");
    assert_lost(a.fft(Fft::along(-1)), "fft");
    assert_lost(a.index_select(&index, 0), "index_select");
    let image = host.reshape([1, 1, 8, 8]).unwrap();
    let weight = Tensor::ones([2, 1, 3, 3], DType::F32, &cpu).unwrap();
    assert_lost(
        image
            .to_device(&dev)
            .and_then(|x| x.conv2d(&weight, &Conv::new())),
        "to_device",
    );
    assert_lost(kernel.call(&[&a], &[]), "CustomKernel::call");
    assert_lost(b.add_(&a), "add");
    assert_lost(b.to_vec::<f32>(), "to_vec");
    // A view's readback names the call, not the copy it makes first.
    let e = a.flip(&[0]).unwrap().to_vec::<f32>().unwrap_err();
    assert!(matches!(e, Error::DeviceLost { op: "to_vec", .. }), "{e:?}");
    assert_lost(b.to_device(&cpu), "to_device");
    // Empty ones too (they read nothing, and were Ok).
    assert_lost(empty.to_vec::<f32>(), "to_vec");
    assert_lost(a.narrow(0, 2, 0).unwrap().to_vec::<f32>(), "to_vec");
    assert_lost(no_complex.to_complex_vec(), "to_complex_vec");
    assert_lost(complex.to_complex_vec(), "to_complex_vec");
    assert_lost(empty.to_device(&cpu), "to_device");
    assert_lost(pollster::block_on(empty.to_vec_async::<f32>()), "to_vec");
    assert_lost(b.checkpoint(), "checkpoint");
    assert_lost(host.to_device(&dev), "to_device");
    assert_lost(Tensor::zeros([4], DType::F32, &dev), "zeros");
    assert_lost(Tensor::from_slice(&[1.0f32; 4], [4], &dev), "from_slice");
    assert_lost(a.gpu_buffer(), "gpu_buffer");
    assert_lost(
        Tensor::from_gpu_buffer(&handed.buffer, DType::F32, [64], 0, &dev),
        "from_gpu_buffer",
    );
    assert_lost(graph.run(), "Graph::run");
    assert_lost(dev.capture(|| Ok(())), "Device::capture");
    assert_lost(dev.flush(), "flush");
    assert_lost(dev.sync(), "sync");
    assert_lost(dev.profile(|| Ok(())), "Device::profile");
    heard_within(&heard, 1, "once, after every call");
    // A listener that comes after the loss hears at once.
    let (late, _) = listen(&dev);
    assert_eq!(late.load(Ordering::SeqCst), 1);
    drop(handed);
}

#[test]
fn ops_recorded_in_an_open_batch_fail_at_their_readback() {
    let Some(dev) = own(1024) else {
        return;
    };
    let a = Tensor::rand([256], DType::F32, 2, &dev).unwrap();
    let mut pending = vec![a.exp().unwrap()];
    for _ in 0..8 {
        pending.push(pending.last().unwrap().mul_scalar(0.5).unwrap());
    }
    lose(&dev);
    // wgpu tells of the loss at the next poll: ops recorded before then are
    // accepted, and their readbacks fail.
    for _ in 0..8 {
        match pending.last().unwrap().add(&a) {
            Ok(t) => pending.push(t),
            Err(e) => panic!("recording before the loss is known: {e:?}"),
        }
    }
    let last = pending.pop().unwrap();
    let read = within_watchdog("a readback of the open batch", move || last.to_vec::<f32>());
    assert_lost(read, "to_vec");
    for t in &pending {
        assert_lost(t.to_vec::<f32>(), "to_vec");
    }
}

#[test]
fn a_loss_from_another_thread_during_readbacks_never_hangs() {
    let Some(dev) = own(1) else {
        return;
    };
    let (heard, _) = listen(&dev);
    let a = Tensor::rand([1 << 16], DType::F32, 3, &dev).unwrap();
    let reader = {
        let (a, dev) = (a.clone(), dev.clone());
        std::thread::spawn(move || {
            let mut rounds = 0u32;
            loop {
                let read = a.mul_scalar(2.0).and_then(|t| t.to_vec::<f32>());
                match read {
                    Ok(v) => assert_eq!(v.len(), 1 << 16),
                    Err(e) => return (rounds, e, dev.is_lost()),
                }
                rounds += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    lose(&dev);
    let (rounds, error, lost) = within_watchdog("readbacks racing the loss", move || {
        reader.join().expect("the reader panicked")
    });
    assert!(lost, "after {rounds} rounds: {error:?}");
    assert!(
        matches!(error, Error::DeviceLost { .. }),
        "after {rounds} rounds: {error:?}"
    );
    heard_within(&heard, 1, "a loss met by a reader");
}

#[test]
fn a_loss_between_replays_fails_the_next_run() {
    let Some(dev) = own(1024) else {
        return;
    };
    let x = Tensor::ones([32, 32], DType::F32, &dev).unwrap();
    let held = x.clone();
    let mut graph = dev
        .capture(move || held.mul_(&held.add_scalar(1.0)?).map(drop))
        .unwrap();
    for _ in 0..3 {
        graph.run().unwrap();
    }
    // x <- x (x + 1), at the capture and three runs: 1, 2, 6, 42, 1806.
    assert_eq!(x.to_vec::<f32>().unwrap()[0], 1806.0);
    lose(&dev);
    // The first run after the loss may be submitted before wgpu tells of
    // it; the sync after it cannot succeed.
    let _ = graph.run();
    let synced = within_watchdog("a sync after replays", {
        let dev = dev.clone();
        move || dev.sync()
    });
    assert_lost(synced, "sync");
    assert_lost(graph.run(), "Graph::run");
    assert_lost(x.to_vec::<f32>(), "to_vec");
}

#[test]
fn a_loss_inside_a_capture_fails_it_or_its_first_run() {
    let Some(dev) = own(1024) else {
        return;
    };
    let x = Tensor::ones([16], DType::F32, &dev).unwrap();
    let (held, lost_dev) = (x.clone(), dev.clone());
    let mut armed = true;
    let captured = dev.capture(move || {
        held.add_scalar_(1.0)?;
        if std::mem::take(&mut armed) {
            lose(&lost_dev);
        }
        held.mul_scalar_(2.0)
    });
    let run = captured.and_then(|mut g| {
        g.run()?;
        dev.sync()
    });
    assert!(
        matches!(run, Err(Error::DeviceLost { .. })),
        "capture or run: {run:?}"
    );
    assert!(dev.is_lost());
}

#[test]
fn a_loss_first_met_by_an_automatic_flush_a_profile_or_a_handed_buffer_is_the_loss() {
    // Each meets a loss wgpu has not told of yet, in a flush whose batch
    // needs a new buffer for its kernels' parameters (which the loss
    // refuses): the call fails with the loss, the device knows it is lost
    // (so a recovery recovers), and what the batch was to write reads as
    // lost. (They were `Error::Gpu`, and the device not lost.)
    for (case, op) in [
        ("a full batch", ""),
        ("a profile", "Device::profile"),
        ("a handed-out buffer", "gpu_buffer"),
    ] {
        // The full batch flushes itself; the others' batches wait.
        let threshold = if op.is_empty() { 1024 } else { 1 << 20 };
        let Some(dev) = own(threshold) else {
            return;
        };
        let x = Tensor::zeros([4], DType::F32, &dev).unwrap();
        let m = x.reshape([2, 2]).unwrap();
        let step = move || m.assign(&m.matmul(&m.t())?.softmax(-1)?);
        // The first product probes its kernel (a readback of its own).
        step().unwrap();
        dev.sync().unwrap();
        lose(&dev);
        let met = within_watchdog(case, {
            let (dev, x) = (dev.clone(), x.clone());
            move || {
                for _ in 0..3000 {
                    step()?;
                }
                match case {
                    "a full batch" => panic!("3000 steps recorded without a flush failing"),
                    "a profile" => dev.profile(|| Ok(())).map(drop),
                    _ => x.gpu_buffer().map(drop),
                }
            }
        });
        // (The full batch fails in whichever kernel filled it.)
        match op {
            "" => assert!(
                matches!(met, Err(Error::DeviceLost { .. })),
                "{case}: {met:?}"
            ),
            op => assert_lost(met, op),
        }
        assert!(dev.is_lost(), "{case}");
        assert_lost(x.to_vec::<f32>(), "to_vec");
        dev.recover().unwrap();
        assert!(!dev.is_lost(), "{case}: recovered");
    }
}

#[test]
fn a_first_product_that_meets_the_loss_in_its_probe_names_itself() {
    // A device's first product probes its kernel with a readback of its
    // own, which met the loss as `to_vec`.
    let Some(dev) = own(1024) else {
        return;
    };
    let x = Tensor::ones([2, 2], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    lose(&dev);
    let product = within_watchdog("a first product", move || x.matmul(&x).map(drop));
    assert_lost(product, "matmul");
}
