//! The host's share of an op: what recording, planning, encoding and
//! submitting cost the calling thread, measured on wgpu's noop backend
//! (buffers, bind groups, encoders and submits as on a GPU; compute passes
//! do not run, so values are wrong and nothing is checked here).
//!
//! ```text
//! cargo bench --bench host_cost                   # 10,000 ops a loop, best of 3
//! cargo bench --bench host_cost -- --ops 2000 --runs 5 --only sum,softmax --settings 0,2
//! cargo test --bench host_cost                    # smoke run: 200 ops, once
//! ```
//!
//! The bench selects the noop backend itself (`WGPU_BACKEND=noop`,
//! `WGPU_NOOP_BACKEND=1`, before any device exists); wgpu's `noop` feature
//! is a dev-dependency, never part of the library's own build. Each loop
//! runs on 1024-element f32 tensors (32 x 32 for matmul, Gray-Scott on a
//! 64 x 64 grid, and that step captured once and replayed by
//! `Graph::run`, per op of the step) in three scheduler settings: fusion on and 1024 ops per
//! submit (the default), fusion off, and one submit per op. A loop's ops
//! are timed up to and including the flush that submits them; each figure
//! is µs per op and heap allocations per op (a counting global allocator),
//! best of the runs after one warm-up run. The matmul tile is pinned
//! (autotuning needs GPU timestamps, which are zero here).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use webtensor::{DType, Device, GpuOptions, MatmulTile, Result, Tensor, s};

#[path = "../examples/common/gray_scott.rs"]
#[allow(dead_code)]
mod gray_scott;

/// The system allocator, counting allocations (and reallocations).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to `System` unchanged; the counter is an
// atomic add with no allocation of its own.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The command line: `--ops N`, `--runs N`, `--only a,b`, `--settings
/// 0,2` (indices into [`SETTINGS`]); a smoke run
/// (200 ops, one run) unless cargo bench passed `--bench`.
struct Options {
    ops: usize,
    runs: usize,
    only: Option<Vec<String>>,
    /// Which scheduler settings to run (indices into [`SETTINGS`]).
    settings: Vec<usize>,
}

impl Options {
    fn parse() -> Options {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let bench = args.iter().any(|a| a == "--bench");
        let mut o = Options {
            ops: if bench { 10_000 } else { 200 },
            runs: if bench { 3 } else { 1 },
            only: None,
            settings: (0..SETTINGS.len()).collect(),
        };
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).cloned().unwrap_or_default();
            match args[i].as_str() {
                "--ops" => o.ops = value.parse().unwrap_or(o.ops).max(1),
                "--runs" => o.runs = value.parse().unwrap_or(o.runs).max(1),
                "--only" => o.only = Some(value.split(',').map(str::to_string).collect()),
                "--settings" => {
                    o.settings = value
                        .split(',')
                        .filter_map(|v| v.parse().ok())
                        .filter(|&k| k < SETTINGS.len())
                        .collect();
                }
                _ => {
                    // cargo's own flags (--bench, test filters): ignored.
                    i += 1;
                    continue;
                }
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

/// One scheduler setting.
#[derive(Clone, Copy)]
struct Setting {
    name: &'static str,
    fusion: bool,
    flush_threshold: usize,
}

const SETTINGS: [Setting; 3] = [
    Setting {
        name: "fused, 1024/submit",
        fusion: true,
        flush_threshold: 1024,
    },
    Setting {
        name: "unfused, 1024/submit",
        fusion: false,
        flush_threshold: 1024,
    },
    Setting {
        name: "1 op/submit",
        fusion: false,
        flush_threshold: 1,
    },
];

/// A loop body: records `ops` ops (its own count per call) on tensors it
/// made itself before the clock started.
type Body = Box<dyn FnMut() -> Result<()>>;

/// One workload: a name, the ops one call of its body records, and how to
/// set it up on a device.
struct Workload {
    name: &'static str,
    ops_per_call: usize,
    setup: fn(&Device) -> Result<Body>,
}

fn n1024(dev: &Device, seed: u64) -> Result<Tensor> {
    Tensor::rand([1024], DType::F32, seed, dev)
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "x = x + y",
            ops_per_call: 1,
            setup: |dev| {
                let mut x = n1024(dev, 1)?;
                let y = n1024(dev, 2)?;
                Ok(Box::new(move || {
                    x = x.add(&y)?;
                    Ok(())
                }))
            },
        },
        Workload {
            name: "x += y",
            ops_per_call: 1,
            setup: |dev| {
                let x = n1024(dev, 1)?;
                let y = n1024(dev, 2)?;
                Ok(Box::new(move || x.add_(&y)))
            },
        },
        Workload {
            name: "x = x + 1",
            ops_per_call: 1,
            setup: |dev| {
                let mut x = n1024(dev, 1)?;
                Ok(Box::new(move || {
                    x = x.add_scalar(1.0)?;
                    Ok(())
                }))
            },
        },
        Workload {
            name: "10-op chain",
            ops_per_call: 10,
            setup: |dev| {
                let mut x = n1024(dev, 1)?;
                let y = n1024(dev, 2)?;
                Ok(Box::new(move || {
                    let t = x.mul_scalar(0.5)?.add(&y)?.exp()?.sub(&y)?.relu()?;
                    x = t.mul(&y)?.add_scalar(1.0)?.sqrt()?.neg()?.tanh()?;
                    Ok(())
                }))
            },
        },
        Workload {
            name: "sum",
            ops_per_call: 1,
            setup: |dev| {
                let x = n1024(dev, 1)?;
                Ok(Box::new(move || {
                    std::hint::black_box(x.sum(0)?);
                    Ok(())
                }))
            },
        },
        Workload {
            name: "matmul 32x32",
            ops_per_call: 1,
            setup: |dev| {
                let a = n1024(dev, 1)?.reshape([32, 32])?;
                let b = n1024(dev, 2)?.reshape([32, 32])?;
                Ok(Box::new(move || {
                    std::hint::black_box(a.matmul(&b)?);
                    Ok(())
                }))
            },
        },
        Workload {
            name: "softmax",
            ops_per_call: 1,
            setup: |dev| {
                let x = n1024(dev, 1)?.reshape([32, 32])?;
                Ok(Box::new(move || {
                    std::hint::black_box(x.softmax(-1)?);
                    Ok(())
                }))
            },
        },
        Workload {
            name: "view: slice + t()",
            ops_per_call: 1,
            setup: |dev| {
                let x = n1024(dev, 1)?.reshape([32, 32])?;
                Ok(Box::new(move || {
                    std::hint::black_box(x.slice(s![1..;2, ..-1])?.t());
                    Ok(())
                }))
            },
        },
        Workload {
            name: "to_vec (16 f32)",
            ops_per_call: 1,
            setup: |dev| {
                let x = Tensor::rand([16], DType::F32, 1, dev)?;
                Ok(Box::new(move || {
                    std::hint::black_box(x.to_vec::<f32>()?);
                    Ok(())
                }))
            },
        },
        Workload {
            name: "Gray-Scott step",
            // Ops one step records (see examples/common/gray_scott.rs).
            ops_per_call: GRAY_SCOTT_OPS,
            setup: |dev| {
                let mut gs = gray_scott::GrayScott::new(64, dev)?;
                Ok(Box::new(move || gs.step(1)))
            },
        },
        Workload {
            name: "Gray-Scott replayed",
            // Per op of the step captured once (a run records none).
            ops_per_call: GRAY_SCOTT_OPS,
            setup: |dev| {
                let mut gs = gray_scott::GrayScott::new(64, dev)?;
                let mut graph = dev.capture(move || gs.step(1))?;
                Ok(Box::new(move || graph.run()))
            },
        },
    ]
}

/// Ops recorded by one Gray-Scott step, counted by the device's stats at
/// start-up (see `check_op_counts`).
const GRAY_SCOTT_OPS: usize = 23;

/// One timed loop: (µs per op, allocations per op).
fn time_loop(dev: &Device, body: &mut Body, calls: usize, per_call: usize) -> Result<(f64, f64)> {
    dev.sync()?;
    let allocs = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..calls {
        body()?;
    }
    dev.flush()?;
    let seconds = start.elapsed().as_secs_f64();
    let allocs = ALLOCATIONS.load(Ordering::Relaxed) - allocs;
    let ops = (calls * per_call) as f64;
    Ok((seconds * 1e6 / ops, allocs as f64 / ops))
}

fn device(setting: Setting) -> Result<Device> {
    Device::gpu_with(GpuOptions {
        fusion: Some(setting.fusion),
        flush_threshold: Some(setting.flush_threshold),
        autotune: Some(false),
        matmul_tile: Some(MatmulTile::Small),
        ..Default::default()
    })
}

/// Checks that each workload records the ops it claims, so that µs/op
/// divides by the right count.
fn check_op_counts(workloads: &[Workload]) -> Result<()> {
    let dev = device(SETTINGS[0])?;
    for w in workloads {
        let mut body = (w.setup)(&dev)?;
        dev.sync()?;
        let before = dev.stats().ops_recorded;
        body()?;
        let recorded = (dev.stats().ops_recorded - before) as usize;
        let records_nothing = ["view", "to_vec", "Gray-Scott replayed"];
        let expected = if records_nothing.iter().any(|n| w.name.starts_with(n)) {
            0
        } else {
            w.ops_per_call
        };
        if recorded != expected {
            eprintln!(
                "host_cost: {} records {recorded} ops per call, not {expected}",
                w.name
            );
            std::process::exit(1);
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let options = Options::parse();
    // SAFETY: no other thread exists yet, and no device has been opened:
    // the variables are read once, when webtensor makes its wgpu instance.
    unsafe {
        std::env::set_var("WGPU_BACKEND", "noop");
        std::env::set_var("WGPU_NOOP_BACKEND", "1");
    }
    let info = Device::gpu()?.info();
    println!(
        "host cost per op on {} ({:?}), {} ops a loop, best of {} after a warm-up",
        info.name, info.backend, options.ops, options.runs
    );
    let workloads: Vec<Workload> = workloads()
        .into_iter()
        .filter(|w| options.wants(w.name))
        .collect();
    check_op_counts(&workloads)?;
    let settings: Vec<Setting> = options.settings.iter().map(|&k| SETTINGS[k]).collect();
    print!("{:<20}", "loop");
    for s in &settings {
        print!(" | {:>22}", s.name);
    }
    println!();
    print!("{:<20}", "");
    for _ in &settings {
        print!(" | {:>11} {:>10}", "µs/op", "allocs/op");
    }
    println!();
    for w in &workloads {
        print!("{:<20}", w.name);
        for &setting in &settings {
            let dev = device(setting)?;
            let mut body = (w.setup)(&dev)?;
            let calls = options.ops.div_ceil(w.ops_per_call);
            time_loop(&dev, &mut body, calls, w.ops_per_call)?;
            let mut best = (f64::INFINITY, f64::INFINITY);
            for _ in 0..options.runs {
                let (us, allocs) = time_loop(&dev, &mut body, calls, w.ops_per_call)?;
                best = (best.0.min(us), best.1.min(allocs));
            }
            print!(" | {:>11.3} {:>10.2}", best.0, best.1);
        }
        println!();
    }
    Ok(())
}
