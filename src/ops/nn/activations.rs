//! The activations of PyTorch's `torch.nn.functional` that take a
//! parameter or are built from other functions: `relu6`, `leaky_relu`,
//! `elu`, `softplus` and `mish` (`gelu`, `gelu_tanh`, `silu`,
//! `hardsigmoid`, `hardswish`, `sigmoid` and `relu` are single elementwise
//! ops).
//! Each is an elementwise chain (a GPU with fusion on runs it as one
//! kernel), in f32 for f16 and bf16 with one rounding at the end, as
//! PyTorch computes them.

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
        self.activation("relu6", |x| x()?.clamp(0.0, 6.0))
    }

    /// PyTorch's `leaky_relu`: `x` where `x > 0`, else `x * slope`
    /// (PyTorch's default slope is 0.01); NaN stays NaN.
    ///
    /// # Errors
    /// `Error::DType` naming `leaky_relu` for a tensor that is not f32,
    /// f16, bf16 or f64.
    pub fn leaky_relu(&self, slope: f64) -> Result<Tensor> {
        self.activation("leaky_relu", |x| {
            Tensor::where_cond(&x()?.gt_scalar(0.0)?, &x()?, &x()?.mul_scalar(slope)?)
        })
    }

    /// PyTorch's `elu`: `x` where `x > 0`, else `alpha * (e^x - 1)` (formed
    /// with `expm1`; PyTorch's default `alpha` is 1).
    ///
    /// # Errors
    /// `Error::DType` naming `elu` for a tensor that is not f32, f16, bf16
    /// or f64.
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.activation("elu", |x| {
            Tensor::where_cond(
                &x()?.gt_scalar(0.0)?,
                &x()?,
                &x()?.expm1()?.mul_scalar(alpha)?,
            )
        })
    }

    /// PyTorch's `softplus`: `ln(1 + e^(beta x)) / beta`, or `x` where
    /// `beta x > threshold` (PyTorch's defaults: `beta` 1, `threshold` 20).
    ///
    /// # Errors
    /// `Error::DType` naming `softplus` for a tensor that is not f32, f16,
    /// bf16 or f64.
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        self.activation("softplus", |x| {
            let soft = x()?.mul_scalar(beta)?.exp()?.log1p()?.div_scalar(beta)?;
            let linear = x()?.mul_scalar(beta)?.gt_scalar(threshold)?;
            Tensor::where_cond(&linear, &x()?, &soft)
        })
    }

    /// PyTorch's `mish`: `x * tanh(ln(1 + e^x))`.
    ///
    /// # Errors
    /// `Error::DType` naming `mish` for a tensor that is not f32, f16, bf16
    /// or f64.
    pub fn mish(&self) -> Result<Tensor> {
        self.activation("mish", |x| x()?.mul(&x()?.exp()?.log1p()?.tanh()?))
    }

    /// `f` of this float tensor, computed in f32 for f16 and bf16 and
    /// rounded once into its dtype. `f` is handed a maker of the input in
    /// the compute dtype, to call once per use: each f16 or bf16 use is a
    /// cast of its own, which a GPU's fusion folds into the one kernel
    /// (fusion folds an op into a single consumer, so a cast shared by two
    /// uses would be a kernel of its own).
    fn activation(
        &self,
        op: &'static str,
        f: impl Fn(&dyn Fn() -> Result<Tensor>) -> Result<Tensor>,
    ) -> Result<Tensor> {
        super::check_float(op, self.dtype())?;
        let compute = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        super::super::as_op(op, || f(&|| self.to_dtype(compute))?.to_dtype(self.dtype()))
    }
}
