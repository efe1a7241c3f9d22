//! The CPU's depthwise convolution into a channels-last output: each
//! output pixel's channels summed side by side in vector registers, a few
//! pixels at a time, the taps' weights `[tap][channel]`. f32 channels
//! that lie side by side are read in place; any other input (f16, bf16,
//! NCHW planes, flipped rows or columns, a channel multiplier above 1) is
//! first copied once into f32 channels-last pixels, each input channel
//! repeated for its outputs. An f32 output whose activation the kernels
//! apply (none, relu, hardsigmoid, hardswish) is finished as each block is
//! stored; any other goes through a row of sums finished in a second loop.
//!
//! Each output is the sum the convolution over planes makes (`conv.rs`):
//! from 0 over the taps in row-major order, each tap's product rounded
//! before it is added (never fused), a tap in the zero padding adding `0 *
//! w`, then the f32 bias (0 without one) added, a one-op activation
//! applied, and the sum rounded once into the dtype: bit for bit an NCHW
//! image's outputs.

use super::numeric::{Float, Num, Widen};
use super::sgemm::{Act, Isa};
use crate::backend::DepthwiseCall;
use crate::error::{Error, Result};
use crate::op::UnaryOp;

const OP: &str = "conv2d";

/// Pixels summed together in the inside of a row.
const PIXELS: usize = 8;

/// Where the f32 input pixels are: element `(image, y, x, channel)` at
/// `offset + image sn + y sh + x sw + channel` (strides not negative).
struct Source<'a> {
    x: &'a [f32],
    offset: usize,
    strides: [usize; 3],
}

/// Runs `call` into `out`, the dense channels-last storage of its `[n, o,
/// ho, wo]` output: each image's rows on the op's threads.
pub(super) fn images<T: Widen>(
    x: &[T],
    w: &[T],
    bias: Option<&[f32]>,
    out: &mut [T],
    call: &DepthwiseCall,
) -> Result<()> {
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let (xd, od) = (xl.dims(), ol.dims());
    let fresh = ol.offset() == 0 && out.len() == ol.numel() && ol.is_channels_last();
    if xd.len() != 4 || wl.rank() != 4 || !fresh {
        return Err(Error::internal(
            OP,
            "a channels-last depthwise output must be fresh and dense",
        ));
    }
    let [n, o, ho, wo] = [od[0], od[1], od[2], od[3]];
    let (c, h, wd) = (xd[1], xd[2], xd[3]);
    if n * o * ho * wo == 0 {
        return Ok(());
    }
    let multiplier = o / c.max(1);
    let [kh, kw] = call.kernel;
    // The taps' weights, [tap][channel].
    let ws = wl.strides();
    let mut taps = vec![0.0f32; kh * kw * o];
    // Row by row (a division an element cost a 5x5 over 480 channels at
    // 20x20 a sixth of its time).
    for (t, row) in taps.chunks_mut(o).enumerate() {
        let tap = wl.offset() as isize + (t / kw) as isize * ws[2] + (t % kw) as isize * ws[3];
        for (ch, slot) in row.iter_mut().enumerate() {
            *slot = w[(tap + ch as isize * ws[0]) as usize].to_f32();
        }
    }
    let bias: Vec<f32> = (0..o).map(|ch| bias.map_or(0.0, |b| b[ch])).collect();
    let s = xl.strides();
    let direct = T::as_f32s(x).filter(|_| {
        multiplier == 1 && (s[1] == 1 || c == 1) && [0, 2, 3].iter().all(|&a| s[a] >= 0)
    });
    let widened;
    let source = match direct {
        Some(x) => Source {
            x,
            offset: xl.offset(),
            strides: [s[0] as usize, s[2] as usize, s[3] as usize],
        },
        None => {
            // Pixels `[n][h][w][o]`, input channel ch / multiplier each.
            let mut copy = vec![0.0f32; n * h * wd * o];
            for (k, slot) in copy.iter_mut().enumerate() {
                let (ch, px) = (k % o, k / o);
                let (image, y, xx) = (px / (h * wd), px / wd % h, px % wd);
                let at = xl.offset() as isize
                    + image as isize * s[0]
                    + (ch / multiplier) as isize * s[1]
                    + y as isize * s[2]
                    + xx as isize * s[3];
                *slot = x[at as usize].to_f32();
            }
            widened = copy;
            Source {
                x: &widened,
                offset: 0,
                strides: [h * wd * o, wd * o, o],
            }
        }
    };
    let activate = super::elementwise::activation_rows(call.activation)?;
    let plan = Plan {
        size: [h, wd],
        kernel: call.kernel,
        stride: call.stride,
        pad: call.pad,
        dilation: call.dilation,
        o,
        wo,
    };
    let (isa, op) = (Isa::best(), call.activation);
    let row = wo * o;
    // f32 outputs whose activation the kernels apply are finished as the
    // kernel stores them; others go through a row of sums.
    let in_kernel = T::IS_F32 && (op.is_none() || Act::of(op).is_some());
    super::threads::for_each_piece_mut(out, row, |(k, dst)| {
        let (image, y) = (k / ho, k % ho);
        if in_kernel && let Some(dst) = T::as_f32s_mut(dst) {
            let fin = Some((bias.as_slice(), Act::of(op)));
            plan.row(isa, &source, &taps, (image, y), (dst, fin));
            return;
        }
        ROW.with(|cell| {
            let mut sums = cell.take();
            sums.resize(row, 0.0);
            plan.row(isa, &source, &taps, (image, y), (&mut sums, None));
            finish(isa, &mut sums, &bias, (op, activate), dst);
            cell.set(sums);
        });
    });
    Ok(())
}

/// What every output row needs of the call.
struct Plan {
    size: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    o: usize,
    wo: usize,
}

/// Outputs finished as they are stored: each sum plus its channel's
/// bias, then the activation.
type Fin<'a> = Option<(&'a [f32], Option<Act>)>;

impl Plan {
    /// The sums of output row `y` of `image`, `[x][channel]`, into `sums`:
    /// finished (`fin`) or as they are.
    fn row(
        &self,
        isa: Isa,
        src: &Source<'_>,
        taps: &[f32],
        (image, y): (usize, usize),
        (sums, fin): (&mut [f32], Fin<'_>),
    ) {
        let ([kh, kw], [s0, s1], [d0, d1], [p0, p1]) =
            (self.kernel, self.stride, self.dilation, self.pad);
        let [h, wd] = self.size;
        let [sn, sh, sw] = src.strides;
        let o = self.o;
        // Input row of tap row i, if inside.
        let tap_row = |i: usize| (y * s0 + i * d0).checked_sub(p0).filter(|&iy| iy < h);
        let rows_inside = (0..kh).all(|i| tap_row(i).is_some());
        // Output columns whose every tap column is inside: x s1 >= p1 and
        // x s1 + (kw - 1) d1 - p1 < wd.
        let lo = p1.div_ceil(s1).min(self.wo);
        let hi = (wd + p1)
            .checked_sub((kw - 1) * d1 + 1)
            .map_or(0, |last| last / s1 + 1)
            .clamp(lo, self.wo);
        let (lo, hi) = if rows_inside { (lo, hi) } else { (0, 0) };
        if lo < hi {
            // Tap t of pixel x at `first + x s1 sw + offsets[t]`.
            let first = src.offset + image * sn + (y * s0 - p0) * sh;
            let offsets: Vec<usize> = (0..kh * kw)
                .map(|t| (t / kw * d0) * sh + (t % kw * d1) * sw)
                .collect();
            let start = first + (lo * s1 - p1) * sw;
            // The input rows the next output row reads below this one's
            // last (with a dilation, rows between are not asked for: a
            // prefetch only), each relative to a pixel's first tap; none
            // for a strided row, whose pixels read a line or more each
            // (the prefetches cost a 3x3 stride-2 convolution of 32
            // channels at 320x320 a sixth of its time on an input in the
            // cache).
            let ahead: Vec<usize> = (0..kh)
                .map(|i| s0 + i * d0)
                .filter(|&r| s1 == 1 && r > (kh - 1) * d0)
                .map(|r| r * sh)
                .collect();
            inside(
                isa,
                (src.x, start, s1 * sw, &offsets),
                taps,
                (&mut sums[lo * o..hi * o], fin),
                (o, &ahead),
            );
        }
        // The edges: each tap's pixel where it is inside the input, none
        // in the zero padding.
        let mut at = vec![None; kh * kw];
        for x in (0..lo).chain(hi..self.wo) {
            for (t, slot) in at.iter_mut().enumerate() {
                let (i, j) = (t / kw, t % kw);
                let column = (x * s1 + j * d1).checked_sub(p1).filter(|&ix| ix < wd);
                *slot = match (tap_row(i), column) {
                    (Some(iy), Some(ix)) => Some(src.offset + image * sn + iy * sh + ix * sw),
                    _ => None,
                };
            }
            edge(isa, src.x, &at, taps, (&mut sums[x * o..(x + 1) * o], fin));
        }
    }
}

/// `pixel[ch] = 0 + v0 taps[ch] + v1 taps[o + ch] + ...` for one pixel of
/// `o = pixel.len()` channels, `v_t` tap `t`'s value `x[at[t] + ch]`, or 0
/// for a tap in the zero padding (`None`: its product `0 w` is added);
/// finished (`fin`) or as it is.
///
/// # Panics
/// When a read leaves `x`, `taps` or the bias (a caller's bug).
fn edge(
    isa: Isa,
    x: &[f32],
    at: &[Option<usize>],
    taps: &[f32],
    (pixel, fin): (&mut [f32], Fin<'_>),
) {
    let o = pixel.len();
    assert!(
        at.iter().flatten().all(|&a| a + o <= x.len()) && taps.len() >= at.len() * o,
        "depthwise edge pixels reach past their input"
    );
    let (bias, code) = stored_as(fin, o);
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
    at: &[Option<usize>],
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
    at: &[Option<usize>],
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
    at: &[Option<usize>],
    taps: &[f32],
    (pixel, bias): (&mut [f32], &[f32]),
) {
    // SAFETY: the caller's.
    unsafe {
        let c = edge_blocks::<16, F>(x, at, taps, (pixel, bias), 0);
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
    at: &[Option<usize>],
    taps: &[f32],
    (pixel, bias): (&mut [f32], &[f32]),
    mut c: usize,
) -> usize {
    let o = pixel.len();
    let (from, weights) = (x.as_ptr(), taps.as_ptr());
    while c + L <= o {
        let mut acc = [0.0f32; L];
        for (t, a) in at.iter().enumerate() {
            // SAFETY: tap t's weights and the pixel's values for channels
            // c..c + L lie inside `taps` and `x` (the caller's).
            let wt = unsafe { &*weights.add(t * o + c).cast::<[f32; L]>() };
            match a {
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
fn inside(
    isa: Isa,
    (x, start, step, offsets): (&[f32], usize, usize, &[usize]),
    taps: &[f32],
    (sums, fin): (&mut [f32], Fin<'_>),
    (o, ahead): (usize, &[usize]),
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
    let o = (o, ahead);
    match isa {
        // SAFETY: the kernels `Isa::available` lists are the processor's;
        // the reads are inside `x`, `taps` and `bias` (asserted).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe {
            by_code!(code, inside_avx512(x, at, offsets, taps, (sums, bias), o))
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { by_code!(code, inside_avx2(x, at, offsets, taps, (sums, bias), o)) },
        // SAFETY: as above.
        Isa::Portable => unsafe {
            by_code!(code, inside_in(x, at, offsets, taps, (sums, bias), o))
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn inside_avx512<const F: u8>(
    x: &[f32],
    at: (usize, usize),
    offsets: &[usize],
    taps: &[f32],
    sums: (&mut [f32], &[f32]),
    o: (usize, &[usize]),
) {
    // SAFETY: the caller's.
    unsafe { inside_in::<F>(x, at, offsets, taps, sums, o) }
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
    unsafe { inside_in::<F>(x, at, offsets, taps, sums, o) }
}

/// [`inside`]'s loops, inlined into each instruction set's function so
/// that the compiler vectorises them: [`PIXELS`] pixels at a time, then
/// one, each in blocks of 16 channels, then 8, then one, stored as code
/// `F` says.
///
/// # Safety
/// [`inside`]'s asserts passed.
#[inline(always)]
unsafe fn inside_in<const F: u8>(
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
                c = blocks::<PIXELS, 16, F>(from, (dst.0, dst.1), o, c);
                c = blocks::<PIXELS, 8, F>(from, (dst.0, dst.1), o, c);
                blocks::<PIXELS, 1, F>(from, (dst.0, dst.1), o, c);
            } else {
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

/// `out[x o + ch] = T(act(sums[x o + ch] + bias[ch]))`: in one
/// vectorised loop where the kernels apply `op` (bit for bit the f32
/// function), else the biased sums through `activate` (`op`'s rows) first.
fn finish<T: Widen>(
    isa: Isa,
    sums: &mut [f32],
    bias: &[f32],
    (op, activate): (Option<UnaryOp>, fn(&mut [f32])),
    out: &mut [T],
) {
    let act = match (op, Act::of(op)) {
        (Some(_), None) => {
            for pixel in sums.chunks_mut(bias.len()) {
                pixel.iter_mut().zip(bias).for_each(|(v, &b)| *v += b);
            }
            activate(sums);
            for (slot, &v) in out.iter_mut().zip(&*sums) {
                *slot = T::from_f32(v);
            }
            return;
        }
        (_, act) => act,
    };
    match isa {
        // SAFETY: the kernels `Isa::available` lists are the processor's.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { finish_avx512(sums, bias, act, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { finish_avx2(sums, bias, act, out) },
        Isa::Portable => finish_in(sums, bias, act, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn finish_avx512<T: Widen>(sums: &[f32], bias: &[f32], act: Option<Act>, out: &mut [T]) {
    finish_in(sums, bias, act, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn finish_avx2<T: Widen>(sums: &[f32], bias: &[f32], act: Option<Act>, out: &mut [T]) {
    finish_in(sums, bias, act, out)
}

/// [`finish`]'s loops, one for each activation, inlined into each
/// instruction set's function so that the compiler vectorises them.
#[inline(always)]
fn finish_in<T: Widen>(sums: &[f32], bias: &[f32], act: Option<Act>, out: &mut [T]) {
    macro_rules! finish {
        ($f:expr) => {
            for (outs, pixel) in out.chunks_mut(bias.len()).zip(sums.chunks(bias.len())) {
                for ((slot, &v), &b) in outs.iter_mut().zip(pixel).zip(bias) {
                    *slot = T::from_f32($f(v + b));
                }
            }
        };
    }
    match act {
        None => finish!(|v: f32| v),
        Some(Act::Relu) => finish!(<f32 as Num>::relu),
        Some(Act::Hardsigmoid) => finish!(<f32 as Float>::hardsigmoid),
        Some(Act::Hardswish) => finish!(<f32 as Float>::hardswish),
    }
}

thread_local! {
    /// This thread's row of sums, kept for the next row.
    static ROW: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}
