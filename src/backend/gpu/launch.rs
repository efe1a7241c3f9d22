//! Launch helpers every kernel family shares: the dispatch grid and the
//! recording of one kernel command.

use super::command::{Bound, Command, KernelCommand};
use super::context::GpuContext;
use super::pipeline::{PipelineKey, PipelineSpec};
use crate::error::{Error, Result};
use smallvec::SmallVec;

/// Threads per workgroup of every 1-D kernel (elementwise, reduce, scan,
/// indexing).
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// A 2-D grid of 64-thread workgroups covering `numel` threads, within the
/// per-dimension limit.
///
/// # Errors
/// `Error::TooLarge` when even a square grid cannot cover `numel`.
pub(crate) fn grid(numel: usize, max_per_dim: u32) -> Result<[u32; 2]> {
    let groups = numel.div_ceil(WORKGROUP_SIZE as usize);
    let x = groups.min(max_per_dim as usize).max(1);
    let y = groups.div_ceil(x);
    if y > max_per_dim as usize {
        return Err(Error::TooLarge {
            op: "dispatch",
            what: "workgroups",
            requested: groups as u64,
            limit: max_per_dim as u64 * max_per_dim as u64,
        });
    }
    Ok([x as u32, y as u32])
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
        ctx,
        Command::Kernel(KernelCommand {
            pipeline,
            params,
            bindings,
            groups,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_goes_two_dimensional_past_the_limit() {
        assert_eq!(grid(64, 65535).unwrap(), [1, 1]);
        assert_eq!(grid(65535 * 64 + 1, 65535).unwrap(), [65535, 2]);
        assert!(grid(usize::MAX / 2, 65535).is_err());
    }
}
