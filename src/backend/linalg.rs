//! The two kernels of `ops/linalg`'s blocked factorizations, on the
//! backend that holds the matrices: a panel of an LU factorization or a
//! diagonal block of a Cholesky one ([`FactorCall`]), and a small
//! triangular solve ([`TriangularCall`]). The op layer does the rest with
//! products and views, so trailing updates run in the matmul kernels.
//! `cpu/linalg.rs` and `gpu/linalg/` compute the same steps.

use super::{Storage, TensorRef, check_bounds, cpu, gpu, live};
use crate::error::{Error, Result};

/// The block of the blocked algorithms: the widest panel, diagonal block
/// and triangle of one step (its kernels' loops grow with its square).
pub(crate) const LINALG_BLOCK: usize = 64;

/// Which factorization a [`FactorCall`] advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Factor {
    /// LU with partial pivoting (LAPACK's `getf2` on a panel).
    Lu,
    /// Lower Cholesky of a diagonal block (LAPACK's `potf2`).
    Cholesky,
}

/// One step of a blocked factorization of the matrices of `a`, an f32 or
/// f64 `[batch, n, m]` view (or for complex matrices, f32 pairs
/// `[batch, n, m, 2]` with the pair at stride 1), written in place.
///
/// `aux` is i32 `[batch, len]`, each row contiguous, written in place:
/// - for [`Factor::Lu`], `len = k + n + 1` with `k = min(n, m)`: the
///   pivots (`[0, k)`, LAPACK's `ipiv` counted from 0: row `j` was swapped
///   with row `pivots[j]`), the row order so far (`[k, k + n)`: row `i` of
///   the factors is row `perm[i]` of the matrix; set to `0..n` when
///   `start` is 0) and the info (`len - 1`);
/// - for [`Factor::Cholesky`], `len = 1`: the info.
///
/// The info is 0 or `j + 1` for the first column `j` that failed (a zero
/// pivot; a diagonal that is not positive or is NaN), as LAPACK's.
///
/// LU factors columns `[start, start + width)` over rows `[start, n)`: it
/// picks each pivot (largest magnitude, `|re| + |im|` for complex as
/// LAPACK's `icamax`; the first of equals), swaps whole rows (every
/// column of the matrix), divides the column below by the pivot (not
/// for a zero pivot) and updates the panel's columns to `start + width`
/// (for a zero pivot too, as LAPACK's, so NaN below it spreads). Cholesky factors the lower triangle of the diagonal
/// block `[start, start + width)²` (its earlier columns already
/// subtracted), reading only that triangle and the real part of its
/// diagonal, and zeroes the block's rows right of the diagonal (to the
/// last column: the factor's upper triangle); it stops at a failing
/// column and does nothing where the info is already set.
pub(crate) struct FactorCall<'a> {
    pub a: TensorRef<'a>,
    pub aux: TensorRef<'a>,
    pub factor: Factor,
    pub complex: bool,
    pub start: usize,
    pub width: usize,
}

/// One step of a blocked Householder QR (LAPACK's `geqrf`) of the
/// matrices of `a` (as [`FactorCall`]'s), in place: columns `[start,
/// start + width)` over rows `[start, n)` become `R`'s on and above the
/// diagonal and the reflectors' vectors below it (their leading ones
/// implicit), with LAPACK's `larfg` choices (`beta = -sign(re alpha) ·
/// |(alpha, x)|`; no reflection where `x` is zero and `alpha` real). `t`
/// (`[batch, width, width]`, the same dtype, or pairs) receives the
/// panel's upper triangular factor (`larft`, forward and columnwise: its
/// reflectors' product is `I - V·T·Vᴴ`), zeros below the diagonal.
pub(crate) struct HouseholderCall<'a> {
    pub a: TensorRef<'a>,
    pub t: TensorRef<'a>,
    pub complex: bool,
    pub start: usize,
    pub width: usize,
}

/// One-sided Jacobi (Hestenes) of the matrices of `a` (as
/// [`FactorCall`]'s, `[batch, n, m]`), in place: rotations of pairs of
/// columns, in a round-robin order (see `shaders/linalg/jacobi.wgsl`),
/// until a sweep rotates none (each pair's `|a_pᴴ a_q| <= tol ·
/// |a_p| |a_q|`) or `sweeps` sweeps have run. `a`'s columns end
/// orthogonal (the left singular vectors times the singular values);
/// `v` (`[batch, m, m]`, the identity on entry) takes the same rotations
/// (the right singular vectors). `aux` is i32 `[batch, 1]`, zeros on
/// entry: on return [`JACOBI_UNFINISHED`] where the last sweep still
/// rotated a pair of columns whose squared norms both passed `negligible`
/// (the sweeps ran out), else another value (converged, or the sweeps ran
/// out rotating only columns of rounding noise: LAPACK's `gesvj` too
/// counts only rotations that change its columns).
pub(crate) struct JacobiCall<'a> {
    pub a: TensorRef<'a>,
    pub v: TensorRef<'a>,
    pub aux: TensorRef<'a>,
    pub complex: bool,
    pub tol: f32,
    /// Squared column norms at or below this are negligible.
    pub negligible: f32,
    pub sweeps: usize,
}

/// [`JacobiCall`]'s state word: a sweep rotated a pair of columns.
pub(crate) const JACOBI_ROTATED: i32 = 1;
/// [`JacobiCall`]'s state word: a sweep rotated a pair of columns whose
/// squared norms both passed `negligible`.
pub(crate) const JACOBI_SIGNIFICANT: i32 = 2;
/// [`JacobiCall`]'s state word: a whole sweep rotated nothing.
pub(crate) const JACOBI_CONVERGED: i32 = 4;
/// [`JacobiCall`]'s state word after a last sweep that still rotated
/// columns that matter.
pub(crate) const JACOBI_UNFINISHED: i32 = JACOBI_ROTATED | JACOBI_SIGNIFICANT;

/// Solves `T · X = B` in place of `B` for each matrix of a batch: `t` is
/// `[batch, w, w]` (any strides, a batch stride of 0 for a shared one)
/// and `b` is `[batch, w, r]`, both f32 or f64, or f32 pairs
/// `[batch, w, w, 2]` and `[batch, w, r, 2]` for complex matrices. Only
/// the triangle `lower` names is read (its diagonal taken as ones with
/// `unit`), conjugated with `conj`. `t` may lie in `b`'s storage, apart
/// from the elements `b` views.
pub(crate) struct TriangularCall<'a> {
    pub t: TensorRef<'a>,
    pub b: TensorRef<'a>,
    pub complex: bool,
    pub lower: bool,
    pub unit: bool,
    pub conj: bool,
}

/// Runs a factorization step on the backend that holds its matrices.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn factor(call: &FactorCall) -> Result<()> {
    check_bounds(&call.a)?;
    check_bounds(&call.aux)?;
    let op = match call.factor {
        Factor::Lu => "lu_factor",
        Factor::Cholesky => "cholesky",
    };
    match &**call.a.storage {
        Storage::Cpu(s) => cpu::profiled(op, s, || cpu::factor(call)),
        Storage::Gpu(s) => gpu::factor(live(op, s)?, call),
    }
}

/// Runs a triangular solve on the backend that holds `b`.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn triangular(call: &TriangularCall) -> Result<()> {
    check_bounds(&call.t)?;
    check_bounds(&call.b)?;
    match &**call.b.storage {
        Storage::Cpu(s) => cpu::profiled("solve_triangular", s, || cpu::triangular(call)),
        Storage::Gpu(s) => gpu::triangular(live("solve_triangular", s)?, call),
    }
}

/// Runs a Householder QR step on the backend that holds its matrices.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn householder(call: &HouseholderCall) -> Result<()> {
    check_bounds(&call.a)?;
    check_bounds(&call.t)?;
    match &**call.a.storage {
        Storage::Cpu(s) => cpu::profiled("qr", s, || cpu::householder(call)),
        Storage::Gpu(s) => gpu::householder(live("qr", s)?, call),
    }
}

/// Runs a Jacobi orthogonalization on the backend that holds its matrices.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn jacobi(call: &JacobiCall) -> Result<()> {
    check_bounds(&call.a)?;
    check_bounds(&call.v)?;
    check_bounds(&call.aux)?;
    match &**call.a.storage {
        Storage::Cpu(s) => cpu::profiled("svd", s, || cpu::jacobi(call)),
        Storage::Gpu(s) => gpu::jacobi(live("svd", s)?, call),
    }
}

/// What a [`SpectralCall`] decomposes each matrix into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spectral {
    /// A Hermitian matrix's eigenvalues, rising, into `s`, and (with `u`)
    /// its eigenvectors, the columns of `u`.
    Eigh,
    /// The singular values, falling, into `s`, and (with `u` and `vh`)
    /// `U` (`[n, n]` full or `[n, k]`) and `Vᴴ` (`[m, m]` or `[k, m]`).
    Svd,
}

/// An eigendecomposition or singular value decomposition of each matrix of
/// `a` (`[batch, n, m]`, a pair view where `complex`) on the CPU: the
/// real `s` (`[batch, k]`), the optional factors, and the i32 `status`
/// (`[batch]`): 1 where a matrix holds NaN or infinity or the method did
/// not converge (its outputs NaN), else 0.
pub(crate) struct SpectralCall<'a> {
    pub kind: Spectral,
    pub a: TensorRef<'a>,
    pub s: TensorRef<'a>,
    pub u: Option<TensorRef<'a>>,
    pub vh: Option<TensorRef<'a>>,
    pub status: TensorRef<'a>,
    pub complex: bool,
}

/// Runs a [`SpectralCall`] on the CPU.
///
/// # Errors
/// `Error::Internal` on a GPU (the op layer decomposes there with the
/// Jacobi kernels).
pub(crate) fn spectral(call: &SpectralCall) -> Result<()> {
    for t in [
        Some(&call.a),
        Some(&call.s),
        call.u.as_ref(),
        call.vh.as_ref(),
        Some(&call.status),
    ]
    .into_iter()
    .flatten()
    {
        check_bounds(t)?;
    }
    let op = match call.kind {
        Spectral::Eigh => "eigh",
        Spectral::Svd => "svd",
    };
    match &**call.a.storage {
        Storage::Cpu(s) => cpu::profiled(op, s, || cpu::spectral(call)),
        Storage::Gpu(_) => Err(Error::internal(
            op,
            "a dense spectral decomposition reached a GPU",
        )),
    }
}
