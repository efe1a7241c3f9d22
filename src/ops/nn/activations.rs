//! The piecewise-linear activations of mobile networks, as PyTorch's:
//! `relu6`, `hardsigmoid` and `hardswish`. Each is an elementwise chain (a
//! GPU with fusion on runs it as one kernel), in f32 for f16 and bf16 with
//! one rounding at the end, as PyTorch computes them.

use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

impl Tensor {
    /// PyTorch's `relu6`: `min(max(x, 0), 6)`; NaN stays NaN.
    ///
    /// # Errors
    /// `Error::DType` naming `relu6` for a tensor that is not f32, f16,
    /// bf16 or f64.
    pub fn relu6(&self) -> Result<Tensor> {
        self.activation("relu6", |x| x.clamp(0.0, 6.0))
    }

    /// PyTorch's `hardsigmoid`: `min(max(x + 3, 0), 6) / 6`; NaN stays NaN.
    ///
    /// # Errors
    /// `Error::DType` naming `hardsigmoid` for a tensor that is not f32,
    /// f16, bf16 or f64.
    pub fn hardsigmoid(&self) -> Result<Tensor> {
        self.activation("hardsigmoid", |x| {
            x.add_scalar(3.0)?.clamp(0.0, 6.0)?.div_scalar(6.0)
        })
    }

    /// PyTorch's `hardswish`: `x * min(max(x + 3, 0), 6) / 6`, the product
    /// rounded before the division, as PyTorch's; NaN stays NaN.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let x = Tensor::from_slice(&[-4.0f32, -1.5, 0.0, 3.0], [4], &Device::cpu())?;
    /// assert_eq!(x.hardswish()?.to_vec::<f32>()?, vec![0.0, -0.375, 0.0, 3.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::DType` naming `hardswish` for a tensor that is not f32, f16,
    /// bf16 or f64.
    pub fn hardswish(&self) -> Result<Tensor> {
        self.activation("hardswish", |x| {
            x.mul(&x.add_scalar(3.0)?.clamp(0.0, 6.0)?)?.div_scalar(6.0)
        })
    }

    /// `f` of this float tensor, computed in f32 for f16 and bf16 and
    /// rounded once into its dtype.
    fn activation(
        &self,
        op: &'static str,
        f: impl Fn(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        super::check_float(op, self.dtype())?;
        let compute = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        super::super::as_op(op, || f(&self.to_dtype(compute)?)?.to_dtype(self.dtype()))
    }
}
