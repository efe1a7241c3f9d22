//! CPU softmax: each line copied once (widened) from its input's strides
//! into a scratch run, its maximum (NaN if it holds one), `exp(x - max)`
//! and their sum taken there, and the results written through the
//! output's strides. f16 and bf16 compute in f32, f32 in f32, f64
//! in f64. A line holding +inf, or only -inf, gives NaN (`x - max` is NaN
//! somewhere), as PyTorch.

use super::storage::{CpuData, CpuStorage};
use crate::backend::{SoftmaxCall, Storage, lines};
use crate::error::{Error, Result};
use half::{bf16, f16};

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
pub(crate) fn softmax(out: &CpuStorage, call: &SoftmaxCall) -> Result<()> {
    let Storage::Cpu(input) = &**call.input.storage else {
        return Err(Error::internal(
            "cpu softmax",
            "input is not in host memory",
        ));
    };
    let data = input.read();
    let mut out_data = out.write();
    let (in_lines, in_step) = lines(&call.input);
    let (out_lines, out_step) = lines(&call.out);
    let line = Line {
        steps: (in_step, out_step),
        length: call.length(),
        log: call.log,
    };
    let starts = in_lines.positions().into_iter().zip(out_lines.positions());
    let (mut scratch32, mut scratch64) = (Vec::new(), Vec::new());
    match (&*data, &mut *out_data) {
        (CpuData::F32(src), CpuData::F32(dst)) => {
            starts.for_each(|s| line.run(s, src, dst, &mut scratch32, |x| x, |y| y));
        }
        (CpuData::F64(src), CpuData::F64(dst)) => {
            starts.for_each(|s| line.run(s, src, dst, &mut scratch64, |x| x, |y| y));
        }
        (CpuData::F16(src), CpuData::F16(dst)) => {
            let (widen, narrow) = (f16::to_f32, f16::from_f32);
            starts.for_each(|s| line.run(s, src, dst, &mut scratch32, widen, narrow));
        }
        (CpuData::BF16(src), CpuData::BF16(dst)) => {
            let (widen, narrow) = (bf16::to_f32, bf16::from_f32);
            starts.for_each(|s| line.run(s, src, dst, &mut scratch32, widen, narrow));
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

/// The sum of `f(v)` over `values` in eight interleaved partial sums
/// (independent adds pipeline and vectorise; a line's order of summation
/// is fixed).
fn sum_of<R: Real>(values: &[R], f: impl Fn(R) -> R) -> R {
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
}

impl Line {
    /// The line starting at `(a, b)` (input, output), computed in `R` in a
    /// contiguous scratch copy of the line (`scratch`, reused across lines),
    /// so that each exponential is taken once and the loops run over
    /// consecutive values.
    fn run<T: Copy, R: Real>(
        &self,
        (a, b): (usize, usize),
        src: &[T],
        dst: &mut [T],
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
            let log_sum = sum_of(scratch, R::exp).ln();
            for x in scratch.iter_mut() {
                *x = *x - log_sum;
            }
        } else {
            for x in scratch.iter_mut() {
                *x = x.exp();
            }
            let sum = sum_of(scratch, |e| e);
            for x in scratch.iter_mut() {
                *x = x.div(sum);
            }
        }
        if so == 1 {
            for (d, &x) in dst[b..b + self.length].iter_mut().zip(scratch.iter()) {
                *d = narrow(x);
            }
        } else {
            for (i, &x) in scratch.iter().enumerate() {
                dst[(b as isize + i as isize * so) as usize] = narrow(x);
            }
        }
    }
}
