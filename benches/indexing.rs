//! Along-an-axis ops, joins and indexing on 4M f32 (4096 x 1024):
//! webtensor's CPU path side by side with ndarray where ndarray has the op
//! (row softmax composed from its axis ops, cumsum along rows, concat along
//! either axis, selecting rows), plus gather and scatter_add, and the GPU
//! path on the adapter at hand against the CPU path.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench indexing`; results are recorded in BENCHMARKS.md.

mod common;

use common::devices;
use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::{Array2, Axis, concatenate};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, Tensor};

const ROWS: usize = 4096;
const COLS: usize = 1024;
/// Rows picked by the selects.
const PICKS: usize = 2048;

/// Deterministic row numbers in `0..ROWS`.
fn picks() -> Vec<i32> {
    (0..PICKS)
        .map(|k| ((k * 2_654_435_761) % ROWS) as i32)
        .collect()
}

fn ndarray_side(c: &mut Criterion) {
    let a = Array2::from_shape_fn((ROWS, COLS), |(i, j)| {
        ((i * 31 + j * 17) % 101) as f32 / 101.0
    });
    let half = a.slice(ndarray::s![..ROWS / 2, ..]).to_owned();
    let rows: Vec<usize> = picks().iter().map(|&k| k as usize).collect();
    let mut group = c.benchmark_group("indexing_4M_f32");
    group.bench_function("ndarray_softmax_rows", |b| {
        b.iter(|| {
            let max = a.map_axis(Axis(1), |r| r.fold(f32::NEG_INFINITY, |m, &x| m.max(x)));
            let mut e = &a - &max.insert_axis(Axis(1));
            e.mapv_inplace(f32::exp);
            let sum = e.sum_axis(Axis(1)).insert_axis(Axis(1));
            black_box(e / &sum)
        })
    });
    group.bench_function("ndarray_cumsum_rows", |b| {
        b.iter(|| {
            let mut out = a.clone();
            out.accumulate_axis_inplace(Axis(1), |&prev, cur| *cur += prev);
            black_box(out)
        })
    });
    group.bench_function("ndarray_concat_axis0", |b| {
        b.iter(|| black_box(concatenate(Axis(0), &[half.view(), half.view()]).expect("concat")))
    });
    group.bench_function("ndarray_concat_axis1", |b| {
        b.iter(|| black_box(concatenate(Axis(1), &[half.view(), half.view()]).expect("concat")))
    });
    group.bench_function("ndarray_select_rows", |b| {
        b.iter(|| black_box(a.select(Axis(0), &rows)))
    });
    group.finish();
}

fn webtensor_side(c: &mut Criterion) {
    let mut group = c.benchmark_group("indexing_4M_f32");
    for (name, dev) in devices() {
        let t = Tensor::rand([ROWS, COLS], DType::F32, 1, &dev).expect("rand");
        let half = t.narrow(0, 0, ROWS / 2).expect("narrow");
        let rows = Tensor::from_vec(picks(), [PICKS], &dev).expect("index");
        let gather_index = rows
            .reshape([PICKS, 1])
            .and_then(|r| r.broadcast_to([PICKS, COLS]))
            .and_then(|r| r.contiguous())
            .expect("gather index");
        let updates = Tensor::ones([PICKS, COLS], DType::F32, &dev).expect("ones");
        dev.sync().expect("sync");
        let run = |f: &dyn Fn() -> Tensor| {
            let out = f();
            dev.sync().expect("sync");
            out
        };
        group.bench_function(format!("{name}_softmax_rows"), |b| {
            b.iter(|| black_box(run(&|| t.softmax(1).expect("softmax"))))
        });
        group.bench_function(format!("{name}_cumsum_rows"), |b| {
            b.iter(|| black_box(run(&|| t.cumsum(1).expect("cumsum"))))
        });
        group.bench_function(format!("{name}_concat_axis0"), |b| {
            b.iter(|| black_box(run(&|| Tensor::concat(&[&half, &half], 0).expect("concat"))))
        });
        group.bench_function(format!("{name}_concat_axis1"), |b| {
            b.iter(|| black_box(run(&|| Tensor::concat(&[&half, &half], 1).expect("concat"))))
        });
        group.bench_function(format!("{name}_select_rows"), |b| {
            b.iter(|| black_box(run(&|| t.index_select(&rows, 0).expect("select"))))
        });
        group.bench_function(format!("{name}_gather_rows"), |b| {
            b.iter(|| black_box(run(&|| t.gather(&gather_index, 0).expect("gather"))))
        });
        group.bench_function(format!("{name}_scatter_add_rows"), |b| {
            b.iter(|| {
                black_box(run(&|| {
                    t.scatter_add(&gather_index, &updates, 0)
                        .expect("scatter_add")
                }))
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = ndarray_side, webtensor_side
}
criterion_main!(benches);
