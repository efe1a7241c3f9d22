//! Linear systems: blocked triangular solves (a block's triangle in one
//! kernel, a product for the rows below it), and `solve`, `inv` and
//! `solve_triangular` on top of them and of the LU factorization.

use super::checks::{batch_shape, block, check_dtype, check_info, fresh_matrices, matrix_dims, mt};
use super::factor::{lu_in_place, triangle, unbatched};
use super::{LINALG_BLOCK, Triangle};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::Side;
use crate::shape::{Shape, broadcast_for};
use crate::tensor::Tensor;

/// Solves `T · X = B` in place of `b` (`[batch, n, r]`, fresh): `t`
/// (`[batch, n, n]`, any strides, a batch stride of 0 to share one) is
/// read in its `lower` or upper triangle, conjugated with `conj`, its
/// diagonal taken as ones with `unit`. Blocks go down (lower) or up
/// (upper): each block's triangle is one kernel, then the rows still to
/// solve subtract its product with the block's solution.
pub(super) fn solve_in_place(
    t: &Tensor,
    b: &Tensor,
    lower: bool,
    unit: bool,
    conj: bool,
) -> Result<()> {
    let n = b.dims()[1];
    let r = b.dims()[2];
    let rows = |s: usize, e: usize| b.narrow(1, s, e - s);
    let t_block = |rs: [usize; 2], cs: [usize; 2]| -> Result<Tensor> {
        let x = block(t, [rs[0], rs[1] - rs[0]], [cs[0], cs[1] - cs[0]])?;
        if conj { x.conj() } else { Ok(x) }
    };
    let starts: Vec<usize> = (0..n).step_by(LINALG_BLOCK).collect();
    let order: Vec<usize> = if lower {
        starts
    } else {
        starts.into_iter().rev().collect()
    };
    for s in order {
        let e = (s + LINALG_BLOCK).min(n);
        triangle(
            &block(t, [s, e - s], [s, e - s])?,
            &rows(s, e)?,
            lower,
            unit,
            conj,
        )?;
        let (rest_from, rest_to) = if lower { (e, n) } else { (0, s) };
        if rest_from < rest_to && r > 0 {
            let update = t_block([rest_from, rest_to], [s, e])?.matmul(&rows(s, e)?)?;
            rows(rest_from, rest_to)?.sub_(&update)?;
        }
    }
    Ok(())
}

/// `a` and `b` promoted to their common dtype, which linalg computes in.
fn promoted(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let dtype = Tensor::result_type(a, b)?;
    let (a, b) = (a.to_dtype(dtype)?, b.to_dtype(dtype)?);
    check_dtype(op, &a)?;
    Ok((a, b))
}

/// `b` (`[.., n, r]`) broadcast with the batch of `a` (`[.., n, n]`):
/// the common batch shape, and `b` as a fresh `[batch, n, r]` copy.
fn broadcast_rhs(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Shape, Tensor)> {
    let n = a.dims()[a.rank() - 1];
    let [rows, r] = matrix_dims(op, b, false)?;
    if rows != n {
        return Err(Error::shape(
            op,
            format!(
                "the right-hand side {} has {rows} rows where the matrices {} have {n}",
                b.shape(),
                a.shape()
            ),
        ));
    }
    let batch = broadcast_for(op, &batch_shape(a), &batch_shape(b))?;
    let dims: Vec<usize> = batch.dims().iter().copied().chain([n, r]).collect();
    Ok((batch, fresh_matrices(op, &b.broadcast_to(dims)?)?))
}

/// `t` (`[.., n, m]`) broadcast to `batch` and viewed as
/// `[batch.numel(), n, m]` (copied only where the batch axes do not
/// merge).
fn batched_as(t: &Tensor, batch: &Shape) -> Result<Tensor> {
    let [n, m] = [t.dims()[t.rank() - 2], t.dims()[t.rank() - 1]];
    let dims: Vec<usize> = batch.dims().iter().copied().chain([n, m]).collect();
    t.broadcast_to(dims)?.reshape([batch.numel(), n, m])
}

/// Solves `A · X = B` with `A` triangular (SciPy's
/// `linalg.solve_triangular`, PyTorch's `linalg.solve_triangular`): only
/// `a`'s `triangle` is read, its diagonal taken as ones with
/// `unit_diagonal`. With [`Side::Left`], `a` is `[.., n, n]` and `b`
/// `[.., n, k]`; with [`Side::Right`] the system is `X · A = B` and `b`
/// is `[.., k, n]`. Batch axes broadcast. No check for a zero on the
/// diagonal: it gives infinities and NaN, as LAPACK's `trtrs` without its
/// check.
///
/// ```
/// use webtensor::{Device, Side, Tensor, linalg, linalg::Triangle};
/// let dev = Device::cpu();
/// let a = Tensor::from_slice(&[2.0f32, 0.0, 1.0, 4.0], [2, 2], &dev)?;
/// let b = Tensor::from_slice(&[2.0f32, 9.0], [2, 1], &dev)?;
/// let x = linalg::solve_triangular(&a, &b, Triangle::Lower, Side::Left, false)?;
/// assert_eq!(x.to_vec::<f32>()?, vec![1.0, 2.0]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `solve_triangular` for a non-square `a` or a
/// `b` of another size or batch; `Error::DType` for dtypes other than
/// f32, f64 (CPU) or c64 after promotion; `Error::DeviceMismatch`.
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    triangle: Triangle,
    side: Side,
    unit_diagonal: bool,
) -> Result<Tensor> {
    const OP: &str = "solve_triangular";
    let run = || -> Result<Tensor> {
        crate::ops::check_devices(OP, a, &[crate::ops::Arg::Tensor(b)])?;
        let (a, b) = promoted(OP, a, b)?;
        matrix_dims(OP, &a, true)?;
        let lower = triangle == Triangle::Lower;
        // X · A = B is Aᵀ · Xᵀ = Bᵀ, the other triangle.
        let (a, b, lower) = match side {
            Side::Left => (a, b, lower),
            Side::Right => (mt(&a)?, mt(&b)?, !lower),
        };
        let (batch, x) = broadcast_rhs(OP, &a, &b)?;
        solve_in_place(&batched_as(&a, &batch)?, &x, lower, unit_diagonal, false)?;
        let x = unbatched(&x, &batch)?;
        match side {
            Side::Left => Ok(x),
            Side::Right => mt(&x),
        }
    };
    run().map_err(|e| e.named(OP))
}

/// Solves `A · X = B` for each square matrix of `a` (`[.., n, n]`), as
/// NumPy's `linalg.solve`: `b` is `[.., n, k]` (batch axes broadcast) or,
/// when 1-D, the vector `[n]`. By LU with partial pivoting (LAPACK's
/// `gesv`).
///
/// Blocks until the factors' status is read back; see [`solve_async`] and
/// [`solve_ex`].
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let dev = Device::cpu();
/// let a = Tensor::from_slice(&[3.0f32, 1.0, 1.0, 2.0], [2, 2], &dev)?;
/// let b = Tensor::from_slice(&[9.0f32, 8.0], [2], &dev)?;
/// assert_eq!(linalg::solve(&a, &b)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::LinAlg` naming `solve` and the batch index of a singular
/// matrix (an exactly zero pivot); `Error::Shape` for non-square
/// matrices or a `b` of another size or batch; `Error::DType` for dtypes
/// other than f32, f64 (CPU) or c64 after promotion;
/// `Error::DeviceMismatch`.
#[cfg(not(target_arch = "wasm32"))]
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    pollster::block_on(solve_async(a, b))
}

/// [`solve`] on every target (the only form in a browser).
///
/// # Errors
/// As [`solve`], and readback errors.
pub async fn solve_async(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    const OP: &str = "solve";
    let (x, info) = solve_ex(a, b)?;
    check_info(OP, &info, info.shape(), singular).await?;
    Ok(x)
}

/// Why a matrix whose LU has a zero pivot in column `j` has no solve.
fn singular(j: usize) -> String {
    format!("is singular (U[{j}, {j}] of its LU factorization is exactly zero)")
}

/// [`solve`] without reading anything back (PyTorch's `solve_ex`): the
/// solutions and the i32 status of each system (`[..]`, the broadcast
/// batch): 0, or `j + 1` where the matrix is singular (its pivot `j` is
/// zero; the solution is then unspecified).
///
/// # Errors
/// As [`solve`], but no `Error::LinAlg`.
pub fn solve_ex(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "solve";
    let run = || -> Result<(Tensor, Tensor)> {
        crate::ops::check_devices(OP, a, &[crate::ops::Arg::Tensor(b)])?;
        let (a, b) = promoted(OP, a, b)?;
        matrix_dims(OP, &a, true)?;
        let vector = b.rank() == 1;
        let b = if vector { b.unsqueeze(-1)? } else { b };
        let lu = fresh_matrices(OP, &a)?;
        let aux = lu_in_place(&lu)?;
        let a_batch = batch_shape(&a);
        let (batch, x) = broadcast_rhs(OP, &a, &b)?;
        let n = lu.dims()[1];
        let r = x.dims()[2];
        // Rows in the factors' order: x[i] = b[perm[i]].
        let perm = unbatched(&aux.narrow(1, n, n)?, &a_batch)?.unsqueeze(-1)?;
        let index = batched_as(&perm.broadcast_to(perm_dims(&batch, n, r))?, &batch)?;
        let x = gather_rows(&x, &index)?;
        let lu_b = batched_as(&unbatched(&lu, &a_batch)?, &batch)?;
        solve_in_place(&lu_b, &x, true, true, false)?;
        solve_in_place(&lu_b, &x, false, false, false)?;
        let info = unbatched(&aux.narrow(1, 2 * n, 1)?, &a_batch)?.squeeze_axis(-1)?;
        let info = info.broadcast_to(batch.clone())?.contiguous()?;
        let x = unbatched(&x, &batch)?;
        Ok((if vector { x.squeeze_axis(-1)? } else { x }, info))
    };
    run().map_err(|e| e.named(OP))
}

fn perm_dims(batch: &Shape, n: usize, r: usize) -> Vec<usize> {
    batch.dims().iter().copied().chain([n, r]).collect()
}

/// `x` (`[batch, n, r]`) with its rows picked by `index` (i32, same
/// shape): a fresh tensor.
fn gather_rows(x: &Tensor, index: &Tensor) -> Result<Tensor> {
    if x.dtype() != DType::C64 {
        return x.gather(index, 1);
    }
    // A c64 tensor gathers its (re, im) pairs.
    let pairs = index
        .unsqueeze(-1)?
        .broadcast_to(x.pairs().shape().clone())?;
    Ok(x.pairs().gather(&pairs, 1)?.complex_of_pairs())
}

/// The inverse of each square matrix of `a` (`[.., n, n]`), as NumPy's
/// `linalg.inv`: [`solve`] with the identity.
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[2.0f32, 0.0, 0.0, 4.0], [2, 2], &Device::cpu())?;
/// assert_eq!(linalg::inv(&a)?.to_vec::<f32>()?, vec![0.5, 0.0, 0.0, 0.25]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::LinAlg` naming `inv` and the batch index of a singular
/// matrix; as [`solve`] otherwise.
#[cfg(not(target_arch = "wasm32"))]
pub fn inv(a: &Tensor) -> Result<Tensor> {
    pollster::block_on(inv_async(a))
}

/// [`inv`] on every target (the only form in a browser).
///
/// # Errors
/// As [`inv`], and readback errors.
pub async fn inv_async(a: &Tensor) -> Result<Tensor> {
    const OP: &str = "inv";
    let (x, info) = inv_ex(a)?;
    check_info(OP, &info, info.shape(), singular).await?;
    Ok(x)
}

/// [`inv`] without reading anything back: the inverses and the i32 status
/// of each matrix, as [`solve_ex`]'s.
///
/// # Errors
/// As [`inv`], but no `Error::LinAlg`.
pub fn inv_ex(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "inv";
    let [n, _] = matrix_dims(OP, a, true)?;
    // An empty batch solves against a view: no n x n identity is made
    // (at n = 2^15 a GPU refused its 4 GiB).
    let eye = match a.numel() {
        0 => Tensor::zeros([1, 1], a.dtype(), a.device())?.broadcast_to([n, n])?,
        _ => Tensor::eye(n, a.dtype(), a.device())?,
    };
    solve_ex(a, &eye).map_err(|e| e.named(OP))
}
