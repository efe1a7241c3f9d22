//! The x86-64 tile kernels: the sums of a tile stay in registers over all
//! `k` steps; each step loads a row of `B` as vectors (row `p` at `b +
//! rows[p]`) and multiply-adds each `A` value broadcast against them.

use super::pairs::{PairOut, PairRun};
use super::pixels::{CHANNELS, PixelRows, PixelRun, PixelSums};
use super::{Act, MAX_TILE};
use std::arch::x86_64::*;

/// Asks for the cache line holding `p` (a hint: it never faults, wherever
/// `p` points). `_mm_prefetch` is a safe call on current toolchains and an
/// unsafe one on the crate's oldest (`rust-version`), hence the block and
/// its allowance.
#[inline(always)]
fn prefetch(p: *const f32) {
    #[allow(unused_unsafe)]
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
}

/// The 8 x 32 tile's sums on AVX-512F: 16 zmm sums, two `B` vectors a
/// step.
///
/// # Safety
/// As [`tile_avx512`].
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn sums_avx512(a: *const f32, b: *const f32, rows: &[usize]) -> [[__m512; 2]; 8] {
    let mut acc = [[_mm512_setzero_ps(); 2]; 8];
    for (p, &row) in rows.iter().enumerate() {
        // SAFETY: step p reads a[8 p..8 p + 8] and b[row..row + 32].
        unsafe {
            let (ap, bp) = (a.add(p * 8), b.add(row));
            let b0 = _mm512_loadu_ps(bp);
            let b1 = _mm512_loadu_ps(bp.add(16));
            for (i, sums) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.add(i));
                sums[0] = _mm512_fmadd_ps(av, b0, sums[0]);
                sums[1] = _mm512_fmadd_ps(av, b1, sums[1]);
            }
        }
    }
    acc
}

/// The 8 x 32 tile on AVX-512F, into `out`.
///
/// # Safety
/// The processor has AVX-512F; `a` holds `8 k` floats for the `k =
/// rows.len()` steps, and `b + rows[p]` 32 for each `p`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tile_avx512(
    a: *const f32,
    b: *const f32,
    rows: &[usize],
    out: &mut [f32; MAX_TILE],
) {
    // SAFETY: the caller's.
    let acc = unsafe { sums_avx512(a, b, rows) };
    for (i, sums) in acc.iter().enumerate() {
        // SAFETY: row i of the tile is out[32 i..32 i + 32], inside 8 x 32.
        unsafe {
            let row = out.as_mut_ptr().add(i * 32);
            _mm512_storeu_ps(row, sums[0]);
            _mm512_storeu_ps(row.add(16), sums[1]);
        }
    }
}

/// The 8 x 32 tile on AVX-512F stored from its registers: row `i <
/// bias.len()` plus `bias[i]`, then `act`, into `dst + i ldc`, its first
/// `columns` sums (masked stores).
///
/// # Safety
/// As [`tile_avx512`]; `bias.len() <= 8`, `columns <= 32`, and `dst + i
/// ldc .. + columns` is the caller's to write for every `i <
/// bias.len()`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tile_store_avx512(
    a: *const f32,
    b: *const f32,
    rows: &[usize],
    (dst, ldc, columns): (*mut f32, usize, usize),
    (bias, act): (&[f32], Option<Act>),
) {
    // SAFETY: the caller's.
    let acc = unsafe { sums_avx512(a, b, rows) };
    let mask = |n: usize| -> __mmask16 { ((1u32 << n.min(16)) - 1) as __mmask16 };
    let (low, high) = (mask(columns), mask(columns.saturating_sub(16)));
    for (sums, (i, &add)) in acc.iter().zip(bias.iter().enumerate()) {
        let add = _mm512_set1_ps(add);
        let finish = |v: __m512| activate_avx512(_mm512_add_ps(v, add), act);
        // SAFETY: the masks store the row's first `columns` floats, the
        // caller's to write.
        unsafe {
            let row = dst.add(i * ldc);
            _mm512_mask_storeu_ps(row, low, finish(sums[0]));
            _mm512_mask_storeu_ps(row.wrapping_add(16), high, finish(sums[1]));
        }
    }
}

/// `act` of each lane of `v`, bit for bit the f32 function's
/// (`numeric.rs`): comparisons that keep a NaN, IEEE products and
/// quotients.
#[target_feature(enable = "avx512f")]
#[inline]
fn activate_avx512(v: __m512, act: Option<Act>) -> __m512 {
    let (zero, three, six) = (
        _mm512_setzero_ps(),
        _mm512_set1_ps(3.0),
        _mm512_set1_ps(6.0),
    );
    // `f32::clamp(0, 6)`: below 0 is 0, then above 6 is 6, NaN kept.
    let clamp = |t: __m512| {
        let t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(t, zero), zero);
        _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(t, six), six)
    };
    match act {
        None => v,
        // `if x < 0 { 0 } else { x }`
        Some(Act::Relu) => _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, zero), zero),
        // `(x + 3).clamp(0, 6) / 6`
        Some(Act::Hardsigmoid) => _mm512_div_ps(clamp(_mm512_add_ps(v, three)), six),
        // `x * (x + 3).clamp(0, 6) / 6`, the product rounded first
        Some(Act::Hardswish) => {
            _mm512_div_ps(_mm512_mul_ps(v, clamp(_mm512_add_ps(v, three))), six)
        }
    }
}

/// The 6 x 16 tile on AVX2 with FMA: 12 ymm sums, two `B` vectors a step.
///
/// # Safety
/// The processor has AVX2 and FMA; `a` holds `6 k` floats for the `k =
/// rows.len()` steps, and `b + rows[p]` 16 for each `p`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn tile_avx2(
    a: *const f32,
    b: *const f32,
    rows: &[usize],
    out: &mut [f32; MAX_TILE],
) {
    const MR: usize = 6;
    let mut acc = [[_mm256_setzero_ps(); 2]; MR];
    for (p, &row) in rows.iter().enumerate() {
        // SAFETY: step p reads a[6 p..6 p + 6] and b[row..row + 16].
        unsafe {
            let (ap, bp) = (a.add(p * MR), b.add(row));
            let b0 = _mm256_loadu_ps(bp);
            let b1 = _mm256_loadu_ps(bp.add(8));
            for (i, sums) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_ps(*ap.add(i));
                sums[0] = _mm256_fmadd_ps(av, b0, sums[0]);
                sums[1] = _mm256_fmadd_ps(av, b1, sums[1]);
            }
        }
    }
    for (i, sums) in acc.iter().enumerate() {
        // SAFETY: row i of the tile is out[16 i..16 i + 16], inside 8 x 32.
        unsafe {
            let row = out.as_mut_ptr().add(i * 16);
            _mm256_storeu_ps(row, sums[0]);
            _mm256_storeu_ps(row.add(8), sums[1]);
        }
    }
}

/// A pixel tile's sums on AVX-512F: `P` pixels by `V` zmm registers of
/// channels, `V` `B` vectors a step, row `i`'s `A` value at step `p`
/// broadcast from `from[i] + steps[p]`.
///
/// # Safety
/// The processor has AVX-512F; every `from[i] + steps[p]` is a float to
/// read, and `b` holds `CHANNELS` floats for each step.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn pixel_sums_avx512<const P: usize, const V: usize>(
    from: &[*const f32; P],
    steps: &[usize],
    b: *const f32,
) -> [[__m512; V]; P] {
    let mut acc = [[_mm512_setzero_ps(); V]; P];
    for (p, &s) in steps.iter().enumerate() {
        // SAFETY: step p reads b[32 p..32 p + 16 V] and from[i] + s (the
        // caller's).
        unsafe {
            let bp = b.add(p * CHANNELS);
            let bv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(bp.add(16 * v)));
            for (sums, row) in acc.iter_mut().zip(from) {
                let av = _mm512_set1_ps(*row.add(s));
                for (sum, &bv) in sums.iter_mut().zip(&bv) {
                    *sum = _mm512_fmadd_ps(av, bv, *sum);
                }
            }
        }
    }
    acc
}

/// Where each row of `rows`' tile reads: `a + shift + bases[i]`.
#[inline(always)]
fn pixel_rows<const P: usize>(rows: &PixelRows<'_, P>) -> [*const f32; P] {
    let a = rows.a().as_ptr().wrapping_add(rows.shift);
    std::array::from_fn(|i| a.wrapping_add(rows.bases()[i]))
}

/// A pixel tile on AVX-512F, into `out`.
///
/// # Safety
/// As [`pixel_sums_avx512`].
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pixel_tile_avx512<const P: usize, const V: usize>(
    rows: &PixelRows<'_, P>,
    b: *const f32,
    out: &mut PixelSums<P>,
) {
    // SAFETY: the caller's (`check` bounds every read).
    let acc = unsafe { pixel_sums_avx512::<P, V>(&pixel_rows(rows), rows.steps(), b) };
    for (sums, row) in acc.iter().zip(out.iter_mut()) {
        for (v, &sum) in sums.iter().enumerate() {
            // SAFETY: a row of the tile holds 32 >= 16 V floats.
            unsafe { _mm512_storeu_ps(row.as_mut_ptr().add(16 * v), sum) };
        }
    }
}

/// A pixel tile on AVX-512F stored from its registers: column `j` plus
/// `bias[j]`, then `act`; row `i < pixels` into `dst + i ldc`, its first
/// `columns` sums (masked stores).
///
/// # Safety
/// As [`pixel_sums_avx512`]; `pixels <= P`, `columns <= 16 V`, and
/// `dst + i ldc .. + columns` is the caller's to write for every `i <
/// pixels`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pixel_store_avx512<const P: usize, const V: usize>(
    rows: &PixelRows<'_, P>,
    b: *const f32,
    (dst, ldc, pixels, columns): (*mut f32, usize, usize, usize),
    (bias, act): (&[f32; CHANNELS], Option<Act>),
) {
    // SAFETY: the caller's (`check` bounds every read).
    let acc = unsafe { pixel_sums_avx512::<P, V>(&pixel_rows(rows), rows.steps(), b) };
    let mask = |n: usize| -> __mmask16 { ((1u32 << n.min(16)) - 1) as __mmask16 };
    let masks: [__mmask16; V] = std::array::from_fn(|v| mask(columns.saturating_sub(16 * v)));
    // SAFETY: the bias holds 32 >= 16 V floats.
    let adds: [__m512; V] =
        std::array::from_fn(|v| unsafe { _mm512_loadu_ps(bias.as_ptr().add(16 * v)) });
    for (i, sums) in acc.iter().enumerate().take(pixels) {
        for v in 0..V {
            // SAFETY: the masks store the row's first `columns` floats,
            // the caller's to write.
            unsafe {
                let value = activate_avx512(_mm512_add_ps(sums[v], adds[v]), act);
                _mm512_mask_storeu_ps(dst.wrapping_add(i * ldc + 16 * v), masks[v], value);
            }
        }
    }
}

/// A run of pixel tiles on AVX-512F stored from their registers: tile `t`
/// sums rows `t P..t P + P` of `run` and stores row `r` plus `bias`, plus
/// (`RES`) the residual `res + r ldc + j`, then `ACT` ([`act_of`]), into
/// `dst + r ldc`, its first `columns` sums (`res` may be `dst`: each value
/// is loaded before its sum is stored over it).
///
/// # Safety
/// The processor has AVX-512F; `run` passed `PixelRun::check` for `b`;
/// `columns <= 16 V`; `dst + r ldc .. + columns` is the caller's to write
/// for every row `r` of the run, and (`RES`) `res + r ldc .. + columns`
/// floats to read.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pixel_run_avx512<
    const P: usize,
    const V: usize,
    const ACT: u8,
    const RES: bool,
>(
    run: &PixelRun<'_>,
    b: *const f32,
    (dst, ldc, columns): (*mut f32, usize, usize),
    (bias, res): (&[f32; CHANNELS], *const f32),
) {
    let act = act_of(ACT);
    let mask = |n: usize| -> __mmask16 { ((1u32 << n.min(16)) - 1) as __mmask16 };
    let masks: [__mmask16; V] = std::array::from_fn(|v| mask(columns.saturating_sub(16 * v)));
    // SAFETY: the bias holds 32 >= 16 V floats.
    let adds: [__m512; V] =
        std::array::from_fn(|v| unsafe { _mm512_loadu_ps(bias.as_ptr().add(16 * v)) });
    let (first, pitch) = (run.first(), run.pitch());
    // A residual in the output's own memory (`Tensor::add_conv2d`) is two
    // streams of requests, as none is: the patches are asked for, and the
    // output's lines are the residual's (the network benchmark, one
    // thread: 27.75 -> 27.05 ms).
    let apart = RES && res != dst.cast_const();
    for t in 0..run.pixels() / P {
        // The output's lines (and the residual's) of the tile AHEAD_PIXELS
        // on, asked for before this tile's sums: their accesses, `ldc`
        // apart, come too late for the hardware's prefetchers, and stores
        // into lines not in the cache (a fresh output) waited on each
        // line's read (a 1x1 convolution 16 -> 32 channels at 320x320 into
        // a cold output: 0.84 -> 0.50 ms; 24 -> 96 at 160x160 with a
        // residual: 1.14 -> 0.55 ms). A prefetch never faults: past the
        // run it only fetches a line.
        let ahead = (t + AHEAD_PIXELS.div_ceil(P)) * P * ldc;
        let (out, residual) = (dst.wrapping_add(ahead), res.wrapping_add(ahead));
        // And the patches of the pixels AHEAD_PIXELS on: a 1x1
        // convolution reading a cold input waited on them too (32 -> 24
        // channels at 160x160: 0.37 -> 0.22 ms); not beside a residual,
        // whose third stream of requests then ran it slower (16 -> 16 at
        // 320x320, all out of the cache: 0.57 -> 0.80 ms).
        if !apart {
            let patches = first.wrapping_add((t * P + AHEAD_PIXELS) * pitch);
            for line in (0..P * pitch).step_by(16) {
                prefetch(patches.wrapping_add(line));
            }
        }
        for i in 0..P {
            for v in 0..V {
                let at = i * ldc + 16 * v;
                prefetch(out.wrapping_add(at));
                if apart {
                    prefetch(residual.wrapping_add(at));
                }
            }
        }
        let lead = first.wrapping_add(t * P * pitch);
        let from: [*const f32; P] = std::array::from_fn(|i| lead.wrapping_add(i * pitch));
        // SAFETY: the run's reads lie inside its input (checked).
        let acc = unsafe { pixel_sums_avx512::<P, V>(&from, run.steps(), b) };
        let (out, from) = (dst.wrapping_add(t * P * ldc), res.wrapping_add(t * P * ldc));
        for (i, sums) in acc.iter().enumerate() {
            for v in 0..V {
                let at = i * ldc + 16 * v;
                // SAFETY: the masks store row t P + i's first `columns`
                // floats, the caller's to write, and read as many of the
                // residual's, the caller's to read.
                unsafe {
                    let mut value = _mm512_add_ps(sums[v], adds[v]);
                    if RES {
                        let r = _mm512_maskz_loadu_ps(masks[v], from.wrapping_add(at));
                        value = _mm512_add_ps(value, r);
                    }
                    let value = activate_avx512(value, act);
                    _mm512_mask_storeu_ps(out.wrapping_add(at), masks[v], value);
                }
            }
        }
    }
}

/// How far ahead of its stores [`pixel_run_avx512`] asks for the output's
/// (and the residual's) lines, and ahead of its sums for the input
/// patches: 64 pixels (8 tiles of 8, 4 of 16).
const AHEAD_PIXELS: usize = 64;

/// The activation a kernel's `ACT` parameter names: 0 none, 1 relu, 2
/// hardsigmoid, 3 hardswish (`pixel_run_store`'s dispatch).
#[inline(always)]
const fn act_of(code: u8) -> Option<Act> {
    match code {
        1 => Some(Act::Relu),
        2 => Some(Act::Hardsigmoid),
        3 => Some(Act::Hardswish),
        _ => None,
    }
}

/// A paired tile's sums on AVX-512F: `P` pairs by `V` zmm registers, `V`
/// `B` vectors a step (`16 V` floats), pair `i`'s two values at step `p`
/// broadcast as one 64-bit value from `from[i] + steps[p]`.
///
/// # Safety
/// The processor has AVX-512F; every `from[i] + steps[p]` is two floats
/// to read, and `b` holds `16 V` floats for each step.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn pair_sums_avx512<const P: usize, const V: usize>(
    from: &[*const f32; P],
    steps: &[usize],
    b: *const f32,
) -> [[__m512; V]; P] {
    let mut acc = [[_mm512_setzero_ps(); V]; P];
    for (p, &s) in steps.iter().enumerate() {
        // SAFETY: step p reads b[16 V p..][..16 V] and from[i] + s, two
        // floats (the caller's).
        unsafe {
            let bp = b.add(p * 16 * V);
            let bv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(bp.add(16 * v)));
            for (sums, row) in acc.iter_mut().zip(from) {
                let two = row.add(s).cast::<f64>().read_unaligned();
                let av = _mm512_castpd_ps(_mm512_set1_pd(two));
                for (sum, &bv) in sums.iter_mut().zip(&bv) {
                    *sum = _mm512_fmadd_ps(av, bv, *sum);
                }
            }
        }
    }
    acc
}

/// A run of paired tiles on AVX-512F stored from their registers
/// (`pairs::pair_run_store`): each pair's interleaved sums split into its
/// two pixels' `W` vectors of channels (`W` = `V / 2` rounded up), each
/// plus `bias`, plus (`RES`) the residual at the pixel's offset from `res`,
/// then `ACT`, stored masked to `to.columns`.
///
/// # Safety
/// The processor has AVX-512F; `run` passed `PairRun::check` for `b` and
/// tiles of `P`; `to.columns <= 8 V`; every pixel `to` names is the
/// caller's to write, and (`RES`) `res` at its offsets floats to read.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pair_run_avx512<
    const P: usize,
    const V: usize,
    const W: usize,
    const ACT: u8,
    const RES: bool,
>(
    run: &PairRun<'_>,
    b: *const f32,
    to: PairOut,
    (bias, res): (&[f32; CHANNELS], *const f32),
) {
    let act = act_of(ACT);
    let mask = |n: usize| -> __mmask16 { ((1u32 << n.min(16)) - 1) as __mmask16 };
    let masks: [__mmask16; W] = std::array::from_fn(|w| mask(to.columns.saturating_sub(16 * w)));
    // SAFETY: the bias holds 32 >= 16 W floats.
    let adds: [__m512; W] =
        std::array::from_fn(|w| unsafe { _mm512_loadu_ps(bias.as_ptr().add(16 * w)) });
    // The even lanes of two vectors, then the odd ones: a pair's first
    // pixel's channels, then its second's.
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    let (first, pitch, pairs) = (run.first(), run.pitch(), run.pairs());
    let ldc = to.ldc;
    let mut done = 0;
    while done < pairs {
        // The last tile reaches back to end at the last pair.
        let start = done.min(pairs - P);
        // The output's lines of the pairs AHEAD_PIXELS / 2 on, both
        // pixels' (as `pixel_run_avx512` asks for its tiles').
        let ahead = (start + P + AHEAD_PIXELS / 2) * ldc;
        for i in 0..P {
            for w in 0..W {
                for at in [
                    ahead + i * ldc + 16 * w,
                    ahead + i * ldc + 16 * w + to.apart,
                ] {
                    prefetch(to.dst.wrapping_add(at));
                }
            }
        }
        let from: [*const f32; P] =
            std::array::from_fn(|i| first.wrapping_add((start + i) * pitch));
        // SAFETY: the run's reads lie inside its input (checked).
        let acc = unsafe { pair_sums_avx512::<P, V>(&from, run.steps(), b) };
        for (i, sums) in acc.iter().enumerate().skip(done - start) {
            let r = start + i;
            let halves = [even, odd].map(|lanes| -> [__m512; W] {
                std::array::from_fn(|w| {
                    let (lo, hi) = (sums[2 * w], sums[(2 * w + 1).min(V - 1)]);
                    _mm512_permutex2var_ps(lo, lanes, hi)
                })
            });
            for (k, pixel) in halves.iter().enumerate() {
                if k == 1 && r >= to.seconds {
                    break;
                }
                let at = r * ldc + k * to.apart;
                for w in 0..W {
                    // SAFETY: the masks store the pixel's first `columns`
                    // floats, the caller's to write, and read as many of
                    // the residual's, the caller's to read.
                    unsafe {
                        let mut value = _mm512_add_ps(pixel[w], adds[w]);
                        if RES {
                            let r = _mm512_maskz_loadu_ps(masks[w], res.wrapping_add(at + 16 * w));
                            value = _mm512_add_ps(value, r);
                        }
                        let value = activate_avx512(value, act);
                        _mm512_mask_storeu_ps(to.dst.wrapping_add(at + 16 * w), masks[w], value);
                    }
                }
            }
        }
        done = start + P;
    }
}
