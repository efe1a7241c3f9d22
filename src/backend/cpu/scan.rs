//! CPU scans: each line walked in order through the strides of its input
//! and output, accumulating as the reductions do (f32 for f16, wrapping
//! integers).

use super::reduce::{Acc, Reducible};
use super::storage::{CpuStorage, with_cpu_data};
use crate::backend::{ScanCall, lines};
use crate::error::{Error, Result};
use crate::op::ScanOp;

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
pub(crate) fn scan(out: &CpuStorage, call: &ScanCall) -> Result<()> {
    let input = call.input.storage.host("cpu scan")?;
    let data = input.read();
    let mut out_data = out.write();
    let (in_lines, in_step) = lines(&call.input);
    let (out_lines, out_step) = lines(&call.out);
    let lines = Lines {
        starts: in_lines
            .positions()
            .into_iter()
            .zip(out_lines.positions())
            .collect(),
        steps: (in_step, out_step),
        length: call.length(),
    };
    with_cpu_data!(&*data, src => {
        let dst = out_data.as_mut_slice().ok_or_else(|| {
            Error::internal("cpu scan", "storage dtype differs from the call's")
        })?;
        lines.run(call.op, src, dst);
    });
    Ok(())
}

/// Where the lines of a scan start (input, output) and how they step.
struct Lines {
    starts: Vec<(usize, usize)>,
    steps: (isize, isize),
    length: usize,
}

impl Lines {
    /// Writes the running sums or products of each line.
    fn run<T: Reducible>(&self, op: ScanOp, src: &[T], dst: &mut [T]) {
        // Each arm monomorphises the loop for its function.
        match op {
            ScanOp::Sum => self.run_with(src, dst, T::Acc::add),
            ScanOp::Prod => self.run_with(src, dst, T::Acc::mul),
        }
    }

    fn run_with<T: Reducible>(
        &self,
        src: &[T],
        dst: &mut [T],
        f: impl Fn(T::Acc, T::Acc) -> T::Acc,
    ) {
        let (si, so) = self.steps;
        for &(a, b) in &self.starts {
            // A line starts at its first element as it is (NumPy's: a
            // cumsum of -0.0 is -0.0, which 0.0 + -0.0 is not).
            let mut acc = None;
            for i in 0..self.length as isize {
                let x = src[(a as isize + i * si) as usize].widen();
                let now = acc.map_or(x, |acc| f(acc, x));
                dst[(b as isize + i * so) as usize] = T::narrow(now);
                acc = Some(now);
            }
        }
    }
}
