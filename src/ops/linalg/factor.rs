//! LU and Cholesky factorizations: the blocked drivers (a panel or
//! diagonal block in one kernel, a triangular solve beside it, a product
//! for the trailing matrix) and the public `lu_factor`, `lu` and
//! `cholesky`.

use super::checks::{batch_shape, block, check_info, fresh_matrices, matrix_dims, mt, raw};
use super::{LINALG_BLOCK, Triangle};
use crate::backend::{Factor, FactorCall, TriangularCall};
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// One factorization step of `a` (`[batch, n, m]`) in place.
fn step(a: &Tensor, aux: &Tensor, factor: Factor, start: usize, width: usize) -> Result<()> {
    let ra = raw(a);
    crate::backend::factor(&FactorCall {
        a: ra.kernel_out(ra.layout().clone())?,
        aux: aux.kernel_out(aux.layout().clone())?,
        factor,
        complex: a.dtype() == DType::C64,
        start,
        width,
    })
}

/// Solves `T · X = B` in place of `b` for triangles `t` of at most one
/// block (`[batch, w, w]` and `[batch, w, r]`).
pub(super) fn triangle(t: &Tensor, b: &Tensor, lower: bool, unit: bool, conj: bool) -> Result<()> {
    let (rt, rb) = (raw(t), raw(b));
    crate::backend::triangular(&TriangularCall {
        t: rt.kernel_ref(rt.layout().clone())?,
        b: rb.kernel_out(rb.layout().clone())?,
        complex: b.dtype() == DType::C64,
        lower,
        unit,
        conj,
    })
}

/// LU-factors `a` (`[batch, n, m]`, fresh) in place, as LAPACK's
/// `getrf`; returns the i32 `[batch, k + n + 1]` of pivots, row order and
/// info that [`FactorCall`] describes.
pub(super) fn lu_in_place(a: &Tensor) -> Result<Tensor> {
    let &[batch, n, m] = a.dims() else {
        unreachable!("fresh matrices are [batch, n, m]")
    };
    let k = n.min(m);
    let aux = Tensor::zeros([batch, k + n + 1], DType::I32, a.device())?;
    if k == 0 {
        let rows = Tensor::arange(0, n as i32, 1, a.device())?;
        return aux.narrow(1, 0, n)?.assign(&rows).map(|()| aux);
    }
    let mut s = 0;
    while s < k {
        let (w, e) = (LINALG_BLOCK.min(k - s), (s + LINALG_BLOCK).min(k));
        step(a, &aux, Factor::Lu, s, w)?;
        if e < m {
            let a12 = block(a, [s, w], [e, m - e])?;
            triangle(&block(a, [s, w], [s, w])?, &a12, true, true, false)?;
            if e < n {
                let update = block(a, [e, n - e], [s, w])?.matmul(&a12)?;
                block(a, [e, n - e], [e, m - e])?.sub_(&update)?;
            }
        }
        s = e;
    }
    Ok(aux)
}

/// Cholesky-factors the lower triangle of `a` (`[batch, n, n]`, fresh)
/// in place, as LAPACK's `potrf`, the factor steps zeroing the upper one
/// (past a failed column, left as it was); returns the i32 info,
/// `[batch]`.
pub(super) fn cholesky_in_place(a: &Tensor) -> Result<Tensor> {
    let &[batch, n, _] = a.dims() else {
        unreachable!("fresh matrices are [batch, n, n]")
    };
    let aux = Tensor::zeros([batch, 1], DType::I32, a.device())?;
    let complex = a.dtype() == DType::C64;
    let mut s = 0;
    while s < n {
        let (w, e) = (LINALG_BLOCK.min(n - s), (s + LINALG_BLOCK).min(n));
        step(a, &aux, Factor::Cholesky, s, w)?;
        if e < n {
            // L21 = A21 · L11^-H, as conj(L11) · L21ᵀ = A21ᵀ.
            let a21 = block(a, [e, n - e], [s, w])?;
            triangle(&block(a, [s, w], [s, w])?, &mt(&a21)?, true, false, complex)?;
            let l21h = if complex {
                mt(&a21)?.conj()?
            } else {
                mt(&a21)?
            };
            block(a, [e, n - e], [e, n - e])?.sub_(&a21.matmul(&l21h)?)?;
        }
        s = e;
    }
    aux.reshape([batch])
}

/// `f` on a real tensor, or on both parts of a complex one.
pub(super) fn in_parts(t: &Tensor, f: impl Fn(&Tensor) -> Result<()>) -> Result<()> {
    f(&t.real()?)?;
    if t.dtype() == DType::C64 {
        f(&t.imag()?)?;
    }
    Ok(())
}

/// `t` (`[batch, ..]`) with its batch axis as `batch` again.
pub(super) fn unbatched(t: &Tensor, batch: &Shape) -> Result<Tensor> {
    let dims: Vec<usize> = batch.dims().iter().chain(&t.dims()[1..]).copied().collect();
    t.reshape(dims)
}

/// The LU factorization with partial pivoting of each matrix of `a`
/// (`[.., n, m]`), as SciPy's `lu_factor` and LAPACK's `getrf`: `LU`
/// (`[.., n, m]`, the unit lower factor below the diagonal, the upper one
/// on and above it) and the i32 pivots (`[.., min(n, m)]`, counted from
/// 0: row `j` was swapped with row `pivots[j]`, in order).
///
/// A singular matrix is factored too (SciPy's `lu_factor` warns, NumPy
/// has no `lu`), its `U` with a zero on the diagonal: no status is read
/// back. Pivots are the first of the largest magnitude in each column
/// (`|re| + |im|` for c64, LAPACK's choice).
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
/// let (lu, pivots) = linalg::lu_factor(&a)?;
/// assert_eq!(pivots.to_vec::<i32>()?, vec![1, 1]);
/// let want = [3.0f32, 4.0, 1.0 / 3.0, 2.0 - 4.0 / 3.0];
/// for (x, y) in lu.to_vec::<f32>()?.iter().zip(want) {
///     assert!((x - y).abs() < 1e-6);
/// }
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `lu_factor` for fewer than 2 axes;
/// `Error::DType` for a dtype other than f32, f64 (CPU) or c64.
pub fn lu_factor(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (lu, pivots, _) = lu_factor_ex(a)?;
    Ok((lu, pivots))
}

/// [`lu_factor`] and the i32 status of each matrix (`[..]`): 0, or
/// `j + 1` for the first column `j` whose pivot is exactly zero
/// (LAPACK's `info`; PyTorch's `lu_factor_ex`).
///
/// # Errors
/// As [`lu_factor`].
pub fn lu_factor_ex(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "lu_factor";
    let run = || -> Result<(Tensor, Tensor, Tensor)> {
        let [n, m] = matrix_dims(OP, a, false)?;
        let batch = batch_shape(a);
        let lu = fresh_matrices(OP, a)?;
        let aux = lu_in_place(&lu)?;
        let k = n.min(m);
        let pivots = unbatched(&aux.narrow(1, 0, k)?, &batch)?;
        let info = unbatched(&aux.narrow(1, k + n, 1)?, &batch)?.squeeze_axis(-1)?;
        Ok((unbatched(&lu, &batch)?, pivots, info))
    };
    run().map_err(|e| e.named(OP))
}

/// The LU factorization `A = P · L · U` of each matrix of `a`
/// (`[.., n, m]`), as SciPy's `linalg.lu` and PyTorch's `linalg.lu`:
/// the permutation `P` (`[.., n, n]`, of `a`'s dtype), the unit lower
/// `L` (`[.., n, k]`) and the upper `U` (`[.., k, m]`), `k = min(n, m)`;
/// see [`lu_factor`].
///
/// # Errors
/// As [`lu_factor`], naming `lu`.
pub fn lu(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "lu";
    let run = || -> Result<(Tensor, Tensor, Tensor)> {
        let [n, m] = matrix_dims(OP, a, false)?;
        let batch = batch_shape(a);
        let lu = fresh_matrices(OP, a)?;
        let aux = lu_in_place(&lu)?;
        let k = n.min(m);
        let l = lu.narrow(2, 0, k)?.contiguous_copy()?;
        in_parts(&l, |p| p.tril_(-1))?;
        l.diagonal(0)?.fill_(1.0)?;
        let u = lu.narrow(1, 0, k)?.contiguous_copy()?;
        in_parts(&u, |p| p.triu_(0))?;
        // P[r, i] = 1 where row i of L·U is row r of A (r = perm[i]).
        let rows = Tensor::arange(0, n as i32, 1, a.device())?.reshape([n, 1])?;
        let perm = aux.narrow(1, k, n)?.unsqueeze(1)?;
        let p = rows.eq(&perm)?.to_dtype(DType::F32)?.to_dtype(a.dtype())?;
        Ok((
            unbatched(&p, &batch)?,
            unbatched(&l, &batch)?,
            unbatched(&u, &batch)?,
        ))
    };
    run().map_err(|e| e.named(OP))
}

/// The Cholesky factor of each Hermitian positive-definite matrix of `a`
/// (`[.., n, n]`), as NumPy's `linalg.cholesky`: `L` with `A = L · Lᴴ`
/// for [`Triangle::Lower`] (reading only `a`'s lower triangle), `U = Lᴴ`
/// with `A = Uᴴ · U` for [`Triangle::Upper`] (reading only the upper
/// one); the other triangle is zero. The imaginary parts of the diagonal
/// are not read.
///
/// Blocks until the factors' status is read back; see
/// [`cholesky_async`] and [`cholesky_ex`].
///
/// ```
/// use webtensor::{Device, Tensor, linalg, linalg::Triangle};
/// let a = Tensor::from_slice(&[4.0f32, 2.0, 2.0, 5.0], [2, 2], &Device::cpu())?;
/// let l = linalg::cholesky(&a, Triangle::Lower)?;
/// assert_eq!(l.to_vec::<f32>()?, vec![2.0, 0.0, 1.0, 2.0]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::LinAlg` naming `cholesky` and the batch index of a matrix
/// that is not positive definite (or holds NaN); as [`lu_factor`]
/// otherwise, and `Error::Shape` for matrices that are not square.
#[cfg(not(target_arch = "wasm32"))]
pub fn cholesky(a: &Tensor, triangle: Triangle) -> Result<Tensor> {
    pollster::block_on(cholesky_async(a, triangle))
}

/// [`cholesky`] on every target (the only form in a browser).
///
/// # Errors
/// As [`cholesky`], and readback errors.
pub async fn cholesky_async(a: &Tensor, triangle: Triangle) -> Result<Tensor> {
    const OP: &str = "cholesky";
    let (l, info) = cholesky_ex(a, triangle).map_err(|e| e.named(OP))?;
    check_info(OP, &info, &batch_shape(a), |j| {
        format!(
            "is not positive definite (its leading minor of order {} is not)",
            j + 1
        )
    })
    .await?;
    Ok(l)
}

/// [`cholesky`] without reading anything back (PyTorch's
/// `cholesky_ex`): the factors and the i32 status of each matrix (`[..]`),
/// 0 or `j + 1` for the first column `j` whose leading minor is not
/// positive definite. The factor of such a matrix is unspecified.
///
/// # Errors
/// As [`cholesky`], but no `Error::LinAlg`.
pub fn cholesky_ex(a: &Tensor, triangle: Triangle) -> Result<(Tensor, Tensor)> {
    const OP: &str = "cholesky";
    let run = || -> Result<(Tensor, Tensor)> {
        matrix_dims(OP, a, true)?;
        let batch = batch_shape(a);
        let complex = a.dtype() == DType::C64;
        // The upper factor is the lower one of Aᴴ, conjugated back.
        let source = match triangle {
            Triangle::Lower => a.clone(),
            Triangle::Upper if complex => mt(a)?.conj()?,
            Triangle::Upper => mt(a)?,
        };
        let l = fresh_matrices(OP, &source)?;
        let info = cholesky_in_place(&l)?;
        let l = match triangle {
            Triangle::Lower => l,
            Triangle::Upper if complex => mt(&l)?.conj()?,
            Triangle::Upper => mt(&l)?,
        };
        Ok((unbatched(&l, &batch)?, unbatched(&info, &batch)?))
    };
    run().map_err(|e| e.named(OP))
}
