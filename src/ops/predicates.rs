//! Elementwise tests of floats (`isnan`, `isinf`, `isfinite`) and the
//! tolerance comparisons `isclose` / `allclose`, as NumPy defines them.
//! Each is composed of elementwise ops, which a GPU fuses into one kernel.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// True where the element is NaN (a complex element: either part is).
    /// Integer and bool tensors have none.
    ///
    /// # Errors
    /// Device errors only.
    pub fn isnan(&self) -> Result<Tensor> {
        super::as_op("isnan", || {
            if self.dtype().is_complex() {
                return self.real()?.isnan()?.logical_or(&self.imag()?.isnan()?);
            }
            if !self.dtype().is_float() {
                return self.all_bool(false);
            }
            self.ne(self)
        })
    }

    /// True where the element is +inf or -inf (a complex element: either
    /// part is). Integer and bool tensors have none.
    ///
    /// # Errors
    /// Device errors only.
    pub fn isinf(&self) -> Result<Tensor> {
        super::as_op("isinf", || {
            if self.dtype().is_complex() {
                return self.real()?.isinf()?.logical_or(&self.imag()?.isinf()?);
            }
            if !self.dtype().is_float() {
                return self.all_bool(false);
            }
            self.abs()?.eq_scalar(f64::INFINITY)
        })
    }

    /// True where the element is neither NaN nor infinite (a complex
    /// element: both parts are). Always true for integer and bool tensors.
    ///
    /// # Errors
    /// Device errors only.
    pub fn isfinite(&self) -> Result<Tensor> {
        super::as_op("isfinite", || {
            if self.dtype().is_complex() {
                return self
                    .real()?
                    .isfinite()?
                    .logical_and(&self.imag()?.isfinite()?);
            }
            if !self.dtype().is_float() {
                return self.all_bool(true);
            }
            self.abs()?.lt_scalar(f64::INFINITY)
        })
    }

    /// A bool tensor of this shape, every element `value`.
    fn all_bool(&self, value: bool) -> Result<Tensor> {
        Tensor::full(self.shape(), value, DType::Bool, self.device())
    }

    /// True where `self` and `other` (broadcast together) are equal within
    /// a tolerance: `|self - other| <= atol + rtol * |other|` for finite
    /// values, exact equality for infinities, and NaN equal to NaN only
    /// when `equal_nan` (NumPy's `isclose`; its defaults are `rtol = 1e-5`,
    /// `atol = 1e-8`). Computed in the dtype of the operands (f16 in f32,
    /// rounded); for integers the difference is taken exactly (as NumPy's
    /// f64 takes it below 2^53: 16777217 is not close to 16777216 with zero
    /// tolerances) and compared in f32 with the tolerance.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::cpu();
    /// let a = Tensor::from_slice(&[1.0f32, f32::NAN, f32::INFINITY, 2.0], [4], &dev)?;
    /// let b = Tensor::from_slice(&[1.000001f32, f32::NAN, f32::INFINITY, 2.1], [4], &dev)?;
    /// let close = a.isclose(&b, 1e-5, 1e-8, true)?;
    /// assert_eq!(close.to_vec::<bool>()?, vec![true, true, true, false]);
    /// assert!(!a.allclose(&b, 1e-5, 1e-8, true)?);
    /// assert_eq!(a.isnan()?.to_vec::<bool>()?, vec![false, true, false, false]);
    /// assert_eq!(a.clamp(0.0, 1.5)?.isfinite()?.to_vec::<bool>()?, vec![true, false, true, true]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::DType` naming `isclose` for dtypes with no common one, bool
    /// or c64 operands (after promotion), or a negative or NaN tolerance; `Error::Shape` when the
    /// shapes do not broadcast; `Error::DeviceMismatch`.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        super::as_op("isclose", || {
            const OP: &str = "isclose";
            let dtype = super::elementwise::tensors_dtype_on(OP, self, other)?;
            if !dtype.is_numeric() {
                return Err(Error::dtype(OP, format!("not defined for dtype {dtype}")));
            }
            if rtol.is_nan() || atol.is_nan() || rtol < 0.0 || atol < 0.0 {
                return Err(Error::dtype(
                    OP,
                    format!("tolerances must be non-negative, got rtol {rtol}, atol {atol}"),
                ));
            }
            super::check_devices(OP, self, &[super::Arg::Tensor(other)])?;
            crate::shape::broadcast_for(OP, self.shape(), other.shape())?;
            let (a, b) = (&self.to_dtype(dtype)?, &other.to_dtype(dtype)?);
            if !a.dtype().is_float() {
                // |a - b| exactly: the larger less the smaller, in the dtype's
                // wrapping arithmetic, is the distance modulo 2^32 or 2^64
                // (signed ones at or past half of that wrap negative and get
                // it back), then in f32.
                let distance = a.maximum(b)?.sub(&a.minimum(b)?)?;
                let mut far = distance.to_dtype(DType::F32)?;
                let wrap = match a.dtype() {
                    DType::I32 => 4294967296.0,
                    DType::I64 => 18446744073709551616.0,
                    _ => 0.0,
                };
                if wrap != 0.0 {
                    let wrapped = distance.lt_scalar(0)?.to_dtype(DType::F32)?;
                    far = far.add(&wrapped.mul_scalar(wrap)?)?;
                }
                let tolerance = b
                    .to_dtype(DType::F32)?
                    .abs()?
                    .mul_scalar(rtol)?
                    .add_scalar(atol)?;
                return far.le(&tolerance)?.logical_or(&a.eq(b)?);
            }
            let tolerance = b.abs()?.mul_scalar(rtol)?.add_scalar(atol)?;
            let within = a.sub(b)?.abs()?.le(&tolerance)?;
            let finite = a.isfinite()?.logical_and(&b.isfinite()?)?;
            let close = within.logical_and(&finite)?.logical_or(&a.eq(b)?)?;
            if equal_nan {
                return close.logical_or(&a.isnan()?.logical_and(&b.isnan()?)?);
            }
            Ok(close)
        })
    }

    /// Whether every element pair is close as [`Tensor::isclose`] says
    /// (NumPy's `allclose`), blocking for the answer (native only; see
    /// [`Tensor::allclose_async`]).
    ///
    /// # Errors
    /// As [`Tensor::isclose`], and readback errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        pollster::block_on(self.allclose_async(other, rtol, atol, equal_nan))
    }

    /// [`Tensor::allclose`] on every target.
    ///
    /// # Errors
    /// As [`Tensor::allclose`].
    pub async fn allclose_async(
        &self,
        other: &Tensor,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> Result<bool> {
        let all = (self.isclose(other, rtol, atol, equal_nan))
            .and_then(|t| t.all(..))
            .map_err(|e| e.named("allclose"))?;
        all.item_async::<bool>()
            .await
            .map_err(|e| e.named("allclose"))
    }
}
