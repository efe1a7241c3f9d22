//! CPU scans: each line walked in order through the strides of its input
//! and output, accumulating as the reductions do (f32 for f16, wrapping
//! integers).

use super::reduce::{Acc, Reducible};
use super::storage::{CpuData, CpuStorage};
use crate::backend::{ScanCall, Storage, lines};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::kinds::ScanOp;
use half::f16;

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
pub(crate) fn scan(out: &CpuStorage, call: &ScanCall) -> Result<()> {
    let Storage::Cpu(input) = &**call.input.storage else {
        return Err(Error::gpu("cpu scan", "input is not in host memory"));
    };
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
    macro_rules! typed {
        ($T:ty, $variant:ident) => {{
            let (CpuData::$variant(src), CpuData::$variant(dst)) = (&*data, &mut *out_data) else {
                return Err(Error::gpu(
                    "cpu scan",
                    "internal error: storage dtype differs from the call's",
                ));
            };
            match call.op {
                ScanOp::Sum => lines.run::<$T>(src, dst, <$T as Reducible>::Acc::ZERO, Acc::add),
                ScanOp::Prod => lines.run::<$T>(src, dst, <$T as Reducible>::Acc::ONE, Acc::mul),
            }
        }};
    }
    match call.input.dtype {
        DType::F32 | DType::C64 => typed!(f32, F32),
        DType::F16 => typed!(f16, F16),
        DType::F64 => typed!(f64, F64),
        DType::I32 => typed!(i32, I32),
        DType::U32 => typed!(u32, U32),
        DType::U8 => typed!(u8, U8),
        DType::Bool => typed!(bool, Bool),
    }
    Ok(())
}

/// Where the lines of a scan start (input, output) and how they step.
struct Lines {
    starts: Vec<(usize, usize)>,
    steps: (isize, isize),
    length: usize,
}

impl Lines {
    /// Writes the running combination (by `f`, from `init`) of each line.
    fn run<T: Reducible>(
        &self,
        src: &[T],
        dst: &mut [T],
        init: T::Acc,
        f: impl Fn(T::Acc, T::Acc) -> T::Acc,
    ) {
        let (si, so) = self.steps;
        for &(a, b) in &self.starts {
            let mut acc = init;
            for i in 0..self.length as isize {
                acc = f(acc, src[(a as isize + i * si) as usize].widen());
                dst[(b as isize + i * so) as usize] = T::narrow(acc);
            }
        }
    }
}
