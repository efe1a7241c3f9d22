//! Determinants from the LU factorization: the sign (or phase) and the
//! log of the magnitude from `U`'s diagonal and the pivots' parity, as
//! NumPy's `slogdet`; a real determinant the product of the diagonal (as
//! PyTorch's), `sign · exp(logabsdet)` (NumPy's) where a partial product
//! over- or underflows, a complex one `sign · exp(logabsdet)`.

use super::checks::{batch_shape, fresh_matrices, matrix_dims};
use super::factor::{lu_in_place, unbatched};
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// The sign and log-magnitude of the determinant of each square matrix of
/// `a` (`[.., n, n]`), as NumPy's `linalg.slogdet`: `det = sign ·
/// exp(logabsdet)` without overflow. For real matrices the sign is -1, 0
/// or 1 in `a`'s dtype; for c64 it is the phase `e^(iθ)` (c64) and the
/// log-magnitude is f32. A singular matrix gives sign 0 and `-inf`; an
/// empty one 1 and 0; a real one whose factor holds a NaN sign 0 and a
/// NaN log-magnitude (PyTorch's), a c64 one NaN for both.
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
/// let (sign, logabsdet) = linalg::slogdet(&a)?;
/// assert_eq!(sign.to_vec::<f32>()?, vec![-1.0]);
/// assert!((logabsdet.to_vec::<f32>()?[0] - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `slogdet` for fewer than 2 axes or matrices that
/// are not square; `Error::DType` for a dtype other than f32, f64 (CPU)
/// or c64.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    parts("slogdet", a)
}

/// The determinant of each square matrix of `a` (`[.., n, n]`): of a real
/// one the product of its LU factor's diagonal, signed by the row swaps
/// (as PyTorch's `linalg.det`; the f32 `sign · exp(logabsdet)` was an ulp
/// per step off, `det(diag(3, 5, 7))` 104.99998), or where that product
/// is infinite, NaN or 0 though no entry of the diagonal is (a partial
/// product past the dtype's range: `det(diag(1e30, 1e30, 1e-30, 1e-30))`
/// was NaN), `sign · exp(logabsdet)` as NumPy's; of a c64 one each part
/// of [`slogdet`]'s `sign` times `exp(logabsdet)` (a zero part stays 0),
/// in `a`'s dtype.
///
/// ```
/// use webtensor::{Device, Tensor, linalg};
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
/// assert!((linalg::det(&a)?.to_vec::<f32>()?[0] + 2.0).abs() < 1e-5);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// As [`slogdet`], naming `det`.
pub fn det(a: &Tensor) -> Result<Tensor> {
    let run = || -> Result<Tensor> {
        if a.dtype() == DType::C64 {
            let (sign, logabsdet) = parts_of("det", a)?;
            // Each part of the sign times the real magnitude, a zero part
            // kept: as a complex product with (inf, 0), a zero part's
            // 0 · inf was NaN (det(diag(1e20, 1e20)) was inf + NaN i,
            // NumPy's is inf + 0i).
            let magnitude = logabsdet.exp()?;
            let scaled = |p: Tensor| -> Result<Tensor> {
                Tensor::where_cond(&p.eq_scalar(0.0)?, &p, &p.mul(&magnitude)?)
            };
            return Tensor::complex(&scaled(sign.real()?)?, &scaled(sign.imag()?)?);
        }
        let (diagonal, swaps, batch) = factored("det", a)?;
        let sign_of = |flips: &Tensor| -> Result<Tensor> {
            flips
                .remainder_scalar(2)?
                .mul_scalar(-2)?
                .add_scalar(1)?
                .to_dtype(a.dtype())
        };
        let product = diagonal.prod(-1)?.mul(&sign_of(&swaps)?)?;
        // A partial product past the range where the determinant is not
        // (inf · 0 is NaN): the sum of the logs does not overflow.
        let plain = diagonal
            .isfinite()?
            .logical_and(&diagonal.ne_scalar(0.0)?)?;
        let lost = product
            .isfinite()?
            .logical_and(&product.ne_scalar(0.0)?)?
            .logical_not()?
            .logical_and(&plain.all(-1)?)?;
        let negatives = diagonal.lt_scalar(0.0)?.to_dtype(DType::I64)?.sum(-1)?;
        let magnitude = diagonal.abs()?.log()?.sum(-1)?.exp()?;
        let logged = magnitude.mul(&sign_of(&negatives.add(&swaps)?)?)?;
        unbatched(&Tensor::where_cond(&lost, &logged, &product)?, &batch)
    };
    run().map_err(|e| e.named("det"))
}

fn parts(op: &'static str, a: &Tensor) -> Result<(Tensor, Tensor)> {
    parts_of(op, a).map_err(|e| e.named(op))
}

/// The diagonal of each matrix's LU factor (`[batch, n]`), the row swaps
/// its pivoting made (`[batch]`, i64), and the batch shape.
fn factored(op: &'static str, a: &Tensor) -> Result<(Tensor, Tensor, Shape)> {
    let [n, _] = matrix_dims(op, a, true)?;
    let batch = batch_shape(a);
    let lu = fresh_matrices(op, a)?;
    let aux = lu_in_place(&lu)?;
    let diagonal = lu.diagonal(0)?;
    let steps = Tensor::arange(0, n as i32, 1, a.device())?;
    let swaps = aux
        .narrow(1, 0, n)?
        .ne(&steps)?
        .to_dtype(DType::I64)?
        .sum(-1)?;
    Ok((diagonal, swaps, batch))
}

fn parts_of(op: &'static str, a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (diagonal, swaps, batch) = factored(op, a)?;
    let logabsdet = diagonal.abs()?.log()?.sum(-1)?;
    // Every |u_ii| > 0: a zero or a NaN on the diagonal gives a real sign
    // 0 (a c64 sign is NaN through its phase).
    let nonzero = diagonal.abs()?.gt_scalar(0.0)?.all(-1)?;
    let sign = if a.dtype() == DType::C64 {
        // The product of the diagonal's unit phases (1 for a zero), negated
        // for odd swaps, as LAPACK's callers multiply them: a sum of the f32
        // angles drifted with n (1j eye(1024) gave 1 + 1e-4 i).
        let magnitude = diagonal.abs()?;
        let zero = magnitude.eq_scalar(0.0)?;
        let part = |p: Tensor, at_zero: f64| {
            let filler = Tensor::full([], at_zero, DType::F32, a.device())?;
            Tensor::where_cond(&zero, &filler, &p.div(&magnitude)?)
        };
        let unit = Tensor::complex(&part(diagonal.real()?, 1.0)?, &part(diagonal.imag()?, 0.0)?)?;
        let phase = product_of_last(unit)?;
        let flip = swaps.remainder_scalar(2)?.to_dtype(DType::F32)?;
        let on = flip.mul_scalar(-2.0)?.add_scalar(1.0)?;
        phase
            .div(&phase.abs()?)?
            .mul(&on.mul(&nonzero.to_dtype(DType::F32)?)?)?
    } else {
        let negatives = diagonal.lt_scalar(0.0)?.to_dtype(DType::I64)?.sum(-1)?;
        let odd = swaps.add(&negatives)?.remainder_scalar(2)?;
        let sign = odd.mul_scalar(-2)?.add_scalar(1)?;
        sign.mul(&nonzero.to_dtype(DType::I64)?)?
            .to_dtype(a.dtype())?
    };
    Ok((unbatched(&sign, &batch)?, unbatched(&logabsdet, &batch)?))
}

/// The product over the last axis of `t` (c64, `[batch, n]`): a tree of
/// elementwise products of halves (log2 n ops), the odd element out of
/// each level kept aside; 1 for none.
fn product_of_last(mut t: Tensor) -> Result<Tensor> {
    let mut n = t.dims()[t.rank() - 1];
    let mut aside: Option<Tensor> = None;
    if n == 0 {
        let batch = t.dims()[..t.rank() - 1].to_vec();
        let ones = Tensor::ones(batch.clone(), DType::F32, t.device())?;
        return Tensor::complex(&ones, &Tensor::zeros(batch, DType::F32, t.device())?);
    }
    while n > 1 {
        if n % 2 == 1 {
            let last = t.narrow(-1, n - 1, 1)?;
            aside = Some(match aside {
                Some(kept) => kept.mul(&last)?,
                None => last,
            });
            n -= 1;
        }
        t = t.narrow(-1, 0, n / 2)?.mul(&t.narrow(-1, n / 2, n / 2)?)?;
        n /= 2;
    }
    let t = match aside {
        Some(kept) => t.mul(&kept)?,
        None => t,
    };
    t.squeeze_axis(-1)
}
