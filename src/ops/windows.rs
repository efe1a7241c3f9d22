//! What convolution, pooling and resizing share: per-axis arguments given
//! once or per axis, the output extent of a sliding window, and the
//! strided view of the elements one tap of a window reads at every
//! output position (a view of the input, never a copy).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;

/// A value per spatial axis (height, width), given once for both or as a
/// pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair(pub [usize; 2]);

impl From<usize> for Pair {
    fn from(v: usize) -> Pair {
        Pair([v, v])
    }
}

impl From<[usize; 2]> for Pair {
    fn from(v: [usize; 2]) -> Pair {
        Pair(v)
    }
}

impl From<(usize, usize)> for Pair {
    fn from((h, w): (usize, usize)) -> Pair {
        Pair([h, w])
    }
}

/// The outputs of a window of `extent` elements (its taps spread out:
/// `dilation (k - 1) + 1`) sliding `step` at a time over `len` elements;
/// with `ceil`, a last partial window that starts inside `len - after`
/// (PyTorch's `ceil_mode`: the input and its leading padding) counts too,
/// even where the window is longer than the input (PyTorch's
/// `pooling_output_shape`). `None` when no window fits.
pub(super) fn outputs(
    len: usize,
    extent: usize,
    step: usize,
    ceil: Option<usize>,
) -> Option<usize> {
    // In u128: `len + step - 1` passes usize for a step near its end.
    let round_up = if ceil.is_some() {
        (step as u128).saturating_sub(1)
    } else {
        0
    };
    let span = (len as u128 + round_up).checked_sub(extent as u128)?;
    let mut n = usize::try_from(span.checked_div(step as u128)? + 1).ok()?;
    if let Some(after) = ceil
        && (n - 1) * step >= len - after
    {
        n -= 1;
    }
    (n > 0).then_some(n)
}

/// The longest (padded) axis a sliding window runs over: the GPU kernels
/// form input positions in i32.
pub(super) const MAX_EXTENT: usize = i32::MAX as usize;

/// The elements a window of `k` taps `dilation` apart spans along `axis`,
/// `dilation (k - 1) + 1`, at most [`MAX_EXTENT`].
///
/// # Errors
/// `Error::Argument` naming `op`, the axis, the dilation and the taps.
pub(super) fn span(op: &'static str, axis: usize, k: usize, dilation: usize) -> Result<usize> {
    dilation
        .checked_mul(k.saturating_sub(1))
        .and_then(|v| v.checked_add(1))
        .filter(|&v| v <= MAX_EXTENT)
        .ok_or_else(|| {
            Error::argument(
                op,
                format!(
                    "a dilation of {dilation} spreads {k} taps along axis {} past \
                     {MAX_EXTENT} elements",
                    axis_shown(op, axis)
                ),
            )
        })
}

/// `len` with `before` and `after` padding, at most [`MAX_EXTENT`].
///
/// # Errors
/// `Error::Argument` naming `op`, the axis and the padding.
pub(super) fn padded_len(
    op: &'static str,
    axis: usize,
    len: usize,
    (before, after): (usize, usize),
) -> Result<usize> {
    len.checked_add(before)
        .and_then(|v| v.checked_add(after))
        .filter(|&v| v <= MAX_EXTENT)
        .ok_or_else(|| {
            Error::argument(
                op,
                format!(
                    "padding ({before}, {after}) makes axis {} of {len} longer than \
                     {MAX_EXTENT} elements",
                    axis_shown(op, axis)
                ),
            )
        })
}

/// The view of `t` (rank 2 or more, the last two axes spatial) holding,
/// at output position `(y, x)`, the element at `start + (y, x) * step`:
/// `count` positions per axis.
pub(super) fn window(t: &Tensor, start: [usize; 2], count: [usize; 2], step: [usize; 2]) -> Tensor {
    let l = t.layout();
    let r = l.rank();
    let strides = l.strides();
    let (sh, sw) = (strides[r - 2], strides[r - 1]);
    let offset = l.offset() as isize + start[0] as isize * sh + start[1] as isize * sw;
    let mut dims: Vec<usize> = l.dims()[..r - 2].to_vec();
    dims.extend(count);
    let mut new_strides: Vec<isize> = strides[..r - 2].to_vec();
    // An axis of one position takes the input's stride: its step may be
    // any size (a stride past the input's extent), and never multiplies.
    let stride = |s: isize, a: usize| {
        if count[a] == 1 {
            s
        } else {
            s * step[a] as isize
        }
    };
    new_strides.extend([stride(sh, 0), stride(sw, 1)]);
    t.with_layout(Layout::from_parts(
        dims.into(),
        new_strides.into(),
        offset as usize,
    ))
}

/// The dtype a spatial op computes in for `dtype`: f32 for f16 and bf16
/// (f32 accumulation), the float dtypes as they are.
///
/// # Errors
/// `Error::DType` naming `op` for other dtypes.
pub(super) fn compute_dtype(op: &'static str, dtype: DType) -> Result<DType> {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 => Ok(DType::F32),
        DType::F64 => Ok(DType::F64),
        other => Err(Error::dtype(
            op,
            format!("takes f32, f16, bf16 or f64 tensors, got {other}; cast first"),
        )),
    }
}

/// Checks that `t` has `rank` axes, or `rank - 1` (an unbatched input,
/// given a batch axis of 1 here): the tensor to work on, and whether to
/// drop the batch axis from the result.
///
/// # Errors
/// `Error::Shape` naming `op` for another rank.
pub(super) fn batched(
    op: &'static str,
    t: &Tensor,
    rank: usize,
    what: &str,
) -> Result<(Tensor, bool)> {
    if t.rank() == rank {
        return Ok((t.clone(), false));
    }
    if t.rank() + 1 == rank {
        return Ok((t.unsqueeze(0)?, true));
    }
    Err(Error::shape(
        op,
        format!(
            "the input must be {what} (or without its batch axis), got shape {}",
            t.shape()
        ),
    ))
}

/// How the errors of the convolution `op` show a value per spatial axis
/// (`per_axis`), a shape whose height is the second axis from the end, a
/// spatial axis (2 or 3) and a kernel's axes: a 1-D op (the 2-D one over
/// one row, `conv1d.rs`) shows its length's alone.
pub(super) fn per_axis<T: std::fmt::Debug>(op: &str, v: [T; 2]) -> String {
    if op.ends_with("1d") {
        format!("[{:?}]", v[1])
    } else {
        format!("{v:?}")
    }
}

/// See [`per_axis`].
pub(super) fn shape_shown(op: &str, t: &Tensor) -> String {
    dims_shown(op, t.dims())
}

/// [`shape_shown`] of a shape's `dims`.
pub(super) fn dims_shown(op: &str, dims: &[usize]) -> String {
    let mut d = dims.to_vec();
    if op.ends_with("1d") && d.len() >= 2 {
        d.remove(d.len() - 2);
    }
    crate::shape::Shape::from(d).to_string()
}

/// See [`per_axis`].
pub(super) fn axis_shown(op: &str, axis: usize) -> usize {
    axis - usize::from(op.ends_with("1d"))
}

/// See [`per_axis`].
pub(super) fn kernel_axes(op: &str) -> &'static str {
    if op.ends_with("1d") { "k" } else { "kh, kw" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_follow_pytorchs_formula() {
        // floor((len - extent) / step) + 1.
        assert_eq!(outputs(7, 3, 2, None), Some(3));
        assert_eq!(outputs(8, 3, 2, None), Some(3));
        assert_eq!(outputs(2, 3, 1, None), None);
        // PyTorch's `max_pool2d(2 x 2, 3, 2, ceil_mode=True)`: one window,
        // longer than the input; none where it starts in the padding.
        assert_eq!(outputs(2, 3, 2, Some(0)), Some(1));
        assert_eq!(outputs(1, 4, 2, Some(0)), None);
        assert_eq!(outputs(4, 3, 2, Some(1)), Some(2));
        // ceil mode: a partial window that starts inside the input counts.
        assert_eq!(outputs(8, 3, 2, Some(0)), Some(4));
        assert_eq!(outputs(7, 3, 2, Some(0)), Some(3));
        // A step near usize's end (`len + step - 1` overflowed): PyTorch's
        // one window.
        assert_eq!(outputs(4, 2, usize::MAX, Some(0)), Some(1));
        // ... but not one starting in the trailing padding (an input of
        // 5 padded by 1 on each side: the third window would start at 6).
        assert_eq!(outputs(7, 2, 3, Some(1)), Some(2));
        assert_eq!(outputs(7, 2, 3, Some(0)), Some(3));
    }
}
