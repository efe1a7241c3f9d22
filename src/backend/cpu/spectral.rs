//! The CPU's eigendecompositions of Hermitian matrices and singular value
//! decompositions of matrices past the Jacobi kernels' sizes
//! ([`SpectralCall`]): faer's (a blocked Householder reduction to
//! tridiagonal or bidiagonal form, then divide and conquer, as LAPACK's
//! `syevd` and `gesdd`), a matrix at a time, each on the op's threads.

use super::field::Field;
use super::linalg::Matrices;
use super::storage::host_data;
use super::threads::for_each_piece_mut;
use crate::backend::{Spectral, SpectralCall, TensorRef};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::{evd, svd};
use faer::{Mat, Par};
use num_complex::{Complex32, Complex64};

/// Runs a [`SpectralCall`] on the CPU.
pub(crate) fn spectral(call: &SpectralCall) -> Result<()> {
    match (call.a.dtype, call.complex) {
        (KernelType::F32, false) => spectral_in::<f32, f32>(call),
        (KernelType::F64, false) => spectral_in::<f64, f64>(call),
        // In complex f64, rounded once (as ops/linalg/dense.rs widens real
        // f32 matrices to f64): faer's complex f32 reductions left U·S·Vh
        // of an ill-conditioned 90 x 30 matrix 1,500 ulps of |A| off and
        // its pseudo-inverse wrong in most digits (LAPACK's cgesdd: 5).
        (KernelType::F32, true) => spectral_in::<Complex32, Complex64>(call),
        (dtype, _) => Err(Error::internal(
            "linalg",
            format!("no CPU eigendecomposition or SVD of {dtype:?}"),
        )),
    }
}

/// One matrix's answer: `s`, and `U` and `Vᴴ` column-major where asked
/// for; `None` where the matrix holds NaN or infinity or faer did not
/// converge.
struct Answer<F> {
    s: Vec<f64>,
    u: Vec<F>,
    vh: Vec<F>,
}

/// How faer splits one matrix's work: over the op's threads on native
/// targets (the caller runs under `threads::install`), one on a worker of
/// the application's rayon pool (see `threads::may_wait_on_rayon`).
fn parallelism() -> Par {
    #[cfg(not(target_arch = "wasm32"))]
    if super::threads::count() > 1 && super::threads::may_wait_on_rayon() {
        return Par::rayon(0);
    }
    Par::Seq
}

/// [`spectral`] of matrices of `F`, computed in `W` (`F` or wider) and
/// rounded to `F` once.
fn spectral_in<F: Field, W: Field + faer::traits::ComplexField>(call: &SpectralCall) -> Result<()> {
    const OP: &str = "eigh";
    let am = Matrices::of(&call.a.layout, call.complex)?;
    let [batch, n, m] = am.dims;
    let dims = |t: &Option<TensorRef>| t.as_ref().map(|t| Matrices::of(&t.layout, call.complex));
    let (um, vm) = (dims(&call.u).transpose()?, dims(&call.vh).transpose()?);
    let ucols = um.as_ref().map_or(0, |u| u.dims[2]);
    let vrows = vm.as_ref().map_or(0, |v| v.dims[1]);
    let mats: Vec<Mat<W>> = {
        let a = host_data(OP, &call.a)?;
        let a = a
            .as_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        let wide = |x: F| W::from_parts(x.re(), x.im());
        (0..batch)
            .map(|b| Mat::<W>::from_fn(n, m, |i, j| wide(F::get(a, am.at(b, i, j)))))
            .collect()
    };
    let (kind, vectors) = (call.kind, um.is_some());
    let solve = |mat: &Mat<W>, par: Par| {
        let finite = (0..m).all(|j| {
            (0..n).all(|i| {
                let x = mat[(i, j)];
                x.re().is_finite() && x.im().is_finite()
            })
        });
        if !finite {
            return None;
        }
        match kind {
            Spectral::Eigh => eigh(mat, vectors, par),
            Spectral::Svd => singular(mat, ucols, vrows, par),
        }
    };
    // Fewer matrices than threads: each splits its own work over the op's
    // threads, in turn; more: they split over the threads a matrix at a
    // time.
    let mut answers: Vec<Option<Answer<W>>> = (0..batch).map(|_| None).collect();
    if batch < super::threads::count().max(2) {
        for (mat, answer) in mats.iter().zip(&mut answers) {
            *answer = super::threads::install(|| solve(mat, parallelism()));
        }
    } else {
        for_each_piece_mut(&mut answers, 1, |(b, slot)| {
            slot[0] = solve(&mats[b], Par::Seq)
        });
    }
    let k = n.min(m);
    let nan = F::from_re(f64::NAN);
    write(OP, &call.status, |status: &mut [i32], at| {
        for (b, answer) in answers.iter().enumerate() {
            status[at(b, 0)] = i32::from(answer.is_none());
        }
    })?;
    let real = |t: &TensorRef| -> Result<()> {
        match t.dtype {
            KernelType::F64 => write(OP, t, |s: &mut [f64], at| {
                for (b, answer) in answers.iter().enumerate() {
                    for i in 0..k {
                        s[at(b, i)] = answer.as_ref().map_or(f64::NAN, |a| a.s[i]);
                    }
                }
            }),
            _ => write(OP, t, |s: &mut [f32], at| {
                for (b, answer) in answers.iter().enumerate() {
                    for i in 0..k {
                        s[at(b, i)] = answer.as_ref().map_or(f32::NAN, |a| a.s[i] as f32);
                    }
                }
            }),
        }
    };
    real(&call.s)?;
    for (t, mats, pick) in [(&call.u, &um, 0usize), (&call.vh, &vm, 1)] {
        let (Some(t), Some(mats)) = (t, mats) else {
            continue;
        };
        let [_, rows, cols] = mats.dims;
        let mut guard = t.storage.host(OP)?.write();
        let raw = guard
            .as_mut_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        for (b, answer) in answers.iter().enumerate() {
            match answer {
                Some(a) => {
                    let block = if pick == 0 { &a.u } else { &a.vh };
                    let block: Vec<F> = block
                        .iter()
                        .map(|w| F::from_parts(w.re(), w.im()))
                        .collect();
                    mats.scatter(raw, b, [0, 0], &block, rows);
                }
                None => mats.scatter(raw, b, [0, 0], &vec![nan; rows * cols], rows),
            }
        }
    }
    Ok(())
}

/// Writes into `t` (a `[batch]` or `[batch, k]` view of raw `T`) with
/// `fill(raw, at)`, `at(b, i)` the raw position of element `(b, i)`.
fn write<T: crate::dtype::Element>(
    op: &'static str,
    t: &TensorRef,
    fill: impl FnOnce(&mut [T], &dyn Fn(usize, usize) -> usize),
) -> Result<()> {
    let mut guard = t.storage.host(op)?.write();
    let raw = guard
        .as_mut_slice::<T>()
        .ok_or_else(|| Error::internal(op, "dtype"))?;
    let (offset, strides) = (t.layout.offset() as isize, t.layout.strides().to_vec());
    let at = move |b: usize, i: usize| {
        let s0 = strides.first().copied().unwrap_or(0);
        let s1 = strides.get(1).copied().unwrap_or(0);
        (offset + b as isize * s0 + i as isize * s1) as usize
    };
    fill(raw, &at);
    Ok(())
}

/// The eigenvalues (rising) and, with `vectors`, eigenvectors of the
/// Hermitian `a` (its lower triangle read).
fn eigh<F: Field + faer::traits::ComplexField>(
    a: &Mat<F>,
    vectors: bool,
    par: Par,
) -> Option<Answer<F>> {
    let n = a.nrows();
    let compute = if vectors {
        evd::ComputeEigenvectors::Yes
    } else {
        evd::ComputeEigenvectors::No
    };
    let mut s = faer::diag::Diag::<F>::zeros(n);
    let mut u = Mat::<F>::zeros(if vectors { n } else { 0 }, if vectors { n } else { 0 });
    let mut mem = MemBuffer::new(evd::self_adjoint_evd_scratch::<F>(
        n,
        compute,
        par,
        Default::default(),
    ));
    evd::self_adjoint_evd(
        a.as_ref(),
        s.as_mut(),
        vectors.then(|| u.as_mut()),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .ok()?;
    let s: Vec<f64> = (0..n).map(|i| s[i].re()).collect();
    Some(Answer {
        s,
        u: column_major(&u),
        vh: Vec::new(),
    })
}

/// The singular values (falling) of `a`, and `U`'s first `ucols` columns
/// and `Vᴴ`'s first `vrows` rows where those are not 0.
fn singular<F: Field + faer::traits::ComplexField>(
    a: &Mat<F>,
    ucols: usize,
    vrows: usize,
    par: Par,
) -> Option<Answer<F>> {
    let (n, m) = (a.nrows(), a.ncols());
    let k = n.min(m);
    let mode = |cols: usize, all: usize| match cols {
        0 => svd::ComputeSvdVectors::No,
        c if c == all && all > k => svd::ComputeSvdVectors::Full,
        _ => svd::ComputeSvdVectors::Thin,
    };
    let (mu, mv) = (mode(ucols, n), mode(vrows, m));
    let shape = |mode, rows: usize, all: usize| match mode {
        svd::ComputeSvdVectors::No => (0, 0),
        svd::ComputeSvdVectors::Thin => (rows, k),
        svd::ComputeSvdVectors::Full => (rows, all),
    };
    let (ur, uc) = shape(mu, n, n);
    let (vr, vc) = shape(mv, m, m);
    let mut s = faer::diag::Diag::<F>::zeros(k);
    let mut u = Mat::<F>::zeros(ur, uc);
    let mut v = Mat::<F>::zeros(vr, vc);
    let mut mem = MemBuffer::new(svd::svd_scratch::<F>(n, m, mu, mv, par, Default::default()));
    svd::svd(
        a.as_ref(),
        s.as_mut(),
        (ucols > 0).then(|| u.as_mut()),
        (vrows > 0).then(|| v.as_mut()),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .ok()?;
    // Vᴴ, column-major: element (i, j) is conj(V[j, i]).
    let vh: Vec<F> = (0..m)
        .flat_map(|j| (0..vrows).map(move |i| (i, j)))
        .map(|(i, j)| v[(j, i)].conj())
        .collect();
    Some(Answer {
        s: (0..k).map(|i| s[i].re()).collect(),
        u: column_major(&u),
        vh: if vrows > 0 { vh } else { Vec::new() },
    })
}

/// `m`'s elements, column-major.
fn column_major<F: Copy>(m: &Mat<F>) -> Vec<F> {
    (0..m.ncols())
        .flat_map(|j| (0..m.nrows()).map(move |i| m[(i, j)]))
        .collect()
}
