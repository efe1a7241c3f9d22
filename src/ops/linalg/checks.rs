//! What every linalg op checks and shares: dtypes, matrix shapes, the
//! batch, fresh copies to factor in place, the pair view a kernel reads
//! complex matrices through, and reading a factorization's status back.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// The dtypes linalg computes in.
pub(super) fn check_dtype(op: &'static str, a: &Tensor) -> Result<()> {
    match a.dtype() {
        DType::F32 | DType::F64 | DType::C64 => Ok(()),
        other => Err(Error::dtype(
            op,
            format!("takes f32, f64 (on the CPU) or c64 matrices, got {other}; cast first"),
        )),
    }
}

/// `a`'s last two extents, checking that it is a (batch of) matrices of
/// a dtype linalg computes in, square when `square`.
pub(super) fn matrix_dims(op: &'static str, a: &Tensor, square: bool) -> Result<[usize; 2]> {
    check_dtype(op, a)?;
    let r = a.rank();
    if r < 2 {
        return Err(Error::shape(
            op,
            format!("takes matrices (at least 2 axes), got shape {}", a.shape()),
        ));
    }
    let (n, m) = (a.dims()[r - 2], a.dims()[r - 1]);
    if square && n != m {
        return Err(Error::shape(
            op,
            format!("takes square matrices, got shape {}", a.shape()),
        ));
    }
    Ok([n, m])
}

/// The leading (batch) axes of a matrix tensor.
pub(super) fn batch_shape(a: &Tensor) -> Shape {
    Shape::from(&a.dims()[..a.rank() - 2])
}

/// A fresh contiguous copy of `a` (`[.., n, m]`) as `[batch, n, m]`.
pub(super) fn fresh_matrices(op: &'static str, a: &Tensor) -> Result<Tensor> {
    let [n, m] = matrix_dims(op, a, false)?;
    let out = Tensor::empty_dense(a.shape().clone(), a.dtype(), a.device(), op)?;
    out.assign(a)?;
    out.reshape([batch_shape(a).numel(), n, m])
}

/// The view a kernel reads: the f32 pairs of a c64 tensor, else itself.
pub(super) fn raw(t: &Tensor) -> Tensor {
    if t.dtype() == DType::C64 {
        t.pairs()
    } else {
        t.clone()
    }
}

/// The swap of the last two axes (`.mT`).
pub(super) fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-2, -1)
}

/// The conjugate transpose of the matrices of `t` (`.mH`).
pub(super) fn adjoint(t: &Tensor) -> Result<Tensor> {
    let tt = mt(t)?;
    if t.dtype() == DType::C64 {
        tt.conj()
    } else {
        Ok(tt)
    }
}

/// The real dtype of `a`'s magnitudes and singular values: f64 for f64,
/// else f32.
pub(super) fn real_dtype(a: &Tensor) -> DType {
    if a.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// `ε` of the dtype linalg computes `a` in.
pub(super) fn eps_of(a: &Tensor) -> f64 {
    if a.dtype() == DType::F64 {
        f64::EPSILON
    } else {
        f64::from(f32::EPSILON)
    }
}

/// The block `[rows, cols]` of the matrices of `t` (`[batch, n, m]`).
pub(super) fn block(t: &Tensor, rows: [usize; 2], cols: [usize; 2]) -> Result<Tensor> {
    t.narrow(1, rows[0], rows[1])?.narrow(2, cols[0], cols[1])
}

/// Reads a factorization's status (`info`, i32, one a matrix of a batch
/// of shape `batch`) back and turns the first failure into
/// `Error::LinAlg`: `what(column)` says why.
///
/// # Errors
/// `Error::LinAlg` for a failed matrix; readback errors.
pub(super) async fn check_info(
    op: &'static str,
    info: &Tensor,
    batch: &Shape,
    what: impl Fn(usize) -> String,
) -> Result<()> {
    let info = info.to_vec_async::<i32>().await?;
    let Some((k, &column)) = info.iter().enumerate().find(|(_, c)| **c != 0) else {
        return Ok(());
    };
    let place = if batch.rank() == 0 {
        String::from("the matrix")
    } else {
        let mut index = vec![0; batch.rank()];
        let mut rest = k;
        for (slot, &d) in index.iter_mut().zip(batch.dims()).rev() {
            *slot = rest % d;
            rest /= d;
        }
        format!("the matrix at batch index {k} ({index:?})")
    };
    Err(Error::LinAlg {
        op,
        msg: format!("{place} {}", what(column as usize - 1)),
    })
}
