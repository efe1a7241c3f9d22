//! One opened GPU: wgpu device and queue, the adapter's facts, the pipeline
//! cache and the scheduler of pending work.

use super::adapter_facts::AdapterFacts;
use super::bind_groups::GroupCounters;
use super::faults::Faults;
use super::kernel::pipeline::{PipelineCache, submit_scoped};
use super::lost::{Listener, Lost};
use super::matmul_tile_choice::{MatmulPrecision, MatmulTile, MatmulTuner};
use super::pool::{BufferPool, PoolCounters};
use super::scheduler::{DEFAULT_FLUSH_THRESHOLD, Scheduler, SchedulerCounters};
use super::target::Target;
use crate::backend::Storage;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Options for opening a GPU device. Each `None` falls back to an
/// environment variable, then to the default.
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
    /// `few-rows|few-columns|per-output|subgroup|cooperative`; default auto.
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
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`, a listed 16 x 16 x 16 f16 shape
    /// with f32 accumulation, subgroups of at most 32 lanes, native f16);
    /// native only. Environment: `WEBTENSOR_COOPERATIVE_MATRIX=0|1`;
    /// default on.
    pub cooperative_matrix: Option<bool>,
    /// How f32 products may compute: [`MatmulPrecision::Exact`] by
    /// default, `Fast` to let them round their operands to f16 on
    /// cooperative matrices. Environment:
    /// `WEBTENSOR_MATMUL_PRECISION=exact|fast`.
    pub matmul_precision: Option<MatmulPrecision>,
    /// Testing only: the kernel of this matmul tile computes a wrong
    /// product (each output negated), so that a test can show the
    /// self-check dropping it. Never set it otherwise.
    #[doc(hidden)]
    pub sabotage_matmul: Option<MatmulTile>,
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
}

/// The one wgpu instance every device webtensor opens comes from, so that
/// wgpu tells their resources apart: a buffer of one device bound on
/// another is a validation error (with separate instances wgpu cannot even
/// see that the buffer is foreign).
#[cfg(not(target_arch = "wasm32"))]
fn instance() -> wgpu::Instance {
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
fn instance() -> wgpu::Instance {
    thread_local! {
        static INSTANCE: wgpu::Instance = wgpu::Instance::new(instance_descriptor());
    }
    INSTANCE.with(wgpu::Instance::clone)
}

/// True when f16 is to be stored packed whatever the adapter has.
/// True when kernels may use subgroup operations on a device with
/// `features`.
fn use_subgroups(options: &GpuOptions, features: wgpu::Features) -> bool {
    !cfg!(target_arch = "wasm32")
        && features.contains(wgpu::Features::SUBGROUP)
        && options
            .subgroups
            .or_else(|| env_flag("WEBTENSOR_SUBGROUPS"))
            .unwrap_or(true)
}

/// True when the cooperative matmul may run on `adapter` (see
/// `GpuOptions::cooperative_matrix`; native f16 is checked by the caller).
fn offers_cooperative(adapter: &wgpu::Adapter, options: &GpuOptions) -> bool {
    let wanted = options
        .cooperative_matrix
        .or_else(|| env_flag("WEBTENSOR_COOPERATIVE_MATRIX"))
        .unwrap_or(true);
    let info = adapter.get_info();
    let listed = || {
        adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                && p.ab_type == wgpu::CooperativeScalarType::F16
                && p.cr_type == wgpu::CooperativeScalarType::F32
        })
    };
    !cfg!(target_arch = "wasm32")
        && wanted
        && adapter
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        && (1..=32).contains(&info.subgroup_max_size)
        && listed()
}

fn force_packed(options: &GpuOptions) -> bool {
    options.force_packed_f16
        || std::env::var("WEBTENSOR_F16").is_ok_and(|v| v.eq_ignore_ascii_case("packed"))
}

/// Elements a thread of the strided, row and contiguous elementwise
/// kernels takes at most on an adapter of `device_type`. A software adapter
/// (lavapipe, SwiftShader, WARP) pays a high fixed cost per invocation on
/// the CPU, so fewer, longer threads win there (BENCHMARKS.md, "Elementwise
/// kernels on software adapters": runs of 32 take the web page's Gray-Scott
/// step on Chromium's SwiftShader from 19 to 7 ms). A GPU wants many
/// threads in flight: 4, as PyTorch's elementwise kernels take.
fn elementwise_run_for(device_type: wgpu::DeviceType) -> u8 {
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
fn spin_wait_for(device_type: wgpu::DeviceType) -> std::time::Duration {
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
fn resident_threads_for(device_type: wgpu::DeviceType) -> usize {
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

/// Reads a setting from the environment; unset or unparsable gives `None`.
fn env_setting<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn env_flag(name: &str) -> Option<bool> {
    let v = std::env::var(name).ok()?;
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Some(true),
        "0" | "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// What a GPU device has done so far, for `Device::stats`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuCounters {
    pub scheduler: SchedulerCounters,
    pub groups: GroupCounters,
    pub pool: PoolCounters,
    /// Pipelines compiled.
    pub pipelines: u64,
    /// Timed runs of matmul autotuning.
    pub tuning_runs: u64,
    pub tuning_ns: u64,
    /// Matmul kernels the self-check probed, and those it dropped.
    pub kernels_checked: u64,
    pub kernels_dropped: u64,
    /// Bytes written from the host into tensor storage.
    pub bytes_uploaded: u64,
    /// Staging buffers mapped for the host to read (each one wait).
    pub readbacks: u64,
}

/// An opened GPU device. Its parts are the backend's own; the rest of the
/// crate goes through the methods below.
pub(crate) struct GpuContext {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) facts: AdapterFacts,
    pub(super) pipelines: PipelineCache,
    pub(super) pool: BufferPool,
    /// Out-of-range index reports of indexing kernels.
    pub(super) faults: Faults,
    /// The first validation or out-of-memory error the device raised outside
    /// any error scope, waiting to be reported by the next readback or sync.
    device_error: Arc<Mutex<Option<String>>>,
    /// Whether the device is lost (see `lost.rs`).
    lost: Arc<Lost>,
    scheduler: Mutex<Scheduler>,
    /// Id of the batch being recorded; bumped by every flush.
    open_batch: AtomicU64,
    matmul_tile: Mutex<MatmulTile>,
    /// Matmul autotuning: on or off, and its winners.
    pub tuner: MatmulTuner,
    /// Tells this device apart from others opened in the process (1, 2 ...).
    id: u64,
    /// Bytes written from the host into tensor storage, for `Device::stats`.
    pub(super) bytes_uploaded: AtomicU64,
    /// Staging buffers mapped for the host to read, for `Device::stats`.
    pub(super) readbacks: AtomicU64,
    /// A thread is polling this device in `wait_idle` (at most one does:
    /// others block at once, so that threads sharing a device never crowd
    /// its locks and the cores with polls).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    spinning: std::sync::atomic::AtomicBool,
    /// How many custom kernel specs had been dropped when this device last
    /// dropped the pipelines of those no kernel holds.
    pub(super) custom_sweep: AtomicU64,
    /// Buffers handed to the application or wrapped from it, with the
    /// storage each is: a buffer wrapped again is that storage again.
    shared: Mutex<Vec<(wgpu::Buffer, Weak<Storage>)>>,
}

/// The id of the next GPU device opened.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl GpuContext {
    /// Opens the adapter chosen by `WGPU_ADAPTER_NAME` (a case-insensitive
    /// substring of the adapter name) or else the best one wgpu offers for
    /// the backends in `WGPU_BACKEND`, with the adapter's own limits.
    ///
    /// # Errors
    /// `Error::NoAdapter` when no adapter matches or the device cannot be opened.
    pub async fn open(options: &GpuOptions) -> Result<GpuContext> {
        const OP: &str = "Device::gpu";
        // Creating an instance where the page has no WebGPU would panic in
        // wgpu; ask first.
        #[cfg(target_arch = "wasm32")]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(Error::NoAdapter {
                op: OP,
                reason: "WebGPU is not available here (no navigator.gpu, or it offers no adapter)"
                    .into(),
            });
        }
        let adapter = pick_adapter(&instance(), options).await?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let native_f16 =
            adapter.features().contains(wgpu::Features::SHADER_F16) && !force_packed(options);
        let subgroups = use_subgroups(options, adapter.features());
        let cooperative = native_f16 && offers_cooperative(&adapter, options);
        let mut required_features = wgpu::Features::empty();
        required_features.set(wgpu::Features::SHADER_F16, native_f16);
        required_features.set(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX, cooperative);
        required_features.set(wgpu::Features::SUBGROUP, subgroups);
        // For autotuning's clock (native only, as autotuning is).
        required_features.set(
            wgpu::Features::TIMESTAMP_QUERY,
            cfg!(not(target_arch = "wasm32"))
                && adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY),
        );
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webtensor"),
                required_features,
                required_limits: limits.clone(),
                experimental_features: if cooperative {
                    // SAFETY: the one experimental API used is cooperative
                    // matrices, by the cooperative matmul kernel alone,
                    // only on a device that lists its shape, and probed by
                    // the matmul self-check before its first product.
                    unsafe { wgpu::ExperimentalFeatures::enabled() }
                } else {
                    wgpu::ExperimentalFeatures::disabled()
                },
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::NoAdapter {
                op: OP,
                reason: format!("adapter {:?} refused a device: {e}", info.name),
            })?;
        Ok(Self::assemble(&info, device, queue, options, true))
    }

    /// A context on a device and queue the application opened (see
    /// `Device::from_wgpu`): limits and features are the device's own, f16
    /// is native when it was opened with SHADER_F16. The application keeps
    /// its handler of uncaptured errors.
    pub fn from_wgpu(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: &GpuOptions,
    ) -> GpuContext {
        Self::assemble(info, device, queue, options, false)
    }

    /// The context of an opened device. `own_device`: webtensor opened it,
    /// so it takes the device's uncaptured errors (to report them from the
    /// next readback or sync).
    fn assemble(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: &GpuOptions,
        own_device: bool,
    ) -> GpuContext {
        let limits = device.limits();
        // What the device was opened with, by webtensor or the application.
        let features = device.features();
        let native_f16 = features.contains(wgpu::Features::SHADER_F16) && !force_packed(options);
        let subgroups = use_subgroups(options, features);
        let facts = AdapterFacts {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
            native_f16,
            subgroups,
            subgroup_min_size: info.subgroup_min_size,
            // Read by blocking on the queue: native only.
            timestamps: cfg!(not(target_arch = "wasm32"))
                && features.contains(wgpu::Features::TIMESTAMP_QUERY),
            max_storage_binding: options
                .max_binding_bytes
                .or_else(|| env_setting("WEBTENSOR_MAX_BINDING"))
                .map_or(limits.max_storage_buffer_binding_size, |cap: u64| {
                    // A window holds any one element after an aligned start.
                    let least = 2 * u64::from(limits.min_storage_buffer_offset_alignment);
                    cap.max(least).min(limits.max_storage_buffer_binding_size)
                }),
            max_buffer_size: limits.max_buffer_size,
            max_workgroups_per_dim: limits.max_compute_workgroups_per_dimension,
            max_storage_buffers: limits.max_storage_buffers_per_shader_stage,
            max_fft_line: {
                let fits = super::fft::plan::max_line(limits.max_compute_workgroup_storage_size);
                options.max_fft_line.map_or(fits, |m| m.clamp(16, fits))
            },
            max_uniform_binding: limits.max_uniform_buffer_binding_size,
            elementwise_run: options.elementwise_run.map_or_else(
                || elementwise_run_for(info.device_type),
                |run| run.clamp(1, 64),
            ),
            resident_threads: resident_threads_for(info.device_type),
            spin_wait: options
                .spin_wait
                .or_else(|| {
                    env_setting("WEBTENSOR_SPIN_WAIT_US").map(std::time::Duration::from_micros)
                })
                .unwrap_or_else(|| spin_wait_for(info.device_type)),
            uniform_align: limits.min_uniform_buffer_offset_alignment,
            storage_align: limits.min_storage_buffer_offset_alignment,
            runtime_checks: options
                .runtime_checks
                .or_else(|| env_flag("WEBTENSOR_RUNTIME_CHECKS"))
                .unwrap_or(false),
            // Requested only where the adapter lists the kernel's shape.
            cooperative: own_device
                && native_f16
                && features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
            matmul_precision: options
                .matmul_precision
                .or_else(|| {
                    MatmulPrecision::parse(&std::env::var("WEBTENSOR_MATMUL_PRECISION").ok()?)
                })
                .unwrap_or_default(),
        };
        let runtime_checks = facts.runtime_checks;
        let pool = BufferPool::default();
        pool.set_cap(
            options
                .memory_cap
                .or_else(|| env_setting("WEBTENSOR_MEMORY_CAP")),
        );
        let threshold = options
            .flush_threshold
            .or_else(|| env_setting("WEBTENSOR_FLUSH_THRESHOLD"))
            .unwrap_or(DEFAULT_FLUSH_THRESHOLD);
        let fusion = options
            .fusion
            .or_else(|| env_flag("WEBTENSOR_FUSION"))
            .unwrap_or(true);
        let matmul_tile = options
            .matmul_tile
            .or_else(|| MatmulTile::parse(&std::env::var("WEBTENSOR_MATMUL_TILE").ok()?))
            .unwrap_or_default();
        let autotune = !cfg!(target_arch = "wasm32")
            && options
                .autotune
                .or_else(|| env_flag("WEBTENSOR_AUTOTUNE"))
                .unwrap_or(facts.device_type != "Cpu");
        let faults = Faults::new(&device);
        pool.note_made(&faults.bound().buffer);
        // Errors a browser would only log (and native wgpu would panic on)
        // become an `Err` from the next readback or sync.
        let device_error: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = device_error.clone();
        let handler = move |e: wgpu::Error| {
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            match &mut *slot {
                Some(s) => {
                    s.push_str("\n---\n");
                    s.push_str(&e.to_string());
                }
                None => *slot = Some(e.to_string()),
            }
        };
        if own_device {
            device.on_uncaptured_error(Arc::new(handler));
        }
        // wgpu keeps one lost callback per device: webtensor's, on an
        // application's device too (see `Device::from_wgpu`).
        let lost = Arc::new(Lost::default());
        let marks = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            marks.mark_from_wgpu(reason, &message);
        });
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        GpuContext {
            faults,
            device_error,
            lost,
            device,
            queue,
            facts,
            pipelines: PipelineCache::new(runtime_checks),
            pool,
            scheduler: Mutex::new(Scheduler::new(id, threshold, fusion)),
            matmul_tile: Mutex::new(matmul_tile),
            tuner: MatmulTuner::new(autotune, options.sabotage_matmul),
            open_batch: AtomicU64::new(0),
            id,
            custom_sweep: AtomicU64::new(0),
            shared: Mutex::default(),
            bytes_uploaded: AtomicU64::new(0),
            readbacks: AtomicU64::new(0),
            spinning: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `Ok` while the device is not lost.
    ///
    /// # Errors
    /// `Error::DeviceLost` naming `op` once it is.
    #[inline]
    pub fn check_lost(&self, op: &'static str) -> Result<()> {
        self.lost.check(op)
    }

    /// True once the device is lost.
    #[inline]
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Calls `listener` with the reason when the device is lost (at once
    /// when it already is).
    pub fn on_lost(&self, listener: Listener) {
        self.lost.listen(listener);
    }

    /// `result`, what `op` got from the GPU, or `Error::DeviceLost` when
    /// the device is lost: bytes read or work done then are not to be
    /// trusted, and a failure of the GPU (a map or a submit that failed)
    /// may be the loss met before wgpu's lost callback fired, so this lets
    /// a pending callback fire first (natively, a wait of at most a second
    /// for the queue).
    ///
    /// # Errors
    /// As described.
    pub fn explain<T>(&self, op: &'static str, result: Result<T>) -> Result<T> {
        // wgpu tells of a destroyed device once its queue is empty; one
        // lost by the driver fails the wait at once.
        #[cfg(not(target_arch = "wasm32"))]
        if matches!(result, Err(Error::Gpu { .. })) && !self.lost.is_lost() {
            let _ = self.device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: Some(std::time::Duration::from_secs(1)),
            });
        }
        if self.lost.is_lost() {
            return Err(self.lost.error(op));
        }
        result
    }

    /// Id of the batch being recorded.
    pub fn open_batch(&self) -> u64 {
        self.open_batch.load(Ordering::Acquire)
    }

    /// The scheduler's flush threshold.
    pub fn flush_threshold(&self) -> usize {
        self.scheduler().flush_threshold()
    }

    /// Sets the scheduler's flush threshold (at least 1).
    pub fn set_flush_threshold(&self, ops: usize) {
        self.scheduler().set_flush_threshold(ops);
    }

    /// True when the scheduler fuses elementwise chains.
    pub fn fusion_enabled(&self) -> bool {
        self.scheduler().fusion()
    }

    /// Turns the scheduler's fusion on or off.
    pub fn set_fusion(&self, on: bool) {
        self.scheduler().set_fusion(on);
    }

    /// The matmul tile setting.
    pub fn matmul_tile(&self) -> MatmulTile {
        *self.matmul_tile.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the matmul tile, from the next matmul recorded on.
    pub fn set_matmul_tile(&self, tile: MatmulTile) {
        *self.matmul_tile.lock().unwrap_or_else(|e| e.into_inner()) = tile;
    }

    /// What webtensor knows of the adapter.
    pub fn facts(&self) -> &AdapterFacts {
        &self.facts
    }

    /// This device's number in the process, from 1 in the order opened.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the device has done so far.
    pub fn counters(&self) -> GpuCounters {
        let (checked, dropped) = self.tuner.checked();
        let scheduler = self.scheduler();
        GpuCounters {
            scheduler: scheduler.counters,
            groups: scheduler.groups.counters,
            pool: self.pool.counters(),
            pipelines: self.pipelines.len() as u64,
            tuning_runs: self.tuner.runs(),
            tuning_ns: self.tuner.timed_ns(),
            kernels_checked: checked,
            kernels_dropped: dropped.len() as u64,
            bytes_uploaded: self.bytes_uploaded.load(Ordering::Relaxed),
            readbacks: self.readbacks.load(Ordering::Relaxed),
        }
    }

    /// Caps the memory tensors and readbacks may hold (see the pool).
    pub fn set_memory_cap(&self, bytes: Option<u64>) {
        self.pool.set_cap(bytes);
        self.scheduler().groups.clear();
    }

    /// Drops the pool's idle buffers, and the kept bind groups that would
    /// hold them alive.
    pub fn release_pooled_memory(&self) {
        self.pool.clear();
        self.scheduler().groups.clear();
    }

    /// Submits all recorded work and resolves when the GPU has finished it.
    ///
    /// # Errors
    /// `Error::DeviceLost` when the device is lost; `Error::Gpu` when the
    /// device reports a failure; `Error::Index` for an out-of-range index
    /// met since the last readback.
    pub async fn sync(&self, op: &'static str) -> Result<()> {
        self.check_lost(op)?;
        let waited = self.submit_and_wait(op).await;
        self.explain(op, waited)
    }

    async fn submit_and_wait(&self, op: &'static str) -> Result<()> {
        let (flushed, submit_errors) = submit_scoped(&self.device, &mut || self.flush());
        flushed?;
        let (sender, receiver) = futures::channel::oneshot::channel();
        self.queue.on_submitted_work_done(move || {
            let _ = sender.send(());
        });
        self.wait_idle(op)?;
        receiver
            .await
            .map_err(|_| Error::gpu(op, "the device was dropped"))?;
        // The wait is no op's host time.
        self.scheduler().profile_mark();
        if let Some(e) = submit_errors.await {
            return Err(Error::gpu(op, format!("the device reported: {e}")));
        }
        self.check_faults(op).await
    }

    /// What a flush needs of this device.
    pub fn target(&self) -> Target<'_> {
        Target {
            device: &self.device,
            queue: &self.queue,
            facts: &self.facts,
            pipelines: &self.pipelines,
            open_batch: &self.open_batch,
            pool: &self.pool,
            lost: &self.lost,
        }
    }

    /// The wgpu device and queue (clones of the handles).
    pub fn wgpu_handles(&self) -> (wgpu::Device, wgpu::Queue) {
        (self.device.clone(), self.queue.clone())
    }

    /// The pending work of this device.
    pub fn scheduler(&self) -> MutexGuard<'_, Scheduler> {
        self.scheduler.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the GPU has finished everything submitted, firing its
    /// callbacks (native). On wasm the browser fires them; this returns at once.
    ///
    /// # Errors
    /// `Error::Gpu` naming `op` when the device is lost.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait_idle(&self, op: &'static str) -> Result<()> {
        // Polls first (see `GpuOptions::spin_wait`), one thread at a time,
        // then blocks.
        if !self.facts.spin_wait.is_zero() && !self.spinning.swap(true, Ordering::Acquire) {
            let done = self.poll_until_idle(op);
            self.spinning.store(false, Ordering::Release);
            if done? {
                return Ok(());
            }
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::gpu(op, e.to_string()))
    }

    /// Polls the device until its queue is empty (true) or
    /// `AdapterFacts::spin_wait` has passed (false), yielding between polls.
    #[cfg(not(target_arch = "wasm32"))]
    fn poll_until_idle(&self, op: &'static str) -> Result<bool> {
        let start = std::time::Instant::now();
        while start.elapsed() < self.facts.spin_wait {
            let status = self
                .device
                .poll(wgpu::PollType::Poll)
                .map_err(|e| Error::gpu(op, e.to_string()))?;
            if status.is_queue_empty() {
                return Ok(true);
            }
            std::thread::yield_now();
        }
        Ok(false)
    }

    /// See the native form: nothing to do in the browser.
    #[cfg(target_arch = "wasm32")]
    pub fn wait_idle(&self, _op: &'static str) -> Result<()> {
        Ok(())
    }

    /// `Error::Gpu` naming `op` for an error the device raised since the
    /// last check (then cleared).
    ///
    /// # Errors
    /// As described.
    pub fn check_device_error(&self, op: &'static str) -> Result<()> {
        let taken = self
            .device_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match taken {
            Some(msg) => Err(Error::gpu(op, format!("the device reported: {msg}"))),
            None => Ok(()),
        }
    }

    /// Lets go of the handles of storages that are gone (an application's
    /// buffer goes with its last tensor).
    pub fn forget_unshared(&self) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.retain(|(_, s)| s.strong_count() > 0);
    }

    /// Remembers that `buffer` is `storage`'s, handed out or wrapped.
    pub fn share(&self, buffer: &wgpu::Buffer, storage: &Arc<Storage>) {
        self.forget_unshared();
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if !shared.iter().any(|(b, _)| b == buffer) {
            shared.push((buffer.clone(), Arc::downgrade(storage)));
        }
    }

    /// The live storage `buffer` is, when it was handed out or wrapped
    /// before, with the handle it was known by then.
    pub fn shared_storage(&self, buffer: &wgpu::Buffer) -> Option<(wgpu::Buffer, Arc<Storage>)> {
        self.forget_unshared();
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared
            .iter()
            .find(|(b, _)| b == buffer)
            .and_then(|(b, s)| Some((b.clone(), s.upgrade()?)))
    }

    /// Submits everything pending (nothing when nothing is).
    ///
    /// # Errors
    /// `Error::DeviceLost` when the device is lost; `Error::Gpu` when the
    /// submission fails.
    pub fn flush(&self) -> Result<()> {
        self.check_lost("flush")?;
        let mut scheduler = self.scheduler();
        if scheduler.has_pending() {
            let flushed = scheduler.flush(&self.target(), |_| {});
            drop(scheduler);
            self.explain("flush", flushed)?;
        }
        Ok(())
    }
}

async fn pick_adapter(instance: &wgpu::Instance, options: &GpuOptions) -> Result<wgpu::Adapter> {
    const OP: &str = "Device::gpu";
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
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
