//! What a device is and what it has done: [`DeviceInfo`], [`DeviceKind`]
//! and [`DeviceStats`].

#[cfg(doc)]
use super::Device;
use crate::backend::gpu::{MatmulPrecision, TunedMatmul};
use std::fmt;

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
    /// Bytes of workgroup memory one workgroup may use (0 for the CPU):
    /// how many lines an FFT's workgroup holds, the longest line one FFT
    /// kernel transforms, the tiles attention takes.
    pub workgroup_memory: u32,
    /// Why a device is the CPU, when it was to be a GPU: a default device
    /// (no adapter, only a software adapter, or `WEBTENSOR_DEVICE=cpu`), or
    /// a GPU handle that a recovery found no adapter for.
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
    /// opened; 0 for the CPU, but a GPU handle now on the CPU keeps its
    /// own). Devices print it: `gpu#2:llvmpipe ...`.
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
                "gpu#{}: {} ({}, {}, driver {:?}), f16 {}, subgroups {} (at least {} lanes), autotune {} (timed by {}), cooperative matrices {}, f32 matmul {:?}, runtime checks {}, max binding {} MiB, max buffer {} MiB, max workgroups/dim {}, workgroup memory {} KiB",
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
                self.max_workgroups_per_dim,
                self.workgroup_memory >> 10
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

/// Counters of the work a GPU device has done and the memory it holds (on
/// the CPU all zero but the host pool's buffer counts and `bytes_pooled`).
/// The memory figures are in pool buckets (a buffer is rounded up to at
/// most 25% over the request); `bytes_uploaded` in whole 4-byte words.
/// A device's own first work counts too: the probe products that check a
/// product kernel before its first use, and autotuning's timed runs, make
/// their submits, dispatches, uploads and readbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceStats {
    /// Queue submissions (webtensor's: batches, captured steps' runs, the
    /// empty ones that let uploads go, interop copies and buffer checks).
    pub submits: u64,
    /// Commands recorded: elementwise ops, copies, casts and fills, and the
    /// other families' kernels.
    pub ops_recorded: u64,
    /// Kernel dispatches encoded: ops recorded minus ops fused away (and
    /// minus ops over no elements), plus one per further window of an
    /// elementwise op split to fit the device's binding.
    pub dispatches: u64,
    /// Pipelines held compiled now (the cache's size: custom kernels let
    /// go and a retired device's drop out).
    pub pipelines: u64,
    /// Pipelines dropped because the cache held its limit
    /// (`GpuOptions::pipeline_cache`), least recently used first; a use
    /// of one after that compiles it again. Growing steadily, it says the
    /// program's kernels do not fit: raise the limit.
    pub pipelines_evicted: u64,
    /// Fused chains of two or more ops run: dispatches of such a kernel,
    /// a chain split into windows (to fit the binding) counted once.
    pub fused_kernels: u64,
    /// Ops that ran inside another op's fused kernel instead of their own
    /// (once for a chain split into windows).
    pub fused_ops: u64,
    /// Buffers the pool created for tensors, op scratch and readbacks
    /// (not the device's few of its own: parameter blocks, the fault
    /// record, timestamp queries); on the CPU, host buffers of 64 KiB to
    /// 256 MiB the pool could not serve (see `bytes_pooled`).
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
    /// dispatch on the same buffers; a captured step's at its capture).
    pub bind_groups_created: u64,
    /// Dispatches that reused a kept bind group (every dispatch of a
    /// captured step's later runs).
    pub bind_groups_reused: u64,
    /// Runs of captured steps ([`Device::capture`], [`Graph::run`](crate::Graph::run)),
    /// the run at capture included; each is one submit (after one more
    /// for work pending before it).
    pub graph_runs: u64,
    /// Timed runs of matmul autotuning (warm-ups included).
    pub tuning_runs: u64,
    /// Nanoseconds the timed runs of autotuning measured (GPU time where
    /// the device writes timestamps, else the host's clock; warm-ups are
    /// not measured).
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
    /// to check, fault-record check, checkpoint, profile's timestamps, and
    /// a product kernel's check or autotuning's timing (see above).
    pub readbacks: u64,
    /// Times a lost GPU was replaced ([`Device::recover`]); the other
    /// figures are those of the device it is now.
    ///
    /// [`Device::recover`]: crate::Device::recover
    pub recoveries: u64,
}
