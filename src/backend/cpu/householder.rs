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

/// `geqr2` on the column-major panel `p` (`rows x w`), with `larft`'s
/// factor into `tf` (`w x w`, column-major).
fn panel<F: Field>(p: &mut [F], tf: &mut [F], rows: usize, w: usize) {
    let mut dots = vec![F::from_re(0.0); w];
    for j in 0..w.min(rows) {
        let col = j * rows;
        let x2: f64 = p[col + j + 1..col + rows].iter().map(|x| x.abs_sq()).sum();
        let alpha = p[col + j];
        let (tau, beta) = if x2 == 0.0 && alpha.im() == 0.0 {
            (F::from_re(0.0), alpha.re())
        } else {
            let r = (alpha.abs_sq() + x2).sqrt();
            // LAPACK's `-sign(r, alpha)`: -0 counts as negative, as
            // gfortran's SIGN (and NumPy's R) has it.
            let beta = if alpha.re().is_sign_negative() { r } else { -r };
            let tau = (F::from_re(beta) - alpha).div(F::from_re(beta));
            let scale = F::ONE.div(alpha - F::from_re(beta));
            for x in &mut p[col + j + 1..col + rows] {
                *x = *x * scale;
            }
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
