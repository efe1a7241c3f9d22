//! Recording elementwise ops: from a [`Call`] to a [`RecordedOp`] in the
//! device's pending batch, and the dispatch grid.

use super::codegen::WORKGROUP_SIZE;
use super::command::Command;
use super::fusion::{OpArg, RecordedOp, TensorOperand};
use super::storage::GpuStorage;
use crate::backend::{Call, Input, Storage, TensorRef};
use crate::error::{Error, Result};
use std::sync::Arc;

/// Records `call` on the device that holds `out`.
///
/// # Errors
/// `Error::TooLarge` when the dispatch grid cannot cover the destination;
/// `Error::Gpu` when an input is not on this GPU; flush failures when the
/// recording reaches the flush threshold.
pub(crate) fn run(out: &GpuStorage, call: &Call) -> Result<()> {
    let ctx = &out.ctx;
    // Fails now, not at flush time, when the grid cannot cover the op.
    grid(call.out.layout.numel(), ctx.facts.max_workgroups_per_dim)?;
    let operand = |t: &TensorRef, s: &GpuStorage| TensorOperand {
        storage: Arc::downgrade(t.storage),
        buffer: s.buffer().clone(),
        buffer_id: s.buffer_id(),
        layout: t.layout.clone(),
        dtype: t.dtype,
    };
    let mut args = smallvec::SmallVec::new();
    for input in &call.inputs {
        args.push(match input {
            Input::Tensor(t) => {
                let Storage::Gpu(s) = &**t.storage else {
                    return Err(Error::internal("gpu kernel", "input is not on the GPU"));
                };
                OpArg::Tensor(operand(t, s))
            }
            Input::Scalar(s) => OpArg::Scalar(*s),
        });
    }
    let op = RecordedOp {
        kernel: call.kernel,
        out: operand(&call.out, out),
        args,
    };
    ctx.scheduler().record(ctx, Command::Elementwise(op))
}

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
