//! The inner loop of the CPU's depthwise convolution: a run of outputs,
//! each the sum of its taps' products, summed in registers a vector of
//! outputs at a time and compiled once per instruction set the processor
//! may have (chosen at run time, as the product tiles are).
//!
//! Each sum starts at 0 and adds `input * tap` for the taps in order, a
//! product then a sum (never fused): the bits of the loop that added one
//! tap at a time to a row of sums in memory. The row's epilogue (the bias,
//! an activation, the rounding into the dtype) is one vectorised loop
//! too ([`finish_row`]).

use super::numeric::{Float, Num, Widen};
use super::sgemm::{Act, Isa};
use crate::op::UnaryOp;

/// Outputs summed together: four zmm registers (eight ymm, sixteen xmm),
/// four chains of adds in flight, where one register's chain left the
/// adder waiting on each sum (each output's taps add in order).
const LANES: usize = 64;

/// Outputs summed together past the last [`LANES`]: one zmm register.
const TAIL_LANES: usize = 16;

/// `sums[k] = 0 + planes[offsets[0] + k] taps[0] + planes[offsets[1] + k]
/// taps[1] + ...`, for every `k < sums.len()`.
///
/// # Panics
/// When a tap's run `offsets[t]..offsets[t] + sums.len()` leaves `planes`,
/// or the offsets and taps differ in number.
pub(super) fn sum_taps(
    isa: Isa,
    planes: &[f32],
    offsets: &[usize],
    taps: &[f32],
    sums: &mut [f32],
) {
    assert_eq!(offsets.len(), taps.len(), "one offset a tap");
    assert!(
        offsets.iter().all(|&o| o
            .checked_add(sums.len())
            .is_some_and(|end| end <= planes.len())),
        "every tap's run lies inside the planes"
    );
    match isa {
        // SAFETY: `Isa::Avx512` and `Isa::Avx2` come from `Isa::available`,
        // which lists the kernels whose features the processor has; the
        // runs are inside `planes` (asserted above).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { sum_taps_avx512(planes, offsets, taps, sums) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { sum_taps_avx2(planes, offsets, taps, sums) },
        // SAFETY: as above.
        Isa::Portable => unsafe { sum_taps_in(planes, offsets, taps, sums) },
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum_taps_avx512(planes: &[f32], offsets: &[usize], taps: &[f32], sums: &mut [f32]) {
    // SAFETY: the caller's (see `sum_taps_in`).
    unsafe { sum_taps_in(planes, offsets, taps, sums) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sum_taps_avx2(planes: &[f32], offsets: &[usize], taps: &[f32], sums: &mut [f32]) {
    // SAFETY: the caller's (see `sum_taps_in`).
    unsafe { sum_taps_in(planes, offsets, taps, sums) }
}

/// [`sum_taps`]'s loop, inlined into each instruction set's function so
/// that the compiler vectorises it for that set.
///
/// # Safety
/// `offsets[t] + sums.len() <= planes.len()` for every `t`.
#[inline(always)]
unsafe fn sum_taps_in(planes: &[f32], offsets: &[usize], taps: &[f32], sums: &mut [f32]) {
    let len = sums.len();
    let mut c = 0;
    // SAFETY: the caller's, for each block of outputs inside `sums`.
    unsafe {
        c = sum_blocks::<LANES>(planes, offsets, taps, sums, c);
        c = sum_blocks::<TAIL_LANES>(planes, offsets, taps, sums, c);
    }
    debug_assert!(c <= len);
    for (k, sum) in sums.iter_mut().enumerate().skip(c) {
        let mut acc = 0.0f32;
        for (&o, &tap) in offsets.iter().zip(taps) {
            acc += planes[o + k] * tap;
        }
        *sum = acc;
    }
}

/// How a row's sums are finished: its channel's f32 bias, the call's
/// activation and that activation's rows ([`finish_row`]).
pub(super) type Epilogue = (f32, Option<UnaryOp>, fn(&mut [f32]));

/// `out[k] = T(act(sums[k] + bias))` for each `k < out.len()`: a band
/// row's sums finished and stored, the activation `op` in the same loop
/// where it is one the loop vectorises (the f32 function's bits), else
/// `activate` (`op`'s rows) over the biased sums first.
///
/// # Panics
/// When there are fewer sums than outputs.
pub(super) fn finish_row<T: Widen>(
    isa: Isa,
    sums: &mut [f32],
    (bias, op, activate): Epilogue,
    out: &mut [T],
) {
    let sums = &mut sums[..out.len()];
    let finish = match (op, Act::of(op)) {
        (None, _) => Finish::Biased(bias, None),
        (Some(_), Some(act)) => Finish::Biased(bias, Some(act)),
        (Some(_), None) => {
            sums.iter_mut().for_each(|v| *v += bias);
            activate(sums);
            Finish::Stored
        }
    };
    match isa {
        // SAFETY: the kernels `Isa::available` lists are the processor's.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { finish_avx512(sums, finish, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { finish_avx2(sums, finish, out) },
        Isa::Portable => finish_in(sums, finish, out),
    }
}

/// What [`finish_row`]'s loop does to each sum before it rounds it.
#[derive(Clone, Copy)]
enum Finish {
    /// Nothing (the sums are finished).
    Stored,
    /// Adds the bias, then the activation.
    Biased(f32, Option<Act>),
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn finish_avx512<T: Widen>(sums: &[f32], finish: Finish, out: &mut [T]) {
    finish_in(sums, finish, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn finish_avx2<T: Widen>(sums: &[f32], finish: Finish, out: &mut [T]) {
    finish_in(sums, finish, out)
}

/// [`finish_row`]'s loops, one for each [`Finish`], inlined into each
/// instruction set's function so that the compiler vectorises them.
#[inline(always)]
fn finish_in<T: Widen>(sums: &[f32], finish: Finish, out: &mut [T]) {
    macro_rules! finish {
        ($f:expr) => {
            for (slot, &v) in out.iter_mut().zip(sums) {
                *slot = T::from_f32($f(v));
            }
        };
    }
    match finish {
        Finish::Stored => finish!(|v: f32| v),
        Finish::Biased(b, None) => finish!(|v: f32| v + b),
        Finish::Biased(b, Some(Act::Relu)) => finish!(|v: f32| <f32 as Num>::relu(v + b)),
        Finish::Biased(b, Some(Act::Hardsigmoid)) => {
            finish!(|v: f32| <f32 as Float>::hardsigmoid(v + b))
        }
        Finish::Biased(b, Some(Act::Hardswish)) => {
            finish!(|v: f32| <f32 as Float>::hardswish(v + b))
        }
    }
}

/// [`sum_taps_in`]'s sums `c..` in blocks of `N` while a whole block
/// fits; returns where the blocks end.
///
/// # Safety
/// As [`sum_taps_in`].
#[inline(always)]
unsafe fn sum_blocks<const N: usize>(
    planes: &[f32],
    offsets: &[usize],
    taps: &[f32],
    sums: &mut [f32],
    mut c: usize,
) -> usize {
    let from = planes.as_ptr();
    while c + N <= sums.len() {
        let mut acc = [0.0f32; N];
        for (&o, &tap) in offsets.iter().zip(taps) {
            // SAFETY: o + c + N <= o + sums.len() <= planes.len().
            let run = unsafe { &*from.add(o + c).cast::<[f32; N]>() };
            for (a, &v) in acc.iter_mut().zip(run) {
                *a += v * tap;
            }
        }
        sums[c..c + N].copy_from_slice(&acc);
        c += N;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_gives_the_sums_of_one_tap_at_a_time() {
        let planes: Vec<f32> = (0..300)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let (offsets, taps) = ([0usize, 3, 40, 41, 90], [0.5f32, -1.25, 3.0, 1e-3, -7.5]);
        for len in [0, 1, 15, 16, 17, 33, 63, 64, 65, 80, 85, 130, 210] {
            let mut want = vec![0.0f32; len];
            for (&o, &tap) in offsets.iter().zip(&taps) {
                for (k, sum) in want.iter_mut().enumerate() {
                    *sum += planes[o + k] * tap;
                }
            }
            for isa in Isa::available() {
                let mut got = vec![f32::NAN; len];
                sum_taps(isa, &planes, &offsets, &taps, &mut got);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(g, w)| g.to_bits() == w.to_bits());
                assert!(same, "{isa:?}, {len} sums");
            }
        }
    }

    #[test]
    fn every_kernel_finishes_a_row_as_the_scalar_functions_do() {
        use crate::backend::cpu::elementwise::activation_rows;
        let mut sums: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.7).collect();
        sums[3] = f32::NAN;
        sums[5] = -0.0;
        sums[8] = f32::INFINITY;
        let ops = [
            None,
            Some(UnaryOp::Relu),
            Some(UnaryOp::Hardsigmoid),
            Some(UnaryOp::Hardswish),
            Some(UnaryOp::Sigmoid),
        ];
        for op in ops {
            let activate = activation_rows(op).unwrap();
            for bias in [0.0, -0.0, 1.5] {
                // The unfused form: the bias added, the op's rows, stored.
                let mut want = sums.clone();
                want.iter_mut().for_each(|v| *v += bias);
                activate(&mut want);
                for isa in Isa::available() {
                    let mut out = vec![f32::NAN; 33];
                    finish_row(isa, &mut sums.clone(), (bias, op, activate), &mut out);
                    let same = out
                        .iter()
                        .zip(&want)
                        .all(|(g, w)| g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan());
                    assert!(same, "{isa:?} {op:?} bias {bias}: {out:?}, not {want:?}");
                    let mut halves = vec![half::f16::NAN; 33];
                    finish_row(isa, &mut sums.clone(), (bias, op, activate), &mut halves);
                    let same = halves.iter().zip(&want).all(|(g, w)| {
                        let w = half::f16::from_f32(*w);
                        g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan()
                    });
                    assert!(same, "{isa:?} {op:?} bias {bias} in f16");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "inside the planes")]
    fn a_run_past_the_planes_is_refused() {
        let mut sums = [0.0f32; 20];
        sum_taps(Isa::best(), &[0.0; 30], &[0, 11], &[1.0, 1.0], &mut sums);
    }
}
