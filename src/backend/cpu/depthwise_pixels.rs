//! The channels-last depthwise convolution's kernels (`depthwise_nhwc.rs`
//! plans the rows): each output pixel's channels summed side by side in
//! vector registers, from 0 over the taps in row-major order, each tap's
//! product rounded before it is added (never fused), then finished as the
//! call says. The inside of a row sums [`PIXELS`] pixels at a time (on
//! AVX-512, rows of 3 or 5 taps along a row of unit stride from each input
//! pixel loaded once); its edges one pixel at a time, a tap in the zero
//! padding adding `0 w`, or nothing where every weight is finite.

use super::numeric::{Float, Num};
use super::sgemm::{Act, Isa};

/// Pixels summed together in the inside of a row.
const PIXELS: usize = 8;

/// Outputs finished as they are stored: each sum plus its channel's
/// bias, then the activation.
pub(super) type Fin<'a> = Option<(&'a [f32], Option<Act>)>;

/// `pixel[ch] = 0 + v0 taps[ch] + v1 taps[o + ch] + ...` for one pixel of
/// `o = pixel.len()` channels, `v_t` tap `t`'s value `x[at[t] + ch]`, or 0
/// for a tap in the zero padding (`None`: its product `0 w` is added, but
/// where `skip`, the weights being finite: then it adds nothing);
/// finished (`fin`) or as it is.
///
/// # Panics
/// When a read leaves `x`, `taps` or the bias (a caller's bug).
pub(super) fn edge(
    isa: Isa,
    (x, at, skip): (&[f32], &[Option<usize>], bool),
    taps: &[f32],
    (pixel, fin): (&mut [f32], Fin<'_>),
) {
    let o = pixel.len();
    assert!(
        at.iter().flatten().all(|&a| a + o <= x.len()) && taps.len() >= at.len() * o,
        "depthwise edge pixels reach past their input"
    );
    let (bias, code) = stored_as(fin, o);
    let at = (at, skip);
    match isa {
        // SAFETY: the kernels `Isa::available` lists are the processor's;
        // the reads are inside `x`, `taps` and `bias` (asserted).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { by_code!(code, edge_avx512(x, at, taps, (pixel, bias))) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { by_code!(code, edge_avx2(x, at, taps, (pixel, bias))) },
        // SAFETY: as above.
        Isa::Portable => unsafe { by_code!(code, edge_in(x, at, taps, (pixel, bias))) },
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn edge_avx512<const F: u8>(
    x: &[f32],
    at: (&[Option<usize>], bool),
    taps: &[f32],
    pixel: (&mut [f32], &[f32]),
) {
    // SAFETY: the caller's.
    unsafe { edge_in::<F>(x, at, taps, pixel) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn edge_avx2<const F: u8>(
    x: &[f32],
    at: (&[Option<usize>], bool),
    taps: &[f32],
    pixel: (&mut [f32], &[f32]),
) {
    // SAFETY: the caller's.
    unsafe { edge_in::<F>(x, at, taps, pixel) }
}

/// [`edge`]'s loops, inlined into each instruction set's function so that
/// the compiler vectorises them: blocks of 16 channels, then 8, then one,
/// stored as code `F` says.
///
/// # Safety
/// [`edge`]'s asserts passed.
#[inline(always)]
unsafe fn edge_in<const F: u8>(
    x: &[f32],
    at: (&[Option<usize>], bool),
    taps: &[f32],
    (pixel, bias): (&mut [f32], &[f32]),
) {
    // SAFETY: the caller's.
    unsafe {
        let c = edge_blocks::<64, F>(x, at, taps, (pixel, bias), 0);
        let c = edge_blocks::<32, F>(x, at, taps, (pixel, bias), c);
        let c = edge_blocks::<16, F>(x, at, taps, (pixel, bias), c);
        let c = edge_blocks::<8, F>(x, at, taps, (pixel, bias), c);
        edge_blocks::<1, F>(x, at, taps, (pixel, bias), c);
    }
}

/// [`edge`]'s sums of channels `c..` in blocks of `L` while a whole block
/// fits, stored as code `F` says; returns where the blocks end.
///
/// # Safety
/// [`edge`]'s asserts passed.
#[inline(always)]
unsafe fn edge_blocks<const L: usize, const F: u8>(
    x: &[f32],
    at: (&[Option<usize>], bool),
    taps: &[f32],
    (pixel, bias): (&mut [f32], &[f32]),
    mut c: usize,
) -> usize {
    let o = pixel.len();
    let (from, weights) = (x.as_ptr(), taps.as_ptr());
    while c + L <= o {
        let mut acc = [0.0f32; L];
        for (t, a) in at.0.iter().enumerate() {
            // SAFETY: tap t's weights and the pixel's values for channels
            // c..c + L lie inside `taps` and `x` (the caller's).
            let wt = unsafe { &*weights.add(t * o + c).cast::<[f32; L]>() };
            match a {
                None if at.1 => {}
                Some(a) => {
                    // SAFETY: as above.
                    let v = unsafe { &*from.add(a + c).cast::<[f32; L]>() };
                    for ((sum, &v), &wt) in acc.iter_mut().zip(v).zip(wt) {
                        *sum += v * wt;
                    }
                }
                None => {
                    for (sum, &wt) in acc.iter_mut().zip(wt) {
                        *sum += 0.0 * wt;
                    }
                }
            }
        }
        // SAFETY: the caller's (a bias of `o` values but for raw sums).
        let b = unsafe { bias_block::<L, F>(bias, c) };
        for (v, &b) in acc.iter_mut().zip(&b) {
            *v = finished::<F>(*v, b);
        }
        pixel[c..c + L].copy_from_slice(&acc);
        c += L;
    }
    c
}

/// `sums[x o + ch] = 0 + x[start + x step + offsets[0] + ch] taps[ch] +
/// x[.. + offsets[1] + ch] taps[o + ch] + ...` for each pixel `x` of
/// `sums` (`o` channels each), finished (`fin`) or as it is: the inside of
/// a row, every tap inside the input.
///
/// # Panics
/// When a read leaves `x`, `taps` or the bias (a caller's bug).
pub(super) fn inside(
    isa: Isa,
    (x, start, step, offsets): (&[f32], usize, usize, &[usize]),
    taps: &[f32],
    (sums, fin): (&mut [f32], Fin<'_>),
    (o, ahead, kw): (usize, &[usize], usize),
) {
    let pixels = sums.len() / o;
    let reach = offsets.iter().copied().max().unwrap_or(0);
    assert!(
        pixels == 0 || start + (pixels - 1) * step + reach + o <= x.len(),
        "depthwise pixels reach past their input"
    );
    assert!(taps.len() >= offsets.len() * o);
    let (bias, code) = stored_as(fin, o);
    let at = (start, step);
    // Rows of 3 or 5 taps `step` apart (stride and dilation 1 along the
    // row), each row's input pixels loaded once for its taps (AVX-512).
    let rows = [3, 5].into_iter().find(|&n| {
        kw == n
            && offsets.len().is_multiple_of(n)
            && (0..offsets.len()).all(|t| offsets[t] == offsets[t - t % n] + t % n * step)
    });
    let o = (o, ahead);
    match isa {
        // SAFETY: the kernels `Isa::available` lists are the processor's;
        // the reads are inside `x`, `taps` and `bias` (asserted), and the
        // rows' taps `step` apart (checked).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe {
            let sums = (sums, bias);
            match rows {
                Some(3) => by_code!(code, inside_avx512::<3>(x, at, offsets, taps, sums, o)),
                Some(5) => by_code!(code, inside_avx512::<5>(x, at, offsets, taps, sums, o)),
                _ => by_code!(code, inside_avx512::<0>(x, at, offsets, taps, sums, o)),
            }
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { by_code!(code, inside_avx2(x, at, offsets, taps, (sums, bias), o)) },
        // SAFETY: as above (rows of taps are AVX-512's alone).
        Isa::Portable => unsafe {
            let _ = rows;
            by_code!(code, inside_in::<0>(x, at, offsets, taps, (sums, bias), o))
        },
    }
}

/// The kernel `$f` for code `$code` ([`stored_as`]), called with `$args`.
macro_rules! by_code {
    ($code:expr, $f:ident($($arg:expr),*)) => {
        match $code {
            RAW => $f::<RAW>($($arg),*),
            BIASED => $f::<BIASED>($($arg),*),
            RELU => $f::<RELU>($($arg),*),
            HARDSIGMOID => $f::<HARDSIGMOID>($($arg),*),
            _ => $f::<HARDSWISH>($($arg),*),
        }
    };
    ($code:expr, $f:ident::<$kw:literal>($($arg:expr),*)) => {
        match $code {
            RAW => $f::<$kw, RAW>($($arg),*),
            BIASED => $f::<$kw, BIASED>($($arg),*),
            RELU => $f::<$kw, RELU>($($arg),*),
            HARDSIGMOID => $f::<$kw, HARDSIGMOID>($($arg),*),
            _ => $f::<$kw, HARDSWISH>($($arg),*),
        }
    };
}
use by_code;

/// How a kernel stores `o` channels' sums for `fin`: the bias it adds (an
/// empty one for raw sums) and its code.
///
/// # Panics
/// For a bias of fewer than `o` values (a caller's bug).
fn stored_as<'a>(fin: Fin<'a>, o: usize) -> (&'a [f32], u8) {
    match fin {
        None => (&[], RAW),
        Some((bias, act)) => {
            assert!(bias.len() >= o, "depthwise: a bias per channel");
            (bias, act_code(act))
        }
    }
}

/// Channels `c..c + L`'s biases for code `F` (zeros for raw sums).
///
/// # Safety
/// `bias` holds `c + L` values, but for `F == RAW`.
#[inline(always)]
unsafe fn bias_block<const L: usize, const F: u8>(bias: &[f32], c: usize) -> [f32; L] {
    if F == RAW {
        [0.0; L]
    } else {
        // SAFETY: the caller's.
        unsafe { *bias.as_ptr().add(c).cast::<[f32; L]>() }
    }
}

/// What [`inside`]'s kernels store: the raw sums, or each sum plus its
/// channel's bias, then none, relu, hardsigmoid or hardswish.
const RAW: u8 = 0;
const BIASED: u8 = 1;
const RELU: u8 = 2;
const HARDSIGMOID: u8 = 3;
const HARDSWISH: u8 = 4;

/// The kernels' code of a biased sum's activation.
fn act_code(act: Option<Act>) -> u8 {
    match act {
        None => BIASED,
        Some(Act::Relu) => RELU,
        Some(Act::Hardsigmoid) => HARDSIGMOID,
        Some(Act::Hardswish) => HARDSWISH,
    }
}

/// `v` as code `F` stores it: raw, or plus `b`, then the activation (bit
/// for bit the f32 function, as [`finish`] applies it).
#[inline(always)]
fn finished<const F: u8>(v: f32, b: f32) -> f32 {
    match F {
        RAW => v,
        BIASED => v + b,
        RELU => <f32 as Num>::relu(v + b),
        HARDSIGMOID => <f32 as Float>::hardsigmoid(v + b),
        _ => <f32 as Float>::hardswish(v + b),
    }
}

/// [`inside_in`] on AVX-512; for rows of `KW` taps `step` apart (`KW`
/// above 0), groups of [`PIXELS`] pixels sum 16 channels at a time as
/// [`row_block_avx512`] does.
///
/// # Safety
/// As [`inside_in`]; where `KW` is above 0, `offsets` are rows of `KW`
/// taps, each `step` after the last.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn inside_avx512<const KW: usize, const F: u8>(
    x: &[f32],
    at: (usize, usize),
    offsets: &[usize],
    taps: &[f32],
    sums: (&mut [f32], &[f32]),
    o: (usize, &[usize]),
) {
    // SAFETY: the caller's.
    unsafe { inside_in::<KW, F>(x, at, offsets, taps, sums, o) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn inside_avx2<const F: u8>(
    x: &[f32],
    at: (usize, usize),
    offsets: &[usize],
    taps: &[f32],
    sums: (&mut [f32], &[f32]),
    o: (usize, &[usize]),
) {
    // SAFETY: the caller's.
    unsafe { inside_in::<0, F>(x, at, offsets, taps, sums, o) }
}

/// [`inside`]'s loops, inlined into each instruction set's function so
/// that the compiler vectorises them: [`PIXELS`] pixels at a time, then
/// one, each in blocks of 16 channels, then 8, then one, stored as code
/// `F` says.
///
/// # Safety
/// [`inside`]'s asserts passed.
#[inline(always)]
unsafe fn inside_in<const KW: usize, const F: u8>(
    x: &[f32],
    (start, step): (usize, usize),
    offsets: &[usize],
    taps: &[f32],
    (sums, bias): (&mut [f32], &[f32]),
    (o, ahead): (usize, &[usize]),
) {
    let pixels = sums.len() / o;
    let mut p = 0;
    while p < pixels {
        // The last pixels of a row of PIXELS or more as a group reaching
        // back over some already summed (the same sums again, where one
        // at a time waited on each sum's last add).
        if p + PIXELS > pixels && pixels >= PIXELS {
            p = pixels - PIXELS;
        }
        let count = if p + PIXELS <= pixels { PIXELS } else { 1 };
        let base = start + p * step;
        if count == PIXELS {
            prefetch(x, sums, (base, step, o), ahead, (p, F != RAW));
        }
        let dst = (&mut sums[p * o..(p + count) * o], bias);
        let from = (x, (base, step), offsets, taps);
        // SAFETY: the caller's, for these pixels' channels.
        unsafe {
            let mut c = 0;
            if count == PIXELS {
                #[cfg(target_arch = "x86_64")]
                if KW > 0 {
                    // The last block masked to the channels left.
                    while c + 16 <= o {
                        row_block_avx512::<KW, F, false>(from, (dst.0, dst.1), o, (c, 16));
                        c += 16;
                    }
                    if c < o {
                        row_block_avx512::<KW, F, true>(from, (dst.0, dst.1), o, (c, o - c));
                        c = o;
                    }
                }
                c = blocks::<PIXELS, 16, F>(from, (dst.0, dst.1), o, c);
                c = blocks::<PIXELS, 8, F>(from, (dst.0, dst.1), o, c);
                blocks::<PIXELS, 1, F>(from, (dst.0, dst.1), o, c);
            } else {
                c = blocks::<1, 64, F>(from, (dst.0, dst.1), o, c);
                c = blocks::<1, 32, F>(from, (dst.0, dst.1), o, c);
                c = blocks::<1, 16, F>(from, (dst.0, dst.1), o, c);
                c = blocks::<1, 8, F>(from, (dst.0, dst.1), o, c);
                blocks::<1, 1, F>(from, (dst.0, dst.1), o, c);
            }
        }
        p += count;
    }
}

/// Pixels ahead of the stores whose output lines are asked for.
const AHEAD_PIXELS: usize = 64;

/// Asks for the lines the kernel reads and writes later: the input rows
/// the next output row reads below this one's (`ahead`: the first tap
/// column's reach of the group of [`PIXELS`] pixels from `base`, `step`
/// apart), whose lines came too late from the processor's prefetchers for
/// the `kh` streams of taps; and where `out`, the output's lines
/// [`AHEAD_PIXELS`] on from pixel `p` (a fresh output's lines are read
/// before they are written). On a 2-core Zen 5 VM, 16 channels at
/// 320x320, 3x3: 0.77 -> 0.45 ms with the input and output out of the
/// cache, 0.51 -> 0.40 with the output alone, 0.33 -> 0.38 with both in
/// it (a network's pass meets them out of it: 0.53 -> 0.40 ms). A
/// prefetch never faults: its pointer is only formed (wrapping).
#[inline(always)]
fn prefetch(
    x: &[f32],
    sums: &[f32],
    (base, step, o): (usize, usize, usize),
    ahead: &[usize],
    (p, out): (usize, bool),
) {
    let span = (PIXELS - 1) * step + o;
    for &row in ahead {
        let from = x.as_ptr().wrapping_add(base + row);
        for line in (0..span).step_by(16) {
            fetch(from.wrapping_add(line));
        }
    }
    if out {
        let to = sums.as_ptr().wrapping_add((p + AHEAD_PIXELS) * o);
        for line in (0..PIXELS * o).step_by(16) {
            fetch(to.wrapping_add(line));
        }
    }
}

/// Asks for the line holding `at` (nothing where the target has no
/// prefetch).
#[inline(always)]
fn fetch(at: *const f32) {
    // SAFETY: a prefetch reads nothing the program sees, and never faults.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The sums of `P` pixels' channels `c..` in blocks of `L` while a whole
/// block fits, stored as code `F` says; returns where the blocks end.
///
/// # Safety
/// Every pixel `k < P`'s taps read `x[base + k step + offsets[t] +
/// channel]` inside `x`, `taps` holds `offsets.len() o` weights, and
/// `bias` (but for raw sums) `o`.
#[inline(always)]
unsafe fn blocks<const P: usize, const L: usize, const F: u8>(
    (x, (base, step), offsets, taps): (&[f32], (usize, usize), &[usize], &[f32]),
    (dst, bias): (&mut [f32], &[f32]),
    o: usize,
    mut c: usize,
) -> usize {
    let (from, weights) = (x.as_ptr(), taps.as_ptr());
    while c + L <= o {
        let mut acc = [[0.0f32; L]; P];
        for (t, &off) in offsets.iter().enumerate() {
            // SAFETY: the caller's: tap t's weights and every pixel's
            // values for channels c..c + L.
            let wt = unsafe { &*weights.add(t * o + c).cast::<[f32; L]>() };
            for (k, sums) in acc.iter_mut().enumerate() {
                // SAFETY: as above.
                let v = unsafe { &*from.add(base + k * step + off + c).cast::<[f32; L]>() };
                for ((sum, &v), &wt) in sums.iter_mut().zip(v).zip(wt) {
                    *sum += v * wt;
                }
            }
        }
        // SAFETY: the caller's (a bias of `o` values but for raw sums).
        let b = unsafe { bias_block::<L, F>(bias, c) };
        for (k, sums) in acc.iter().enumerate() {
            let mut done = *sums;
            for (v, &b) in done.iter_mut().zip(&b) {
                *v = finished::<F>(*v, b);
            }
            dst[k * o + c..k * o + c + L].copy_from_slice(&done);
        }
        c += L;
    }
    c
}

/// [`blocks`]' block of [`PIXELS`] pixels by channels `c..c + 16` for
/// taps in rows of `KW` (`offsets.len()` a multiple of it), each `step`
/// after the last (stride and dilation 1 along the row: pixel `k`'s tap
/// `j` of a row reads the row's input pixel `k + j`): each of a tap row's
/// `PIXELS + KW - 1` input pixels loaded once, added to the sums of the
/// pixels whose taps read it in the order of their taps.
///
/// # Safety
/// As [`blocks`] and `c + 16 <= o`; the processor has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn row_block_avx512<const KW: usize, const F: u8, const TAIL: bool>(
    (x, (base, step), offsets, taps): (&[f32], (usize, usize), &[usize], &[f32]),
    (dst, bias): (&mut [f32], &[f32]),
    o: usize,
    (c, n): (usize, usize),
) {
    use std::arch::x86_64::{__m512, _mm512_add_ps, _mm512_loadu_ps, _mm512_mul_ps};
    use std::arch::x86_64::{_mm512_mask_storeu_ps, _mm512_maskz_loadu_ps};
    use std::arch::x86_64::{_mm512_setzero_ps, _mm512_storeu_ps};
    let (from, weights) = (x.as_ptr(), taps.as_ptr());
    // Channels c..c + n of 16 lanes: the tail's masked loads and stores
    // touch nothing past them.
    let mask = if TAIL {
        ((1u32 << n) - 1) as u16
    } else {
        u16::MAX
    };
    let load = |at: *const f32| {
        // SAFETY: the caller's: `n` floats at `at` (16 but for the tail).
        unsafe {
            if TAIL {
                _mm512_maskz_loadu_ps(mask, at)
            } else {
                _mm512_loadu_ps(at)
            }
        }
    };
    let mut acc = [_mm512_setzero_ps(); PIXELS];
    for i in 0..offsets.len() / KW {
        let row = base + offsets[i * KW] + c;
        // SAFETY: the caller's: tap (i, j)'s weights for the channels.
        let wt: [__m512; KW] =
            std::array::from_fn(|j| load(unsafe { weights.add((i * KW + j) * o + c) }));
        // Input pixel m of the row is pixel m - j's tap j: in the order of
        // m, each pixel's taps come in their order.
        for m in 0..PIXELS + KW - 1 {
            // SAFETY: the caller's: pixel m - j's tap j for some j.
            let v = load(unsafe { from.add(row + m * step) });
            for (j, &wt) in wt.iter().enumerate() {
                if m >= j && m - j < PIXELS {
                    // The product rounded, then added (never fused).
                    acc[m - j] = _mm512_add_ps(acc[m - j], _mm512_mul_ps(v, wt));
                }
            }
        }
    }
    let b = if F == RAW {
        [0.0; 16]
    } else {
        // SAFETY: `o` biases (the caller's), n of them from c.
        let b = load(unsafe { bias.as_ptr().add(c) });
        let mut lanes = [0.0f32; 16];
        // SAFETY: 16 floats.
        unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), b) };
        lanes
    };
    assert!(dst.len() >= (PIXELS - 1) * o + c + n);
    for (k, sums) in acc.iter().enumerate() {
        let mut done = [0.0f32; 16];
        // SAFETY: 16 floats.
        unsafe { _mm512_storeu_ps(done.as_mut_ptr(), *sums) };
        for (v, &b) in done.iter_mut().zip(&b) {
            *v = finished::<F>(*v, b);
        }
        // SAFETY: pixel k's channels c..c + n are inside `dst` (asserted).
        unsafe {
            let to = dst.as_mut_ptr().add(k * o + c);
            if TAIL {
                _mm512_mask_storeu_ps(to, mask, _mm512_loadu_ps(done.as_ptr()));
            } else {
                _mm512_storeu_ps(to, _mm512_loadu_ps(done.as_ptr()));
            }
        }
    }
}
