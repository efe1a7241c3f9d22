//! Compiled pipelines, one per kernel family's key, built on first use.
//!
//! Every kernel family binds the same way: binding 0 is its parameter block
//! (a uniform read at a dynamic offset into the batch's arena), bindings 1..
//! are storage buffers. A family describes one pipeline with a
//! [`PipelineSpec`] and keys it with a type of its own (anything
//! [`PipelineKey`]); the cache compiles it once per key and names no family:
//! keys of different types never match.
//!
//! The cache holds at most its limit of pipelines (`GpuOptions::
//! pipeline_cache`): fused elementwise programs are keys too, and a
//! process that runs ever new ones (a fuzzer, a graph rebuilt per
//! request) would otherwise keep every one, megabytes each on some
//! drivers. Past the limit the least recently used goes; its next use
//! compiles it again.

use super::library::with_used_math;
use crate::error::{Error, Result};
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::any::{Any, TypeId};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Pipelines a device keeps when neither the options nor
/// `WEBTENSOR_PIPELINE_CACHE` say.
pub(crate) const DEFAULT_PIPELINE_CACHE: usize = 1024;

/// What a kernel family keys its pipelines with: everything that selects
/// a distinct pipeline (never shapes or strides, which are parameters).
pub(crate) trait PipelineKey: Any + Debug + Clone + Eq + Hash + Send + Sync {}

impl<K: Any + Debug + Clone + Eq + Hash + Send + Sync> PipelineKey for K {}

/// What a pipeline is built from.
pub(crate) struct PipelineSpec {
    pub label: &'static str,
    pub source: String,
    /// The entry point to run.
    pub entry: &'static str,
    /// Size of the parameter block at binding 0.
    pub params_size: u64,
    /// Per storage binding 1, 2, ...: true when the kernel only reads it.
    pub read_only: SmallVec<[bool; 4]>,
    /// The kernel is webtensor's own, written so that no runtime check can
    /// fire (see the GPU backend's module doc): unless the device keeps
    /// the checks (`GpuOptions::runtime_checks`), it is built without them
    /// and without zeroing workgroup memory. False for custom kernels.
    pub trusted: bool,
}

/// A compute pipeline and the bind group layout its dispatches use.
pub(crate) struct Pipeline {
    /// The kernel family (its label without `webtensor `): what profiles
    /// call its dispatches.
    pub name: &'static str,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    /// Size of the parameter block each dispatch binds.
    pub params_size: u64,
    /// Per storage binding 1, 2, ...: true when the kernel only reads it.
    pub read_only: SmallVec<[bool; 4]>,
}

/// A stored key, compared by downcasting to the looked-up key's type.
type StoredKey = Box<dyn Any + Send + Sync>;

/// One key's pipeline, built by the first thread that needs it while the
/// others that need the same key wait on this slot's lock (not on the
/// cache's); once built, finding it takes no lock of its own.
#[derive(Default)]
struct SlotState {
    built: OnceLock<Arc<Pipeline>>,
    /// Held while the pipeline is built; only its holder sets `built`.
    building: Mutex<()>,
    /// The cache's clock at the slot's last lookup.
    used: AtomicU64,
}

type Slot = Arc<SlotState>;

/// The pipelines whose keys share one hash.
type Bucket = SmallVec<[(StoredKey, Slot); 1]>;

/// The cache's slots and its clock.
#[derive(Default)]
struct Slots {
    map: FxHashMap<u64, Bucket>,
    /// Slots in `map`, built or not.
    held: usize,
    /// Lookups so far: orders the slots by their last use.
    clock: u64,
}

impl Slots {
    /// Drops the least recently used slot (a pipeline being built is
    /// still handed to the threads that wait for it, then let go); false
    /// when none is held.
    fn drop_oldest(&mut self) -> bool {
        let oldest = self
            .map
            .iter()
            .flat_map(|(h, bucket)| {
                bucket
                    .iter()
                    .enumerate()
                    .map(move |(i, (_, slot))| (slot.used.load(Ordering::Relaxed), *h, i))
            })
            .min();
        if let Some((_, h, i)) = oldest {
            let bucket = self.map.get_mut(&h).expect("the slot's bucket");
            bucket.swap_remove(i);
            if bucket.is_empty() {
                self.map.remove(&h);
            }
            self.held -= 1;
        }
        oldest.is_some()
    }
}

/// Pipelines by key. Strides and shapes are parameters, so the cache stays
/// small: one entry per (program, dtypes, storage modes, contiguity). Keys
/// are bucketed by a hash of their type and value, and a lookup allocates
/// nothing. The cache's lock is held only to find or add a key's slot: a
/// slow compile stalls only the threads that wait for that pipeline.
pub(crate) struct PipelineCache {
    slots: Mutex<Slots>,
    /// Trusted kernels keep wgpu's runtime checks too.
    runtime_checks: bool,
    /// Slots held at most (at least 1).
    limit: usize,
    /// Slots dropped for the limit.
    evicted: AtomicU64,
}

/// The bucket of `key`: its type and value hashed together.
fn bucket<K: PipelineKey>(key: &K) -> u64 {
    let mut h = FxHasher::default();
    TypeId::of::<K>().hash(&mut h);
    key.hash(&mut h);
    h.finish()
}

impl PipelineCache {
    /// An empty cache holding at most `limit` pipelines (at least 1);
    /// `runtime_checks` keeps wgpu's checks in every kernel, trusted or
    /// not.
    pub fn new(runtime_checks: bool, limit: usize) -> PipelineCache {
        PipelineCache {
            slots: Mutex::default(),
            runtime_checks,
            limit: limit.max(1),
            evicted: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pipeline for `key`, built from `spec()` on first use.
    ///
    /// # Errors
    /// `Error::Gpu` when the generated shader fails to compile (a bug).
    pub fn get<K: PipelineKey>(
        &self,
        device: &wgpu::Device,
        key: &K,
        spec: impl FnOnce() -> Result<PipelineSpec>,
    ) -> Result<Arc<Pipeline>> {
        let slot = {
            let h = bucket(key);
            let mut slots = self.lock();
            slots.clock += 1;
            let now = slots.clock;
            let entries = slots.map.entry(h).or_default();
            match entries
                .iter()
                .find(|(k, _)| k.downcast_ref::<K>() == Some(key))
            {
                Some((_, slot)) => {
                    slot.used.store(now, Ordering::Relaxed);
                    match slot.built.get() {
                        Some(p) => return Ok(p.clone()),
                        None => slot.clone(),
                    }
                }
                None => {
                    let slot = Slot::default();
                    slot.used.store(now, Ordering::Relaxed);
                    entries.push((Box::new(key.clone()), slot.clone()));
                    slots.held += 1;
                    // The new slot is the most recently used: never the
                    // one dropped while another is held.
                    while slots.held > self.limit && slots.drop_oldest() {
                        self.evicted.fetch_add(1, Ordering::Relaxed);
                    }
                    slot
                }
            }
        };
        let _building = slot.building.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = slot.built.get() {
            return Ok(p.clone());
        }
        // A failed build leaves the slot empty: the next use tries again.
        let spec = spec()?;
        let checked = self.runtime_checks || !spec.trusted;
        // An application's WGSL compiles on a deep stack (see
        // `deep_stack.rs`); webtensor's own is shallow.
        let built = match spec.trusted {
            true => build(device, &spec, checked),
            false => super::deep_stack::on_deep_stack(|| build(device, &spec, checked)),
        };
        let pipeline = Arc::new(built.map_err(|e| match e {
            Error::Gpu { op, msg } => Error::Gpu {
                op,
                msg: format!("{key:?}: {msg}"),
            },
            other => other,
        })?);
        let _ = slot.built.set(pipeline.clone());
        Ok(pipeline)
    }

    /// Drops the pipelines of keys of type `K` for which `keep` is false
    /// (dispatches already recorded keep theirs until they are done).
    pub fn retain<K: PipelineKey>(&self, mut keep: impl FnMut(&K) -> bool) {
        let mut slots = self.lock();
        slots.map.retain(|_, entries| {
            entries.retain(|(k, _)| k.downcast_ref::<K>().is_none_or(&mut keep));
            !entries.is_empty()
        });
        slots.held = slots.map.values().map(|b| b.len()).sum();
    }

    /// Drops every pipeline (those of dispatches already recorded stay
    /// with them until they are done).
    pub fn clear(&self) {
        let mut slots = self.lock();
        slots.map.clear();
        slots.held = 0;
    }

    /// Number of pipelines compiled so far (and not dropped).
    pub fn len(&self) -> usize {
        self.lock()
            .map
            .values()
            .flatten()
            // A slot being built is not set yet: not counted.
            .filter(|(_, slot)| slot.built.get().is_some())
            .count()
    }

    /// Pipelines dropped so far because the cache held its limit.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// The runtime checks a trusted kernel is built with: none, but the guard
/// of integer division (its divisors include values the user passes).
fn trusted_checks() -> wgpu::ShaderRuntimeChecks {
    // SAFETY: only webtensor's own kernels are built so. Every index they
    // take into a buffer, a workgroup array or a private array is in range
    // by construction, every loop is bounded by its parameters (see the
    // GPU backend's module doc, "Runtime checks"); integer division keeps
    // its guard.
    let mut checks = unsafe { wgpu::ShaderRuntimeChecks::all(false) };
    checks.int_div_checks = true;
    checks
}

/// Builds `spec`'s pipeline, with wgpu's runtime checks when `checked`
/// (else as [`trusted_checks`], without zeroing workgroup memory).
fn build(device: &wgpu::Device, spec: &PipelineSpec, checked: bool) -> Result<Pipeline> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    // webtensor's own kernels drop the math they never call; a custom
    // kernel compiles as written, so that errors name the user's lines.
    let source = if spec.trusted {
        with_used_math(&spec.source).into()
    } else {
        spec.source.as_str().into()
    };
    let descriptor = wgpu::ShaderModuleDescriptor {
        label: Some(spec.label),
        source: wgpu::ShaderSource::Wgsl(source),
    };
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(bytes) = super::workgroup_memory::bytes(&spec.source, spec.entry) {
        let limit = u64::from(device.limits().max_compute_workgroup_storage_size);
        if bytes > limit {
            return Err(Error::gpu(
                "pipeline",
                format!(
                    "{} ({}) uses {bytes} bytes of workgroup memory; the device allows {limit}",
                    spec.label, spec.entry
                ),
            ));
        }
    }
    let module = if checked {
        device.create_shader_module(descriptor)
    } else {
        // SAFETY: `spec` is a trusted kernel (see `trusted_checks`).
        unsafe { device.create_shader_module_trusted(descriptor, trusted_checks()) }
    };
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: wgpu::BufferSize::new(spec.params_size),
        },
        count: None,
    }];
    for (k, &read_only) in spec.read_only.iter().enumerate() {
        entries.push(wgpu::BindGroupLayoutEntry {
            binding: 1 + k as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        });
    }
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(spec.label),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(spec.label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(spec.label),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(spec.entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            // A trusted kernel writes its workgroup arrays before reading.
            zero_initialize_workgroup_memory: checked,
            ..Default::default()
        },
        cache: None,
    });
    if let Some(err) = pop_now(scope) {
        return Err(Error::gpu("pipeline", err.to_string()));
    }
    Ok(Pipeline {
        name: spec.label.strip_prefix("webtensor ").unwrap_or(spec.label),
        pipeline,
        layout,
        params_size: spec.params_size,
        read_only: spec.read_only.clone(),
    })
}

/// Pops an error scope without blocking: on native the result is ready at
/// once for validation errors; on the web it is not awaited and what the
/// scope caught is dropped (an object it made invalid fails again where
/// it is used, an error [`submit_scoped`] catches).
pub(crate) fn pop_now(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    use futures::FutureExt;
    scope.pop().now_or_never().flatten()
}

/// Runs `submit` and returns its result with a future for the validation
/// errors the work it recorded and submitted raised.
///
/// On the web an error scope is around `submit`, popped as it returns
/// (other tasks may push scopes of their own while a readback awaits),
/// and the caller awaits its promise with the readback: a browser may
/// deliver an uncaptured error's event after the readback has resolved,
/// so the device's error handler alone would miss it. Natively such
/// errors reach the device's handler before `submit` returns, and the
/// future is ready at once with `None`.
pub(crate) fn submit_scoped(
    device: &wgpu::Device,
    submit: &mut dyn FnMut() -> Result<()>,
) -> (
    Result<()>,
    impl Future<Output = Option<wgpu::Error>> + use<>,
) {
    #[cfg(target_arch = "wasm32")]
    {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = submit();
        (result, scope.pop())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = device;
        (submit(), std::future::ready(None))
    }
}
