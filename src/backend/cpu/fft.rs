//! CPU FFTs: the `rustfft` crate (mixed radix, Rader and Bluestein plans
//! for every length, SIMD on native targets), one plan per length and
//! direction kept by a planner per thread. The lines of a call are gathered
//! from their input's strides into one contiguous run (f16 widened, a real
//! input given zero imaginary parts, a Hermitian half spectrum mirrored),
//! transformed in one go, scaled and written through the output's strides.

use super::storage::{CpuData, CpuStorage};
use crate::backend::{FftCall, FftRead, Storage};
use crate::error::{Error, Result};
use num_complex::Complex32;
use rustfft::{FftDirection, FftPlanner};
use std::cell::RefCell;

thread_local! {
    /// Plans (and the twiddles they hold) are reused across calls.
    static PLANNER: RefCell<FftPlanner<f32>> = RefCell::new(FftPlanner::new());
}

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
///
/// # Errors
/// `Error::Internal` when the storages are not the call's; `OutOfMemory`
/// when the lines do not fit in memory.
pub(crate) fn fft(out: &CpuStorage, call: &FftCall) -> Result<()> {
    const OP: &str = "cpu fft";
    if call.twist.is_some() {
        return Err(Error::internal(OP, "a four-step twiddle reached the CPU"));
    }
    let Storage::Cpu(input) = &**call.input.storage else {
        return Err(Error::internal(OP, "input is not in host memory"));
    };
    let (in_lines, in_step, avail) = call.input_lines();
    let (out_lines, out_step, count) = call.out_lines();
    let n = call.n;
    let starts: Vec<(usize, usize)> = in_lines
        .positions()
        .into_iter()
        .zip(out_lines.positions())
        .collect();
    if n == 0 || starts.is_empty() {
        return Ok(());
    }
    let mut buffer = super::try_zeroed::<Complex32>(OP, starts.len() * n)?;
    {
        let data = input.read();
        let gather = Gather {
            read: call.read,
            step: in_step,
            avail: avail.min(n),
            n,
        };
        for (line, &(a, _)) in buffer.chunks_exact_mut(n).zip(&starts) {
            match &*data {
                CpuData::F32(src) => gather.line(line, a, |p| src[p]),
                CpuData::F16(src) => gather.line(line, a, |p| src[p].to_f32()),
                _ => return Err(Error::internal(OP, "input storage is not f32 or f16")),
            }
        }
    }
    let direction = if call.inverse {
        FftDirection::Inverse
    } else {
        FftDirection::Forward
    };
    let plan = PLANNER.with(|p| p.borrow_mut().plan_fft(n, direction));
    plan.process(&mut buffer);
    let mut out_data = out.write();
    let CpuData::F32(dst) = &mut *out_data else {
        return Err(Error::internal(OP, "output storage is not f32"));
    };
    let scale = call.scale;
    for (line, &(_, b)) in buffer.chunks_exact(n).zip(&starts) {
        for (k, y) in line[..count].iter().enumerate() {
            let p = (b as isize + k as isize * out_step) as usize;
            if call.complex_out() {
                dst[p] = y.re * scale;
                dst[p + 1] = y.im * scale;
            } else {
                dst[p] = y.re * scale;
            }
        }
    }
    Ok(())
}

/// How the elements of a line are read into its transform's run.
struct Gather {
    read: FftRead,
    step: isize,
    /// Elements of the line that exist (at most `n`); zeros past them.
    avail: usize,
    n: usize,
}

impl Gather {
    /// Fills `line` (`n` long, zeroed) from the line starting at storage
    /// position `start`, `at(p)` reading storage position `p`.
    fn line(&self, line: &mut [Complex32], start: usize, at: impl Fn(usize) -> f32) {
        let pos = |j: usize| (start as isize + j as isize * self.step) as usize;
        match self.read {
            FftRead::Real => {
                for (j, x) in line[..self.avail].iter_mut().enumerate() {
                    *x = Complex32::new(at(pos(j)), 0.0);
                }
            }
            FftRead::Complex => {
                for (j, x) in line[..self.avail].iter_mut().enumerate() {
                    let p = pos(j);
                    *x = Complex32::new(at(p), at(p + 1));
                }
            }
            FftRead::Hermitian => {
                let half = self.n / 2 + 1;
                for (k, x) in line.iter_mut().enumerate() {
                    let (j, mirrored) = if k < half {
                        (k, false)
                    } else {
                        (self.n - k, true)
                    };
                    if j < self.avail {
                        let p = pos(j);
                        let im = at(p + 1);
                        *x = Complex32::new(at(p), if mirrored { -im } else { im });
                    }
                }
            }
        }
    }
}
