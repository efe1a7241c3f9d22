//! Least squares (`lstsq`) through the singular value decomposition, as
//! NumPy's (LAPACK's `gelsd`).

use super::checks::{adjoint, eps_of, matrix_dims};
use super::norms::inverted;
use super::svd::svd_ex;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// What [`lstsq`] returns (NumPy's four results, as tensors).
#[derive(Debug, Clone)]
pub struct Lstsq {
    /// The minimum-norm least-squares solution `x` (`[.., n, k]`, or
    /// `[.., n]` for a vector `b`).
    pub solution: Tensor,
    /// The squared 2-norms of the residuals `b - a·x`, by column
    /// (`[.., k]`, `[.., 1]` for a vector `b` as NumPy's `(1,)`), real,
    /// where `a` has more rows than columns; `[.., 0]` otherwise. NumPy also gives an empty array where the rank
    /// is below `n`: here the sums are given, and `rank` says.
    pub residuals: Tensor,
    /// The effective rank of each `a` (i64, `[..]`).
    pub rank: Tensor,
    /// The singular values of each `a`, falling (`[.., min(m, n)]`).
    pub singular_values: Tensor,
}

/// The least-squares solution of `a · x = b` for each matrix of `a`
/// (`[.., m, n]`) and `b` (`[.., m, k]`, or the vector `[m]`), as NumPy's
/// `linalg.lstsq` (batched as PyTorch's): the `x` of least norm among
/// those minimising `‖b - a·x‖`, through the singular value
/// decomposition, singular values at or below `rcond` times the largest
/// taken as zero (by default `max(m, n)` times the dtype's `ε`, as
/// PyTorch's: NumPy solves an f32 matrix in f64 and takes f64's `ε`, so it
/// keeps smaller singular values; a negative `rcond` is `ε`, as LAPACK's
/// `gelsd` takes NumPy's legacy `rcond=-1`). Nothing is read back: a
/// matrix holding NaN or infinity gives NaN, where NumPy raises
/// `LinAlgError`.
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let dev = Device::cpu();
/// // The line through (0, 1), (1, 3), (2, 5): y = 1 + 2x exactly.
/// let a = Tensor::from_slice(&[1.0f32, 0.0, 1.0, 1.0, 1.0, 2.0], [3, 2], &dev)?;
/// let b = Tensor::from_slice(&[1.0f32, 3.0, 5.0], [3], &dev)?;
/// let fit = linalg::lstsq(&a, &b, None)?;
/// let x = fit.solution.to_vec::<f32>()?;
/// assert!((x[0] - 1.0).abs() < 1e-5 && (x[1] - 2.0).abs() < 1e-5);
/// assert_eq!(fit.rank.to_vec::<i64>()?, vec![2]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `lstsq` for fewer than 2 axes, a `b` of another
/// row count, or batches that do not broadcast; `Error::DType` for dtypes
/// other than f32, f64 (CPU) or c64 after promotion;
/// `Error::DeviceMismatch` for operands on different devices; as the
/// module says, `Error::TooLarge` for matrices past one binding on a GPU.
pub fn lstsq(a: &Tensor, b: &Tensor, rcond: Option<f64>) -> Result<Lstsq> {
    const OP: &str = "lstsq";
    let run = || -> Result<Lstsq> {
        let dtype = Tensor::result_type(a, b)?;
        let (a, b) = (a.to_dtype(dtype)?, b.to_dtype(dtype)?);
        let [m, n] = matrix_dims(OP, &a, false)?;
        let vector = b.rank() == 1;
        let b = if vector { b.unsqueeze(-1)? } else { b };
        if b.rank() < 2 || b.dims()[b.rank() - 2] != m {
            return Err(Error::shape(
                OP,
                format!("b {} must have the {m} rows of a {}", b.shape(), a.shape()),
            ));
        }
        let (u, s, vh, _) = svd_ex(&a, false)?;
        // LAPACK's gelsd (NumPy's legacy rcond=-1): a negative rcond is ε.
        let rtol = match rcond {
            Some(r) if r >= 0.0 => r,
            Some(_) => eps_of(&a),
            None => m.max(n) as f64 * eps_of(&a),
        };
        let s_inv = inverted(&s, rtol)?;
        // x = V · diag(1/σ) · Uᴴ · b.
        let ub = adjoint(&u)?.matmul(&b)?;
        let x = adjoint(&vh)?.matmul(&ub.mul(&s_inv.unsqueeze(-1)?)?)?;
        let rank = s_inv
            .ne_scalar(0.0)?
            .to_dtype(crate::dtype::DType::I64)?
            .sum(-1)?;
        let residuals = if m > n {
            let r = b.sub(&a.matmul(&x)?)?;
            r.abs()?.square()?.sum(-2)?
        } else {
            let mut dims = x.dims()[..x.rank() - 2].to_vec();
            dims.push(0);
            Tensor::zeros(dims, s.dtype(), a.device())?
        };
        // A vector b keeps its one column's residual (`[.., 1]`), as
        // NumPy's `(1,)`.
        let solution = if vector { x.squeeze_axis(-1)? } else { x };
        Ok(Lstsq {
            solution,
            residuals,
            rank,
            singular_values: s,
        })
    };
    run().map_err(|e| e.named(OP))
}
