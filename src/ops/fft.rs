//! Discrete Fourier transforms with NumPy's names and semantics (`fft`,
//! `ifft`, `rfft`, `irfft` over one axis or several, `fftfreq`,
//! `rfftfreq`, `fftshift`, `ifftshift`), over any view: each axis is one
//! call reading its input through the view's strides (`fft_lines.rs`).
//! Real inputs are computed in f32 (f16 and bf16 read as they are stored,
//! other real dtypes cast to f32 first) and give c64 spectra; there is no
//! complex128.

use super::Axes;
use super::fft_lines::transform_axis;
use crate::backend::FftRead;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::shape::{MAX_RANK, Shape};
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// How a transform is scaled (NumPy's and PyTorch's `norm`), for a
/// transform of `n` points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FftNorm {
    /// The forward transform unscaled, the inverse by `1/n` (the default).
    #[default]
    Backward,
    /// Both by `1/sqrt(n)`: the transforms are unitary.
    Ortho,
    /// The forward transform by `1/n`, the inverse unscaled.
    Forward,
}

impl FftNorm {
    /// The factor of a transform of `n` points.
    fn scale(self, n: usize, inverse: bool) -> f32 {
        let n = n as f64;
        let s = match (self, inverse) {
            (FftNorm::Ortho, _) => 1.0 / n.sqrt(),
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n,
            _ => 1.0,
        };
        s as f32
    }
}

/// What an FFT transforms: its axes, the length of each transform and
/// its scaling. Integers convert to a transform along that axis, so
/// `x.fft(-1)` is NumPy's `np.fft.fft(x)`.
///
/// ```
/// use webtensor::{Device, Fft, FftNorm, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
/// let along_rows = x.fft(-1)?; // np.fft.fft(x)
/// let padded = x.fft(Fft::along(0).size(4).norm(FftNorm::Ortho))?; // np.fft.fft(x, 4, 0, "ortho")
/// let both = x.fft(Fft::over([-2, -1]))?; // np.fft.fft2(x)
/// assert_eq!(padded.dims(), [4, 2]);
/// assert_eq!(both.to_complex_vec()?[0].re, 10.0);
/// # let _ = along_rows;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Fft {
    axes: Axes,
    sizes: Option<SmallVec<[usize; MAX_RANK]>>,
    norm: FftNorm,
}

impl Fft {
    /// A transform along `axis` (negative counts from the end).
    pub fn along(axis: isize) -> Fft {
        Fft::over(axis)
    }

    /// A transform over each of `axes` (NumPy's `fftn`; `[-2, -1]` is
    /// `fft2`, `..` every axis).
    pub fn over(axes: impl Into<Axes>) -> Fft {
        Fft {
            axes: axes.into(),
            sizes: None,
            norm: FftNorm::Backward,
        }
    }

    /// The length of the transform (NumPy's `n`): a shorter input is padded
    /// with zeros, a longer one cropped; for `irfft`, the length of the
    /// real output. For one axis; [`Fft::sizes`] gives one per axis.
    pub fn size(self, n: usize) -> Fft {
        self.sizes(&[n])
    }

    /// The length of the transform over each axis, in order (NumPy's `s`).
    pub fn sizes(mut self, sizes: &[usize]) -> Fft {
        self.sizes = Some(sizes.iter().copied().collect());
        self
    }

    /// The scaling (NumPy's `norm`).
    pub fn norm(mut self, norm: FftNorm) -> Fft {
        self.norm = norm;
        self
    }

    /// The axes resolved against `rank`, each with its length (`None`:
    /// the input's) in order.
    fn resolve(&self, op: &'static str, t: &Tensor) -> Result<Vec<(usize, Option<usize>)>> {
        let axes = axes_of(op, &self.axes, t.rank())?;
        if axes.is_empty() {
            return Err(Error::argument(op, "no axis to transform"));
        }
        if let Some(sizes) = &self.sizes
            && sizes.len() != axes.len()
        {
            return Err(Error::argument(
                op,
                format!("{} sizes for {} axes {axes:?}", sizes.len(), axes.len()),
            ));
        }
        let resolved: Vec<_> = axes
            .iter()
            .enumerate()
            .map(|(k, &a)| (a, self.sizes.as_ref().map(|s| s[k])))
            .collect();
        // The sizes together, before the first axis's transform: each
        // alone may fit where all do not (two of 2^31 made a 32 GB first
        // transform, then failed at the second). No output is longer along
        // an axis than its size.
        let mut dims = t.dims().to_vec();
        for &(a, size) in &resolved {
            dims[a] = size.unwrap_or(dims[a]);
        }
        Shape::from(dims).check(op)?;
        Ok(resolved)
    }
}

impl Default for Fft {
    /// Along the last axis.
    fn default() -> Fft {
        Fft::along(-1)
    }
}

macro_rules! fft_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Fft {
            fn from(axis: $t) -> Fft {
                // Past `isize::MAX` an axis error, as `Axes` (it wrapped
                // to a negative axis).
                Fft::along(isize::try_from(axis).unwrap_or(isize::MAX))
            }
        }
    )*};
}
fft_from_int!(isize, i32, usize);

impl Tensor {
    /// The discrete Fourier transform over `spec`'s axes (NumPy's `fft`,
    /// `fft2` and `fftn`): `X[k] = sum_j x[j] exp(-2 pi i j k / n)` along
    /// each, a c64 tensor. Any length works (mixed radix, and Bluestein's
    /// algorithm for large prime factors); any view is read in place.
    ///
    /// Infinities and overflow: a transform sums in another order than
    /// NumPy's and multiplies by twiddles, so where an input is infinite,
    /// or values come within the line's length of f32's largest, outputs
    /// may be infinite or NaN where NumPy's are finite or infinite (the
    /// CPU's library multiplies an infinite sample by twiddles of 0 and
    /// 1: NaN parts beside its infinities, where a GPU keeps NumPy's
    /// zeros).
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range; `Error::Argument` for a
    /// transform of 0 points or sizes that do not match the axes;
    /// `Error::Shape` for a non-empty complex result of rank 8 (reshape
    /// first); `Error::DType` for bool; device errors.
    #[doc(alias = "fft2")]
    #[doc(alias = "fftn")]
    pub fn fft(&self, spec: impl Into<Fft>) -> Result<Tensor> {
        let _region = crate::profile_region::op("fft");
        self.complex_transform("fft", &spec.into(), false)
    }

    /// The inverse transform over `spec`'s axes (NumPy's `ifft`, `ifft2`,
    /// `ifftn`): `x[j] = 1/n sum_k X[k] exp(2 pi i j k / n)` with the
    /// default norm.
    ///
    /// # Errors
    /// As [`Tensor::fft`].
    #[doc(alias = "ifft2")]
    #[doc(alias = "ifftn")]
    pub fn ifft(&self, spec: impl Into<Fft>) -> Result<Tensor> {
        let _region = crate::profile_region::op("ifft");
        self.complex_transform("ifft", &spec.into(), true)
    }

    /// The transform of a real tensor, keeping the `n / 2 + 1` outputs of
    /// its last axis that the others mirror (NumPy's `rfft`, `rfft2`,
    /// `rfftn`: the last of `spec`'s axes is transformed first, as a real
    /// line, then the others). A real line is transformed as a complex one
    /// of half its length whose outputs are then split, so an infinite
    /// sample gives NaN in bins where NumPy's are infinite (`inf - inf`),
    /// and the CPU and a GPU may differ in which.
    ///
    /// # Errors
    /// As [`Tensor::fft`]; `Error::DType` for a complex tensor.
    #[doc(alias = "rfft2")]
    #[doc(alias = "rfftn")]
    pub fn rfft(&self, spec: impl Into<Fft>) -> Result<Tensor> {
        const OP: &str = "rfft";
        let _region = crate::profile_region::op(OP);
        let spec = spec.into();
        let x = self.fft_real_input(OP)?;
        let axes = spec.resolve(OP, &x)?;
        let (&(last, size), rest) = axes.split_last().unwrap_or((&(0, None), &[]));
        let n = points(OP, &x, last, size.unwrap_or(x.dims()[last]))?;
        let scale = spec.norm.scale(n, false);
        let mut out = transform_axis(OP, &x, last, FftRead::Real, n, false, scale, n / 2 + 1)?;
        for &(axis, size) in rest.iter().rev() {
            // A length not given is the input's, as NumPy's `s`: an axis
            // the real transform already halved (a repeated axis) is
            // padded back.
            let size = size.or(Some(x.dims()[axis]));
            out = out.transform_complex(OP, axis, size, spec.norm, false)?;
        }
        Ok(out)
    }

    /// The real signal whose `rfft` this half spectrum is (NumPy's
    /// `irfft`, `irfft2`, `irfftn`): the inverse over all but the last of
    /// `spec`'s axes, in order, then a real inverse along the last, whose length is
    /// `spec`'s size or `2 (m - 1)` for `m` inputs. An f32 tensor. The
    /// imaginary parts of the first element (and of the middle one for an
    /// even length) are ignored, as NumPy's, on every device and path
    /// (where one is infinite or NaN, the signal is NaN, as NumPy's).
    ///
    /// # Errors
    /// As [`Tensor::fft`].
    #[doc(alias = "irfft2")]
    #[doc(alias = "irfftn")]
    pub fn irfft(&self, spec: impl Into<Fft>) -> Result<Tensor> {
        const OP: &str = "irfft";
        let _region = crate::profile_region::op(OP);
        let spec = spec.into();
        let mut x = self.fft_complex_input(OP)?;
        let axes = spec.resolve(OP, &x)?;
        let (&(last, size), rest) = axes.split_last().unwrap_or((&(0, None), &[]));
        // In the order given, as NumPy's irfftn (which matters for an axis
        // given twice: its last size wins).
        for &(axis, size) in rest {
            x = x.transform_complex(OP, axis, size, spec.norm, true)?;
        }
        let n = points(
            OP,
            &x,
            last,
            size.unwrap_or(2 * x.dims()[last].saturating_sub(1)),
        )?;
        let scale = spec.norm.scale(n, true);
        transform_axis(OP, &x, last, FftRead::Hermitian, n, true, scale, n)
    }

    /// The elements rolled so that the zero frequency is in the middle of
    /// each of `axes` (NumPy's `fftshift`; `..` for every axis). A copy.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range.
    pub fn fftshift(&self, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op("fftshift", || {
            self.shift_halves("fftshift", axes.into(), false)
        })
    }

    /// The inverse of [`Tensor::fftshift`] (NumPy's `ifftshift`; the two
    /// differ for odd lengths).
    ///
    /// # Errors
    /// As [`Tensor::fftshift`].
    pub fn ifftshift(&self, axes: impl Into<Axes>) -> Result<Tensor> {
        super::as_op("ifftshift", || {
            self.shift_halves("ifftshift", axes.into(), true)
        })
    }

    /// The frequencies of the `n` outputs of an FFT of samples `d` apart
    /// (NumPy's `fftfreq`): `[0, 1, ..., -2, -1] / (d n)`, f32.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let f = Tensor::fftfreq(5, 0.1, &Device::cpu())?;
    /// assert_eq!(f.to_vec::<f32>()?, vec![0.0, 2.0, 4.0, -4.0, -2.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` for `n` 0 or a spacing that is 0 or not finite;
    /// `Error::Shape` for `n` past [`MAX_ELEMENTS`](crate::MAX_ELEMENTS);
    /// `OutOfMemory` for an `n` the host cannot hold; on a GPU,
    /// `Error::TooLarge` for more than its buffers hold.
    pub fn fftfreq(n: usize, d: f64, device: &Device) -> Result<Tensor> {
        let step = freq_step("fftfreq", n, d)?;
        // The output's limits before its values are made (a 32-bit target
        // filled a gigabyte first).
        let half = n.div_ceil(2);
        let value = |k: usize| {
            let k = if k < half {
                k as f64
            } else {
                k as f64 - n as f64
            };
            (k * step) as f32
        };
        // `n` comes from the caller: the device or the host may refuse it.
        Tensor::from_fn("fftfreq", n, value, device)
    }

    /// The frequencies of the `n / 2 + 1` outputs of an `rfft` of `n`
    /// samples `d` apart (NumPy's `rfftfreq`), f32.
    ///
    /// # Errors
    /// As [`Tensor::fftfreq`].
    pub fn rfftfreq(n: usize, d: f64, device: &Device) -> Result<Tensor> {
        let step = freq_step("rfftfreq", n, d)?;
        let count = n / 2 + 1;
        Tensor::from_fn("rfftfreq", count, |k| (k as f64 * step) as f32, device)
    }

    /// `fft` or `ifft` over `spec`'s axes, the last first (NumPy's order).
    fn complex_transform(&self, op: &'static str, spec: &Fft, inverse: bool) -> Result<Tensor> {
        let axes = spec.resolve(op, self)?;
        let mut x = if self.dtype().is_complex() {
            self.clone()
        } else {
            self.fft_real_input(op)?
        };
        // NumPy's order (the last axis given first), except that the last
        // axis's transforms go last: each transform writes its axis last in
        // memory, so the result is then contiguous. Transforms along
        // different axes commute; those along one axis keep their order.
        let last = x.rank().saturating_sub(1);
        let (at_last, others): (Vec<_>, Vec<_>) = axes.iter().rev().partition(|a| a.0 == last);
        for &(axis, size) in others.into_iter().chain(at_last) {
            x = x.transform_complex(op, axis, size, spec.norm, inverse)?;
        }
        Ok(x)
    }

    /// One complex (or, for a real tensor, real-input) transform along
    /// `axis`, all of its outputs kept.
    fn transform_complex(
        &self,
        op: &'static str,
        axis: usize,
        size: Option<usize>,
        norm: FftNorm,
        inverse: bool,
    ) -> Result<Tensor> {
        let n = points(op, self, axis, size.unwrap_or(self.dims()[axis]))?;
        let read = if self.dtype().is_complex() {
            FftRead::Complex
        } else {
            FftRead::Real
        };
        let scale = norm.scale(n, inverse);
        transform_axis(op, self, axis, read, n, inverse, scale, n)
    }

    /// This real tensor as an FFT reads it: f32, f16 and bf16 as they are,
    /// other real dtypes cast to f32.
    fn fft_real_input(&self, op: &'static str) -> Result<Tensor> {
        match self.dtype() {
            DType::F32 | DType::F16 | DType::BF16 => Ok(self.clone()),
            DType::C64 => Err(Error::dtype(
                op,
                "takes a real tensor, got c64 (use fft, or take .real() first)",
            )),
            DType::Bool => Err(Error::dtype(op, "not defined for bool; cast first")),
            _ => self.to_dtype(DType::F32),
        }
    }

    /// This tensor as c64 (a real one with zero imaginary parts).
    fn fft_complex_input(&self, op: &'static str) -> Result<Tensor> {
        match self.dtype() {
            DType::C64 => Ok(self.clone()),
            _ => self.fft_real_input(op)?.to_dtype(DType::C64),
        }
    }

    fn shift_halves(&self, op: &'static str, axes: Axes, inverse: bool) -> Result<Tensor> {
        let axes = axes_of(op, &axes, self.rank())?;
        if axes.is_empty() {
            return self.contiguous_copy();
        }
        // Each roll a copy.
        let mut out = self.clone();
        for a in axes {
            let half = (self.dims()[a] / 2) as isize;
            out = out.roll(if inverse { -half } else { half }, a as isize)?;
        }
        Ok(out)
    }
}

/// `n`, the length of a transform along `axis` of `t`, checked.
///
/// # Errors
/// `Error::Argument` naming `op` for 0 points.
fn points(op: &'static str, t: &Tensor, axis: usize, n: usize) -> Result<usize> {
    if n == 0 {
        return Err(Error::argument(
            op,
            format!(
                "a transform of 0 points along axis {axis} (of length {}); give a size of at least 1",
                t.dims()[axis]
            ),
        ));
    }
    Ok(n)
}

/// `axes` resolved against `rank`, in order.
///
/// # Errors
/// `Error::Axis` naming `op` for an axis out of range.
fn axes_of(op: &'static str, axes: &Axes, rank: usize) -> Result<Vec<usize>> {
    match axes {
        Axes::All => Ok((0..rank).collect()),
        Axes::List(list) => list.iter().map(|&a| normalize_axis(op, a, rank)).collect(),
    }
}

/// `1 / (d n)`, checked.
fn freq_step(op: &'static str, n: usize, d: f64) -> Result<f64> {
    if n == 0 || d == 0.0 || !d.is_finite() {
        return Err(Error::argument(
            op,
            format!("needs n >= 1 and a finite, non-zero spacing; got n = {n}, d = {d}"),
        ));
    }
    Ok(1.0 / (d * n as f64))
}
