//! The CPU's depthwise convolution (one input channel per group): one pass
//! over each output plane, reading the input through its strides (no
//! padded copy), on rayon's threads a plane at a time on native targets.
//!
//! Each output is accumulated in f32 from 0 over the taps in row-major
//! order, each tap's product rounded to f32 before it is added, a tap in
//! the zero padding adding `0 * w` (NaN for an infinite weight, as a
//! product over a padded copy gives), then the f32 bias added and the sum
//! rounded once into the dtype: the sums the composed form (a product
//! pass per tap) made, and the GPU's kernel makes, bit for bit. A one-op
//! activation the call asks for is applied to the f32 sums as they are
//! stored.

use super::numeric::Widen;
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

/// Output plane `(batch, channel)` into `dst`, a row at a time: each tap
/// adds its weight times a run of an input row to the row's f32 sums (a
/// loop the compiler vectorises where the input row is contiguous and the
/// stride 1), the taps in row-major order, so that every sum adds its
/// products in that order.
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
    let [s0, s1] = g.stride;
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
    let (h, wd, wo) = (g.size[0] as isize, g.size[1] as isize, g.out[1]);
    if g.kernel == [1, 1] && g.stride == [1, 1] && g.pad == [0, 0] && g.strides[3] == 1 {
        // A scale and shift (a batch norm): each row in one pass, the
        // same sum, `0 + x w + bias`, as the general loop's.
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
    if g.stride == [1, 1] {
        return unit_stride(x, &taps, (bias, activate), dst, g, base);
    }
    let mut sums = vec![0.0f32; wo];
    for (oy, row) in dst.chunks_mut(wo).enumerate() {
        sums.fill(0.0);
        for i in 0..kh {
            let y = (oy * s0 + i * g.dilation[0]) as isize - g.pad[0] as isize;
            for j in 0..kw {
                let tap = taps[i * kw + j];
                // Output columns whose input column is inside the row:
                // 0 <= ox s1 + j d1 - pad1 < wd.
                let shift = (j * g.dilation[1]) as isize - g.pad[1] as isize;
                let (lo, hi) = if (0..h).contains(&y) {
                    let lo = ((-shift).max(0) as usize).div_ceil(s1);
                    let hi = ((wd - shift).max(0) as usize).div_ceil(s1).min(wo);
                    (lo.min(hi), hi)
                } else {
                    (0, 0)
                };
                // The zero padding's products: 0 unless the tap is not
                // finite (NaN then, as over a padded copy).
                if !tap.is_finite() {
                    let padding = 0.0 * tap;
                    let (before, rest) = sums.split_at_mut(lo);
                    for sum in before.iter_mut().chain(&mut rest[hi - lo..]) {
                        *sum += padding;
                    }
                }
                if lo == hi {
                    continue;
                }
                let first =
                    base + y * g.strides[2] + (lo as isize * s1 as isize + shift) * g.strides[3];
                let step = s1 as isize * g.strides[3];
                let run = &mut sums[lo..hi];
                if step == 1 {
                    let input = &x[first as usize..first as usize + run.len()];
                    for (sum, v) in run.iter_mut().zip(input) {
                        *sum += v.to_f32() * tap;
                    }
                } else if step > 0 {
                    // A stepped run: the first of each step-long chunk (a
                    // loop the compiler vectorises), then the last element.
                    let (step, n) = (step as usize, run.len());
                    let start = first as usize;
                    let chunks = x[start..start + (n - 1) * step].chunks_exact(step);
                    let (most, last) = run.split_at_mut(n - 1);
                    for (sum, v) in most.iter_mut().zip(chunks) {
                        *sum += v[0].to_f32() * tap;
                    }
                    last[0] += x[start + (n - 1) * step].to_f32() * tap;
                } else {
                    for (k, sum) in run.iter_mut().enumerate() {
                        *sum += x[(first + k as isize * step) as usize].to_f32() * tap;
                    }
                }
            }
        }
        sums.iter_mut().for_each(|sum| *sum += bias);
        activate(&mut sums);
        for (slot, &sum) in row.iter_mut().zip(&sums) {
            *slot = T::from_f32(sum);
        }
    }
}

/// A stride-1 plane ([`plane_of`]'s sums, in the same order): the input
/// rows it reads are copied once into a zero-padded plane `wo + (kw - 1)
/// d` wide, so that each tap adds its weight times one run of that plane
/// to the sums of a band of output rows at once (the columns past `wo` in
/// each row of sums are never stored): a few long loops the compiler
/// vectorises, where a small plane's rows made many short ones.
fn unit_stride<T: Widen>(
    x: &[T],
    taps: &[f32],
    (bias, activate): (f32, fn(&mut [f32])),
    dst: &mut [T],
    g: &Geometry,
    base: isize,
) {
    let ([kh, kw], [ho, wo], d) = (g.kernel, g.out, g.dilation);
    let (hp, wp) = (ho + (kh - 1) * d[0], wo + (kw - 1) * d[1]);
    let (h, wd) = (g.size[0] as isize, g.size[1] as isize);
    PLANES.with(|cell| {
        let mut scratch = cell.take();
        scratch.clear();
        scratch.resize(hp * wp + ho * wp, 0.0);
        let (padded, sums) = scratch.split_at_mut(hp * wp);
        // Padded row r is input row r - pad, column c input column c - pad.
        let cols =
            (-(g.pad[1] as isize)..wp as isize - g.pad[1] as isize).map(|c| (0..wd).contains(&c));
        let first = cols.clone().position(|inside| inside).unwrap_or(wp);
        let count = cols.filter(|&inside| inside).count();
        for (r, row) in padded.chunks_mut(wp).enumerate() {
            let y = r as isize - g.pad[0] as isize;
            if !(0..h).contains(&y) || count == 0 {
                continue;
            }
            let start =
                base + y * g.strides[2] + (first as isize - g.pad[1] as isize) * g.strides[3];
            for (k, slot) in row[first..first + count].iter_mut().enumerate() {
                *slot = x[(start + k as isize * g.strides[3]) as usize].to_f32();
            }
        }
        // A band of output rows at a time, its sums in L1.
        let rows = (SUMS / wp).max(1);
        for y0 in (0..ho).step_by(rows) {
            let band = rows.min(ho - y0);
            let len = (band - 1) * wp + wo;
            let sums = &mut sums[y0 * wp..y0 * wp + len];
            for (t, &tap) in taps.iter().enumerate() {
                let at = (y0 + (t / kw) * d[0]) * wp + (t % kw) * d[1];
                for (sum, v) in sums.iter_mut().zip(&padded[at..at + len]) {
                    *sum += v * tap;
                }
            }
        }
        for (row, out) in sums.chunks_mut(wp).zip(dst.chunks_mut(wo)) {
            let row = &mut row[..wo];
            row.iter_mut().for_each(|sum| *sum += bias);
            activate(row);
            for (slot, &sum) in out.iter_mut().zip(&*row) {
                *slot = T::from_f32(sum);
            }
        }
        cell.set(scratch);
    });
}

/// Sums a band of [`unit_stride`]'s rows holds (16 KiB, unless one row is
/// more).
const SUMS: usize = 4096;

thread_local! {
    /// [`unit_stride`]'s padded plane and sums, kept for the next plane.
    static PLANES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}
