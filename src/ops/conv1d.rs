//! The 1-D convolutions (PyTorch's `conv1d` and `conv_transpose1d`): the
//! 2-D ones over an input of one row, the kernel's and `Conv`'s second
//! values (or single ones) along the length.

use super::conv::{convolve, transpose_convolve};
use super::conv_args::{Conv, ConvPadding};
use super::windows::{Pair, batched};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// The 1-D convolution of this `[batch, in_channels, length]` input (or
    /// one without the batch axis) with `weight` `[out_channels,
    /// in_channels / groups, k]` (PyTorch's `conv1d`); `conv`'s second
    /// values (or single ones) apply.
    ///
    /// # Errors
    /// As [`Tensor::conv2d`], naming `conv1d`.
    pub fn conv1d(&self, weight: &Tensor, conv: &Conv) -> Result<Tensor> {
        const OP: &str = "conv1d";
        let _region = crate::profile_region::op(OP);
        along_length(OP, self, weight, conv, "[out, in / groups, k]", convolve)
    }

    /// The transposed 1-D convolution (PyTorch's `conv_transpose1d`) of
    /// this `[batch, in_channels, length]` input (or one without the batch
    /// axis) with `weight` `[in_channels, out_channels / groups, k]`:
    /// an output of `(length - 1) stride - 2 padding + dilation (k - 1) +
    /// output_padding + 1`; `conv`'s second values (or single ones) apply.
    ///
    /// # Errors
    /// As [`Tensor::conv_transpose2d`], naming `conv_transpose1d`.
    pub fn conv_transpose1d(&self, weight: &Tensor, conv: &Conv) -> Result<Tensor> {
        const OP: &str = "conv_transpose1d";
        let _region = crate::profile_region::op(OP);
        let weight_shape = "[in, out / groups, k]";
        along_length(OP, self, weight, conv, weight_shape, transpose_convolve)
    }
}

/// The 2-D convolution `run` of `x` and `weight` with a height of one
/// added to both (and to a residual), which takes no stride, padding,
/// dilation or output padding: the 1-D convolution named `op`.
///
/// # Errors
/// `Error::Shape` naming `op` for a weight that is not 3-D (`shape`
/// describes it); those of `run`.
fn along_length(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
    shape: &str,
    run: fn(&'static str, &Tensor, &Tensor, &Conv) -> Result<Tensor>,
) -> Result<Tensor> {
    let (x, unbatched) = batched(op, x, 3, "[batch, channels, length]")?;
    super::conv::unbatched_residual(op, conv, unbatched, 2)?;
    if weight.rank() != 3 {
        return Err(Error::shape(
            op,
            format!("the weight must be {shape}, got shape {}", weight.shape()),
        ));
    }
    // The height axis added here takes no stride, padding or dilation
    // (nor a residual's shape).
    let residual = match conv.residual {
        Some(r) if r.rank() > 0 => Some(r.unsqueeze(-2)?),
        _ => None,
    };
    let along_width = Conv {
        residual: residual.as_ref().or(conv.residual),
        stride: Pair([1, conv.stride.0[1]]),
        padding: match conv.padding {
            ConvPadding::Zeros(Pair(p)) => ConvPadding::Zeros(Pair([0, p[1]])),
            same => same,
        },
        dilation: Pair([1, conv.dilation.0[1]]),
        output_padding: Pair([0, conv.output_padding.0[1]]),
        ..conv.clone()
    };
    let out = run(op, &x.unsqueeze(2)?, &weight.unsqueeze(2)?, &along_width)?;
    let out = out.squeeze_axis(2)?;
    if unbatched {
        out.squeeze_axis(0)
    } else {
        Ok(out)
    }
}
