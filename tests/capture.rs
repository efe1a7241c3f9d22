//! Captured steps (`Device::capture`, `Graph::run`): a run computes what
//! the same ops computed eagerly, on every device (the CPU re-runs the
//! closure), across scheduler settings, with in-place updates between
//! runs, through strided views; what cannot be replayed is an error at
//! capture; index faults of a replayed step reach the next readback.

mod common;

#[path = "../examples/common/gray_scott.rs"]
#[allow(dead_code)]
mod gray_scott;

use common::{assert_close, own_gpu, read_f32};
use webtensor::{Conv, DType, Device, Error, GpuOptions, Graph, Resize, Tensor, s};

/// The CPU and GPU devices of this test's own (a capture records what any
/// thread records on its device, and the tests run in parallel): f16
/// native and packed, fusion on and off, and one submit per op or small
/// batches (which a capture ignores: it records one batch).
fn capture_devices() -> Vec<Device> {
    let mut all = vec![Device::cpu()];
    for (fusion, threshold, packed) in [
        (true, 1024, false),
        (true, 1024, true),
        (false, 1024, false),
        (true, 7, false),
        (false, 1, true),
    ] {
        all.extend(own_gpu(GpuOptions {
            fusion: Some(fusion),
            flush_threshold: Some(threshold),
            force_packed_f16: packed,
            ..Default::default()
        }));
    }
    all
}

fn label(dev: &Device) -> String {
    format!(
        "{dev} (fusion {}, batch {})",
        dev.fusion(),
        dev.flush_threshold()
    )
}

#[test]
fn a_replayed_gray_scott_step_equals_the_eager_one() {
    for dev in capture_devices() {
        let mut eager = gray_scott::GrayScott::new(24, &dev).unwrap();
        let replayed = gray_scott::GrayScott::new(24, &dev).unwrap();
        let v = replayed.v().clone();
        let mut replayed = replayed;
        eager.step(5).unwrap();
        let mut graph = dev.capture(move || replayed.step(1)).unwrap();
        for _ in 0..4 {
            graph.run().unwrap();
        }
        let (want, got) = (read_f32(eager.v()), read_f32(&v));
        assert_close(&got, &want, 1e-6, &format!("gray-scott on {}", label(&dev)));
        if dev.is_gpu() {
            assert!(graph.ops() >= 20, "{}: {graph:?}", label(&dev));
            assert!(graph.dispatches() >= 1);
            if dev.fusion() {
                assert!(graph.dispatches() < graph.ops(), "{graph:?} fused nothing");
            }
        }
    }
}

#[test]
fn a_run_submits_once_and_records_nothing() {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::ones([64, 64], DType::F32, &dev).unwrap();
    let y = Tensor::rand([64, 64], DType::F32, 3, &dev).unwrap();
    let (xs, ys) = (x.clone(), y.clone());
    let mut graph = dev
        .capture(move || {
            for _ in 0..50 {
                xs.mul_scalar_(0.5)?;
                xs.add_(&ys)?;
            }
            Ok(())
        })
        .unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    for _ in 0..10 {
        graph.run().unwrap();
    }
    dev.sync().unwrap();
    let after = dev.stats();
    assert_eq!(after.ops_recorded, before.ops_recorded, "a run records");
    assert_eq!(after.submits - before.submits, 10);
    assert_eq!(after.graph_runs - before.graph_runs, 10);
    assert_eq!(
        after.dispatches - before.dispatches,
        10 * graph.dispatches() as u64
    );
    // x converges to 2y: x <- x/2 + y, 550 times.
    let (got, want) = (read_f32(&x), read_f32(&y.mul_scalar(2.0).unwrap()));
    assert_close(&got, &want, 1e-5, "x/2 + y converged");
}

#[test]
fn runs_read_what_the_application_wrote_between_them() {
    for dev in capture_devices() {
        let x = Tensor::zeros([5, 7], DType::F32, &dev).unwrap();
        let acc = Tensor::zeros([5, 7], DType::F32, &dev).unwrap();
        let (xs, accs) = (x.clone(), acc.clone());
        // acc += 3x + 1 (a fused chain whose intermediates are dropped).
        let mut graph = dev
            .capture(move || accs.add_(&xs.mul_scalar(3.0)?.add_scalar(1.0)?))
            .unwrap();
        let mut want = vec![1.0f32; 35];
        for k in 1..4 {
            let new = Tensor::full([5, 7], k as f32, DType::F32, &dev).unwrap();
            x.assign(&new).unwrap();
            graph.run().unwrap();
            want.iter_mut().for_each(|w| *w += 3.0 * k as f32 + 1.0);
        }
        x.slice(s![.., 2]).unwrap().fill_(10.0).unwrap();
        graph.run().unwrap();
        for (i, w) in want.iter_mut().enumerate() {
            *w += if i % 7 == 2 { 31.0 } else { 10.0 };
        }
        assert_eq!(acc.to_vec::<f32>().unwrap(), want, "{}", label(&dev));
    }
}

#[test]
fn a_step_writes_through_strided_reversed_and_broadcast_views() {
    for dev in capture_devices() {
        let data: Vec<f32> = (0..48).map(|i| i as f32 * 0.25 - 3.0).collect();
        let make = || Tensor::from_slice(&data, [6, 8], &dev).unwrap();
        let (eager, captured) = (make(), make());
        let row = Tensor::from_slice(&[1.0f32, -1.0, 2.0, 0.5], [4], &dev).unwrap();
        let step = |t: &Tensor, row: &Tensor| -> webtensor::Result<()> {
            // Every other column, rows reversed, plus a broadcast row.
            let view = t.slice(s![..;-1, 1..;2])?;
            view.add_(&view.mul(row)?)?;
            // The other columns, read through a transposed view.
            let other = t.slice(s![.., ..;2])?.t();
            other.sub_(&other.exp()?.mul_scalar(0.01)?)?;
            Ok(())
        };
        for _ in 0..3 {
            step(&eager, &row).unwrap();
        }
        let (c, r) = (captured.clone(), row.clone());
        let mut graph = dev.capture(move || step(&c, &r)).unwrap();
        graph.run().unwrap();
        graph.run().unwrap();
        let (got, want) = (read_f32(&captured), read_f32(&eager));
        assert_close(&got, &want, 1e-6, &format!("views on {}", label(&dev)));
    }
}

#[test]
fn reductions_and_matmul_replay_into_the_tensors_the_step_writes() {
    for dev in capture_devices() {
        let a = Tensor::rand([9, 13], DType::F32, 1, &dev).unwrap();
        let b = Tensor::rand([13, 5], DType::F32, 2, &dev).unwrap();
        let out = Tensor::zeros([9], DType::F32, &dev).unwrap();
        let (a2, b2, o2) = (a.clone(), b.clone(), out.clone());
        let mut graph = dev
            .capture(move || {
                let p = a2.matmul(&b2)?.softmax(-1)?;
                o2.add_(&p.sum(1)?.mul_scalar(0.5)?)
            })
            .unwrap();
        graph.run().unwrap();
        a.mul_scalar_(2.0).unwrap();
        graph.run().unwrap();
        // Each softmax row sums to one: out = 3 * 0.5.
        let got = read_f32(&out);
        assert_close(&got, &[1.5; 9], 1e-5, &format!("matmul on {}", label(&dev)));
    }
}

#[test]
fn what_cannot_be_replayed_is_an_error_at_capture() {
    for dev in capture_devices() {
        let x = Tensor::ones([4], DType::F32, &dev).unwrap();
        let live = dev.stats().bytes_live;
        let xs = x.clone();
        // A readback inside the step.
        let read = dev.capture(move || {
            xs.add_scalar_(1.0)?;
            let _ = xs.to_vec::<f32>()?;
            Ok(())
        });
        if dev.is_gpu() {
            let e = read.unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Argument {
                        op: "Device::capture",
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("readback"), "{e}");
        } else {
            read.unwrap();
        }
        // What the step recorded before the refusal ran, as eagerly.
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 4], "{}", label(&dev));
        // A step that swallows the refusal does not capture either.
        let xs = x.clone();
        let swallowed = dev.capture(move || {
            xs.add_scalar_(1.0)?;
            let _ignored = xs.sum(0)?.item::<f32>();
            Ok(())
        });
        assert_eq!(swallowed.is_err(), dev.is_gpu(), "{}", label(&dev));
        // The step's own error.
        let xs = x.clone();
        let bad = dev.capture(move || xs.add_(&Tensor::ones([3], DType::F32, xs.device())?));
        assert!(matches!(bad.unwrap_err(), Error::Shape { .. }));
        // The device records and submits as before.
        x.add_scalar_(1.0).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![4.0; 4], "{}", label(&dev));
        // The refused readbacks' staging buffers went back.
        assert_eq!(dev.stats().bytes_live, live, "{}", label(&dev));
    }
}

/// Two GPU devices of their own (one adapter opened twice).
fn two_gpus() -> Option<(Device, Device)> {
    Some((
        own_gpu(GpuOptions::default())?,
        own_gpu(GpuOptions::default())?,
    ))
}

#[test]
fn a_step_with_ops_on_another_gpu_is_refused_naming_both() {
    let Some((d1, d2)) = two_gpus() else {
        return;
    };
    let x = Tensor::zeros([3], DType::F32, &d2).unwrap();
    let xs = x.clone();
    let e = d1.capture(move || xs.add_scalar_(1.0)).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            Error::Argument {
                op: "Device::capture",
                ..
            }
        ),
        "{msg}"
    );
    let id = |d: &Device| d.to_string().split(':').next().unwrap().to_string();
    assert!(msg.contains(&id(&d1)) && msg.contains(&id(&d2)), "{msg}");
    // The op ran once, eagerly; both devices record as before.
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0; 3]);
    let y = Tensor::zeros([3], DType::F32, &d1).unwrap();
    let ys = y.clone();
    let mut graph = d1.capture(move || ys.add_scalar_(1.0)).unwrap();
    graph.run().unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

#[test]
fn tensors_a_step_makes_from_host_values_start_anew_on_every_run() {
    // arange, linspace, hann_window, fftfreq and from_slice are made on the
    // host and uploaded once, at capture: a step that changed one in place
    // saw its last run's values on a GPU (10, 20, 30 ...), where each CPU
    // run makes it anew.
    for dev in capture_devices() {
        let out = Tensor::zeros([5, 4], DType::F32, &dev).unwrap();
        let (o, d) = (out.clone(), dev.clone());
        let mut graph = dev
            .capture(move || {
                let made = [
                    Tensor::arange(0.0f32, 4.0, 1.0, &d)?,
                    Tensor::linspace(0.0, 1.0, 4, DType::F32, &d)?,
                    Tensor::hann_window(4, &d)?,
                    Tensor::fftfreq(4, 1.0, &d)?,
                    Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4], &d)?,
                ];
                for (row, t) in made.iter().enumerate() {
                    t.add_scalar_(10.0)?;
                    o.slice(s![row])?.assign(t)?;
                }
                Ok(())
            })
            .unwrap();
        let once = out.to_vec::<f32>().unwrap();
        let want: Vec<f32> = [
            [0.0, 1.0, 2.0, 3.0],
            [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0],
            [0.0, 0.5, 1.0, 0.5],
            [0.0, 0.25, -0.5, -0.25],
            [1.0, 2.0, 3.0, 4.0],
        ]
        .iter()
        .flatten()
        .map(|v| v + 10.0)
        .collect();
        assert_close(&once, &want, 1e-6, &label(&dev));
        for _ in 0..2 {
            graph.run().unwrap();
            assert_eq!(out.to_vec::<f32>().unwrap(), once, "{}", label(&dev));
        }
    }
}

/// An upload inside a step after one of its ops may take a buffer released
/// just before the capture began (nothing pending reads it): no flush, no
/// refusal.
#[test]
fn an_upload_after_an_op_in_a_step_takes_a_buffer_freed_before_it() {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::zeros([64], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    // Released in the open batch, with nothing pending.
    drop(Tensor::from_slice(&[0f32; 64], [64], &dev).unwrap());
    let (xs, d) = (x.clone(), dev.clone());
    let mut graph = dev
        .capture(move || {
            xs.add_scalar_(1.0)?;
            let w = Tensor::from_slice(&[2f32; 64], [64], &d)?;
            xs.add_(&w)
        })
        .unwrap();
    graph.run().unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![6.0; 64]);
}

/// Another GPU's graph run inside a step ran once, at capture: refused as
/// that GPU's ops are.
#[test]
fn a_step_running_another_gpus_graph_is_refused() {
    let Some((d1, d2)) = two_gpus() else {
        return;
    };
    let x = Tensor::zeros([3], DType::F32, &d2).unwrap();
    let xs = x.clone();
    let mut other = d2.capture(move || xs.add_scalar_(1.0)).unwrap();
    let y = Tensor::zeros([3], DType::F32, &d1).unwrap();
    let ys = y.clone();
    let e = d1
        .capture(move || {
            other.run()?;
            ys.add_scalar_(1.0)
        })
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Argument {
                op: "Device::capture",
                ..
            }
        ),
        "{e}"
    );
    // Its capture's run and the one inside the step, eagerly.
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

/// A copy from another GPU inside a step reads that GPU back, once: the
/// capture refuses it as it refuses that GPU's ops (its runs would keep
/// the value read at capture).
#[test]
fn a_copy_from_another_gpu_inside_a_step_is_refused() {
    let Some((d1, d2)) = two_gpus() else {
        return;
    };
    let x = Tensor::full([3], 2.0, DType::F32, &d2).unwrap();
    let y = Tensor::zeros([3], DType::F32, &d1).unwrap();
    let (xs, ys, d) = (x.clone(), y.clone(), d1.clone());
    let e = d1
        .capture(move || ys.assign(&xs.to_device(&d)?))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Argument {
                op: "Device::capture",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

/// Random draws inside a step are made at its capture on a GPU: each run
/// writes the same numbers (the CPU's step runs the closure again and
/// draws anew; the README says so).
#[test]
fn random_draws_in_a_gpu_step_repeat_on_every_run() {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::zeros([8], DType::F32, &dev).unwrap();
    let (xs, d) = (x.clone(), dev.clone());
    let mut g = webtensor::Generator::new(7);
    let mut step = dev
        .capture(move || xs.assign(&g.randn([8], DType::F32, &d)?))
        .unwrap();
    let first = x.to_vec::<f32>().unwrap();
    step.run().unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), first);
}

#[test]
fn a_capture_inside_a_capture_is_refused() {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let inner_dev = dev.clone();
    let x = Tensor::zeros([3], DType::F32, &dev).unwrap();
    let xs = x.clone();
    let outer = dev.capture(move || {
        let xi = xs.clone();
        inner_dev
            .capture(move || xi.add_scalar_(1.0))
            .map(|_: Graph| ())
    });
    let e = outer.unwrap_err();
    assert!(e.to_string().contains("already"), "{e}");
    // Nothing is left half-captured.
    let mut again = dev.capture(move || x.add_scalar_(1.0)).unwrap();
    again.run().unwrap();
}

#[test]
fn a_panicking_step_leaves_the_device_as_it_was() {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::zeros([3], DType::F32, &dev).unwrap();
    let xs = x.clone();
    let d = dev.clone();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        d.capture(move || {
            xs.add_scalar_(1.0)?;
            panic!("inside the step");
        })
    }));
    assert!(panicked.is_err());
    x.add_scalar_(1.0).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

#[test]
fn index_faults_of_a_replayed_step_reach_the_next_readback() {
    for dev in capture_devices() {
        let src = Tensor::arange(0.0f32, 10.0, 1.0, &dev).unwrap();
        let idx = Tensor::from_slice(&[1i32, 3, 5], [3], &dev).unwrap();
        let out = Tensor::zeros([3], DType::F32, &dev).unwrap();
        let (s2, i2, o2) = (src.clone(), idx.clone(), out.clone());
        let mut graph = dev.capture(move || o2.add_(&s2.take(&i2, 0)?)).unwrap();
        graph.run().unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![2.0, 6.0, 10.0]);
        idx.fill_(42).unwrap();
        let faulted = graph.run().and_then(|()| out.to_vec::<f32>().map(|_| ()));
        assert!(
            matches!(faulted, Err(Error::Index { .. })),
            "{}: {faulted:?}",
            label(&dev)
        );
        // Reported once; the indices mended, runs go on.
        idx.fill_(0).unwrap();
        graph.run().unwrap();
        out.to_vec::<f32>().unwrap();
    }
}

#[test]
fn dropping_a_graph_gives_its_buffers_back() {
    let Some(dev) = own_gpu(GpuOptions {
        fusion: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::ones([1 << 14], DType::F32, &dev).unwrap();
    dev.sync().unwrap();
    let live_before = dev.stats().bytes_live;
    let xs = x.clone();
    // Unfused, the dropped intermediates take temporaries the graph keeps.
    let mut graph = dev
        .capture(move || xs.assign(&xs.exp()?.mul_scalar(0.5)?.sqrt()?))
        .unwrap();
    graph.run().unwrap();
    dev.sync().unwrap();
    assert!(
        dev.stats().bytes_live > live_before,
        "the graph holds temporaries"
    );
    drop(graph);
    dev.sync().unwrap();
    assert_eq!(dev.stats().bytes_live, live_before);
    // The buffers it held serve new tensors, and x is intact.
    let y = x.add_scalar(1.0).unwrap();
    assert_close(
        &read_f32(&y),
        &read_f32(&x.add_scalar(1.0).unwrap()),
        0.0,
        "x",
    );
}

#[test]
fn a_graph_keeps_the_buffers_of_tensors_dropped_after_capture() {
    for dev in capture_devices().into_iter().skip(1) {
        dev.sync().unwrap();
        let live_before = dev.stats().bytes_live;
        let x = Tensor::ones([1 << 12], DType::F32, &dev).unwrap();
        let out = Tensor::zeros([1 << 12], DType::F32, &dev).unwrap();
        // The step gives its handle of x up at capture (the graph keeps
        // the closure, to capture it again after a recovery): dropping x
        // drops its storage.
        let (mut xs, outs) = (Some(x.clone()), out.clone());
        let mut graph = dev
            .capture(move || {
                let x = xs.take().expect("captured once");
                outs.assign(&x.mul_scalar(2.0)?)
            })
            .unwrap();
        // The graph binds x's buffer on every run: no new tensor may get it.
        drop(x);
        let others: Vec<Tensor> = (0..4)
            .map(|i| Tensor::full([1 << 12], -(i as f64), DType::F32, &dev).unwrap())
            .collect();
        out.fill_(0.0).unwrap();
        graph.run().unwrap();
        assert_close(
            &read_f32(&out),
            &[2.0; 1 << 12],
            0.0,
            "a run after x was dropped",
        );
        drop((others, out));
        dev.sync().unwrap();
        assert!(
            dev.stats().bytes_live > live_before,
            "the graph still holds the buffers of x and out"
        );
        drop(graph);
        dev.sync().unwrap();
        assert_eq!(
            dev.stats().bytes_live,
            live_before,
            "dropping the graph gives back the buffers of the tensors dropped before it"
        );
    }
}

#[test]
fn buffers_only_the_graph_uses_are_lent_to_no_one_else() {
    for dev in capture_devices() {
        let out = Tensor::zeros([256], DType::F32, &dev).unwrap();
        let o2 = out.clone();
        // Only the closure holds `w` and `scale`, and on a GPU it gives
        // them up at capture: the graph holds their buffers (the CPU's
        // runs call it again).
        let once = dev.is_gpu();
        let mut kept = Some((
            Tensor::full([256], 2.0, DType::F32, &dev).unwrap(),
            Tensor::full([256], 3.0, DType::F32, &dev).unwrap(),
        ));
        let mut graph = dev
            .capture(move || {
                let (w, scale) =
                    if once { kept.take() } else { kept.clone() }.expect("captured once on a GPU");
                let t = w.mul(&scale)?;
                o2.add_(&t)
            })
            .unwrap();
        // New tensors of the same size, which a pool would serve from
        // buffers given back.
        let others: Vec<Tensor> = (0..8)
            .map(|k| Tensor::full([256], -100.0 - k as f32, DType::F32, &dev).unwrap())
            .collect();
        graph.run().unwrap();
        graph.run().unwrap();
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            vec![18.0; 256],
            "{}",
            label(&dev)
        );
        for (k, t) in others.iter().enumerate() {
            assert_eq!(t.to_vec::<f32>().unwrap(), vec![-100.0 - k as f32; 256]);
        }
    }
}

#[test]
fn steps_with_ffts_convolutions_and_resizing_replay() {
    // These ops upload constants (twiddle tables, interpolation indices)
    // and make temporaries inside the step: a replay must see the inputs
    // the application writes between runs.
    for dev in capture_devices() {
        let x = Tensor::from_slice(&common::noise(2 * 3 * 8 * 8, 5), [2, 3, 8, 8], &dev).unwrap();
        let w = Tensor::from_slice(&common::noise(4 * 3 * 3 * 3, 6), [4, 3, 3, 3], &dev).unwrap();
        let out = Tensor::zeros([2, 4, 5, 8], DType::F32, &dev).unwrap();
        let spectrum = Tensor::zeros([2, 4, 5, 5], DType::C64, &dev).unwrap();
        let (xs, ws, o, sp) = (x.clone(), w.clone(), out.clone(), spectrum.clone());
        let step = move || -> webtensor::Result<()> {
            let y = xs.conv2d(&ws, &Conv::new().padding(1))?;
            o.assign(&y.resize([5, 8], Resize::Bilinear)?)?;
            sp.assign(&o.rfft(-1)?)
        };
        let mut graph = dev.capture(step).unwrap();
        for round in 0..2 {
            x.mul_scalar_(-0.5).unwrap();
            graph.run().unwrap();
            let y = x.conv2d(&w, &Conv::new().padding(1)).unwrap();
            let want = y.resize([5, 8], Resize::Bilinear).unwrap();
            let what = format!("round {round} on {}", label(&dev));
            assert_close(&read_f32(&out), &read_f32(&want), 1e-5, &what);
            let want = want.rfft(-1).unwrap().abs().unwrap();
            assert_close(
                &read_f32(&spectrum.abs().unwrap()),
                &read_f32(&want),
                1e-5,
                &what,
            );
        }
    }
}

/// A kernel's self-check submits its probes and waits for them: when
/// another thread began a capture while a first product's probe ran, the
/// probe's next submit was refused, failing both the product (an op
/// outside the step) and the capture. A capture now waits for the probe.
#[test]
fn a_capture_begun_during_another_threads_self_check_waits_for_it() {
    for delay_ms in [0u64, 10, 20, 30, 40] {
        let Some(dev) = own_gpu(GpuOptions::default()) else {
            return;
        };
        let a = Tensor::rand([40, 24], DType::F32, 1, &dev).unwrap();
        let b = Tensor::rand([24, 36], DType::F32, 2, &dev).unwrap();
        let x = Tensor::zeros([8], DType::F32, &dev).unwrap();
        dev.sync().unwrap();
        let start = std::sync::Barrier::new(2);
        let (product, graph) = std::thread::scope(|s| {
            let product = s.spawn(|| {
                start.wait();
                a.matmul(&b)
            });
            let graph = s.spawn(|| {
                start.wait();
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                let y = x.clone();
                // A graph stays on its thread: run there.
                dev.capture(move || {
                    // A step that takes a while: the capture is open
                    // across the probe's submits.
                    std::thread::sleep(std::time::Duration::from_millis(25));
                    y.add_scalar_(1.0)
                })
                .and_then(|mut graph| graph.run())
            });
            (product.join().unwrap(), graph.join().unwrap())
        });
        let product = product.unwrap_or_else(|e| panic!("{delay_ms} ms: the product: {e}"));
        graph.unwrap_or_else(|e| panic!("{delay_ms} ms: the capture: {e}"));
        assert_eq!(x.to_vec::<f32>().unwrap(), [2.0; 8], "{delay_ms} ms");
        let want = a
            .to_device(&Device::cpu())
            .unwrap()
            .matmul(&b.to_device(&Device::cpu()).unwrap())
            .unwrap();
        assert_close(
            &read_f32(&product),
            &read_f32(&want),
            1e-5,
            &format!("{delay_ms} ms"),
        );
    }
}

/// An op inside the step that takes a tensor's buffer and then fails (a
/// custom kernel's second operand past the binding limit), an error the
/// step lets pass, and the tensor dropped while another op still reads
/// what wrote it: the buffer went back to the pool, and every run wrote
/// `a + b` into the next tensor the pool gave it to. The capture is
/// refused; the step ran as eager ops.
#[test]
fn a_step_that_lets_a_failed_op_pass_after_it_took_a_buffer_is_refused() {
    let Some(dev) = own_gpu(GpuOptions {
        max_binding_bytes: Some(1024),
        fusion: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let ones = || Tensor::ones([64], DType::F32, &dev).unwrap();
    let (a, b, o) = (
        ones(),
        ones(),
        Tensor::zeros([64], DType::F32, &dev).unwrap(),
    );
    let wide = Tensor::zeros([64 * 64], DType::F32, &dev).unwrap();
    let k = webtensor::CustomKernel::new(
        "k",
        &[("p", DType::F32), ("q", DType::F32)],
        &[],
        ("r", DType::F32),
        "r = p + q;",
    )
    .unwrap();
    let os = o.clone();
    let step = dev.capture(move || {
        let x = a.add(&b)?;
        let y = x.mul_scalar(3.0)?;
        // 16 KiB of binding for 64 elements: refused after `x` is bound.
        let refused = k.call_into(&os, &[&x, &wide.slice(s![..;64])?], &[]);
        assert!(matches!(refused, Err(Error::TooLarge { .. })));
        drop(x);
        os.add_(&y)
    });
    match step {
        Err(Error::Argument {
            op: "Device::capture",
            msg,
        }) => {
            assert!(msg.contains("cannot be replayed"), "{msg}")
        }
        other => panic!("{:?}", other.err()),
    }
    let t = Tensor::zeros([64], DType::F32, &dev).unwrap();
    assert_eq!(o.to_vec::<f32>().unwrap(), [6.0; 64]);
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0; 64]);
}
