//! GPU convolutions: depthwise ones in one pass (`depthwise.rs`), the
//! others as implicit matrix products (`kernel.rs`), each
//! kernel checked by a probe before its first convolution of a dtype on a
//! device (`probe.rs`, through the matmul's self-check): a kernel that
//! answers wrong, or one not yet probed inside a capture or a profile,
//! leaves its convolutions to the op layer, which composes them from
//! (self-checked) products.

mod depthwise;
mod kernel;
#[cfg(not(target_arch = "wasm32"))]
mod probe;

pub(crate) use depthwise::depthwise;

use crate::backend::ConvCall;
use crate::backend::gpu::matmul::self_check::{Verdict, verdict_with};
use crate::backend::gpu::matmul::tiling::tile_of;
use crate::backend::gpu::matmul_tile_choice::MatmulVariant;
use crate::backend::gpu::storage::GpuStorage;
use crate::error::{Error, Result};

/// Records `call` on the implicit-GEMM kernel, whose output storage is
/// `out`: false (nothing recorded) where the kernel is not to run.
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
    let (tiling, dtype) = (kernel::tiling_for(call), call.out.dtype);
    let variant = MatmulVariant::Conv(tile_of(tiling));
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
    match verdict {
        Verdict::Right | Verdict::Unchecked => {
            kernel::record(out, call, tiling)?;
            Ok(true)
        }
        Verdict::Wrong | Verdict::NotNow => Ok(false),
    }
}
