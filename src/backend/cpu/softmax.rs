//! CPU softmax: each line copied once (widened) from its input's strides
//! into a scratch run, its maximum (NaN if it holds one), `exp(x - max)`
//! and their sum taken there, and the results written through the
//! output's strides. f16 and bf16 compute in f32, f32 in f32, f64
//! in f64. A line holding +inf, or only -inf, gives NaN (`x - max` is NaN
//! somewhere), as PyTorch. Groups of lines run on the op's threads on
//! native targets, each line alone, so results do not depend on them.

use super::storage::{CpuData, CpuStorage};
use super::strided::{PARALLEL_MIN, Shared};
use crate::backend::{SoftmaxCall, lines};
use crate::error::{Error, Result};
use half::{bf16, f16};

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
pub(crate) fn softmax(out: &CpuStorage, call: &SoftmaxCall) -> Result<()> {
    if call.total {
        // The op layer composes a logsumexp from reductions on the CPU.
        return Err(Error::internal("cpu softmax", "a line total on the CPU"));
    }
    let input = call.input.storage.host("cpu softmax")?;
    let data = input.read();
    let mut out_data = out.write();
    let (in_lines, in_step) = lines(&call.input);
    let (out_lines, out_step) = lines(&call.out);
    let line = Line {
        steps: (in_step, out_step),
        length: call.length(),
        log: call.log,
        negate: call.negate,
    };
    let starts: Vec<(usize, usize)> = in_lines
        .positions()
        .into_iter()
        .zip(out_lines.positions())
        .collect();
    match (&*data, &mut *out_data) {
        (CpuData::F32(src), CpuData::F32(dst)) => {
            line.all::<_, f32>(&starts, src, dst, |x| x, |y| y)
        }
        (CpuData::F64(src), CpuData::F64(dst)) => {
            line.all::<_, f64>(&starts, src, dst, |x| x, |y| y)
        }
        (CpuData::F16(src), CpuData::F16(dst)) => {
            line.all(&starts, src, dst, f16::to_f32, f16::from_f32)
        }
        (CpuData::BF16(src), CpuData::BF16(dst)) => {
            line.all(&starts, src, dst, bf16::to_f32, bf16::from_f32)
        }
        _ => {
            return Err(Error::internal(
                "cpu softmax",
                "storage dtypes differ from the call's",
            ));
        }
    }
    Ok(())
}

/// The arithmetic a softmax line needs of its compute type.
trait Real: Copy + PartialOrd + std::ops::Sub<Output = Self> + std::ops::Add<Output = Self> {
    const ZERO: Self;
    const NEG_INFINITY: Self;
    const NAN: Self;
    fn is_nan(self) -> bool;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn div(self, o: Self) -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const NAN: Self = <$t>::NAN;
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
        }
    };
}
real!(f32);
real!(f64);

/// The longest run [`sum_of`] adds in order (in eight lanes of 16, as
/// NumPy's pairwise summation's leaves; with lanes of 128 a softmax of
/// 1000 logits in U(-87, 0) was 3.2 ulps off, now 1.8).
const SUM_RUN: usize = 128;

/// The sum of `f(v)` over `values`: halves summed apart down to runs of
/// at most [`SUM_RUN`] elements, each in eight interleaved partial sums
/// (independent adds pipeline and vectorise; a line's order of summation
/// is fixed). Eight running sums over a whole line of 2^20 left softmax
/// 4e-4 off there (NumPy's pairwise sum: 6e-8).
fn sum_of<R: Real>(values: &[R], f: &impl Fn(R) -> R) -> R {
    if values.len() > SUM_RUN {
        let (left, right) = values.split_at(values.len() / 2);
        return sum_of(left, f) + sum_of(right, f);
    }
    let mut partial = [R::ZERO; 8];
    let chunks = values.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (p, &v) in partial.iter_mut().zip(chunk) {
            *p = *p + f(v);
        }
    }
    let mut sum = partial.iter().fold(R::ZERO, |s, &p| s + p);
    for &v in tail {
        sum = sum + f(v);
    }
    sum
}

/// How every line of one call is laid out.
struct Line {
    steps: (isize, isize),
    length: usize,
    log: bool,
    /// Of `-x` (a softmin).
    negate: bool,
}

impl Line {
    /// Every line (`starts`: input and output positions), in groups of
    /// lines of at least `PARALLEL_MIN` elements on the op's threads on
    /// native targets; each line computed alone, so the results do not
    /// depend on the grouping.
    fn all<T: Copy + Send + Sync, R: Real + Send>(
        &self,
        starts: &[(usize, usize)],
        src: &[T],
        dst: &mut [T],
        widen: impl Fn(T) -> R + Sync,
        narrow: impl Fn(R) -> T + Sync,
    ) {
        if self.length == 0 {
            return;
        }
        let (len, out) = (dst.len(), Shared(dst.as_mut_ptr()));
        let group = |lines: &[(usize, usize)]| {
            let mut scratch = Vec::new();
            for &s in lines {
                // SAFETY: the lines write disjoint elements of `dst` (the
                // output is fresh, its lines distinct), each inside it.
                unsafe { self.run(s, src, out.get(), len, &mut scratch, &widen, &narrow) };
            }
        };
        let per = PARALLEL_MIN.div_ceil(self.length).max(1);
        if starts.len() > per && self.length * starts.len() >= 2 * PARALLEL_MIN {
            return super::threads::for_each_group(starts, per, group);
        }
        group(starts);
    }

    /// The line starting at `(a, b)` (input, output), computed in `R` in a
    /// contiguous scratch copy of the line (`scratch`, reused across lines),
    /// so that each exponential is taken once and the loops run over
    /// consecutive values.
    ///
    /// # Safety
    /// `dst` points at `len` elements, and no other thread writes this
    /// line's.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<T: Copy, R: Real>(
        &self,
        (a, b): (usize, usize),
        src: &[T],
        dst: *mut T,
        len: usize,
        scratch: &mut Vec<R>,
        widen: impl Fn(T) -> R,
        narrow: impl Fn(R) -> T,
    ) {
        let (si, so) = self.steps;
        scratch.clear();
        scratch.resize(self.length, R::ZERO);
        if si == 1 {
            for (s, &x) in scratch.iter_mut().zip(&src[a..a + self.length]) {
                *s = widen(x);
            }
        } else {
            for (i, s) in scratch.iter_mut().enumerate() {
                *s = widen(src[(a as isize + i as isize * si) as usize]);
            }
        }
        if self.negate {
            // (A zero's sign does not reach a softmax.)
            for s in scratch.iter_mut() {
                *s = R::ZERO - *s;
            }
        }
        // NaN-blind maxima and a NaN flag vectorise; a NaN makes the line NaN.
        let (mut max, mut nan) = (R::NEG_INFINITY, false);
        for &x in scratch.iter() {
            max = if x > max { x } else { max };
            nan |= x.is_nan();
        }
        if nan {
            max = R::NAN;
        }
        for x in scratch.iter_mut() {
            *x = *x - max;
        }
        // log_softmax keeps x - max and subtracts the log of the sum of
        // the exponentials; softmax divides the exponentials by their sum.
        if self.log {
            let log_sum = sum_of(scratch, &R::exp).ln();
            for x in scratch.iter_mut() {
                *x = *x - log_sum;
            }
        } else {
            for x in scratch.iter_mut() {
                *x = x.exp();
            }
            let sum = sum_of(scratch, &|e| e);
            for x in scratch.iter_mut() {
                *x = x.div(sum);
            }
        }
        // Both ends inside `dst`, so every element between them is.
        let last = b as isize + (self.length as isize - 1) * so;
        assert!(
            b < len && (0..len as isize).contains(&last),
            "softmax line outside its output"
        );
        for (i, &x) in scratch.iter().enumerate() {
            // SAFETY: in bounds (above), and this line's own element.
            unsafe { dst.offset(b as isize + i as isize * so).write(narrow(x)) };
        }
    }
}
