//! The c64 ops whose textbook forms overflow or underflow, in the scaled
//! forms NumPy and PyTorch use: division by Smith's method (never forming
//! `|b|^2`) and the magnitude as a hypotenuse (never forming `re^2`).
//! Both are composed from f32 ops on the real and imaginary views, so the
//! GPU fuses them and both devices round alike.

use crate::error::Result;
use crate::tensor::Tensor;

/// `a / b` for c64 tensors (broadcast together) as NumPy's and PyTorch's
/// complex division: with `b = c + di`, when `|c| >= |d|`, `r = d / c`,
/// `s = 1 / (c + d r)`, the quotient `((a.re + a.im r) s, (a.im - a.re r) s)`;
/// otherwise the same with the parts' roles exchanged; and for `b == 0`,
/// `(a.re / |c|, a.im / |d|)`, a complex infinity or NaN.
///
/// # Errors
/// Shape and device errors of the parts.
pub(super) fn quotient(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ar, ai, c, d) = (a.real()?, a.imag()?, b.real()?, b.imag()?);
    let (c_abs, d_abs) = (c.abs()?, d.abs()?);
    // |c| >= |d|.
    let r = d.div(&c)?;
    let s = c.add(&d.mul(&r)?)?.recip()?;
    let re_c = ar.add(&ai.mul(&r)?)?.mul(&s)?;
    let im_c = ai.sub(&ar.mul(&r)?)?.mul(&s)?;
    // |c| < |d| (or either is NaN).
    let r = c.div(&d)?;
    let s = d.add(&c.mul(&r)?)?.recip()?;
    let re_d = ar.mul(&r)?.add(&ai)?.mul(&s)?;
    let im_d = ai.mul(&r)?.sub(&ar)?.mul(&s)?;
    // b == 0.
    let re_0 = ar.div(&c_abs)?;
    let im_0 = ai.div(&d_abs)?;
    let by_c = c_abs.ge(&d_abs)?;
    let zero = c_abs.eq_scalar(0.0)?.logical_and(&d_abs.eq_scalar(0.0)?)?;
    let pick = |z: &Tensor, x: &Tensor, y: &Tensor| {
        Tensor::where_cond(&zero, z, &Tensor::where_cond(&by_c, x, y)?)
    };
    Tensor::complex(&pick(&re_0, &re_c, &re_d)?, &pick(&im_0, &im_c, &im_d)?)
}

/// `sqrt(x^2 + y^2)` without overflow or underflow (C's `hypot`, which
/// NumPy's complex `abs` is): `m sqrt(1 + (n / m)^2)` for `m` the larger
/// magnitude and `n` the smaller; 0 when both are 0, and infinity when
/// either is infinite, even beside a NaN.
///
/// # Errors
/// Shape and device errors of the parts.
pub(super) fn hypot(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (x, y) = (x.abs()?, y.abs()?);
    let (m, n) = (x.maximum(&y)?, x.minimum(&y)?);
    let r = n.div(&m)?;
    let h = r.square()?.add_scalar(1.0)?.sqrt()?.mul(&m)?;
    let h = Tensor::where_cond(&m.eq_scalar(0.0)?, &m, &h)?;
    let inf = x.isinf()?.logical_or(&y.isinf()?)?;
    let infinity = Tensor::full([], f32::INFINITY, h.dtype(), h.device())?;
    Tensor::where_cond(&inf, &infinity, &h)
}
