//! [`Device`]: where tensors live and ops run — a GPU through wgpu, or the CPU.

mod handle;
mod info;
mod persist;
mod recover;

use crate::backend::Place;
use crate::backend::cpu::Threads;
use crate::backend::gpu::{GpuContext, GpuOptions, MatmulPrecision, MatmulTile};
use crate::error::{Error, Result};
use handle::{CpuDevice, GpuHandle, Now};
pub use info::{DeviceInfo, DeviceKind, DeviceStats};
pub use persist::Persist;
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
    Cpu(CpuDevice),
    /// A GPU, or what a recovery made of it (see `handle.rs`).
    Gpu(Arc<GpuHandle>),
}

/// What a device is at one moment (see [`Device::with`]).
enum On<'a> {
    Cpu(&'a CpuDevice),
    Gpu(&'a Arc<GpuContext>),
}

impl Device {
    /// The CPU device.
    pub fn cpu() -> Device {
        Device {
            inner: Inner::Cpu(CpuDevice {
                reason: None,
                threads: Threads::default(),
            }),
        }
    }

    /// A CPU device whose ops run on `threads` threads of its own (the
    /// calling thread and `threads - 1` workers, and a rayon pool of
    /// `threads` for matrix products), where [`Device::cpu`] shares the
    /// process's (one thread per core, or `RAYON_NUM_THREADS`). Ops split
    /// their work over them above a size threshold; a split op gives the
    /// one-thread result, bit for bit, except `eigh` and `svd` of fewer
    /// matrices than threads and the ops built on them (`eigvalsh`,
    /// `svdvals`, `lstsq`, `pinv`, `cond`, `matrix_rank`, `matrix_norm`'s
    /// 2-norms): faer splits one matrix's reductions over the threads, so
    /// the last bits differ, and the small singular values (and what
    /// divides by them) differ within what backward stability allows. Between ops the workers spin for 200 us before
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
    /// `Error::Argument` for `threads == 0` or past 1,024;
    /// `Error::Internal` when the system refuses the threads.
    pub fn cpu_with_threads(threads: usize) -> Result<Device> {
        Ok(Device {
            inner: Inner::Cpu(CpuDevice {
                reason: None,
                threads: Threads::new("Device::cpu_with_threads", threads)?,
            }),
        })
    }

    /// Opens the best GPU adapter, blocking (native only). Honours
    /// `WGPU_BACKEND` (e.g. `vulkan`), `WGPU_ADAPTER_NAME` (a substring of the
    /// adapter name) and `WEBTENSOR_F16=packed`. Each call opens a new device;
    /// use [`Device::default_device`] for a shared one.
    ///
    /// # Errors
    /// `Error::NoAdapter` when no adapter is found or it refuses a device;
    /// `Error::Argument` naming `Device::gpu` for a `WEBTENSOR_*` setting of
    /// the environment set to a value it does not take (`WEBTENSOR_FUSION=2`,
    /// `WEBTENSOR_MEMORY_CAP=1GiB`).
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
        Ok(Device::from_gpu_context(Arc::new(ctx), options, true))
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
    /// `WEBTENSOR_DEVICE=gpu` with no usable adapter, or an unknown value;
    /// `Error::Argument` as [`Device::gpu`] for another `WEBTENSOR_*`
    /// setting set to a value it does not take, unless
    /// `WEBTENSOR_DEVICE=cpu` (never the CPU in its place).
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
                // A setting it does not take is the caller's to fix, not a
                // reason to run on the CPU.
                Err(e @ Error::Argument { .. }) => Err(e),
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
            inner: Inner::Cpu(CpuDevice {
                reason: Some(reason.into()),
                threads: Threads::default(),
            }),
        }
    }

    /// True for the CPU device, and for a GPU handle whose lost GPU could
    /// not be opened again (see [`Device::recover`]).
    pub fn is_cpu(&self) -> bool {
        match &self.inner {
            Inner::Cpu(_) => true,
            Inner::Gpu(handle) => handle.on_cpu(),
        }
    }

    /// True for a GPU device.
    pub fn is_gpu(&self) -> bool {
        !self.is_cpu()
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
        let id = self.gpu_handle().map_or(0, |h| h.id());
        self.with(|on| match on {
            On::Cpu(CpuDevice { reason, threads }) => DeviceInfo {
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
                workgroup_memory: 0,
                fallback_reason: reason.as_deref().map(str::to_string),
                dropped_kernels: Vec::new(),
                tuned_matmuls: Vec::new(),
                threads: threads.count(),
                id,
            },
            On::Gpu(ctx) => {
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
                    cooperative_matrix: f.cooperative.is_some(),
                    matmul_precision: f.matmul_precision,
                    max_storage_binding: f.max_storage_binding.min(f.max_buffer_size),
                    max_buffer_size: f.max_buffer_size,
                    max_workgroups_per_dim: f.max_workgroups_per_dim,
                    workgroup_memory: f.workgroup_bytes,
                    fallback_reason: None,
                    dropped_kernels: ctx.tuner.checked().1,
                    tuned_matmuls: ctx.tuner.tuned(),
                    threads: 0,
                    id,
                }
            }
        })
    }

    /// What the device has done so far (on the CPU, its host buffer
    /// pool's figures alone).
    pub fn stats(&self) -> DeviceStats {
        let recoveries = self.recoveries();
        self.with(|on| match on {
            On::Cpu(_) => {
                let p = crate::backend::cpu::pool_stats();
                DeviceStats {
                    buffers_created: p.created,
                    buffers_reused: p.reused,
                    bytes_pooled: p.bytes_pooled,
                    recoveries,
                    ..DeviceStats::default()
                }
            }
            On::Gpu(ctx) => {
                let c = ctx.counters();
                let (s, p) = (c.scheduler, c.pool);
                DeviceStats {
                    submits: s.submits,
                    ops_recorded: s.ops_recorded,
                    dispatches: s.dispatches,
                    pipelines: c.pipelines,
                    pipelines_evicted: c.pipelines_evicted,
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
                    recoveries,
                }
            }
        })
    }

    /// Sets how many recorded ops make a batch (at least 1; 1 submits every
    /// op on its own). Overrides `GpuOptions::flush_threshold` and
    /// `WEBTENSOR_FLUSH_THRESHOLD`. No effect on the CPU.
    pub fn set_flush_threshold(&self, ops: usize) {
        self.with(|on| on.gpu().map(|ctx| ctx.set_flush_threshold(ops)));
    }

    /// The number of recorded ops that triggers a submit (0 on the CPU).
    pub fn flush_threshold(&self) -> usize {
        self.with(|on| on.gpu().map_or(0, |ctx| ctx.flush_threshold()))
    }

    /// Turns fusion of elementwise chains on or off, from the next flush on.
    /// Overrides `GpuOptions::fusion` and `WEBTENSOR_FUSION`. No effect on
    /// the CPU.
    pub fn set_fusion(&self, on: bool) {
        self.with(|now| now.gpu().map(|ctx| ctx.set_fusion(on)));
    }

    /// Fixes the tile of the GPU matmul kernels ([`MatmulTile::Auto`], the
    /// default, picks by size), from the next matmul on. Overrides
    /// `GpuOptions::matmul_tile` and `WEBTENSOR_MATMUL_TILE`. No effect on
    /// the CPU.
    pub fn set_matmul_tile(&self, tile: MatmulTile) {
        self.with(|on| on.gpu().map(|ctx| ctx.set_matmul_tile(tile)));
    }

    /// The GPU matmul's tile setting (`Auto` on the CPU).
    pub fn matmul_tile(&self) -> MatmulTile {
        self.with(|on| on.gpu().map_or(MatmulTile::Auto, |ctx| ctx.matmul_tile()))
    }

    /// Whether elementwise chains are fused (false on the CPU).
    pub fn fusion(&self) -> bool {
        self.with(|on| on.gpu().is_some_and(|ctx| ctx.fusion_enabled()))
    }

    /// Caps the device memory that tensors, readbacks and the temporaries
    /// of a flush may hold, live and pooled (`None` removes the cap); idle
    /// pooled buffers are dropped to get under it. An allocation past the
    /// cap is `Error::OutOfMemory` (a flush's temporary, for an in-place op
    /// over a tensor larger than one storage binding that reads its own
    /// buffer far from where it writes, reports it at the next readback or
    /// `sync`). No effect on the CPU. In a browser a dropped buffer's
    /// memory goes when the page's garbage collector collects it (wgpu's
    /// WebGPU backend does not destroy a buffer it drops): the cap counts
    /// the buffers webtensor holds, not those awaiting collection.
    pub fn set_memory_cap(&self, bytes: Option<u64>) {
        self.with(|on| on.gpu().map(|ctx| ctx.set_memory_cap(bytes)));
    }

    /// Drops the idle buffers the pool keeps for reuse and the tables ops
    /// keep on the device (an FFT's twiddles, made again by the next call
    /// that needs them), giving their memory back to the driver (in a
    /// browser, once the page's garbage collector collects them); on the
    /// CPU, the host buffers kept for reuse
    /// (one pool for every CPU device) back to the system allocator.
    pub fn release_pooled_memory(&self) {
        self.with(|on| match on {
            On::Gpu(ctx) => ctx.release_pooled_memory(),
            On::Cpu(_) => crate::backend::cpu::release_pooled(),
        });
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
        self.with(|on| on.gpu().is_some_and(|ctx| ctx.is_lost()))
    }

    /// Calls `listener` with wgpu's reason each time the handle's GPU is
    /// lost (the device a recovery opens too): once a loss, natively on a
    /// thread of its own soon after wgpu tells of it (a readback, a sync,
    /// a submit meets it), in a browser on the page's event loop; at once
    /// when the device it is now is lost already; never on the CPU. The
    /// listener may call webtensor, [`Device::recover`] included. A
    /// listener that holds the device keeps it open for good: hold a
    /// [`WeakDevice`] ([`Device::downgrade`]) instead.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use webtensor::Device;
    /// let device = Device::cpu();
    /// let lost = Arc::new(AtomicBool::new(false));
    /// let heard = lost.clone();
    /// let weak = device.downgrade();
    /// device.on_lost(move |reason| {
    ///     eprintln!("GPU lost: {reason}");
    ///     heard.store(true, Ordering::Relaxed);
    ///     if let Some(device) = weak.upgrade() {
    ///         let _ = device.recover();
    ///     }
    /// });
    /// assert!(!device.is_lost() && !lost.load(Ordering::Relaxed));
    /// ```
    pub fn on_lost(&self, listener: impl Fn(&str) + Send + Sync + 'static) {
        if let Some(handle) = self.gpu_handle() {
            handle.listen(Arc::new(listener));
        }
    }

    /// Submits all recorded work without waiting for it (a no-op when
    /// nothing is pending, and on the CPU, which runs ops at once).
    ///
    /// # Errors
    /// `Error::Gpu` when a generated kernel fails to build (in a browser,
    /// from the next readback or sync instead); `Error::DeviceLost` when
    /// the GPU is lost.
    pub fn flush(&self) -> Result<()> {
        self.with(|on| on.gpu().map_or(Ok(()), |ctx| ctx.flush()))
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
        match self.gpu_context() {
            Some(ctx) => ctx.sync("sync").await,
            None => Ok(()),
        }
    }

    /// The device of an opened GPU context, opened with `options`;
    /// `reopens`: webtensor opened it (not the application) and can open
    /// another after a loss.
    pub(crate) fn from_gpu_context(
        ctx: Arc<GpuContext>,
        options: GpuOptions,
        reopens: bool,
    ) -> Device {
        Device {
            inner: Inner::Gpu(GpuHandle::new(ctx, options, reopens)),
        }
    }

    /// `f` of what this device is now (a GPU handle's device is read
    /// without a lock; see `handle.rs`).
    #[inline]
    fn with<R>(&self, f: impl FnOnce(On<'_>) -> R) -> R {
        match &self.inner {
            Inner::Cpu(cpu) => f(On::Cpu(cpu)),
            Inner::Gpu(handle) => match &**handle.now() {
                Now::Cpu(cpu) => f(On::Cpu(cpu)),
                Now::Gpu(ctx) => f(On::Gpu(ctx)),
            },
        }
    }

    /// `f` of where this device's fresh storage goes.
    #[inline]
    pub(crate) fn with_place<R>(&self, f: impl FnOnce(Place<'_>) -> R) -> R {
        self.with(|on| match on {
            On::Cpu(cpu) => f(Place::Host(&cpu.threads)),
            On::Gpu(ctx) => f(Place::Gpu(ctx)),
        })
    }

    /// True while a step is being captured on this GPU (never on the CPU,
    /// whose capture runs the step).
    pub(crate) fn is_capturing(&self) -> bool {
        // The scheduler is locked outside the handle's lock.
        self.gpu_context()
            .is_some_and(|ctx| ctx.scheduler().is_capturing())
    }

    /// Whether this is a CPU device whose ops run on `threads`.
    pub(crate) fn runs_on(&self, threads: &Threads) -> bool {
        self.with(|on| matches!(on, On::Cpu(cpu) if cpu.threads.same(threads)))
    }

    /// The threads of a CPU device (a GPU handle's once it went on on the
    /// CPU); `None` for a GPU.
    pub(crate) fn host_threads(&self) -> Option<Threads> {
        self.with(|on| match on {
            On::Cpu(cpu) => Some(cpu.threads.clone()),
            On::Gpu(_) => None,
        })
    }

    /// The GPU device this is now.
    pub(crate) fn gpu_context(&self) -> Option<Arc<GpuContext>> {
        self.with(|on| on.gpu().cloned())
    }

    fn gpu_handle(&self) -> Option<&Arc<GpuHandle>> {
        match &self.inner {
            Inner::Gpu(handle) => Some(handle),
            Inner::Cpu(_) => None,
        }
    }
}

/// A [`Device`] handle that does not keep its device open
/// ([`Device::downgrade`]): for a listener of [`Device::on_lost`], which the
/// device holds.
#[derive(Clone)]
pub struct WeakDevice {
    inner: WeakInner,
}

#[derive(Clone)]
enum WeakInner {
    Cpu(CpuDevice),
    Gpu(std::sync::Weak<GpuHandle>),
}

impl Device {
    /// A handle to this device that does not keep it open.
    pub fn downgrade(&self) -> WeakDevice {
        WeakDevice {
            inner: match &self.inner {
                Inner::Cpu(cpu) => WeakInner::Cpu(cpu.clone()),
                Inner::Gpu(handle) => WeakInner::Gpu(Arc::downgrade(handle)),
            },
        }
    }
}

impl WeakDevice {
    /// The device, while a [`Device`] handle to it (a tensor's included)
    /// lives; always the CPU for the CPU.
    pub fn upgrade(&self) -> Option<Device> {
        let inner = match &self.inner {
            WeakInner::Cpu(cpu) => Inner::Cpu(cpu.clone()),
            WeakInner::Gpu(handle) => Inner::Gpu(handle.upgrade()?),
        };
        Some(Device { inner })
    }
}

impl fmt::Debug for WeakDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.upgrade() {
            Some(device) => write!(f, "WeakDevice({device})"),
            None => write!(f, "WeakDevice(gone)"),
        }
    }
}

impl<'a> On<'a> {
    fn gpu(&self) -> Option<&'a Arc<GpuContext>> {
        match self {
            On::Gpu(ctx) => Some(ctx),
            On::Cpu(_) => None,
        }
    }
}

impl PartialEq for Device {
    /// The CPU equals the CPU (a GPU handle that went on on the CPU after
    /// its GPU was lost included: CPU tensors are one memory); GPU handles
    /// are equal when they are clones of one.
    fn eq(&self, other: &Device) -> bool {
        let same_handle = match (&self.inner, &other.inner) {
            (Inner::Gpu(a), Inner::Gpu(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_handle || (self.is_cpu() && other.is_cpu())
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({self})")
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.inner, self.gpu_context()) {
            (Inner::Cpu(_), _) => write!(f, "cpu"),
            (Inner::Gpu(handle), Some(ctx)) => {
                write!(f, "gpu#{}:{}", handle.id(), ctx.facts().name)
            }
            (Inner::Gpu(handle), None) => write!(f, "gpu#{}:cpu", handle.id()),
        }
    }
}
