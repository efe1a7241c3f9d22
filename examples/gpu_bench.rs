//! webtensor's GPU benchmark, line for line comparable with the peers in
//! `../shared/gpu/` (Burn-wgpu, PyTorch): one line per workload,
//! `name  min_ms  median_ms  rate`, after warm-ups (2, and on for 200 ms:
//! the CPU check before each row leaves the GPU idle) and 10 timed runs
//! that each end in a device sync; rates from the median, GB/s counting each
//! logical element read and written once. Each workload's result is first
//! checked against the CPU path on the same inputs (a mismatch prints
//! `CHECK FAILED` and the run exits non-zero).
//!
//! ```text
//! cargo run --release --example gpu_bench                    # everything
//! cargo run --release --example gpu_bench -- --mm 256,1024   # matmul sizes
//! cargo run --release --example gpu_bench -- --only add,sum_axis --runs 5
//! cargo run --release --example gpu_bench -- --small         # 1/64 sizes (lavapipe)
//! ```
//!
//! The sort rows (`argsort_1m`, `argsort_rows`, `topk_rows`) count 4 bytes
//! read and 4 written per element (topk: read only); `compare` 8 read and
//! one (a bool) written; `var_axis1` 4 read per element (it reads them
//! twice: the mean, then the squared deviations).
//!
//! Every timed run keeps its results alive until its sync: webtensor never
//! computes a result dropped unread before the flush.
//!
//! `matmul_N_large`, `_medium`, `_subgroup`, `_tall` and `_wide` time the
//! largest square product, and a 1024 one, with that tile fixed (the
//! subgroup kernel runs as the medium tile where the device has no
//! subgroups of eight lanes).
//! `matmul_N_f16_coop` fixes the cooperative-matrix tile for f16 (the
//! medium tile where the device has no cooperative matrices),
//! `matmul_N_f32_fast` does so for f32 on a device whose f32 products may
//! round to f16 (`MatmulPrecision::Fast`), and `matmul_N_checked` and
//! `sum_all_checked` run on a device with wgpu's runtime checks on.
//!
//! The quantized rows (`qmatvec_q4_0_14336x4096`, `qmatvec_q4_K_...`,
//! `qmatvec_q8_0_...`) and `matvec_f16_14336x4096` are a decoding step's
//! product with a Llama 8B feed-forward weight: bytes count the weight as
//! stored, the activations and the result. `qmatmul_q4_0_512x14336x4096`,
//! `qmatmul_q4_K_...` and `matmul_f16_512x14336x4096` are a 512-token
//! prompt's product with it (GFLOP/s).
//!
//! The FFT rows (`fft_1d_2^20`, `fft_1d_2^22`, `fft2_1024`, `rfft_rows`) count 16 bytes
//! per complex point (8 read, 8 written; a real row 4 read and 8 written
//! per output), as the PyTorch peer does.
//!
//! The image rows (`conv2d_resnet`, `conv2d_depthwise`, `group_norm`,
//! `batch_norm`, `maxpool`, `avgpool_3x3`, `resize_bilinear`,
//! `resize_nearest`) count as the
//! PyTorch peer does (see `images`); `conv_transpose2d` (a 4x4 of stride
//! 2 from 64 to 32 channels, which the peer does not time yet) counts
//! each input pixel's multiply-adds with every tap; `sync_1_element` is one op on one
//! element and its sync, the fixed cost under every single-op row.
//!
//! The attention rows (`sdpa_prefill_2048`, `sdpa_decode_4096`) are f16,
//! as the PyTorch peer's (see `attention`); `sdpa_prefill_2048_h256` (8
//! heads of 256, Gemma's width, which the peer does not time yet) counts
//! as `sdpa_prefill_2048` does.
//!
//! The linalg rows (`--only linalg`: `cholesky_N`, `solve_N` with one
//! right-hand column, `solve_10000x8x8`, `cholesky_10000x8x8`,
//! `svd_10000x8x8`; N is 4096, 512 with `--small`) count LAPACK's
//! flops (n³/3 for Cholesky, 2n³/3 + 2n² for a solve; a nominal 4n³ for
//! an SVD) and use the `_ex`
//! forms, which read no status back (issue 50's targets: Cholesky and
//! solve at 0.3x PyTorch's cuSOLVER, the batch at 1.0x).
//!
//! After each row a `#` line names the kernels one more run dispatched,
//! with their workgroups and GPU times and the total (`Device::profile`):
//! which tile autotuning chose, and how much of the row is the kernels'
//! (the rest is the submit and the wait, `sync_1_element`). At the end,
//! `# dropped kernels` and one `# tuned` line per class of products
//! autotuning timed (`DeviceInfo::tuned_matmuls`).
//!
//! `*_x20` rows record 20 ops before one sync, so they show the kernels'
//! rate apart from the submit-and-wait latency that a lone op pays.
//! `div_x20` divides correctly rounded, checked bit for bit; read it beside
//! `add_x20`.

use std::time::Instant;
use webtensor::{
    Conv, DType, Device, Fft, Generator, GpuOptions, MatmulPrecision, MatmulTile, Pool, Resize,
    Result, SortOrder, Tensor, TopK, s,
};

/// What to run, from the command line.
struct Options {
    only: Option<Vec<String>>,
    mm: Vec<usize>,
    runs: usize,
    /// Divides the element counts of the bandwidth workloads by 64 and
    /// caps matmul sizes, for a software adapter.
    small: bool,
}

impl Options {
    fn parse() -> Options {
        let mut o = Options {
            only: None,
            mm: vec![256, 1024, 2048, 4096],
            runs: 10,
            small: false,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let fail = |what: String| -> ! {
            eprintln!("gpu_bench: {what}");
            std::process::exit(2);
        };
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            if flag == "--small" {
                o.small = true;
                i += 1;
                continue;
            }
            let Some(value) = args.get(i + 1).filter(|v| !v.is_empty()) else {
                fail(format!("{flag} needs a value"));
            };
            match flag {
                "--only" => o.only = Some(value.split(',').map(str::to_string).collect()),
                "--mm" => {
                    let sizes = value.split(',').map(|v| v.parse::<usize>());
                    match sizes.collect::<std::result::Result<Vec<_>, _>>() {
                        Ok(sizes) if sizes.iter().all(|&n| n > 0) => o.mm = sizes,
                        _ => fail(format!("--mm takes sizes like 256,1024, not {value}")),
                    }
                }
                "--runs" => match value.parse::<usize>() {
                    Ok(runs) if runs > 0 => o.runs = runs,
                    _ => fail(format!("--runs takes a count of 1 or more, not {value}")),
                },
                other => fail(format!("unknown argument {other}")),
            }
            i += 2;
        }
        o
    }

    fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// Syncs `dev` while `out` (a workload's result) is alive, then drops it: a
/// result dropped unread before the sync is never computed (dead-op
/// elimination), so every timed run keeps its results to the sync.
fn synced<T>(dev: &Device, out: T) -> Result<()> {
    dev.sync()?;
    drop(out);
    Ok(())
}

/// Times `f` (which must end in a sync or a readback) on `dev`: 2
/// warm-ups, then `runs` runs; (min, median) in milliseconds. Then one
/// more run under `Device::profile`, whose kernels [`row`] prints after
/// the row it times.
fn time(dev: &Device, runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    // Warm-ups: 2, and on until WARM_UP has passed (at most 1,000), so that
    // a GPU left idle by the CPU check before the row is back at its clocks
    // (on an H200, kernels timed right after a long check ran 4-5x slower
    // than the same kernels run back to back).
    let start = Instant::now();
    let mut warm = 0;
    while warm < 2 || (start.elapsed() < WARM_UP && warm < 1000) {
        f()?;
        warm += 1;
    }
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t0 = Instant::now();
        f()?;
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let ran = kernels(dev, f)?;
    KERNELS.with(|k| *k.borrow_mut() = Some(ran));
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let median = if n % 2 == 1 {
        ms[n / 2]
    } else {
        (ms[n / 2 - 1] + ms[n / 2]) / 2.0
    };
    Ok((ms[0], median))
}

/// The least time a row's workload runs before it is timed.
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(200);

thread_local! {
    /// The kernels line of the last [`time`]d workload, for [`row`].
    static KERNELS: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// What one more run of `f` dispatched on `dev` (from `Device::profile`):
/// each kernel's name, workgroups and GPU time, and their total, for a `#`
/// line (which the peers' readers skip) after the row: which tile
/// autotuning chose, and how much of a row's time is the kernels'.
fn kernels(dev: &Device, f: impl FnOnce() -> Result<()>) -> Result<String> {
    let profile = dev.profile(f)?;
    // Kernels of one name and grid together (an `_x20` row's twenty),
    // in the order first seen: count, GPU time in all (None if untimed).
    let mut kinds: Vec<(String, usize, Option<f64>)> = Vec::new();
    for k in profile.kernels() {
        let label = format!("{} {:?}", k.name, k.workgroups);
        let ms = k.gpu.map(|d| d.as_secs_f64() * 1e3);
        match kinds.iter_mut().find(|(l, _, _)| *l == label) {
            Some((_, count, total)) => {
                *count += 1;
                *total = total.zip(ms).map(|(a, b)| a + b);
            }
            None => kinds.push((label, 1, ms)),
        }
    }
    let total: f64 = kinds.iter().filter_map(|k| k.2).sum();
    let ran: Vec<String> = kinds
        .iter()
        .map(|(label, count, ms)| {
            let each = ms.map_or("?".into(), |t| format!("{:.3}", t / *count as f64));
            match count {
                1 => format!("{label} {each} ms"),
                _ => format!("{count} x {label} {each} ms each"),
            }
        })
        .collect();
    Ok(format!(
        "{} kernels, {total:.3} ms on the GPU: {}",
        profile.kernels().len(),
        ran.join(", ")
    ))
}

/// Prints a workload's row, then the kernels its [`time`]d run dispatched.
fn row(name: &str, (min, median): (f64, f64), rate: String) {
    println!("{name:<22} {min:>10.3} {median:>10.3} {rate}");
    if let Some(ran) = KERNELS.with(|k| k.borrow_mut().take()) {
        println!("# {name} {ran}");
    }
}

fn gbs(bytes: f64, ms: f64) -> String {
    format!("{:.2}GB/s", bytes / (ms * 1e-3) / 1e9)
}

fn gflops(flops: f64, ms: f64) -> String {
    format!("{:.2}GFLOP/s", flops / (ms * 1e-3) / 1e9)
}

/// The largest relative difference between `got` and `want` (as f32),
/// scaled by `1 + |want|`.
fn max_error(got: &Tensor, want: &Tensor) -> Result<f32> {
    let got = got.to_dtype(DType::F32)?.to_vec::<f32>()?;
    let want = want.to_dtype(DType::F32)?.to_vec::<f32>()?;
    if got.len() != want.len() {
        return Ok(f32::INFINITY);
    }
    Ok(got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs() / (1.0 + w.abs()))
        .fold(
            0.0,
            |m, e| if e.is_nan() { f32::INFINITY } else { m.max(e) },
        ))
}

/// Checks one workload: `op` on the GPU inputs against `op` on their CPU
/// copies. Returns false (and says so) on a mismatch.
fn check(
    name: &str,
    tolerance: f32,
    inputs: &[&Tensor],
    op: impl Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<bool> {
    let cpu = Device::cpu();
    let gpu_inputs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    let cpu_inputs = inputs
        .iter()
        .map(|t| t.to_device(&cpu))
        .collect::<Result<Vec<_>>>()?;
    let got = op(&gpu_inputs)?.to_device(&cpu)?;
    let want = op(&cpu_inputs)?;
    let error = max_error(&got, &want)?;
    if error > tolerance {
        println!(
            "{name:<22} CHECK FAILED: largest relative error {error:e} (tolerance {tolerance:e})"
        );
        return Ok(false);
    }
    Ok(true)
}

fn main() -> Result<()> {
    let o = Options::parse();
    let dev = Device::gpu()?;
    let info = dev.info();
    println!(
        "# webtensor on {} ({}, {}), f16 {}, subgroups {} (at least {} lanes), autotune {}, GPU timestamps {}, cooperative matrices {}",
        info.name,
        info.backend,
        info.driver,
        if info.native_f16 { "native" } else { "packed" },
        if info.subgroups { "on" } else { "off" },
        info.subgroup_min_size,
        if info.autotune { "on" } else { "off" },
        if info.gpu_timestamps { "yes" } else { "no" },
        if info.cooperative_matrix { "on" } else { "off" },
    );
    let mut ok = true;
    let scale = if o.small { 64 } else { 1 };
    let n = (1usize << 24) / scale;
    let side = if o.small { 512 } else { 4096 };
    let runs = o.runs;
    let sync = || dev.sync();

    let a1 = Tensor::rand([n], DType::F32, 1, &dev)?;
    let b1 = Tensor::rand([n], DType::F32, 2, &dev)?;
    let c1 = Tensor::rand([n], DType::F32, 3, &dev)?;
    let a2 = Tensor::rand([side, side], DType::F32, 4, &dev)?;
    let b2 = Tensor::rand([side, side], DType::F32, 5, &dev)?;
    let nf = n as f64;
    let sf = (side * side) as f64;

    if o.wants("add") {
        ok &= check("add", 1e-6, &[&a1, &b1], |t| t[0].add(&t[1]))?;
        let t = time(&dev, runs, || a1.add(&b1).and_then(|out| synced(&dev, out)))?;
        row("add", t, gbs(12.0 * nf, t.1));
        let t = time(&dev, runs, || {
            let outs = (0..20).map(|_| a1.add(&b1)).collect::<Result<Vec<_>>>()?;
            synced(&dev, outs)
        })?;
        row("add_x20", t, gbs(20.0 * 12.0 * nf, t.1));
    }
    if o.wants("randn") {
        // Issue 50: a draw is one kernel that writes its tensor (it was
        // made on the host and uploaded). 100M f32 normals (400 MB written
        // at full scale) beside a fill of as many: the adapter's write
        // bandwidth, the target's yardstick (randn at 70% of it or more).
        let m = 6 * n;
        let mut g = Generator::new(1);
        let t = time(&dev, runs, || {
            g.randn([m], DType::F32, &dev)
                .and_then(|out| synced(&dev, out))
        })?;
        row("randn_100m", t, gbs(4.0 * m as f64, t.1));
        let t = time(&dev, runs, || {
            Tensor::full([m], 1.5, DType::F32, &dev).and_then(|out| synced(&dev, out))
        })?;
        row("fill_100m", t, gbs(4.0 * m as f64, t.1));
    }
    if o.wants("linalg") {
        linalg_rows(&dev, runs, o.small, &mut ok)?;
    }
    if o.wants("div") {
        // Correctly rounded division (`div_f32` in shaders/kernel/math.wgsl)
        // beside `add_x20`: what exactness costs where `/` is a * (1 / b).
        ok &= check("div", 0.0, &[&a1, &b1], |t| t[0].div(&t[1]))?;
        let t = time(&dev, runs, || {
            let outs = (0..20).map(|_| a1.div(&b1)).collect::<Result<Vec<_>>>()?;
            synced(&dev, outs)
        })?;
        row("div_x20", t, gbs(20.0 * 12.0 * nf, t.1));
    }
    if o.wants("add_transposed") {
        ok &= check("add_transposed", 1e-6, &[&a2, &b2], |t| t[0].add(&t[1].t()))?;
        let t = time(&dev, runs, || {
            a2.add(&b2.t()).and_then(|out| synced(&dev, out))
        })?;
        row("add_transposed", t, gbs(12.0 * sf, t.1));
    }
    if o.wants("chain") {
        let chain = |t: &[Tensor]| t[0].mul_scalar(2.0)?.add(&t[1])?.exp()?.sub(&t[2])?.relu();
        ok &= check("chain", 1e-5, &[&a1, &b1, &c1], chain)?;
        let inputs = [a1.clone(), b1.clone(), c1.clone()];
        let t = time(&dev, runs, || {
            chain(&inputs).and_then(|out| synced(&dev, out))
        })?;
        row("chain", t, gbs(16.0 * nf, t.1));
    }
    if o.wants("sync_1_element") {
        // What one op and its sync cost apart from any kernel's work.
        let x = Tensor::zeros([1], DType::F32, &dev)?;
        let t = time(&dev, runs, || {
            x.add_scalar_(1.0)?;
            dev.sync()
        })?;
        row("sync_1_element", t, format!("{:.2}us", t.1 * 1e3));
    }
    if o.wants("small_ops") {
        let x0 = Tensor::zeros([1024], DType::F32, &dev)?;
        let t = time(&dev, runs, || {
            let mut x = x0.clone();
            for _ in 0..1000 {
                x = x.add_scalar(1.0)?;
            }
            x.to_vec::<f32>().map(drop)
        })?;
        row("small_ops", t, format!("{:.2}us/op", t.1 * 1e3 / 1000.0));
        let x = Tensor::zeros([1024], DType::F32, &dev)?;
        let t = time(&dev, runs, || {
            for _ in 0..1000 {
                x.add_scalar_(1.0)?;
            }
            x.to_vec::<f32>().map(drop)
        })?;
        row(
            "small_ops_inplace",
            t,
            format!("{:.2}us/op", t.1 * 1e3 / 1000.0),
        );
    }
    if o.wants("permute_contiguous") {
        let e = if o.small { 64 } else { 256 };
        let a3 = Tensor::rand([e, e, e], DType::F32, 6, &dev)?;
        let permute = |t: &[Tensor]| t[0].permute(&[2, 0, 1])?.contiguous();
        ok &= check("permute_contiguous", 0.0, &[&a3], permute)?;
        let inputs = [a3.clone()];
        let t = time(&dev, runs, || {
            permute(&inputs).and_then(|out| synced(&dev, out))
        })?;
        row("permute_contiguous", t, gbs(8.0 * (e * e * e) as f64, t.1));
    }
    if o.wants("sum_all") {
        ok &= check("sum_all", 1e-5, &[&a1], |t| t[0].sum(..))?;
        let t = time(&dev, runs, || a1.sum(..).and_then(|out| synced(&dev, out)))?;
        row("sum_all", t, gbs(4.0 * nf, t.1));
        let t = time(&dev, runs, || {
            let outs = (0..20).map(|_| a1.sum(..)).collect::<Result<Vec<_>>>()?;
            synced(&dev, outs)
        })?;
        row("sum_all_x20", t, gbs(20.0 * 4.0 * nf, t.1));
    }
    if o.wants("sum_axis") {
        for (name, axis) in [("sum_axis1", 1), ("sum_axis0", 0)] {
            ok &= check(name, 1e-5, &[&a2], |t| t[0].sum_keepdim(axis))?;
            let t = time(&dev, runs, || {
                a2.sum_keepdim(axis).and_then(|out| synced(&dev, out))
            })?;
            row(name, t, gbs(4.0 * sf, t.1));
        }
    }
    if o.wants("slice_step") {
        let step = |t: &[Tensor]| t[0].slice(s![.., ..;2])?.add_scalar(1.0);
        ok &= check("slice_step", 1e-6, &[&a2], step)?;
        let t = time(&dev, runs, || {
            step(std::slice::from_ref(&a2)).and_then(|out| synced(&dev, out))
        })?;
        row("slice_step", t, gbs(4.0 * sf, t.1));
        let target = a2.contiguous()?;
        let view = target.slice(s![.., ..;2])?;
        let t = time(&dev, runs, || view.add_scalar_(1.0).and_then(|_| sync()))?;
        row("slice_step_inplace", t, gbs(4.0 * sf, t.1));
    }
    if o.wants("add_f16") {
        let h1 = a1.to_dtype(DType::F16)?;
        let h2 = b1.to_dtype(DType::F16)?;
        ok &= check("add_f16", 1e-3, &[&h1, &h2], |t| t[0].add(&t[1]))?;
        let t = time(&dev, runs, || h1.add(&h2).and_then(|out| synced(&dev, out)))?;
        row("add_f16", t, gbs(6.0 * nf, t.1));
    }
    if o.wants("compare") {
        // A bool mask: four results to a word, written whole.
        ok &= check("compare", 0.0, &[&a1, &b1], |t| t[0].gt(&t[1]))?;
        let t = time(&dev, runs, || a1.gt(&b1).and_then(|out| synced(&dev, out)))?;
        row("compare", t, gbs(9.0 * nf, t.1));
    }
    if o.wants("var_axis1") {
        // The mean, then the squared deviations summed as they are read.
        ok &= check("var_axis1", 1e-4, &[&a2], |t| t[0].var_keepdim(1, 0))?;
        let t = time(&dev, runs, || {
            a2.var_keepdim(1, 0).and_then(|out| synced(&dev, out))
        })?;
        row("var_axis1", t, gbs(4.0 * sf, t.1));
    }
    if o.wants("softmax_rows") {
        let rows = side;
        let sm = Tensor::rand([rows, 1024], DType::F32, 7, &dev)?;
        ok &= check("softmax_rows", 1e-5, &[&sm], |t| t[0].softmax(-1))?;
        let t = time(&dev, runs, || {
            sm.softmax(-1).and_then(|out| synced(&dev, out))
        })?;
        row("softmax_rows", t, gbs(8.0 * (rows * 1024) as f64, t.1));
        let t = time(&dev, runs, || {
            let outs = (0..20)
                .map(|_| sm.softmax(-1))
                .collect::<Result<Vec<_>>>()?;
            synced(&dev, outs)
        })?;
        row(
            "softmax_rows_x20",
            t,
            gbs(20.0 * 8.0 * (rows * 1024) as f64, t.1),
        );
    }
    if o.wants("hardswish") {
        ok &= check("hardswish", 0.0, &[&a1], |t| t[0].hardswish())?;
        let t = time(&dev, runs, || {
            a1.hardswish().and_then(|out| synced(&dev, out))
        })?;
        row("hardswish", t, gbs(8.0 * nf, t.1));
    }
    if o.wants("layer_norm") || o.wants("rms_norm") {
        // The PyTorch peer's shapes: rows of 1024 with a weight (and bias).
        let rows = side;
        let x = Tensor::rand([rows, 1024], DType::F32, 9, &dev)?;
        let g = Tensor::rand([1024], DType::F32, 10, &dev)?;
        let b = Tensor::rand([1024], DType::F32, 11, &dev)?;
        let ln = |t: &[Tensor]| t[0].layer_norm(&[1024], Some(&t[1]), Some(&t[2]), 1e-5);
        let rms = |t: &[Tensor]| t[0].rms_norm(&[1024], Some(&t[1]), None);
        let inputs = [x.clone(), g.clone(), b.clone()];
        ok &= check("layer_norm", 1e-4, &[&x, &g, &b], ln)?;
        let t = time(&dev, runs, || ln(&inputs).and_then(|out| synced(&dev, out)))?;
        row("layer_norm", t, gbs(8.0 * (rows * 1024) as f64, t.1));
        ok &= check("rms_norm", 1e-4, &[&x, &g, &b], rms)?;
        let t = time(&dev, runs, || {
            rms(&inputs).and_then(|out| synced(&dev, out))
        })?;
        row("rms_norm", t, gbs(8.0 * (rows * 1024) as f64, t.1));
    }
    if o.wants("cumsum_rows") {
        let rows = side;
        let cs = Tensor::rand([rows, 1024], DType::F32, 8, &dev)?;
        ok &= check("cumsum_rows", 1e-4, &[&cs], |t| t[0].cumsum(-1))?;
        let t = time(&dev, runs, || {
            cs.cumsum(-1).and_then(|out| synced(&dev, out))
        })?;
        row("cumsum_rows", t, gbs(8.0 * (rows * 1024) as f64, t.1));
    }
    if o.wants("argsort_1m") {
        let line = Tensor::rand([n / 16], DType::F32, 9, &dev)?;
        ok &= check("argsort_1m", 0.0, &[&line], |t| {
            t[0].argsort(0, SortOrder::Ascending)?.to_dtype(DType::F32)
        })?;
        let t = time(&dev, runs, || {
            line.argsort(0, SortOrder::Ascending)
                .and_then(|out| synced(&dev, out))
        })?;
        row("argsort_1m", t, gbs(8.0 * (n / 16) as f64, t.1));
    }
    if o.wants("argsort_rows") {
        let rows = Tensor::rand([side, 1024], DType::F32, 10, &dev)?;
        ok &= check("argsort_rows", 0.0, &[&rows], |t| {
            t[0].argsort(-1, SortOrder::Ascending)?.to_dtype(DType::F32)
        })?;
        let t = time(&dev, runs, || {
            rows.argsort(-1, SortOrder::Ascending)
                .and_then(|out| synced(&dev, out))
        })?;
        row("argsort_rows", t, gbs(8.0 * (side * 1024) as f64, t.1));
    }
    if o.wants("topk_rows") {
        let rows = Tensor::rand([side, 1024], DType::F32, 11, &dev)?;
        ok &= check("topk_rows", 0.0, &[&rows], |t| {
            Ok(t[0].topk(10, -1, TopK::Largest)?.0)
        })?;
        let t = time(&dev, runs, || {
            rows.topk(10, -1, TopK::Largest)
                .and_then(|out| synced(&dev, out))
        })?;
        row("topk_rows", t, gbs(4.0 * (side * 1024) as f64, t.1));
    }
    ok &= ffts(&o, &dev, n, side)?;
    ok &= images(&o, &dev)?;
    ok &= matmuls(&o, &dev)?;
    ok &= quantized(&o, &dev)?;
    ok &= quantized_prefill(&o, &dev)?;
    ok &= attention(&o, &dev)?;
    // Known only once the products have run: which kernels the matmul
    // self-check dropped on this device (their products went elsewhere).
    let dropped = dev.info().dropped_kernels;
    println!(
        "# dropped kernels: {}",
        if dropped.is_empty() {
            "none".to_string()
        } else {
            dropped.join(", ")
        }
    );
    // And what autotuning chose for each class of products it timed: the
    // size rule's tile stays unless another ran 10% faster.
    for tuned in dev.info().tuned_matmuls {
        println!("# tuned {tuned}");
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

/// Issue 49's rows: a decoding step's matrix-vector product with a
/// 14336 x 4096 weight (a Llama 8B feed-forward's) quantized as Q4_0, Q4_K
/// and Q8_0, and in f16, the PyTorch peer's `matvec_f16_14336x4096`. Rates
/// count the weight's bytes as stored, the activations and the result.
fn quantized(o: &Options, dev: &Device) -> Result<bool> {
    use webtensor::{GgmlType, QTensor};
    let cpu = Device::cpu();
    let (n, k) = if o.small { (1024, 512) } else { (14336, 4096) };
    let mut ok = true;
    let x = Tensor::rand([1, k], DType::F32, 40, dev)?;
    let x_cpu = x.to_device(&cpu)?;
    let types = [
        (GgmlType::Q4_0, "qmatvec_q4_0_14336x4096"),
        (GgmlType::Q4_K, "qmatvec_q4_K_14336x4096"),
        (GgmlType::Q8_0, "qmatvec_q8_0_14336x4096"),
    ];
    for (ty, name) in types {
        if !o.wants(name) {
            continue;
        }
        let bytes = weight_blocks(ty, n, k)?;
        let w = QTensor::from_blocks(ty, [n, k], &bytes, dev)?;
        let want = x_cpu.qmatmul(&QTensor::from_blocks(ty, [n, k], &bytes, &cpu)?)?;
        let error = max_error(&x.qmatmul(&w)?.to_device(&cpu)?, &want)?;
        if error > 1e-3 {
            println!("{name:<22} CHECK FAILED: largest relative error {error:e} (tolerance 1e-3)");
            ok = false;
        }
        let t = time(dev, o.runs, || {
            x.qmatmul(&w).and_then(|out| synced(dev, out))
        })?;
        let moved = bytes.len() as f64 + 4.0 * (k + n) as f64;
        row(name, t, gbs(moved, t.1));
    }
    if o.wants("matvec_f16_14336x4096") {
        let name = "matvec_f16_14336x4096";
        let w = Tensor::rand([n, k], DType::F16, 42, dev)?;
        let x16 = x.to_dtype(DType::F16)?;
        let mv = |t: &[Tensor]| t[0].matmul(&t[1].t());
        ok &= check(name, 1e-2, &[&x16, &w], mv)?;
        let inputs = [x16, w];
        let t = time(dev, o.runs, || mv(&inputs).and_then(|out| synced(dev, out)))?;
        row(name, t, gbs(2.0 * (n * k + k + n) as f64, t.1));
    }
    Ok(ok)
}

/// A weight of `n` rows of `k` as `ty`'s blocks: Q4_K random blocks with
/// moderate scales (nothing quantizes k-quants here: d and dmin are the
/// first four bytes of each block), other types a normal weight
/// quantized.
fn weight_blocks(ty: webtensor::GgmlType, n: usize, k: usize) -> Result<Vec<u8>> {
    if ty == webtensor::GgmlType::Q4_K {
        let mut b: Vec<u8> = (0..n * k / 256 * 144)
            .map(|i| (i * 131 % 251) as u8)
            .collect();
        for block in b.chunks_exact_mut(144) {
            let d = webtensor::f16::from_f32(0.0003).to_le_bytes();
            block[..2].copy_from_slice(&d);
            block[2..4].copy_from_slice(&d);
        }
        return Ok(b);
    }
    let w = Tensor::randn([n, k], DType::F32, 41, &Device::cpu())?.mul_scalar(0.02)?;
    webtensor::QTensor::quantize(&w, ty)?.to_bytes()
}

/// Issue 49's prefill rows: a prompt of 512 tokens through the same
/// feed-forward weight, on the tiled kernel that decodes the blocks into
/// its tiles (`qmatmul_q4_0_512x14336x4096`, `qmatmul_q4_K_...`), beside
/// the f16 product of that shape (`matmul_f16_512x14336x4096`). GFLOP/s
/// count 2 m n k; the first 8 rows are checked against the CPU.
fn quantized_prefill(o: &Options, dev: &Device) -> Result<bool> {
    use webtensor::{GgmlType, QTensor};
    let cpu = Device::cpu();
    let (m, n, k) = if o.small {
        (64, 1024, 512)
    } else {
        (512, 14336, 4096)
    };
    let flops = 2.0 * (m * n * k) as f64;
    let mut ok = true;
    // `_fast`: on a device whose f32 products may round to f16, so that
    // they run on cooperative matrices where it has them.
    let fast = Device::gpu_with(GpuOptions {
        matmul_precision: Some(MatmulPrecision::Fast),
        ..Default::default()
    })?;
    let head = Tensor::rand([m, k], DType::F32, 43, &cpu)?.sub_scalar(0.5)?;
    for (ty, name, on, tolerance) in [
        (GgmlType::Q4_0, "qmatmul_q4_0_512x14336x4096", dev, 1e-3),
        (GgmlType::Q4_K, "qmatmul_q4_K_512x14336x4096", dev, 1e-3),
        (
            GgmlType::Q4_K,
            "qmatmul_q4_K_512x14336x4096_fast",
            &fast,
            1e-2,
        ),
    ] {
        if !o.wants(name) {
            continue;
        }
        let x = head.to_device(on)?;
        let bytes = weight_blocks(ty, n, k)?;
        let w = QTensor::from_blocks(ty, [n, k], &bytes, on)?;
        let cpu_w = QTensor::from_blocks(ty, [n, k], &bytes, &cpu)?;
        let want = head.narrow(0, 0, 8)?.qmatmul(&cpu_w)?;
        let got = x.qmatmul(&w)?.narrow(0, 0, 8)?.to_device(&cpu)?;
        let error = max_error(&got, &want)?;
        if error > tolerance {
            println!(
                "{name:<22} CHECK FAILED: largest relative error {error:e} (tolerance {tolerance:e})"
            );
            ok = false;
        }
        let t = time(on, o.runs, || x.qmatmul(&w).and_then(|out| synced(on, out)))?;
        row(name, t, gflops(flops, t.1));
    }
    let x = head.to_device(dev)?;
    if o.wants("matmul_f16_512x14336x4096") {
        let name = "matmul_f16_512x14336x4096";
        let w = Tensor::rand([n, k], DType::F16, 44, dev)?;
        let x16 = x.to_dtype(DType::F16)?;
        let t = time(dev, o.runs, || {
            x16.matmul(&w.t()).and_then(|out| synced(dev, out))
        })?;
        row(name, t, gflops(flops, t.1));
    }
    Ok(ok)
}

/// Issue 49's attention rows, as the PyTorch peer runs them in f16: a
/// causal prefill of 2048 queries over 2048 keys, 32 heads of 128
/// (`sdpa_prefill_2048`, GFLOP/s counting the half of the scores a causal
/// mask keeps, 4 L S E / 2 a head), and a decoding step of one query over
/// 4096 keys (`sdpa_decode_4096`, GB/s of K and V read). With `--small`,
/// 256 queries and 512 keys. Each is checked against the CPU on two heads.
fn attention(o: &Options, dev: &Device) -> Result<bool> {
    use webtensor::Attention;
    let (l, s) = if o.small { (256, 512) } else { (2048, 4096) };
    let (heads, e) = (32, 128);
    let mut ok = true;
    let check_heads = |name: &str, q: &Tensor, kv: &Tensor, a: &Attention| {
        let two = |t: &Tensor| t.slice(webtensor::s![.., ..2, .., ..]);
        check(name, 1e-2, &[&two(q)?, &two(kv)?], |t| {
            t[0].sdpa(&t[1], &t[1], a)
        })
    };
    // A causal prefill of `l` queries, `heads` heads of `e`; the second
    // row's heads pass 128 (q staged in two chunks, the values in two
    // parts).
    for (name, heads, e, seed) in [
        ("sdpa_prefill_2048", heads, e, 50),
        ("sdpa_prefill_2048_h256", 8, 256, 54),
    ] {
        if !o.wants(name) {
            continue;
        }
        let q = Tensor::rand([1, heads, l, e], DType::F16, seed, dev)?;
        let kv = Tensor::rand([1, heads, l, e], DType::F16, seed + 1, dev)?;
        let a = Attention::new().causal();
        ok &= check_heads(name, &q, &kv, &a)?;
        let t = time(dev, o.runs, || {
            q.sdpa(&kv, &kv, &a).and_then(|out| synced(dev, out))
        })?;
        let flops = 4.0 * (heads * l * l * e) as f64 / 2.0;
        row(name, t, format!("{:.2}GFLOP/s", flops / (t.1 * 1e-3) / 1e9));
    }
    if o.wants("sdpa_decode_4096") {
        let name = "sdpa_decode_4096";
        let q = Tensor::rand([1, heads, 1, e], DType::F16, 52, dev)?;
        let kv = Tensor::rand([1, heads, s, e], DType::F16, 53, dev)?;
        let a = Attention::new();
        ok &= check_heads(name, &q, &kv, &a)?;
        let t = time(dev, o.runs, || {
            q.sdpa(&kv, &kv, &a).and_then(|out| synced(dev, out))
        })?;
        row(name, t, gbs(2.0 * 2.0 * (heads * s * e) as f64, t.1));
    }
    Ok(ok)
}

/// The FFT rows: one line of `n / 16` and one of `n / 4` complex points
/// (2^20 and 2^22; the four-step algorithm past one kernel's line), a
/// complex `fft2` of 1024 x 1024 (256
/// x 256 with `--small`), and the `rfft` of each of `side` rows of 1024
/// reals.
fn ffts(o: &Options, dev: &Device, n: usize, side: usize) -> Result<bool> {
    let mut ok = true;
    // Results compared as their real parts, then their imaginary parts.
    let parts = |z: Tensor| Tensor::concat(&[&z.real()?, &z.imag()?], 0);
    for (name, len) in [("fft_1d_2^20", n / 16), ("fft_1d_2^22", n / 4)] {
        if !o.wants(name) {
            continue;
        }
        let z = Tensor::complex(
            &Tensor::rand([len], DType::F32, 12, dev)?,
            &Tensor::rand([len], DType::F32, 13, dev)?,
        )?;
        ok &= check(name, 1e-3, &[&z], |t| parts(t[0].fft(-1)?))?;
        let t = time(dev, o.runs, || z.fft(-1).and_then(|out| synced(dev, out)))?;
        row(name, t, gbs(16.0 * len as f64, t.1));
    }
    if o.wants("fft2_1024") {
        let e = if o.small { 256 } else { 1024 };
        let z = Tensor::complex(
            &Tensor::rand([e, e], DType::F32, 14, dev)?,
            &Tensor::rand([e, e], DType::F32, 15, dev)?,
        )?;
        let fft2 = || Fft::over([-2, -1]);
        ok &= check("fft2_1024", 1e-3, &[&z], |t| parts(t[0].fft(fft2())?))?;
        let t = time(dev, o.runs, || {
            z.fft(fft2()).and_then(|out| synced(dev, out))
        })?;
        row("fft2_1024", t, gbs(16.0 * (e * e) as f64, t.1));
    }
    if o.wants("rfft_rows") {
        let rows = Tensor::rand([side, 1024], DType::F32, 16, dev)?;
        ok &= check("rfft_rows", 1e-3, &[&rows], |t| parts(t[0].rfft(-1)?))?;
        let t = time(dev, o.runs, || {
            rows.rfft(-1).and_then(|out| synced(dev, out))
        })?;
        row(
            "rfft_rows",
            t,
            gbs((4 * side * 1024 + 8 * side * 513) as f64, t.1),
        );
    }
    Ok(ok)
}

/// The convolution, pooling and resizing rows, on the PyTorch peer's
/// shapes (`--small`: batch 2 and a 256 x 256 image): a ResNet layer
/// (`[32, 64, 56, 56]`, 64 3 x 3 filters, padding 1; GFLOP/s counting 2
/// per multiply-add), the depthwise 3 x 3 on it (8 bytes per element), a
/// 2 x 2 max pooling (5 bytes per input element), a padded 3 x 3 average
/// pooling of stride 1 (8 bytes per element) and a bilinear and a nearest
/// resize of `[8, 3, 1024, 1024]` to 512 x 512 (5 bytes per input element).
fn images(o: &Options, dev: &Device) -> Result<bool> {
    let mut ok = true;
    let batch = if o.small { 2 } else { 32 };
    let x = Tensor::randn([batch, 64, 56, 56], DType::F32, 17, dev)?;
    let elements = x.numel() as f64;
    if o.wants("conv2d_resnet") {
        let w = Tensor::randn([64, 64, 3, 3], DType::F32, 18, dev)?;
        let conv = || Conv::new().padding(1);
        ok &= check("conv2d_resnet", 1e-3, &[&x, &w], |t| {
            t[0].conv2d(&t[1], &conv())
        })?;
        let t = time(dev, o.runs, || {
            x.conv2d(&w, &conv()).and_then(|out| synced(dev, out))
        })?;
        let flops = 2.0 * elements * 64.0 * 9.0;
        row("conv2d_resnet", t, gflops(flops, t.1));
    }
    if o.wants("conv2d_resnet_f16") {
        // On cooperative matrices where the device has them.
        let x16 = x.to_dtype(DType::F16)?;
        let w = Tensor::randn([64, 64, 3, 3], DType::F16, 18, dev)?;
        let conv = || Conv::new().padding(1);
        ok &= check("conv2d_resnet_f16", 1e-2, &[&x16, &w], |t| {
            t[0].conv2d(&t[1], &conv())
        })?;
        let t = time(dev, o.runs, || {
            x16.conv2d(&w, &conv()).and_then(|out| synced(dev, out))
        })?;
        let flops = 2.0 * elements * 64.0 * 9.0;
        row("conv2d_resnet_f16", t, gflops(flops, t.1));
    }
    if o.wants("conv_transpose2d") {
        // A decoder's upsampling (DCGAN's, U-Net's): 4x4, stride 2,
        // padding 1, 64 -> 32 channels, 56 x 56 -> 112 x 112.
        let w = Tensor::randn([64, 32, 4, 4], DType::F32, 21, dev)?;
        let conv = || Conv::new().stride(2).padding(1);
        ok &= check("conv_transpose2d", 1e-3, &[&x, &w], |t| {
            t[0].conv_transpose2d(&t[1], &conv())
        })?;
        let t = time(dev, o.runs, || {
            x.conv_transpose2d(&w, &conv())
                .and_then(|out| synced(dev, out))
        })?;
        let flops = 2.0 * elements * 32.0 * 16.0;
        row("conv_transpose2d", t, gflops(flops, t.1));
    }
    if o.wants("conv2d_depthwise") {
        let w = Tensor::randn([64, 1, 3, 3], DType::F32, 19, dev)?;
        let conv = || Conv::new().padding(1).groups(64);
        ok &= check("conv2d_depthwise", 1e-4, &[&x, &w], |t| {
            t[0].conv2d(&t[1], &conv())
        })?;
        let t = time(dev, o.runs, || {
            x.conv2d(&w, &conv()).and_then(|out| synced(dev, out))
        })?;
        row("conv2d_depthwise", t, gbs(8.0 * elements, t.1));
    }
    if o.wants("maxpool") {
        ok &= check("maxpool", 0.0, &[&x], |t| t[0].max_pool2d(&Pool::new(2)))?;
        let t = time(dev, o.runs, || {
            x.max_pool2d(&Pool::new(2)).and_then(|out| synced(dev, out))
        })?;
        row("maxpool", t, gbs(4.0 * elements * 5.0 / 4.0, t.1));
    }
    if o.wants("group_norm") {
        // 8 groups of 8 channels of 56 x 56, no weight (the peer's call).
        ok &= check("group_norm", 1e-4, &[&x], |t| {
            t[0].group_norm(8, None, None, 1e-5)
        })?;
        let t = time(dev, o.runs, || {
            x.group_norm(8, None, None, 1e-5)
                .and_then(|out| synced(dev, out))
        })?;
        row("group_norm", t, gbs(8.0 * elements, t.1));
    }
    if o.wants("batch_norm") {
        let mean = Tensor::rand([64], DType::F32, 21, dev)?;
        let var = Tensor::rand([64], DType::F32, 22, dev)?.add_scalar(0.5)?;
        let bn = |t: &[Tensor]| t[0].batch_norm(&t[1], &t[2], None, None, 1e-5);
        ok &= check("batch_norm", 0.0, &[&x, &mean, &var], bn)?;
        let inputs = [x.clone(), mean, var];
        let t = time(dev, o.runs, || bn(&inputs).and_then(|out| synced(dev, out)))?;
        row("batch_norm", t, gbs(8.0 * elements, t.1));
    }
    if o.wants("avgpool_3x3") {
        let pool = Pool::new(3).stride(1).padding(1);
        ok &= check("avgpool_3x3", 1e-6, &[&x], |t| t[0].avg_pool2d(&pool))?;
        let t = time(dev, o.runs, || {
            x.avg_pool2d(&pool).and_then(|out| synced(dev, out))
        })?;
        row("avgpool_3x3", t, gbs(8.0 * elements, t.1));
    }
    if o.wants("resize_bilinear") || o.wants("resize_nearest") {
        let (images, side) = if o.small { (1, 256) } else { (8, 1024) };
        let img = Tensor::rand([images, 3, side, side], DType::F32, 20, dev)?;
        let half = [side / 2, side / 2];
        ok &= check("resize_bilinear", 1e-5, &[&img], |t| {
            t[0].resize(half, Resize::Bilinear)
        })?;
        let t = time(dev, o.runs, || {
            img.resize(half, Resize::Bilinear)
                .and_then(|out| synced(dev, out))
        })?;
        row(
            "resize_bilinear",
            t,
            gbs(4.0 * img.numel() as f64 * 5.0 / 4.0, t.1),
        );
        ok &= check("resize_nearest", 0.0, &[&img], |t| {
            t[0].resize(half, Resize::Nearest)
        })?;
        let t = time(dev, o.runs, || {
            img.resize(half, Resize::Nearest)
                .and_then(|out| synced(dev, out))
        })?;
        row(
            "resize_nearest",
            t,
            gbs(4.0 * img.numel() as f64 * 5.0 / 4.0, t.1),
        );
    }
    Ok(ok)
}

/// The largest square product on the kernel variants of issue 29, each
/// on a device of its own settings: f16 on cooperative matrices
/// (`matmul_N_f16_coop`; the medium tile where the device has none), f32
/// rounded to f16 on them (`matmul_N_f32_fast`), and the f32 product and
/// the full sum with wgpu's runtime checks back on (`matmul_N_checked`,
/// `sum_all_checked`), beside the unchecked rows above.
fn variants(o: &Options, dev: &Device, big: usize) -> Result<bool> {
    let mut ok = true;
    let mm = |t: &[Tensor]| t[0].matmul(&t[1]);
    let flops = 2.0 * (big as f64).powi(3);
    let fast = Device::gpu_with(GpuOptions {
        matmul_precision: Some(MatmulPrecision::Fast),
        ..Default::default()
    })?;
    let checked = Device::gpu_with(GpuOptions {
        runtime_checks: Some(true),
        ..Default::default()
    })?;
    let products = [
        (format!("matmul_{big}_f16_coop"), dev, DType::F16, 1e-2),
        (format!("matmul_{big}_f32_fast"), &fast, DType::F32, 1e-2),
        (format!("matmul_{big}_checked"), &checked, DType::F32, 1e-4),
    ];
    for (name, on, dtype, tolerance) in products {
        if big == 0 || !o.wants(&name) {
            continue;
        }
        if dtype == DType::F16 || on.info().matmul_precision == MatmulPrecision::Fast {
            on.set_matmul_tile(MatmulTile::Cooperative);
        }
        let a = Tensor::rand([big, big], dtype, 24, on)?;
        let b = Tensor::rand([big, big], dtype, 25, on)?;
        ok &= check(&name, tolerance, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(on, o.runs, || mm(&inputs).and_then(|out| synced(on, out)))?;
        row(&name, t, gflops(flops, t.1));
        on.set_matmul_tile(MatmulTile::Auto);
    }
    if o.wants("sum_all_checked") {
        let n = (1usize << 24) / if o.small { 64 } else { 1 };
        let a = Tensor::rand([n], DType::F32, 26, &checked)?;
        ok &= check("sum_all_checked", 1e-5, &[&a], |t| t[0].sum(..))?;
        let t = time(&checked, o.runs, || {
            a.sum(..).and_then(|out| synced(&checked, out))
        })?;
        row("sum_all_checked", t, gbs(4.0 * n as f64, t.1));
    }
    Ok(ok)
}

/// The matmul workloads: square sizes, a transposed left operand, f16, a
/// batch of small products and a matrix-vector product.
fn matmuls(o: &Options, dev: &Device) -> Result<bool> {
    let runs = o.runs;
    let mut ok = true;
    let cap = if o.small { 256 } else { usize::MAX };
    let big =
        o.mm.iter()
            .copied()
            .filter(|&k| k <= cap)
            .max()
            .unwrap_or(0);
    let mm = |t: &[Tensor]| t[0].matmul(&t[1]);
    let mm_at = |t: &[Tensor]| t[0].t().matmul(&t[1]);
    for &k in o.mm.iter().filter(|&&k| k <= cap) {
        let name = format!("matmul_{k}");
        if !o.wants(&name) {
            continue;
        }
        let a = Tensor::rand([k, k], DType::F32, 10, dev)?;
        let b = Tensor::rand([k, k], DType::F32, 11, dev)?;
        ok &= check(&name, 1e-4, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row(&name, t, gflops(2.0 * (k as f64).powi(3), t.1));
    }
    if big > 0 && o.wants(&format!("matmul_{big}_aT")) {
        let name = format!("matmul_{big}_aT");
        let a = Tensor::rand([big, big], DType::F32, 12, dev)?;
        let b = Tensor::rand([big, big], DType::F32, 13, dev)?;
        ok &= check(&name, 1e-4, &[&a, &b], mm_at)?;
        let inputs = [a, b];
        let t = time(dev, runs, || {
            mm_at(&inputs).and_then(|out| synced(dev, out))
        })?;
        row(&name, t, gflops(2.0 * (big as f64).powi(3), t.1));
    }
    // 16-bit products as the PyTorch peer times them: f16 at the largest
    // size, 2048 and 1024, and bf16 at the largest, each on the tile the
    // device chooses (cooperative matrices where autotuning finds them
    // faster).
    let sixteen = [
        (big, DType::F16),
        (2048, DType::F16),
        (1024, DType::F16),
        (big, DType::BF16),
    ];
    for (n, dtype) in sixteen {
        let name = format!("matmul_{n}_{dtype}");
        if big == 0 || n > big || !o.wants(&name) {
            continue;
        }
        let a = Tensor::rand([n, n], dtype, 14, dev)?;
        let b = Tensor::rand([n, n], dtype, 15, dev)?;
        ok &= check(&name, 2e-2, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row(&name, t, gflops(2.0 * (n as f64).powi(3), t.1));
    }
    // The largest square product and a mid-size one (1024, 128 with
    // --small) with each register tile fixed (what autotuning chooses
    // among), then back to the device's choice.
    let mid = if o.small { 128 } else { 1024 };
    let tiles = [
        (MatmulTile::Large, "large"),
        (MatmulTile::Medium, "medium"),
        (MatmulTile::Subgroup, "subgroup"),
        (MatmulTile::Tall, "tall"),
        (MatmulTile::Wide, "wide"),
    ];
    let sizes = if big == mid {
        vec![big]
    } else {
        vec![big, mid]
    };
    for (big, (tile, label)) in sizes.into_iter().flat_map(|n| tiles.map(|t| (n, t))) {
        let name = format!("matmul_{big}_{label}");
        if big == 0 || !o.wants(&name) {
            continue;
        }
        dev.set_matmul_tile(tile);
        let a = Tensor::rand([big, big], DType::F32, 22, dev)?;
        let b = Tensor::rand([big, big], DType::F32, 23, dev)?;
        ok &= check(&name, 1e-4, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row(&name, t, gflops(2.0 * (big as f64).powi(3), t.1));
        dev.set_matmul_tile(MatmulTile::Auto);
    }
    ok &= variants(o, dev, big)?;
    if o.wants("bmm_64x256") {
        let e = if o.small { 64 } else { 256 };
        let a = Tensor::rand([64, e, e], DType::F32, 16, dev)?;
        let b = Tensor::rand([64, e, e], DType::F32, 17, dev)?;
        ok &= check("bmm_64x256", 1e-4, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row(
            "bmm_64x256",
            t,
            gflops(2.0 * 64.0 * (e as f64).powi(3), t.1),
        );
    }
    if o.wants("bmm_16384x8") {
        // Many tiny products: the per-output kernel's case.
        let batches = if o.small { 1024 } else { 16384 };
        let a = Tensor::rand([batches, 8, 8], DType::F32, 20, dev)?;
        let b = Tensor::rand([batches, 8, 8], DType::F32, 21, dev)?;
        ok &= check("bmm_16384x8", 1e-4, &[&a, &b], mm)?;
        let inputs = [a, b];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row("bmm_16384x8", t, gflops(2.0 * batches as f64 * 512.0, t.1));
    }
    if o.wants("matvec_4096") {
        let e = if o.small { 512 } else { 4096 };
        let a = Tensor::rand([e, e], DType::F32, 18, dev)?;
        let x = Tensor::rand([e], DType::F32, 19, dev)?;
        ok &= check("matvec_4096", 1e-4, &[&a, &x], mm)?;
        let inputs = [a, x];
        let t = time(dev, runs, || mm(&inputs).and_then(|out| synced(dev, out)))?;
        row("matvec_4096", t, gbs(4.0 * (e * e + 2 * e) as f64, t.1));
    }
    Ok(ok)
}

/// Issue 50's linalg rows (see the module docs).
fn linalg_rows(dev: &Device, runs: usize, small: bool, ok: &mut bool) -> Result<()> {
    use webtensor::linalg::{self, Triangle};
    let side = if small { 512 } else { 4096 };
    let nf = side as f64;
    let a = Tensor::randn([side, side], DType::F32, 11, dev)?;
    let eye = Tensor::eye(side, DType::F32, dev)?;
    let spd = a.matmul(&a.t())?.div_scalar(nf)?.add(&eye)?;
    let b = Tensor::randn([side, 1], DType::F32, 12, dev)?;
    *ok &= check("cholesky", 1e-3, &[&spd], |t| {
        Ok(linalg::cholesky_ex(&t[0], Triangle::Lower)?.0)
    })?;
    let t = time(dev, runs, || {
        linalg::cholesky_ex(&spd, Triangle::Lower).and_then(|out| synced(dev, out))
    })?;
    row(
        &format!("cholesky_{side}"),
        t,
        gflops(nf * nf * nf / 3.0, t.1),
    );
    *ok &= check("solve", 1e-2, &[&spd, &b], |t| {
        Ok(linalg::solve_ex(&t[0], &t[1])?.0)
    })?;
    let t = time(dev, runs, || {
        linalg::solve_ex(&spd, &b).and_then(|out| synced(dev, out))
    })?;
    row(
        &format!("solve_{side}"),
        t,
        gflops(2.0 * nf * nf * nf / 3.0 + 2.0 * nf * nf, t.1),
    );
    let batch = if small { 1000 } else { 10000 };
    let g = Tensor::randn([batch, 8, 8], DType::F32, 13, dev)?;
    let small_spd = g
        .matmul(&g.transpose(-2, -1)?)?
        .add(&Tensor::eye(8, DType::F32, dev)?)?;
    let rhs = Tensor::randn([batch, 8, 1], DType::F32, 14, dev)?;
    let per = batch as f64;
    *ok &= check("solve_8x8", 1e-3, &[&small_spd, &rhs], |t| {
        Ok(linalg::solve_ex(&t[0], &t[1])?.0)
    })?;
    let t = time(dev, runs, || {
        linalg::solve_ex(&small_spd, &rhs).and_then(|out| synced(dev, out))
    })?;
    row(
        &format!("solve_{batch}x8x8"),
        t,
        gflops(per * (2.0 * 512.0 / 3.0 + 128.0), t.1),
    );
    let t = time(dev, runs, || {
        linalg::cholesky_ex(&small_spd, Triangle::Lower).and_then(|out| synced(dev, out))
    })?;
    row(
        &format!("cholesky_{batch}x8x8"),
        t,
        gflops(per * 512.0 / 3.0, t.1),
    );
    let t = time(dev, runs, || {
        linalg::svd_ex(&g, false).and_then(|out| synced(dev, out))
    })?;
    row(
        &format!("svd_{batch}x8x8"),
        t,
        gflops(per * 4.0 * 512.0, t.1),
    );
    Ok(())
}
