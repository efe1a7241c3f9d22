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

use super::depthwise_taps::sum_taps;
use super::numeric::Widen;
use super::sgemm::Isa;
use super::storage::{Bias, CpuData, CpuStorage, host_data};
use crate::backend::DepthwiseCall;
use crate::error::{Error, Result};

const OP: &str = "conv2d";

fn mismatch() -> Error {
    Error::internal(OP, "depthwise operands' dtypes differ from the call's")
}

/// Runs `call`, whose fresh dense `[n, o, ho, wo]` output storage is `out`.
pub(crate) fn depthwise(out: &CpuStorage, call: &DepthwiseCall) -> Result<()> {
    let x = host_data(OP, &call.input)?;
    let w = host_data(OP, &call.weight)?;
    let bias = Bias::read(OP, &call.bias)?;
    let bias = bias.values(OP)?;
    let mut dst = out.write();
    match (&*x, &*w, &mut *dst) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) => planes(x, w, bias, o, call),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(o)) => planes(x, w, bias, o, call),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(o)) => planes(x, w, bias, o, call),
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
    let activate = super::elementwise::activation_rows(call.activation)?;
    let one = |(k, dst): (usize, &mut [T])| {
        let (batch, channel) = (k / g.channels, k % g.channels);
        let b = bias.map_or(0.0, |b| b[channel]);
        plane_of(x, w, (b, activate), dst, &g, batch, channel);
    };
    super::threads::for_each_piece_mut(out, plane, one);
    Ok(())
}

/// Output plane `(batch, channel)` into `dst`: a 1x1 tap over contiguous
/// rows a row at a time, any other through [`phased`].
fn plane_of<T: Widen>(
    x: &[T],
    w: &[T],
    (bias, activate): (f32, fn(&mut [f32])),
    dst: &mut [T],
    g: &Geometry,
    batch: usize,
    channel: usize,
) {
    let [kh, kw] = g.kernel;
    let base = g.offset as isize
        + batch as isize * g.strides[0]
        + (channel / g.multiplier) as isize * g.strides[1];
    let w_base = g.w_offset as isize + channel as isize * g.w_strides[0];
    // The plane's taps, widened once.
    let taps: Vec<f32> = (0..kh * kw)
        .map(|t| {
            let at =
                w_base + (t / kw) as isize * g.w_strides[2] + (t % kw) as isize * g.w_strides[3];
            w[at as usize].to_f32()
        })
        .collect();
    let wo = g.out[1];
    if g.kernel == [1, 1] && g.stride == [1, 1] && g.pad == [0, 0] && g.strides[3] == 1 {
        // A scale and shift (a batch norm): each row in one pass, the
        // same sum, `0 + x w + bias`, as the phased loop's.
        let tap = taps[0];
        let mut sums = vec![0.0f32; wo];
        for (oy, row) in dst.chunks_mut(wo).enumerate() {
            let first = (base + oy as isize * g.strides[2]) as usize;
            for (sum, v) in sums.iter_mut().zip(&x[first..first + wo]) {
                *sum = (0.0 + v.to_f32() * tap) + bias;
            }
            activate(&mut sums);
            for (slot, &sum) in row.iter_mut().zip(&sums) {
                *slot = T::from_f32(sum);
            }
        }
        return;
    }
    phased(x, &taps, (bias, activate), dst, g, base);
}

/// A plane's sums through zero-padded copies of the input it reads, one a
/// phase of the stride (`s0 s1` of them: copy `(a, b)` holds padded rows
/// `a, a + s0, ...` and their columns `b, b + s1, ...`), so that each tap
/// reads one run of one copy for every output of the plane, row after
/// row, and the taps are summed in registers (`depthwise_taps.rs`): the
/// sums of adding each tap to the sums in row-major order, padding
/// included (its products are 0, or NaN for a tap that is not finite).
fn phased<T: Widen>(
    x: &[T],
    taps: &[f32],
    (bias, activate): (f32, fn(&mut [f32])),
    dst: &mut [T],
    g: &Geometry,
    base: isize,
) {
    let ([kh, kw], [ho, wo], [s0, s1], d) = (g.kernel, g.out, g.stride, g.dilation);
    // Rows and columns of each copy: the outputs' and the taps' reach.
    let (hq, wq) = (ho + (kh - 1) * d[0] / s0, wo + (kw - 1) * d[1] / s1);
    let (h, wd) = (g.size[0] as isize, g.size[1] as isize);
    let copy = hq * wq;
    PLANES.with(|cell| {
        let mut scratch = cell.take();
        // Every element is written below: the copies row by row, the
        // sums by `sum_taps`.
        let need = s0 * s1 * copy + SUMS.max(wq);
        if scratch.len() < need {
            scratch.resize(need, 0.0);
        }
        let (copies, sums) = scratch[..need].split_at_mut(s0 * s1 * copy);
        for (phase, plane) in copies.chunks_mut(copy).enumerate() {
            let (a, b) = ((phase / s1) as isize, (phase % s1) as isize);
            // Copy column q is input column q s1 + b - pad1: those inside.
            let shift = b - g.pad[1] as isize;
            let lo = ((-shift).max(0) as usize).div_ceil(s1).min(wq);
            let hi = ((wd - shift).max(0) as usize).div_ceil(s1).clamp(lo, wq);
            let step = s1 as isize * g.strides[3];
            for (r, row) in plane.chunks_mut(wq).enumerate() {
                let y = r as isize * s0 as isize + a - g.pad[0] as isize;
                if !(0..h).contains(&y) || lo == hi {
                    row.fill(0.0);
                    continue;
                }
                row[..lo].fill(0.0);
                row[hi..].fill(0.0);
                let start =
                    base + y * g.strides[2] + (lo as isize * s1 as isize + shift) * g.strides[3];
                let row = &mut row[lo..hi];
                let (n, first) = (row.len(), start as usize);
                if step == 1 {
                    for (slot, v) in row.iter_mut().zip(&x[first..first + n]) {
                        *slot = v.to_f32();
                    }
                } else if step > 0 {
                    // The first of each step-long chunk (a loop the
                    // compiler vectorises), then the last element.
                    let step = step as usize;
                    let (most, last) = row.split_at_mut(n - 1);
                    let chunks = x[first..first + (n - 1) * step].chunks_exact(step);
                    for (slot, v) in most.iter_mut().zip(chunks) {
                        *slot = v[0].to_f32();
                    }
                    last[0] = x[first + (n - 1) * step].to_f32();
                } else {
                    for (k, slot) in row.iter_mut().enumerate() {
                        *slot = x[(start + k as isize * step) as usize].to_f32();
                    }
                }
            }
        }
        let offsets: Vec<usize> = (0..kh * kw)
            .map(|t| {
                let (i, j) = (t / kw * d[0], t % kw * d[1]);
                (i % s0 * s1 + j % s1) * copy + i / s0 * wq + j / s1
            })
            .collect();
        // A band of output rows at a time, stored while its sums are in
        // L1: the band's taps read from its first row on.
        let band = (SUMS / wq).max(1);
        for (k, outs) in dst.chunks_mut(band * wo).enumerate() {
            let rows = outs.len() / wo;
            let sums = &mut sums[..(rows - 1) * wq + wo];
            sum_taps(Isa::best(), &copies[k * band * wq..], &offsets, taps, sums);
            for (oy, out) in outs.chunks_mut(wo).enumerate() {
                let row = &mut sums[oy * wq..oy * wq + wo];
                row.iter_mut().for_each(|sum| *sum += bias);
                activate(row);
                for (slot, &sum) in out.iter_mut().zip(&*row) {
                    *slot = T::from_f32(sum);
                }
            }
        }
        cell.set(scratch);
    });
}

/// Sums a band of [`phased`]'s output rows holds (16 KiB, unless one row
/// is more).
const SUMS: usize = 4096;

thread_local! {
    /// [`phased`]'s copies and sums, kept for the next plane.
    static PLANES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}
