//! GPU convolutions: depthwise ones in one pass (`depthwise.rs`), the
//! others as implicit matrix products (`kernel.rs`), transposed ones as an
//! implicit product per output phase in one dispatch (`transposed.rs`), each
//! kernel checked by a probe before its first convolution of a dtype on a
//! device (`probe.rs`, `probe_transposed.rs`, through the matmul's
//! self-check): a kernel that
//! answers wrong, or one not yet probed inside a capture or a profile,
//! leaves its convolutions to the op layer, which composes them from
//! (self-checked) products.

mod depthwise;
mod kernel;
#[cfg(not(target_arch = "wasm32"))]
mod probe;
#[cfg(not(target_arch = "wasm32"))]
mod probe_transposed;
mod transposed;

pub(crate) use depthwise::depthwise;

use crate::backend::ConvCall;
use crate::backend::gpu::matmul::self_check::{Verdict, verdict_with};
use crate::backend::gpu::matmul_tile_choice::MatmulVariant;
use crate::backend::gpu::storage::GpuStorage;
use crate::error::{Error, Result};

/// Records `call` on the implicit-GEMM kernel, whose output storage is
/// `out`: false (nothing recorded) where the kernel is not to run, or
/// where an image has more pixels than the device's grid holds tiles.
///
/// # Errors
/// Those of `kernel::record`; failures of the kernel's probe.
pub(crate) fn conv(out: &GpuStorage, call: &ConvCall) -> Result<bool> {
    if call.bias.is_some() || call.activation.is_some() || call.residual.is_some() {
        return Err(Error::internal(
            "conv2d",
            "the GPU's convolution takes no bias, residual or activation (the op layer \
             applies them)",
        ));
    }
    let ctx = &out.ctx;
    let (tiling, dtype) = (kernel::tiling_for(call, &ctx.facts), call.out.dtype);
    if !kernel::grid_fits(call, tiling, ctx.facts.max_workgroups_per_dim) {
        return Ok(false);
    }
    let variant = MatmulVariant::Conv(tiling.tile());
    #[cfg(not(target_arch = "wasm32"))]
    let verdict = verdict_with(
        ctx,
        variant,
        dtype,
        || probe::fits(ctx, dtype),
        || probe::answers_right(ctx, tiling, dtype),
    )?;
    // A browser probes nothing (its queue cannot be waited on).
    #[cfg(target_arch = "wasm32")]
    let verdict = verdict_with(ctx, variant, dtype, || false, || Ok(false))?;
    run_if(verdict, || kernel::record(out, call, tiling))
}

/// Records the transposed convolution `call` (the weight `[in, out /
/// groups, kh, kw]`, `pad` cropped from each side of the whole output) on
/// its kernel, whose output storage is `out`: false (nothing recorded)
/// where the kernel is not to run, or where a phase has more pixels than
/// the device's grid holds tiles.
///
/// # Errors
/// Those of `transposed::record`; failures of the kernel's probe;
/// `Error::Internal` for a bias, residual or activation.
pub(crate) fn conv_transpose(out: &GpuStorage, call: &ConvCall) -> Result<bool> {
    if call.bias.is_some() || call.activation.is_some() || call.residual.is_some() {
        return Err(Error::internal(
            "conv_transpose2d",
            "the GPU's transposed convolution takes no bias, residual or activation (the op \
             layer applies them)",
        ));
    }
    let ctx = &out.ctx;
    let (tiling, dtype) = (transposed::tiling_for(call, &ctx.facts), call.out.dtype);
    if !transposed::grid_fits(call, tiling, ctx.facts.max_workgroups_per_dim) {
        return Ok(false);
    }
    let variant = MatmulVariant::ConvTransposed(tiling.tile());
    #[cfg(not(target_arch = "wasm32"))]
    let verdict = verdict_with(
        ctx,
        variant,
        dtype,
        || probe_transposed::fits(ctx, dtype),
        || probe_transposed::answers_right(ctx, tiling, dtype),
    )?;
    #[cfg(target_arch = "wasm32")]
    let verdict = verdict_with(ctx, variant, dtype, || false, || Ok(false))?;
    run_if(verdict, || transposed::record(out, call, tiling))
}

/// Runs `record` where `verdict` lets the kernel run: whether it ran.
fn run_if(verdict: Verdict, record: impl FnOnce() -> Result<()>) -> Result<bool> {
    match verdict {
        Verdict::Right | Verdict::Unchecked => {
            record()?;
            Ok(true)
        }
        Verdict::Wrong | Verdict::NotNow => Ok(false),
    }
}
