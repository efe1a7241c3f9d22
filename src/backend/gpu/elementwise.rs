//! Launching elementwise kernels: from a [`Call`] to a recorded dispatch.

use super::codegen::{KernelKey, Source, WORKGROUP_SIZE};
use super::params::{MAX_OPERANDS, Params};
use super::storage::GpuStorage;
use crate::backend::{Call, Input, Storage};
use crate::error::{Error, Result};
use crate::layout::{IterPlan, Layout};
use smallvec::SmallVec;
use std::sync::Arc;

/// Records `call` on the device that holds `out`.
///
/// # Errors
/// `Error::TooLarge` when the grid exceeds the dispatch limits; `Error::Gpu`
/// for a pipeline that fails to build.
pub(crate) fn run(out: &GpuStorage, call: &Call) -> Result<()> {
    let ctx = &out.ctx;
    let mut layouts: SmallVec<[&Layout; MAX_OPERANDS]> = SmallVec::new();
    let mut inputs = SmallVec::new();
    let mut buffers: SmallVec<[wgpu::Buffer; 4]> = SmallVec::new();
    let mut scalar = 0u32;
    layouts.push(&call.out.layout);
    buffers.push(out.buffer.clone());
    for input in &call.inputs {
        match input {
            Input::Tensor(t) if Arc::ptr_eq(t.storage, call.out.storage) => {
                inputs.push((t.dtype, Source::Out));
                layouts.push(&t.layout);
            }
            Input::Tensor(t) => {
                let Storage::Gpu(s) = &**t.storage else {
                    return Err(Error::gpu("gpu kernel", "input is not on the GPU"));
                };
                inputs.push((t.dtype, Source::Binding));
                layouts.push(&t.layout);
                buffers.push(s.buffer.clone());
            }
            Input::Scalar(s) => {
                inputs.push((s.dtype, Source::Scalar));
                scalar = s.bits();
                // Keeps operand slots aligned with input positions; identical
                // to the destination, so it never blocks merging axes.
                layouts.push(&call.out.layout);
            }
        }
    }
    let plan = IterPlan::new(&layouts);
    let numel = plan.numel();
    if numel == 0 {
        return Ok(());
    }
    let key = KernelKey {
        kernel: call.kernel,
        out: call.out.dtype,
        inputs,
        native_f16: ctx.facts.native_f16,
        contiguous: plan.is_contiguous(),
    };
    let groups = grid(numel, ctx.facts.max_workgroups_per_dim)?;
    let mut params = Params {
        numel: numel as u32,
        rank: plan.shape.len() as u32,
        row_threads: groups[0] * WORKGROUP_SIZE,
        scalar,
        ..Params::default()
    };
    for (d, &n) in plan.shape.iter().enumerate() {
        params.shape[d] = n as u32;
    }
    for (k, (strides, &offset)) in plan.strides.iter().zip(plan.offsets.iter()).enumerate() {
        params.offsets[k] = offset as u32;
        for (d, &s) in strides.iter().enumerate() {
            params.strides[k][d] = s as i32;
        }
    }
    let pipeline = ctx.pipelines.get(&ctx.device, &key)?;
    ctx.scheduler()
        .record(ctx, pipeline, buffers, params, groups)
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
