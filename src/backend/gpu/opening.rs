//! How a GPU device is opened: the options, the one wgpu instance, the
//! adapter's choice, and the settings that depend on the kind of adapter.

use super::matmul::CoopTiling;
use super::matmul::tiling::Loads;
use super::matmul_tile_choice::{MatmulPrecision, MatmulTile};
use crate::error::{Error, Result};

/// Options for opening a GPU device. Each `None` falls back to an
/// environment variable, then to the default; a `WEBTENSOR_*` variable set
/// to a value it does not take is an error of `Device::gpu` (not silently
/// the default).
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Store f16 packed two to a `u32` even when the adapter has SHADER_F16
    /// (the path every adapter without it takes). Also set by the environment
    /// variable `WEBTENSOR_F16=packed`.
    pub force_packed_f16: bool,
    /// Prefer a low-power adapter over a high-performance one.
    pub low_power: bool,
    /// Recorded ops per submit (1 submits every op on its own).
    /// Environment: `WEBTENSOR_FLUSH_THRESHOLD`; default 1024.
    pub flush_threshold: Option<usize>,
    /// Most compiled pipelines the device keeps: past it the least
    /// recently used is dropped and compiled again when next needed (see
    /// `DeviceStats::pipelines_evicted`). Every fused chain of elementwise
    /// ops is a pipeline of its own, so a program that keeps making new
    /// chains would otherwise hold them all (megabytes each on some
    /// drivers). At least 1. Environment: `WEBTENSOR_PIPELINE_CACHE`;
    /// default 1024.
    pub pipeline_cache: Option<usize>,
    /// Fuse chains of elementwise ops whose intermediates are dropped.
    /// Environment: `WEBTENSOR_FUSION=0|1`; default on.
    pub fusion: Option<bool>,
    /// Most bytes of device memory tensors and readbacks may hold (live and
    /// pooled); an allocation past it is `Error::OutOfMemory`.
    /// Environment: `WEBTENSOR_MEMORY_CAP` (bytes); default none.
    pub memory_cap: Option<u64>,
    /// Most bytes of a buffer bound to one kernel at once, below the
    /// device's own limit (at least twice the device's storage offset
    /// alignment, 256 bytes in WebGPU): elementwise ops over larger
    /// tensors run in windows, other op families cut them into parts,
    /// custom kernels refuse them. For testing those paths with small
    /// tensors.
    /// Environment: `WEBTENSOR_MAX_BINDING` (bytes); default the device's.
    pub max_binding_bytes: Option<u64>,
    /// Which tile the matmul kernels use.
    /// Environment: `WEBTENSOR_MATMUL_TILE=auto|large|medium|small|`
    /// `few-rows|few-columns|tall|wide|per-output|subgroup|cooperative`;
    /// default auto.
    pub matmul_tile: Option<MatmulTile>,
    /// Use subgroup operations (reductions combine across a subgroup's
    /// lanes; `MatmulTile::Subgroup` shuffles where subgroups have eight
    /// lanes or more) where the adapter has `SUBGROUP`; native only (a browser's
    /// WGSL needs a directive naga does not take). Off runs the plain
    /// kernels every adapter runs.
    /// Environment: `WEBTENSOR_SUBGROUPS=0|1`; default on.
    pub subgroups: Option<bool>,
    /// Time the matmul tiles that fit on the first product of each class
    /// (dtype, sizes by powers of two, operand layouts) and keep the
    /// fastest, when the tile setting is auto. Native only (a browser's
    /// clock is coarse and its queue cannot be waited on).
    /// Environment: `WEBTENSOR_AUTOTUNE=0|1`; default on for hardware
    /// adapters, off for software ones (whose timings are the CPU's).
    pub autotune: Option<bool>,
    /// Build webtensor's own kernels with wgpu's runtime checks: clamped
    /// indices into buffers and workgroup and private arrays, bounded
    /// loops, workgroup memory zeroed at the start of each dispatch. Off,
    /// they run without (every index they take is in range by
    /// construction, every loop bounded by its parameters, and every
    /// workgroup array written before it is read; see the GPU backend's
    /// module doc); integer division keeps its guard either way, and
    /// custom kernels (`CustomKernel`) always keep every check. For
    /// debugging a kernel. Environment: `WEBTENSOR_RUNTIME_CHECKS=0|1`;
    /// default off.
    pub runtime_checks: Option<bool>,
    /// How long a wait for the GPU (`Device::sync`, a readback) polls the
    /// device before it blocks: a short op's result comes back without
    /// the operating system's wake-up latency (tens of microseconds on
    /// Linux; CUDA's synchronisation spins alike), at the cost of a core
    /// busy for at most this long per wait. Environment:
    /// `WEBTENSOR_SPIN_WAIT_US`; default 200 µs on hardware adapters, none
    /// on software ones (whose work runs on the cores a spin would take).
    pub spin_wait: Option<std::time::Duration>,
    /// Run f16 products (and f32 ones under `matmul_precision: Fast`) on
    /// cooperative matrices where the adapter has them (wgpu's
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`, a listed 16 x 16 x 16 or 8 x 8 x
    /// 8 f16 shape with f32 accumulation, subgroups on and of one size from
    /// 8 to 64 lanes, native f16);
    /// native only. Environment: `WEBTENSOR_COOPERATIVE_MATRIX=0|1`;
    /// default on.
    pub cooperative_matrix: Option<bool>,
    /// How f32 products may compute: [`MatmulPrecision::Exact`] by
    /// default, `Fast` to let them round their operands to f16 on
    /// cooperative matrices. Environment:
    /// `WEBTENSOR_MATMUL_PRECISION=exact|fast`.
    pub matmul_precision: Option<MatmulPrecision>,
    /// Testing only: the kernel of this matmul tile computes a wrong
    /// product (each output off by one), and so do the convolutions'
    /// kernels on it (and, for the cooperative tile, the cooperative
    /// attention kernel), so that a test can show the self-check dropping
    /// them. Never set it otherwise.
    #[doc(hidden)]
    pub sabotage_matmul: Option<MatmulTile>,
    /// Testing only: makes the quantized product and dequantization
    /// kernels of one block type wrong (each value off by one), so that a
    /// test can show the self-check dropping them. Never set it otherwise.
    #[doc(hidden)]
    pub sabotage_quant: Option<crate::quant::GgmlType>,
    /// Testing only: the longest line one FFT kernel transforms (at least
    /// 16), below what the device's workgroup memory holds, so that tests
    /// reach the four-step algorithm's recursion with short lines.
    #[doc(hidden)]
    pub max_fft_line: Option<usize>,
    /// Testing only: elements a thread of the strided, row and contiguous
    /// elementwise kernels takes at most (clamped to 1 to 64), in place of
    /// the adapter's (see `AdapterFacts::elementwise_run`), so that tests on
    /// a software adapter also run the kernels a GPU runs.
    #[doc(hidden)]
    pub elementwise_run: Option<u8>,
    /// Testing only: plan the subgroup kernels for subgroups of at least
    /// this many lanes (a power of two from 4 to the adapter's fewest), as
    /// an adapter whose subgroups vary in size (Intel's 8 to 32 lanes,
    /// AMD's 32 or 64) has them planned, so that tests on an adapter of
    /// one size also run them on subgroups wider than planned. Turns
    /// cooperative matrices off (their kernels take the adapter's one
    /// size).
    #[doc(hidden)]
    pub planned_lanes: Option<u32>,
    /// Testing only: size grids of independent work (a reduction's or a
    /// normalisation's split, attention's split keys) for this many
    /// resident threads (at least 256) in place of the adapter kind's
    /// guess, so that tests on a software adapter also split work as a
    /// big GPU does (2^18 threads on a discrete one).
    #[doc(hidden)]
    pub resident_threads: Option<usize>,
    /// Recover from a lost device by itself: once the device is lost, a
    /// recovery (`Device::recover`) opens another soon after the listeners
    /// of `Device::on_lost` hear of the loss (natively on a thread of its
    /// own, in a browser from the page's event loop); calls meanwhile fail
    /// with `Error::DeviceLost`. Environment: `WEBTENSOR_AUTO_RECOVER=0|1`;
    /// default off. Not for a device the application opened.
    pub auto_recover: Option<bool>,
    /// Testing only: a recovery (`Device::recover`) finds no adapter to
    /// open, so that a test can show a handle going on on the CPU.
    #[doc(hidden)]
    pub sabotage_recovery: bool,
}

/// The one wgpu instance every device webtensor opens comes from, so that
/// wgpu tells their resources apart: a buffer of one device bound on
/// another is a validation error (with separate instances wgpu cannot even
/// see that the buffer is foreign).
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn instance() -> wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE
        .get_or_init(|| wgpu::Instance::new(instance_descriptor()))
        .clone()
}

/// The instance's settings: `WGPU_BACKEND` and wgpu's other variables, and
/// without `WGPU_BACKEND` the primary backends (Vulkan, Metal, DX12,
/// WebGPU). OpenGL has no compute shaders before GLES 3.1, and its EGL
/// context, shared by the instance, refuses to be made current from
/// several threads at once (devices opened in parallel panicked in wgpu).
fn instance_descriptor() -> wgpu::InstanceDescriptor {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if std::env::var_os("WGPU_BACKEND").is_none() {
        desc.backends = wgpu::Backends::PRIMARY;
    }
    desc
}

/// The page's one wgpu instance (see the native form).
#[cfg(target_arch = "wasm32")]
pub(super) fn instance() -> wgpu::Instance {
    thread_local! {
        static INSTANCE: wgpu::Instance = wgpu::Instance::new(instance_descriptor());
    }
    INSTANCE.with(wgpu::Instance::clone)
}

/// True when kernels may use subgroup operations on a device with
/// `features`.
pub(super) fn use_subgroups(options: &GpuOptions, features: wgpu::Features) -> bool {
    !cfg!(target_arch = "wasm32")
        && features.contains(wgpu::Features::SUBGROUP)
        && options
            .subgroups
            .or_else(|| env_flag("WEBTENSOR_SUBGROUPS"))
            .unwrap_or(true)
}

/// The fragment side the cooperative matmul runs with on `adapter`, where
/// it may run there (see `GpuOptions::cooperative_matrix`; native f16 is
/// checked by the caller): 16 where the adapter lists 16 x 16 x 16
/// products of f16 into f32, else 8 where it lists 8 x 8 x 8 ones, with
/// subgroups on and of one size the kernel takes, and room for the
/// kernel's workgroup memory. The kernel also takes its `4 S` threads to
/// fill four subgroups, which Vulkan promises only when a pipeline asks
/// for full subgroups (wgpu does not ask): the drivers that list these
/// shapes fill them, and the self-check's probe would drop a kernel run
/// on partial ones.
pub(super) fn offers_cooperative(adapter: &wgpu::Adapter, options: &GpuOptions) -> Option<u32> {
    let wanted = options
        .cooperative_matrix
        .or_else(|| env_flag("WEBTENSOR_COOPERATIVE_MATRIX"))
        .unwrap_or(true);
    let info = adapter.get_info();
    let features = adapter.features();
    let lanes = info.subgroup_min_size;
    let usable = !cfg!(target_arch = "wasm32")
        && wanted
        && features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        && use_subgroups(options, features)
        && info.subgroup_max_size == lanes;
    let listed = |f: u32| {
        adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (f, f, f)
                && p.ab_type == wgpu::CooperativeScalarType::F16
                && p.cr_type == wgpu::CooperativeScalarType::F32
        })
    };
    let room = adapter.limits().max_compute_workgroup_storage_size;
    [16, 8].into_iter().filter(|_| usable).find(|&f| {
        listed(f)
            && CoopTiling::new(f, lanes, [Loads::Scalar; 2], [false; 2])
                .is_some_and(|tiling| tiling.workgroup_bytes() <= room)
    })
}

/// True when f16 is to be stored packed whatever the adapter has.
pub(super) fn force_packed(options: &GpuOptions) -> bool {
    options.force_packed_f16
        || std::env::var("WEBTENSOR_F16").is_ok_and(|v| v.trim().eq_ignore_ascii_case("packed"))
}

/// Refuses limits that run no compute kernel (an application's device
/// opened with WebGL2's downlevel limits): every op would fail on its own.
///
/// # Errors
/// `Error::Argument` naming `op` and the first limit of 0.
pub(super) fn check_compute(op: &'static str, l: &wgpu::Limits) -> Result<()> {
    let none = [
        (
            "max_compute_workgroups_per_dimension",
            l.max_compute_workgroups_per_dimension,
        ),
        (
            "max_compute_invocations_per_workgroup",
            l.max_compute_invocations_per_workgroup,
        ),
        (
            "max_storage_buffers_per_shader_stage",
            l.max_storage_buffers_per_shader_stage,
        ),
        (
            "max_storage_buffer_binding_size",
            u32::from(l.max_storage_buffer_binding_size > 0),
        ),
    ]
    .into_iter()
    .find(|&(_, v)| v == 0);
    match none {
        Some((limit, _)) => Err(Error::argument(
            op,
            format!(
                "the device was opened with {limit} = 0: it runs no compute kernels (open it \
                 with the adapter's limits, or `wgpu::Limits::downlevel_defaults()`)"
            ),
        )),
        None => Ok(()),
    }
}

/// `Error::Argument` naming `op` for a `WEBTENSOR_*` setting that `lookup`
/// (the environment) holds but no reader understands: unread, it would
/// silently be the default (`WEBTENSOR_MEMORY_CAP=1GiB` no cap at all).
///
/// # Errors
/// As above, naming the variable, its value and what it takes.
pub(super) fn check_settings(
    op: &'static str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<()> {
    fn count(v: &str) -> bool {
        v.trim().parse::<u64>().is_ok()
    }
    fn flag(v: &str) -> bool {
        let v = v.trim().to_ascii_lowercase();
        ["1", "on", "true", "yes", "0", "off", "false", "no"].contains(&v.as_str())
    }
    const FLAG: &str = "0 or 1 (off/on, false/true, no/yes)";
    // (name, whether a value is understood, what it takes)
    type Setting = (&'static str, fn(&str) -> bool, &'static str);
    let settings: [Setting; 14] = [
        ("WEBTENSOR_MAX_BINDING", count, "a whole number of bytes"),
        ("WEBTENSOR_MEMORY_CAP", count, "a whole number of bytes"),
        ("WEBTENSOR_SPIN_WAIT_US", count, "whole microseconds"),
        ("WEBTENSOR_FLUSH_THRESHOLD", count, "a whole number of ops"),
        (
            "WEBTENSOR_PIPELINE_CACHE",
            count,
            "a whole number of pipelines",
        ),
        ("WEBTENSOR_SUBGROUPS", flag, FLAG),
        ("WEBTENSOR_COOPERATIVE_MATRIX", flag, FLAG),
        ("WEBTENSOR_RUNTIME_CHECKS", flag, FLAG),
        ("WEBTENSOR_FUSION", flag, FLAG),
        ("WEBTENSOR_AUTOTUNE", flag, FLAG),
        ("WEBTENSOR_AUTO_RECOVER", flag, FLAG),
        (
            "WEBTENSOR_MATMUL_PRECISION",
            |v| MatmulPrecision::parse(v).is_some(),
            "exact or fast",
        ),
        (
            "WEBTENSOR_MATMUL_TILE",
            |v| MatmulTile::parse(v).is_some(),
            "a tile (auto, large, medium, small, few-rows, few-columns, tall, wide, per-output, subgroup, cooperative)",
        ),
        (
            "WEBTENSOR_F16",
            |v| ["packed", "native"].contains(&v.trim().to_ascii_lowercase().as_str()),
            "packed or native",
        ),
    ];
    for (name, understood, takes) in settings {
        if let Some(value) = lookup(name).filter(|v| !understood(v)) {
            return Err(Error::argument(
                op,
                format!("{name}={value:?} is not understood: it takes {takes}"),
            ));
        }
    }
    Ok(())
}

/// Elements a thread of the strided, row and contiguous elementwise
/// kernels takes at most on an adapter of `device_type`. A software adapter
/// (lavapipe, SwiftShader, WARP) pays a high fixed cost per invocation on
/// the CPU, so fewer, longer threads win there (BENCHMARKS.md, "Elementwise
/// kernels on software adapters": runs of 32 take the web page's Gray-Scott
/// step on Chromium's SwiftShader from 19 to 7 ms). A GPU wants many
/// threads in flight: 4, as PyTorch's elementwise kernels take.
pub(super) fn elementwise_run_for(device_type: wgpu::DeviceType) -> u8 {
    if device_type == wgpu::DeviceType::Cpu {
        32
    } else {
        4
    }
}

/// How long a wait polls an adapter of `device_type` before it blocks (see
/// `GpuOptions::spin_wait`): 200 µs on a GPU, long enough for a small op's
/// kernel and its submission; none on a software adapter, whose threads
/// run the work on the cores a spinning thread would hold.
pub(super) fn spin_wait_for(device_type: wgpu::DeviceType) -> std::time::Duration {
    match device_type {
        wgpu::DeviceType::Cpu | wgpu::DeviceType::Other => std::time::Duration::ZERO,
        _ => std::time::Duration::from_micros(200),
    }
}

/// Threads an adapter of `device_type` keeps resident at once, about.
/// WebGPU tells no count of cores or their occupancy, so this goes by the
/// kind of adapter: a discrete GPU of today holds 2^17 to 2^18 threads
/// (an H100: 132 SMs of 2,048), an integrated one about 2^15; a software
/// adapter runs a workgroup per CPU thread at a time, so a few workgroups
/// per core fill it; an adapter of unknown kind (a browser's) is taken as
/// a mid-size GPU. Sized above the truth rather than below: an
/// over-subscribed grid costs a larger second stage, an under-subscribed
/// one idles cores.
pub(super) fn resident_threads_for(device_type: wgpu::DeviceType) -> usize {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 1 << 18,
        wgpu::DeviceType::IntegratedGpu => 1 << 15,
        wgpu::DeviceType::Cpu => {
            #[cfg(not(target_arch = "wasm32"))]
            let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
            #[cfg(target_arch = "wasm32")]
            let cores = 4;
            cores * 4 * 256
        }
        _ => 1 << 16,
    }
}

/// A variable of the environment for [`check_settings`]: a value that is
/// not Unicode as its lossy text, which no setting takes (read as unset,
/// it was silently the default).
pub(super) fn environment(
    value: std::result::Result<String, std::env::VarError>,
) -> Option<String> {
    match value {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(raw)) => Some(raw.to_string_lossy().into_owned()),
    }
}

/// Reads a setting from the environment; unset or unparsable gives `None`.
pub(super) fn env_setting<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

pub(crate) fn env_flag(name: &str) -> Option<bool> {
    let v = std::env::var(name).ok()?;
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Some(true),
        "0" | "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

pub(super) async fn pick_adapter(
    instance: &wgpu::Instance,
    options: &GpuOptions,
) -> Result<wgpu::Adapter> {
    const OP: &str = "Device::gpu";
    // An empty name would match every adapter: it is no choice.
    if let Some(wanted) = std::env::var("WGPU_ADAPTER_NAME")
        .ok()
        .filter(|w| !w.trim().is_empty())
    {
        let wanted = wanted.to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
            .ok_or_else(|| Error::NoAdapter {
                op: OP,
                reason: format!("WGPU_ADAPTER_NAME={wanted:?} matches none of {names:?}"),
            });
    }
    let power_preference = if options.low_power {
        wgpu::PowerPreference::LowPower
    } else {
        wgpu::PowerPreference::HighPerformance
    };
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| Error::NoAdapter {
            op: OP,
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A setting a reader would not understand is an error naming it;
    /// unset ones and every form the readers take pass.
    #[test]
    fn settings_nobody_understands_are_errors() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                (pairs.iter())
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let fine: &[(&str, &str)] = &[
            ("WEBTENSOR_MEMORY_CAP", " 1000000 "),
            ("WEBTENSOR_FUSION", "Off"),
            ("WEBTENSOR_MATMUL_TILE", "few-rows"),
            ("WEBTENSOR_MATMUL_PRECISION", "fast"),
            ("WEBTENSOR_F16", "packed "),
        ];
        check_settings("Device::gpu", with(fine)).unwrap();
        check_settings("Device::gpu", |_| None).unwrap();
        for bad in [
            &[("WEBTENSOR_MEMORY_CAP", "1GiB")][..],
            &[("WEBTENSOR_FLUSH_THRESHOLD", "-1")],
            &[("WEBTENSOR_FUSION", "2")],
            &[("WEBTENSOR_MATMUL_TILE", "lage")],
            &[("WEBTENSOR_MATMUL_PRECISION", "tf32")],
            &[("WEBTENSOR_F16", "half")],
            &[("WEBTENSOR_SPIN_WAIT_US", "0.5")],
        ] {
            let e = check_settings("Device::gpu", with(bad)).unwrap_err();
            assert!(e.to_string().contains(bad[0].0), "{e}");
        }
    }

    /// A value that is not Unicode is a value no setting takes (it read as
    /// unset: no cap at all for `WEBTENSOR_MEMORY_CAP=$'\xff'`).
    #[cfg(unix)]
    #[test]
    fn settings_that_are_not_unicode_are_errors() {
        use std::env::VarError;
        use std::os::unix::ffi::OsStringExt;
        let raw = || VarError::NotUnicode(std::ffi::OsString::from_vec(vec![b'1', 0xff]));
        let lookup = |name: &str| match name {
            "WEBTENSOR_MEMORY_CAP" => environment(Err(raw())),
            _ => environment(Err(VarError::NotPresent)),
        };
        let e = check_settings("Device::gpu", lookup).unwrap_err();
        assert!(e.to_string().contains("WEBTENSOR_MEMORY_CAP"), "{e}");
        assert_eq!(environment(Ok("1".into())).as_deref(), Some("1"));
    }
}
