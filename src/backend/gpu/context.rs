//! One opened GPU: wgpu device and queue, the adapter's facts, the pipeline
//! cache and the scheduler of pending work.

use super::adapter_facts::AdapterFacts;
use super::bind_groups::GroupCounters;
use super::constants::Constants;
use super::faults::Faults;
use super::kernel::pipeline::{DEFAULT_PIPELINE_CACHE, PipelineCache, submit_scoped};
use super::lost::{Listener, Lost};
use super::matmul_tile_choice::{MatmulPrecision, MatmulTile, MatmulTuner};
use super::opening::{
    GpuOptions, elementwise_run_for, env_flag, env_setting, force_packed, instance,
    offers_cooperative, pick_adapter, resident_threads_for, spin_wait_for, use_subgroups,
};
use super::pool::{BufferPool, PoolCounters};
use super::scheduler::{DEFAULT_FLUSH_THRESHOLD, Scheduler, SchedulerCounters};
use super::storage::{Faults as Report, read_back};
use super::target::Target;
use super::upload_window::UploadWindow;
use crate::backend::Storage;
use crate::backend::kept::Kept;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// What a GPU device has done so far, for `Device::stats`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuCounters {
    pub scheduler: SchedulerCounters,
    pub groups: GroupCounters,
    pub pool: PoolCounters,
    /// Pipelines held compiled.
    pub pipelines: u64,
    /// Pipelines dropped for the cache's limit.
    pub pipelines_evicted: u64,
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
    /// Tables ops upload once and keep (see `constants.rs`).
    pub(super) constants: Constants,
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
    /// Uploads since the last submit (see `upload_window.rs`).
    pub(super) uploads: UploadWindow,
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
    /// The storages on this device that keep their data for a recovery.
    kept: Mutex<Vec<Weak<Kept>>>,
    /// Tensors made from host data keep a host copy (`Persist::HostCopy`).
    host_copies: AtomicBool,
}

/// The id of the next GPU device opened.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The largest storage binding the kernels index (see
/// `max_storage_binding`): 2^31 - 1 rounded down to whole words, the size
/// a storage binding takes.
const MAX_BINDING: u64 = i32::MAX as u64 & !3;

impl GpuContext {
    /// Opens the adapter chosen by `WGPU_ADAPTER_NAME` (a case-insensitive
    /// substring of the adapter name) or else the best one wgpu offers for
    /// the backends in `WGPU_BACKEND`, with the adapter's own limits.
    ///
    /// # Errors
    /// `Error::NoAdapter` when no adapter matches or the device cannot be
    /// opened; `Error::Argument` for a setting of the environment that is
    /// not understood (see `check_settings`).
    pub async fn open(options: &GpuOptions) -> Result<GpuContext> {
        const OP: &str = "Device::gpu";
        super::opening::check_settings(OP, |name| {
            super::opening::environment(std::env::var(name))
        })?;
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
        let cooperative = offers_cooperative(&adapter, options).filter(|_| native_f16);
        let mut required_features = wgpu::Features::empty();
        required_features.set(wgpu::Features::SHADER_F16, native_f16);
        required_features.set(
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            cooperative.is_some(),
        );
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
                experimental_features: if cooperative.is_some() {
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
        Ok(Self::assemble(
            &info,
            device,
            queue,
            options,
            Some(cooperative),
        ))
    }

    /// A context on a device and queue the application opened (see
    /// `Device::from_wgpu`): limits and features are the device's own, f16
    /// is native when it was opened with SHADER_F16. The application keeps
    /// its handler of uncaptured errors.
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for a setting of the environment that
    /// is not understood (see `check_settings`), as [`GpuContext::open`],
    /// or a device opened without compute shaders or storage buffers
    /// (WebGL2's downlevel limits: every kernel would fail).
    pub fn from_wgpu(
        op: &'static str,
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: &GpuOptions,
    ) -> Result<GpuContext> {
        super::opening::check_settings(op, |name| {
            super::opening::environment(std::env::var(name))
        })?;
        super::opening::check_compute(op, &device.limits())?;
        Ok(Self::assemble(info, device, queue, options, None))
    }

    /// The context of an opened device. `opened`: webtensor opened it,
    /// with cooperative matrices of this fragment side or none, so it
    /// takes the device's uncaptured errors (to report them from the next
    /// readback or sync); `None` for an application's device.
    fn assemble(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: &GpuOptions,
        opened: Option<Option<u32>>,
    ) -> GpuContext {
        let own_device = opened.is_some();
        let limits = device.limits();
        // What the device was opened with, by webtensor or the application.
        let features = device.features();
        let native_f16 = features.contains(wgpu::Features::SHADER_F16) && !force_packed(options);
        let subgroups = use_subgroups(options, features);
        // The fewest lanes the subgroup kernels are planned for (see
        // `GpuOptions::planned_lanes`).
        let lanes = options.planned_lanes.map_or(info.subgroup_min_size, |l| {
            l.next_power_of_two().max(4).min(info.subgroup_min_size)
        });
        let facts = AdapterFacts {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
            native_f16,
            subgroups,
            subgroup_min_size: lanes,
            // Read by blocking on the queue: native only.
            timestamps: cfg!(not(target_arch = "wasm32"))
                && features.contains(wgpu::Features::TIMESTAMP_QUERY),
            // At most 2^31 - 4 bytes, about what Vulkan and DX12 report: the
            // kernels index a binding in 32-bit words (signed where views
            // step backwards), and Metal reports its whole buffer size
            // (past 4 GiB), where a u32 offset would wrap; larger operands
            // go in parts, as on the other backends.
            max_storage_binding: options
                .max_binding_bytes
                .or_else(|| env_setting("WEBTENSOR_MAX_BINDING"))
                .map_or(limits.max_storage_buffer_binding_size, |cap: u64| {
                    // A window holds any one element after an aligned start;
                    // a binding's size is whole words.
                    let least = 2 * u64::from(limits.min_storage_buffer_offset_alignment);
                    cap.max(least).min(limits.max_storage_buffer_binding_size) & !3
                })
                .min(MAX_BINDING),
            max_buffer_size: limits.max_buffer_size,
            max_workgroups_per_dim: limits.max_compute_workgroups_per_dimension,
            max_storage_buffers: limits.max_storage_buffers_per_shader_stage,
            max_fft_line: {
                let fits = super::fft::plan::max_line(limits.max_compute_workgroup_storage_size);
                options.max_fft_line.map_or(fits, |m| m.clamp(16, fits))
            },
            workgroup_bytes: limits.max_compute_workgroup_storage_size,
            max_uniform_binding: limits.max_uniform_buffer_binding_size,
            elementwise_run: options.elementwise_run.map_or_else(
                || elementwise_run_for(info.device_type),
                |run| run.clamp(1, 64),
            ),
            resident_threads: options
                .resident_threads
                .map_or_else(|| resident_threads_for(info.device_type), |r| r.max(256)),
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
            cooperative: opened.flatten().filter(|_| {
                native_f16
                    && features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
                    && lanes == info.subgroup_min_size
            }),
            matmul_precision: options
                .matmul_precision
                .or_else(|| {
                    MatmulPrecision::parse(&std::env::var("WEBTENSOR_MATMUL_PRECISION").ok()?)
                })
                .unwrap_or_default(),
        };
        let runtime_checks = facts.runtime_checks;
        let pool = BufferPool::new(facts.max_storage_binding);
        pool.set_cap(
            options
                .memory_cap
                .or_else(|| env_setting("WEBTENSOR_MEMORY_CAP")),
        );
        let threshold = options
            .flush_threshold
            .or_else(|| env_setting("WEBTENSOR_FLUSH_THRESHOLD"))
            .unwrap_or(DEFAULT_FLUSH_THRESHOLD);
        let pipeline_cache = options
            .pipeline_cache
            .or_else(|| env_setting("WEBTENSOR_PIPELINE_CACHE"))
            .unwrap_or(DEFAULT_PIPELINE_CACHE);
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
            constants: Constants::default(),
            device_error,
            lost,
            device,
            queue,
            facts,
            pipelines: PipelineCache::new(runtime_checks, pipeline_cache),
            pool,
            scheduler: Mutex::new(Scheduler::new(id, threshold, fusion)),
            matmul_tile: Mutex::new(matmul_tile),
            tuner: MatmulTuner::new(autotune, options.sabotage_matmul)
                .sabotage_quant(options.sabotage_quant),
            open_batch: AtomicU64::new(0),
            id,
            custom_sweep: AtomicU64::new(0),
            shared: Mutex::default(),
            kept: Mutex::default(),
            host_copies: AtomicBool::new(false),
            bytes_uploaded: AtomicU64::new(0),
            uploads: UploadWindow::default(),
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

    /// Polls the device once, so that a loss wgpu only reports at a poll
    /// (a device destroyed before it was handed over) is seen; true when
    /// it is lost.
    pub fn poll_lost(&self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.is_lost()
    }

    /// `Error::DeviceLost` naming `op` on this (lost) device.
    #[cold]
    pub fn lost_error(&self, op: &'static str) -> Error {
        self.lost.error(op)
    }

    /// Why the device was lost (empty while it is not).
    pub fn lost_reason(&self) -> &str {
        self.lost.reason()
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
    /// a pending callback fire first (natively, a wait of up to two
    /// seconds, and of at least one for a failure on a device not lost:
    /// errors are the slow path).
    ///
    /// # Errors
    /// As described.
    pub fn explain<T>(&self, op: &'static str, result: Result<T>) -> Result<T> {
        #[cfg(not(target_arch = "wasm32"))]
        if matches!(result, Err(Error::Gpu { .. })) && !self.lost.is_lost() {
            self.await_lost_callback();
        }
        if self.lost.is_lost() {
            return Err(self.lost.error(op));
        }
        result
    }

    /// [`GpuContext::explain`] for a future: in a browser a map that
    /// failed because the device was lost may reject before the lost
    /// promise resolves, so the page's tasks run first (a few turns, until
    /// the loss is known).
    ///
    /// # Errors
    /// As [`GpuContext::explain`].
    pub async fn explain_async<T>(&self, op: &'static str, result: Result<T>) -> Result<T> {
        #[cfg(target_arch = "wasm32")]
        for _ in 0..8 {
            if !matches!(result, Err(Error::Gpu { .. })) || self.lost.is_lost() {
                break;
            }
            crate::clock::next_task().await;
        }
        self.explain(op, result)
    }

    /// Waits for wgpu's lost callback after a failure that may be the
    /// loss: until the queue is empty (at most a second), then a second
    /// more (a loaded machine may hold the thread that fires it that long).
    /// wgpu tells of a destroyed device once its queue is empty, from the
    /// poll that finds it so, and fires the callback once: when another
    /// thread's poll took it, that thread fires it a moment later, and this
    /// one's poll finds nothing to fire.
    #[cfg(not(target_arch = "wasm32"))]
    #[cold]
    fn await_lost_callback(&self) {
        use std::time::{Duration, Instant};
        let _ = self.device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(Duration::from_secs(1)),
        });
        let grace = Instant::now() + Duration::from_secs(1);
        while !self.lost.is_lost() && Instant::now() < grace {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Id of the batch being recorded.
    pub fn open_batch(&self) -> u64 {
        self.open_batch.load(Ordering::Acquire)
    }

    /// The counter of [`GpuContext::open_batch`], for a release that must
    /// read it only once the buffer is given back (see `buffer_claim.rs`).
    pub fn open_batch_counter(&self) -> &AtomicU64 {
        &self.open_batch
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
        let mut counters = scheduler.counters;
        counters.submits += self.uploads.submits();
        GpuCounters {
            scheduler: counters,
            groups: scheduler.groups.counters,
            pool: self.pool.counters(),
            pipelines: self.pipelines.len() as u64,
            pipelines_evicted: self.pipelines.evicted(),
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

    /// Drops the pool's idle buffers, the kept tables (see `constants.rs`)
    /// and the kept bind groups that would hold them alive.
    pub fn release_pooled_memory(&self) {
        self.constants.clear(&self.pool, &self.open_batch);
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
        self.explain_async(op, waited).await
    }

    async fn submit_and_wait(&self, op: &'static str) -> Result<()> {
        // With the fault record armed, its readback is the wait: the copy
        // rides the flush's submit, whose end the map waits for (one submit
        // and one wait, not the flush's and then the record's).
        if self.faults.is_armed() {
            read_back(self, op, 0, 0..0, Report::Report, |_, _| {}).await?;
            self.scheduler().profile_mark();
            return self.check_device_error(op);
        }
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
            uploads: &self.uploads,
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

    /// True when `buffer` was handed to the application or wrapped from it
    /// (and its storage lives).
    pub fn is_shared(&self, buffer: &wgpu::Buffer) -> bool {
        self.forget_unshared();
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.iter().any(|(b, _)| b == buffer)
    }

    /// Remembers that `buffer` is `storage`'s, handed out or wrapped, and
    /// returns the storage it is: another that lives and was remembered
    /// first (another thread's wrap of it, between its lookup and this),
    /// else `storage`.
    pub fn share(&self, buffer: &wgpu::Buffer, storage: &Arc<Storage>) -> Arc<Storage> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.retain(|(_, s)| s.strong_count() > 0);
        if let Some(at) = shared.iter().position(|(b, _)| b == buffer) {
            if let Some(known) = shared[at].1.upgrade() {
                return known;
            }
            shared.swap_remove(at);
        }
        shared.push((buffer.clone(), Arc::downgrade(storage)));
        Arc::clone(storage)
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

    /// Takes the settings the application changed on `old`, the device
    /// this one replaces after a loss (flush threshold, fusion, matmul
    /// tile, memory cap), so that the handle works on as it did.
    pub fn carry_settings(&self, old: &GpuContext) {
        self.set_flush_threshold(old.flush_threshold());
        self.set_fusion(old.fusion_enabled());
        self.set_matmul_tile(old.matmul_tile());
        self.set_memory_cap(old.pool.cap());
        self.set_host_copies(old.host_copies());
    }

    /// Whether tensors made from host data keep a host copy.
    pub fn host_copies(&self) -> bool {
        self.host_copies.load(Ordering::Relaxed)
    }

    /// Sets whether tensors made from host data keep a host copy.
    pub fn set_host_copies(&self, on: bool) {
        self.host_copies.store(on, Ordering::Relaxed);
    }

    /// Remembers `kept`, a storage's of this device, for a recovery.
    pub fn register_kept(&self, kept: &Arc<Kept>) {
        let mut all = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|k| k.strong_count() > 0);
        all.push(Arc::downgrade(kept));
    }

    /// The kept storages of this device still alive.
    pub fn kept_storages(&self) -> Vec<Arc<Kept>> {
        let all = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        all.iter().filter_map(Weak::upgrade).collect()
    }

    /// Lets go of what this device holds once another replaced it: marks
    /// it lost for `reason` when it is not (an application's device it
    /// replaced while it worked: from now on the tensors still on it fail
    /// as on a lost one; its loss listeners hear nothing), abandons its pending work (whose outputs are
    /// poisoned) and drops its idle buffers, kept tables, bind groups and
    /// pipelines: what stays is held by the tensors still on it.
    pub fn retire(&self, reason: &str) {
        self.lost.mark_retired(reason.to_string());
        {
            let mut scheduler = self.scheduler();
            if scheduler.has_pending() {
                // On a lost device a flush submits nothing: it abandons.
                let _ = scheduler.flush(&self.target(), |_| {});
            }
        }
        self.release_pooled_memory();
        self.pipelines.clear();
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
