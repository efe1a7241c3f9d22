//! What the singular values say about a matrix: its norms
//! (`matrix_norm`), condition number (`cond`), rank (`matrix_rank`) and
//! pseudo-inverse (`pinv`), as NumPy's.

use super::checks::{adjoint, batch_shape, eps_of, matrix_dims, real_dtype};
use super::solve::inv_ex;
use super::svd::{svd_ex, svdvals_ex};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Which matrix norm [`matrix_norm`] and [`cond`] take (NumPy's `ord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatrixNorm {
    /// The Frobenius norm, `sqrt(Σ |a_ij|²)` (`"fro"`, NumPy's default).
    Frobenius,
    /// The nuclear norm, the sum of the singular values (`"nuc"`).
    Nuclear,
    /// The largest singular value (`2`).
    Two,
    /// The smallest singular value (`-2`).
    NegTwo,
    /// The largest column sum of `|a_ij|` (`1`).
    One,
    /// The smallest column sum (`-1`).
    NegOne,
    /// The largest row sum of `|a_ij|` (`inf`).
    Inf,
    /// The smallest row sum (`-inf`).
    NegInf,
}

/// The norm `ord` of each matrix of `a` (`[.., n, m]`), as NumPy's
/// `linalg.norm(a, ord)` of matrices (PyTorch's `linalg.matrix_norm`):
/// real (f32 for c64), `[..]`. The spectral and nuclear norms take the
/// singular values ([`svdvals`](super::svdvals)). Like the rest of this
/// file's functions, it reads nothing back: a matrix holding NaN or
/// infinity gives NaN (where NumPy's SVD raises `LinAlgError`; `svdvals`
/// and `svd` say so as `Error::LinAlg`).
///
/// ```
/// use webtensor::{Device, Tensor, linalg, linalg::MatrixNorm};
/// let a = Tensor::from_slice(&[1.0f32, -2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
/// assert_eq!(linalg::matrix_norm(&a, MatrixNorm::One)?.to_vec::<f32>()?, vec![6.0]);
/// assert_eq!(linalg::matrix_norm(&a, MatrixNorm::Inf)?.to_vec::<f32>()?, vec![7.0]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `matrix_norm` for fewer than 2 axes;
/// `Error::DType` for a dtype other than f32, f64 (CPU) or c64;
/// `Error::Argument` for the -2 norm of empty matrices, and the -1 and
/// -inf norms of matrices without the columns or rows their minimum runs
/// over, as NumPy's.
pub fn matrix_norm(a: &Tensor, ord: MatrixNorm) -> Result<Tensor> {
    const OP: &str = "matrix_norm";
    let [n, m] = matrix_dims(OP, a, false)?;
    let run = || -> Result<Tensor> {
        let sums = |axis: isize| a.abs()?.sum(axis);
        match ord {
            MatrixNorm::Frobenius => a.abs()?.square()?.sum([-2isize, -1].as_slice())?.sqrt(),
            MatrixNorm::Nuclear => svdvals_ex(a)?.0.sum(-1),
            // As NumPy's and PyTorch's: an empty matrix has no smallest
            // singular value, in an empty batch too.
            MatrixNorm::NegTwo if n.min(m) == 0 => Err(crate::error::Error::argument(
                OP,
                format!(
                    "the -2 norm of empty matrices {} (no smallest singular value)",
                    a.shape()
                ),
            )),
            MatrixNorm::Two if n.min(m) == 0 => {
                Tensor::zeros(batch_shape(a), real_dtype(a), a.device())
            }
            MatrixNorm::Two => svdvals_ex(a)?.0.narrow(-1, 0, 1)?.squeeze_axis(-1),
            MatrixNorm::NegTwo => svdvals_ex(a)?
                .0
                .narrow(-1, n.min(m) - 1, 1)?
                .squeeze_axis(-1),
            // The largest of no sums: 0, as NumPy's and PyTorch's.
            MatrixNorm::One | MatrixNorm::Inf if n.min(m) == 0 => {
                Tensor::zeros(batch_shape(a), real_dtype(a), a.device())
            }
            MatrixNorm::One => sums(-2)?.max(-1),
            MatrixNorm::NegOne => sums(-2)?.min(-1),
            MatrixNorm::Inf => sums(-1)?.max(-1),
            MatrixNorm::NegInf => sums(-1)?.min(-1),
        }
    };
    run().map_err(|e| e.named(OP))
}

/// The condition number of each matrix of `a` in the norm `ord`, as
/// NumPy's `linalg.cond`: for `None` (NumPy's default) or
/// [`MatrixNorm::Two`], the ratio of the largest singular value to the
/// smallest (any shape; infinite for a singular matrix), for
/// [`MatrixNorm::NegTwo`] its inverse; for the other norms `‖A‖ ‖A⁻¹‖` of
/// square matrices, infinite where `A` is singular. Real, `[..]`.
///
/// # Errors
/// `Error::Shape` naming `cond` for fewer than 2 axes, or matrices that
/// are not square for the norms that take an inverse; `Error::DType` as
/// [`matrix_norm`].
pub fn cond(a: &Tensor, ord: Option<MatrixNorm>) -> Result<Tensor> {
    const OP: &str = "cond";
    let [n, m] = matrix_dims(OP, a, false)?;
    if n.min(m) == 0 {
        return Err(crate::error::Error::LinAlg {
            op: OP,
            msg: format!("is not defined for empty matrices, got shape {}", a.shape()),
        });
    }
    let run = || -> Result<Tensor> {
        match ord {
            None | Some(MatrixNorm::Two) | Some(MatrixNorm::NegTwo) => {
                let s = svdvals_ex(a)?.0;
                let k = n.min(m);
                let (big, small) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k.max(1) - 1, 1)?);
                let ratio = if ord == Some(MatrixNorm::NegTwo) {
                    small.div(&big)?
                } else {
                    big.div(&small)?
                };
                let ratio = ratio.squeeze_axis(-1)?;
                // 0 / 0 of a finite matrix (the zero matrix) is infinite,
                // as NumPy's.
                let finite = matrix_norm(a, MatrixNorm::Frobenius)?.isfinite()?;
                let undefined = ratio.isnan()?.logical_and(&finite)?;
                let inf = Tensor::full(
                    ratio.shape().clone(),
                    f64::INFINITY,
                    ratio.dtype(),
                    a.device(),
                )?;
                Tensor::where_cond(&undefined, &inf, &ratio)
            }
            Some(ord) => {
                matrix_dims(OP, a, true)?;
                let (inverse, info) = inv_ex(a)?;
                let product = matrix_norm(a, ord)?.mul(&matrix_norm(&inverse, ord)?)?;
                let inf = Tensor::full(
                    product.shape().clone(),
                    f64::INFINITY,
                    product.dtype(),
                    a.device(),
                )?;
                Tensor::where_cond(&info.ne_scalar(0)?, &inf, &product)
            }
        }
    };
    run().map_err(|e| e.named(OP))
}

/// The rank of each matrix of `a`: how many singular values exceed
/// `tol`, by default (`None`) the largest times `max(n, m)` times the
/// dtype's `ε`, as NumPy's `linalg.matrix_rank`. i64, `[..]`. A
/// matrix holding NaN or infinity, whose singular values are NaN, has
/// rank 0 (NumPy's SVD raises `LinAlgError`).
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 2.0, 4.0], [2, 2], &Device::cpu())?;
/// assert_eq!(linalg::matrix_rank(&a, None)?.to_vec::<i64>()?, vec![1]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// As [`matrix_norm`], naming `matrix_rank`.
pub fn matrix_rank(a: &Tensor, tol: Option<f64>) -> Result<Tensor> {
    const OP: &str = "matrix_rank";
    let [n, m] = matrix_dims(OP, a, false)?;
    let run = || -> Result<Tensor> {
        let s = svdvals_ex(a)?.0;
        let above = match tol {
            Some(tol) => s.gt_scalar(tol)?,
            None if n.min(m) == 0 => s.gt_scalar(0.0)?,
            None => {
                let floor = s
                    .narrow(-1, 0, 1)?
                    .mul_scalar(n.max(m) as f64 * eps_of(a))?;
                s.gt(&floor)?
            }
        };
        above.to_dtype(DType::I64)?.sum(-1)
    };
    run().map_err(|e| e.named(OP))
}

/// The Moore-Penrose pseudo-inverse of each matrix of `a` (`[.., n, m]`
/// to `[.., m, n]`), as NumPy's `linalg.pinv` with `rtol`: singular
/// values at or below `rtol` times the largest are taken as zero, by
/// default (`None`) `max(n, m)` times the dtype's `ε` (NumPy 2's
/// `rtol=None` and PyTorch's default; NumPy's legacy `rcond` default of
/// 1e-15 would keep an f32 matrix's noise).
///
/// # Errors
/// As [`matrix_norm`], naming `pinv`.
pub fn pinv(a: &Tensor, rtol: Option<f64>) -> Result<Tensor> {
    const OP: &str = "pinv";
    let [n, m] = matrix_dims(OP, a, false)?;
    let run = || -> Result<Tensor> {
        let (u, s, vh, _) = svd_ex(a, false)?;
        let s_inv = inverted(&s, rtol.unwrap_or(n.max(m) as f64 * eps_of(a)))?;
        adjoint(&vh)?
            .mul(&s_inv.unsqueeze(-2)?)?
            .matmul(&adjoint(&u)?)
    };
    run().map_err(|e| e.named(OP))
}

/// `1 / s` where `s` exceeds `rtol` times its largest (along the last
/// axis), else 0.
pub(super) fn inverted(s: &Tensor, rtol: f64) -> Result<Tensor> {
    if s.dims().last() == Some(&0) {
        return Ok(s.clone());
    }
    let floor = s.narrow(-1, 0, 1)?.mul_scalar(rtol)?;
    let keep = s.gt(&floor)?;
    let ones = Tensor::ones(s.shape().clone(), s.dtype(), s.device())?;
    let zeros = Tensor::zeros(s.shape().clone(), s.dtype(), s.device())?;
    Tensor::where_cond(
        &keep,
        &ones.div(&Tensor::where_cond(&keep, s, &ones)?)?,
        &zeros,
    )
}
