//! What comes back after a lost GPU (`Persist`, `Tensor::checkpoint`): a
//! tensor made from host data under `Persist::HostCopy` and never written
//! since, and a checkpointed one, are restored bit for bit (every dtype,
//! through every view of their storage) on the new device or on the CPU
//! a handle goes on on; a written host copy, and every other tensor, stay
//! lost; restored tensors run ops, are written, checkpointed again and
//! come back again.

mod common;

use common::lost::{assert_lost, lose};

use half::{bf16, f16};
use webtensor::{DType, Device, GpuOptions, Persist, Tensor};

fn own(options: GpuOptions) -> Option<Device> {
    common::own_gpu(options)
}

/// Bits of f32 values, to compare them exactly (NaN included).
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Host values of every dtype, with NaN, infinities, signed zeros and
/// subnormals where the dtype has them.
struct Values {
    f32s: Vec<f32>,
    f16s: Vec<f16>,
    bf16s: Vec<bf16>,
    i32s: Vec<i32>,
    u8s: Vec<u8>,
    bools: Vec<bool>,
}

fn values() -> Values {
    let mut f32s = common::noise(35, 11);
    f32s[..6].copy_from_slice(&[
        f32::NAN,
        f32::INFINITY,
        -0.0,
        1e-40,
        f32::MAX,
        f32::MIN_POSITIVE,
    ]);
    Values {
        f16s: f32s.iter().map(|&x| f16::from_f32(x)).collect(),
        bf16s: f32s.iter().map(|&x| bf16::from_f32(x)).collect(),
        i32s: (0..35).map(|i| i * 7919 - 100_000).collect(),
        u8s: (0..35).map(|i| (i * 37) as u8).collect(),
        bools: (0..35).map(|i| i % 3 == 0).collect(),
        f32s,
    }
}

/// Tensors of every dtype made from `v` on `dev`.
struct Made {
    f32s: Tensor,
    f16s: Tensor,
    bf16s: Tensor,
    i32s: Tensor,
    u8s: Tensor,
    bools: Tensor,
}

fn make(v: &Values, dev: &Device) -> Made {
    Made {
        f32s: Tensor::from_slice(&v.f32s, [5, 7], dev).unwrap(),
        f16s: Tensor::from_slice(&v.f16s, [5, 7], dev).unwrap(),
        bf16s: Tensor::from_slice(&v.bf16s, [5, 7], dev).unwrap(),
        i32s: Tensor::from_slice(&v.i32s, [5, 7], dev).unwrap(),
        u8s: Tensor::from_slice(&v.u8s, [5, 7], dev).unwrap(),
        bools: Tensor::from_slice(&v.bools, [5, 7], dev).unwrap(),
    }
}

fn assert_made(m: &Made, v: &Values, what: &str) {
    assert_eq!(
        bits(&m.f32s.to_vec::<f32>().unwrap()),
        bits(&v.f32s),
        "{what} f32"
    );
    let f16_bits = |x: Vec<f16>| x.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        f16_bits(m.f16s.to_vec().unwrap()),
        f16_bits(v.f16s.clone()),
        "{what} f16"
    );
    let bf16_bits = |x: Vec<bf16>| x.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bf16_bits(m.bf16s.to_vec().unwrap()),
        bf16_bits(v.bf16s.clone()),
        "{what} bf16"
    );
    assert_eq!(m.i32s.to_vec::<i32>().unwrap(), v.i32s, "{what} i32");
    assert_eq!(m.u8s.to_vec::<u8>().unwrap(), v.u8s, "{what} u8");
    assert_eq!(m.bools.to_vec::<bool>().unwrap(), v.bools, "{what} bool");
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.25 - 3.0).collect()
}

#[test]
fn the_cpu_keeps_nothing_and_needs_nothing() {
    let cpu = Device::cpu();
    cpu.set_persist(Persist::HostCopy);
    assert_eq!(cpu.persist(), Persist::Nothing);
    let t = Tensor::from_slice(&[1.0f32, 2.0], [2], &cpu).unwrap();
    t.checkpoint().unwrap();
    t.set_persist(Persist::HostCopy).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0]);
}

#[test]
fn host_copies_and_checkpoints_come_back_bit_for_bit() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let v = values();
    assert_eq!(dev.persist(), Persist::Nothing);
    dev.set_persist(Persist::HostCopy);
    assert_eq!(dev.persist(), Persist::HostCopy);
    let kept = make(&v, &dev);
    let kept_view = kept.f32s.transpose(0, 1).unwrap();
    let moved = Tensor::from_slice(&ramp(12), [3, 4], &Device::cpu())
        .unwrap()
        .to_device(&dev)
        .unwrap();
    // Written after it was made: its host copy is stale.
    let written = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    written.add_scalar_(1.0).unwrap();
    // Written through a view of its storage: stale too.
    let written_through_view = Tensor::from_slice(&ramp(8), [2, 4], &dev).unwrap();
    written_through_view
        .narrow(1, 1, 2)
        .unwrap()
        .mul_scalar_(2.0)
        .unwrap();
    // Handed to the application, which may write it: stale.
    let handed = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    drop(handed.gpu_buffer().unwrap());
    dev.set_persist(Persist::Nothing);
    let plain = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    // A state checkpointed, then written: it comes back as checkpointed.
    let state = Tensor::zeros([4, 4], DType::F32, &dev).unwrap();
    for _ in 0..3 {
        state.add_scalar_(1.0).unwrap();
    }
    state.checkpoint().unwrap();
    state.add_scalar_(10.0).unwrap();
    // A tensor an op made, kept on its own.
    let made_by_op = kept.f32s.mul_scalar(0.5).unwrap().floor().unwrap();
    let made_by_op_values = made_by_op.to_vec::<f32>().unwrap();
    made_by_op.set_persist(Persist::HostCopy).unwrap();
    // Kept, then let go.
    let let_go = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    let_go.checkpoint().unwrap();
    let_go.set_persist(Persist::Nothing).unwrap();
    dev.set_persist(Persist::HostCopy);

    lose(&dev);
    assert!(kept.f32s.is_lost());
    assert_lost(
        kept.f32s.to_vec::<f32>(),
        "a kept tensor before the recovery",
    );
    dev.recover().unwrap();
    assert_eq!(dev.persist(), Persist::HostCopy, "the setting carries over");

    assert_made(&kept, &v, "a host copy");
    assert!(!kept.f32s.is_lost() && !kept_view.is_lost());
    assert_eq!(
        bits(&kept_view.to_vec::<f32>().unwrap()),
        bits(
            &Tensor::from_slice(&v.f32s, [5, 7], &Device::cpu())
                .unwrap()
                .transpose(0, 1)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        ),
        "a view of a host copy"
    );
    assert_eq!(moved.to_vec::<f32>().unwrap(), ramp(12));
    assert_eq!(state.to_vec::<f32>().unwrap(), [3.0; 16], "the checkpoint");
    assert_eq!(
        bits(&made_by_op.to_vec::<f32>().unwrap()),
        bits(&made_by_op_values)
    );
    for (t, what) in [
        (&written, "written"),
        (&written_through_view, "written through a view"),
        (&handed, "handed out"),
        (&plain, "made without a copy"),
        (&let_go, "let go"),
    ] {
        assert!(t.is_lost(), "{what}");
        assert_lost(t.to_vec::<f32>(), what);
    }

    // Restored tensors run ops with the new device's tensors, and with
    // the CPU's answers.
    let fresh = Tensor::from_slice(&ramp(20), [4, 5], &dev).unwrap();
    let cpu = Device::cpu();
    let want = Tensor::from_slice(&ramp(12), [3, 4], &cpu)
        .unwrap()
        .matmul(&Tensor::from_slice(&ramp(20), [4, 5], &cpu).unwrap())
        .unwrap();
    let got = moved
        .matmul(&fresh)
        .unwrap()
        .add(&fresh.sum(0).unwrap())
        .unwrap();
    let want = want
        .add(
            &want
                .sum(0)
                .unwrap()
                .mul_scalar(0.0)
                .unwrap()
                .add(
                    &Tensor::from_slice(&ramp(20), [4, 5], &cpu)
                        .unwrap()
                        .sum(0)
                        .unwrap(),
                )
                .unwrap(),
        )
        .unwrap();
    common::assert_close(
        &got.to_vec::<f32>().unwrap(),
        &want.to_vec::<f32>().unwrap(),
        1e-5,
        "restored @ new",
    );

    // Written after the recovery, and checkpointed again.
    state.add_scalar_(1.0).unwrap();
    assert_eq!(state.to_vec::<f32>().unwrap(), [4.0; 16]);
    kept.i32s.add_scalar_(1).unwrap();
    lose(&dev);
    dev.recover().unwrap();
    assert_eq!(dev.recoveries(), 2);
    assert_eq!(
        state.to_vec::<f32>().unwrap(),
        [3.0; 16],
        "the first checkpoint"
    );
    state.add_scalar_(2.0).unwrap();
    state.checkpoint().unwrap();
    assert_lost(
        kept.i32s.to_vec::<i32>(),
        "a host copy written after a recovery",
    );
    assert_eq!(
        bits(&kept.f32s.to_vec::<f32>().unwrap()),
        bits(&v.f32s),
        "an unwritten host copy, twice"
    );
    lose(&dev);
    dev.recover().unwrap();
    assert_eq!(
        state.to_vec::<f32>().unwrap(),
        [5.0; 16],
        "the second checkpoint"
    );
}

#[test]
fn a_handle_that_goes_on_on_the_cpu_gets_its_kept_tensors_there() {
    let Some(dev) = own(GpuOptions {
        sabotage_recovery: true,
        ..Default::default()
    }) else {
        return;
    };
    let v = values();
    dev.set_persist(Persist::HostCopy);
    let kept = make(&v, &dev);
    let state = Tensor::full([3, 3], 2.5f32, DType::F32, &dev).unwrap();
    state.checkpoint().unwrap();
    state.add_scalar_(1.0).unwrap();
    lose(&dev);
    dev.recover().unwrap();
    assert!(dev.is_cpu());
    assert_made(&kept, &v, "on the CPU");
    assert_eq!(state.to_vec::<f32>().unwrap(), [2.5; 9]);
    let cpu_t = Tensor::ones([3, 3], DType::F32, &Device::cpu()).unwrap();
    assert_eq!(
        state.add(&cpu_t).unwrap().to_vec::<f32>().unwrap(),
        [3.5; 9]
    );
    state.add_scalar_(1.0).unwrap();
    assert_eq!(state.to_vec::<f32>().unwrap(), [3.5; 9]);
    // Nothing is lost on the CPU: a checkpoint there has nothing to do.
    state.checkpoint().unwrap();
    assert!(!state.is_lost());
}

#[test]
fn a_step_captured_over_a_host_copy_makes_it_stale() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    dev.set_persist(Persist::HostCopy);
    let x = Tensor::from_slice(&ramp(16), [16], &dev).unwrap();
    let y = Tensor::from_slice(&ramp(16), [16], &dev).unwrap();
    let held = x.clone();
    let mut graph = dev.capture(move || held.add_scalar_(1.0)).unwrap();
    graph.run().unwrap();
    lose(&dev);
    dev.recover().unwrap();
    assert_lost(x.to_vec::<f32>(), "written by a captured step");
    assert_eq!(y.to_vec::<f32>().unwrap(), ramp(16));
}

#[test]
fn a_captured_step_over_kept_tensors_runs_on_after_a_recovery() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    dev.set_persist(Persist::HostCopy);
    let weights = Tensor::from_slice(&ramp(16), [4, 4], &dev).unwrap();
    dev.set_persist(Persist::Nothing);
    let state = Tensor::zeros([4, 4], DType::F32, &dev).unwrap();
    let (s, w) = (state.clone(), weights.clone());
    // state <- state + w @ w: matmul and elementwise kernels in one step.
    let mut step = dev.capture(move || s.add_(&w.matmul(&w)?)).unwrap();
    step.run().unwrap();
    state.checkpoint().unwrap();
    step.run().unwrap();
    let cpu = Device::cpu();
    let w = Tensor::from_slice(&ramp(16), [4, 4], &cpu).unwrap();
    let ww = w.matmul(&w).unwrap().to_vec::<f32>().unwrap();
    let times = |k: f32| ww.iter().map(|x| x * k).collect::<Vec<f32>>();
    common::assert_close(&state.to_vec::<f32>().unwrap(), &times(3.0), 1e-6, "3 runs");
    lose(&dev);
    assert_lost(
        step.run().and_then(|()| dev.sync()),
        "a run on the lost device",
    );
    dev.recover().unwrap();
    // The next run captures the step again on the new device: from the
    // checkpoint (2 runs), two more.
    step.run().unwrap();
    step.run().unwrap();
    common::assert_close(&state.to_vec::<f32>().unwrap(), &times(4.0), 1e-6, "after");
    assert!(step.dispatches() > 0);
}

#[test]
fn replays_and_the_applications_writes_leave_no_host_copy_valid() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    // A step captured first, the copy taken after: its runs write it.
    let x = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    let held = x.clone();
    let mut step = dev.capture(move || held.add_scalar_(1.0)).unwrap();
    x.set_persist(Persist::HostCopy).unwrap();
    step.run().unwrap();
    // A buffer the application holds may be written behind webtensor's
    // back: no copy of it can stay valid until its next write.
    let y = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    let handed = y.gpu_buffer().unwrap();
    assert!(matches!(
        y.set_persist(Persist::HostCopy),
        Err(webtensor::Error::Argument { .. })
    ));
    y.checkpoint().unwrap();
    drop(handed);
    lose(&dev);
    dev.recover().unwrap();
    assert_lost(x.to_vec::<f32>(), "written by a run after its copy");
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        ramp(8),
        "a checkpoint is a snapshot"
    );
    // After the recovery, a wrap of a restored tensor's buffer is the same
    // storage (an in-place op over both copies what overlaps).
    let handed = y.gpu_buffer().unwrap();
    let wrapped =
        Tensor::from_gpu_buffer(&handed.buffer, DType::F32, [8], handed.byte_offset, &dev).unwrap();
    assert!(y.shares_storage(&wrapped));
    y.add_(&wrapped.flip(&[0]).unwrap()).unwrap();
    let r = ramp(8);
    let want: Vec<f32> = (0..8).map(|i| r[i] + r[7 - i]).collect();
    assert_eq!(y.to_vec::<f32>().unwrap(), want);
}

/// A tensor the step made (an op's output, not a destination written in
/// place) is written again by every run too: a host copy taken between
/// runs goes stale, as one of a tensor the step writes in place does.
#[test]
fn a_tensor_a_captured_step_made_is_written_by_its_runs() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    let made: std::rc::Rc<std::cell::RefCell<Option<Tensor>>> = Default::default();
    let (held, slot) = (x.clone(), made.clone());
    // y = 2 (x + 1), through an intermediate the step drops.
    let mut step = dev
        .capture(move || {
            let shifted = held.add_scalar(1.0)?;
            *slot.borrow_mut() = Some(shifted.mul_scalar(2.0)?);
            Ok(())
        })
        .unwrap();
    let y = made.borrow().clone().unwrap();
    y.set_persist(Persist::HostCopy).unwrap();
    x.fill_(5.0).unwrap();
    step.run().unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [12.0; 8]);
    lose(&dev);
    dev.recover().unwrap();
    assert_lost(
        y.to_vec::<f32>(),
        "made by a captured step, written by its run",
    );
}

/// An op another thread records on the device while a step is captured
/// becomes part of the step, and its runs write that op's destination
/// too: a host copy of it taken after the capture goes stale at the next
/// run (the steps' writes were noted on the capturing thread alone, and
/// such a copy came back as valid, from before the runs).
#[test]
fn a_write_another_thread_records_into_a_step_makes_its_copy_stale() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let w = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    let x = Tensor::zeros([8], DType::F32, &dev).unwrap();
    let (w2, x2) = (w.clone(), x.clone());
    let mut step = dev
        .capture(move || {
            std::thread::scope(|s| s.spawn(|| w2.add_scalar_(1.0)).join().unwrap())?;
            x2.add_scalar_(1.0)
        })
        .unwrap();
    w.set_persist(Persist::HostCopy).unwrap();
    step.run().unwrap();
    let plus = |k: f32| ramp(8).iter().map(|v| v + k).collect::<Vec<f32>>();
    assert_eq!(w.to_vec::<f32>().unwrap(), plus(2.0));
    lose(&dev);
    dev.recover().unwrap();
    assert_lost(
        w.to_vec::<f32>(),
        "written by another thread's op in the step",
    );
}

/// A step captured again after a recovery (its first run there) writes
/// the restored storages of the tensors it updates in place: its runs
/// make their host copies stale as before the loss (the writes were
/// matched to the capture by the device of the tensor's own, lost,
/// storage, and left out).
#[test]
fn a_step_captured_again_after_a_recovery_makes_its_copies_stale() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let t = Tensor::from_slice(&ramp(8), [8], &dev).unwrap();
    t.checkpoint().unwrap();
    let held = t.clone();
    let mut step = dev.capture(move || held.add_scalar_(1.0)).unwrap();
    lose(&dev);
    dev.recover().unwrap();
    // Captured again on the new device, and run there.
    step.run().unwrap();
    t.set_persist(Persist::HostCopy).unwrap();
    step.run().unwrap();
    let plus = |k: f32| ramp(8).iter().map(|v| v + k).collect::<Vec<f32>>();
    assert_eq!(t.to_vec::<f32>().unwrap(), plus(2.0));
    lose(&dev);
    dev.recover().unwrap();
    assert_lost(
        t.to_vec::<f32>(),
        "written by a run of the step captured again",
    );
}

#[test]
fn a_tensor_that_could_not_be_restored_stays_lost() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    dev.set_persist(Persist::HostCopy);
    let first = Tensor::from_slice(&ramp(1 << 18), [1 << 18], &dev).unwrap();
    let second = Tensor::from_slice(&ramp(1 << 18), [1 << 18], &dev).unwrap();
    // Room for one of the two 1 MiB tensors on the next device.
    dev.set_memory_cap(Some(3 << 19));
    lose(&dev);
    let restored = dev.recover();
    assert!(
        matches!(restored, Err(webtensor::Error::OutOfMemory { .. })),
        "{restored:?}"
    );
    assert!(!dev.is_lost(), "the handle is rebound all the same");
    let (ok, lost): (Vec<&Tensor>, Vec<&Tensor>) =
        [&first, &second].into_iter().partition(|t| !t.is_lost());
    assert_eq!((ok.len(), lost.len()), (1, 1));
    // (The readback's staging counts under the cap too.)
    dev.set_memory_cap(None);
    assert_eq!(ok[0].to_vec::<f32>().unwrap(), ramp(1 << 18));
    // For good: the next recovery, with room, does not bring it back.
    lose(&dev);
    dev.recover().unwrap();
    assert!(lost[0].is_lost());
    assert_eq!(ok[0].to_vec::<f32>().unwrap(), ramp(1 << 18));
}

#[test]
fn a_checkpoint_of_several_tensors_brings_them_back_as_of_one_moment() {
    let Some(dev) = own(GpuOptions::default()) else {
        return;
    };
    let u = Tensor::from_slice(&ramp(16), [4, 4], &dev).unwrap();
    let v = Tensor::zeros([16], DType::F32, &dev).unwrap();
    Tensor::checkpoint_all(&[&u, &v.reshape([4, 4]).unwrap()]).unwrap();
    u.mul_scalar_(3.0).unwrap();
    v.add_scalar_(1.0).unwrap();
    lose(&dev);
    dev.recover().unwrap();
    assert_eq!(u.to_vec::<f32>().unwrap(), ramp(16));
    assert_eq!(v.to_vec::<f32>().unwrap(), [0.0; 16]);
    // Tensors of two GPU handles are checkpointed apart.
    if let Some(other) = own(GpuOptions::default()) {
        let w = Tensor::ones([2], DType::F32, &other).unwrap();
        assert!(matches!(
            Tensor::checkpoint_all(&[&u, &w]),
            Err(webtensor::Error::Argument {
                op: "checkpoint_all",
                ..
            })
        ));
    }
}
