//! What the scheduler records: elementwise ops, which fusion may merge, and
//! kernel commands of the other families (reductions, matmul), which run as
//! recorded.

use super::context::GpuContext;
use super::faults::FAULT_BUFFER_ID;
use super::fusion::RecordedOp;
use super::pipeline::{Pipeline, PipelineKey, PipelineSpec};
use crate::backend::Storage;
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::sync::{Arc, Weak};

/// One recorded GPU command.
// Elementwise ops are the common case and the large variant: boxing them
// would add an allocation per recorded op.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    Elementwise(RecordedOp),
    Kernel(KernelCommand),
}

/// A storage buffer bound to a kernel command.
pub(crate) struct Bound {
    /// Identity and liveness of the storage, as for elementwise operands.
    pub storage: Weak<Storage>,
    pub buffer: wgpu::Buffer,
    /// The pool's id of `buffer`.
    pub buffer_id: u64,
    /// True when the kernel may write it.
    pub writes: bool,
}

impl Bound {
    /// `storage`'s buffer, bound for reading or (with `writes`) writing.
    ///
    /// # Errors
    /// `Error::Gpu` naming `op` when the storage is not on the GPU.
    pub fn new(op: &'static str, storage: &Arc<Storage>, writes: bool) -> Result<Bound> {
        let Storage::Gpu(s) = &**storage else {
            return Err(Error::internal(op, "operand is not on the GPU"));
        };
        Ok(Bound {
            storage: Arc::downgrade(storage),
            buffer: s.buffer().clone(),
            buffer_id: s.buffer_id(),
            writes,
        })
    }
}

/// A dispatch whose pipeline, parameters and grid are fixed at recording:
/// bindings 1.. are `bindings` in order, binding 0 its parameter block.
pub(crate) struct KernelCommand {
    pub pipeline: Arc<Pipeline>,
    pub params: Vec<u8>,
    pub bindings: SmallVec<[Bound; 4]>,
    /// Workgroups in x, y and z.
    pub groups: [u32; 3],
}

impl Command {
    /// The elementwise op, if this is one.
    pub fn elementwise(&self) -> Option<&RecordedOp> {
        match self {
            Command::Elementwise(op) => Some(op),
            Command::Kernel(_) => None,
        }
    }
}

/// Records one dispatch of the pipeline `key` over `groups` workgroups,
/// building the pipeline on first use from `source()` (entry point `entry`,
/// a parameter block of `params_size` bytes, storage bindings in the order
/// and access of `bindings`).
///
/// # Errors
/// `Error::Gpu` when the shader fails to compile; scheduler flush failures.
pub(crate) fn record_kernel(
    ctx: &GpuContext,
    key: PipelineKey,
    (label, entry, params_size): (&'static str, &'static str, u64),
    source: impl FnOnce() -> String,
    params: Vec<u8>,
    bindings: SmallVec<[Bound; 4]>,
    groups: [u32; 3],
) -> Result<()> {
    debug_assert_eq!(params.len() as u64, params_size);
    let pipeline = ctx.pipelines.get(&ctx.device, key, || PipelineSpec {
        label,
        source: source(),
        entry,
        params_size,
        read_only: bindings.iter().map(|b| !b.writes).collect(),
    })?;
    let mut scheduler = ctx.scheduler();
    if bindings.iter().any(|b| b.buffer_id == FAULT_BUFFER_ID) {
        ctx.faults.arm();
    }
    scheduler.record(
        ctx,
        Command::Kernel(KernelCommand {
            pipeline,
            params,
            bindings,
            groups,
        }),
    )
}
