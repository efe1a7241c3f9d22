//! The CPU's depthwise convolution (one input channel per group), on the
//! pool's threads a plane at a time: the input a plane reads is copied
//! once into zero-padded copies a phase of the stride each (through its
//! strides; see [`phased`]), and each output sums its taps in registers
//! (`depthwise_taps.rs`).
//!
//! Each output is accumulated in f32 from 0 over the taps in row-major
//! order, each tap's product rounded to f32 before it is added, a tap in
//! the zero padding adding `0 * w` (NaN for an infinite weight, as a
//! product over a padded copy gives), then the f32 bias added and the sum
//! rounded once into the dtype: the sums the composed form (a product
//! pass per tap) made, and the GPU's kernel makes, bit for bit. A one-op
//! activation the call asks for is applied to the f32 sums as they are
//! stored.

use super::depthwise_taps::{Epilogue, finish_row, sum_taps};
use super::numeric::Widen;
use super::sgemm::Isa;
use super::storage::{Bias, CpuData, CpuStorage, Reads};
use crate::backend::DepthwiseCall;
use crate::error::{Error, Result};

const OP: &str = "conv2d";

fn mismatch() -> Error {
    Error::internal(OP, "depthwise operands' dtypes differ from the call's")
}

/// Runs `call`, whose fresh dense `[n, o, ho, wo]` output storage is `out`.
pub(crate) fn depthwise(out: &CpuStorage, call: &DepthwiseCall) -> Result<()> {
    let reads = Reads::lock(
        OP,
        &[Some(&call.input), Some(&call.weight), call.bias.as_ref()],
    )?;
    let (x, w) = (reads.of(OP, &call.input)?, reads.of(OP, &call.weight)?);
    let bias = Bias::of(&reads, OP, call.bias.as_ref())?;
    let bias = bias.values(OP)?;
    let mut dst = out.write();
    let pixels = super::conv_nhwc::channels_last_out(&call.out.layout, &call.input.layout);
    macro_rules! run {
        ($x:expr, $w:expr, $o:expr) => {
            if pixels {
                super::depthwise_nhwc::images($x, $w, bias, $o, call)
            } else {
                planes($x, $w, bias, $o, call)
            }
        };
    }
    match (x, w, &mut *dst) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) => run!(x, w, o),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(o)) => run!(x, w, o),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(o)) => run!(x, w, o),
        _ => Err(mismatch()),
    }
}

/// Where the output planes' inputs are: everything one plane needs.
struct Geometry {
    /// Input extents `[h, w]`, strides `[n, c, h, w]` and offset.
    size: [usize; 2],
    strides: [isize; 4],
    offset: usize,
    /// Weight strides `[o, _, kh, kw]` and offset.
    w_strides: [isize; 4],
    w_offset: usize,
    out: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    /// Output channels per input channel.
    multiplier: usize,
    channels: usize,
}

fn planes<T: Widen>(
    x: &[T],
    w: &[T],
    bias: Option<&[f32]>,
    out: &mut [T],
    call: &DepthwiseCall,
) -> Result<()> {
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let four = |s: &[isize]| -> Result<[isize; 4]> {
        s.try_into()
            .map_err(|_| Error::internal(OP, "depthwise operands must be rank 4"))
    };
    let (xd, od) = (xl.dims(), ol.dims());
    if xd.len() != 4 || od.len() != 4 || ol.offset() != 0 || out.len() != ol.numel() {
        return Err(Error::internal(
            OP,
            "depthwise output must be fresh and dense",
        ));
    }
    let g = Geometry {
        size: [xd[2], xd[3]],
        strides: four(xl.strides())?,
        offset: xl.offset(),
        w_strides: four(wl.strides())?,
        w_offset: wl.offset(),
        out: [od[2], od[3]],
        kernel: call.kernel,
        stride: call.stride,
        pad: call.pad,
        dilation: call.dilation,
        multiplier: od[1] / xd[1].max(1),
        channels: od[1],
    };
    let plane = g.out[0] * g.out[1];
    if plane == 0 {
        return Ok(());
    }
    let (op, activate) = (
        call.activation,
        super::elementwise::activation_rows(call.activation)?,
    );
    let phases = Phases::new(&g);
    let one = |(k, dst): (usize, &mut [T])| {
        let (batch, channel) = (k / g.channels, k % g.channels);
        let b = bias.map_or(0.0, |b| b[channel]);
        plane_of(x, w, (b, op, activate), dst, (&g, &phases), batch, channel);
    };
    super::threads::for_each_piece_mut(out, plane, one);
    Ok(())
}

/// Output plane `(batch, channel)` into `dst`: a 1x1 tap over contiguous
/// rows a row at a time, any other through [`phased`].
fn plane_of<T: Widen>(
    x: &[T],
    w: &[T],
    finish: Epilogue,
    dst: &mut [T],
    (g, phases): (&Geometry, &Phases),
    batch: usize,
    channel: usize,
) {
    let [kh, kw] = g.kernel;
    let base = g.offset as isize
        + batch as isize * g.strides[0]
        + (channel / g.multiplier) as isize * g.strides[1];
    let w_base = g.w_offset as isize + channel as isize * g.w_strides[0];
    // The plane's taps, widened once (on the stack but for huge kernels).
    let (mut stack, mut heap) = ([0.0f32; 64], Vec::new());
    let taps = if kh * kw <= stack.len() {
        &mut stack[..kh * kw]
    } else {
        heap.resize(kh * kw, 0.0);
        &mut heap[..]
    };
    for (t, tap) in taps.iter_mut().enumerate() {
        let at = w_base + (t / kw) as isize * g.w_strides[2] + (t % kw) as isize * g.w_strides[3];
        *tap = w[at as usize].to_f32();
    }
    let wo = g.out[1];
    if g.kernel == [1, 1] && g.stride == [1, 1] && g.pad == [0, 0] && g.strides[3] == 1 {
        // A scale and shift (a batch norm): each row in one pass, the
        // same sum, `0 + x w + bias`, as the phased loop's.
        let tap = taps[0];
        let mut sums = vec![0.0f32; wo];
        for (oy, row) in dst.chunks_mut(wo).enumerate() {
            let first = (base + oy as isize * g.strides[2]) as usize;
            for (sum, v) in sums.iter_mut().zip(&x[first..first + wo]) {
                *sum = 0.0 + v.to_f32() * tap;
            }
            finish_row(Isa::best(), &mut sums, finish, row);
        }
        return;
    }
    phased(x, taps, finish, dst, (g, phases), base);
}

/// A plane's sums through zero-padded copies of the input it reads, one a
/// phase of the stride that a tap reads ([`Phases`]' `p0 p1` of them: copy
/// `(a, b)` holds padded rows `a, a + s0, ...` and their columns `b, b +
/// s1, ...`), so that each tap reads one run of one copy for every output
/// of the plane, row after row, and the taps are summed in registers
/// (`depthwise_taps.rs`): the sums of adding each tap to the sums in
/// row-major order, padding included (its products are 0, or NaN for a
/// tap that is not finite).
fn phased<T: Widen>(
    x: &[T],
    taps: &[f32],
    finish: Epilogue,
    dst: &mut [T],
    (g, phases): (&Geometry, &Phases),
    base: isize,
) {
    let (wo, isa) = (g.out[1], Isa::best());
    let (wq, copy) = (phases.wq, phases.hq * phases.wq);
    PLANES.with(|cell| {
        let (mut scratch, made_for) = cell.take();
        // The copies, then `PAD` zeros (the last block of sums reads past
        // the copies' end), then the sums. A call's planes share their
        // zeros (the padding, the rows outside the input, `PAD`): the
        // copies are zeroed once a call and thread, and each plane writes
        // the inside of the input alone.
        let copies_len = phases.p0 * phases.p1 * copy + PAD;
        let need = copies_len + SUMS.max(wq) + PAD;
        if scratch.len() < need {
            scratch.resize(need, 0.0);
        }
        if made_for != phases.call {
            scratch[..copies_len].fill(0.0);
        }
        let (copies, sums) = scratch[..need].split_at_mut(copies_len);
        copy_phases(x, copies, (g, phases), base);
        // A band of output rows at a time, stored while its sums are in
        // L1: the band's taps read from its first row on. The sums run
        // on to whole blocks of `PAD` (past a row's last output: ignored).
        let band = (SUMS / wq).max(1);
        for (k, outs) in dst.chunks_mut(band * wo).enumerate() {
            let rows = outs.len() / wo;
            let sums = &mut sums[..((rows - 1) * wq + wo).next_multiple_of(PAD)];
            sum_taps(isa, &copies[k * band * wq..], &phases.offsets, taps, sums);
            for (oy, out) in outs.chunks_mut(wo).enumerate() {
                finish_row(isa, &mut sums[oy * wq..], finish, out);
            }
        }
        cell.set((scratch, phases.call));
    });
}

/// What [`phased`] and [`copy_phases`] need of the call, the same for
/// every plane: made once.
struct Phases {
    /// Row and column phases copied: the stride's, but no more than the
    /// taps reach (a stride past the kernel's extent skips phases no tap
    /// reads).
    p0: usize,
    p1: usize,
    /// Rows and columns of each copy: the outputs' and the taps' reach.
    hq: usize,
    wq: usize,
    /// Where each tap's run starts in the copies.
    offsets: Vec<usize>,
    /// Copy columns `lo..hi` of each column phase lie inside the input.
    inside: Vec<(usize, usize)>,
    /// Columns inside for both phases of a stride of 2 over contiguous
    /// rows (split in one pass), or an empty range.
    both: (usize, usize),
    /// This call's number (never 0): a thread's copies made for it hold
    /// its zeros already.
    call: u64,
}

impl Phases {
    fn new(g: &Geometry) -> Phases {
        let ([kh, kw], [ho, wo], [s0, s1], d) = (g.kernel, g.out, g.stride, g.dilation);
        let (hq, wq) = (ho + (kh - 1) * d[0] / s0, wo + (kw - 1) * d[1] / s1);
        // Tap row i reads row phase i % s0 < p0 (i is below the extent).
        let (p0, p1) = (s0.min((kh - 1) * d[0] + 1), s1.min((kw - 1) * d[1] + 1));
        let copy = hq * wq;
        let offsets = (0..kh * kw)
            .map(|t| {
                let (i, j) = (t / kw * d[0], t % kw * d[1]);
                (i % s0 * p1 + j % s1) * copy + i / s0 * wq + j / s1
            })
            .collect();
        let wd = g.size[1] as isize;
        let inside: Vec<(usize, usize)> = (0..p1)
            .map(|b| {
                let shift = b as isize - g.pad[1] as isize;
                let lo = ((-shift).max(0) as usize).div_ceil(s1).min(wq);
                let hi = ((wd - shift).max(0) as usize).div_ceil(s1).clamp(lo, wq);
                (lo, hi)
            })
            .collect();
        // Pairs of adjacent columns are the two phases of a stride of 2
        // only (two phases copied may be a wider stride's first two).
        let both = match inside[..] {
            [(lo0, hi0), (lo1, hi1)] if s1 == 2 && g.strides[3] == 1 => {
                (lo0.max(lo1), hi0.min(hi1))
            }
            _ => (0, 0),
        };
        Phases {
            p0,
            p1,
            hq,
            wq,
            offsets,
            inside,
            both,
            call: CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        }
    }
}

/// Fills [`phased`]'s copies, `p0 p1` planes of `hq` rows of `wq`: row
/// `r` of copy `(a, b)` holds padded input row `r s0 + a` at columns `b,
/// b + s1, ...` (input column `q s1 + b - pad1` for copy column `q`),
/// zeros outside the input. Only the elements inside the input are
/// written: `copies` holds zeros everywhere else already (the caller's).
/// An input row is read once for all its column phases; a stride of 2
/// over contiguous rows splits its even and odd columns in one pass.
fn copy_phases<T: Widen>(
    x: &[T],
    copies: &mut [f32],
    (g, phases): (&Geometry, &Phases),
    base: isize,
) {
    let ([s0, s1], [pad0, pad1]) = (g.stride, g.pad);
    let (h, (hq, wq)) = (g.size[0] as isize, (phases.hq, phases.wq));
    let copy = hq * wq;
    let (inside, (both_lo, both_hi)) = (&phases.inside, phases.both);
    let paired = both_lo < both_hi;
    let step = s1 as isize * g.strides[3];
    // Input rows in order: row `r` of each row phase `a` in turn.
    for r in 0..hq {
        for a in 0..phases.p0 {
            let y = (r * s0 + a) as isize - pad0 as isize;
            let at = |b: usize| (a * phases.p1 + b) * copy + r * wq;
            let row_base = base + y * g.strides[2];
            // Where copy column q of phase b is read from.
            let from = |b: usize, q: usize| {
                row_base + ((q * s1 + b) as isize - pad1 as isize) * g.strides[3]
            };
            if !(0..h).contains(&y) {
                // Padding: zeros already.
                continue;
            }
            if paired {
                let first = from(0, both_lo) as usize;
                let pairs = &x[first..first + 2 * (both_hi - both_lo)];
                // Phase 1's row lies a copy after phase 0's.
                let (even, odd) = copies[at(0)..at(1) + wq].split_at_mut(copy);
                let even = &mut even[both_lo..both_hi];
                let odd = &mut odd[both_lo..both_hi];
                for ((e, o), v) in even.iter_mut().zip(odd).zip(pairs.chunks_exact(2)) {
                    *e = v[0].to_f32();
                    *o = v[1].to_f32();
                }
            }
            for (b, &(lo, hi)) in inside.iter().enumerate() {
                let row = &mut copies[at(b)..at(b) + wq];
                let runs = if paired {
                    [(lo, both_lo), (both_hi, hi)]
                } else {
                    [(lo, hi), (hi, hi)]
                };
                for (q0, q1) in runs {
                    if q0 < q1 {
                        copy_run(x, &mut row[q0..q1], from(b, q0), step);
                    }
                }
            }
        }
    }
}

/// `run[k] = x[start + k step]`, widened.
fn copy_run<T: Widen>(x: &[T], run: &mut [f32], start: isize, step: isize) {
    let (n, first) = (run.len(), start as usize);
    if step == 1 {
        for (slot, v) in run.iter_mut().zip(&x[first..first + n]) {
            *slot = v.to_f32();
        }
    } else if step > 0 {
        // The first of each step-long chunk (a loop the compiler
        // vectorises), then the last element.
        let step = step as usize;
        let (most, last) = run.split_at_mut(n - 1);
        let chunks = x[first..first + (n - 1) * step].chunks_exact(step);
        for (slot, v) in most.iter_mut().zip(chunks) {
            *slot = v[0].to_f32();
        }
        last[0] = x[first + (n - 1) * step].to_f32();
    } else {
        for (k, slot) in run.iter_mut().enumerate() {
            *slot = x[(start + k as isize * step) as usize].to_f32();
        }
    }
}

/// Sums a band of [`phased`]'s output rows holds (16 KiB, unless one row
/// is more).
const SUMS: usize = 4096;

/// [`phased`]'s sums are summed in whole blocks of this many (a zmm
/// register's): the copies end in this many zeros, read by the last block.
const PAD: usize = 16;

thread_local! {
    /// [`phased`]'s copies and sums, kept for the next plane, and the
    /// call (its [`Phases::call`]) whose zeros the copies hold.
    static PLANES: std::cell::Cell<(Vec<f32>, u64)> =
        const { std::cell::Cell::new((Vec::new(), 0)) };
}

/// The last [`Phases::call`] handed out.
static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
