//! CPU steps of the blocked Householder QR ([`HouseholderCall`]): each
//! matrix's panel is copied to a column-major scratch, reduced there
//! (LAPACK's `geqr2` with `larft`'s triangular factor) on the op's
//! threads, and written back with its factor.

use super::field::Field;
use super::linalg::Matrices;
use super::storage::host_data;
use super::threads::for_each_piece_mut;
use crate::backend::HouseholderCall;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use num_complex::Complex32;

/// Runs a Householder QR step on the CPU.
pub(crate) fn householder(call: &HouseholderCall) -> Result<()> {
    match (call.a.dtype, call.complex) {
        (KernelType::F32, false) => householder_in::<f32>(call),
        (KernelType::F64, false) => householder_in::<f64>(call),
        (KernelType::F32, true) => householder_in::<Complex32>(call),
        (dtype, _) => Err(Error::internal("qr", format!("no CPU QR of {dtype:?}"))),
    }
}

fn householder_in<F: Field>(call: &HouseholderCall) -> Result<()> {
    const OP: &str = "qr";
    let a = Matrices::of(&call.a.layout, call.complex)?;
    let t = Matrices::of(&call.t.layout, call.complex)?;
    let [batch, n, _] = a.dims;
    let (s, w) = (call.start, call.width);
    let rows = n - s;
    let mut panels: Vec<(Vec<F>, Vec<F>)> = {
        let data = host_data(OP, &call.a)?;
        let raw = data
            .as_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        (0..batch)
            .map(|b| {
                (
                    a.gather(raw, b, [s, s], [rows, w]),
                    vec![F::from_re(0.0); w * w],
                )
            })
            .collect()
    };
    for_each_piece_mut(&mut panels, 1, |(_, job)| {
        let (p, tf) = &mut job[0];
        panel(p, tf, rows, w);
    });
    let mut data = call.a.storage.host(OP)?.write();
    let raw = data
        .as_mut_slice::<F::Raw>()
        .ok_or_else(|| Error::internal(OP, "dtype"))?;
    for (b, (p, _)) in panels.iter().enumerate() {
        a.scatter(raw, b, [s, s], p, rows);
    }
    drop(data);
    let mut data = call.t.storage.host(OP)?.write();
    let raw = data
        .as_mut_slice::<F::Raw>()
        .ok_or_else(|| Error::internal(OP, "dtype"))?;
    for (b, (_, tf)) in panels.iter().enumerate() {
        t.scatter(raw, b, [0, 0], tf, w);
    }
    Ok(())
}

/// `sqrt(|first|² + Σ |x|²)` over `rest`, scaled by the largest real or
/// imaginary part (as BLAS's `nrm2` scales) where the plain sum of
/// squares would lose it: an f64 column below about 1e-154 has squares
/// that vanish (its reflection was skipped, or its norm came out wrong by
/// 1e-5), one past 1e154 squares that overflow. f32's squares, formed in
/// f64, never leave its range.
fn norm<F: Field>(first: F, rest: &[F]) -> f64 {
    let values = || std::iter::once(first).chain(rest.iter().copied());
    let sum: f64 = values().map(F::abs_sq).sum();
    // Any square lost to underflow is below 2^-1022, far under a sum this
    // size's last bit.
    if sum.is_finite() && sum >= f64::MIN_POSITIVE.sqrt() {
        return sum.sqrt();
    }
    let parts = || values().flat_map(|x| [x.re(), x.im()]);
    let scale = parts().fold(0.0, |m: f64, v| m.max(v.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return sum.sqrt();
    }
    scale
        * parts()
            .map(|v| (v / scale) * (v / scale))
            .sum::<f64>()
            .sqrt()
}

/// `geqr2` on the column-major panel `p` (`rows x w`), with `larft`'s
/// factor into `tf` (`w x w`, column-major).
fn panel<F: Field>(p: &mut [F], tf: &mut [F], rows: usize, w: usize) {
    let mut dots = vec![F::from_re(0.0); w];
    for j in 0..w.min(rows) {
        let col = j * rows;
        let alpha = p[col + j];
        let below = &p[col + j + 1..col + rows];
        let (tau, beta) = if below.iter().all(|x| x.is_zero()) && alpha.im() == 0.0 {
            (F::from_re(0.0), alpha.re())
        } else {
            // A column of norm below 2^-60 is scaled up by 2^60 first, as
            // LAPACK's larfg scales by 1 / safmin (tau and v do not
            // change): the noise a rank-1 matrix's first reflection
            // leaves below it shrinks by an ulp a column, and 1e-43's
            // difference from beta was subnormal in f32 and its reciprocal
            // infinite (Q of ones(20, 8) came out NaN).
            const UP: f64 = (1u64 << 60) as f64;
            let mut r = norm(alpha, below);
            let (mut alpha, mut ups) = (alpha, 0);
            while r > 0.0 && r < 1.0 / UP && ups < 20 {
                for x in &mut p[col + j + 1..col + rows] {
                    *x = *x * F::from_re(UP);
                }
                alpha = alpha * F::from_re(UP);
                r = norm(alpha, &p[col + j + 1..col + rows]);
                ups += 1;
            }
            // LAPACK's `-sign(r, alpha)`: -0 counts as negative, as
            // gfortran's SIGN (and NumPy's R) has it.
            let beta = if alpha.re().is_sign_negative() { r } else { -r };
            let tau = (F::from_re(beta) - alpha).div(F::from_re(beta));
            let scale = F::ONE.div(alpha - F::from_re(beta));
            for x in &mut p[col + j + 1..col + rows] {
                *x = *x * scale;
            }
            let beta = (0..ups).fold(beta, |b, _| b / UP);
            (tau, beta)
        };
        p[col + j] = F::from_re(beta);
        // d_c = Σ conj(v_r) P[r, c] over r >= j, v_j = 1.
        for (c, d) in dots.iter_mut().enumerate() {
            if c == j {
                continue;
            }
            let mut sum = p[c * rows + j];
            for r in j + 1..rows {
                sum = sum + p[col + r].conj() * p[c * rows + r];
            }
            *d = sum;
        }
        let ctau = tau.conj();
        for c in j + 1..w {
            let u = ctau * dots[c];
            p[c * rows + j] = p[c * rows + j] - u;
            for r in j + 1..rows {
                p[c * rows + r] = p[c * rows + r] - p[col + r] * u;
            }
        }
        tf[j * w + j] = tau;
        for q in 0..j {
            let mut acc = F::from_re(0.0);
            for k in q..j {
                acc = acc + tf[k * w + q] * dots[k].conj();
            }
            tf[j * w + q] = F::from_re(0.0) - tau * acc;
        }
    }
}
