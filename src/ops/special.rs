//! Special functions composed of elementwise ops, each one fused kernel
//! on a GPU: NumPy's `logaddexp`, `logaddexp2` and `sinc`, SciPy's `xlogy`
//! and `expit`, and PyTorch's `logit`, each computed as its reference
//! writes it (the same operations in the same order), for float dtypes.
//! (`lgamma`, `digamma` and `erfinv` are elementwise ops of their own.)

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// SciPy's `expit`, the logistic function `1 / (1 + e^-x)`: the same
    /// op as [`Tensor::sigmoid`].
    ///
    /// # Errors
    /// `Error::DType` naming `sigmoid` for dtypes that are not floats.
    pub fn expit(&self) -> Result<Tensor> {
        self.sigmoid()
    }

    /// `ln(e^x + e^y)` without overflow (NumPy's `logaddexp`): `x + ln 2`
    /// where `x == y` (infinities of one sign too), else `max(x, y) +
    /// ln(1 + e^-|x - y|)`; NaN where either is NaN. Broadcasts; float
    /// dtypes; f16 and bf16 compute in f32 and round once (as NumPy's and
    /// PyTorch's). In f32, within 2.3 ulps of the larger of the result and
    /// the operands on the CPU and 4.2 on lavapipe (the worst of sweeps of
    /// 4 million pairs; tested over every magnitude; a sum near 0 is a
    /// cancellation, as NumPy's).
    ///
    /// # Errors
    /// `Error::DType` naming `logaddexp` for dtypes that are not floats;
    /// `Error::Shape` when the shapes do not broadcast; device mismatch.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        super::as_op("logaddexp", || {
            let (x, y, dtype) = computed_apart(self, other)?;
            let far = x.sub(&y)?.abs()?.neg()?.exp()?.log1p()?;
            let general = x.maximum(&y)?.add(&far)?;
            let equal = x.add_scalar(std::f64::consts::LN_2)?;
            Tensor::where_cond(&x.eq(&y)?, &equal, &general)?.to_dtype(dtype)
        })
    }

    /// `log2(2^x + 2^y)` without overflow (NumPy's `logaddexp2`): `x + 1`
    /// where `x == y`, else `max(x, y) + log2(1 + 2^-|x - y|)`. As
    /// [`Tensor::logaddexp`] otherwise.
    ///
    /// # Errors
    /// As [`Tensor::logaddexp`], naming `logaddexp2`.
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        super::as_op("logaddexp2", || {
            let (x, y, dtype) = computed_apart(self, other)?;
            let far = x
                .sub(&y)?
                .abs()?
                .neg()?
                .exp2()?
                .log1p()?
                .mul_scalar(std::f64::consts::LOG2_E)?;
            let general = x.maximum(&y)?.add(&far)?;
            let equal = x.add_scalar(1.0)?;
            Tensor::where_cond(&x.eq(&y)?, &equal, &general)?.to_dtype(dtype)
        })
    }

    /// `x * ln(y)`, and 0 where `x` is 0 and `y` is not NaN (SciPy's
    /// `xlogy`: `0 * ln(0)` is 0). Broadcasts; float dtypes, the logarithm
    /// in the result's (f32 for f16 and bf16, rounded once). In f32, within
    /// 2 ulps on the CPU and 8 on lavapipe (tested).
    ///
    /// # Errors
    /// As [`Tensor::logaddexp`], naming `xlogy`.
    pub fn xlogy(&self, y: &Tensor) -> Result<Tensor> {
        super::as_op("xlogy", || {
            // Both as views of the result's shape: ops of y alone would be
            // kernels of their own beside the broadcast ones.
            // The dtype of the operands as given: a 0-d one broadcast
            // would promote as a dimensioned one.
            let common = Tensor::result_type(self, y)?;
            let shape = crate::shape::broadcast_shapes(self.shape(), y.shape())?;
            let (x, y) = (self.broadcast_to(shape.clone())?, y.broadcast_to(shape)?);
            let (x, y, dtype) = computed_apart_in(&x, &y, common)?;
            let zero = x.eq_scalar(0.0)?.logical_and(&y.isnan()?.logical_not()?)?;
            x.mul(&y.log()?)?.masked_fill(&zero, 0.0)?.to_dtype(dtype)
        })
    }

    /// The normalised sinc, `sin(pi x) / (pi x)`, 1 at 0 (NumPy's `sinc`,
    /// which divides at the dtype's epsilon where `pi x` is 0: 1 in every
    /// float dtype). Float dtypes. In f32, within an ulp or 2e-7 (pi x
    /// rounds to f32 first, as in NumPy's f32 sinc).
    ///
    /// # Errors
    /// `Error::DType` naming `sinc` for dtypes that are not floats.
    pub fn sinc(&self) -> Result<Tensor> {
        super::as_op("sinc", || {
            // Made twice, each read once: fusion folds a chain whose
            // intermediates have one reader, so one kernel computes it all.
            // The dtype's epsilon: 1e-20 (NumPy's before 2.x) is 0 in f16.
            let eps = match self.dtype() {
                DType::F16 => f64::from(half::f16::EPSILON),
                DType::BF16 => f64::from(half::bf16::EPSILON),
                DType::F64 => f64::EPSILON,
                DType::F32 | DType::C64 => f64::from(f32::EPSILON),
                other => {
                    return Err(crate::error::Error::dtype(
                        "sinc",
                        format!("takes a float tensor, got {other}"),
                    ));
                }
            };
            let pi_x = || self.mul_scalar(std::f64::consts::PI);
            let y = || pi_x()?.masked_fill(&pi_x()?.eq_scalar(0.0)?, eps);
            y()?.sin()?.div(&y()?)
        })
    }

    /// The log-odds `ln(p / (1 - p))` (PyTorch's `logit`, SciPy's), of `p`
    /// clamped to `[eps, 1 - eps]` first when `eps` is given, as PyTorch
    /// clamps (`p < eps` gives `eps`, else `p > 1 - eps` gives `1 - eps`,
    /// so an `eps` past 1/2 sends small `p` to `eps`; a NaN `eps` clamps
    /// nothing). Float dtypes; f16 and bf16 compute in f32 and round once,
    /// their bounds `eps` and `1 - eps` in f32 as PyTorch's CUDA kernel
    /// has them (its CPU rounds `1 - eps` to the half type first: f16
    /// `logit(1, eps = 1e-6)` is inf there, 13.8 here).
    /// In f32, within an ulp on the CPU. On a GPU the adapter's log decides
    /// (WGSL lets it be 3 ulp off): within 3.9 ulp on lavapipe (the worst
    /// of a million values in [0.25, 0.4], whose log is 3.2 ulp off just
    /// below 1/2), or 2.3e-7 near 1/2.
    ///
    /// # Errors
    /// `Error::DType` naming `logit` for dtypes that are not floats.
    pub fn logit(&self, eps: Option<f64>) -> Result<Tensor> {
        super::as_op("logit", || {
            let dtype = self.dtype();
            if !dtype.is_float() {
                return Err(Error::dtype(
                    "logit",
                    format!("not defined for {dtype}; cast to a float dtype first"),
                ));
            }
            let x = widened(self)?;
            // Made twice, each read once (see `sinc`).
            let p = || match eps {
                Some(e) if e <= 1.0 - e => x.clamp(e, 1.0 - e),
                // Past 1/2 the bounds cross: below eps is eps, the rest
                // 1 - eps (NaN stays).
                Some(e) if !e.is_nan() => x
                    .masked_fill(&x.ge_scalar(e)?, 1.0 - e)?
                    .masked_fill(&x.lt_scalar(e)?, e),
                _ => Ok(x.clone()),
            };
            p()?.div(&p()?.neg()?.add_scalar(1.0)?)?
                .log()?
                .to_dtype(dtype)
        })
    }
}

/// `a` and `b` in their common dtype `common` where it is a float one (each
/// branch of a two-operand function then computes in it, whichever operand
/// came first: `x + ln 2` of an f16 `x` beside an f32 `y` is f32's); as
/// they are otherwise (the ops refuse what they cannot take).
///
/// # Errors
/// As [`Tensor::to_dtype`].
fn common_float(a: &Tensor, b: &Tensor, common: DType) -> Result<(Tensor, Tensor)> {
    if !common.is_float() {
        return Ok((a.clone(), b.clone()));
    }
    Ok((a.to_dtype(common)?, b.to_dtype(common)?))
}

/// [`common_float`], f16 and bf16 widened to the f32 they compute in, and
/// the common dtype the result is rounded to once.
///
/// # Errors
/// As [`Tensor::result_type`].
fn computed_apart(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, DType)> {
    computed_apart_in(a, b, Tensor::result_type(a, b)?)
}

/// [`computed_apart`] in `common`, their result type.
fn computed_apart_in(a: &Tensor, b: &Tensor, common: DType) -> Result<(Tensor, Tensor, DType)> {
    let (a, b) = common_float(a, b, common)?;
    let dtype = a.dtype();
    Ok((widened(&a)?, widened(&b)?, dtype))
}

/// `t` in the f32 that f16 and bf16 compute in; other dtypes as they are.
fn widened(t: &Tensor) -> Result<Tensor> {
    match t.dtype() {
        DType::F16 | DType::BF16 => t.to_dtype(DType::F32),
        _ => Ok(t.clone()),
    }
}
