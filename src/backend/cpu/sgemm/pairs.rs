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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator in [-4, 4).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 4.0
        }
    }

    /// `act` of `x` as the f32 functions define it (`numeric.rs`).
    fn activated(act: Option<Act>, x: f32) -> f32 {
        match act {
            None => x,
            Some(Act::Relu) => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            Some(Act::Hardsigmoid) => (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Some(Act::Hardswish) => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        }
    }

    /// Runs of `P`-pair tiles against each pixel's f32 sum written out
    /// (fused multiply-adds over the steps in order, plus the bias, the
    /// residual, then the activation): whole tiles and a last one reaching
    /// back, a pair without its second pixel, masked channels, a shift,
    /// a residual apart and one in the output itself (added once where
    /// the last tile reaches back); the floats between pixels left alone.
    fn case<const P: usize, const V: usize>(rng: &mut Rng) {
        const LDC: usize = 29;
        let a: Vec<f32> = (0..6000).map(|_| rng.next()).collect();
        for (depth, pairs, pitch) in [(1usize, P, 2usize), (13, P + 1, 6), (40, 2 * P + 3, 20)] {
            let width = 16 * V;
            let b: Vec<f32> = (0..depth * width).map(|_| rng.next() / 4.0).collect();
            let steps = Steps::new((0..depth).map(|p| (p * 14) % 62).collect());
            let bias: [f32; CHANNELS] = std::array::from_fn(|_| rng.next());
            let columns = 8 * V - 1;
            let apart = pairs * LDC + 3;
            let len = apart + pairs * LDC;
            let residual: Vec<f32> = (0..len).map(|_| rng.next()).collect();
            let mut run = PairRun::new(&a, (5, pitch, pairs), &steps);
            run.shift = 4;
            for act in [
                None,
                Some(Act::Relu),
                Some(Act::Hardsigmoid),
                Some(Act::Hardswish),
            ] {
                for kind in 0..3 {
                    let mut got = if kind == 2 {
                        residual.clone()
                    } else {
                        vec![f32::NAN; len]
                    };
                    let to = PairOut {
                        dst: got.as_mut_ptr(),
                        ldc: LDC,
                        apart,
                        seconds: pairs - 1,
                        columns,
                    };
                    let r = match kind {
                        0 => None,
                        1 => Some(residual.as_ptr()),
                        _ => Some(to.dst.cast_const()),
                    };
                    // SAFETY: every pixel's `columns` floats lie in `got`,
                    // and the residual's at the same offsets.
                    let stored = unsafe {
                        pair_run_store::<P, V>(Isa::best(), &run, &b, to, (&bias, act, r))
                    };
                    if !stored {
                        assert!(!Isa::best().stores_pair_runs());
                        return;
                    }
                    let mut want = if kind == 2 {
                        residual.clone()
                    } else {
                        vec![f32::NAN; len]
                    };
                    for pair in 0..pairs {
                        for lane in 0..2 - usize::from(pair >= pairs - 1) {
                            let at = pair * LDC + lane * apart;
                            for j in 0..columns {
                                let mut sum = 0.0f32;
                                for (p, &s) in steps.offsets().iter().enumerate() {
                                    let v = a[5 + pair * pitch + 4 + s + lane];
                                    sum = v.mul_add(b[p * width + 2 * j + lane], sum);
                                }
                                let mut value = sum + bias[j];
                                if kind > 0 {
                                    value += residual[at + j];
                                }
                                want[at + j] = activated(act, value);
                            }
                        }
                    }
                    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "{P} pairs x {V}, depth {depth}, {pairs} pairs, {act:?}, \
                             residual {kind}: float {k}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn paired_runs_are_each_pixels_sums_bit_for_bit() {
        let mut rng = Rng(0x9a1f);
        case::<8, 3>(&mut rng);
        case::<16, 1>(&mut rng);
    }

    #[test]
    #[should_panic(expected = "sgemm pair run")]
    fn paired_runs_reading_past_their_input_are_refused() {
        let (a, b) = (vec![0.0; 64], vec![0.0; 2 * 48]);
        let steps = Steps::new(vec![0, 10]);
        // The last pair's patch at 7 x 8 = 56, its last step's second
        // float at 67.
        let run = PairRun::new(&a, (0, 8, 8), &steps);
        let mut out = vec![0.0; 1024];
        let to = PairOut {
            dst: out.as_mut_ptr(),
            ldc: 24,
            apart: 512,
            seconds: 8,
            columns: 24,
        };
        // SAFETY: every pixel lies in `out`.
        unsafe {
            pair_run_store::<8, 3>(Isa::best(), &run, &b, to, (&[0.0; CHANNELS], None, None))
        };
    }

    #[test]
    #[should_panic(expected = "sgemm pair run")]
    fn paired_runs_shorter_than_a_tile_are_refused() {
        let (a, b) = (vec![0.0; 64], vec![0.0; 48]);
        let steps = Steps::new(vec![0]);
        let run = PairRun::new(&a, (0, 2, 7), &steps);
        let mut out = vec![0.0; 1024];
        let to = PairOut {
            dst: out.as_mut_ptr(),
            ldc: 24,
            apart: 512,
            seconds: 7,
            columns: 24,
        };
        // SAFETY: every pixel lies in `out`.
        unsafe {
            pair_run_store::<8, 3>(Isa::best(), &run, &b, to, (&[0.0; CHANNELS], None, None))
        };
    }
}
