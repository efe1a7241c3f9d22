//! Vector norms over any axes (PyTorch's `linalg.vector_norm`; the
//! Frobenius norm of a matrix is the 2-norm over its two axes).

use super::reduce::Axes;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// The `p`-norm of the elements over `axes`: `(sum |x|^p)^(1/p)`, with
    /// `p = inf` the largest `|x|`, `p = -inf` the smallest and `p = 0` the
    /// count of non-zero elements; an empty list of axes is every axis, as
    /// PyTorch's `dim=()`. c64 elements count by their modulus.
    /// Integers are taken as f32; f16 is computed in f32 and rounded to
    /// f16, so squares do not overflow it.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let m = Tensor::from_slice(&[3.0f32, -4.0, 0.0, 12.0], [2, 2], &Device::cpu())?;
    /// assert_eq!(m.norm(2.0, ..)?.item::<f32>()?, 13.0); // Frobenius
    /// assert_eq!(m.norm(1.0, 1)?.to_vec::<f32>()?, vec![7.0, 12.0]);
    /// assert_eq!(m.norm(f64::INFINITY, 0)?.to_vec::<f32>()?, vec![3.0, 12.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` naming `norm` for a NaN `p`; `Error::DType` for
    /// bool tensors; axis errors as [`Tensor::sum`]; `Error::Argument` for
    /// `p = inf` or a negative `p` over an empty axis (PyTorch's: they have
    /// no identity, as the maximum of nothing).
    pub fn norm(&self, p: f64, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op("norm", || self.norm_axes(p, axes.into(), false))
    }

    /// [`Tensor::norm`] with the reduced axes kept, with length 1 (NumPy's
    /// `keepdims=True`), so the result broadcasts against `self`: `x /
    /// x.norm_keepdim(2.0, -1)?` normalises each row.
    ///
    /// # Errors
    /// As [`Tensor::norm`].
    pub fn norm_keepdim(&self, p: f64, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op("norm", || self.norm_axes(p, axes.into(), true))
    }

    fn norm_axes(&self, p: f64, axes: Axes, keepdim: bool) -> Result<Tensor> {
        const OP: &str = "norm";
        if p.is_nan() {
            return Err(Error::argument(OP, "p is NaN"));
        }
        // No axes is every axis, as PyTorch's `dim=()` (where `sum` of no
        // axes, as NumPy's, reduces nothing).
        let axes = match axes {
            Axes::List(list) if list.is_empty() => Axes::All,
            axes => axes,
        };
        // A negative p's norm of nothing is 0^(1/p): PyTorch refuses it, as
        // it refuses the maximum of nothing (p = inf).
        if p < 0.0 {
            self.check_not_empty(OP, &axes)?;
        }
        let abs = match self.dtype() {
            DType::Bool => {
                return Err(Error::dtype(OP, "not defined for dtype bool"));
            }
            // p = 0 counts the elements that are not zero by their bits, as
            // a cast to bool does, so a GPU that flushes subnormals still
            // counts them (PyTorch's `x != 0`).
            DType::F64 if p == 0.0 => self.as_bool()?.to_dtype(DType::F64)?,
            _ if p == 0.0 => self.as_bool()?.to_dtype(DType::F32)?,
            DType::C64 => self.abs()?,
            DType::F16 | DType::BF16 | DType::I32 | DType::I64 | DType::U32 | DType::U8 => {
                self.to_dtype(DType::F32)?.abs()?
            }
            _ => self.abs()?,
        };
        let norm = norm_of(&abs, p, axes, keepdim).map_err(|e| match e {
            // The reduction's errors (axes, the maximum of nothing) name norm.
            Error::Shape { msg, .. } => Error::Shape { op: OP, msg },
            Error::Argument { msg, .. } => Error::Argument { op: OP, msg },
            Error::Axis { axis, rank, .. } => Error::Axis { op: OP, axis, rank },
            other => other,
        })?;
        if self.dtype().is_half() {
            return norm.to_dtype(self.dtype());
        }
        Ok(norm)
    }
}

/// The norm of the magnitudes `abs` (for `p = 0`, 1 where non-zero).
fn norm_of(abs: &Tensor, p: f64, axes: Axes, keepdim: bool) -> Result<Tensor> {
    Ok(if p == f64::INFINITY {
        abs.max_axes(axes, keepdim)?
    } else if p == f64::NEG_INFINITY {
        abs.min_axes(axes, keepdim)?
    } else if p == 1.0 || p == 0.0 {
        // (p = 0's magnitudes are already 0 or 1.)
        abs.sum_axes(axes, keepdim)?
    } else if p == 2.0 {
        abs.square()?.sum_axes(axes, keepdim)?.sqrt()?
    } else {
        abs.pow_scalar(p)?
            .sum_axes(axes, keepdim)?
            .pow_scalar(1.0 / p)?
    })
}
