//! Eigenvalues and eigenvectors of Hermitian matrices (`eigh`,
//! `eigvalsh`) by the one-sided Jacobi of `svd.rs`: shifted by its
//! largest row sum `c`, a Hermitian matrix is positive semidefinite, so
//! its singular value decomposition is its eigendecomposition: the
//! eigenvectors are the right singular vectors, a product of rotations
//! and so orthonormal to rounding even where eigenvalues repeat, and the
//! eigenvalues their Rayleigh quotients `vᴴ A v` (`σ - c` would lose
//! eigenvalues below `c`'s ulp). The eigenvalues' error is a few ulps of
//! `‖A‖`, as LAPACK's `syevd` promises, and none where the vectors are
//! exact (a diagonal matrix's). The vectors' residual `‖A·V - V·Λ‖` is
//! larger than LAPACK's on a GPU: the rotations work on `A + cI`, whose
//! norm can be several times `‖A‖`, and each adds its rounding (about 3n
//! ulps of `‖A‖` at n = 129 on lavapipe, where `ssyevd`'s is under 10).
//! The CPU decomposes matrices of 8 rows or more by a tridiagonal
//! reduction and divide and conquer (`dense.rs`), in f64 for f32 and
//! complex f64 for c64, rounded once.

use super::Triangle;
use super::checks::{adjoint, batch_shape, check_info, fresh_matrices, matrix_dims, real_dtype};
use super::dense;
use super::factor::unbatched;
use super::svd::{jacobi, not_converged};
use crate::backend::Spectral;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::SortOrder;
use crate::tensor::Tensor;

/// `a`'s Hermitian matrices (`[batch, n, n]`, fresh) from `triangle`
/// (the diagonal's imaginary parts dropped, as LAPACK's `heevd`).
fn hermitian(op: &'static str, a: &Tensor, triangle: Triangle) -> Result<Tensor> {
    let a = fresh_matrices(op, a)?;
    let (strict, diagonal) = match triangle {
        Triangle::Lower => (a.tril(-1)?, a.tril(0)?.triu(0)?),
        Triangle::Upper => (a.triu(1)?, a.triu(0)?.tril(0)?),
    };
    let diagonal = if a.dtype() == DType::C64 {
        diagonal.real()?.to_dtype(DType::C64)?
    } else {
        diagonal
    };
    strict.add(&adjoint(&strict)?)?.add(&diagonal)
}

/// [`hermitian`]'s matrices divided by their largest magnitude `top` (so
/// that neither the row sums nor the shift overflow: a finite f32 matrix
/// near 2^128 stays finite), and those shifted by `c = max_i Σ_j |a_ij|`
/// (at least the spectral radius) to be positive semidefinite. Returns
/// the scaled matrices, the shifted ones, and `top` (`[batch]`, real; 1
/// for a zero matrix).
fn shifted(op: &'static str, a: &Tensor, triangle: Triangle) -> Result<[Tensor; 3]> {
    let full = hermitian(op, a, triangle)?;
    let n = full.dims()[1];
    let top = full.abs()?.max_keepdim(-1)?.max_keepdim(-2)?;
    let top = top.masked_fill(&top.eq_scalar(0.0)?, 1.0)?;
    let full = full.div(&top.to_dtype(full.dtype())?)?;
    let c = full.abs()?.sum(-1)?.max_keepdim(-1)?;
    let eye = Tensor::eye(n, full.dtype(), full.device())?;
    let shift = c.unsqueeze(-1)?.to_dtype(full.dtype())?.mul(&eye)?;
    let top = top.squeeze_axis(-1)?.squeeze_axis(-1)?;
    Ok([full.clone(), full.add(&shift)?, top])
}

/// Eigenvalues (rising, real), eigenvectors (columns; `[batch, 0, 0]`
/// where they were not asked for) and the status (see
/// `svd.rs`'s `jacobi`) of each matrix, `[batch, ..]`.
fn decompose(
    op: &'static str,
    a: &Tensor,
    triangle: Triangle,
    vectors: bool,
) -> Result<[Tensor; 3]> {
    if a.dims()[a.rank() - 1] == 0 {
        let batch = a.dims()[..a.rank() - 2].iter().product::<usize>();
        let real = real_dtype(a);
        let values = Tensor::zeros([batch, 0], real, a.device())?;
        let vectors = Tensor::zeros([batch, 0, 0], a.dtype(), a.device())?;
        return Ok([
            values,
            vectors,
            Tensor::zeros([batch], DType::I32, a.device())?,
        ]);
    }
    if dense::takes_dense(a) {
        let n = a.dims()[a.rank() - 1];
        let full = hermitian(op, a, triangle)?;
        let cols = if vectors { n } else { 0 };
        let (values, u, _, status) = dense::decompose(Spectral::Eigh, &full, cols, 0)?;
        let batch = full.dims()[0];
        let u = match u {
            Some(u) => u,
            None => Tensor::zeros([batch, 0, 0], a.dtype(), a.device())?,
        };
        return Ok([values, u, status]);
    }
    let [scaled, b, top] = shifted(op, a, triangle)?;
    let [_, _, v, status, _] = jacobi(op, &b)?;
    // The eigenvalues as the vectors' Rayleigh quotients `vᴴ A v` on the
    // unshifted matrix, not `σ - c`: the shift's rounding is c's ulp, and
    // took diag(1, 1e-8)'s small eigenvalue to 0 (a positive definite
    // matrix's). Exact where the vectors are (a diagonal or graded
    // matrix's), else within the shift's error; sorted rising again,
    // the vectors with them.
    let terms = v.conj()?.mul(&scaled.matmul(&v)?)?;
    let complex = terms.dtype() == DType::C64;
    let quotients = if complex { terms.real()? } else { terms }.sum(-2)?;
    let order = quotients.argsort(-1, SortOrder::Ascending)?;
    let values = quotients.gather(&order, -1)?.mul(&top.unsqueeze(-1)?)?;
    if !vectors {
        let none = Tensor::zeros([b.dims()[0], 0, 0], a.dtype(), a.device())?;
        return Ok([values, none, status]);
    }
    let columns = order.unsqueeze(-2)?.broadcast_to(v.shape().clone())?;
    let vectors = if complex {
        let re = v.real()?.gather(&columns, -1)?;
        Tensor::complex(&re, &v.imag()?.gather(&columns, -1)?)?
    } else {
        v.gather(&columns, -1)?
    };
    Ok([values, vectors, status])
}

/// The eigenvalues (rising, real: f32 for c64) and eigenvectors (the
/// columns of a unitary matrix) of each Hermitian matrix of `a`
/// (`[.., n, n]`), as NumPy's `linalg.eigh`: only `triangle` is read
/// (NumPy's `UPLO`, `"L"` by default), and the diagonal's imaginary parts
/// are taken as zero.
///
/// Eigenvectors are unique only up to a phase each (a sign for real
/// matrices), and within a repeated eigenvalue up to a rotation, so they
/// may differ from NumPy's by those. See the module (`eigh.rs`) for the
/// method: one-sided Jacobi on `A + cI` on a GPU; on the CPU from 8 x 8,
/// a tridiagonal reduction and divide and conquer (LAPACK's `syevd`).
///
/// ```
/// use webtensor::{Device, Tensor, linalg, linalg::Triangle};
/// let a = Tensor::from_slice(&[2.0f32, 1.0, 1.0, 2.0], [2, 2], &Device::cpu())?;
/// let (w, v) = linalg::eigh(&a, Triangle::Lower)?;
/// let w = w.to_vec::<f32>()?;
/// assert!((w[0] - 1.0).abs() < 1e-5 && (w[1] - 3.0).abs() < 1e-5);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// Blocks until the status is read back: a matrix holding NaN or
/// infinity is `Error::LinAlg` naming its batch index, as NumPy raises
/// `LinAlgError`; see [`eigh_async`].
///
/// # Errors
/// `Error::LinAlg` naming `eigh` and the batch index of a matrix with NaN
/// or infinity in the triangle read; `Error::Shape` for fewer than 2 axes
/// or matrices that are not square; `Error::DType` for a dtype other than
/// f32, f64 (CPU) or c64.
#[cfg(not(target_arch = "wasm32"))]
pub fn eigh(a: &Tensor, triangle: Triangle) -> Result<(Tensor, Tensor)> {
    pollster::block_on(eigh_async(a, triangle))
}

/// [`eigh`] on every target (the only form in a browser).
///
/// # Errors
/// As [`eigh`], and readback errors.
pub async fn eigh_async(a: &Tensor, triangle: Triangle) -> Result<(Tensor, Tensor)> {
    const OP: &str = "eigh";
    matrix_dims(OP, a, true)?;
    let batch = batch_shape(a);
    let run = || -> Result<[Tensor; 3]> {
        let [w, v, status] = decompose(OP, a, triangle, true)?;
        Ok([
            unbatched(&w, &batch)?,
            unbatched(&v, &batch)?,
            unbatched(&status, &batch)?,
        ])
    };
    let [w, v, status] = run().map_err(|e| e.named(OP))?;
    check_info(OP, &status, status.shape(), not_converged).await?;
    Ok((w, v))
}

/// The eigenvalues of each Hermitian matrix of `a`, rising, as NumPy's
/// `linalg.eigvalsh`; see [`eigh`].
///
/// # Errors
/// As [`eigh`], naming `eigvalsh`.
#[cfg(not(target_arch = "wasm32"))]
pub fn eigvalsh(a: &Tensor, triangle: Triangle) -> Result<Tensor> {
    pollster::block_on(eigvalsh_async(a, triangle))
}

/// [`eigvalsh`] on every target (the only form in a browser).
///
/// # Errors
/// As [`eigvalsh`], and readback errors.
pub async fn eigvalsh_async(a: &Tensor, triangle: Triangle) -> Result<Tensor> {
    const OP: &str = "eigvalsh";
    matrix_dims(OP, a, true)?;
    let batch = batch_shape(a);
    let run = || -> Result<[Tensor; 2]> {
        let [w, _, status] = decompose(OP, a, triangle, false)?;
        Ok([unbatched(&w, &batch)?, unbatched(&status, &batch)?])
    };
    let [w, status] = run().map_err(|e| e.named(OP))?;
    check_info(OP, &status, status.shape(), not_converged).await?;
    Ok(w)
}
