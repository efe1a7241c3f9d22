//! CPU FFTs: the `rustfft` crate (mixed radix, Rader and Bluestein plans
//! for every length, SIMD on native targets) and, for real inputs and
//! outputs, `realfft` on top of it (half the work: a real line of `n` is a
//! complex one of `n / 2`). Plans (and their twiddles) are kept by a
//! planner per thread. Each line is gathered from its input's strides into
//! a contiguous run (f16 and bf16 widened; complex lines all into one run,
//! transformed in one call), transformed, scaled and written through the
//! output's strides.

use super::storage::{CpuData, CpuStorage};
use crate::backend::{FftCall, FftRead};
use crate::error::{Error, Result};
use num_complex::Complex32;
use realfft::RealFftPlanner;
use rustfft::{FftDirection, FftPlanner};
use std::cell::RefCell;

const OP: &str = "cpu fft";

thread_local! {
    static PLANNER: RefCell<FftPlanner<f32>> = RefCell::new(FftPlanner::new());
    static REAL_PLANNER: RefCell<RealFftPlanner<f32>> = RefCell::new(RealFftPlanner::new());
}

/// Runs `call`, whose output storage is `out` (fresh, so never the input's).
///
/// # Errors
/// `Error::Internal` when the storages are not the call's; `OutOfMemory`
/// when the lines do not fit in memory.
pub(crate) fn fft(out: &CpuStorage, call: &FftCall) -> Result<()> {
    if call.twist.is_some() {
        return Err(Error::internal(OP, "a four-step twiddle reached the CPU"));
    }
    let input = call.input.storage.host(OP)?;
    let (in_lines, in_step, avail) = call.input_lines();
    let (out_lines, out_step, count) = call.out_lines();
    let starts: Vec<(usize, usize)> = in_lines
        .positions()
        .into_iter()
        .zip(out_lines.positions())
        .collect();
    if call.n == 0 || starts.is_empty() {
        return Ok(());
    }
    let data = input.read();
    let mut out_data = out.write();
    let CpuData::F32(dst) = &mut *out_data else {
        return Err(Error::internal(OP, "output storage is not f32"));
    };
    let lines = Lines {
        call,
        starts: &starts,
        steps: (in_step, out_step),
        avail: avail.min(call.n),
        count,
    };
    match &*data {
        CpuData::F32(src) => lines.run(|p| src[p], dst),
        CpuData::F16(src) => lines.run(|p| src[p].to_f32(), dst),
        CpuData::BF16(src) => lines.run(|p| src[p].to_f32(), dst),
        _ => Err(Error::internal(OP, "input storage is not f32, f16 or bf16")),
    }
}

/// One call's lines: where each starts (input, output), the steps along
/// them, the input elements that exist (zeros past them) and the outputs
/// kept.
struct Lines<'a> {
    call: &'a FftCall<'a>,
    starts: &'a [(usize, usize)],
    steps: (isize, isize),
    avail: usize,
    count: usize,
}

impl Lines<'_> {
    fn run(&self, at: impl Fn(usize) -> f32, dst: &mut [f32]) -> Result<()> {
        match self.call.read {
            FftRead::Complex => self.complex(at, dst),
            FftRead::Real => self.real_input(at, dst),
            FftRead::Hermitian => self.real_output(at, dst),
        }
    }

    /// Storage position `j` elements into the line starting at `start`.
    fn pos(start: usize, step: isize, j: usize) -> usize {
        (start as isize + j as isize * step) as usize
    }

    /// Complex lines, all in one run and one call.
    fn complex(&self, at: impl Fn(usize) -> f32, dst: &mut [f32]) -> Result<()> {
        let n = self.call.n;
        let mut buffer = super::try_zeroed::<Complex32>(OP, self.starts.len() * n)?;
        for (line, &(a, _)) in buffer.chunks_exact_mut(n).zip(self.starts) {
            for (j, x) in line[..self.avail].iter_mut().enumerate() {
                let p = Self::pos(a, self.steps.0, j);
                *x = Complex32::new(at(p), at(p + 1));
            }
        }
        let direction = if self.call.inverse {
            FftDirection::Inverse
        } else {
            FftDirection::Forward
        };
        // A line of one point is itself (rustfft's multiplies it by 1 + 0i:
        // an infinite part gave a NaN beside it).
        if n > 1 {
            let plan = PLANNER.with(|p| p.borrow_mut().plan_fft(n, direction));
            plan.process(&mut buffer);
        }
        for (line, &(_, b)) in buffer.chunks_exact(n).zip(self.starts) {
            self.store_complex(b, dst, |k| line[k]);
        }
        Ok(())
    }

    /// Real lines: each by `realfft`, its other half by symmetry (forward
    /// or inverse).
    fn real_input(&self, at: impl Fn(usize) -> f32, dst: &mut [f32]) -> Result<()> {
        let n = self.call.n;
        let plan = REAL_PLANNER.with(|p| p.borrow_mut().plan_fft_forward(n));
        // Fallibly, as the tensors are: a line may be most of memory.
        let mut signal = super::try_zeroed::<f32>(OP, n)?;
        let mut half = super::try_zeroed::<Complex32>(OP, n / 2 + 1)?;
        let mut scratch = super::try_zeroed::<Complex32>(OP, plan.get_scratch_len())?;
        for &(a, b) in self.starts {
            signal.fill(0.0);
            for (j, x) in signal[..self.avail].iter_mut().enumerate() {
                *x = at(Self::pos(a, self.steps.0, j));
            }
            plan.process_with_scratch(&mut signal, &mut half, &mut scratch)
                .map_err(|e| Error::internal(OP, e.to_string()))?;
            // The inverse of a real line is the conjugate of its forward
            // transform (the scale is the call's).
            let (half, inverse) = (&half, self.call.inverse);
            self.store_complex(b, dst, |k| {
                let y = if k <= n / 2 {
                    half[k]
                } else {
                    half[n - k].conj()
                };
                if inverse { y.conj() } else { y }
            });
        }
        Ok(())
    }

    /// Hermitian half spectra to real lines by `realfft`; the imaginary
    /// parts of the first element and (for an even length) the middle one
    /// are dropped, as NumPy's `irfft` reads them (NaN where one is
    /// infinite or NaN).
    fn real_output(&self, at: impl Fn(usize) -> f32, dst: &mut [f32]) -> Result<()> {
        let n = self.call.n;
        let plan = REAL_PLANNER.with(|p| p.borrow_mut().plan_fft_inverse(n));
        let mut half = super::try_zeroed::<Complex32>(OP, n / 2 + 1)?;
        let mut signal = super::try_zeroed::<f32>(OP, n)?;
        let mut scratch = super::try_zeroed::<Complex32>(OP, plan.get_scratch_len())?;
        let kept = self.avail.min(half.len());
        for &(a, b) in self.starts {
            half.fill(Complex32::new(0.0, 0.0));
            for (k, x) in half[..kept].iter_mut().enumerate() {
                let p = Self::pos(a, self.steps.0, k);
                *x = Complex32::new(at(p), at(p + 1));
            }
            // Real, as NumPy reads them: NaN where the imaginary part is
            // infinite or NaN (its product with 0), else dropped.
            let ends = if n.is_multiple_of(2) { n / 2 } else { 0 };
            for k in [0, ends] {
                half[k] = Complex32::new(half[k].re + half[k].im * 0.0, 0.0);
            }
            plan.process_with_scratch(&mut half, &mut signal, &mut scratch)
                .map_err(|e| Error::internal(OP, e.to_string()))?;
            for (k, y) in signal[..self.count].iter().enumerate() {
                dst[Self::pos(b, self.steps.1, k)] = y * self.call.scale;
            }
        }
        Ok(())
    }

    /// Outputs `0..count` of the line starting at `b`, `y(k)` each, scaled.
    fn store_complex(&self, b: usize, dst: &mut [f32], y: impl Fn(usize) -> Complex32) {
        let scale = self.call.scale;
        for k in 0..self.count {
            let (p, v) = (Self::pos(b, self.steps.1, k), y(k));
            dst[p] = v.re * scale;
            dst[p + 1] = v.im * scale;
        }
    }
}
