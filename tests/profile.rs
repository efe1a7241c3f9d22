//! Profiles (`Device::profile`): each recorded op with its host time and
//! the kernels it ran in (fused chains share one), each kernel with its GPU
//! time where the device writes timestamps (lavapipe does), each submit;
//! the ops compute what they compute outside a profile; replays, readbacks
//! and small batches inside a profile; what a profile refuses.

mod common;

use common::{assert_close, own_gpu, read_f32};
use webtensor::{DType, Device, Error, GpuOptions, Profile, Tensor};

/// A GPU device of this test's own (a profile notes what any thread
/// records on its device, and the tests run in parallel).
fn gpu(fusion: bool, threshold: usize) -> Option<Device> {
    own_gpu(GpuOptions {
        fusion: Some(fusion),
        flush_threshold: Some(threshold),
        ..Default::default()
    })
}

fn names(p: &Profile) -> Vec<&'static str> {
    p.ops().iter().map(|o| o.name).collect()
}

/// Every op's kernels name it back, every kernel's ops point at it, and
/// every kernel lies in its submit's range.
fn check_links(p: &Profile) {
    for (i, op) in p.ops().iter().enumerate() {
        for k in op.kernels.clone() {
            assert!(
                p.kernels()[k].ops.contains(&i),
                "op {i} not in kernel {k}\n{p}"
            );
        }
    }
    for (k, kernel) in p.kernels().iter().enumerate() {
        for &o in &kernel.ops {
            assert!(
                p.ops()[o].kernels.contains(&k),
                "kernel {k} not in op {o}\n{p}"
            );
        }
        assert!(p.submits()[kernel.submit].kernels.contains(&k), "{p}");
    }
}

/// `x * 2`, `exp` of it, and its sum: three ops recorded on a GPU.
fn chain(x: &Tensor) -> webtensor::Result<Tensor> {
    x.mul_scalar(2.0)?.exp()?.sum(..)
}

#[test]
fn a_fused_chain_shares_one_kernel_and_every_kernel_is_timed() {
    let Some(dev) = gpu(true, 1024) else { return };
    let x = Tensor::arange(0.0f32, 1.0, 1.0 / 4096.0, &dev).unwrap();
    let want = read_f32(&chain(&x.to_device(&Device::cpu()).unwrap()).unwrap());
    let out = std::rc::Rc::new(std::cell::RefCell::new(None));
    let (xs, got) = (x.clone(), out.clone());
    let p = dev
        .profile(move || {
            *got.borrow_mut() = Some(chain(&xs)?);
            Ok(())
        })
        .unwrap();
    let sum = out.borrow_mut().take().unwrap();
    assert_close(&read_f32(&sum), &want, 1e-5, "the profiled chain");
    assert_eq!(&names(&p)[..2], ["mul", "exp"], "{p}");
    assert!(names(&p)[2..].iter().all(|&n| n == "reduce"), "{p}");
    check_links(&p);
    // mul and exp are one generated kernel; the sum reads its output.
    assert_eq!(p.ops()[0].kernels, p.ops()[1].kernels, "{p}");
    assert_eq!(p.ops()[0].kernels.len(), 1, "{p}");
    let fused = &p.kernels()[p.ops()[0].kernels.start];
    assert_eq!(
        (fused.name, &fused.ops[..]),
        ("elementwise", &[0, 1][..]),
        "{p}"
    );
    assert_eq!(p.submits().len(), 1, "{p}");
    assert_eq!(p.submits()[0].kernels, 0..p.kernels().len(), "{p}");
    if dev.info().gpu_timestamps {
        assert!(p.gpu_times_unavailable().is_none(), "{p}");
        assert!(p.kernels().iter().all(|k| k.gpu.is_some()), "{p}");
        assert!(p.gpu().is_some());
    } else {
        assert!(p.gpu_times_unavailable().is_some(), "{p}");
    }
    assert!(p.wall() >= p.host(), "{p}");
    let table = p.to_string();
    for needle in ["mul", "exp", "reduce", "elementwise", "GPU µs", "host µs"] {
        assert!(table.contains(needle), "{needle} missing from\n{table}");
    }
}

#[test]
fn without_fusion_each_op_has_a_kernel_of_its_own() {
    let Some(dev) = gpu(false, 1024) else { return };
    let x = Tensor::ones([300], DType::F32, &dev).unwrap();
    let xs = x.clone();
    let p = dev.profile(move || chain(&xs).map(drop)).unwrap();
    check_links(&p);
    assert_eq!(p.ops()[0].kernels, 0..1, "{p}");
    assert_eq!(p.ops()[1].kernels, 1..2, "{p}");
    assert!(p.kernels().iter().all(|k| k.ops.len() == 1), "{p}");
}

#[test]
fn small_batches_readbacks_and_dropped_results_inside_a_profile() {
    let Some(dev) = gpu(true, 2) else { return };
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev).unwrap();
    let (xs, read) = (x.clone(), std::rc::Rc::new(std::cell::Cell::new(0.0)));
    let seen = read.clone();
    let p = dev
        .profile(move || {
            // Dropped unread before any flush: never computed.
            drop(xs.neg()?);
            let y = xs.add_scalar(1.0)?;
            seen.set(y.to_vec::<f32>()?[2]);
            xs.add_(&y)?;
            xs.mul_(&y)?;
            xs.sub_scalar(1.0).map(drop)
        })
        .unwrap();
    assert_eq!(read.get(), 4.0);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![6.0, 15.0, 28.0]);
    assert_eq!(names(&p), ["neg", "add", "add", "mul", "sub"], "{p}");
    check_links(&p);
    assert!(
        p.ops()[0].kernels.is_empty(),
        "a dropped result runs no kernel\n{p}"
    );
    assert!(!p.ops()[1].kernels.is_empty(), "{p}");
    // Batches of two, the readback's and the rest.
    assert!(p.submits().len() >= 3, "{p}");
    assert!(p.ops()[4].kernels.is_empty(), "{p}");
}

/// `n` in-place adds of one, each its own kernel (fusion off), profiled on
/// a device flushing every `threshold` ops: the profile, once the sums and
/// the links are checked and, where the device writes timestamps, every
/// kernel is found timed.
fn timed_adds(threshold: usize, n: usize) -> Option<Profile> {
    let dev = gpu(false, threshold)?;
    let x = Tensor::zeros([5], DType::F32, &dev).unwrap();
    let xs = x.clone();
    let p = dev
        .profile(move || {
            for _ in 0..n {
                xs.add_scalar_(1.0)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![n as f32; 5]);
    check_links(&p);
    if dev.info().gpu_timestamps {
        assert!(p.kernels().iter().all(|k| k.gpu.is_some()), "{p}");
    }
    Some(p)
}

/// A profile that flushes every op times each of its 40 submits' kernels,
/// on query sets used again in turn (a set each would pass what Metal
/// holds).
#[test]
fn every_submit_of_a_long_profile_is_timed() {
    let Some(p) = timed_adds(1, 40) else { return };
    assert_eq!((p.kernels().len(), p.submits().len()), (40, 40), "{p}");
    if p.gpu_times_unavailable().is_none() {
        assert!(p.gpu().is_some(), "{p}");
    }
}

#[test]
fn a_replayed_step_is_one_op_with_the_steps_kernels() {
    let Some(dev) = gpu(true, 1024) else { return };
    let x = Tensor::zeros([64], DType::F32, &dev).unwrap();
    let xs = x.clone();
    let mut graph = dev
        .capture(move || {
            let y = xs.add_scalar(1.0)?;
            xs.assign(&y.sqrt()?)?;
            xs.add_(&xs.sum_keepdim(..)?)
        })
        .unwrap();
    let p = dev.profile(move || graph.run()).unwrap();
    assert_eq!(names(&p), ["Graph::run"], "{p}");
    check_links(&p);
    assert_eq!(p.ops()[0].kernels.len(), p.kernels().len(), "{p}");
    assert!(p.kernels().len() >= 2, "{p}");
}

#[test]
fn many_kernels_in_one_submit_are_all_timed() {
    let Some(p) = timed_adds(4096, 2100) else {
        return;
    };
    assert_eq!((p.ops().len(), p.kernels().len()), (2100, 2100));
    assert_eq!(p.submits().len(), 1);
}

#[test]
fn what_a_profile_refuses_and_what_it_returns() {
    let mut devices = vec![Device::cpu()];
    devices.extend(gpu(true, 1024));
    for dev in devices {
        let x = Tensor::ones([4], DType::F32, &dev).unwrap();
        // The closure's error comes back; the device profiles again after.
        let failed = dev.profile(|| {
            Err(Error::Argument {
                op: "mine",
                msg: "no".into(),
            })
        });
        assert!(matches!(failed, Err(Error::Argument { op: "mine", .. })));
        let inner = dev.clone();
        let nested = dev.profile(move || inner.profile(|| Ok(())).map(drop));
        assert!(
            matches!(
                nested,
                Err(Error::Argument {
                    op: "Device::profile",
                    ..
                })
            ),
            "{dev}"
        );
        let xs = x.clone();
        let p = dev.profile(move || xs.exp_().map(drop)).unwrap();
        assert_eq!(names(&p), ["exp"], "{dev}");
        if dev.is_cpu() {
            assert!(p.kernels().is_empty() && p.submits().is_empty());
            assert!(p.gpu_times_unavailable().is_some());
            // No GPU time at all, not a GPU time of zero.
            assert_eq!(p.gpu(), None);
            continue;
        }
        let inner = dev.clone();
        let capture = dev.profile(move || inner.capture(|| Ok(())).map(drop));
        assert!(matches!(
            capture,
            Err(Error::Argument {
                op: "Device::capture",
                ..
            })
        ));
        let inner = dev.clone();
        let profile = dev.capture(move || inner.profile(|| Ok(())).map(drop));
        assert!(matches!(
            profile,
            Err(Error::Argument {
                op: "Device::profile",
                ..
            })
        ));
        // Refused after the step recorded an op too, and the capture goes
        // on (the refused profile's flush failed it).
        let (inner, y) = (dev.clone(), Tensor::ones([8], DType::F32, &dev).unwrap());
        let ys = y.clone();
        let mut graph = dev
            .capture(move || {
                ys.mul_scalar_(2.0)?;
                let refused = inner.profile(|| Ok(()));
                assert!(
                    matches!(refused, Err(Error::Argument { .. })),
                    "{refused:?}"
                );
                ys.add_scalar_(1.0)
            })
            .unwrap();
        graph.run().unwrap();
        assert_eq!(read_f32(&y), [7.0; 8], "{dev}");
        assert!(dev.profile(|| Ok(())).unwrap().ops().is_empty());
    }
}

/// A profile opened while another thread's matmul is being autotuned
/// begins once the timing is done: the tuning's runs (dozens of products
/// into a scratch output) are no ops of the profile, and its timed
/// submits no submits of it. The tuned product itself may land inside.
#[test]
fn a_profile_waits_for_autotuning_on_another_thread() {
    let Some(dev) = own_gpu(GpuOptions {
        autotune: Some(true),
        ..Default::default()
    }) else {
        return;
    };
    let a = Tensor::from_vec(common::noise(160 * 96, 1), [160, 96], &dev).unwrap();
    let b = Tensor::from_vec(common::noise(96 * 144, 2), [96, 144], &dev).unwrap();
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    let tuner = std::thread::spawn(move || a.matmul(&b).unwrap().to_vec::<f32>().unwrap());
    // Once the timing has begun.
    while dev.stats().tuning_runs == 0 && !tuner.is_finished() {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    // A profile long enough for the timing to go on meanwhile.
    let p = dev
        .profile(move || {
            x.exp_()?;
            std::thread::sleep(std::time::Duration::from_millis(50));
            Ok(())
        })
        .unwrap();
    tuner.join().unwrap();
    assert!(dev.stats().tuning_runs > 0);
    let products = names(&p).iter().filter(|&&n| n == "matmul").count();
    assert!(products <= 1, "{p}");
    assert!(names(&p).contains(&"exp"), "{p}");
}

/// On the CPU, where ops run as they are called, the wall time ends with
/// the last op (as on a GPU with its last op, submit or readback): host
/// work the closure does after it is in no op, and was in the wall time.
#[test]
fn a_cpu_profiles_wall_time_ends_with_its_last_op() {
    let dev = Device::cpu();
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    let p = dev
        .profile(move || {
            x.exp_()?;
            x.add_scalar_(1.0)?;
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(())
        })
        .unwrap();
    assert_eq!(names(&p), ["exp", "add"]);
    // Each op's host time runs from the end of the one before: together
    // they are the wall time exactly.
    assert_eq!(p.wall(), p.host(), "{p}");
}

/// On a GPU too the wall time ends with the closure's last op: what it
/// left pending is submitted after it returns, and the time between is
/// left out, so the wall time is the same whatever the flush threshold.
#[test]
fn a_gpus_wall_time_leaves_out_the_closures_time_after_its_last_op() {
    for threshold in [1, 1024] {
        let Some(dev) = gpu(true, threshold) else {
            return;
        };
        let x = Tensor::ones([4], DType::F32, &dev).unwrap();
        x.to_vec::<f32>().unwrap();
        let sleep = std::time::Duration::from_millis(300);
        let started = std::time::Instant::now();
        let p = dev
            .profile(|| {
                x.exp_()?;
                std::thread::sleep(sleep);
                Ok(())
            })
            .unwrap();
        // The call took the sleep and the wall time, and more: no bound on
        // how long the kernel takes to compile on a loaded machine.
        let call = started.elapsed();
        assert_eq!(names(&p), ["exp"]);
        assert!(p.wall() >= p.host(), "{p}");
        assert!(
            p.wall() + sleep <= call,
            "threshold {threshold}: the call took {call:?}\n{p}"
        );
    }
}

#[test]
fn an_op_over_more_than_one_binding_runs_in_several_kernels() {
    let Some(dev) = own_gpu(GpuOptions {
        max_binding_bytes: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::arange(0.0f32, 5000.0, 1.0, &dev).unwrap();
    let (xs, kept) = (x.clone(), std::rc::Rc::new(std::cell::RefCell::new(None)));
    let out = kept.clone();
    let p = dev
        .profile(move || {
            *out.borrow_mut() = Some(xs.add(&xs.flip(&[0])?)?);
            Ok(())
        })
        .unwrap();
    let y = kept.borrow_mut().take().unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![4999.0; 5000]);
    assert_eq!(names(&p), ["add"], "{p}");
    check_links(&p);
    assert!(
        p.ops()[0].kernels.len() >= 5,
        "20,000 bytes in 4,096-byte windows\n{p}"
    );
    assert_eq!(p.ops()[0].kernels.len(), p.kernels().len(), "{p}");
}

/// The depth of region `r`: how many regions it is inside.
fn depth(p: &Profile, r: usize) -> usize {
    std::iter::successors(p.regions()[r].parent, |&q| p.regions()[q].parent).count()
}

#[test]
fn public_calls_and_user_labels_are_regions_of_their_ops() {
    let mut devices = vec![Device::cpu()];
    devices.extend(gpu(true, 1024));
    for dev in devices {
        let x = Tensor::rand([2, 3, 8, 8], DType::F32, 1, &dev).unwrap();
        let w = Tensor::rand([4, 3, 3, 3], DType::F32, 2, &dev).unwrap();
        let (xs, ws, inner) = (x.clone(), w.clone(), dev.clone());
        let p = dev
            .profile(move || {
                let y = inner.profile_region("block", || {
                    let y = xs.layer_norm(&[8], None, None, 1e-5)?;
                    inner.profile_region(String::from("head"), || y.leaky_relu(0.1))
                })?;
                // A region's mul fused with the exp after it.
                let y = inner.profile_region("scale", || y.mul_scalar(2.0))?.exp()?;
                y.conv2d(&ws, &webtensor::Conv::new())?.sum(..)?;
                Ok(())
            })
            .unwrap();
        let regions: Vec<(&str, usize)> = (0..p.regions().len())
            .map(|r| (p.regions()[r].name.as_str(), depth(&p, r)))
            .collect();
        let conv = dev.is_gpu().then_some(("conv2d", 0));
        let want: Vec<(&str, usize)> = [
            ("block", 0),
            ("layer_norm", 1),
            ("head", 1),
            ("leaky_relu", 2),
            ("scale", 0),
        ]
        .into_iter()
        .chain(conv)
        .collect();
        // The CPU's conv2d is one op of its name: no region of its own.
        assert_eq!(regions, want, "{dev}\n{p}");
        for (r, region) in p.regions().iter().enumerate() {
            let ops = &p.ops()[region.ops.clone()];
            assert!(!ops.is_empty(), "{dev}\n{p}");
            // Its ops are its own or its inner regions', and its host time
            // theirs.
            for op in ops {
                let mut at = op.region;
                while at.is_some_and(|a| a != r) {
                    at = p.regions()[at.unwrap()].parent;
                }
                assert_eq!(at, Some(r), "{dev}: op {} outside r{r}\n{p}", op.name);
            }
            let host: std::time::Duration = ops.iter().map(|o| o.host).sum();
            assert_eq!(region.host, host, "{dev}\n{p}");
            if let Some(parent) = region.parent {
                let outer = &p.regions()[parent].ops;
                assert!(outer.start <= region.ops.start && region.ops.end <= outer.end);
            }
        }
        let last = p.ops().len() - 1;
        assert_eq!(p.ops()[last].region, None, "the sum is outside\n{p}");
        let table = p.to_string();
        for needle in ["region", "layer_norm", "    leaky_relu", "  head"] {
            assert!(table.contains(needle), "{needle} missing from\n{table}");
        }
        if dev.is_cpu() {
            assert!(p.regions().iter().all(|r| r.gpu.is_none()));
            continue;
        }
        // A kernel's time counts for the regions of the last op it
        // computes, once.
        // (The scale's mul and the exp after it share a kernel, whose time
        // is not the scale's.)
        if dev.info().gpu_timestamps {
            for region in p.regions() {
                let inside: std::time::Duration = p
                    .kernels()
                    .iter()
                    .filter(|k| k.ops.iter().max().is_some_and(|o| region.ops.contains(o)))
                    .map(|k| k.gpu.unwrap())
                    .sum();
                assert_eq!(region.gpu, Some(inside), "{}\n{p}", region.name);
            }
            assert!(p.regions()[0].gpu <= p.gpu(), "{p}");
        }
    }
}

/// A public call that reads back midway (`unique`, `nonzero`, `bincount`
/// ...) and a composed sort are each one region of all their ops, before
/// and after the readback; the public calls they make are regions inside.
#[test]
fn calls_that_read_back_midway_are_one_region_of_all_their_ops() {
    let mut devices = vec![Device::cpu()];
    devices.extend(gpu(true, 1024));
    // Each call on `x`, with a mask `m` made before the profile.
    type Call = fn(&Tensor, &Tensor) -> webtensor::Result<()>;
    let calls: [(&str, Call); 10] = [
        ("unique", |x, _| x.unique().map(drop)),
        ("unique_all", |x, _| x.unique_all().map(drop)),
        ("nonzero", |x, _| x.nonzero().map(drop)),
        ("argwhere", |x, _| x.argwhere().map(drop)),
        ("masked_select", |x, m| x.masked_select(m).map(drop)),
        ("bincount", |x, _| x.bincount(None, 0).map(drop)),
        ("histogram", |x, _| {
            x.histogram(3, None, None, false).map(drop)
        }),
        ("sort", |x, _| {
            x.sort(0, webtensor::SortOrder::Ascending).map(drop)
        }),
        ("argsort", |x, _| {
            x.argsort(0, webtensor::SortOrder::Descending).map(drop)
        }),
        ("topk", |x, _| {
            x.topk(2, 0, webtensor::TopK::Largest).map(drop)
        }),
    ];
    for dev in devices {
        for (name, call) in calls {
            let x = Tensor::from_slice(&[3i32, 0, 2, 3, 1, 0], [6], &dev).unwrap();
            let m = x.gt_scalar(1).unwrap();
            let p = dev.profile(move || call(&x, &m)).unwrap();
            assert_eq!(p.regions()[0].name, name, "{dev}\n{p}");
            assert_eq!(p.regions()[0].ops, 0..p.ops().len(), "{dev}\n{p}");
            for r in 1..p.regions().len() {
                assert!(depth(&p, r) >= 1, "{dev}\n{p}");
            }
            // (A CPU sorts in one op, named `sort` for argsort too.)
            assert!(p.ops().len() > usize::from(dev.is_gpu()), "{dev}\n{p}");
        }
    }
}

#[test]
fn a_region_opened_before_the_profile_names_its_ops_and_outside_one_is_free() {
    let dev = Device::cpu();
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    let p = dev
        .profile_region("outer", || dev.profile(|| x.exp().map(drop)))
        .unwrap();
    assert_eq!(p.regions().len(), 1, "{p}");
    assert_eq!(p.regions()[0].name, "outer");
    assert_eq!(p.ops()[0].region, Some(0));
    // Without a profile a region only runs its closure, and what it
    // returns comes back.
    let y = dev.profile_region("plain", || x.mul_scalar(3.0)).unwrap();
    assert_eq!(read_f32(&y), [3.0; 4]);
    // Regions close with their closures: a later profile has none.
    let p = dev.profile(|| x.exp().map(drop)).unwrap();
    assert!(p.regions().is_empty() && p.ops()[0].region.is_none(), "{p}");
}

/// Work recorded before a profile whose batch fails (it reads an
/// application buffer destroyed meanwhile) poisons its own outputs, as a
/// failed batch does anywhere; the profile's closure still runs, and the
/// profile comes back with its ops.
#[test]
fn a_batch_failing_before_a_profile_poisons_its_outputs_and_the_profile_runs() {
    let Some(dev) = gpu(true, 1024) else {
        return;
    };
    let (device, queue) = dev.wgpu().unwrap();
    let buffer = device.create_buffer(&webtensor::wgpu::BufferDescriptor {
        label: Some("destroyed before the profile"),
        size: 16,
        usage: webtensor::wgpu::BufferUsages::STORAGE
            | webtensor::wgpu::BufferUsages::COPY_SRC
            | webtensor::wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    queue.write_buffer(&buffer, 0, &[0u8; 16]);
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    x.to_vec::<f32>().unwrap();
    let w = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
    let y = (&w + 1.0).exp().unwrap();
    buffer.destroy();
    let ran = std::cell::Cell::new(false);
    let p = dev
        .profile(|| {
            ran.set(true);
            x.mul_scalar_(3.0).map(drop)
        })
        .unwrap();
    assert!(ran.get(), "the closure was not run");
    assert_eq!(names(&p), ["mul"]);
    check_links(&p);
    assert_eq!(x.to_vec::<f32>().unwrap(), [3.0; 4]);
    let e = y.to_vec::<f32>().unwrap_err().to_string();
    assert!(e.contains("failed"), "{e}");
}
