//! Elementwise add on 16M f32: webtensor's CPU path side by side with
//! ndarray, and the GPU path (when an adapter exists) against both.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench elementwise`; results are recorded in BENCHMARKS.md.

mod common;

use common::devices;
use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::{Array2, s as nd_s};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, Device, Tensor, s};

const SIDE: usize = 4096; // 4096 x 4096 = 16M elements

fn inputs(dev: &Device) -> (Tensor, Tensor) {
    let a = Tensor::rand([SIDE, SIDE], DType::F32, 1, dev).expect("rand a");
    let b = Tensor::rand([SIDE, SIDE], DType::F32, 2, dev).expect("rand b");
    (a, b)
}

fn nd_inputs() -> (Array2<f32>, Array2<f32>) {
    let a = Array2::from_shape_fn((SIDE, SIDE), |(i, j)| ((i * 31 + j * 17) % 101) as f32);
    let b = Array2::from_shape_fn((SIDE, SIDE), |(i, j)| ((i * 13 + j * 7) % 97) as f32);
    (a, b)
}

/// The devices to measure: the CPU path always, the GPU when present.
fn add_contiguous(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_16M_f32_contiguous");
    let (na, nb) = nd_inputs();
    group.bench_function("ndarray", |bench| bench.iter(|| black_box(&na + &nb)));
    for (name, dev) in devices() {
        let (a, b) = inputs(&dev);
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let out = a.add(&b).expect("add");
                dev.sync().expect("sync");
                black_box(out)
            })
        });
    }
    group.finish();
}

/// Both operands transposed (the output keeps their dense permutation), and
/// one transposed against one row-major operand (a truly strided walk).
fn add_transposed(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_16M_f32_transposed");
    let (na, nb) = nd_inputs();
    group.bench_function("ndarray_both_t", |bench| {
        bench.iter(|| black_box(&na.t() + &nb.t()))
    });
    group.bench_function("ndarray_mixed_t", |bench| {
        bench.iter(|| black_box(&na.t() + &nb))
    });
    for (name, dev) in devices() {
        let (a, b) = inputs(&dev);
        group.bench_function(format!("{name}_both_t"), |bench| {
            bench.iter(|| {
                let out = a.t().add(&b.t()).expect("add");
                dev.sync().expect("sync");
                black_box(out)
            })
        });
        group.bench_function(format!("{name}_mixed_t"), |bench| {
            bench.iter(|| {
                let out = a.t().add(&b).expect("add");
                dev.sync().expect("sync");
                black_box(out)
            })
        });
    }
    group.finish();
}

/// `x[:, ::2] += y` on a 4096 x 8192 parent (16M elements written).
fn add_inplace_stepped(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_inplace_16M_f32_stepped_view");
    let mut nx = Array2::<f32>::zeros((SIDE, 2 * SIDE));
    let (ny, _) = nd_inputs();
    group.bench_function("ndarray", |bench| {
        bench.iter(|| {
            let mut view = nx.slice_mut(nd_s![.., ..;2]);
            view += &ny;
            black_box(&nx);
        })
    });
    for (name, dev) in devices() {
        let x = Tensor::zeros([SIDE, 2 * SIDE], DType::F32, &dev).expect("zeros");
        let y = Tensor::rand([SIDE, SIDE], DType::F32, 3, &dev).expect("rand");
        let view = x.slice(s![.., ..;2]).expect("slice");
        group.bench_function(name, |bench| {
            bench.iter(|| {
                view.add_(&y).expect("add_");
                dev.sync().expect("sync");
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

criterion_group! {
    name = benches;
    config = config();
    targets = add_contiguous, add_transposed, add_inplace_stepped
}
criterion_main!(benches);
