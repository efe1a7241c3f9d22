//! FFTs: one line of 2^20 complex points, a 1024 x 1024 complex `fft2`,
//! and the `rfft` of each row of a 1024 x 1024 real matrix; webtensor's
//! CPU path (rustfft) and the GPU path on the adapter at hand. NumPy's
//! figures for the same workloads (pocketfft, complex128 as NumPy computes
//! them, and complex64 through SciPy where present):
//! `benches/reference/numpy_fft.py`.
//!
//! Every GPU measurement syncs before the clock stops. Run with
//! `cargo bench --bench fft`; results are recorded in BENCHMARKS.md.

mod common;

use common::devices;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use webtensor::{DType, Fft, Tensor};

const LINE: usize = 1 << 20;
const SIDE: usize = 1024;

fn ffts(c: &mut Criterion) {
    let cpu = webtensor::Device::cpu();
    let re = Tensor::rand([LINE], DType::F32, 1, &cpu).expect("rand");
    let im = Tensor::rand([LINE], DType::F32, 2, &cpu).expect("rand");
    let line = Tensor::complex(&re, &im).expect("complex");
    let mut group = c.benchmark_group("fft");
    for (name, dev) in devices() {
        let z = line.to_device(&dev).expect("upload");
        let square = z.reshape([SIDE, SIDE]).expect("reshape");
        let rows = re
            .to_device(&dev)
            .expect("upload")
            .reshape([SIDE, SIDE])
            .expect("reshape");
        let run = |f: &dyn Fn() -> Tensor| {
            let out = f();
            dev.sync().expect("sync");
            out
        };
        group.bench_function(format!("{name}_fft_2^20_c64"), |b| {
            b.iter(|| black_box(run(&|| z.fft(-1).expect("fft"))))
        });
        group.bench_function(format!("{name}_fft2_1024x1024_c64"), |b| {
            b.iter(|| black_box(run(&|| square.fft(Fft::over([-2, -1])).expect("fft2"))))
        });
        group.bench_function(format!("{name}_rfft_rows_1024x1024_f32"), |b| {
            b.iter(|| black_box(run(&|| rows.rfft(-1).expect("rfft"))))
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
    targets = ffts
}
criterion_main!(benches);
