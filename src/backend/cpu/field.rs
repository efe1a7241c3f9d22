//! The scalars the CPU's linear algebra computes in (`linalg.rs`): f32,
//! f64, complex f32 and complex f64 (a working type only: no dtype stores
//! it), each read from and written to its storage's raw elements (a
//! complex value is two reals at a stride of one).

use crate::dtype::Element;
use num_complex::{Complex32, Complex64};
use std::ops::{Add, Mul, Sub};

/// A real or complex scalar of a matrix.
pub(crate) trait Field:
    Copy + Send + Sync + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// The storage's element type.
    type Raw: Element + Copy;
    const ONE: Self;
    /// The real type's smallest normal value over its `ε`: a Jacobi
    /// column whose parts are all below it (its matrix scaled to a
    /// largest part of 1) is rotated in subnormal steps, never to
    /// orthogonal, and stays.
    const NEGLIGIBLE: f64;
    /// The value at raw position `p`.
    fn get(raw: &[Self::Raw], p: usize) -> Self;
    /// Writes the value at raw position `p`.
    fn put(self, raw: &mut [Self::Raw], p: usize);
    /// The magnitude a pivot is chosen by: `|x|`, or `|re| + |im|` for a
    /// complex value (LAPACK's `i?amax`).
    fn pivot_size(self) -> f64;
    fn conj(self) -> Self;
    /// The real part.
    fn re(self) -> f64;
    fn from_re(r: f64) -> Self;
    /// `re + i im` (`re` for a real type), rounded to the type.
    fn from_parts(re: f64, im: f64) -> Self;
    fn is_zero(self) -> bool;
    /// The imaginary part (0 for a real value).
    fn im(self) -> f64;
    /// `|x|²`.
    fn abs_sq(self) -> f64;
    /// `self / d`, scaled for a complex `d` so that `|d|²` cannot
    /// overflow or vanish (as the GPU's `div_v`).
    fn div(self, d: Self) -> Self;
    /// `self / |self|` (nonzero), to the last bit of its type (formed in
    /// f64: a subnormal f32's reciprocal overflows).
    fn unit(self) -> Self;
}

/// `Field` for a real float type, computing in it (its magnitudes and
/// real parts given as f64, which holds them exactly).
macro_rules! real_field {
    ($t:ty) => {
        impl Field for $t {
            type Raw = $t;
            const ONE: Self = 1.0;
            const NEGLIGIBLE: f64 = (<$t>::MIN_POSITIVE / <$t>::EPSILON) as f64;
            fn get(raw: &[$t], p: usize) -> Self {
                raw[p]
            }
            fn put(self, raw: &mut [$t], p: usize) {
                raw[p] = self;
            }
            fn pivot_size(self) -> f64 {
                self.abs() as f64
            }
            fn conj(self) -> Self {
                self
            }
            fn re(self) -> f64 {
                self as f64
            }
            fn from_re(r: f64) -> Self {
                r as $t
            }
            fn from_parts(re: f64, _: f64) -> Self {
                re as $t
            }
            fn is_zero(self) -> bool {
                self == 0.0
            }
            fn im(self) -> f64 {
                0.0
            }
            fn abs_sq(self) -> f64 {
                let x = self.re();
                x * x
            }
            fn div(self, d: Self) -> Self {
                self / d
            }
            fn unit(self) -> Self {
                self.signum()
            }
        }
    };
}

real_field!(f32);
real_field!(f64);

/// `Field` for a complex type over a real one (`$r`), read and written
/// as two raw `$r` at a stride of one; magnitudes in f64.
macro_rules! complex_field {
    ($t:ty, $r:ty) => {
        impl Field for $t {
            type Raw = $r;
            const ONE: Self = <$t>::new(1.0, 0.0);
            const NEGLIGIBLE: f64 = <$r as Field>::NEGLIGIBLE;
            fn get(raw: &[$r], p: usize) -> Self {
                <$t>::new(raw[p], raw[p + 1])
            }
            fn put(self, raw: &mut [$r], p: usize) {
                raw[p] = self.re;
                raw[p + 1] = self.im;
            }
            fn pivot_size(self) -> f64 {
                // Summed in the real type, as the GPU and LAPACK's scabs1 do.
                f64::from(self.re.abs() + self.im.abs())
            }
            fn conj(self) -> Self {
                <$t>::conj(&self)
            }
            fn re(self) -> f64 {
                f64::from(self.re)
            }
            fn from_re(r: f64) -> Self {
                <$t>::new(r as $r, 0.0)
            }
            fn from_parts(re: f64, im: f64) -> Self {
                <$t>::new(re as $r, im as $r)
            }
            fn is_zero(self) -> bool {
                self.re == 0.0 && self.im == 0.0
            }
            fn im(self) -> f64 {
                f64::from(self.im)
            }
            fn abs_sq(self) -> f64 {
                let (x, y) = (f64::from(self.re), f64::from(self.im));
                x * x + y * y
            }
            fn div(self, d: Self) -> Self {
                // Both scaled by d's larger part: |d / s|² lies in [1, 2].
                let s = d.re.abs().max(d.im.abs());
                let (x, d) = (self / s, d / s);
                x * <$t>::conj(&d) / (d.re * d.re + d.im * d.im)
            }
            fn unit(self) -> Self {
                let (re, im) = (f64::from(self.re), f64::from(self.im));
                let norm = re.hypot(im);
                <$t>::new((re / norm) as $r, (im / norm) as $r)
            }
        }
    };
}

complex_field!(Complex32, f32);
complex_field!(Complex64, f64);
