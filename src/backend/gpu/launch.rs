//! Recording one kernel command: the launch helper every kernel family
//! shares (the grid it covers comes from `grid.rs`).

use super::command::{Bound, Command, KernelCommand};
use super::context::GpuContext;
use super::pipeline::{PipelineKey, PipelineSpec};
use crate::error::Result;
use smallvec::SmallVec;

/// Records one dispatch of the pipeline `key` over `groups` workgroups,
/// building the pipeline on first use from `source()` (entry point `entry`,
/// a parameter block of `params_size` bytes, storage bindings in the order
/// and access of `bindings`).
///
/// # Errors
/// `Error::Gpu` when the shader fails to compile; scheduler flush failures.
pub(crate) fn record_kernel(
    ctx: &GpuContext,
    key: &impl PipelineKey,
    (label, entry, params_size): (&'static str, &'static str, u64),
    source: impl FnOnce() -> Result<String>,
    params: Vec<u8>,
    bindings: SmallVec<[Bound; 4]>,
    groups: [u32; 3],
) -> Result<()> {
    debug_assert_eq!(params.len() as u64, params_size);
    let pipeline = ctx.pipelines.get(&ctx.device, key, || {
        Ok(PipelineSpec {
            label,
            source: source()?,
            entry,
            params_size,
            read_only: bindings.iter().map(|b| !b.writes).collect(),
        })
    })?;
    let mut scheduler = ctx.scheduler();
    if bindings.iter().any(|b| b.fault_record) {
        ctx.faults.arm();
    }
    scheduler.record(
        &ctx.target(),
        Command::Kernel(KernelCommand {
            pipeline,
            params,
            bindings,
            groups,
        }),
    )
}
