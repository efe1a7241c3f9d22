//! QR by blocked Householder reflections (LAPACK's `geqrf` and `orgqr`):
//! a panel of up to 64 columns is reduced in one kernel, which also
//! writes its triangular factor `T`; the rest of the matrix, and later
//! `Q`, take the panel's reflectors `I - V·T·Vᴴ` as three products.

use super::LINALG_BLOCK;
use super::checks::{adjoint, batch_shape, block, fresh_matrices, matrix_dims};
use super::factor::{in_parts, unbatched};
use crate::backend::HouseholderCall;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Which factors [`qr`] returns (NumPy's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QrMode {
    /// `Q` `[.., n, k]` and `R` `[.., k, m]`, `k = min(n, m)` (NumPy's
    /// default, `"reduced"`).
    Reduced,
    /// `Q` `[.., n, n]` and `R` `[.., n, m]` (`"complete"`).
    Complete,
}

/// One panel's reflectors: its first row and column `s`, `V` (`[batch,
/// n - s, w]`, unit lower trapezoidal) and `T` (`[batch, w, w]`).
struct Panel {
    start: usize,
    v: Tensor,
    t: Tensor,
}

/// Householder-reduces `a` (`[batch, n, m]`, fresh) in place to `R`
/// above its diagonal and the reflectors below, as `geqrf`.
fn householder_in_place(a: &Tensor) -> Result<Vec<Panel>> {
    const OP: &str = "qr";
    let &[batch, n, m] = a.dims() else {
        unreachable!("fresh matrices are [batch, n, m]")
    };
    let k = n.min(m);
    let mut panels = Vec::with_capacity(k.div_ceil(LINALG_BLOCK));
    let mut s = 0;
    while s < k {
        let (w, e) = (LINALG_BLOCK.min(k - s), (s + LINALG_BLOCK).min(k));
        let t = Tensor::empty_dense([batch, w, w].into(), a.dtype(), a.device(), OP)?;
        let (ra, rt) = (super::checks::raw(a), super::checks::raw(&t));
        crate::backend::householder(&HouseholderCall {
            a: ra.kernel_out(ra.layout().clone())?,
            t: rt.kernel_out(rt.layout().clone())?,
            complex: a.dtype() == DType::C64,
            start: s,
            width: w,
        })?;
        let v = block(a, [s, n - s], [s, w])?.contiguous_copy()?;
        in_parts(&v, |p| p.tril_(-1))?;
        v.diagonal(0)?.fill_(1.0)?;
        if e < m {
            // C ← Hᴴ C = (I - V·Tᴴ·Vᴴ) C.
            let c = block(a, [s, n - s], [e, m - e])?;
            let w = adjoint(&t)?.matmul(&adjoint(&v)?.matmul(&c)?)?;
            c.sub_(&v.matmul(&w)?)?;
        }
        panels.push(Panel { start: s, v, t });
        s = e;
    }
    Ok(panels)
}

/// The QR factorization `A = Q · R` of each matrix of `a` (`[.., n, m]`),
/// as NumPy's `linalg.qr`: `Q` with orthonormal columns (unitary for
/// c64) and `R` upper triangular, of the sizes [`QrMode`] says. By
/// Householder reflections with LAPACK's choices (`larfg`, the column's
/// norm scaled as `nrm2` scales it), so `R`'s diagonal has the signs
/// NumPy's has: for real matrices, negative where the column's leading
/// entry (of what is left to factor) is positive, except that a column
/// already zero below it is kept as it is (`qr` of the identity is `R =
/// I`).
///
/// ```
/// use webtensor::{Device, Tensor, linalg, linalg::QrMode};
/// let a = Tensor::from_slice(&[3.0f32, 1.0, 4.0, 2.0], [2, 2], &Device::cpu())?;
/// let (q, r) = linalg::qr(&a, QrMode::Reduced)?;
/// let back = q.matmul(&r)?.to_vec::<f32>()?;
/// for (x, y) in back.iter().zip([3.0f32, 1.0, 4.0, 2.0]) {
///     assert!((x - y).abs() < 1e-5);
/// }
/// assert!((r.to_vec::<f32>()?[0] + 5.0).abs() < 1e-5);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `qr` for fewer than 2 axes; `Error::DType` for a
/// dtype other than f32, f64 (CPU) or c64.
pub fn qr(a: &Tensor, mode: QrMode) -> Result<(Tensor, Tensor)> {
    const OP: &str = "qr";
    let run = || -> Result<(Tensor, Tensor)> {
        let [n, m] = matrix_dims(OP, a, false)?;
        let batch = batch_shape(a);
        // Scaled by its largest magnitude, no column's sum of squares
        // over- or underflows; Q does not change, R is scaled back.
        let scale = super::svd::largest(a)?;
        // A c64 matrix part by part, so a -0 stays -0 (a complex quotient's
        // sums make it +0, and a reflection's sign follows it).
        let scaled = if a.dtype().is_complex() {
            let s = scale.real()?;
            Tensor::complex(&a.real()?.div(&s)?, &a.imag()?.div(&s)?)?
        } else {
            a.div(&scale)?
        };
        let f = fresh_matrices(OP, &scaled)?;
        let panels = householder_in_place(&f)?;
        let k = n.min(m);
        let width = match mode {
            QrMode::Reduced => k,
            QrMode::Complete => n,
        };
        let r = f.narrow(1, 0, width)?.contiguous_copy()?;
        in_parts(&r, |p| p.triu_(0))?;
        let r = r.mul(&scale.reshape([f.dims()[0], 1, 1])?)?;
        // Q = H1 ⋯ Hk applied to the identity's first columns, last panel
        // first: each touches only rows and columns from its start.
        let eye = Tensor::eye(n, a.dtype(), a.device())?.narrow(1, 0, width)?;
        let q = fresh_matrices(OP, &eye.broadcast_to([f.dims()[0], n, width])?)?;
        for p in panels.iter().rev() {
            let sub = block(&q, [p.start, n - p.start], [p.start, width - p.start])?;
            let w = p.t.matmul(&adjoint(&p.v)?.matmul(&sub)?)?;
            sub.sub_(&p.v.matmul(&w)?)?;
        }
        Ok((unbatched(&q, &batch)?, unbatched(&r, &batch)?))
    };
    run().map_err(|e| e.named(OP))
}
