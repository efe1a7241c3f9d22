//! The activations of PyTorch's `torch.nn.functional` that take a
//! parameter or are built from other functions: `relu6`, `leaky_relu`,
//! `elu`, `softplus`, `mish`, `selu`, `celu`, `hardtanh`, `softsign`,
//! `logsigmoid`, `tanhshrink`, `softshrink`, `hardshrink` and `threshold`
//! (`gelu`, `gelu_tanh`, `silu`, `hardsigmoid`, `hardswish`, `sigmoid` and
//! `relu` are single elementwise ops).
//! Each is an elementwise chain (a GPU with fusion on runs it as one
//! kernel), in f32 for f16 and bf16 with one rounding at the end, as
//! PyTorch's kernels compute them (`softsign` and `tanhshrink`, which
//! PyTorch composes from ops that each round an f16 or bf16 result, come
//! out nearer the function than PyTorch's there).

use crate::dtype::DType;
use crate::error::{Error, Result};
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

    /// PyTorch's `selu`: `scale * x` where `x > 0`, else `scale * alpha *
    /// (e^x - 1)` (`expm1`), with PyTorch's constants `alpha =
    /// 1.6732632423543772` and `scale = 1.0507009873554805`.
    ///
    /// # Errors
    /// `Error::DType` naming `selu` for a tensor that is not f32, f16,
    /// bf16 or f64.
    pub fn selu(&self) -> Result<Tensor> {
        const ALPHA: f64 = 1.673_263_242_354_377_3;
        const SCALE: f64 = 1.050_700_987_355_480_5;
        self.activation("selu", |x| {
            Tensor::where_cond(
                &x()?.gt_scalar(0.0)?,
                &x()?.mul_scalar(SCALE)?,
                &x()?.expm1()?.mul_scalar(ALPHA * SCALE)?,
            )
        })
    }

    /// PyTorch's `celu`: `x` where `x > 0`, else `alpha * (e^(x / alpha) -
    /// 1)` (`expm1`, of `x` times `1 / alpha` as PyTorch's; its default
    /// `alpha` is 1).
    ///
    /// # Errors
    /// `Error::Argument` naming `celu` for an `alpha` of 0 or NaN;
    /// `Error::DType` for a tensor that is not f32, f16, bf16 or f64.
    pub fn celu(&self, alpha: f64) -> Result<Tensor> {
        if alpha == 0.0 || alpha.is_nan() {
            return Err(Error::argument("celu", format!("alpha is {alpha}")));
        }
        self.activation("celu", |x| {
            Tensor::where_cond(
                &x()?.gt_scalar(0.0)?,
                &x()?,
                &x()?.mul_scalar(1.0 / alpha)?.expm1()?.mul_scalar(alpha)?,
            )
        })
    }

    /// PyTorch's `hardtanh`: `x` clamped to `[min, max]` (PyTorch's
    /// defaults are -1 and 1); NaN stays NaN.
    ///
    /// # Errors
    /// `Error::Argument` naming `hardtanh` for `min > max` or a NaN bound
    /// (PyTorch's "min_val cannot be greater than max_val");
    /// `Error::DType` for a tensor that is not f32, f16, bf16 or f64.
    pub fn hardtanh(&self, min: f64, max: f64) -> Result<Tensor> {
        if min.is_nan() || max.is_nan() || min > max {
            return Err(Error::argument(
                "hardtanh",
                format!("min {min} and max {max}: min cannot be greater than max"),
            ));
        }
        self.activation("hardtanh", |x| x()?.clamp(min, max))
    }

    /// PyTorch's `softsign`: `x / (1 + |x|)` (NaN at the infinities, as
    /// PyTorch's).
    ///
    /// # Errors
    /// `Error::DType` naming `softsign` for a tensor that is not f32, f16,
    /// bf16 or f64.
    pub fn softsign(&self) -> Result<Tensor> {
        self.activation("softsign", |x| x()?.div(&x()?.abs()?.add_scalar(1.0)?))
    }

    /// PyTorch's `logsigmoid`: `ln(1 / (1 + e^-x))`, computed as `min(x, 0)
    /// - ln(1 + e^-|x|)` so that neither tail overflows.
    ///
    /// # Errors
    /// `Error::DType` naming `logsigmoid` for a tensor that is not f32,
    /// f16, bf16 or f64.
    pub fn logsigmoid(&self) -> Result<Tensor> {
        self.activation("logsigmoid", |x| {
            x()?.minimum_scalar(0.0)?
                .sub(&x()?.abs()?.neg()?.exp()?.log1p()?)
        })
    }

    /// PyTorch's `tanhshrink`: `x - tanh(x)` (which cancels near 0: its
    /// error there is of the order of `x`'s ulp, as PyTorch's).
    ///
    /// # Errors
    /// `Error::DType` naming `tanhshrink` for a tensor that is not f32,
    /// f16, bf16 or f64.
    pub fn tanhshrink(&self) -> Result<Tensor> {
        self.activation("tanhshrink", |x| x()?.sub(&x()?.tanh()?))
    }

    /// PyTorch's `softshrink`: `x - lambda` where `x > lambda`, `x +
    /// lambda` where `x < -lambda`, else 0, computed as `x - clamp(x,
    /// -lambda, lambda)`; NaN stays NaN (PyTorch's default `lambda` is
    /// 0.5). The zeros are +0, as PyTorch's vectorised loop gives (its
    /// scalar loop, for a tensor's last few elements, gives `x * 0`).
    ///
    /// `lambda` is rounded to the tensor's dtype first, as PyTorch's.
    ///
    /// # Errors
    /// `Error::Argument` naming `softshrink` for a negative or NaN
    /// `lambda` (PyTorch's "lambda must be greater or equal to 0") or a
    /// finite one past the dtype's range;
    /// `Error::DType` for a tensor that is not f32, f16, bf16 or f64.
    pub fn softshrink(&self, lambda: f64) -> Result<Tensor> {
        if lambda.is_nan() || lambda < 0.0 {
            return Err(Error::argument(
                "softshrink",
                format!("lambda is {lambda}; it must be 0 or more"),
            ));
        }
        let lambda = self.parameter("softshrink", "lambda", lambda)?;
        self.activation("softshrink", |x| x()?.sub(&x()?.clamp(-lambda, lambda)?))
    }

    /// PyTorch's `hardshrink`: 0 where `-lambda <= x <= lambda`, else `x`
    /// (all of `x` for a negative or NaN `lambda`, as PyTorch's); NaN
    /// stays NaN (PyTorch's default `lambda` is 0.5).
    ///
    /// `lambda` is rounded to the tensor's dtype first, as PyTorch's
    /// (f16's `hardshrink(0.3)` zeroes 0.30004883, f16's 0.3).
    ///
    /// # Errors
    /// `Error::Argument` naming `hardshrink` for a finite `lambda` past
    /// the dtype's range; `Error::DType` for a tensor that is not f32,
    /// f16, bf16 or f64.
    pub fn hardshrink(&self, lambda: f64) -> Result<Tensor> {
        let lambda = self.parameter("hardshrink", "lambda", lambda)?;
        self.activation("hardshrink", |x| {
            x()?.masked_fill(&x()?.abs()?.le_scalar(lambda)?, 0.0)
        })
    }

    /// PyTorch's `threshold`: `value` where `x <= threshold`, else `x`
    /// (NaN stays NaN: it is not `<=` anything).
    ///
    /// # Errors
    /// `Error::Argument` naming `threshold` for a finite `value` past the
    /// dtype's range (PyTorch's "cannot be converted without overflow");
    /// `Error::DType` for a tensor that is not f32, f16, bf16 or f64.
    pub fn threshold(&self, threshold: f64, value: f64) -> Result<Tensor> {
        self.parameter("threshold", "value", value)?;
        self.activation("threshold", |x| {
            x()?.masked_fill(&x()?.le_scalar(threshold)?, value)
        })
    }

    /// A parameter as PyTorch's kernels take it (`scalar.to<scalar_t>()`):
    /// rounded to this tensor's dtype (f16's 0.3 is 0.30004883).
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for a finite value past the dtype's
    /// range (PyTorch's "cannot be converted without overflow").
    fn parameter(&self, op: &'static str, what: &str, value: f64) -> Result<f64> {
        let (rounded, max) = match self.dtype() {
            DType::F16 => (half::f16::from_f64(value).to_f64(), 65504.0),
            DType::BF16 => (
                half::bf16::from_f64(value).to_f64(),
                3.389_531_389_251_535_5e38,
            ),
            DType::F32 => (f64::from(value as f32), f64::from(f32::MAX)),
            _ => (value, f64::MAX),
        };
        if value.is_finite() && value.abs() > max {
            return Err(Error::argument(
                op,
                format!("{what} {value} overflows dtype {}", self.dtype()),
            ));
        }
        Ok(rounded)
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
