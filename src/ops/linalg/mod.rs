//! Linear algebra (`numpy.linalg`, `torch.linalg`), batched over leading
//! axes, on any view, in f32 and c64 on every device and f64 on the CPU.
//!
//! An f32 (c64) matrix is factored in f32, as PyTorch and LAPACK's
//! `sgetrf` factor it; NumPy computes f32 input in f64 and rounds the
//! answer. So an ill-conditioned f32 matrix's answers here carry f32's
//! error times the condition number (the 8 x 8 Hilbert matrix's inverse,
//! condition 1.5e10, is wrong in every digit, NumPy's is right to 3e-8):
//! take such matrices to f64 on the CPU. The products inside (blocked
//! updates, `eigh`'s Rayleigh quotients) are `matmul`'s: on a device
//! made with `MatmulPrecision::Fast` they take its f16 operands, so
//! factor on a device of the default precision.
//!
//! Factorizations are blocked as LAPACK's are: a step factors a panel of
//! 64 columns (an LU panel, a Cholesky diagonal block, a Householder QR
//! panel with its triangular factor) in one kernel, a workgroup a matrix
//! on a GPU; a triangular solve of the block updates the rows beside it;
//! the trailing matrix is updated by products (`matmul`'s kernels) and an
//! in-place subtraction through a view. A matrix of at most one block is
//! one kernel; a batch of them is one dispatch.
//!
//! Singular values and Hermitian eigenvalues come from one-sided Jacobi
//! (`svd.rs`, `eigh.rs`): sweeps of rotations of column pairs, a
//! workgroup a matrix, until the columns are orthogonal; on the CPU,
//! matrices of 8 rows and columns or more take Householder reductions
//! and divide and conquer instead (`dense.rs`, faer's in f64 for f32
//! matrices, as LAPACK's `syevd` and `gesdd`). Norms, ranks,
//! pseudo-inverses and least squares build on them.
//!
//! On a GPU, matrices (or a batch) one storage binding does not hold are
//! `Error::TooLarge` naming the function (these kernels do not split a
//! matrix: a browser's default binding of 128 MiB holds an f32 matrix of
//! about 5,790 x 5,790); the CPU takes any size.
//!
//! Functions whose answer does not exist for some matrices (`solve` and
//! `inv` of a singular matrix, `cholesky` of one that is not positive
//! definite) return `Error::LinAlg` naming the matrix's index in the
//! batch, as NumPy raises `LinAlgError`. Finding out reads the factors'
//! status back: the `_async` forms do it on every target (the only form
//! in a browser), and the `_ex` forms (PyTorch's) skip it, returning the
//! status as a tensor instead, so that a GPU never waits.

mod checks;
mod dense;
mod det;
mod eigh;
mod factor;
mod lstsq;
mod norms;
mod qr;
mod solve;
mod svd;

pub use det::{det, slogdet};
#[cfg(not(target_arch = "wasm32"))]
pub use eigh::{eigh, eigvalsh};
pub use eigh::{eigh_async, eigvalsh_async};
#[cfg(not(target_arch = "wasm32"))]
pub use factor::cholesky;
pub use factor::{cholesky_async, cholesky_ex, lu, lu_factor, lu_factor_ex};
pub use lstsq::{Lstsq, lstsq};
pub use norms::{MatrixNorm, cond, matrix_norm, matrix_rank, pinv};
pub use qr::{QrMode, qr};
#[cfg(not(target_arch = "wasm32"))]
pub use solve::{inv, solve};
pub use solve::{inv_async, inv_ex, solve_async, solve_ex, solve_triangular};
#[cfg(not(target_arch = "wasm32"))]
pub use svd::{svd, svdvals};
pub use svd::{svd_async, svd_ex, svdvals_async};

use crate::backend::LINALG_BLOCK;

/// Which triangle of a matrix an op reads or makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Triangle {
    /// On and below the diagonal.
    Lower,
    /// On and above the diagonal.
    Upper,
}
