//! `logsumexp` over any axes (PyTorch's `torch.logsumexp`): the log of a
//! sum of exponentials, shifted by the largest element so that it neither
//! overflows nor underflows.

use super::reduce::Axes;
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
    /// f32 and rounded once. An empty list of axes is every axis, as
    /// PyTorch's `dim=()`.
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
        let x = match self.dtype() {
            DType::C64 => {
                return Err(Error::dtype(OP, "not defined for dtype c64"));
            }
            DType::F64 | DType::F32 => self.clone(),
            _ => self.to_dtype(DType::F32)?,
        };
        let reduced = (0..self.rank()).any(|k| mask[k] && self.dims()[k] == 0);
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
        if self.dtype().is_half() {
            return out.to_dtype(self.dtype());
        }
        Ok(out)
    }
}
