//! Recording elementwise ops: from a [`Call`] to a [`RecordedOp`] in the
//! device's pending batch.

use super::command::{Command, OpArg, RecordedOp, TensorOperand};
use super::grid::grid;
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
    ctx.scheduler()
        .record(&ctx.target(), Command::Elementwise(op))
}
