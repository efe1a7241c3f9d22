//! What webtensor knows of the adapter it opened: names for
//! `Device::info`, and the limits every kernel family plans by.

use super::elementwise::params::MAX_OPERANDS;
use super::elementwise::program::ProgramLimits;
use super::matmul_tile_choice::MatmulPrecision;
use crate::dtype::KernelType;

/// Facts about the adapter, kept for `Device::info`.
#[derive(Debug, Clone)]
pub(crate) struct AdapterFacts {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub native_f16: bool,
    /// Kernels may use subgroup operations (see `GpuOptions::subgroups`).
    pub subgroups: bool,
    /// The fewest lanes a subgroup of this adapter has (4 to 128).
    pub subgroup_min_size: u32,
    /// The device writes GPU timestamps (`TIMESTAMP_QUERY`): autotuning
    /// times kernels by them.
    pub timestamps: bool,
    pub max_storage_binding: u64,
    pub max_buffer_size: u64,
    pub max_workgroups_per_dim: u32,
    pub max_storage_buffers: u32,
    /// The longest line one FFT kernel transforms (what two buffers of
    /// complex f32 per line in workgroup memory allow).
    pub max_fft_line: usize,
    /// Bytes of workgroup memory a kernel may declare.
    pub workgroup_bytes: u32,
    /// The largest uniform binding (a custom kernel's parameter block).
    pub max_uniform_binding: u64,
    /// Elements a thread of the strided, row and contiguous elementwise
    /// kernels takes at most (`elementwise::Access`): 32 on software
    /// adapters, 4 on others (see `context.rs`, `elementwise_run_for`).
    pub elementwise_run: u8,
    /// Threads the adapter keeps resident at once, about: what a grid of
    /// independent work (a full reduction's first stage) is sized to fill
    /// (see `context.rs`, `resident_threads_for`).
    pub resident_threads: usize,
    /// How long a wait polls the device before it blocks
    /// (`GpuOptions::spin_wait`; a browser's waits are its own).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub spin_wait: std::time::Duration,
    pub uniform_align: u32,
    /// Storage bindings start at multiples of this many bytes.
    pub storage_align: u32,
    /// webtensor's own kernels keep wgpu's runtime checks (see
    /// `GpuOptions::runtime_checks`).
    pub runtime_checks: bool,
    /// The fragment side `F` where the device was opened with cooperative
    /// matrices: the adapter lists `F` x `F` x `F` products of f16 into
    /// f32 (16, else 8) and has subgroups of one size (see
    /// `matmul/cooperative.rs`).
    pub cooperative: Option<u32>,
    /// How f32 products may compute (`GpuOptions::matmul_precision`).
    pub matmul_precision: MatmulPrecision,
}

impl AdapterFacts {
    /// The largest tensor buffer, in bytes: the device's largest buffer.
    /// Ops over a buffer larger than one storage binding bind it in
    /// windows (elementwise) or refuse it as `TooLarge` (see `Bound`).
    pub fn max_tensor_bytes(&self) -> u64 {
        self.max_buffer_size
    }

    /// True when kernels may use subgroups of at least `lanes` lanes.
    pub fn subgroups_of(&self, lanes: u32) -> bool {
        self.subgroups && self.subgroup_min_size >= lanes
    }

    /// True when products of `dtype` may run on cooperative matrices.
    pub fn cooperative_for(&self, dtype: KernelType) -> bool {
        self.cooperative.is_some()
            && match dtype {
                KernelType::F16 => true,
                KernelType::F32 => self.matmul_precision == MatmulPrecision::Fast,
                _ => false,
            }
    }

    /// What a fused kernel may bind on this device.
    pub fn program_limits(&self) -> ProgramLimits {
        ProgramLimits {
            bindings: (self.max_storage_buffers as usize).min(MAX_OPERANDS),
        }
    }
}
