//! Reductions over 16M f32 (4096 x 4096): webtensor's CPU path side by side
//! with ndarray (full sum, row sums, column sums, max), and the GPU path on
//! the adapter at hand against the CPU path.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench reduce`; results are recorded in BENCHMARKS.md.

mod common;

use common::devices;
use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::{Array2, Axis};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, Tensor};

const SIDE: usize = 4096;

fn reductions(c: &mut Criterion) {
    let na = Array2::from_shape_fn((SIDE, SIDE), |(i, j)| ((i * 31 + j * 17) % 101) as f32);
    let mut group = c.benchmark_group("reduce_16M_f32");
    group.bench_function("ndarray_sum", |b| b.iter(|| black_box(na.sum())));
    group.bench_function("ndarray_row_sums", |b| {
        b.iter(|| black_box(na.sum_axis(Axis(1))))
    });
    group.bench_function("ndarray_column_sums", |b| {
        b.iter(|| black_box(na.sum_axis(Axis(0))))
    });
    group.bench_function("ndarray_max", |b| {
        b.iter(|| black_box(na.fold(f32::NEG_INFINITY, |m, &x| m.max(x))))
    });
    for (name, dev) in devices() {
        let t = Tensor::rand([SIDE, SIDE], DType::F32, 1, &dev).expect("rand");
        let run = |f: &dyn Fn() -> Tensor| {
            let out = f();
            dev.sync().expect("sync");
            out
        };
        group.bench_function(format!("{name}_sum"), |b| {
            b.iter(|| black_box(run(&|| t.sum(..).expect("sum"))))
        });
        group.bench_function(format!("{name}_row_sums"), |b| {
            b.iter(|| black_box(run(&|| t.sum(1).expect("sum"))))
        });
        group.bench_function(format!("{name}_column_sums"), |b| {
            b.iter(|| black_box(run(&|| t.sum(0).expect("sum"))))
        });
        group.bench_function(format!("{name}_max"), |b| {
            b.iter(|| black_box(run(&|| t.max(..).expect("max"))))
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
    targets = reductions
}
criterion_main!(benches);
