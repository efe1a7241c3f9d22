//! What webtensor knows of the adapter it opened: names for
//! `Device::info`, and the limits every kernel family plans by.

use super::elementwise::params::MAX_OPERANDS;
use super::elementwise::program::ProgramLimits;

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
    /// The largest uniform binding (a custom kernel's parameter block).
    pub max_uniform_binding: u64,
    pub uniform_align: u32,
    /// Storage bindings start at multiples of this many bytes.
    pub storage_align: u32,
    /// webtensor's own kernels keep wgpu's runtime checks (see
    /// `GpuOptions::runtime_checks`).
    pub runtime_checks: bool,
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

    /// What a fused kernel may bind on this device.
    pub fn program_limits(&self) -> ProgramLimits {
        ProgramLimits {
            bindings: (self.max_storage_buffers as usize).min(MAX_OPERANDS),
        }
    }
}
