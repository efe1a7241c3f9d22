//! CPU one-sided Jacobi ([`JacobiCall`]): each matrix's columns (and its
//! `V`) are copied to column-major scratch, rotated there in the GPU
//! kernel's round-robin order until a sweep rotates none, on the op's
//! threads, and written back.

use super::field::Field;
use super::linalg::Matrices;
use super::storage::host_data;
use super::threads::for_each_piece_mut;
use crate::backend::{JACOBI_CONVERGED, JACOBI_ROTATED, JACOBI_SIGNIFICANT, JacobiCall};
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

/// One matrix's columns and `V`'s, column-major, and its state word
/// (see [`JacobiCall`]).
struct Job<F> {
    a: Vec<F>,
    v: Vec<F>,
    state: i32,
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
                state: 0,
            })
            .collect()
    };
    let limits = Limits {
        tol: f64::from(call.tol),
        negligible: f64::from(call.negligible),
        sweeps: call.sweeps,
    };
    for_each_piece_mut(&mut jobs, 1, |(_, job)| {
        let job = &mut job[0];
        job.state = orthogonalize(job, [n, m], &limits);
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
        aux[offset + b * stride] = job.state;
    }
    Ok(())
}

/// A Jacobi call's tolerance, negligible squared norm and sweeps.
struct Limits {
    tol: f64,
    negligible: f64,
    sweeps: usize,
}

/// Sweeps of rotations until one rotates nothing ([`JACOBI_CONVERGED`])
/// or `sweeps` ran (the last sweep's state: `JACOBI_UNFINISHED` where it
/// rotated columns that matter).
fn orthogonalize<F: Field>(job: &mut Job<F>, [n, m]: [usize; 2], limits: &Limits) -> i32 {
    if m < 2 {
        return JACOBI_CONVERGED;
    }
    let even = m + m % 2;
    let rounds = even - 1;
    let mut state = 0;
    for _ in 0..limits.sweeps {
        state = 0;
        for r in 0..rounds {
            for i in 0..even / 2 {
                let (p, q) = if i == 0 {
                    (0, 1 + r)
                } else {
                    (1 + (r + i) % rounds, 1 + (r + rounds - i) % rounds)
                };
                if p < m && q < m {
                    state |= rotate(&mut job.a, n, [p, q], limits, &mut job.v, m);
                }
            }
        }
        if state == 0 {
            return JACOBI_CONVERGED;
        }
    }
    state
}

/// Rotates columns `p` and `q` of `a` (`n` rows) and of `v` (`m` rows)
/// to make them orthogonal, unless they nearly are: the state bits it
/// sets (0 for none, [`JACOBI_ROTATED`], and [`JACOBI_SIGNIFICANT`] too
/// where both columns' squared norms pass the negligible one).
fn rotate<F: Field>(
    a: &mut [F],
    n: usize,
    [p, q]: [usize; 2],
    limits: &Limits,
    v: &mut [F],
    m: usize,
) -> i32 {
    let part = |x: F| x.re().abs().max(x.im().abs());
    let largest = |c: usize| {
        a[c * n..(c + 1) * n]
            .iter()
            .fold(0.0, |m: f64, &x| m.max(part(x)))
    };
    // A column of parts below NEGLIGIBLE stays (see Field), NaN goes on.
    let (mx, my) = (largest(p), largest(q));
    if mx < F::NEGLIGIBLE || my < F::NEGLIGIBLE {
        return 0;
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
    if g.partial_cmp(&(limits.tol * alpha.sqrt() * beta.sqrt()))
        != Some(std::cmp::Ordering::Greater)
    {
        return 0;
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
        return 0;
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
    // Both columns' squares, unscaled: a scaled pair's smaller column is
    // far below any negligible norm.
    let significant = !scaled && alpha.min(beta) > limits.negligible;
    if significant {
        JACOBI_ROTATED | JACOBI_SIGNIFICANT
    } else {
        JACOBI_ROTATED
    }
}
