//! The public reductions, each in two forms: `sum(axes)` drops the reduced
//! axes and `sum_keepdim(axes)` keeps them with length 1 (NumPy's
//! `keepdims=True`), so no call ends in a bare `true` or `false`. The work
//! is done in `reduce.rs`.

use super::reduce::Axes;
use crate::error::Result;
use crate::tensor::Tensor;

/// Writes a reduction and its `_keepdim` twin over the crate-private
/// `<name>_axes(axes, [extra,] keepdim)` that computes both.
macro_rules! reductions {
    ($(
        $(#[$doc:meta])*
        $name:ident / $keep:ident => $inner:ident ($axes:ident $(, $arg:ident: $ty:ty)?);
    )*) => {$(
        $(#[$doc])*
        pub fn $name(&self, $axes: impl Into<Axes> $(, $arg: $ty)?) -> Result<Tensor> {
            self.$inner($axes.into() $(, $arg)?, false)
                .map_err(|e| e.named(stringify!($name)))
        }

        #[doc = concat!(
            "[`Tensor::", stringify!($name), "`] with the reduced axes kept, with length 1 ",
            "(NumPy's `keepdims=True`), so the result broadcasts against `self`.\n\n",
            "# Errors\nAs [`Tensor::", stringify!($name), "`]."
        )]
        pub fn $keep(&self, $axes: impl Into<Axes> $(, $arg: $ty)?) -> Result<Tensor> {
            self.$inner($axes.into() $(, $arg)?, true)
                .map_err(|e| e.named(stringify!($name)))
        }
    )*};
}

impl Tensor {
    reductions! {
        /// Sum over `axes` (wrapping for integers). bool sums count into i32
        /// and u8 sums into u32; other dtypes keep theirs, f16 accumulating in
        /// f32. The sum of no elements is 0. A 0-d tensor is one line of one
        /// element along axis 0 or -1, as PyTorch takes it (here and in
        /// every reduction): over it the result is the tensor's value, 0-d.
        ///
        /// ```
        /// use webtensor::{Device, Tensor};
        /// let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &Device::cpu())?;
        /// assert_eq!(t.sum(..)?.item::<f32>()?, 21.0);
        /// assert_eq!(t.sum(-1)?.to_vec::<f32>()?, vec![6.0, 15.0]);
        /// assert_eq!(t.sum_keepdim(-1)?.dims(), &[2, 1]);
        /// # Ok::<(), webtensor::Error>(())
        /// ```
        ///
        /// # Errors
        /// `Error::Axis` for an axis out of range, `Error::Argument` for a
        /// repeated axis; on a GPU, `Error::TooLarge` for a view more than
        /// 2^16 of its kernels would read (a broadcast view of 2^47
        /// elements and more), a rank-8 view whose reduced axes span more
        /// than one storage binding (its parts have no axis left to stack
        /// on), or buffers past the device's limits, and
        /// `Error::OutOfMemory`.
        sum / sum_keepdim => sum_axes(axes);

        /// Product over `axes`, with the dtypes of [`Tensor::sum`]; the
        /// product of no elements is 1.
        ///
        /// # Errors
        /// As [`Tensor::sum`]; `Error::DType` for c64.
        prod / prod_keepdim => prod_axes(axes);

        /// Arithmetic mean over `axes`: floats keep their dtype (f16
        /// accumulates in f32), integers and bool give f32, from their
        /// exact sum in i64 (within an ulp of the mean: NumPy's, in f64,
        /// rounded; past 2^63 the sum of the differences from the least
        /// element wraps). The mean of no elements is NaN.
        ///
        /// # Errors
        /// As [`Tensor::sum`].
        mean / mean_keepdim => mean_axes(axes);

        /// Maximum over `axes`; NaN if any element is NaN (as NumPy's `max`).
        ///
        /// # Errors
        /// As [`Tensor::sum`], and `Error::Argument` for an empty reduced axis
        /// (the maximum of nothing is undefined); `Error::DType` for c64.
        max / max_keepdim => max_axes(axes);

        /// Minimum over `axes`; NaN if any element is NaN.
        ///
        /// # Errors
        /// As [`Tensor::max`].
        min / min_keepdim => min_axes(axes);

        /// Variance over `axes`: the mean squared deviation from the mean,
        /// divided by `count - ddof` (`ddof = 0` as NumPy's default, 1 for the
        /// sample variance as PyTorch's). Integers give f32: their
        /// differences from the least element of their line are exact
        /// integers, cast to f32, so values past f32's 2^24 (Unix times)
        /// keep their variance; f16 is computed in f32 and rounded once. A
        /// divisor of zero or less gives inf or NaN, as NumPy. The sum is
        /// the corrected two-pass one (the squared deviations from the mean
        /// less the square of their sum over the count), whose error does
        /// not grow with the mean's rounding: values on a coarse grid over
        /// a large offset (f32 integers past a million) keep their
        /// variance's digits. Squares past the dtype's range give inf
        /// (NumPy's f32 too).
        ///
        /// # Errors
        /// As [`Tensor::sum`]; `Error::DType` for c64; on a GPU, a
        /// reduction of more elements than one kernel takes makes the
        /// deviations as a tensor: `Error::TooLarge` or
        /// `Error::OutOfMemory` where it does not fit (a broadcast view of
        /// billions of elements).
        var / var_keepdim => var_axes(axes, ddof: usize);

        /// Standard deviation: the square root of [`Tensor::var`], with the
        /// same `ddof`; f16 and bf16 take the root in f32 and round once,
        /// as PyTorch's (NumPy rounds the variance first).
        ///
        /// # Errors
        /// As [`Tensor::var`].
        std / std_keepdim => std_axes(axes, ddof: usize);

        /// True where every element over `axes` is true (non-zero for other
        /// dtypes); true over no elements.
        ///
        /// # Errors
        /// As [`Tensor::sum`].
        all / all_keepdim => all_axes(axes);

        /// True where any element over `axes` is true (non-zero for other
        /// dtypes); false over no elements.
        ///
        /// # Errors
        /// As [`Tensor::sum`].
        any / any_keepdim => any_axes(axes);

        /// Index (i32) of the first maximum along `axis`, or into the
        /// row-major flattened tensor for `..`; a NaN counts as the maximum
        /// (as NumPy).
        ///
        /// # Errors
        /// `Error::Argument` for several axes or an empty reduced axis,
        /// `Error::Axis` for an axis out of range, `Error::DType` for c64,
        /// `Error::TooLarge` for a tensor of more than `i32::MAX` elements
        /// (even along an axis whose indices fit i32).
        argmax / argmax_keepdim => argmax_axes(axis);

        /// Index (i32) of the first minimum along `axis` (or over all
        /// elements for `..`); a NaN counts as the minimum.
        ///
        /// # Errors
        /// As [`Tensor::argmax`].
        argmin / argmin_keepdim => argmin_axes(axis);
    }
}
