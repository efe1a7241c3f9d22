//! Creating tensors shaped like another (`zeros_like` ...) and evenly
//! spaced values (`linspace`).

use super::Tensor;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use half::f16;

impl Tensor {
    /// A contiguous zero tensor with this shape, dtype and device.
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), self.dtype(), self.device())
    }

    /// A contiguous tensor of ones (`true`) with this shape, dtype and device.
    ///
    /// # Errors
    /// As [`Tensor::ones`].
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape(), self.dtype(), self.device())
    }

    /// A contiguous tensor of `value` with this shape, dtype and device.
    ///
    /// # Errors
    /// As [`Tensor::full`].
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        Tensor::full(self.shape(), value, self.dtype(), self.device())
            .map_err(|e| e.named("full_like"))
    }

    /// A contiguous tensor with this shape, dtype and device whose elements
    /// are unspecified until written (on either device whatever its pooled
    /// buffer held, or zeros; every bit set on the CPU in builds with debug
    /// assertions), as NumPy's `empty_like`.
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn empty_like(&self) -> Result<Tensor> {
        Tensor::empty_dense(
            self.shape().clone(),
            self.dtype(),
            self.device(),
            "empty_like",
        )
    }

    /// `n` evenly spaced values from `start` to `end`, both included
    /// (NumPy's `linspace`): computed in f64 as `start + i * step` (`start +
    /// i / (n - 1) * (end - start)` where the step underflows to 0, as
    /// NumPy's), the last value exactly `end`, then rounded to `dtype` (integer dtypes round
    /// toward negative infinity, as NumPy does; values past an integer
    /// dtype's range saturate, where NumPy's cast is undefined).
    ///
    /// ```
    /// use webtensor::{DType, Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::linspace(0.0, 1.0, 5, DType::F32, &Device::cpu())?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` naming `linspace` for a non-finite end point;
    /// `Error::DType` for bool; device errors as [`Tensor::from_vec`].
    pub fn linspace(
        start: f64,
        end: f64,
        n: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "linspace";
        if !start.is_finite() || !end.is_finite() {
            return Err(Error::argument(
                OP,
                format!("end points must be finite, got {start} and {end}"),
            ));
        }
        crate::shape::Shape::from([n]).check(OP)?;
        let (delta, div) = (end - start, n.max(2) as f64 - 1.0);
        let step = if n > 1 { delta / div } else { 0.0 };
        // NumPy's: where the step underflows to 0, `i / div * delta`.
        let underflow = n > 1 && step == 0.0 && delta != 0.0;
        let value = move |i: usize| {
            if n > 1 && i == n - 1 {
                end
            } else if underflow {
                start + i as f64 / div * delta
            } else {
                start + i as f64 * step
            }
        };
        let floor = move |i: usize| value(i).floor();
        match dtype {
            DType::F32 => host::<f32>(OP, n, value, device),
            DType::F16 => host::<f16>(OP, n, value, device),
            DType::BF16 => host::<half::bf16>(OP, n, value, device),
            DType::F64 => host::<f64>(OP, n, value, device),
            DType::I32 => host::<i32>(OP, n, floor, device),
            DType::I64 => host::<i64>(OP, n, floor, device),
            DType::U32 => host::<u32>(OP, n, floor, device),
            DType::U8 => host::<u8>(OP, n, floor, device),
            DType::C64 => {
                let re = host::<f32>(OP, n, value, device)?;
                Tensor::complex(&re, &re.zeros_like()?)
            }
            DType::Bool => Err(Error::dtype(OP, "not defined for dtype bool")),
        }
    }
}

/// A 1-D tensor of `n` values `f(i)`, converted to `T` as Rust's `as` does.
fn host<T: Element>(
    op: &'static str,
    n: usize,
    f: impl Fn(usize) -> f64,
    device: &Device,
) -> Result<Tensor> {
    Tensor::from_fn(op, n, |i| T::from_f64(f(i)), device)
}
