//! A real network on the CPU device (issue 47 item 5): the MobileNetV3 +
//! DBNet text detector of `benches/detector/` at 640x640 (or
//! `WEBTENSOR_NET_SIZE`, a multiple of 32) with seeded random weights, on
//! one thread and on two (`Device::cpu_with_threads`), runs alternating,
//! the median and fastest of `WEBTENSOR_NET_REPS` (5) each.
//!
//! It saves the weights, the input and its output to
//! `target/networks/detector.safetensors`; then
//! `python3 benches/reference/onnx_detector.py` builds the same network as
//! an ONNX graph from them, checks onnxruntime's output against this one's
//! and times onnxruntime on one and two threads. `WEBTENSOR_NET_PROFILE=1`
//! (or `2`) also prints the time of each op kind of one run on one thread
//! (or two), and of each part of the network (its profile regions);
//! `WEBTENSOR_NET_TABLE=1` with it prints the whole profile. The image
//! is converted to channels-last memory (`Tensor::to_channels_last`) inside
//! the timed pass, which the network's convolutions then keep;
//! `WEBTENSOR_NET_LAYOUT=nchw` runs it on the row-major image instead;
//! `WEBTENSOR_NET_THREADS=1` (or `2`) times one thread count alone.
//!
//! Run: `cargo bench --bench networks`.

mod detector;

use detector::Detector;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use webtensor::{DType, Device, Tensor};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One forward pass on `image`'s device, to the host.
fn run(net: &Detector, image: &Tensor) -> (Duration, Vec<f32>) {
    let start = Instant::now();
    let out = forward(net, image).expect("forward");
    let values = out.to_vec::<f32>().expect("readback");
    (start.elapsed(), values)
}

/// The network's output for `image` converted to channels-last memory
/// first; with `WEBTENSOR_NET_LAYOUT=nchw`, of the row-major image.
fn forward(net: &Detector, image: &Tensor) -> webtensor::Result<Tensor> {
    if std::env::var("WEBTENSOR_NET_LAYOUT").is_ok_and(|v| v == "nchw") {
        net.forward(image)
    } else {
        net.forward(&image.to_channels_last()?)
    }
}

fn main() -> webtensor::Result<()> {
    let size = env("WEBTENSOR_NET_SIZE", 640);
    let reps = env("WEBTENSOR_NET_REPS", 5).max(1);
    assert!(
        size > 0 && size.is_multiple_of(32),
        "WEBTENSOR_NET_SIZE must be a multiple of 32"
    );
    let net = Detector::new(&Device::cpu())?;
    // `WEBTENSOR_NET_THREADS=1` (or 2) runs one thread count alone.
    let counts: Vec<usize> = match env("WEBTENSOR_NET_THREADS", 0) {
        0 => vec![1, 2],
        n => vec![n],
    };
    let devices: Vec<(usize, Device)> = counts
        .iter()
        .map(|&n| (n, Device::cpu_with_threads(n).expect("threads")))
        .collect();
    let images: Vec<Tensor> = devices
        .iter()
        .map(|(_, dev)| Tensor::rand([1, 3, size, size], DType::F32, 1000, dev))
        .collect::<webtensor::Result<_>>()?;

    // Warm up, and check the thread counts agree.
    let (_, one) = run(&net, &images[0]);
    let mut differ = 0.0f32;
    for image in &images[1..] {
        let (_, other) = run(&net, image);
        differ = one
            .iter()
            .zip(&other)
            .map(|(a, b)| (a - b).abs())
            .fold(differ, f32::max);
    }
    let mut times = vec![Vec::new(); devices.len()];
    for _ in 0..reps {
        for (k, image) in images.iter().enumerate() {
            times[k].push(run(&net, image).0);
        }
    }
    println!("detector {size}x{size}, webtensor CPU device, {reps} runs alternating");
    for ((n, _), t) in devices.iter().zip(&mut times) {
        t.sort();
        println!(
            "  {n} thread(s): median {:8.1} ms, fastest {:8.1} ms",
            ms(t[t.len() / 2]),
            ms(t[0])
        );
    }
    println!("  largest difference between the thread counts: {differ:e}");
    let mean = one.iter().sum::<f32>() / one.len() as f32;
    println!("  output mean {mean:.4} over {} values", one.len());

    let profiled = env("WEBTENSOR_NET_PROFILE", 0);
    if let Some(k) = devices.iter().position(|(n, _)| *n == profiled) {
        // The image of that thread count's device: its ops run there.
        let (threads, dev) = &devices[k];
        let profile = dev.profile(|| forward(&net, &images[k]).map(drop))?;
        let mut by_op: BTreeMap<&str, (usize, Duration)> = BTreeMap::new();
        for op in profile.ops() {
            let e = by_op.entry(op.name).or_default();
            e.0 += 1;
            e.1 += op.host;
        }
        let mut rows: Vec<_> = by_op.into_iter().collect();
        rows.sort_by_key(|(_, (_, t))| std::cmp::Reverse(*t));
        println!(
            "one run on {threads} thread(s), by op ({:.1} ms in all):",
            ms(profile.wall())
        );
        for (name, (calls, t)) in rows {
            println!("  {name:<18} {calls:4} calls {:8.2} ms", ms(t));
        }
        if env("WEBTENSOR_NET_TABLE", 0) == 1 {
            println!("{profile}");
        }
        println!("by part of the network:");
        for r in profile.regions().iter().filter(|r| r.parent.is_none()) {
            println!(
                "  {:<18} {:4} ops  {:8.2} ms",
                r.name,
                r.ops.len(),
                ms(r.host)
            );
        }
    }

    let dir = std::path::Path::new("target/networks");
    std::fs::create_dir_all(dir).map_err(|e| webtensor::Error::Io {
        op: "networks",
        path: dir.display().to_string(),
        msg: e.to_string(),
    })?;
    let output = Tensor::from_vec(one, [1, 1, size, size], &Device::cpu())?;
    let mut named: Vec<(&str, &Tensor)> =
        net.weights.iter().map(|(k, v)| (k.as_str(), v)).collect();
    named.push(("input", &images[0]));
    named.push(("output", &output));
    let path = dir.join("detector.safetensors");
    webtensor::io::save_safetensors(&path, &named)?;
    println!("saved weights, input and output to {}", path.display());
    Ok(())
}
