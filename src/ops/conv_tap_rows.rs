//! A transposed convolution whose stride is its kernel (an upsampling
//! layer's 2x2 stride 2) on the CPU, channels-last and f32: output row
//! `y kh + i` takes tap row `i` of input row `y` alone, so tap row `i`'s
//! 1x1 convolution (its `kw og` columns, pixel by pixel) is written straight
//! into every `kh`-th output row (`conv_nhwc::pitched_out`): no columns
//! buffer and no shuffle of them into place, a pass over the output less.

use crate::backend::ConvCall;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::UnaryOp;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// The fewest channels a tap row (`kw og`) takes this path with.
pub(super) const ROW_CHANNELS: usize = 6;

/// The output `[n, og, h kh, w kw]` (channels-last) of channels-last f32
/// `x` `[n, c, h, w]` by `product`, the 1x1 convolution's `[kh kw og, c,
/// 1, 1]` weight whose rows are ordered `(i, j, co)`, with `bias` (`kh kw
/// og` values in the same order) and `activation` applied as each sum is
/// stored; `None` where this path does not apply (a GPU, other dtypes or
/// layouts, tap rows of fewer than [`ROW_CHANNELS`] channels), for the
/// caller's columns and shuffle.
///
/// # Errors
/// As the convolution's kernel (named `op`).
pub(super) fn tap_rows(
    op: &'static str,
    x: &Tensor,
    product: &Tensor,
    bias: Option<&Tensor>,
    activation: Option<UnaryOp>,
    [kh, kw, og]: [usize; 3],
) -> Result<Option<Tensor>> {
    let f32s = [x, product]
        .into_iter()
        .chain(bias)
        .all(|t| t.dtype() == DType::F32);
    let [n, _, h, w] = [0, 1, 2, 3].map(|a| x.dims()[a]);
    let cpu = x.device().is_cpu() && x.layout().has_channels_innermost();
    // Very narrow tap rows leave most of a kernel panel's 16 lanes idle:
    // the columns (all kh kw og of them a pixel) and their shuffle are
    // faster there. A 2x2 from 24 channels at 320x320, one thread: tap
    // rows of 2 channels 0.90 ms against 0.51 by columns, of 4 0.92
    // against 0.62, of 6 0.95 against 0.96, of 8 0.92 against 1.22, of 16
    // 1.05 against 1.64-1.9; 96 channels at 160x160 into rows of 48: 2.0
    // against 2.84-3.06.
    if !cpu || !f32s || n * h * w == 0 || kw * og < ROW_CHANNELS {
        return Ok(None);
    }
    let (hk, wk) = (h * kh, w * kw);
    let dense = Shape::from([n, hk, wk, og]);
    let out = Tensor::empty_dense(dense, DType::F32, x.device(), op)?.permute(&[0, 3, 1, 2])?;
    let product = product.contiguous()?;
    let bias = match bias {
        Some(b) => Some(b.contiguous()?),
        None => None,
    };
    let row = kw * og;
    for i in 0..kh {
        // Tap row i: columns (j, co) of input pixel (y, x) are output
        // pixel (y kh + i, x kw + j)'s channel co, `kw og` side by side.
        let weight = product.narrow(0, i * row, row)?;
        let bias = match &bias {
            Some(b) => Some(b.narrow(0, i * row, row)?),
            None => None,
        };
        let rows = Layout::from_parts(
            Shape::from([n, row, h, w]),
            [hk * wk * og, 1, kh * wk * og, row]
                .map(|s| s as isize)
                .into_iter()
                .collect(),
            i * wk * og,
        );
        let ran = crate::backend::conv(&ConvCall {
            input: x.kernel_ref(x.layout().clone())?,
            weight: weight.kernel_ref(weight.layout().clone())?,
            out: out.kernel_out(rows)?,
            kernel: [1, 1],
            stride: [1, 1],
            pad: [0, 0],
            dilation: [1, 1],
            groups: 1,
            bias: match &bias {
                Some(b) => Some(b.kernel_ref(b.layout().clone())?),
                None => None,
            },
            activation,
            residual: None,
        })?;
        // The CPU's kernel always runs (only a GPU's may decline).
        debug_assert!(ran, "the CPU's convolution declined a tap row");
    }
    Ok(Some(out))
}
