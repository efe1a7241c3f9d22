//! The CPU's eigendecompositions and singular value decompositions of
//! matrices of [`DENSE_FROM`] rows and columns or more
//! (`backend::SpectralCall`: faer's Householder reductions and divide and
//! conquer, LAPACK's `syevd` and `gesdd`), where one-sided Jacobi's sweeps
//! of `O(n³)` rotations each cost far more (a 512 x 512 `eigh` took 16 ms
//! against Jacobi's 700 on 2026-11-30, before f32 matrices were computed
//! in f64: BENCHMARKS.md). Smaller matrices and every matrix on a GPU
//! keep Jacobi (`svd.rs`).

use super::checks::{raw, real_dtype};
use super::svd::largest;
use crate::backend::{Spectral, SpectralCall};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The least rows and columns a matrix takes the dense path from, on the
/// CPU (measured on a batch of 1000: at 4 x 4 both paths take the same
/// time, at 8 x 8 the dense one 0.6 of Jacobi's; see BENCHMARKS.md).
pub(super) const DENSE_FROM: usize = 8;

/// True when `a`'s matrices (`[.., n, m]`) take the dense path.
pub(super) fn takes_dense(a: &Tensor) -> bool {
    let r = a.rank();
    !a.device().is_gpu() && a.dims()[r - 2].min(a.dims()[r - 1]) >= DENSE_FROM
}

/// The decomposition `kind` of each matrix of `a` (fresh `[batch, n, m]`):
/// the real values (`[batch, k]`), `U`'s first `u_cols` columns and `Vᴴ`'s
/// first `vh_rows` rows (`None` for 0; an eigendecomposition's vectors
/// are `U`), and the i32 status (`[batch]`: 1 for a matrix with NaN or
/// infinity, its outputs NaN). f32 matrices decompose in f64 and round
/// once: faer's f32 reductions were tens of ulps of the largest value
/// off at 129 x 129 (LAPACK's `ssyevd` and `sgesdd` a few); c64 ones in
/// complex f64 likewise (inside the backend: there is no c128 dtype).
pub(super) fn decompose(
    kind: Spectral,
    a: &Tensor,
    u_cols: usize,
    vh_rows: usize,
) -> Result<(Tensor, Option<Tensor>, Option<Tensor>, Tensor)> {
    if a.dtype() == DType::F32 {
        let (s, u, vh, status) = decompose(kind, &a.to_dtype(DType::F64)?, u_cols, vh_rows)?;
        let f32 = |t: Tensor| t.to_dtype(DType::F32);
        return Ok((
            f32(s)?,
            u.map(f32).transpose()?,
            vh.map(f32).transpose()?,
            status,
        ));
    }
    let &[batch, n, m] = a.dims() else {
        unreachable!("fresh matrices are [batch, n, m]")
    };
    let dev = a.device();
    let s = Tensor::zeros([batch, n.min(m)], real_dtype(a), dev)?;
    let status = Tensor::zeros([batch], DType::I32, dev)?;
    let factor = |rows: usize, cols: usize| -> Result<Option<Tensor>> {
        (rows * cols > 0)
            .then(|| Tensor::zeros([batch, rows, cols], a.dtype(), dev))
            .transpose()
    };
    let (u, vh) = (factor(n, u_cols)?, factor(vh_rows, m)?);
    // Scaled by the power of two at or below its largest magnitude
    // (exactly, so no rounding is added), no matrix's reductions over- or
    // underflow (LAPACK's drivers scale too; faer does not): the values
    // are scaled back, the vectors are the same.
    let big = largest(a)?.abs()?;
    let scale = big.log2()?.floor()?.exp2()?.to_dtype(a.dtype())?;
    let a = &a.div(&scale)?;
    let (ra, rs, rstatus) = (raw(a), raw(&s), raw(&status));
    let (ru, rvh) = (u.as_ref().map(raw), vh.as_ref().map(raw));
    crate::backend::spectral(&SpectralCall {
        kind,
        a: ra.kernel_ref(ra.layout().clone())?,
        s: rs.kernel_out(rs.layout().clone())?,
        u: ru
            .as_ref()
            .map(|t| t.kernel_out(t.layout().clone()))
            .transpose()?,
        vh: rvh
            .as_ref()
            .map(|t| t.kernel_out(t.layout().clone()))
            .transpose()?,
        status: rstatus.kernel_out(rstatus.layout().clone())?,
        complex: a.dtype() == DType::C64,
    })?;
    let back = scale.abs()?.reshape([batch, 1])?.to_dtype(s.dtype())?;
    Ok((s.mul(&back)?, u, vh, status))
}
