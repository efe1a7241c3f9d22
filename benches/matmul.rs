//! f32 matmul: webtensor's CPU path (the gemm crate, threaded) side by side
//! with ndarray's `dot` (matrixmultiply, single-threaded by default), with
//! a transposed left operand, and the GPU path on the adapter at hand.
//! NumPy/OpenBLAS reference rates come from `benches/reference/numpy_matmul.py`.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench matmul`; results are recorded in BENCHMARKS.md.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ndarray::Array2;
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, Device, Tensor};

fn nd_square(n: usize, seed: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, n), |(i, j)| {
        ((i * 31 + j * 17 + seed) % 101) as f32 / 101.0
    })
}

fn cpu_vs_ndarray(c: &mut Criterion) {
    let cpu = Device::cpu();
    for n in [256usize, 1024, 2048] {
        let mut group = c.benchmark_group(format!("matmul_f32_{n}"));
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        let (na, nb) = (nd_square(n, 1), nd_square(n, 2));
        group.bench_function("ndarray", |bench| bench.iter(|| black_box(na.dot(&nb))));
        let a = Tensor::rand([n, n], DType::F32, 1, &cpu).expect("rand");
        let b = Tensor::rand([n, n], DType::F32, 2, &cpu).expect("rand");
        group.bench_function("webtensor_cpu", |bench| {
            bench.iter(|| black_box(a.matmul(&b).expect("matmul")))
        });
        group.bench_function("webtensor_cpu_a_transposed", |bench| {
            bench.iter(|| black_box(a.t().matmul(&b).expect("matmul")))
        });
        group.finish();
    }
}

fn gpu_vs_cpu(c: &mut Criterion) {
    let Ok(gpu) = Device::gpu() else {
        eprintln!("no GPU adapter: skipping the GPU matmul group");
        return;
    };
    let cpu = Device::cpu();
    for n in [256usize, 1024] {
        let mut group = c.benchmark_group(format!("matmul_f32_{n}_gpu"));
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        for (name, dev) in [("webtensor_cpu", &cpu), ("webtensor_gpu", &gpu)] {
            let a = Tensor::rand([n, n], DType::F32, 1, dev).expect("rand");
            let b = Tensor::rand([n, n], DType::F32, 2, dev).expect("rand");
            group.bench_function(name, |bench| {
                bench.iter(|| {
                    let out = a.matmul(&b).expect("matmul");
                    dev.sync().expect("sync");
                    black_box(out)
                })
            });
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

/// Issue 49's CPU target: a quantized matrix-vector product (a decoding
/// step's) against the same product through the dequantized f32 weight
/// and the float matmul (gemm), which moves four to eight times the bytes.
fn quantized_matvec(c: &mut Criterion) {
    use webtensor::{GgmlType, QTensor};
    let cpu = Device::cpu();
    let (n, k) = (4096usize, 4096usize);
    let w = Tensor::rand([n, k], DType::F32, 3, &cpu).expect("rand");
    let x = Tensor::rand([1, k], DType::F32, 4, &cpu).expect("rand");
    for ty in [GgmlType::Q4_0, GgmlType::Q8_0] {
        let q = QTensor::quantize(&w, ty).expect("quantize");
        let dense = q.dequantize(DType::F32).expect("dequantize").t();
        let mut group =
            c.benchmark_group(format!("qmatvec_{}_{n}x{k}_cpu", ty.name().to_lowercase()));
        group.throughput(Throughput::Elements((2 * n * k) as u64));
        group.bench_function("qmatmul", |bench| {
            bench.iter(|| black_box(x.qmatmul(&q).expect("qmatmul")))
        });
        group.bench_function("dequantized_matmul", |bench| {
            bench.iter(|| black_box(x.matmul(&dense).expect("matmul")))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = cpu_vs_ndarray, gpu_vs_cpu, quantized_matvec
}
criterion_main!(benches);
