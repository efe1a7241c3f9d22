//! CPU one-sided Jacobi ([`JacobiCall`]): each matrix's columns (and its
//! `V`) are copied to column-major scratch, rotated there in the GPU
//! kernel's round-robin order until a sweep rotates none, on the op's
//! threads, and written back.

use super::field::Field;
use super::linalg::Matrices;
use super::storage::host_data;
use super::threads::for_each_piece_mut;
use crate::backend::JacobiCall;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use num_complex::Complex32;

/// Runs a Jacobi orthogonalization on the CPU.
pub(crate) fn jacobi(call: &JacobiCall) -> Result<()> {
    match (call.a.dtype, call.complex) {
        (KernelType::F32, false) => jacobi_in::<f32>(call),
        (KernelType::F64, false) => jacobi_in::<f64>(call),
        (KernelType::F32, true) => jacobi_in::<Complex32>(call),
        (dtype, _) => Err(Error::internal(
            "svd",
            format!("no CPU Jacobi of {dtype:?}"),
        )),
    }
}

/// One matrix's columns and `V`'s, column-major, and whether it converged.
struct Job<F> {
    a: Vec<F>,
    v: Vec<F>,
    converged: bool,
}

fn jacobi_in<F: Field>(call: &JacobiCall) -> Result<()> {
    const OP: &str = "svd";
    let (am, vm) = (
        Matrices::of(&call.a.layout, call.complex)?,
        Matrices::of(&call.v.layout, call.complex)?,
    );
    let [batch, n, m] = am.dims;
    let mut jobs: Vec<Job<F>> = {
        let a = host_data(OP, &call.a)?;
        let a = a
            .as_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        let v = host_data(OP, &call.v)?;
        let v = v
            .as_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        (0..batch)
            .map(|b| Job {
                a: am.gather(a, b, [0, 0], [n, m]),
                v: vm.gather(v, b, [0, 0], [m, m]),
                converged: false,
            })
            .collect()
    };
    let (tol, sweeps) = (f64::from(call.tol), call.sweeps);
    for_each_piece_mut(&mut jobs, 1, |(_, job)| {
        let job = &mut job[0];
        job.converged = orthogonalize(job, [n, m], tol, sweeps);
    });
    {
        let mut guard = call.a.storage.host(OP)?.write();
        let a = guard
            .as_mut_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        for (b, job) in jobs.iter().enumerate() {
            am.scatter(a, b, [0, 0], &job.a, n);
        }
    }
    {
        let mut guard = call.v.storage.host(OP)?.write();
        let v = guard
            .as_mut_slice::<F::Raw>()
            .ok_or_else(|| Error::internal(OP, "dtype"))?;
        for (b, job) in jobs.iter().enumerate() {
            vm.scatter(v, b, [0, 0], &job.v, m);
        }
    }
    let mut aux = call.aux.storage.host(OP)?.write();
    let aux = aux
        .as_mut_slice::<i32>()
        .ok_or_else(|| Error::internal(OP, "aux"))?;
    let (offset, stride) = (
        call.aux.layout.offset(),
        call.aux.layout.strides()[0] as usize,
    );
    for (b, job) in jobs.iter().enumerate() {
        aux[offset + b * stride] = if job.converged { 2 } else { 1 };
    }
    Ok(())
}

/// Sweeps of rotations until one rotates nothing (true) or `sweeps` ran.
fn orthogonalize<F: Field>(job: &mut Job<F>, [n, m]: [usize; 2], tol: f64, sweeps: usize) -> bool {
    if m < 2 {
        return true;
    }
    let even = m + m % 2;
    let rounds = even - 1;
    for _ in 0..sweeps {
        let mut rotated = false;
        for r in 0..rounds {
            for i in 0..even / 2 {
                let (p, q) = if i == 0 {
                    (0, 1 + r)
                } else {
                    (1 + (r + i) % rounds, 1 + (r + rounds - i) % rounds)
                };
                if p < m && q < m {
                    rotated |= rotate(&mut job.a, n, p, q, tol, &mut job.v, m);
                }
            }
        }
        if !rotated {
            return true;
        }
    }
    false
}

/// Rotates columns `p` and `q` of `a` (`n` rows) and of `v` (`m` rows)
/// to make them orthogonal, unless they nearly are.
fn rotate<F: Field>(
    a: &mut [F],
    n: usize,
    p: usize,
    q: usize,
    tol: f64,
    v: &mut [F],
    m: usize,
) -> bool {
    let part = |x: F| x.re().abs().max(x.im().abs());
    let largest = |c: usize| {
        a[c * n..(c + 1) * n]
            .iter()
            .fold(0.0, |m: f64, &x| m.max(part(x)))
    };
    // A column of parts below NEGLIGIBLE stays (see Field), NaN goes on.
    let (mx, my) = (largest(p), largest(q));
    if mx < F::NEGLIGIBLE || my < F::NEGLIGIBLE {
        return false;
    }
    // The columns scaled by powers of two near their largest parts where
    // an f64 column's squares would leave the normal range (a graded
    // matrix's 1e-170s); zeta and e depend on the scales but through d.
    let scaled = mx.min(my) < f64::MIN_POSITIVE.sqrt() / f64::EPSILON;
    let exponent = |m: f64| if scaled { m.log2().floor() as i32 } else { 0 };
    let (ex, ey) = (exponent(mx), exponent(my));
    let (sx, sy) = (F::from_re(2f64.powi(-ex)), F::from_re(2f64.powi(-ey)));
    let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, F::from_re(0.0));
    for i in 0..n {
        let (x, y) = (a[p * n + i] * sx, a[q * n + i] * sy);
        alpha += x.abs_sq();
        beta += y.abs_sq();
        gamma = gamma + x.conj() * y;
    }
    let g = gamma.abs_sq().sqrt();
    // Not NaN and not within the tolerance.
    if g.partial_cmp(&(tol * alpha.sqrt() * beta.sqrt())) != Some(std::cmp::Ordering::Greater) {
        return false;
    }
    let d = ey - ex;
    let zeta = (beta * 2f64.powi(d) - alpha * 2f64.powi(-d)) / (2.0 * g);
    let t = zeta.signum() / (zeta.abs() + zeta.hypot(1.0));
    let c = 1.0 / (1.0 + t * t).sqrt();
    let s = c * t;
    // A rotation the dtype cannot tell from none is none: the noise left
    // of one of two equal columns shrinks each sweep until its sine
    // rounds to 0 (until then |γ| can be subnormal, whose reciprocal
    // overflowed f32: an SVD of ones(7, 7) came out NaN; `unit` divides).
    if F::from_re(s).is_zero() {
        return false;
    }
    let e = gamma.unit();
    let (se, sce, c) = (e * F::from_re(s), e.conj() * F::from_re(s), F::from_re(c));
    for (cols, len) in [(&mut *a, n), (&mut *v, m)] {
        for i in 0..len {
            let (x, y) = (cols[p * len + i], cols[q * len + i]);
            cols[p * len + i] = c * x - sce * y;
            cols[q * len + i] = se * x + c * y;
        }
    }
    true
}
