//! `logsumexp` over any axes (PyTorch's `torch.logsumexp`): the log of a
//! sum of exponentials, shifted by the largest element so that it neither
//! overflows nor underflows. Over one axis on a GPU it is the softmax
//! kernel's one pass (an online maximum and sum) writing `m + ln(s)` per
//! line; elsewhere, a composition of reductions.

use super::binding_parts::for_each_part_across;
use super::reduce::Axes;
use crate::backend::{MAX_SOFTMAX_LINE, SoftmaxCall, softmax};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "logsumexp";

impl Tensor {
    /// `log(sum(exp(x)))` over `axes`, computed as `m + log(sum(exp(x -
    /// m)))` with `m` the largest element, so that neither large nor very
    /// negative inputs leave the float range (`[1000, 1000]` gives `1000 +
    /// ln 2`). An infinite `m` shifts by 0, as PyTorch's: a line holding
    /// +inf gives +inf, a line of only -inf gives -inf, a NaN gives NaN.
    /// The sum of no elements gives -inf. Integers and bool are taken as
    /// f32 (PyTorch's default float dtype); f16 and bf16 are computed in
    /// f32 and rounded once. An empty list of axes is every axis, as in
    /// [`Tensor::norm`] (PyTorch 2.15 fails on `dim=()`). Over one axis on
    /// a GPU it is one kernel (the softmax kernel's online maximum and sum,
    /// `m + ln(s)` per line in f32, and a rounding for f16 and bf16), but
    /// for fewer than 256 lines of more than 2^20 elements in all, which
    /// reductions spread over more workgroups.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::from_slice(&[1000.0f32, 1000.0, 0.0, f32::NEG_INFINITY], [2, 2], &Device::cpu())?;
    /// let l = t.logsumexp(1)?.to_vec::<f32>()?;
    /// assert!((l[0] - (1000.0 + 2f32.ln())).abs() < 1e-3);
    /// assert_eq!(l[1], 0.0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::DType` naming `logsumexp` for c64; axis errors as
    /// [`Tensor::sum`]'s, and on a GPU its `Error::TooLarge` and
    /// `Error::OutOfMemory`.
    pub fn logsumexp(&self, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op(OP, || self.logsumexp_axes(axes.into(), false))
    }

    /// [`Tensor::logsumexp`] with the reduced axes kept, with length 1
    /// (NumPy's `keepdims=True`), so the result broadcasts against `self`:
    /// `x - x.logsumexp_keepdim(-1)?` is `log_softmax(x, -1)`.
    ///
    /// # Errors
    /// As [`Tensor::logsumexp`].
    pub fn logsumexp_keepdim(&self, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op(OP, || self.logsumexp_axes(axes.into(), true))
    }

    fn logsumexp_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        let axes = match axes {
            Axes::List(list) if list.is_empty() => Axes::All,
            axes => axes,
        };
        let mask = axes.mask(OP, self.rank())?;
        if self.dtype() == DType::C64 {
            return Err(Error::dtype(OP, "not defined for dtype c64"));
        }
        // Floats keep their dtype (f16 and bf16 computed in f32), the
        // others give f32.
        let out_dtype = match self.dtype() {
            d if d.is_float() => d,
            _ => DType::F32,
        };
        let reduced = (0..self.rank()).any(|k| mask[k] && self.dims()[k] == 0);
        let axes_left: Vec<usize> = (0..self.rank()).filter(|&k| mask[k]).collect();
        // The kernel reads f16 and bf16 as they are, integers as f32.
        let source = match self.dtype() {
            d if d.is_float() => self.clone(),
            _ => self.to_dtype(DType::F32)?,
        };
        if let [axis] = axes_left[..]
            && !reduced
            && let Some(out) = source.lse_lines(axis)?
        {
            let out = if keepdim {
                out
            } else {
                out.squeeze_axis(axis as isize)?
            };
            return out.to_dtype(out_dtype);
        }
        let x = match source.dtype() {
            DType::F16 | DType::BF16 => source.to_dtype(DType::F32)?,
            _ => source,
        };
        let out = if reduced {
            // No elements: log(0) = -inf (the maximum of nothing is
            // undefined, and the shift does not matter).
            x.sum_axes(axes, keepdim)?.log()?
        } else {
            let m = x.max_axes(axes.clone(), true)?;
            let shift = m.masked_fill(&m.isinf()?, 0.0)?;
            let sum = x.sub(&shift)?.exp()?.sum_axes(axes, true)?;
            let out = sum.log()?.add(&shift)?;
            if keepdim {
                out
            } else {
                let dims: Vec<usize> = (0..self.rank())
                    .filter(|&k| !mask[k])
                    .map(|k| self.dims()[k])
                    .collect();
                out.reshape(dims)?
            }
        };
        out.to_dtype(out_dtype)
    }

    /// The logsumexp of every line along `axis` (a non-empty axis) by the
    /// softmax kernel's one pass, into f32 with `axis` kept: on a GPU, for
    /// lines it takes (up to `MAX_SOFTMAX_LINE`, within half a storage
    /// binding) and enough of them to spread over its workgroups, a
    /// workgroup or subgroup each (or few elements in all); `None` where
    /// reductions over the axis serve better or alone can.
    fn lse_lines(&self, axis: usize) -> Result<Option<Tensor>> {
        let length = self.dims()[axis];
        let lines = self.numel() / length;
        let fits = self.device().is_gpu()
            && self.dtype() != DType::F64
            && length <= MAX_SOFTMAX_LINE
            && (lines >= LINE_KERNEL_MIN_LINES || self.numel() <= LINE_KERNEL_ANY_LINES)
            && self.line_fits_binding(axis);
        if !fits {
            return Ok(None);
        }
        let mut dims = self.dims().to_vec();
        dims[axis] = 1;
        let out = Tensor::empty_dense(dims.into(), DType::F32, self.device(), OP)?;
        // The output broadcast along the axis has the input's shape, so
        // that both cut alike into parts across the lines, and both go to
        // the kernel with the axis last (the output's then dropped: one
        // value per line).
        let wide = out.with_layout(out.layout().broadcast_to(self.shape())?);
        let last = self.rank() as isize - 1;
        let a = axis as isize;
        for_each_part_across(&[self.clone(), wide], axis, usize::MAX, &mut |part| {
            let [input, out] = part else {
                return Err(Error::internal(OP, "a logsumexp part has two views"));
            };
            let lines = out.layout().transpose(a, last)?.without_last_axis();
            softmax(&SoftmaxCall {
                log: false,
                total: true,
                negate: false,
                input: input.kernel_ref(input.layout().transpose(a, last)?)?,
                out: out.kernel_out(lines)?,
            })
        })?;
        Ok(Some(out))
    }
}

/// Lines enough for the line kernel whatever their length: a workgroup or
/// subgroup each fills a large GPU's cores several times over (fewer,
/// long lines go to the reductions' grid, which spreads one line over many
/// workgroups). A guess to be set by a real GPU's figures.
const LINE_KERNEL_MIN_LINES: usize = 256;

/// Elements few enough for the line kernel however many lines: one launch
/// beats the composed form's five there.
const LINE_KERNEL_ANY_LINES: usize = 1 << 20;
