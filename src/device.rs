//! [`Device`]: where tensors live and ops run — a GPU through wgpu, or the CPU.

use crate::backend::Place;
use crate::backend::cpu::Threads;
use crate::backend::gpu::{GpuContext, GpuOptions, MatmulPrecision, MatmulTile, TunedMatmul};
use crate::error::{Error, Result};
use std::fmt;
use std::sync::Arc;

/// A handle to a compute device. Cheap to clone; clones share the device.
///
/// ```
/// use webtensor::Device;
/// let cpu = Device::cpu();
/// assert!(cpu.is_cpu());
/// println!("{}", cpu.info());
/// ```
#[derive(Clone)]
pub struct Device {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Cpu {
        reason: Option<Arc<str>>,
        threads: Threads,
    },
    Gpu(Arc<GpuContext>),
}

/// What kind of device a [`Device`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// Host memory and CPU loops.
    Cpu,
    /// A wgpu adapter.
    Gpu,
}

/// A description of a device: the adapter and the limits that matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// CPU or GPU.
    pub kind: DeviceKind,
    /// The adapter name (`"cpu"` for the CPU).
    pub name: String,
    /// The wgpu backend (`Vulkan`, `Metal`, `BrowserWebGpu` ...), or `"host"`.
    pub backend: String,
    /// The adapter type (`DiscreteGpu`, `Cpu` for a software adapter ...).
    pub device_type: String,
    /// Driver name and version, where the adapter reports them.
    pub driver: String,
    /// Whether f16 is stored natively (SHADER_F16) rather than packed in u32.
    pub native_f16: bool,
    /// Whether kernels use subgroup operations (the adapter has SUBGROUP,
    /// natively, unless `GpuOptions::subgroups` says no).
    pub subgroups: bool,
    /// The fewest lanes the adapter's subgroups have (its
    /// `subgroup_min_size`, 4 to 128; 0 for the CPU): the subgroup matmul
    /// (`MatmulTile::Subgroup`) needs eight.
    pub subgroup_min_size: u32,
    /// Whether the matmul tile is found by timing (see
    /// `GpuOptions::autotune`).
    pub autotune: bool,
    /// Whether the device writes GPU timestamps (`TIMESTAMP_QUERY`,
    /// natively): autotuning times kernels by them, else by the host's
    /// clock around a submit.
    pub gpu_timestamps: bool,
    /// Whether f16 products (and f32 ones under
    /// `MatmulPrecision::Fast`) may run on cooperative matrices (tensor
    /// cores; see `GpuOptions::cooperative_matrix`).
    pub cooperative_matrix: bool,
    /// How f32 products may compute (`GpuOptions::matmul_precision`).
    pub matmul_precision: MatmulPrecision,
    /// Whether webtensor's own kernels run with wgpu's runtime checks
    /// (see `GpuOptions::runtime_checks`; custom kernels always do).
    pub runtime_checks: bool,
    /// Largest storage binding in bytes: elementwise ops (and fused chains,
    /// casts, copies, fills) over larger tensors bind them in windows,
    /// other op families cut them into parts, custom kernels refuse them
    /// with `Error::TooLarge`.
    pub max_storage_binding: u64,
    /// Largest buffer in bytes: the largest tensor on this device.
    pub max_buffer_size: u64,
    /// Largest workgroup count per dispatch dimension.
    pub max_workgroups_per_dim: u32,
    /// Why a default device is the CPU, when it is (no adapter, only a
    /// software adapter, or `WEBTENSOR_DEVICE=cpu`).
    pub fallback_reason: Option<String>,
    /// Matmul kernels this device dropped (`"matmul large f16"`; a block
    /// type's quantized kernels, `"qmatmul q4_0 f32"`, whose products then
    /// decode the blocks on the host): before
    /// a kernel computes its first product of a dtype, natively, it
    /// computes small probe products whose answers are known (edges that
    /// are not multiples of its tile, both operand layouts); one that
    /// answers wrong (a driver bug, a kernel wrong on this adapter) is never
    /// used on this device, and its products go to another kernel.
    pub dropped_kernels: Vec<String>,
    /// What autotuning chose so far (see `GpuOptions::autotune`): for each
    /// class of products timed, the size rule's tile, the winner and their
    /// median times. Empty on the CPU and where the device does not tune.
    pub tuned_matmuls: Vec<TunedMatmul>,
    /// The threads a CPU device's ops split their work over (see
    /// [`Device::cpu_with_threads`]); 0 for a GPU.
    pub threads: usize,
    /// Tells GPU devices of one process apart (1, 2 ... in the order
    /// opened; 0 for the CPU). Devices print it: `gpu#2:llvmpipe ...`.
    pub id: u64,
}

impl DeviceInfo {
    /// True for a GPU adapter that runs on the CPU (wgpu's
    /// `DeviceType::Cpu`: Mesa's llvmpipe/lavapipe, WARP, SwiftShader).
    pub fn is_software(&self) -> bool {
        self.kind == DeviceKind::Gpu && self.device_type == "Cpu"
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DeviceKind::Cpu => {
                write!(f, "cpu, {} threads", self.threads)?;
                if let Some(r) = &self.fallback_reason {
                    write!(f, " (default because: {r})")?;
                }
                Ok(())
            }
            DeviceKind::Gpu => write!(
                f,
                "gpu#{}: {} ({}, {}, driver {:?}), f16 {}, subgroups {} (at least {} lanes), autotune {} (timed by {}), cooperative matrices {}, f32 matmul {:?}, runtime checks {}, max binding {} MiB, max buffer {} MiB, max workgroups/dim {}",
                self.id,
                self.name,
                self.backend,
                self.device_type,
                self.driver,
                if self.native_f16 { "native" } else { "packed" },
                if self.subgroups { "on" } else { "off" },
                self.subgroup_min_size,
                if self.autotune { "on" } else { "off" },
                if self.gpu_timestamps {
                    "GPU timestamps"
                } else {
                    "the host clock"
                },
                if self.cooperative_matrix { "on" } else { "off" },
                self.matmul_precision,
                if self.runtime_checks { "on" } else { "off" },
                self.max_storage_binding >> 20,
                self.max_buffer_size >> 20,
                self.max_workgroups_per_dim
            )
            .and_then(|()| {
                if self.dropped_kernels.is_empty() {
                    return Ok(());
                }
                write!(f, ", dropped {}", self.dropped_kernels.join(", "))
            }),
        }
    }
}

/// Counters of the work a GPU device has done and the memory it holds (all
/// zero on the CPU). Byte counts are in pool buckets (a buffer is rounded up
/// to at most 25% over the request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceStats {
    /// Queue submissions.
    pub submits: u64,
    /// Ops recorded (elementwise ops, copies, casts, fills).
    pub ops_recorded: u64,
    /// Kernel dispatches encoded: ops recorded minus ops fused away (and
    /// minus ops over no elements).
    pub dispatches: u64,
    /// Pipelines compiled.
    pub pipelines: u64,
    /// Dispatches that ran a fused chain of two or more ops.
    pub fused_kernels: u64,
    /// Ops that ran inside another op's fused kernel instead of their own.
    pub fused_ops: u64,
    /// Device buffers created (on the CPU, host buffers of 64 KiB to 256
    /// MiB the pool could not serve; see `bytes_pooled`).
    pub buffers_created: u64,
    /// Buffer requests served from the pool.
    pub buffers_reused: u64,
    /// Op outputs that never took a buffer: intermediates fused into
    /// their reader and dropped before the flush (an elementwise op's
    /// output takes its buffer when a flush first writes it).
    pub buffers_avoided: u64,
    /// Ops never run because their results were dropped unread before
    /// the flush (each counts in `buffers_avoided` too).
    pub dead_ops: u64,
    /// Bind groups created (one per dispatch unless kept from an earlier
    /// dispatch on the same buffers).
    pub bind_groups_created: u64,
    /// Dispatches that reused a kept bind group.
    pub bind_groups_reused: u64,
    /// Runs of captured steps ([`Device::capture`], [`Graph::run`](crate::Graph::run)),
    /// the run at capture included; each is one submit.
    pub graph_runs: u64,
    /// Timed runs of matmul autotuning (warm-ups included).
    pub tuning_runs: u64,
    /// Nanoseconds the timed runs of autotuning measured (GPU time where
    /// the device writes timestamps, else the host's clock).
    pub tuning_ns: u64,
    /// Matmul kernels (a tile's or the matrix-vector kernel, per dtype)
    /// that computed probe products before their first use, natively (see
    /// `DeviceInfo::dropped_kernels`).
    pub kernels_checked: u64,
    /// Of those, the kernels whose probe products were wrong: never used
    /// on this device.
    pub kernels_dropped: u64,
    /// Bytes held by live tensors (and readbacks in progress), including
    /// those reserved for outputs whose buffers the next flush takes.
    pub bytes_live: u64,
    /// The most `bytes_live` has been.
    pub peak_bytes_live: u64,
    /// Bytes of idle buffers kept in the pool for reuse. On the CPU this
    /// and the two buffer counts are those of the one host pool every CPU
    /// device shares, which keeps freed vectors of 64 KiB and more, up to
    /// 256 MiB in all ([`Device::release_pooled_memory`] empties it).
    pub bytes_pooled: u64,
    /// Bytes written from the host into tensor storage: tensors made from
    /// host data, and the tables an op uploads (kernel parameter blocks
    /// are not counted).
    pub bytes_uploaded: u64,
    /// Readbacks the host waited on: one per `to_vec`, `sync` with work
    /// to check, or fault-record check.
    pub readbacks: u64,
}

impl Device {
    /// The CPU device.
    pub fn cpu() -> Device {
        Device {
            inner: Inner::Cpu {
                reason: None,
                threads: Threads::default(),
            },
        }
    }

    /// A CPU device whose ops run on `threads` threads of its own (the
    /// calling thread and `threads - 1` workers, and a rayon pool of
    /// `threads` for matrix products), where [`Device::cpu`] shares the
    /// process's (one thread per core, or `RAYON_NUM_THREADS`). Ops split
    /// their work over them above a size threshold; a split op gives the
    /// one-thread result, bit for bit, except sums, which stay within their
    /// documented tolerance. Between ops the workers spin for 200 us before
    /// they sleep, so that the next op of a network finds them awake.
    /// Tensors made by this handle, and the outputs of ops on them, run on
    /// its threads; they mix freely with other CPU tensors (the CPU devices
    /// are one memory, and equal), and [`Tensor::to_device`] copies one onto
    /// other threads. wasm has one thread, whatever `threads` says.
    ///
    /// ```
    /// use webtensor::Device;
    /// let one = Device::cpu_with_threads(1)?;
    /// assert_eq!(one.info().threads, 1);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// [`Tensor::to_device`]: crate::Tensor::to_device
    ///
    /// # Errors
    /// `Error::Argument` for `threads == 0`; `Error::Internal` when the
    /// system refuses the threads.
    pub fn cpu_with_threads(threads: usize) -> Result<Device> {
        Ok(Device {
            inner: Inner::Cpu {
                reason: None,
                threads: Threads::new("Device::cpu_with_threads", threads)?,
            },
        })
    }

    /// Opens the best GPU adapter, blocking (native only). Honours
    /// `WGPU_BACKEND` (e.g. `vulkan`), `WGPU_ADAPTER_NAME` (a substring of the
    /// adapter name) and `WEBTENSOR_F16=packed`. Each call opens a new device;
    /// use [`Device::default_device`] for a shared one.
    ///
    /// # Errors
    /// `Error::NoAdapter` when no adapter is found or it refuses a device.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn gpu() -> Result<Device> {
        Self::gpu_with(GpuOptions::default())
    }

    /// [`Device::gpu`] with options (e.g. forcing packed f16), blocking.
    ///
    /// # Errors
    /// As [`Device::gpu`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn gpu_with(options: GpuOptions) -> Result<Device> {
        pollster::block_on(Self::gpu_async_with(options))
    }

    /// Opens the best GPU adapter (every target; the only form on wasm).
    ///
    /// # Errors
    /// As [`Device::gpu`].
    pub async fn gpu_async() -> Result<Device> {
        Self::gpu_async_with(GpuOptions::default()).await
    }

    /// [`Device::gpu_async`] with options.
    ///
    /// # Errors
    /// As [`Device::gpu`].
    pub async fn gpu_async_with(options: GpuOptions) -> Result<Device> {
        let ctx = GpuContext::open(&options).await?;
        Ok(Device {
            inner: Inner::Gpu(Arc::new(ctx)),
        })
    }

    /// The process-wide default device, opened once: the GPU when a
    /// hardware adapter exists, else the CPU with the reason in
    /// [`Device::info`]. A software adapter (Mesa's llvmpipe/lavapipe, WARP:
    /// wgpu's `DeviceType::Cpu`) is passed over for the CPU path, which runs
    /// the same ops several times faster on the same cores.
    /// `WEBTENSOR_DEVICE=cpu` or `=gpu` overrides the choice, and
    /// [`Device::gpu`] opens a software adapter when asked.
    ///
    /// # Errors
    /// `WEBTENSOR_DEVICE=gpu` with no usable adapter, or an unknown value.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn default_device() -> Result<Device> {
        static DEFAULT: std::sync::OnceLock<Result<Device>> = std::sync::OnceLock::new();
        DEFAULT
            .get_or_init(|| pollster::block_on(Self::default_async()))
            .clone()
    }

    /// Chooses a default device as [`Device::default_device`] does, opening
    /// a new one on each call (the form for wasm). In the browser the
    /// adapter is used whatever its type: there the CPU path is one
    /// single-threaded wasm instance.
    ///
    /// # Errors
    /// As [`Device::default_device`].
    pub async fn default_async() -> Result<Device> {
        let choice = std::env::var("WEBTENSOR_DEVICE").ok();
        match choice.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("cpu") => Ok(Device::cpu_because("WEBTENSOR_DEVICE=cpu")),
            Some("gpu") => Self::gpu_async().await,
            None | Some("") => match Self::gpu_async().await {
                Ok(d) if cfg!(not(target_arch = "wasm32")) && d.info().is_software() => {
                    let info = d.info();
                    Ok(Device::cpu_because(&format!(
                        "the only adapter, {} ({}), is a software one, slower than the \
                         CPU path; set WEBTENSOR_DEVICE=gpu or call Device::gpu() to use it",
                        info.name, info.backend
                    )))
                }
                Ok(d) => Ok(d),
                Err(e) => Ok(Device::cpu_because(&e.to_string())),
            },
            Some(other) => Err(Error::argument(
                "Device::default_device",
                format!("WEBTENSOR_DEVICE={other:?}; expected \"cpu\" or \"gpu\""),
            )),
        }
    }

    fn cpu_because(reason: &str) -> Device {
        Device {
            inner: Inner::Cpu {
                reason: Some(reason.into()),
                threads: Threads::default(),
            },
        }
    }

    /// True for the CPU device.
    pub fn is_cpu(&self) -> bool {
        matches!(self.inner, Inner::Cpu { .. })
    }

    /// True for a GPU device.
    pub fn is_gpu(&self) -> bool {
        matches!(self.inner, Inner::Gpu(_))
    }

    /// `Err` unless this device holds tensors of `dtype` (a GPU holds no
    /// f64).
    ///
    /// # Errors
    /// `Error::UnsupportedDType` naming `op`.
    pub(crate) fn check_holds(&self, op: &'static str, dtype: crate::DType) -> crate::Result<()> {
        if self.is_gpu() && dtype == crate::DType::F64 {
            return Err(crate::Error::UnsupportedDType {
                op,
                dtype,
                device: self.to_string(),
            });
        }
        Ok(())
    }

    /// The adapter, backend, type and limits of this device.
    pub fn info(&self) -> DeviceInfo {
        match &self.inner {
            Inner::Cpu { reason, threads } => DeviceInfo {
                kind: DeviceKind::Cpu,
                name: "cpu".into(),
                backend: "host".into(),
                device_type: "Cpu".into(),
                driver: String::new(),
                native_f16: false,
                subgroups: false,
                subgroup_min_size: 0,
                autotune: false,
                gpu_timestamps: false,
                runtime_checks: false,
                cooperative_matrix: false,
                matmul_precision: MatmulPrecision::Exact,
                max_storage_binding: u64::MAX,
                max_buffer_size: u64::MAX,
                max_workgroups_per_dim: 0,
                fallback_reason: reason.as_deref().map(str::to_string),
                dropped_kernels: Vec::new(),
                tuned_matmuls: Vec::new(),
                threads: threads.count(),
                id: 0,
            },
            Inner::Gpu(ctx) => {
                let f = ctx.facts();
                DeviceInfo {
                    kind: DeviceKind::Gpu,
                    name: f.name.clone(),
                    backend: f.backend.clone(),
                    device_type: f.device_type.clone(),
                    driver: f.driver.clone(),
                    native_f16: f.native_f16,
                    subgroups: f.subgroups,
                    subgroup_min_size: f.subgroup_min_size,
                    autotune: ctx.tuner.enabled(),
                    gpu_timestamps: f.timestamps,
                    runtime_checks: f.runtime_checks,
                    cooperative_matrix: f.cooperative,
                    matmul_precision: f.matmul_precision,
                    max_storage_binding: f.max_storage_binding.min(f.max_buffer_size),
                    max_buffer_size: f.max_buffer_size,
                    max_workgroups_per_dim: f.max_workgroups_per_dim,
                    fallback_reason: None,
                    dropped_kernels: ctx.tuner.checked().1,
                    tuned_matmuls: ctx.tuner.tuned(),
                    threads: 0,
                    id: ctx.id(),
                }
            }
        }
    }

    /// What the device has done so far (on the CPU, its host buffer
    /// pool's figures alone).
    pub fn stats(&self) -> DeviceStats {
        match &self.inner {
            Inner::Cpu { .. } => {
                let p = crate::backend::cpu::pool_stats();
                DeviceStats {
                    buffers_created: p.created,
                    buffers_reused: p.reused,
                    bytes_pooled: p.bytes_pooled,
                    ..DeviceStats::default()
                }
            }
            Inner::Gpu(ctx) => {
                let c = ctx.counters();
                let (s, p) = (c.scheduler, c.pool);
                DeviceStats {
                    submits: s.submits,
                    ops_recorded: s.ops_recorded,
                    dispatches: s.dispatches,
                    pipelines: c.pipelines,
                    fused_kernels: s.fused_kernels,
                    fused_ops: s.fused_ops,
                    buffers_created: p.created,
                    buffers_reused: p.reused,
                    buffers_avoided: s.buffers_avoided,
                    dead_ops: s.dead_ops,
                    bind_groups_created: c.groups.created,
                    bind_groups_reused: c.groups.reused,
                    graph_runs: s.graph_runs,
                    tuning_runs: c.tuning_runs,
                    tuning_ns: c.tuning_ns,
                    kernels_checked: c.kernels_checked,
                    kernels_dropped: c.kernels_dropped,
                    bytes_live: p.bytes_live + p.bytes_reserved,
                    peak_bytes_live: p.peak_bytes_live,
                    bytes_pooled: p.bytes_pooled,
                    bytes_uploaded: c.bytes_uploaded,
                    readbacks: c.readbacks,
                }
            }
        }
    }

    /// Sets how many recorded ops make a batch (at least 1; 1 submits every
    /// op on its own). Overrides `GpuOptions::flush_threshold` and
    /// `WEBTENSOR_FLUSH_THRESHOLD`. No effect on the CPU.
    pub fn set_flush_threshold(&self, ops: usize) {
        if let Inner::Gpu(ctx) = &self.inner {
            ctx.set_flush_threshold(ops);
        }
    }

    /// The number of recorded ops that triggers a submit (0 on the CPU).
    pub fn flush_threshold(&self) -> usize {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.flush_threshold(),
            Inner::Cpu { .. } => 0,
        }
    }

    /// Turns fusion of elementwise chains on or off, from the next flush on.
    /// Overrides `GpuOptions::fusion` and `WEBTENSOR_FUSION`. No effect on
    /// the CPU.
    pub fn set_fusion(&self, on: bool) {
        if let Inner::Gpu(ctx) = &self.inner {
            ctx.set_fusion(on);
        }
    }

    /// Fixes the tile of the GPU matmul kernels ([`MatmulTile::Auto`], the
    /// default, picks by size), from the next matmul on. Overrides
    /// `GpuOptions::matmul_tile` and `WEBTENSOR_MATMUL_TILE`. No effect on
    /// the CPU.
    pub fn set_matmul_tile(&self, tile: MatmulTile) {
        if let Inner::Gpu(ctx) = &self.inner {
            ctx.set_matmul_tile(tile);
        }
    }

    /// The GPU matmul's tile setting (`Auto` on the CPU).
    pub fn matmul_tile(&self) -> MatmulTile {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.matmul_tile(),
            Inner::Cpu { .. } => MatmulTile::Auto,
        }
    }

    /// Whether elementwise chains are fused (false on the CPU).
    pub fn fusion(&self) -> bool {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.fusion_enabled(),
            Inner::Cpu { .. } => false,
        }
    }

    /// Caps the device memory that tensors, readbacks and the temporaries
    /// of a flush may hold, live and pooled (`None` removes the cap); idle
    /// pooled buffers are dropped to get under it. An allocation past the
    /// cap is `Error::OutOfMemory` (a flush's temporary, for an in-place op
    /// over a tensor larger than one storage binding that reads its own
    /// buffer far from where it writes, reports it at the next readback or
    /// `sync`). No effect on the CPU.
    pub fn set_memory_cap(&self, bytes: Option<u64>) {
        if let Inner::Gpu(ctx) = &self.inner {
            ctx.set_memory_cap(bytes);
        }
    }

    /// Drops the idle buffers the pool keeps for reuse and the tables ops
    /// keep on the device (an FFT's twiddles, made again by the next call
    /// that needs them), giving their memory back to the driver; on the
    /// CPU, the host buffers kept for reuse
    /// (one pool for every CPU device) back to the system allocator.
    pub fn release_pooled_memory(&self) {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.release_pooled_memory(),
            Inner::Cpu { .. } => crate::backend::cpu::release_pooled(),
        }
    }

    /// True once the GPU is lost (a driver reset, the browser taking the
    /// device back, `wgpu::Device::destroy`): every op, upload, readback,
    /// sync and interop call on it then fails with `Error::DeviceLost`,
    /// and the tensors it held are gone. Always false on the CPU, where
    /// nothing is lost.
    ///
    /// wgpu tells of a loss when the device is next polled (natively: a
    /// readback, a sync) or, in a browser, as the page's event loop runs:
    /// ops recorded before then fail at their readback.
    pub fn is_lost(&self) -> bool {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.is_lost(),
            Inner::Cpu { .. } => false,
        }
    }

    /// Calls `listener` with wgpu's reason when the GPU is lost: once, on
    /// the thread that finds the loss (natively, one polling the device;
    /// in a browser, the page's), at once when it already is lost, never
    /// on the CPU. The listener may call webtensor (every call on the lost
    /// device fails at once); it should return quickly.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use webtensor::Device;
    /// let device = Device::cpu();
    /// let lost = Arc::new(AtomicBool::new(false));
    /// let heard = lost.clone();
    /// device.on_lost(move |reason| {
    ///     eprintln!("GPU lost: {reason}");
    ///     heard.store(true, Ordering::Relaxed);
    /// });
    /// assert!(!device.is_lost() && !lost.load(Ordering::Relaxed));
    /// ```
    pub fn on_lost(&self, listener: impl Fn(&str) + Send + Sync + 'static) {
        if let Inner::Gpu(ctx) = &self.inner {
            ctx.on_lost(Arc::new(listener));
        }
    }

    /// Submits all recorded work without waiting for it (a no-op when
    /// nothing is pending, and on the CPU, which runs ops at once).
    ///
    /// # Errors
    /// `Error::Gpu` when a generated kernel fails to build;
    /// `Error::DeviceLost` when the GPU is lost.
    pub fn flush(&self) -> Result<()> {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.flush(),
            Inner::Cpu { .. } => Ok(()),
        }
    }

    /// Submits all recorded work and waits for the GPU to finish it (native).
    ///
    /// # Errors
    /// `Error::DeviceLost` when the GPU is lost; `Error::Gpu` when it
    /// reports another failure; `Error::Index` when an indexing
    /// op met an out-of-range index since the last readback (the GPU checks
    /// indices as it runs; see [`Tensor::take`](crate::Tensor::take)).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sync(&self) -> Result<()> {
        pollster::block_on(self.sync_async())
    }

    /// Submits all recorded work and resolves when the GPU has finished it.
    ///
    /// # Errors
    /// As [`Device::sync`].
    pub async fn sync_async(&self) -> Result<()> {
        match &self.inner {
            Inner::Gpu(ctx) => ctx.sync("sync").await,
            Inner::Cpu { .. } => Ok(()),
        }
    }

    /// The device of an opened GPU context.
    pub(crate) fn from_gpu_context(ctx: Arc<GpuContext>) -> Device {
        Device {
            inner: Inner::Gpu(ctx),
        }
    }

    /// Where this device's fresh storage goes.
    pub(crate) fn place(&self) -> Place<'_> {
        match &self.inner {
            Inner::Gpu(ctx) => Place::Gpu(ctx),
            Inner::Cpu { threads, .. } => Place::Host(threads),
        }
    }

    /// Whether this is a CPU device whose ops run on `threads`.
    pub(crate) fn runs_on(&self, threads: &Threads) -> bool {
        matches!(&self.inner, Inner::Cpu { threads: t, .. } if t.same(threads))
    }

    pub(crate) fn gpu_context(&self) -> Option<&Arc<GpuContext>> {
        match &self.inner {
            Inner::Gpu(ctx) => Some(ctx),
            Inner::Cpu { .. } => None,
        }
    }
}

impl PartialEq for Device {
    /// The CPU equals the CPU; GPU handles are equal when they share a device.
    fn eq(&self, other: &Device) -> bool {
        match (&self.inner, &other.inner) {
            (Inner::Cpu { .. }, Inner::Cpu { .. }) => true,
            (Inner::Gpu(a), Inner::Gpu(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({self})")
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Cpu { .. } => write!(f, "cpu"),
            Inner::Gpu(ctx) => write!(f, "gpu#{}:{}", ctx.id(), ctx.facts().name),
        }
    }
}
