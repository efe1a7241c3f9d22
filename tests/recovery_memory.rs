//! A hundred losses and recoveries hold no memory: the lost devices go
//! with their last tensor, and kept tensors hold only their newest
//! restored storage (a device kept alive a cycle grows the process by
//! about 7 MiB on lavapipe, 700 MiB over the loop). The process's
//! resident memory is the measure, so these tests are a binary of their
//! own, and take turns.

mod common;

use common::lost::lose;

use std::sync::Mutex;
use webtensor::{DType, GpuOptions, Persist, Tensor};

/// One test at a time: each measures the whole process.
static ALONE: Mutex<()> = Mutex::new(());

/// The most the loop may grow the process by.
const BUDGET: u64 = 64 << 20;

/// The process's resident memory in bytes (Linux).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Runs `cycle` 10 times to settle, then 100 times, and checks what the
/// 100 grew the process by.
fn within_budget(what: &str, mut cycle: impl FnMut(usize)) {
    for i in 0..10 {
        cycle(i);
    }
    let before = resident_bytes();
    for i in 10..110 {
        cycle(i);
    }
    if let (Some(before), Some(after)) = (before, resident_bytes()) {
        let grown = after.saturating_sub(before);
        eprintln!("{what}: 100 cycles grew the process by {} KiB", grown >> 10);
        assert!(
            grown < BUDGET,
            "{what}: 100 cycles grew the process by {} MiB",
            grown >> 20
        );
    }
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.25 - 3.0).collect()
}

#[test]
fn a_hundred_losses_and_recoveries_hold_no_memory() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    within_budget("losses and recoveries", |i| {
        let a = Tensor::full([1 << 16], i as f32, DType::F32, &dev).unwrap();
        let b = a.add_scalar(1.0).unwrap().sum(0).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), [(i as f32 + 1.0) * 65536.0]);
        lose(&dev);
        dev.recover().unwrap();
    });
    assert_eq!(dev.recoveries(), 110);
}

#[test]
fn a_hundred_cycles_of_kept_tensors_hold_no_memory() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    dev.set_persist(Persist::HostCopy);
    let weights = Tensor::from_slice(&ramp(1 << 16), [256, 256], &dev).unwrap();
    dev.set_persist(Persist::Nothing);
    let state = Tensor::zeros([256, 256], DType::F32, &dev).unwrap();
    let per_cycle = ramp(1 << 16).iter().sum::<f32>();
    within_budget("kept tensors", |i| {
        state.add_(&weights).unwrap();
        state.checkpoint().unwrap();
        let sum = state.sum(..).unwrap().item::<f32>().unwrap();
        let want = (i + 1) as f32 * per_cycle;
        assert!(
            (sum - want).abs() <= want.abs() * 1e-4,
            "cycle {i}: {sum} {want}"
        );
        lose(&dev);
        dev.recover().unwrap();
    });
}
