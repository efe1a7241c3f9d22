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
/// Where every step of that stays in f32's normal range the result is
/// NumPy's, bit for bit. Its steps leave the range for divisors past 2^126
/// (`s` is subnormal) and parts of unlike size (`r` is), and a GPU that
/// flushes subnormals to zero (NVIDIA's does, as WGSL allows) then answered
/// 0 for `3e38i / 3e38i`. So the divisor is first scaled by 2^-64 when its
/// larger part is at least 2^64 and by 2^60 when below 2^-60, the dividend
/// by 2^60 when below 2^-60 and by 2^-2 when its larger part is at least
/// 2^126 and its smaller at least 2^-100 (so that `a.re + a.im r` stays
/// finite: `3e38 (1 + i) / 3e38 (1 + i)` is 1; a smaller part below that
/// cannot carry the sum past f32's largest), all exact, the quotient
/// scaled back at the end; and where `r` is below 2^-126 while `|c| >= 1`, its
/// terms are formed as `(a.im / c) d` from the unscaled parts. There the
/// result is Smith's quotient of the scaled operands, within a few ulp of
/// the exact one (2.3 the worst found), on every device alike, where
/// NumPy's own steps may underflow or overflow (`3e38i / 3e38i` is 1,
/// NumPy's 0.99999994; `(-9.2e-36 - 9.0e-36i) / (2.6e-42 + 1.6e-42i)` is
/// finite, NumPy's -inf); it is not always NumPy's where NumPy's steps stay
/// in range (`-0.118 / 1.23e38`: 0.62 ulp from exact, NumPy's 0.38).
///
/// # Errors
/// Shape and device errors of the parts.
pub(super) fn quotient(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ar, ai, c, d) = (a.real()?, a.imag()?, b.real()?, b.imag()?);
    let (c_abs, d_abs) = (c.abs()?, d.abs()?);
    // Both branches of Smith's form as one: `p` the larger part of b (by
    // magnitude; `d` where either is NaN), `q` the other, and `u`, `v`
    // a's parts in that branch's order.
    let by_c = c_abs.ge(&d_abs)?;
    let pick = |x: &Tensor, y: &Tensor| Tensor::where_cond(&by_c, x, y);
    let (p, q, u, v) = (
        pick(&c, &d)?,
        pick(&d, &c)?,
        pick(&ar, &ai)?,
        pick(&ai, &ar)?,
    );
    // Powers of two from comparisons: `1 + [m < 2^-60] (2^60 - 1)` is 1 or
    // 2^60 exactly (2^60 - 1 rounds to 2^60 in f32).
    let power = |test: Tensor, scale: f32| -> Result<Tensor> {
        test.to_dtype(c.dtype())?
            .mul_scalar(scale - 1.0)?
            .add_scalar(1.0)
    };
    let (up, down) = (2f32.powi(60), 2f32.powi(64));
    let (ar_abs, ai_abs) = (ar.abs()?, ai.abs()?);
    let a_max = ar_abs.maximum(&ai_abs)?;
    let a_near_end = a_max
        .ge_scalar(2f32.powi(126))?
        .logical_and(&ar_abs.minimum(&ai_abs)?.ge_scalar(2f32.powi(-100))?)?;
    let a_scale = power(a_max.lt_scalar(2f32.powi(-60))?, up)?.div(&power(a_near_end, 4.0)?)?;
    let b_max = c_abs.maximum(&d_abs)?;
    let b_scale =
        power(b_max.lt_scalar(2f32.powi(-60))?, up)?.div(&power(b_max.ge_scalar(down)?, down)?)?;
    let (ps, qs) = (p.mul(&b_scale)?, q.mul(&b_scale)?);
    let (us, vs) = (u.mul(&a_scale)?, v.mul(&a_scale)?);
    let r = qs.div(&ps)?;
    let s = ps.add(&qs.mul(&r)?)?.recip()?;
    // `w r`, or where `r` is below 2^-126 (a flushing GPU reads it as 0)
    // and `|p| >= 1`, `(w / p) q` from b's unscaled parts.
    let tiny = r
        .abs()?
        .lt_scalar(f32::MIN_POSITIVE)?
        .logical_and(&q.ne_scalar(0.0)?)?
        .logical_and(&p.abs()?.ge_scalar(1.0)?)?;
    let times_r = |w: &Tensor| Tensor::where_cond(&tiny, &w.div(&p)?.mul(&q)?, &w.mul(&r)?);
    let (ur, vr) = (times_r(&us)?, times_r(&vs)?);
    // `(a.re + a.im r) s`, `(a.im - a.re r) s` when |c| >= |d|, else
    // `(a.re r + a.im) s`, `(a.im r - a.re) s`; scaled back.
    let back = b_scale.div(&a_scale)?;
    let re = us.add(&vr)?.mul(&s)?.mul(&back)?;
    let im = pick(&vs.sub(&ur)?, &ur.sub(&vs)?)?.mul(&s)?.mul(&back)?;
    // b == 0: dividing by the sum of the parts' magnitudes, which is zero
    // exactly when this branch is taken, also on a GPU that flushes
    // subnormal parts to zero (where comparing each part with 0 may not).
    let zero_sum = c_abs.add(&d_abs)?;
    let zero = zero_sum.eq_scalar(0.0)?;
    Tensor::complex(
        &Tensor::where_cond(&zero, &ar.div(&zero_sum)?, &re)?,
        &Tensor::where_cond(&zero, &ai.div(&zero_sum)?, &im)?,
    )
}

/// `sqrt(x^2 + y^2)` without overflow or underflow: `m sqrt(1 + (n /
/// m)^2)` for `m` the larger magnitude and `n` the smaller, in the parts'
/// dtype, so within 2 ulp of the exact magnitude (C's `hypotf`), not always
/// equal to it (NumPy 2's complex `abs` is the same form, and agreed in our
/// tests); 0 when both are 0, and infinity
/// when either is infinite, even beside a NaN (C's rules).
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
