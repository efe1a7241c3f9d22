//! The activations of PyTorch's `torch.nn.functional` that read more than
//! one value per output: `glu` (one half of an axis gated by the other)
//! and `prelu` (a learned slope per channel). Each is one elementwise
//! chain over views (a GPU with fusion on runs it as one kernel), in f32
//! for f16 and bf16 with one rounding at the end.

use super::{check_float, is_float};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::ops::{Arg, check_devices};
use crate::tensor::Tensor;

impl Tensor {
    /// PyTorch's `glu`: the first half `a` of `axis` times the sigmoid of
    /// the second half `b`, `a * sigmoid(b)`; the result has half the
    /// length along `axis` (PyTorch's default axis is -1).
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let x = Tensor::from_slice(&[2.0f32, 4.0, 0.0, 100.0], [4], &Device::cpu())?;
    /// assert_eq!(x.glu(-1)?.to_vec::<f32>()?, vec![1.0, 4.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `glu` for a 0-d tensor or an odd length along
    /// `axis`; `Error::Axis` for an axis out of range; `Error::DType` for
    /// a tensor that is not f32, f16, bf16 or f64.
    pub fn glu(&self, axis: isize) -> Result<Tensor> {
        const OP: &str = "glu";
        crate::ops::as_op(OP, || {
            check_float(OP, self.dtype())?;
            if self.rank() == 0 {
                return Err(Error::shape(OP, "takes no 0-d tensor"));
            }
            let a = normalize_axis(OP, axis, self.rank())?;
            let length = self.dims()[a];
            if !length.is_multiple_of(2) {
                return Err(Error::shape(
                    OP,
                    format!(
                        "axis {axis} of shape {} has odd length {length}; it must halve",
                        self.shape()
                    ),
                ));
            }
            let half = length / 2;
            let compute = compute_dtype(self.dtype());
            let gate = self.narrow(a as isize, half, half)?.to_dtype(compute)?;
            let value = self.narrow(a as isize, 0, half)?.to_dtype(compute)?;
            value.mul(&gate.sigmoid()?)?.to_dtype(self.dtype())
        })
    }

    /// PyTorch's `prelu`: `x` where `x > 0`, else `weight * x`, with
    /// `weight` one slope for every element (one element) or one per
    /// channel, axis 1 (shape `(channels,)`); a tensor of rank 0 or 1 has
    /// no channel axis and takes one slope. NaN stays NaN. The result has
    /// `x`'s dtype; the product is formed in f32 (f64 for f64 `x`).
    ///
    /// # Errors
    /// `Error::Shape` naming `prelu` for a `weight` of rank above 1 or
    /// whose length is neither 1 nor the channel count; `Error::DType` for
    /// a tensor or weight that is not f32, f16, bf16 or f64;
    /// `Error::DeviceMismatch`.
    pub fn prelu(&self, weight: &Tensor) -> Result<Tensor> {
        const OP: &str = "prelu";
        crate::ops::as_op(OP, || {
            check_float(OP, self.dtype())?;
            check_devices(OP, self, &[Arg::Tensor(weight)])?;
            if !is_float(weight.dtype()) {
                return Err(Error::dtype(
                    OP,
                    format!("a weight of dtype {}", weight.dtype()),
                ));
            }
            let channels = if self.rank() >= 2 { self.dims()[1] } else { 1 };
            let count = weight.numel();
            if weight.rank() > 1 || (count != 1 && count != channels) {
                return Err(Error::shape(
                    OP,
                    format!(
                        "a weight of shape {} for input of shape {}: it must have 1 or {channels} \
                         elements (one per channel, axis 1), in at most one axis",
                        weight.shape(),
                        self.shape()
                    ),
                ));
            }
            let compute = compute_dtype(self.dtype());
            let slope = if count == 1 {
                weight.reshape(Vec::<usize>::new())?
            } else {
                // (channels, 1, ...) broadcasts along axis 1.
                let mut dims = vec![1; self.rank() - 1];
                dims[0] = channels;
                weight.reshape(dims)?
            };
            let slope = slope.to_dtype(compute)?;
            let x = || self.to_dtype(compute);
            Tensor::where_cond(&x()?.gt_scalar(0.0)?, &x()?, &x()?.mul(&slope)?)?
                .to_dtype(self.dtype())
        })
    }
}

/// The dtype the gated activations compute in: f64 for f64, else f32.
fn compute_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}
