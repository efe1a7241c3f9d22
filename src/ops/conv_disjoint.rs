//! A transposed convolution whose stride is its kernel (an upsampling
//! layer's 2x2 stride 2) as a 1x1 convolution whose taps are shuffled into
//! place: outputs of distinct taps never overlap.

use super::Activation;
use super::conv::{checked_bias, dims4, finish};
use super::conv_args::Conv;
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// A transposed convolution whose stride is its kernel (no dilation,
/// padding or output padding; an upsampling layer's 2x2 stride 2): each
/// output takes one tap of one input pixel per input channel, so it is a
/// 1x1 convolution into `out kh kw` channels (bias and activation
/// included) whose taps are then shuffled into place, one copy; on the
/// CPU, channels-last f32 with tap rows of `ROW_CHANNELS` or more, one 1x1
/// convolution a tap row written straight into its output rows
/// (`conv_tap_rows.rs`).
pub(super) fn disjoint_transpose(
    name: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
    unbatched: bool,
) -> Result<Tensor> {
    // A residual is added to f32 sums (half operands' too) before their
    // one rounding: the product then runs in f32.
    let dtype = Tensor::result_type(x, weight)?;
    let half = matches!(dtype, DType::F16 | DType::BF16) && conv.residual.is_some();
    let (x, weight) = if half {
        (&x.to_dtype(DType::F32)?, &weight.to_dtype(DType::F32)?)
    } else {
        (x, weight)
    };
    let ([n, c, h, w], [_, og, kh, kw]) = (dims4(x), dims4(weight));
    let (g, taps) = (conv.groups, kh * kw);
    let [gi, cg, og_, taps_] = [g, c / g, og, taps].map(|v| v as isize);
    // A channels-last image on the CPU gives channels-last columns, whose
    // channels are ordered tap-major so that each pixel's shuffle copies
    // runs of `og` channels.
    let last = x.device().is_cpu() && x.layout().has_channels_innermost();
    let (product, bias) = if last {
        // Weight (gi cg + ci, co, i, j) is row (gi taps + i kw + j) og +
        // co of the 1x1 convolution's [g taps og, cg, 1, 1].
        let product = weight
            .reshape([gi, cg, og_, taps_])?
            .permute(&[0, 3, 2, 1])?
            .reshape([gi * taps_ * og_, cg, 1, 1])?;
        let bias = match checked_bias(name, conv, g * og)? {
            Some(b) => Some(
                b.reshape([gi, 1, og_])?
                    .broadcast_to([g, taps, og])?
                    .reshape([gi * taps_ * og_])?,
            ),
            None => None,
        };
        (product, bias)
    } else {
        // Weight (gi cg + ci, co, i, j) is row (gi og + co) taps + i kw + j
        // of the 1x1 convolution's [g og taps, cg, 1, 1].
        let product = weight
            .reshape([gi, cg, og_ * taps_])?
            .permute(&[0, 2, 1])?
            .reshape([gi * og_ * taps_, cg, 1, 1])?;
        let bias = match checked_bias(name, conv, g * og)? {
            Some(b) => Some(b.repeat(taps, 0)?),
            None => None,
        };
        (product, bias)
    };
    // A residual is added to the shuffled outputs, the activation after.
    let act = conv.activation.filter(|_| conv.residual.is_none());
    // On the CPU each tap row's columns go straight into their output
    // rows where there are `ROW_CHANNELS` or more and the kernel applies
    // the activation itself.
    let rows = match act.map(Activation::unary) {
        Some(None) => None,
        unary if last && g == 1 => super::conv_tap_rows::tap_rows(
            name,
            x,
            &product,
            bias.as_ref(),
            unary.flatten(),
            [kh, kw, og],
        )?,
        _ => None,
    };
    let mut inner = Conv::new().groups(g);
    if let Some(b) = &bias {
        inner = inner.bias(b);
    }
    if let Some(act) = act {
        inner = inner.activation(act);
    }
    let [n_, o_, h_, w_, kh_, kw_] = [n, g * og, h, w, kh, kw].map(|v| v as isize);
    let out = if let Some(out) = rows {
        out
    } else if last {
        let columns = x.conv2d(&product, &inner)?;
        // Columns (n, (gi, i, j, co), y, x) into channels-last output
        // (n, gi og + co, y kh + i, x kw + j), whatever the columns'
        // memory (an f64 product's is row-major).
        let dense = Shape::from([n, h * kh, w * kw, g * og]);
        let out = Tensor::empty_dense(dense, columns.dtype(), x.device(), name)?
            .permute(&[0, 3, 1, 2])?;
        let target = out
            .split_axis(name, 3, [w, kw])?
            .split_axis(name, 2, [h, kh])?
            .split_axis(name, 1, [g, og])?;
        let source = columns
            .reshape([n_, gi, kh_, kw_, og_, h_, w_])?
            .permute(&[0, 1, 4, 5, 2, 6, 3])?;
        target.assign(&source)?;
        out
    } else {
        x.conv2d(&product, &inner)?
            .reshape([n_, o_, kh_, kw_, h_, w_])?
            .permute(&[0, 1, 4, 2, 5, 3])?
            .reshape([n_, o_, h_ * kh_, w_ * kw_])?
    };
    if conv.residual.is_some() {
        let rest = Conv {
            residual: conv.residual,
            activation: conv.activation,
            ..Conv::new()
        };
        return finish(name, out, &rest, dtype, unbatched);
    }
    if unbatched {
        out.squeeze_axis(0)
    } else {
        Ok(out)
    }
}
