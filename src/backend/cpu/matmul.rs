//! CPU matrix products. f32 and f64 go to the `gemm` crate, which reads
//! each operand through its own row and column strides (a transposed view
//! is not copied) and runs on every core on native targets; f16 and bf16 are widened
//! to f32 per batch so that it accumulates in f32 as on the GPU; i32 and
//! u32 use a wrapping i-k-j loop.

use super::numeric::Half;
use super::storage::{CpuData, CpuStorage, Reads};
use crate::backend::MatmulCall;
use crate::error::{Error, Result};

/// Runs `call`, whose output storage is `out`. The operands are locked
/// here, on the calling thread, in the order of their addresses (as every
/// kernel's): a rayon worker that blocked on a lock while gemm's join let
/// it run another op's job would hold that op's locks forever.
pub(crate) fn matmul(out: &CpuStorage, call: &MatmulCall) -> Result<()> {
    const OP: &str = "cpu matmul";
    let (reads, mut dst) = Reads::lock_writing(OP, out, &[Some(&call.a), Some(&call.b)])?;
    let (a, b) = (reads.of(OP, &call.a)?, reads.of(OP, &call.b)?);
    let out: &mut CpuData = &mut dst;
    super::threads::install(|| matmul_here(a, b, out, call))
}

/// [`matmul`] of the locked operands on this thread (gemm splits it over
/// the current pool).
fn matmul_here(
    a_data: &CpuData,
    b_data: &CpuData,
    out: &mut CpuData,
    call: &MatmulCall,
) -> Result<()> {
    let batches = Batches::new(call);
    macro_rules! typed {
        ($variant:ident, $f:ident) => {{
            let (CpuData::$variant(a), CpuData::$variant(b), CpuData::$variant(c)) =
                (a_data, b_data, &mut *out)
            else {
                return Err(Error::internal("cpu matmul", "dtypes differ"));
            };
            $f(a, b, c, &batches);
        }};
    }
    match (a_data, b_data) {
        (CpuData::F32(_), _) => typed!(F32, float_gemm),
        (CpuData::F64(_), _) => typed!(F64, float_gemm),
        (CpuData::F16(_), _) => typed!(F16, half_gemm),
        (CpuData::BF16(_), _) => typed!(BF16, half_gemm),
        (CpuData::I32(_), _) => typed!(I32, int_matmul),
        (CpuData::I64(_), _) => typed!(I64, int_matmul),
        (CpuData::U32(_), _) => typed!(U32, int_matmul),
        _ => {
            return Err(Error::dtype(
                "matmul",
                "not defined for u8 and bool (cast to i32 or f32 first)",
            ));
        }
    }
    Ok(())
}

/// The matrices of one call: sizes, strides and each batch's offsets.
struct Batches {
    m: usize,
    k: usize,
    n: usize,
    a: (isize, isize),
    b: (isize, isize),
    c: (isize, isize),
    /// (a, b, out) offset of each batch.
    offsets: Vec<(usize, usize, usize)>,
}

impl Batches {
    fn new(call: &MatmulCall) -> Batches {
        let (m, k, n) = call.dims();
        let a = MatmulCall::batch_layout(&call.a).positions();
        let b = MatmulCall::batch_layout(&call.b).positions();
        let c = MatmulCall::batch_layout(&call.out).positions();
        Batches {
            m,
            k,
            n,
            a: MatmulCall::matrix_strides(&call.a),
            b: MatmulCall::matrix_strides(&call.b),
            c: MatmulCall::matrix_strides(&call.out),
            offsets: a
                .into_iter()
                .zip(b)
                .zip(c)
                .map(|((a, b), c)| (a, b, c))
                .collect(),
        }
    }
}

/// An element type `gemm` multiplies.
trait GemmFloat: Copy + std::ops::Add<Output = Self> + 'static {
    const ZERO: Self;
    const ONE: Self;
}

impl GemmFloat for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl GemmFloat for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

/// How `gemm` runs: on the op's threads on native targets, where the
/// caller runs under `threads::install` (as [`matmul`] does).
/// One thread on a worker of the application's own rayon pool: gemm's
/// wait for its parts there would run that pool's jobs under the op's
/// locks (see `threads::install`).
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn parallelism() -> gemm::Parallelism {
    if super::threads::count() > 1 && super::threads::may_wait_on_rayon() {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    }
}

#[cfg(target_arch = "wasm32")]
pub(super) fn parallelism() -> gemm::Parallelism {
    gemm::Parallelism::None
}

fn float_gemm<T: GemmFloat>(a: &[T], b: &[T], c: &mut [T], mm: &Batches) {
    if mm.m == 0 || mm.n == 0 {
        return;
    }
    if mm.k == 0 {
        // Sums of nothing, into a fresh output whose values are unspecified.
        c.fill(T::ZERO);
        return;
    }
    for &(oa, ob, oc) in &mm.offsets {
        // gemm's matrix-vector products keep one running sum per output
        // over the whole inner axis: a [1, 2^20] x [2^20, 4] product of
        // positive values was 1.6e-4 off, its late terms rounded away
        // (NumPy's: 6e-6). Those go in runs, summed pairwise.
        if (mm.m <= 1 || mm.n <= 1) && mm.k > GEMV_RUN {
            gemv_in_runs(a, b, c, mm, (oa, ob, oc));
            continue;
        }
        // SAFETY: the op layer checked every operand's layout against its
        // storage (`check_bounds`), and `c` (a fresh tensor) aliases neither
        // input.
        unsafe {
            product(
                [mm.m, mm.n, mm.k],
                (c.as_mut_ptr().add(oc), mm.c),
                (a.as_ptr().add(oa), mm.a),
                (b.as_ptr().add(ob), mm.b),
                parallelism(),
            );
        }
    }
}

/// `dst = lhs · rhs` through gemm (`m x n`, inner axis `depth`; each
/// matrix given by its pointer and (row, column) strides).
///
/// # Safety
/// Every element each pointer reaches through its strides lies in its
/// allocation, and `dst` aliases neither input.
unsafe fn product<T: GemmFloat>(
    [m, n, depth]: [usize; 3],
    dst: (*mut T, (isize, isize)),
    lhs: (*const T, (isize, isize)),
    rhs: (*const T, (isize, isize)),
    par: gemm::Parallelism,
) {
    let ((d, (d0, d1)), (l, (l0, l1)), (r, (r0, r1))) = (dst, lhs, rhs);
    // SAFETY: as the caller promises.
    unsafe {
        gemm::gemm(
            m,
            n,
            depth,
            d,
            d1,
            d0,
            false,
            l,
            l1,
            l0,
            r,
            r1,
            r0,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            par,
        );
    }
}

/// The inner-axis run a matrix-vector product sums in order (gemm's own
/// blocked products take 512).
const GEMV_RUN: usize = 512;

/// One batch of a matrix-vector product (`m` or `n` at most 1) whose
/// inner axis is longer than [`GEMV_RUN`]: each run's product made apart
/// (row-major `m x n`) and the runs summed pairwise (a stack of partial
/// sums, one per level), then written to `c`.
fn gemv_in_runs<T: GemmFloat>(
    a: &[T],
    b: &[T],
    c: &mut [T],
    mm: &Batches,
    at: (usize, usize, usize),
) {
    let (oa, ob, oc) = at;
    let (m, n) = (mm.m, mm.n);
    let add =
        |x: Vec<T>, y: Vec<T>| -> Vec<T> { x.into_iter().zip(y).map(|(x, y)| x + y).collect() };
    let mut stack: Vec<(Vec<T>, u32)> = Vec::new();
    for start in (0..mm.k).step_by(GEMV_RUN) {
        let depth = GEMV_RUN.min(mm.k - start);
        let mut part = vec![T::ZERO; m * n];
        // SAFETY: as `float_gemm`'s; the run lies within the inner axis
        // and `part` is m x n.
        unsafe {
            product(
                [m, n, depth],
                (part.as_mut_ptr(), (n as isize, 1)),
                (a.as_ptr().add(oa).offset(start as isize * mm.a.1), mm.a),
                (b.as_ptr().add(ob).offset(start as isize * mm.b.0), mm.b),
                gemm::Parallelism::None,
            );
        }
        let mut level = 0;
        while stack.last().is_some_and(|(_, l)| *l == level) {
            let (older, _) = stack.pop().expect("a partial sum");
            part = add(older, part);
            level += 1;
        }
        stack.push((part, level));
    }
    let total = stack
        .into_iter()
        .rev()
        .map(|(p, _)| p)
        .reduce(|small, big| add(big, small))
        .expect("at least one run");
    for i in 0..m {
        for j in 0..n {
            let p = oc as isize + i as isize * mm.c.0 + j as isize * mm.c.1;
            c[p as usize] = total[i * n + j];
        }
    }
}

/// f16 and bf16 through f32: each batch's operands are widened into
/// row-major f32 matrices, multiplied with f32 accumulation (as on the GPU)
/// and rounded once into the output.
fn half_gemm<T: Half>(a: &[T], b: &[T], c: &mut [T], mm: &Batches) {
    let (m, k, n) = (mm.m, mm.k, mm.n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        // As `float_gemm`.
        c.fill(T::narrow(0.0));
        return;
    }
    let widen = |src: &[T], base: usize, s: (isize, isize), rows: usize, cols: usize| {
        let mut out = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            for j in 0..cols {
                let p = base as isize + i as isize * s.0 + j as isize * s.1;
                out.push(src[p as usize].widen());
            }
        }
        out
    };
    let mut product = vec![0.0f32; m * n];
    for &(oa, ob, oc) in &mm.offsets {
        let a32 = widen(a, oa, mm.a, m, k);
        let b32 = widen(b, ob, mm.b, k, n);
        let one = Batches {
            m,
            k,
            n,
            a: (k as isize, 1),
            b: (n as isize, 1),
            c: (n as isize, 1),
            offsets: vec![(0, 0, 0)],
        };
        float_gemm(&a32, &b32, &mut product, &one);
        for i in 0..m {
            for j in 0..n {
                let p = oc as isize + i as isize * mm.c.0 + j as isize * mm.c.1;
                c[p as usize] = T::narrow(product[i * n + j]);
            }
        }
    }
}

/// Wrapping integer arithmetic for the integer matmul.
trait WrappingInt: Copy + Default {
    fn mul_add(self, a: Self, b: Self) -> Self;
}

impl WrappingInt for i32 {
    fn mul_add(self, a: Self, b: Self) -> Self {
        self.wrapping_add(a.wrapping_mul(b))
    }
}

impl WrappingInt for i64 {
    fn mul_add(self, a: Self, b: Self) -> Self {
        self.wrapping_add(a.wrapping_mul(b))
    }
}

impl WrappingInt for u32 {
    fn mul_add(self, a: Self, b: Self) -> Self {
        self.wrapping_add(a.wrapping_mul(b))
    }
}

fn int_matmul<T: WrappingInt>(a: &[T], b: &[T], c: &mut [T], mm: &Batches) {
    let at = |base: usize, s: (isize, isize), i: usize, j: usize| {
        (base as isize + i as isize * s.0 + j as isize * s.1) as usize
    };
    let mut row = vec![T::default(); mm.n];
    for &(oa, ob, oc) in &mm.offsets {
        for i in 0..mm.m {
            row.fill(T::default());
            for p in 0..mm.k {
                let x = a[at(oa, mm.a, i, p)];
                for (j, acc) in row.iter_mut().enumerate() {
                    *acc = acc.mul_add(x, b[at(ob, mm.b, p, j)]);
                }
            }
            for (j, &v) in row.iter().enumerate() {
                c[at(oc, mm.c, i, j)] = v;
            }
        }
    }
}
