//! The scheduler on the adapter at hand: host time per small op with
//! batching vs one submit per op (and across flush thresholds), and a fused
//! elementwise chain vs the same chain unfused on 16M f32.
//!
//! Every measurement syncs before the clock stops. Run with
//! `cargo bench --bench scheduler`; results are recorded in BENCHMARKS.md.
//! Needs a GPU adapter (lavapipe works); prints a note and measures nothing
//! without one.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use webtensor::{DType, Device, GpuOptions, Tensor, s};

const SMALL_OPS: usize = 1000;

fn gpu(flush_threshold: usize, fusion: bool) -> Option<Device> {
    Device::gpu_with(GpuOptions {
        flush_threshold: Some(flush_threshold),
        fusion: Some(fusion),
        ..Default::default()
    })
    .map_err(|e| eprintln!("scheduler bench skipped: {e}"))
    .ok()
}

/// 1000 in-place ops on views of a 64 x 64 matrix, then a flush (a submit
/// that does not wait for the GPU).
fn small_ops(x: &Tensor, dev: &Device) {
    let even = x.slice(s![..;2, ..]).expect("view");
    let odd_cols = x.t().slice(s![1..;2]).expect("view");
    for k in 0..SMALL_OPS {
        if k % 2 == 0 {
            even.add_scalar_(1.0).expect("add_");
        } else {
            odd_cols.mul_scalar_(0.5).expect("mul_");
        }
    }
    dev.flush().expect("flush");
}

/// 1000 small ops per flush threshold (1 = one submit per op), measured
/// two ways: `host` is the time the calling thread spends recording and
/// submitting (the wait for the GPU after each sample is not counted);
/// `total` includes that wait.
fn batching(c: &mut Criterion) {
    for (metric, wait_counts) in [("host", false), ("total", true)] {
        let mut group = c.benchmark_group(format!("1000_small_inplace_ops_{metric}"));
        let configs = [
            (1, false),
            (16, false),
            (64, false),
            (256, false),
            (1024, false),
            (1024, true),
        ];
        for (threshold, fusion) in configs {
            let Some(dev) = gpu(threshold, fusion) else {
                return;
            };
            let x = Tensor::zeros([64, 64], DType::F32, &dev).expect("zeros");
            small_ops(&x, &dev); // compiles the pipelines
            dev.sync().expect("sync");
            let name = if fusion {
                "flush_threshold_fusion_on"
            } else {
                "flush_threshold"
            };
            group.bench_with_input(BenchmarkId::new(name, threshold), &threshold, |bench, _| {
                bench.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        small_ops(&x, &dev);
                        if wait_counts {
                            dev.sync().expect("sync");
                            spent += start.elapsed();
                        } else {
                            spent += start.elapsed();
                            dev.sync().expect("sync");
                        }
                    }
                    spent
                })
            });
        }
        group.finish();
    }
}

/// `((a * 2 + b).exp() - c).relu()` on 16M f32, fused vs unfused.
fn fused_chain(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_16M_f32");
    for fusion in [false, true] {
        let Some(dev) = gpu(256, fusion) else { return };
        let input = |seed| Tensor::rand([4096, 4096], DType::F32, seed, &dev).expect("rand");
        let (a, b, cc) = (input(1), input(2), input(3));
        let name = if fusion { "fused" } else { "unfused" };
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let out = a
                    .mul_scalar(2.0)
                    .and_then(|t| t.add(&b))
                    .and_then(|t| t.exp())
                    .and_then(|t| t.sub(&cc))
                    .and_then(|t| t.relu())
                    .expect("chain");
                dev.sync().expect("sync");
                black_box(out)
            })
        });
        eprintln!("{name}: {:?}", dev.stats());
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
}

criterion_group! {
    name = benches;
    config = config();
    targets = batching, fused_chain
}
criterion_main!(benches);
