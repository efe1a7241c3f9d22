//! The CPU's depthwise convolution into a channels-last output: each
//! output pixel's channels summed side by side in vector registers, a few
//! pixels at a time (`depthwise_pixels.rs`), the taps' weights
//! `[tap][channel]`; each output row planned here, its inside and edges.
//! f32 channels that lie side by side are read in place; any other input
//! (f16, bf16, NCHW planes, flipped rows or columns, a channel multiplier
//! above 1) is first copied once into f32 channels-last pixels, each input
//! channel repeated for its outputs. An f32 output whose activation the
//! kernels apply (none, relu, hardsigmoid, hardswish) is finished as each
//! block is stored; any other goes through a row of sums finished in a
//! second loop.
//!
//! Each output is the sum the convolution over planes makes (`conv.rs`):
//! from 0 over the taps in row-major order, each tap's product rounded
//! before it is added (never fused), a tap in the zero padding adding `0 *
//! w`, then the f32 bias (0 without one) added, a one-op activation
//! applied, and the sum rounded once into the dtype: bit for bit an NCHW
//! image's outputs.

use super::depthwise_pixels::{Fin, edge, inside};
use super::host_vec::HostVec;
use super::numeric::{Float, Num, Widen};
use super::sgemm::{Act, Isa};
use crate::backend::DepthwiseCall;
use crate::error::{Error, Result};
use crate::op::UnaryOp;

const OP: &str = "conv2d";

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
    // The taps' weights, [tap][channel], from a cache line: where the
    // channels are a multiple of 16, each tap's 16-channel loads then lie
    // on lines (from a `Vec` they straddled two).
    let ws = wl.strides();
    let mut taps = HostVec::<f32>::try_zeroed(OP, kh * kw * o)?;
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
    let ([d0, d1], [s0, s1]) = (call.dilation, call.stride);
    let [_, sh, sw] = source.strides;
    let plan = Plan {
        size: [h, wd],
        kernel: call.kernel,
        stride: call.stride,
        pad: call.pad,
        dilation: call.dilation,
        o,
        wo,
        offsets: (0..kh * kw)
            .map(|t| (t / kw * d0) * sh + (t % kw * d1) * sw)
            .collect(),
        // The input rows the next output row reads below this one's last
        // (with a dilation, rows between are not asked for: a prefetch
        // only), each relative to a pixel's first tap; none for a row of
        // stride above 2, whose pixels read a line or more each. At stride
        // 2 they cost a 3x3 over 32 channels at 320x320 a tenth of its
        // time on an input in the cache (245 -> 268 us) and save an eighth
        // in a network, whose input is out of it (500 -> 433 us).
        ahead: (0..kh)
            .map(|i| s0 + i * d0)
            .filter(|&r| s1 <= 2 && r > (kh - 1) * d0)
            .map(|r| r * sh)
            .collect(),
        finite: taps.iter().all(|w| w.is_finite()),
    };
    let (isa, op) = (Isa::best(), call.activation);
    let row = wo * o;
    // f32 outputs whose activation the kernels apply are finished as the
    // kernel stores them; others go through a row of sums.
    let in_kernel = T::IS_F32 && (op.is_none() || Act::of(op).is_some());
    // Bands of rows, four a thread: a thread's rows follow each other (the
    // rows ahead it asks for are its own next rows', and the input rows two
    // output rows share are read once).
    let band = (n * ho).div_ceil(4 * super::threads::count()).max(1);
    super::threads::for_each_piece_mut(out, band * row, |(b, rows)| {
        for (r, dst) in rows.chunks_mut(row).enumerate() {
            let k = b * band + r;
            let (image, y) = (k / ho, k % ho);
            if in_kernel && let Some(dst) = T::as_f32s_mut(dst) {
                let fin = Some((bias.as_slice(), Act::of(op)));
                plan.row(isa, &source, &taps, (image, y), (dst, fin));
                continue;
            }
            ROW.with(|cell| {
                let mut sums = cell.take();
                sums.resize(row, 0.0);
                plan.row(isa, &source, &taps, (image, y), (&mut sums, None));
                finish(isa, &mut sums, &bias, (op, activate), dst);
                cell.set(sums);
            });
        }
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
    /// Tap `t`'s element relative to its pixel's first tap, `(t / kw d0)
    /// sh + (t % kw d1) sw`.
    offsets: Vec<usize>,
    /// The input rows the next output row reads below a row's last,
    /// relative to a pixel's first tap (prefetched).
    ahead: Vec<usize>,
    /// Whether every weight is finite: a tap in the zero padding then adds
    /// nothing (its product is a zero, and a sum from +0 is never -0), and
    /// is skipped; else its `0 w` is added (NaN for an infinite weight).
    finite: bool,
}

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
        // The tap rows summed by the inside's kernel: all, or where every
        // weight is finite, those inside the input (rows i0..i1: a row's
        // taps in the zero padding add nothing); none where a weight is
        // not and a row is outside.
        let i0 = (0..kh).find(|&i| tap_row(i).is_some()).unwrap_or(kh);
        let i1 = (i0..kh).find(|&i| tap_row(i).is_none()).unwrap_or(kh);
        let rows = if (i0, i1) == (0, kh) || self.finite {
            i0..i1
        } else {
            0..0
        };
        // Output columns whose every tap column is inside: x s1 >= p1 and
        // x s1 + (kw - 1) d1 - p1 < wd.
        let lo = p1.div_ceil(s1).min(self.wo);
        let hi = (wd + p1)
            .checked_sub((kw - 1) * d1 + 1)
            .map_or(0, |last| last / s1 + 1)
            .clamp(lo, self.wo);
        let (lo, hi) = if rows.is_empty() { (0, 0) } else { (lo, hi) };
        if lo < hi {
            // Tap t of pixel x at `first + x s1 sw + offsets[t]`, from tap
            // row i0 on.
            let first = src.offset + image * sn + (y * s0 + i0 * d0 - p0) * sh;
            let offsets: std::borrow::Cow<'_, [usize]> = if rows.len() == kh {
                (&self.offsets[..]).into()
            } else {
                let top = i0 * d0 * sh;
                self.offsets[i0 * kw..i1 * kw]
                    .iter()
                    .map(|&t| t - top)
                    .collect::<Vec<_>>()
                    .into()
            };
            let start = first + (lo * s1 - p1) * sw;
            inside(
                isa,
                (src.x, start, s1 * sw, &offsets),
                &taps[i0 * kw * o..],
                (&mut sums[lo * o..hi * o], fin),
                // (No rows ahead for a row from tap row i0 > 0: they are
                // counted from tap row 0.)
                (
                    o,
                    if i0 == 0 { &self.ahead } else { &[] },
                    if s1 == 1 && d1 == 1 { kw } else { 0 },
                ),
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
            let pixel = (&mut sums[x * o..(x + 1) * o], fin);
            edge(isa, (src.x, &at, self.finite), taps, pixel);
        }
    }
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
