//! The neural-network layers beyond products, convolutions and pooling:
//! normalisations (`norms.rs`: PyTorch's `layer_norm` and `rms_norm` over
//! trailing axes and `group_norm` over groups of channels;
//! `batch_norm.rs`: `batch_norm` in inference) and the
//! activations (`activations.rs`: `relu6`, `leaky_relu`, `elu`,
//! `softplus`, `mish`, `selu`, `celu`, `hardtanh`, the shrinks ...;
//! `gated.rs`: `glu` and `prelu`; `activation.rs`: [`Activation`], one named as a
//! value for a layer to apply), `fuse.rs`: a batch norm folded into the
//! convolution before it, and the transformer's blocks (`rope.rs`: rotary
//! position embeddings, `rope_scaling.rs`: their frequencies stretched for
//! longer contexts; `attention.rs`: scaled dot-product attention with
//! grouped-query heads; `sampling.rs`: the next token drawn from logits).

mod activation;
mod activations;
mod attention;
mod batch_norm;
mod fuse;
mod gated;
mod norms;
mod rope;
mod rope_scaling;
mod sampling;

pub use activation::Activation;
pub use attention::Attention;
pub use rope::{Rope, RopeStyle};
pub use rope_scaling::RopeScaling;
pub use sampling::Sampling;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, check_devices};
use crate::tensor::Tensor;

/// True for the dtypes the layers take: f32, f16, bf16 and f64.
fn is_float(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
}

/// `Error::DType` naming `op` unless `dtype` is one [`is_float`] takes.
fn check_float(op: &'static str, dtype: DType) -> Result<()> {
    if is_float(dtype) {
        return Ok(());
    }
    Err(Error::dtype(
        op,
        format!("takes f32, f16, bf16 or f64 tensors, got {dtype}; cast first"),
    ))
}

/// Checks the per-channel parameters of `op` on `x` that are given: each
/// on `x`'s device, of shape `(channels,)` and a float dtype.
///
/// # Errors
/// `Error::DeviceMismatch`, `Error::Shape` and `Error::DType` naming `op`
/// and the parameter.
fn check_per_channel(
    op: &'static str,
    x: &Tensor,
    channels: usize,
    params: &[(&str, Option<&Tensor>)],
) -> Result<()> {
    for &(what, t) in params {
        let Some(t) = t else { continue };
        check_devices(op, x, &[Arg::Tensor(t)])?;
        if t.dims() != [channels] {
            return Err(Error::shape(
                op,
                format!(
                    "the {what} must have shape ({channels},), got {}",
                    t.shape()
                ),
            ));
        }
        if !is_float(t.dtype()) {
            return Err(Error::dtype(op, format!("a {what} of dtype {}", t.dtype())));
        }
    }
    Ok(())
}
