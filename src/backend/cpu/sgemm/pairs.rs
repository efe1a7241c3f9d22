//! Paired pixel runs: a channels-last convolution's tiles for a panel of
//! 8 or 24 output channels, where narrow or wide tiles (16 or 32 lanes a
//! pixel) would leave half or a quarter of their lanes empty.
//!
//! A pair is two output pixels of one row, `x` and `x + half`; the caller's
//! copy of the input holds each of its patch's values as two floats side by
//! side (pixel `x`'s, then pixel `x + half`'s), so that one 64-bit
//! broadcast puts pixel `x`'s value in the even lanes of a vector and its
//! partner's in the odd ones. A panel row of `16 V` floats holds each
//! channel's weight twice (`[2 j]` and `[2 j + 1]` are channel `j`'s), and
//! a pair's `V` vectors hold its two pixels' `8 V` channels interleaved: 24
//! channels take 3 vectors a pair where two pixels of wide tiles take 4.
//! Each lane is the same f32 sum as a wide tile's (the same fused
//! multiply-adds over the steps in the same order), so a paired output is
//! bit for bit the unpaired one.

use super::pixels::{CHANNELS, Steps};
use super::{Act, Isa};

/// A run of pairs along an output row: pair `r`'s two values at step `p`
/// lie at `a[base + r pitch + shift + steps[p]..][..2]`.
pub(crate) struct PairRun<'a> {
    a: &'a [f32],
    base: usize,
    pitch: usize,
    pairs: usize,
    /// Added to every base: twice the group's first channel.
    pub(crate) shift: usize,
    steps: &'a Steps,
}

impl<'a> PairRun<'a> {
    /// `pairs` pairs from `base` of `a`, `pitch` apart, no shift.
    pub(crate) fn new(
        a: &'a [f32],
        (base, pitch, pairs): (usize, usize, usize),
        steps: &'a Steps,
    ) -> Self {
        PairRun {
            a,
            base,
            pitch,
            pairs,
            shift: 0,
            steps,
        }
    }

    /// Panics unless the run holds a tile of `P` pairs at least, every read
    /// (two floats) lies inside `a` (the offsets, too, fit a `usize`) and
    /// `b` holds a panel row of `width` floats for each step (a caller's
    /// bug otherwise).
    fn check<const P: usize>(&self, b: &[f32], width: usize) {
        let last = (self.pairs.max(1) - 1)
            .checked_mul(self.pitch)
            .and_then(|r| {
                r.checked_add(self.base)?
                    .checked_add(self.shift)?
                    .checked_add(self.steps.reach())?
                    .checked_add(1)
            });
        assert!(
            self.pairs >= P
                && (self.steps.len() == 0 || last.is_some_and(|l| l < self.a.len()))
                && b.len() >= self.steps.len() * width,
            "sgemm pair run: {} pairs for tiles of {P}, A reads reaching {last:?} of {}, \
             a B panel of {} floats for {} steps of {width}",
            self.pairs,
            self.a.len(),
            b.len(),
            self.steps.len()
        );
    }

    /// The first pair's patch, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn first(&self) -> *const f32 {
        self.a.as_ptr().wrapping_add(self.base + self.shift)
    }

    /// The pairs' pitch, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn pitch(&self) -> usize {
        self.pitch
    }

    /// The run's pairs.
    pub(crate) fn pairs(&self) -> usize {
        self.pairs
    }

    /// The steps, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn steps(&self) -> &[usize] {
        self.steps.offsets()
    }
}

/// Where a paired run's pixels go: pair `r`'s first pixel into `dst + r
/// ldc`, its second `apart` floats after that (for the first `seconds`
/// pairs: the others have none), their first `columns` channels.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct PairOut {
    pub(crate) dst: *mut f32,
    pub(crate) ldc: usize,
    pub(crate) apart: usize,
    pub(crate) seconds: usize,
    pub(crate) columns: usize,
}

impl Isa {
    /// Whether [`pair_run_store`] runs here.
    pub(crate) fn stores_pair_runs(self) -> bool {
        self.stores_pixel_runs()
    }
}

/// The sums of `run` through the paired panel `b` (`16 V` floats a step),
/// each pixel's plus `bias`, plus (with a `residual`, at the output's
/// offsets from `residual`) the residual, then `act`, stored at `to`: tiles
/// of `P` pairs, the last reaching back to end at the run's last pair (and
/// storing only the pairs it adds, so that a residual in the output itself
/// is added once). True where a kernel does it (AVX-512), false (nothing
/// done) elsewhere.
///
/// # Safety
/// Every pixel `to` names is the caller's to write, and no one else's
/// meanwhile; the residual's values at the same offsets are floats to
/// read (they may be the output's own: each is read before its sum is
/// stored over it).
///
/// # Panics
/// As [`PairRun::check`]; where `V` is not 1 or 3, `columns` over `8 V`, or
/// `seconds` over the run's pairs.
pub(crate) unsafe fn pair_run_store<const P: usize, const V: usize>(
    isa: Isa,
    run: &PairRun<'_>,
    b: &[f32],
    to: PairOut,
    (bias, act, residual): (&[f32; CHANNELS], Option<Act>, Option<*const f32>),
) -> bool {
    assert!(
        (V == 1 || V == 3) && to.columns <= 8 * V && to.seconds <= run.pairs(),
        "sgemm pair run: {} channels in {V} vectors, {} second pixels of {} pairs",
        to.columns,
        to.seconds,
        run.pairs()
    );
    run.check::<P>(b, 16 * V);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: the reads checked; the writes and the residual's
            // reads the caller's (this function's contract).
            unsafe {
                if V == 1 {
                    pair_act::<P, V, 1>(run, b.as_ptr(), to, (bias, act, residual));
                } else {
                    pair_act::<P, V, 2>(run, b.as_ptr(), to, (bias, act, residual));
                }
            }
            true
        }
        _ => {
            let _ = (run, b, to, bias, act, residual);
            false
        }
    }
}

/// [`pair_run_store`]'s kernel for `act`, with or without a residual; `W`
/// vectors of 16 channels a pixel.
///
/// # Safety
/// As `x86::pair_run_avx512`.
#[cfg(target_arch = "x86_64")]
unsafe fn pair_act<const P: usize, const V: usize, const W: usize>(
    run: &PairRun<'_>,
    b: *const f32,
    to: PairOut,
    (bias, act, residual): (&[f32; CHANNELS], Option<Act>, Option<*const f32>),
) {
    use super::x86::pair_run_avx512 as with;
    let res = residual.unwrap_or(to.dst.cast_const());
    // SAFETY: the caller's.
    unsafe {
        match (act, residual.is_some()) {
            (None, false) => with::<P, V, W, 0, false>(run, b, to, (bias, res)),
            (None, true) => with::<P, V, W, 0, true>(run, b, to, (bias, res)),
            (Some(Act::Relu), false) => with::<P, V, W, 1, false>(run, b, to, (bias, res)),
            (Some(Act::Relu), true) => with::<P, V, W, 1, true>(run, b, to, (bias, res)),
            (Some(Act::Hardsigmoid), false) => with::<P, V, W, 2, false>(run, b, to, (bias, res)),
            (Some(Act::Hardsigmoid), true) => with::<P, V, W, 2, true>(run, b, to, (bias, res)),
            (Some(Act::Hardswish), false) => with::<P, V, W, 3, false>(run, b, to, (bias, res)),
            (Some(Act::Hardswish), true) => with::<P, V, W, 3, true>(run, b, to, (bias, res)),
        }
    }
}
