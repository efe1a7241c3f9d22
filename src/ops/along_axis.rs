//! Ops along one axis: cumulative sums and products (a scan kernel that
//! reads the input view through its strides) and softmax / log-softmax
//! (one kernel per call computing `exp(x - max)` over its sum, so the
//! exponentials never overflow; lines past `MAX_SOFTMAX_LINE` are composed
//! from a max, a shifted exp and a sum over the axis).

use super::kinds::ScanOp;
use crate::backend::{MAX_SOFTMAX_LINE, ScanCall, SoftmaxCall, scan, softmax};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::tensor::Tensor;

impl Tensor {
    /// Running sums along `axis` (NumPy's `cumsum`): element `i` is the sum
    /// of elements `0..=i`. The dtypes are those of [`Tensor::sum`]: bool
    /// counts into i32, u8 into u32, f16 accumulates in f32, integers wrap.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range or a 0-d tensor.
    pub fn cumsum(&self, axis: isize) -> Result<Tensor> {
        self.scan("cumsum", ScanOp::Sum, axis)
    }

    /// Running products along `axis` (NumPy's `cumprod`), with the dtypes
    /// of [`Tensor::cumsum`].
    ///
    /// # Errors
    /// As [`Tensor::cumsum`].
    pub fn cumprod(&self, axis: isize) -> Result<Tensor> {
        self.scan("cumprod", ScanOp::Prod, axis)
    }

    fn scan(&self, op_name: &'static str, op: ScanOp, axis: isize) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op_name));
        }
        let axis = normalize_axis(op_name, axis, self.rank())?;
        let t = self.widened()?;
        let out = Tensor::empty_dense(self.shape().clone(), t.dtype(), self.device(), op_name)?;
        // Both go to the kernel with the scanned axis last: free views.
        let last = self.rank() as isize - 1;
        let input = t.layout().transpose(axis as isize, last)?;
        let dest = out.layout().transpose(axis as isize, last)?;
        scan(&ScanCall {
            op,
            input: t.kernel_ref(input)?,
            out: out.kernel_ref(dest)?,
        })?;
        Ok(out)
    }

    /// `exp(x) / sum(exp(x))` along `axis`, computed as `exp(x - max)` over
    /// its sum so that large inputs do not overflow. f16 is computed in f32
    /// and rounded once. A line holding +inf or only -inf gives NaN, as
    /// PyTorch.
    ///
    /// # Errors
    /// `Error::Axis`; `Error::DType` for a non-float tensor.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        let Some(axis) = self.softmax_axis("softmax", axis)? else {
            return self.contiguous_copy();
        };
        if let Some(out) = self.softmax_lines("softmax", axis, false)? {
            return Ok(out);
        }
        // Longer lines: one fresh tensor, updated in place from there on.
        let x = self.in_f32_or_wider()?;
        let e = x.sub(&x.max(axis, true)?)?;
        e.exp_()?;
        e.div_(&e.sum(axis, true)?)?;
        e.to_dtype(self.dtype())
    }

    /// `log(softmax(x))` along `axis`, computed as `(x - max) -
    /// log(sum(exp(x - max)))`, finite wherever softmax underflows to 0.
    ///
    /// # Errors
    /// As [`Tensor::softmax`].
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        let Some(axis) = self.softmax_axis("log_softmax", axis)? else {
            return self.contiguous_copy();
        };
        if let Some(out) = self.softmax_lines("log_softmax", axis, true)? {
            return Ok(out);
        }
        let x = self.in_f32_or_wider()?;
        let shifted = x.sub(&x.max(axis, true)?)?;
        let log_sum = shifted.exp()?.sum(axis, true)?.log()?;
        shifted.sub_(&log_sum)?;
        shifted.to_dtype(self.dtype())
    }

    /// The softmax of every line along `axis` (a valid axis of a non-empty
    /// float tensor) by one kernel: `None` for lines longer than one call
    /// takes, which the callers compose from reductions.
    fn softmax_lines(&self, op: &'static str, axis: isize, log: bool) -> Result<Option<Tensor>> {
        let length = self.dims()[axis as usize];
        if length > MAX_SOFTMAX_LINE {
            return Ok(None);
        }
        let out = Tensor::empty_dense(self.shape().clone(), self.dtype(), self.device(), op)?;
        // Both go to the kernel with the softmax axis last: free views.
        let last = self.rank() as isize - 1;
        softmax(&SoftmaxCall {
            log,
            input: self.kernel_ref(self.layout().transpose(axis, last)?)?,
            out: out.kernel_ref(out.layout().transpose(axis, last)?)?,
        })?;
        Ok(Some(out))
    }

    /// Checks a softmax's arguments: the resolved axis, or `None` for an
    /// empty tensor (whose result is an empty copy).
    fn softmax_axis(&self, op: &'static str, axis: isize) -> Result<Option<isize>> {
        let axis = normalize_axis(op, axis, self.rank())? as isize;
        if !self.dtype().is_float() {
            return Err(Error::dtype(
                op,
                format!(
                    "not defined for dtype {}; cast to a float dtype first",
                    self.dtype()
                ),
            ));
        }
        Ok((self.numel() > 0).then_some(axis))
    }

    /// This float tensor in the dtype a softmax computes in: f32 for f16.
    fn in_f32_or_wider(&self) -> Result<Tensor> {
        if self.dtype() == DType::F16 {
            self.to_dtype(DType::F32)
        } else {
            Ok(self.clone())
        }
    }
}
