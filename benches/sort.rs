//! Sorting: argsort of one line of 1M f32, argsort of each row of a
//! 1024 x 1024 f32 matrix, and the top 10 of each row; webtensor's CPU path
//! side by side with Rust's own stable sort of the same data (the floor for
//! a sort that returns positions) and the GPU path on the adapter at hand.
//! NumPy's figures for the same workloads: `benches/reference/numpy_sort.py`.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench sort`; results are recorded in BENCHMARKS.md.

mod common;

use common::devices;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, SortOrder, Tensor, TopK};

const LINE: usize = 1 << 20;
const SIDE: usize = 1024;

/// Positions of `v` in stable ascending order (NaN last), as plain Rust.
fn std_argsort(v: &[f32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..v.len() as u32).collect();
    order.sort_by(|&a, &b| v[a as usize].total_cmp(&v[b as usize]));
    order
}

fn sorts(c: &mut Criterion) {
    let cpu = webtensor::Device::cpu();
    let line: Vec<f32> = Tensor::rand([LINE], DType::F32, 1, &cpu)
        .expect("rand")
        .to_vec()
        .expect("read");
    let rows: Vec<f32> = line.clone();
    let mut group = c.benchmark_group("sort_f32");
    group.bench_function("rust_std_argsort_1M", |b| {
        b.iter(|| black_box(std_argsort(&line)))
    });
    group.bench_function("rust_std_argsort_rows_1024x1024", |b| {
        b.iter(|| black_box(rows.chunks(SIDE).map(std_argsort).collect::<Vec<_>>()))
    });
    for (name, dev) in devices() {
        let t = Tensor::from_slice(&line, [LINE], &dev).expect("upload");
        let m = t.reshape([SIDE, SIDE]).expect("reshape");
        let run = |f: &dyn Fn() -> Tensor| {
            let out = f();
            dev.sync().expect("sync");
            out
        };
        group.bench_function(format!("{name}_argsort_1M"), |b| {
            b.iter(|| {
                black_box(run(&|| {
                    t.argsort(0, SortOrder::Ascending).expect("argsort")
                }))
            })
        });
        group.bench_function(format!("{name}_argsort_rows_1024x1024"), |b| {
            b.iter(|| {
                black_box(run(&|| {
                    m.argsort(1, SortOrder::Ascending).expect("argsort")
                }))
            })
        });
        group.bench_function(format!("{name}_topk10_rows_1024x1024"), |b| {
            b.iter(|| black_box(run(&|| m.topk(10, 1, TopK::Largest).expect("topk").1)))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = sorts
}
criterion_main!(benches);
