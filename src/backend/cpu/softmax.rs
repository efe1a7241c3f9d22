//! CPU softmax: each line walked three times through the strides of its
//! input and output: its maximum (NaN if it holds one), the sum of
//! `exp(x - max)`, then the results. f16 computes in f32, f32 in f32, f64
//! in f64. A line holding +inf, or only -inf, gives NaN (`x - max` is NaN
//! somewhere), as PyTorch.

use super::storage::{CpuData, CpuStorage};
use crate::backend::{SoftmaxCall, Storage, lines};
use crate::error::{Error, Result};
use half::f16;

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
    match (&*data, &mut *out_data) {
        (CpuData::F32(src), CpuData::F32(dst)) => {
            starts.for_each(|s| line.run(s, src, dst, |x| x, |y| y));
        }
        (CpuData::F64(src), CpuData::F64(dst)) => {
            starts.for_each(|s| line.run(s, src, dst, |x| x, |y| y));
        }
        (CpuData::F16(src), CpuData::F16(dst)) => {
            starts.for_each(|s| line.run(s, src, dst, f16::to_f32, f16::from_f32));
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

/// How every line of one call is laid out.
struct Line {
    steps: (isize, isize),
    length: usize,
    log: bool,
}

impl Line {
    /// The line starting at `(a, b)` (input, output), computed in `R`.
    fn run<T: Copy, R: Real>(
        &self,
        (a, b): (usize, usize),
        src: &[T],
        dst: &mut [T],
        widen: impl Fn(T) -> R,
        narrow: impl Fn(R) -> T,
    ) {
        let (si, so) = self.steps;
        let at = |i: usize| widen(src[(a as isize + i as isize * si) as usize]);
        let mut max = R::NEG_INFINITY;
        for i in 0..self.length {
            let x = at(i);
            if x.is_nan() || x > max {
                max = x;
            }
            if max.is_nan() {
                break;
            }
        }
        let mut sum = R::ZERO;
        for i in 0..self.length {
            sum = sum + (at(i) - max).exp();
        }
        let log_sum = sum.ln();
        for i in 0..self.length {
            let shifted = at(i) - max;
            let y = if self.log {
                shifted - log_sum
            } else {
                shifted.exp().div(sum)
            };
            dst[(b as isize + i as isize * so) as usize] = narrow(y);
        }
    }
}
