//! Devices shared by the integration tests. Every op test runs its body on
//! each device returned by [`devices`]; with `WEBTENSOR_REQUIRE_GPU=1` a
//! missing adapter fails the test instead of skipping the GPU.
#![allow(dead_code)]

pub mod lost;

use std::sync::OnceLock;
use webtensor::{Device, GpuOptions, Tensor};

/// True when `WEBTENSOR_LONG_TESTS=1`: the long form of the suite (tensors
/// over the real binding limit, long size sweeps, property tests at full
/// case counts). Plain `cargo test` runs the fast form: every op on every
/// device, at sizes that still cross each kernel's boundaries.
pub fn long_tests() -> bool {
    std::env::var("WEBTENSOR_LONG_TESTS").is_ok_and(|v| v == "1")
}

/// `PROPTEST_CASES` when set, else `long` cases in the long form and
/// `fast` in the fast one.
pub fn cases(fast: u32, long: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if long_tests() { long } else { fast })
}

/// True when `WEBTENSOR_REQUIRE_GPU=1`: a GPU test must not pass without
/// running.
pub fn require_gpu() -> bool {
    std::env::var("WEBTENSOR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

fn open(options: GpuOptions) -> Option<Device> {
    match Device::gpu_with(options) {
        Ok(d) => Some(d),
        Err(e) if require_gpu() => panic!("WEBTENSOR_REQUIRE_GPU=1 but no GPU: {e}"),
        Err(e) => {
            eprintln!("no GPU, testing the CPU only: {e}");
            None
        }
    }
}

/// A GPU device of its own that batches up to 1024 ops and fuses, whatever
/// the environment says (for tests that count submits or rely on fusion).
pub fn own_batching_gpu() -> Option<Device> {
    open(GpuOptions {
        flush_threshold: Some(1024),
        fusion: Some(true),
        ..Default::default()
    })
}

/// A GPU device of its own (for tests that read its stats), or `None`
/// when there is no adapter and `WEBTENSOR_REQUIRE_GPU` is not set.
pub fn own_gpu(options: GpuOptions) -> Option<Device> {
    open(options)
}

/// A GPU device of its own whose f32 products may round to f16
/// (`MatmulPrecision::Fast`), its matmuls on `tile` when given, and
/// whether it has cooperative matrices. `WEBTENSOR_REQUIRE_COOPERATIVE=1`
/// (`scripts/cooperative-tests`) makes a device without them a failure.
pub fn fast_gpu(tile: Option<webtensor::MatmulTile>) -> Option<(Device, bool)> {
    let dev = open(GpuOptions {
        matmul_precision: Some(webtensor::MatmulPrecision::Fast),
        matmul_tile: tile,
        ..Default::default()
    })?;
    let on = cooperative(&dev);
    Some((dev, on))
}

/// Whether `dev` has cooperative matrices; `WEBTENSOR_REQUIRE_COOPERATIVE=1`
/// (`scripts/cooperative-tests`) makes a device without them a failure.
pub fn cooperative(dev: &Device) -> bool {
    let on = dev.info().cooperative_matrix;
    if std::env::var("WEBTENSOR_REQUIRE_COOPERATIVE").is_ok_and(|v| v == "1") {
        assert!(on, "cooperative matrices required: {}", dev.info());
    }
    on
}

/// The shared GPU device (native f16 where the adapter has it).
pub fn gpu() -> Option<Device> {
    static GPU: OnceLock<Option<Device>> = OnceLock::new();
    GPU.get_or_init(|| open(GpuOptions::default())).clone()
}

/// A second GPU device that stores f16 packed in u32 (the path of adapters
/// without SHADER_F16), whose elementwise kernels take the runs of a
/// hardware GPU (4 elements a thread at most) whatever the adapter, and
/// whose subgroup kernels are planned for 4 lanes (run on lavapipe's 8 or
/// a GPU's 32, as on adapters whose subgroups vary in size), so that every
/// suite over [`devices`] runs both kinds on a software adapter.
pub fn gpu_packed_f16() -> Option<Device> {
    static GPU: OnceLock<Option<Device>> = OnceLock::new();
    GPU.get_or_init(|| open(packed_f16())).clone()
}

/// A GPU device of its own whose grids of independent work (reductions'
/// and normalisations' splits, attention's split keys) are sized as for a
/// discrete GPU's 2^18 resident threads: on a software adapter, which
/// keeps a few thousand, the splits a big GPU makes are otherwise never
/// run.
pub fn gpu_big_grids() -> Option<Device> {
    static GPU: OnceLock<Option<Device>> = OnceLock::new();
    GPU.get_or_init(|| {
        open(GpuOptions {
            resident_threads: Some(1 << 18),
            ..Default::default()
        })
    })
    .clone()
}

/// The options of [`gpu_packed_f16`].
fn packed_f16() -> GpuOptions {
    GpuOptions {
        force_packed_f16: true,
        elementwise_run: Some(4),
        planned_lanes: Some(4),
        ..Default::default()
    }
}

/// The CPU, then GPU devices of their own configured as [`gpu`] and
/// [`gpu_packed_f16`] are: for tests that cause index faults, which the
/// next readback of the device reports whichever thread makes it (tests
/// sharing a device would take each other's).
pub fn own_devices() -> Vec<Device> {
    let mut v = vec![Device::cpu()];
    v.extend(open(GpuOptions::default()));
    v.extend(open(packed_f16()));
    v
}

/// The CPU, then every GPU device present.
pub fn devices() -> Vec<Device> {
    let mut v = vec![Device::cpu()];
    v.extend(gpu());
    v.extend(gpu_packed_f16());
    v
}

/// Reads any float tensor back as f32.
pub fn read_f32(t: &Tensor) -> Vec<f32> {
    t.to_dtype(webtensor::DType::F32).unwrap().to_vec().unwrap()
}

/// `x`, or a zero of its sign where it is an f32 subnormal: what a GPU
/// that flushes subnormals, as WGSL allows (NVIDIA's driver does, operands
/// and results), reads or writes for it.
pub fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// True when `got` is `want` bit for bit, NaN for NaN, or, where `flushed`
/// (the same op on operands flushed by [`ftz`]) is given, `ftz` of it.
pub fn same_or_flushed(got: f32, want: f32, flushed: Option<f32>) -> bool {
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    same(got, want) || flushed.is_some_and(|f| same(got, ftz(f)))
}

/// Rounds `x` to the precision of `dtype` (f32, f16 or bf16), as a stored
/// result is.
pub fn round_to(dtype: webtensor::DType, x: f64) -> f32 {
    match dtype {
        webtensor::DType::F16 => half::f16::from_f64(x).to_f32(),
        webtensor::DType::BF16 => half::bf16::from_f64(x).to_f32(),
        _ => x as f32,
    }
}

/// The dtypes a GPU stores each its own way, once each: f32, f16, bf16
/// (packed words), i32, i64 (two words), u8 and bool (packed bytes); u32 is
/// stored as i32 is, c64 as f32 pairs.
pub const STORAGE_DTYPES: [webtensor::DType; 7] = [
    webtensor::DType::F32,
    webtensor::DType::F16,
    webtensor::DType::BF16,
    webtensor::DType::I32,
    webtensor::DType::I64,
    webtensor::DType::U8,
    webtensor::DType::Bool,
];

/// A relative tolerance for results of `dtype`: `f16` for f16, eight times
/// it for bf16 (three fewer significant bits), `other` for the rest.
pub fn half_tol(dtype: webtensor::DType, f16: f32, other: f32) -> f32 {
    match dtype {
        webtensor::DType::F16 => f16,
        webtensor::DType::BF16 => 8.0 * f16,
        _ => other,
    }
}

/// Asserts that two float sequences agree within `rel` of each wanted
/// value's magnitude, or of 1 where that is smaller (so an absolute
/// tolerance below 1: a check of small values needs its own bound); NaN
/// equals NaN, infinities must match.
pub fn assert_close(got: &[f32], want: &[f32], rel: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rel * w.abs().max(1.0);
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Asserts that two float sequences agree within `rel` of each wanted
/// value's magnitude however small (down to 1e-6, where a value is within
/// `rel * 1e-6`): for functions whose small results must keep their
/// digits. NaN equals NaN, infinities must match.
pub fn assert_relative(got: &[f32], want: &[f32], rel: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rel * w.abs().max(1e-6);
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Views of logical shape [4, 6] over differently laid out storage, each
/// holding the f32 values `f(k)` for distinct k, with `f(k) = k * 0.37 - 4`:
/// contiguous, transposed, stepped, negative-step (both axes), offset with a
/// column step, and broadcast (stride 0).
pub fn views(dev: &Device) -> Vec<(&'static str, Tensor)> {
    views_of(dev, webtensor::DType::F32)
}

/// [`views`] with storage of another float dtype (the values are rounded to it).
pub fn views_of(dev: &Device, dtype: webtensor::DType) -> Vec<(&'static str, Tensor)> {
    use webtensor::s;
    let values = |n: usize| -> Tensor {
        let data: Vec<f32> = (0..n).map(|k| k as f32 * 0.37 - 4.0).collect();
        Tensor::from_vec(data, [n], dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    vec![
        ("contiguous", values(24).reshape([4, 6]).unwrap()),
        ("transposed", values(24).reshape([6, 4]).unwrap().t()),
        (
            "stepped rows",
            values(48).reshape([8, 6]).unwrap().slice(s![..;2]).unwrap(),
        ),
        (
            "negative steps",
            values(24)
                .reshape([4, 6])
                .unwrap()
                .slice(s![..;-1, ..;-1])
                .unwrap(),
        ),
        (
            "offset column step",
            values(60)
                .reshape([5, 12])
                .unwrap()
                .slice(s![1.., 1..;2])
                .unwrap(),
        ),
        (
            "broadcast",
            values(6)
                .reshape([1, 6])
                .unwrap()
                .broadcast_to([4, 6])
                .unwrap(),
        ),
    ]
}

/// Deterministic values in [-1, 1).
pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// A small xorshift generator: the fuzz cases are the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `file` with a few bytes changed: flipped, set to 0x00 or 0xff, runs
/// of 0xff, cut short or lengthened.
pub fn mutate(file: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut f = file.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(f.len());
        match rng.below(7) {
            0 => f[at] ^= 1 << rng.below(8),
            1 => f[at] = 0xff,
            2 => f[at] = 0,
            3 => {
                let end = (at + 1 + rng.below(8)).min(f.len());
                f[at..end].fill(0xff);
            }
            4 => f.truncate(at),
            5 => f.insert(at, rng.next() as u8),
            _ => f[at] = rng.next() as u8,
        }
        if f.is_empty() {
            break;
        }
    }
    f
}

/// The values of `t` as a view that walks its first axis backwards: a copy
/// stored reversed, flipped back (a 0-d tensor as it is).
pub fn reversed_view(t: &Tensor) -> Tensor {
    if t.rank() == 0 {
        return t.clone();
    }
    t.flip(&[0])
        .unwrap()
        .contiguous()
        .unwrap()
        .flip(&[0])
        .unwrap()
}

/// Set, to the test's name, in a child process [`run_child`] runs.
const CHILD: &str = "WEBTENSOR_TEST_CHILD";

/// Runs the test `name` of this test binary (ignored, so that only this
/// runs it) in a child process with `env` set besides, for a test of the
/// environment, which is the process's; checks that it ran and passed.
pub fn run_child(name: &str, env: &[(&str, &str)]) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", name, "--include-ignored", "--nocapture"])
        .arg("--test-threads=1")
        .env(CHILD, name);
    for (key, value) in env {
        child.env(key, value);
    }
    let out = child.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
}

/// True in the child process [`run_child`] runs for the test `name`.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == name)
}

/// `r` is an error the op `op` gives for its arguments: its message names
/// the op, and it is not a device, memory or internal failure (which any
/// op's wrong path could also give).
pub fn assert_op_err<T>(r: webtensor::Result<T>, op: &str) {
    use webtensor::Error;
    match r {
        Ok(_) => panic!("{op}: accepted"),
        Err(
            e @ (Error::Gpu { .. }
            | Error::Internal { .. }
            | Error::DeviceLost { .. }
            | Error::OutOfMemory { .. }),
        ) => panic!("{op}: not an argument's error: {e}"),
        Err(e) => assert!(e.to_string().contains(op), "{op}: {e}"),
    }
}
