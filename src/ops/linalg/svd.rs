//! Singular value decomposition by one-sided Jacobi (Hestenes; LAPACK's
//! `gesvj` is its careful form): rotations of pairs of columns until all
//! are orthogonal, a workgroup a matrix on a GPU; then the singular
//! values are the columns' norms, sorted. The CPU decomposes matrices of
//! 8 rows and columns or more by a bidiagonal reduction and divide and
//! conquer instead (`dense.rs`).

use super::checks::{
    adjoint, batch_shape, check_info, eps_of, fresh_matrices, matrix_dims, mt, real_dtype,
};
use super::dense;
use super::factor::unbatched;
use super::qr::{QrMode, qr};
use crate::backend::{JACOBI_UNFINISHED, JacobiCall, Spectral};
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::SortOrder;
use crate::tensor::Tensor;

/// The most sweeps a Jacobi orthogonalization runs (LAPACK's `gesvj`
/// stops at 30); f32 matrices converge in far fewer.
const SWEEPS: usize = 30;

/// Orthogonalizes the columns of `a` (`[.., n, m]`, `n >= m`) scaled by
/// its largest magnitude `s`: `W` (`[batch, n, m]`, columns `u_j σ_j /
/// s`, sorted by falling norm), the norms `σ` (`[batch, m]`, real), `V`
/// (`[batch, m, m]`), so that `A = s · W · Vᴴ`; the i32 status of each matrix (`[batch]`): 1 where
/// the sweeps ran out or a singular value is not finite (NaN or infinity
/// in the matrix), else 0; and the norms of `W`'s columns, `σ / s`.
pub(super) fn jacobi(op: &'static str, a: &Tensor) -> Result<[Tensor; 5]> {
    // Scaled by its largest magnitude, no matrix's sums of squares over-
    // or underflow (LAPACK's gesvd scales too); W and σ are scaled back.
    let scale = largest(a)?;
    let w = fresh_matrices(op, &a.div(&scale)?)?;
    let &[batch, _, m] = w.dims() else {
        unreachable!("fresh matrices are [batch, n, m]")
    };
    // A matrix holding NaN or infinity (NaN in W, whose other entries are
    // at most 1), before the sweeps rotate it: its factors are all NaN
    // (rotations leave some columns finite, and a finite smallest σ was
    // the -2 norm of [[NaN, 1], [1, 1]]). A finite matrix's σ past f32's
    // range is infinite, as NumPy's, not a failure.
    let bad = w.isfinite()?.logical_not()?.any([-2isize, -1].as_slice())?;
    let eye = Tensor::eye(m, a.dtype(), a.device())?;
    let v = fresh_matrices(op, &eye.broadcast_to([batch, m, m])?)?;
    let aux = Tensor::zeros([batch, 1], DType::I32, a.device())?;
    let eps = eps_of(a);
    let (rw, rv) = (super::checks::raw(&w), super::checks::raw(&v));
    crate::backend::jacobi(&JacobiCall {
        a: rw.kernel_out(rw.layout().clone())?,
        v: rv.kernel_out(rv.layout().clone())?,
        aux: aux.kernel_out(aux.layout().clone())?,
        complex: a.dtype() == DType::C64,
        tol: (eps * (w.dims()[1] as f64).sqrt()) as f32,
        // Below `tall_svd`'s floor for a singular value (W's largest is at
        // least 1): the columns of rounding noise whose U it makes anew.
        negligible: (eps * w.dims()[1] as f64).powi(2) as f32,
        sweeps: SWEEPS,
    })?;
    let poison = |t: &Tensor| -> Result<Tensor> {
        let complex = t.dtype() == DType::C64;
        let parts = if complex { t.pairs() } else { t.clone() };
        let mut dims = vec![batch];
        dims.resize(parts.rank(), 1);
        let out = parts.masked_fill(&bad.reshape(dims)?, f32::NAN)?;
        Ok(if complex { out.complex_of_pairs() } else { out })
    };
    let (w, v) = (poison(&w)?, poison(&v)?);
    // V's columns drift from unit length by an ulp a rotation (hundreds
    // of ulps at n = 256, the singular values and eigenvalues off by as
    // many): each column of V, and of W = A V with it, divided by its norm.
    let lengths = column_norms(&v)?.unsqueeze(-2)?.to_dtype(v.dtype())?;
    let (w, v) = (w.div(&lengths)?, v.div(&lengths)?);
    let scaled = poison(&column_norms(&w)?)?;
    let sigma = scaled.mul(&scale.reshape([batch, 1])?.abs()?)?;
    // The last sweep still rotated columns that matter (see JacobiCall).
    let unfinished = aux.squeeze_axis(-1)?.eq_scalar(JACOBI_UNFINISHED)?;
    let status = unfinished.logical_or(&bad)?.to_dtype(DType::I32)?;
    // Falling singular values: the columns of W and V follow.
    let order = scaled.argsort(-1, SortOrder::Descending)?;
    let (sigma, scaled) = (sigma.gather(&order, -1)?, scaled.gather(&order, -1)?);
    let pick = |t: &Tensor| -> Result<Tensor> {
        let rows = t.dims()[1];
        let index = order.unsqueeze(1)?.broadcast_to([batch, rows, m])?;
        gather_columns(t, &index)
    };
    Ok([pick(&w)?, sigma, pick(&v)?, status, scaled])
}

/// The norms of the columns of `w` (`[batch, n, m]`: `[batch, m]`,
/// real), each scaled by its largest magnitude first: a column of 1e-23s
/// in a matrix whose largest entry is 1 has f32 squares that vanish (its
/// singular value came out 0, `cond` infinite), as f64's do below 1e-154.
fn column_norms(w: &Tensor) -> Result<Tensor> {
    let magnitudes = w.abs()?;
    let big = magnitudes.max_keepdim(-2)?;
    let ones = Tensor::ones(big.shape().clone(), big.dtype(), big.device())?;
    // A zero column (or one holding NaN, whose norm stays NaN) by 1.
    let big = Tensor::where_cond(&big.gt_scalar(0.0)?, &big, &ones)?;
    let norms = magnitudes.div(&big)?.square()?.sum(-2)?.sqrt()?;
    norms.mul(&big.squeeze_axis(-2)?)
}

/// The largest magnitude of each matrix of `a` (`[.., 1, 1]`, `a`'s
/// dtype), or 1 where it is 0 or not a number.
pub(super) fn largest(a: &Tensor) -> Result<Tensor> {
    if a.numel() == 0 {
        let mut dims = a.dims()[..a.rank() - 2].to_vec();
        dims.extend([1, 1]);
        return Tensor::ones(dims, a.dtype(), a.device());
    }
    let big = a.abs()?.max_keepdim([-2isize, -1].as_slice())?;
    let ones = Tensor::ones(big.shape().clone(), big.dtype(), big.device())?;
    let scale = Tensor::where_cond(&big.gt_scalar(0.0)?, &big, &ones)?;
    scale.to_dtype(a.dtype())
}

/// `t`'s columns picked by `index` (i32, `t`'s shape): a fresh tensor.
fn gather_columns(t: &Tensor, index: &Tensor) -> Result<Tensor> {
    if t.dtype() != DType::C64 {
        return t.gather(index, -1);
    }
    let pairs = index
        .unsqueeze(-1)?
        .broadcast_to(t.pairs().shape().clone())?;
    Ok(t.pairs().gather(&pairs, -2)?.complex_of_pairs())
}

/// Why a Jacobi decomposition has no answer.
pub(super) fn not_converged(_: usize) -> String {
    String::from("did not converge (it holds NaN or infinity, or its iterations ran out)")
}

/// [`svdvals`] and the status of each matrix (see [`jacobi`]), nothing
/// read back.
pub(super) fn svdvals_ex(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "svdvals";
    let [n, m] = matrix_dims(OP, a, false)?;
    let batch = batch_shape(a);
    let run = || -> Result<(Tensor, Tensor)> {
        if n.min(m) == 0 {
            let [_, s, _, status] = empty_svd(a, false)?;
            return Ok((unbatched(&s, &batch)?, unbatched(&status, &batch)?));
        }
        if dense::takes_dense(a) {
            let fresh = fresh_matrices(OP, a)?;
            let (s, _, _, status) = dense::decompose(Spectral::Svd, &fresh, 0, 0)?;
            return Ok((unbatched(&s, &batch)?, unbatched(&status, &batch)?));
        }
        let tall = if n >= m { a.clone() } else { adjoint(a)? };
        let [_, sigma, _, status, _] = jacobi(OP, &tall)?;
        Ok((unbatched(&sigma, &batch)?, unbatched(&status, &batch)?))
    };
    run().map_err(|e| e.named(OP))
}

/// The singular values of each matrix of `a` (`[.., n, m]`), falling, as
/// NumPy's `linalg.svdvals` (`svd(a, compute_uv=False)`): `[.., min(n,
/// m)]`, real (f32 for c64 matrices). Blocks until the status is read
/// back (see [`svd`]).
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[3.0f32, 0.0, 0.0, -4.0], [2, 2], &Device::cpu())?;
/// let s = linalg::svdvals(&a)?.to_vec::<f32>()?;
/// assert!((s[0] - 4.0).abs() < 1e-6 && (s[1] - 3.0).abs() < 1e-6);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// As [`svd`], naming `svdvals`.
#[cfg(not(target_arch = "wasm32"))]
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    pollster::block_on(svdvals_async(a))
}

/// [`svdvals`] on every target (the only form in a browser).
///
/// # Errors
/// As [`svdvals`], and readback errors.
pub async fn svdvals_async(a: &Tensor) -> Result<Tensor> {
    let (s, info) = svdvals_ex(a)?;
    check_info("svdvals", &info, info.shape(), not_converged).await?;
    Ok(s)
}

/// The singular value decomposition `A = U · diag(S) · Vh` of each matrix
/// of `a` (`[.., n, m]`), as NumPy's `linalg.svd`: `S` falling and real
/// (`[.., k]`, `k = min(n, m)`; f32 for c64 matrices); with
/// `full_matrices`, `U` is `[.., n, n]` and `Vh` `[.., m, m]`, otherwise
/// `[.., n, k]` and `[.., k, m]`.
///
/// On a GPU, and for matrices under 8 rows or columns on the CPU, by
/// one-sided Jacobi (rotations of column pairs until all are orthogonal),
/// then a QR that completes `U`: its columns for negligible singular
/// values (and a full `U`'s extra ones) are orthonormal to the others,
/// each turned towards its own column of `A·V`. Otherwise on the CPU by a Householder reduction to
/// bidiagonal form and divide and conquer (LAPACK's `gesdd`). Singular vectors are unique only up to a
/// phase per pair (a sign for real matrices), so they may differ from
/// NumPy's by one.
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2], &Device::cpu())?;
/// let (u, s, vh) = linalg::svd(&a, false)?;
/// let back = u.mul(&s.unsqueeze(0)?)?.matmul(&vh)?.to_vec::<f32>()?;
/// for (x, y) in back.iter().zip([1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]) {
///     assert!((x - y).abs() < 1e-5);
/// }
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// Blocks until the status is read back: a matrix holding NaN or
/// infinity is `Error::LinAlg` naming its batch index, as NumPy raises
/// `LinAlgError` ("SVD did not converge"); see [`svd_async`] and
/// [`svd_ex`].
///
/// # Errors
/// `Error::LinAlg` naming `svd` and the batch index of a matrix with
/// NaN or infinity; `Error::Shape` for fewer than 2 axes; `Error::DType`
/// for a dtype other than f32, f64 (CPU) or c64.
#[cfg(not(target_arch = "wasm32"))]
pub fn svd(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    pollster::block_on(svd_async(a, full_matrices))
}

/// [`svd`] on every target (the only form in a browser).
///
/// # Errors
/// As [`svd`], and readback errors.
pub async fn svd_async(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (u, s, vh, info) = svd_ex(a, full_matrices)?;
    check_info("svd", &info, info.shape(), not_converged).await?;
    Ok((u, s, vh))
}

/// [`svd`] without reading anything back: the factors and the i32 status
/// of each matrix (`[..]`): 1 where it holds NaN or infinity (its factors
/// are then NaN) or, far rarer, its iterations ran out, else 0.
///
/// # Errors
/// As [`svd`], but no `Error::LinAlg`.
pub fn svd_ex(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    const OP: &str = "svd";
    let [n, m] = matrix_dims(OP, a, false)?;
    let batch = batch_shape(a);
    let run = || -> Result<[Tensor; 4]> {
        if n.min(m) == 0 {
            return empty_svd(a, full_matrices);
        }
        if dense::takes_dense(a) {
            let k = n.min(m);
            let (cols, rows) = if full_matrices { (n, m) } else { (k, k) };
            let fresh = fresh_matrices(OP, a)?;
            let (s, u, vh, status) = dense::decompose(Spectral::Svd, &fresh, cols, rows)?;
            let (Some(u), Some(vh)) = (u, vh) else {
                unreachable!("a dense SVD of a non-empty matrix has both factors")
            };
            return Ok([u, s, vh, status]);
        }
        // Aᴴ = V S Uᴴ: a wide matrix is its adjoint's transposed answer.
        if n < m {
            let [u, s, vh, status] = tall_svd(&adjoint(a)?, full_matrices)?;
            return Ok([adjoint(&vh)?, s, adjoint(&u)?, status]);
        }
        tall_svd(a, full_matrices)
    };
    let [u, s, vh, status] = run().map_err(|e| e.named(OP))?;
    Ok((
        unbatched(&u, &batch)?,
        unbatched(&s, &batch)?,
        unbatched(&vh, &batch)?,
        unbatched(&status, &batch)?,
    ))
}

/// [`svd`] of matrices with at least as many rows as columns, batched
/// as `[batch, ..]`.
fn tall_svd(a: &Tensor, full_matrices: bool) -> Result<[Tensor; 4]> {
    let (n, m) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
    if n > 2 * m {
        // Far taller than wide: A = Q·R, and R (m x m) is what Jacobi
        // sweeps (LAPACK's gesvd does the same past a crossover).
        let mode = if full_matrices {
            QrMode::Complete
        } else {
            QrMode::Reduced
        };
        let batch = a.dims()[..a.rank() - 2].iter().product::<usize>();
        let (q, r) = qr(&a.reshape([batch, n, m])?, mode)?;
        let square = r.narrow(-2, 0, m)?;
        let [u, sigma, vh, status] = tall_svd(&square, false)?;
        let r = q.rank() as isize;
        let lead = q.narrow(r - 1, 0, m)?.matmul(&u)?;
        let u = if full_matrices {
            Tensor::concat(&[&lead, &q.narrow(r - 1, m, n - m)?], r - 1)?
        } else {
            lead
        };
        return Ok([u, sigma, vh, status]);
    }
    let [w, sigma, v, status, scaled] = jacobi("svd", a)?;
    let (n, m) = (w.dims()[1], w.dims()[2]);
    let real = real_dtype(a);
    // Columns whose singular value is not negligible (past max(n, m) ulps
    // of the largest) are W's normalised. The others' directions are
    // mostly rounding noise, and they need not be orthogonal: they, and a
    // full U's extra columns, come from a QR of all of W's normalised
    // columns (sorted by falling norm, zero ones left zero), each of Q's
    // given the phase of R's diagonal. A negligible column's part of A is
    // still W's column (A·v): Q's column keeps its direction where it is
    // orthogonal to the columns before it. Completing them from the good
    // columns alone left U·S·Vh up to max(n, m) ulps of the largest
    // value off a row-graded matrix (LAPACK's: under one).
    let eps = eps_of(a);
    let floor = scaled.max_keepdim(-1)?.mul_scalar(eps * n as f64)?;
    let good = scaled.gt(&floor)?.to_dtype(real)?;
    let nonzero = scaled.gt_scalar(0.0)?.to_dtype(real)?;
    let safe = scaled.add(&nonzero.neg()?.add_scalar(1.0)?)?;
    let unit = w.div(&safe.unsqueeze(1)?)?;
    let mode = if full_matrices {
        QrMode::Complete
    } else {
        QrMode::Reduced
    };
    let (q, r) = qr(&unit, mode)?;
    let diagonal = r.diagonal(0)?;
    let size = diagonal.abs()?;
    let flat = size.eq_scalar(0.0)?.to_dtype(real)?;
    let phase = diagonal.div(&size.add(&flat)?)?.add(&flat)?;
    let rest = good.neg()?.add_scalar(1.0)?;
    let lead = unit
        .mul(&good.unsqueeze(1)?)?
        .add(&q.narrow(2, 0, m)?.mul(&phase.mul(&rest)?.unsqueeze(1)?)?)?;
    let u = if full_matrices && n > m {
        Tensor::concat(&[&lead, &q.narrow(2, m, n - m)?], 2)?
    } else {
        lead
    };
    Ok([u, sigma, adjoint(&v)?, status])
}

/// [`svd`] of empty matrices (`[.., n, m]` with `n` or `m` zero), batched
/// as `[batch, ..]`: no singular values, and identities where a full `U`
/// or `Vh` has columns.
fn empty_svd(a: &Tensor, full_matrices: bool) -> Result<[Tensor; 4]> {
    let [n, m] = [a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]];
    let batch = a.dims()[..a.rank() - 2].iter().product::<usize>();
    let real = real_dtype(a);
    let eye = |size: usize, cols: usize| -> Result<Tensor> {
        let eye = Tensor::eye(size, a.dtype(), a.device())?.narrow(1, 0, cols)?;
        eye.broadcast_to([batch, size, cols])?.contiguous()
    };
    let (u_cols, v_rows) = if full_matrices { (n, m) } else { (0, 0) };
    let vh = eye(m, v_rows)?;
    Ok([
        eye(n, u_cols)?,
        Tensor::zeros([batch, 0], real, a.device())?,
        mt(&vh)?.contiguous()?,
        Tensor::zeros([batch], DType::I32, a.device())?,
    ])
}
