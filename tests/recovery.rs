//! Coming back from a lost GPU (`Device::recover`): the handle and its
//! clones run on a new device, with the settings changed on it; the lost
//! device's tensors stay lost, whichever way they are used, and never bind
//! on the new device; recoveries race safely; a GPU none can replace leaves
//! the handle on the CPU; the application's device is replaced by its own
//! new one (`tests/recovery_memory.rs`: a hundred cycles hold no memory).

mod common;

use common::lost::{assert_lost, heard_within, lose, within_watchdog};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use webtensor::{
    Conv, CustomKernel, DType, Device, Error, Fft, GgmlType, GpuOptions, MatmulTile, Pool, QTensor,
    Resize, Tensor,
};

fn own(options: GpuOptions) -> Option<Device> {
    common::own_gpu(options)
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// A sample of every family on `dev`, as values to compare with the CPU's.
fn sample(dev: &Device) -> Vec<Vec<f32>> {
    let cpu = Device::cpu();
    let host = Tensor::rand([8, 8], DType::F32, 7, &cpu).unwrap();
    let a = host.to_device(dev).unwrap();
    let index = Tensor::from_slice(&[3i32, 0, 7], [3], dev).unwrap();
    let kernel = CustomKernel::new(
        "twice_plus",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = 2.0 * x + 1.0;",
    )
    .unwrap();
    let t = a.transpose(0, 1).unwrap();
    vec![
        values(&a.add(&t).unwrap().exp().unwrap()),
        values(&a.matmul(&t).unwrap()),
        values(&a.sum(1).unwrap()),
        values(&a.softmax(-1).unwrap()),
        values(&a.cumsum(0).unwrap()),
        values(&a.sort(-1, webtensor::SortOrder::Ascending).unwrap()),
        values(&a.fft(Fft::along(-1)).unwrap().abs().unwrap()),
        values(&a.index_select(&index, 0).unwrap()),
        values(
            &a.reshape([1, 1, 8, 8])
                .unwrap()
                .conv2d(
                    &Tensor::from_slice(&[0.5f32, -1.0, 0.25, 2.0], [1, 1, 2, 2], dev).unwrap(),
                    &Conv::new(),
                )
                .unwrap(),
        ),
        values(
            &a.reshape([1, 1, 8, 8])
                .unwrap()
                .max_pool2d(&Pool::new(2))
                .unwrap(),
        ),
        values(
            &a.reshape([1, 1, 8, 8])
                .unwrap()
                .resize([5, 11], Resize::Bilinear)
                .unwrap(),
        ),
        values(&a.layer_norm(&[8], None, None, 1e-5).unwrap()),
        values(&a.gelu().unwrap()),
        values(
            &a.reshape([2, 32])
                .unwrap()
                .qmatmul(
                    &QTensor::quantize(
                        &Tensor::rand([4, 32], DType::F32, 9, &cpu).unwrap(),
                        GgmlType::Q8_0,
                    )
                    .unwrap()
                    .to_device(dev)
                    .unwrap(),
                )
                .unwrap(),
        ),
        // Custom kernels run on GPUs alone: the CPU's answer by ops.
        values(&if dev.is_gpu() {
            kernel.call(&[&t], &[]).unwrap()
        } else {
            t.mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap()
        }),
    ]
}

fn assert_sample_is_the_cpus(dev: &Device) {
    let want = sample(&Device::cpu());
    let got = sample(dev);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        common::assert_close(g, w, 1e-4, &format!("family {i} after the recovery"));
    }
}

#[test]
fn the_cpu_and_a_live_gpu_have_nothing_to_recover() {
    let cpu = Device::cpu();
    cpu.recover().unwrap();
    assert_eq!(cpu.recoveries(), 0);
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let a = Tensor::ones([4], DType::F32, &dev).unwrap();
    dev.recover().unwrap();
    assert_eq!(dev.recoveries(), 0);
    assert_eq!(dev.stats().recoveries, 0);
    assert!(!a.is_lost());
    assert_eq!(values(&a.add_scalar(1.0).unwrap()), [2.0; 4]);
}

#[test]
fn a_recovered_handle_runs_every_family_and_the_lost_tensors_stay_lost() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    // Settings changed on the handle carry over.
    dev.set_flush_threshold(7);
    dev.set_fusion(false);
    dev.set_matmul_tile(MatmulTile::Small);
    dev.set_memory_cap(Some(256 << 20));
    let heard = Arc::new(AtomicUsize::new(0));
    let h = heard.clone();
    dev.on_lost(move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    let clone = dev.clone();
    let old = Tensor::rand([8, 8], DType::F32, 3, &dev).unwrap();
    let old_view = old.transpose(0, 1).unwrap();
    let held = old.clone();
    let mut graph = dev.capture(move || held.add_scalar_(1.0)).unwrap();
    assert_sample_is_the_cpus(&dev);

    lose(&dev);
    heard_within(&heard, 1, "the first loss");
    within_watchdog("the recovery", {
        let dev = dev.clone();
        move || dev.recover()
    })
    .unwrap();
    assert!(
        !dev.is_lost() && !clone.is_lost(),
        "clones share the handle"
    );
    assert_eq!(dev.recoveries(), 1);
    assert_eq!(clone.recoveries(), 1);
    assert_eq!(dev, clone);
    assert_eq!(dev.flush_threshold(), 7);
    assert!(!dev.fusion());
    assert_eq!(dev.matmul_tile(), MatmulTile::Small);
    let stats = dev.stats();
    assert_eq!(stats.recoveries, 1);

    // The handle's new tensors run every family, on the clone too.
    assert_sample_is_the_cpus(&dev);
    assert_sample_is_the_cpus(&clone);

    // The lost tensors stay lost, whichever side of an op they are on:
    // none binds on the new device.
    let new = Tensor::rand([8, 8], DType::F32, 4, &dev).unwrap();
    assert!(old.is_lost() && old_view.is_lost() && !new.is_lost());
    assert_eq!(old.device(), &dev);
    assert_lost(old.to_vec::<f32>(), "to_vec");
    assert_lost(old.exp(), "exp of a lost tensor");
    assert_lost(old.add(&new), "lost + new");
    assert_lost(new.add(&old_view), "new + lost view");
    assert_lost(new.mul_(&old), "new *= lost");
    // A lost destination fails as lost, whatever its operands are.
    assert_lost(old.mul_(&new), "lost *= new");
    assert_lost(old.assign(&new), "lost <- new");
    assert_lost(old.copy_from(&new), "lost <- new, copied");
    let index = Tensor::from_slice(&[1i32, 0], [1, 2], &dev).unwrap();
    let src = Tensor::ones([1, 2], DType::F32, &dev).unwrap();
    assert_lost(old.scatter_(&index, &src, 0), "scatter into lost");
    assert_lost(
        new.scatter_(&index.to_dtype(DType::I32).unwrap(), &old, 0),
        "scatter of lost",
    );
    // No call hands a lost tensor back as if it held data.
    assert_lost(old.to_device(&dev), "to its own (recovered) handle");
    assert_lost(new.matmul(&old), "new @ lost");
    assert_lost(old.matmul(&new), "lost @ new");
    assert_lost(new.sum(0).and_then(|s| s.add(&old.sum(0)?)), "sums");
    assert_lost(old.to_device(&Device::cpu()), "to the CPU");
    assert_lost(graph.run(), "a step captured before the loss");
    assert_eq!(
        values(&new),
        values(&Tensor::rand([8, 8], DType::F32, 4, &Device::cpu()).unwrap()),
        "new tensors are untouched by the failed ops"
    );
    dev.sync().unwrap();

    // The new device's loss is heard too, and it recovers again.
    lose(&dev);
    heard_within(&heard, 2, "the recovered device's loss");
    dev.recover().unwrap();
    assert_eq!(dev.recoveries(), 2);
    assert!(new.is_lost());
    assert_sample_is_the_cpus(&dev);
}

#[test]
fn racing_recoveries_replace_the_lost_device_once() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    lose(&dev);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let dev = dev.clone();
            std::thread::spawn(move || dev.recover())
        })
        .collect();
    within_watchdog("racing recoveries", move || {
        for t in threads {
            t.join().expect("a recovery panicked").unwrap();
        }
    });
    assert_eq!(dev.recoveries(), 1, "one device replaced the lost one");
    assert_eq!(
        values(&Tensor::ones([3], DType::F32, &dev).unwrap()),
        [1.0; 3]
    );
}

#[test]
fn with_no_adapter_left_the_handle_goes_on_on_the_cpu() {
    let Some(dev) = own(GpuOptions {
        sabotage_recovery: true,
        ..Default::default()
    }) else {
        return;
    };
    let old = Tensor::ones([4], DType::F32, &dev).unwrap();
    lose(&dev);
    dev.recover().unwrap();
    assert!(dev.is_cpu() && !dev.is_gpu() && !dev.is_lost());
    assert_eq!(dev.recoveries(), 1);
    let info = dev.info();
    let reason = info.fallback_reason.clone().unwrap_or_default();
    assert!(reason.contains("lost"), "{info}");
    assert!(dev.to_string().contains("cpu"), "{dev}");
    // CPU tensors are one memory: the handle's mix with any CPU tensor.
    assert_eq!(dev, Device::cpu());
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4], &dev).unwrap();
    let b = Tensor::ones([4], DType::F32, &Device::cpu()).unwrap();
    assert_eq!(values(&a.add(&b).unwrap()), [2.0, 3.0, 4.0, 5.0]);
    assert_sample_is_the_cpus(&dev);
    // The lost GPU tensor never reaches a CPU kernel.
    assert!(old.is_lost());
    assert_lost(a.add(&old), "cpu + lost");
    assert_lost(old.add(&a), "lost + cpu");
    assert_lost(old.sum(0), "sum of lost");
    assert_lost(a.matmul(&old.reshape([4, 1]).unwrap()), "cpu @ lost");
    assert_lost(old.add_(&a), "lost += cpu");
    assert_lost(old.assign(&a), "lost <- cpu");
    let index = Tensor::from_slice(&[1i32, 0], [2], &dev).unwrap();
    assert_lost(
        old.scatter_(&index, &a.narrow(0, 0, 2).unwrap(), 0),
        "scatter into lost",
    );
    assert_lost(old.to_device(&Device::cpu()), "to the CPU it equals");
    assert_lost(old.to_device(&dev), "to its own handle, on the CPU");
    // It stays the CPU: a later recovery has nothing to do.
    dev.recover().unwrap();
    assert_eq!(dev.recoveries(), 1);
    let (info, device, queue) = app_device();
    assert!(matches!(
        dev.recover_with(&info, device, queue),
        Err(Error::Argument { .. })
    ));
}

/// An application's own wgpu device, with its adapter's info.
fn app_device() -> (wgpu::AdapterInfo, wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::PRIMARY,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("an adapter");
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .expect("a device");
    (adapter.get_info(), device, queue)
}

#[test]
fn the_applications_device_is_replaced_by_its_own_new_one() {
    if common::gpu().is_none() {
        return;
    }
    let (info, device, queue) = app_device();
    let dev = Device::from_wgpu(&info, device.clone(), queue, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let old = Tensor::ones([4], DType::F32, &dev).unwrap();
    device.destroy();
    let synced = within_watchdog("the sync after the loss", {
        let dev = dev.clone();
        move || dev.sync()
    });
    assert!(
        matches!(synced, Err(Error::DeviceLost { .. })),
        "{synced:?}"
    );
    // webtensor cannot open the application's device again.
    match dev.recover() {
        Err(Error::Argument { op, msg }) => {
            assert_eq!(op, "Device::recover");
            assert!(msg.contains("recover_with"), "{msg}");
        }
        other => panic!("expected Error::Argument, got {other:?}"),
    }
    let (info, device, queue) = app_device();
    dev.recover_with(&info, device.clone(), queue).unwrap();
    assert_eq!(dev.recoveries(), 1);
    assert_eq!(dev.wgpu().unwrap().0, device);
    assert_sample_is_the_cpus(&dev);
    assert_lost(old.to_vec::<f32>(), "a tensor of the lost device");

    // A working device replaced on purpose retires: its tensors fail as
    // lost ones, but no listener hears a loss (one once did, and with
    // the documented `recover` in it opened a device more).
    let heard = Arc::new(AtomicUsize::new(0));
    let count = heard.clone();
    dev.on_lost(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
    });
    let live = Tensor::ones([4], DType::F32, &dev).unwrap();
    let (info, device, queue) = app_device();
    dev.recover_with(&info, device, queue).unwrap();
    assert_eq!(dev.recoveries(), 2);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(heard.load(Ordering::SeqCst), 0, "a deliberate replacement");
    assert!(live.is_lost());
    assert!(matches!(
        live.to_vec::<f32>(),
        Err(Error::DeviceLost { ref reason, .. }) if reason.contains("recover_with")
    ));
    assert_sample_is_the_cpus(&dev);
}

#[test]
fn a_listener_recovers_the_device_it_hears_of_without_holding_it() {
    let Some(dev) = own(GpuOptions {
        // Every op submits: the loss is met inside a submit, with the
        // scheduler's lock held.
        flush_threshold: Some(1),
        ..Default::default()
    }) else {
        return;
    };
    let weak = dev.downgrade();
    assert_eq!(weak.upgrade().as_ref(), Some(&dev));
    let recovered = Arc::new(AtomicUsize::new(0));
    let r = recovered.clone();
    dev.on_lost(move |_| {
        if let Some(dev) = weak.upgrade() {
            dev.recover().unwrap();
            r.fetch_add(1, Ordering::SeqCst);
        }
    });
    let x = Tensor::ones([1024], DType::F32, &dev).unwrap();
    let (device, _) = dev.wgpu().unwrap();
    device.destroy();
    // Ops until one meets the loss (each submits; a sync polls).
    let ran = within_watchdog("ops meeting the loss", {
        let (x, dev) = (x.clone(), dev.clone());
        move || {
            (0..100)
                .map(|_| x.add_scalar_(1.0).and_then(|()| dev.sync()))
                .find(|r| r.is_err())
        }
    });
    assert!(
        matches!(ran, Some(Err(Error::DeviceLost { .. }))),
        "{ran:?}"
    );
    heard_within(&recovered, 1, "the listener's recovery");
    assert_eq!(dev.recoveries(), 1);
    assert_sample_is_the_cpus(&dev);
    // The listener holds the device weakly: the handle goes with its last
    // strong clone.
    let weak = dev.downgrade();
    drop((dev, x));
    assert!(weak.upgrade().is_none(), "a listener kept the device alive");
}

/// A recovery onto a device that is lost itself keeps every checkpoint
/// it could not restore for the recovery after it.
#[test]
fn checkpoints_outlive_a_recovery_onto_a_lost_device() {
    if common::gpu().is_none() {
        return;
    }
    let (info, device, queue) = app_device();
    let dev = Device::from_wgpu(&info, device.clone(), queue, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let kept: Vec<Tensor> = (0..4)
        .map(|k| {
            let t = Tensor::full([256], k as f32, DType::F32, &dev).unwrap();
            t.checkpoint().unwrap();
            t
        })
        .collect();
    device.destroy();
    let _ = within_watchdog("the sync after the loss", {
        let dev = dev.clone();
        move || dev.sync()
    });
    // The application's next device is lost before the restore.
    let (info, dead, queue) = app_device();
    dead.destroy();
    let restored = dev.recover_with(&info, dead, queue);
    assert!(
        matches!(restored, Err(Error::DeviceLost { .. })),
        "{restored:?}"
    );
    assert!(matches!(
        kept[0].to_vec::<f32>(),
        Err(Error::DeviceLost { .. })
    ));
    let (info, device, queue) = app_device();
    dev.recover_with(&info, device, queue).unwrap();
    for (k, t) in kept.iter().enumerate() {
        assert_eq!(
            t.to_vec::<f32>().unwrap(),
            vec![k as f32; 256],
            "tensor {k}"
        );
    }
}

#[test]
fn the_applications_new_device_takes_the_handles_options() {
    if common::gpu().is_none() {
        return;
    }
    let (info, device, queue) = app_device();
    let options = GpuOptions {
        max_binding_bytes: Some(4096),
        ..Default::default()
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue, options)
        .expect("a device on the application's wgpu device");
    assert_eq!(dev.info().max_storage_binding, 4096);
    device.destroy();
    let _ = dev.sync();
    let (info, device, queue) = app_device();
    dev.recover_with(&info, device, queue).unwrap();
    assert_eq!(dev.info().max_storage_binding, 4096);
    // Past one 4 KiB binding: the elementwise windows still add right.
    let big = Tensor::ones([5000], DType::F32, &dev).unwrap();
    let sum = big.add_scalar(1.0).unwrap().sum(..).unwrap();
    assert_eq!(sum.item::<f32>().unwrap(), 10000.0);
}

#[test]
fn ops_racing_losses_and_recoveries_get_right_values_or_device_lost() {
    let Some(dev) = own(GpuOptions {
        flush_threshold: Some(4),
        ..Default::default()
    }) else {
        return;
    };
    dev.set_persist(webtensor::Persist::HostCopy);
    let host: Vec<f32> = (0..64).map(|i| (i % 7) as f32 - 3.0).collect();
    let weights = Tensor::from_slice(&host, [8, 8], &dev).unwrap();
    let cpu = Device::cpu();
    let w = Tensor::from_slice(&host, [8, 8], &cpu).unwrap();
    let want = w.matmul(&w).unwrap().exp().unwrap().sum(..).unwrap();
    let want = want.item::<f32>().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|k| {
            let (dev, weights, host, stop) =
                (dev.clone(), weights.clone(), host.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut right, mut lost) = (0u32, 0u32);
                while !stop.load(Ordering::Relaxed) {
                    let got = (|| {
                        let fresh = Tensor::from_slice(&host, [8, 8], &dev)?;
                        let x = if k == 0 { &weights } else { &fresh };
                        x.matmul(&weights)?.exp()?.sum(..)?.item::<f32>()
                    })();
                    match got {
                        Ok(v) => {
                            assert!((v - want).abs() <= want.abs() * 1e-5, "{v} vs {want}");
                            right += 1;
                        }
                        Err(Error::DeviceLost { .. }) => lost += 1,
                        Err(e) => panic!("worker {k}: {e:?}"),
                    }
                }
                (right, lost)
            })
        })
        .collect();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(30));
        // The workers' polls may take wgpu's lost callback first: `lose`
        // syncs until this thread sees the loss too.
        lose(&dev);
        within_watchdog("a recovery racing ops", {
            let dev = dev.clone();
            move || dev.recover()
        })
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(30));
    stop.store(true, Ordering::Relaxed);
    let counts = within_watchdog("the workers", move || {
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker panicked"))
            .collect::<Vec<_>>()
    });
    assert_eq!(dev.recoveries(), 5);
    for (right, _) in &counts {
        assert!(*right > 0, "{counts:?}");
    }
    // The kept weights came back each time, unwritten.
    assert_eq!(weights.to_vec::<f32>().unwrap(), host);
}

#[test]
fn a_handle_that_recovers_by_itself_comes_back_with_its_kept_tensors() {
    let Some(dev) = own(GpuOptions {
        auto_recover: Some(true),
        ..Default::default()
    }) else {
        return;
    };
    dev.set_persist(webtensor::Persist::HostCopy);
    let kept = Tensor::from_slice(&[1.0f32, -2.0, 3.5], [3], &dev).unwrap();
    let heard = Arc::new(AtomicUsize::new(0));
    let h = heard.clone();
    dev.on_lost(move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    for round in 1..=3 {
        let (device, _) = dev.wgpu().unwrap();
        device.destroy();
        let _ = dev.sync();
        let recovered = within_watchdog("a recovery by itself", {
            let dev = dev.clone();
            move || {
                while dev.recoveries() < round || dev.is_lost() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                dev.recoveries()
            }
        });
        assert_eq!(recovered, round);
        heard_within(&heard, round as usize, "each loss is heard");
        assert_eq!(kept.to_vec::<f32>().unwrap(), [1.0, -2.0, 3.5]);
        assert_sample_is_the_cpus(&dev);
    }
    // The application's device is not reopened by webtensor, whatever the
    // option says.
    let (info, device, queue) = app_device();
    let app = Device::from_wgpu(
        &info,
        device.clone(),
        queue,
        GpuOptions {
            auto_recover: Some(true),
            ..Default::default()
        },
    )
    .expect("a device on the application's wgpu device");
    device.destroy();
    let _ = app.sync();
    std::thread::sleep(Duration::from_millis(50));
    assert!(app.is_lost() && app.recoveries() == 0);
}

/// A recovery meeting a `WEBTENSOR_*` setting it does not take is an
/// `Error::Argument` naming it, and the handle stays lost, to recover once
/// the setting is fixed: it went on on the CPU for good. The environment is
/// the process's, so this runs in a child process of this test binary
/// (`a_bad_setting_at_recovery_in_a_child`).
#[test]
fn a_bad_setting_at_recovery_is_an_error_not_the_cpu() {
    if common::gpu().is_none() {
        return;
    }
    common::run_child("a_bad_setting_at_recovery_in_a_child", &[]);
}

#[test]
#[ignore = "the child process of a_bad_setting_at_recovery_is_an_error_not_the_cpu"]
fn a_bad_setting_at_recovery_in_a_child() {
    if !common::is_child("a_bad_setting_at_recovery_in_a_child") {
        return;
    }
    let dev = own(GpuOptions::default()).expect("the parent opened a GPU");
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    lose(&dev);
    assert_lost(x.to_vec::<f32>(), "before the recovery");
    // SAFETY: this child process runs this one test on one thread, and
    // nothing else reads the environment while it is set.
    unsafe { std::env::set_var("WEBTENSOR_FUSION", "2") };
    let e = dev.recover().unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Argument { .. }), "{msg}");
    assert!(
        msg.contains("Device::recover") && msg.contains("WEBTENSOR_FUSION"),
        "{msg}"
    );
    assert!(dev.is_lost() && !dev.is_cpu(), "the handle stays lost");
    // SAFETY: as above.
    unsafe { std::env::remove_var("WEBTENSOR_FUSION") };
    dev.recover().unwrap();
    assert!(dev.is_gpu() && !dev.is_lost());
    let y = Tensor::ones([4], DType::F32, &dev).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [1.0; 4]);
}
