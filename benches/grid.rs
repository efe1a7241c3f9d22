//! Element-by-element work on small grids: a get/update/set loop over every
//! point (`x = 0.99 * x + 1` plus the previous element) of 4 x 4, 16 x 16 and
//! 8 x 8 x 8 x 4 f32 data, through webtensor's fixed-size grids, ndarray's
//! fixed-dimension arrays (`Array2`, `Array4`) and a general `Tensor` on the
//! CPU (a one-element view per access). Run with `cargo bench --bench grid`;
//! results are recorded in BENCHMARKS.md.

use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::{Array2, Array4};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{Device, Grid2, Grid4, Tensor, s};

fn grid2<const N: usize>(g: &mut Grid2<f32, N, N>) {
    let mut prev = 0.0;
    for i in 0..N {
        for j in 0..N {
            let x = g[[i, j]];
            g[[i, j]] = 0.99 * x + 1.0 + prev;
            prev = x * 1e-3;
        }
    }
}

fn array2(a: &mut Array2<f32>) {
    let n = a.nrows();
    let mut prev = 0.0;
    for i in 0..n {
        for j in 0..n {
            let x = a[[i, j]];
            a[[i, j]] = 0.99 * x + 1.0 + prev;
            prev = x * 1e-3;
        }
    }
}

fn tensor2(t: &Tensor) {
    let n = t.dims()[0];
    let mut prev = 0.0;
    for i in 0..n as isize {
        for j in 0..n as isize {
            let cell = t.slice(s![i, j]).expect("slice");
            let x: f32 = cell.item().expect("item");
            cell.fill_(0.99 * x + 1.0 + prev).expect("fill");
            prev = x * 1e-3;
        }
    }
}

fn grid4(g: &mut Grid4<f32, 8, 8, 8, 4>) {
    let mut prev = 0.0;
    for a in 0..8 {
        for b in 0..8 {
            for c in 0..8 {
                for d in 0..4 {
                    let x = g[[a, b, c, d]];
                    g[[a, b, c, d]] = 0.99 * x + 1.0 + prev;
                    prev = x * 1e-3;
                }
            }
        }
    }
}

fn array4(g: &mut Array4<f32>) {
    let mut prev = 0.0;
    for a in 0..8 {
        for b in 0..8 {
            for c in 0..8 {
                for d in 0..4 {
                    let x = g[[a, b, c, d]];
                    g[[a, b, c, d]] = 0.99 * x + 1.0 + prev;
                    prev = x * 1e-3;
                }
            }
        }
    }
}

fn tensor4(t: &Tensor) {
    let mut prev = 0.0;
    for a in 0..8isize {
        for b in 0..8isize {
            for c in 0..8isize {
                for d in 0..4isize {
                    let cell = t.slice(s![a, b, c, d]).expect("slice");
                    let x: f32 = cell.item().expect("item");
                    cell.fill_(0.99 * x + 1.0 + prev).expect("fill");
                    prev = x * 1e-3;
                }
            }
        }
    }
}

fn update_loops(c: &mut Criterion) {
    let cpu = Device::cpu();
    let mut group = c.benchmark_group("grid_update_f32");
    // Each structure is built once; every iteration updates it in place.
    let mut g4 = Grid2::<f32, 4, 4>::from_fn(|[i, j]| (i + j) as f32);
    let mut a4 = Array2::<f32>::from_shape_fn((4, 4), |(i, j)| (i + j) as f32);
    let t4 = g4.to_tensor(&cpu).expect("tensor");
    group.bench_function("4x4/grid", |b| b.iter(|| grid2(black_box(&mut g4))));
    group.bench_function("4x4/ndarray", |b| b.iter(|| array2(black_box(&mut a4))));
    group.bench_function("4x4/tensor_cpu", |b| b.iter(|| tensor2(black_box(&t4))));
    let mut g16 = Grid2::<f32, 16, 16>::from_fn(|[i, j]| (i + j) as f32);
    let mut a16 = Array2::<f32>::from_shape_fn((16, 16), |(i, j)| (i + j) as f32);
    let t16 = g16.to_tensor(&cpu).expect("tensor");
    group.bench_function("16x16/grid", |b| b.iter(|| grid2(black_box(&mut g16))));
    group.bench_function("16x16/ndarray", |b| b.iter(|| array2(black_box(&mut a16))));
    group.bench_function("16x16/tensor_cpu", |b| b.iter(|| tensor2(black_box(&t16))));
    let mut g8 = Grid4::<f32, 8, 8, 8, 4>::from_fn(|[a, b, c, d]| (a + b + c + d) as f32);
    let mut a8 = Array4::<f32>::from_shape_fn((8, 8, 8, 4), |(a, b, c, d)| (a + b + c + d) as f32);
    let t8 = g8.to_tensor(&cpu).expect("tensor");
    group.bench_function("8x8x8x4/grid", |b| b.iter(|| grid4(black_box(&mut g8))));
    group.bench_function("8x8x8x4/ndarray", |b| b.iter(|| array4(black_box(&mut a8))));
    group.bench_function("8x8x8x4/tensor_cpu", |b| b.iter(|| tensor4(black_box(&t8))));
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = update_loops
}
criterion_main!(benches);
