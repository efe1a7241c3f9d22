//! The CPU's convolution (all but depthwise) as products on `gemm`: for
//! each image and group, the input's patches are laid out as the columns
//! of an f32 matrix (im2col, a band of output rows at a time so that the
//! matrix stays small) and the group's weights `[out, in * kh * kw]`
//! multiply it (gemm's threads on native targets; the patches are laid out
//! on rayon's). An f32 1x1 convolution with stride 1 and no padding
//! multiplies the input itself, read through its strides.
//!
//! Each output is one f32 dot product over the input channels and taps
//! (gemm's order, not the composed form's tap by tap), rounded once into
//! the dtype: within the tolerance of a convolution's definition, as a
//! GPU's implicit GEMM is.

use super::numeric::Widen;
use super::storage::{CpuData, CpuStorage, host_data};
use crate::backend::ConvCall;
use crate::error::{Error, Result};

const OP: &str = "conv2d";

/// f32s a band's patch matrix holds at the most (8 MiB).
const BAND: usize = 1 << 21;

fn mismatch() -> Error {
    Error::internal(OP, "convolution operands' dtypes differ from the call's")
}

/// Runs `call`, whose fresh dense `[n, o, ho, wo]` output storage is `out`.
pub(crate) fn conv(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    super::threads::install(|| conv_here(out, call))
}

/// [`conv`] on this thread (its products and bands split over the
/// current pool).
fn conv_here(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    let x = host_data(OP, &call.input)?;
    let w = host_data(OP, &call.weight)?;
    let mut dst = out.write();
    match (&*x, &*w, &mut *dst) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) => images(x, w, o, call),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(o)) => images(x, w, o, call),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(o)) => images(x, w, o, call),
        _ => Err(mismatch()),
    }
}

/// Everything a band needs of the call.
struct Shape {
    /// Input `[c, h, w]`, strides `[n, c, h, w]` and offset.
    input: [usize; 3],
    strides: [isize; 4],
    offset: usize,
    /// Output `[o, ho, wo]`.
    out: [usize; 3],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

fn images<T: Widen>(x: &[T], w: &[T], out: &mut [T], call: &ConvCall) -> Result<()> {
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let (xd, od) = (xl.dims(), ol.dims());
    let dense = ol.offset() == 0 && out.len() == ol.numel() && wl.is_contiguous();
    if xd.len() != 4 || od.len() != 4 || !dense {
        return Err(Error::internal(
            OP,
            "convolution operands must be rank 4, the output fresh and the weight dense",
        ));
    }
    let strides: [isize; 4] = xl
        .strides()
        .try_into()
        .map_err(|_| Error::internal(OP, "input must be rank 4"))?;
    let s = Shape {
        input: [xd[1], xd[2], xd[3]],
        strides,
        offset: xl.offset(),
        out: [od[1], od[2], od[3]],
        kernel: call.kernel,
        stride: call.stride,
        pad: call.pad,
        dilation: call.dilation,
        groups: call.groups,
    };
    let plane = s.out[1] * s.out[2];
    let [o, cg, depth] = [
        s.out[0],
        s.input[0] / s.groups,
        s.input[0] / s.groups * s.kernel[0] * s.kernel[1],
    ];
    if plane == 0 || o == 0 || od[0] == 0 {
        return Ok(());
    }
    // The weights as f32 `[o, cg kh kw]` rows.
    let weights: Vec<f32> = w[wl.offset()..wl.offset() + o * depth]
        .iter()
        .map(|v| v.to_f32())
        .collect();
    let og = o / s.groups;
    // Output rows per band: the patch matrix `[depth, rows wo]` and the
    // product `[og, rows wo]` within BAND.
    let rows = (BAND / (depth.max(og) * s.out[2]).max(1)).clamp(1, s.out[1]);
    // Patches only where the input is not multiplied itself, a product
    // only for an output that is not f32.
    let direct_input = pointwise(x, &s, 0, 0, 0).is_some();
    let mut patches = SCRATCH.take();
    if !direct_input {
        // im2col writes every element it hands gemm, padding zeros too.
        patches.resize(patches.len().max(depth * rows * s.out[2]), 0.0);
    }
    let f32_out = T::as_f32_mut(&mut []).is_some();
    let mut product = vec![0.0f32; if f32_out { 0 } else { og * rows * s.out[2] }];
    for (image, image_out) in out.chunks_mut(o * plane).enumerate() {
        for g in 0..s.groups {
            let group_out = &mut image_out[g * og * plane..(g + 1) * og * plane];
            for first in (0..s.out[1]).step_by(rows) {
                let band = rows.min(s.out[1] - first);
                let pixels = band * s.out[2];
                // The matrix multiplied: the input itself, or its patches.
                let (rhs, rhs_rs, rhs_cs) = match pointwise(x, &s, image, g * cg, first) {
                    Some(direct) => direct,
                    None => {
                        let patches = &mut patches[..depth * pixels];
                        im2col(x, patches, &s, image, g * cg, first, band);
                        (patches.as_ptr(), pixels as isize, 1)
                    }
                };
                // An f32 output takes the product where it goes (its
                // channels `plane` apart); another is rounded from `product`.
                let at = first * s.out[2];
                let direct = T::as_f32_mut(group_out).map(|o| o[at..].as_mut_ptr());
                let (dst, dst_cs) = match direct {
                    Some(o) => (o, plane),
                    None => (product.as_mut_ptr(), pixels),
                };
                // [og, pixels] = weights [og, depth] x patches [depth,
                // pixels], computed as its transpose (pixels x og = patches^T
                // x weights^T, through strides): gemm's kernels run fastest
                // with the long side as their rows.
                // SAFETY: every matrix lies inside its vector, by their
                // sizes: `product` holds og x pixels, and channel og - 1 of
                // the output ends at (og - 1) plane + at + pixels <= og plane.
                unsafe {
                    gemm::gemm(
                        pixels,
                        og,
                        depth,
                        dst,
                        dst_cs as isize,
                        1,
                        false,
                        rhs,
                        rhs_rs,
                        rhs_cs,
                        weights.as_ptr().add(g * og * depth),
                        depth as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        super::matmul::parallelism(),
                    );
                }
                if direct.is_some() {
                    continue;
                }
                for (k, row) in product[..og * pixels].chunks(pixels).enumerate() {
                    let at = k * plane + at;
                    for (slot, v) in group_out[at..at + pixels].iter_mut().zip(row) {
                        *slot = T::from_f32(*v);
                    }
                }
            }
        }
    }
    SCRATCH.set(patches);
    Ok(())
}

thread_local! {
    /// The patch matrix of this thread's last convolution, kept for the
    /// next (BAND f32s, 8 MiB, unless one output row's patches are more):
    /// a fresh one was page-faulted in and zeroed on every call.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// For an f32 1x1 convolution with stride 1 and no padding whose input
/// rows follow each other at one pixel stride (none of them 0), the input at output row
/// `first` of `image`, channel `channel`, as a `[channels, pixels]` matrix:
/// its start, row stride and column stride.
fn pointwise<T: Widen>(
    x: &[T],
    s: &Shape,
    image: usize,
    channel: usize,
    first: usize,
) -> Option<(*const f32, isize, isize)> {
    let x = T::as_f32(x)?;
    let pixel = s.strides[3];
    let plain = s.kernel == [1, 1] && s.stride == [1, 1] && s.pad == [0, 0];
    // (A broadcast input, a stride of 0, is laid out as patches instead.)
    let dense_rows = pixel != 0 && s.strides[1] != 0 && s.strides[2] == s.input[2] as isize * pixel;
    if !plain || !dense_rows || s.out[1..] != s.input[1..] {
        return None;
    }
    let start = s.offset as isize
        + image as isize * s.strides[0]
        + channel as isize * s.strides[1]
        + first as isize * s.strides[2];
    // In bounds: the op layer checked the input's layout against its
    // storage, and this is one of its elements (or the matrix is empty).
    Some((x.as_ptr().wrapping_offset(start), s.strides[1], pixel))
}

/// The patches of output rows `first..first + band` of `image`, channels
/// `channel..channel + cg`, as the columns of `patches` (`[cg kh kw,
/// band wo]`): row `(c kh + i) kw + j` holds input `(c, y s + i d - pad,
/// x s + j d - pad)` for each output pixel `(y, x)`, 0 in the padding.
fn im2col<T: Widen>(
    x: &[T],
    patches: &mut [f32],
    s: &Shape,
    image: usize,
    channel: usize,
    first: usize,
    band: usize,
) {
    let [kh, kw] = s.kernel;
    let (wo, pixels) = (s.out[2], band * s.out[2]);
    let (h, wd) = (s.input[1] as isize, s.input[2] as isize);
    let fill = |(r, row): (usize, &mut [f32])| {
        let (c, i, j) = (r / (kh * kw), r / kw % kh, r % kw);
        let base = s.offset as isize
            + image as isize * s.strides[0]
            + (channel + c) as isize * s.strides[1];
        let shift = (j * s.dilation[1]) as isize - s.pad[1] as isize;
        // Output columns whose input column is inside the row.
        let lo = ((-shift).max(0) as usize).div_ceil(s.stride[1]).min(wo);
        let hi = ((wd - shift).max(0) as usize)
            .div_ceil(s.stride[1])
            .clamp(lo, wo);
        for (y, out_row) in row.chunks_mut(wo).enumerate() {
            let iy = ((first + y) * s.stride[0] + i * s.dilation[0]) as isize - s.pad[0] as isize;
            if !(0..h).contains(&iy) {
                out_row.fill(0.0);
                continue;
            }
            out_row[..lo].fill(0.0);
            out_row[hi..].fill(0.0);
            let start = base
                + iy * s.strides[2]
                + (lo as isize * s.stride[1] as isize + shift) * s.strides[3];
            let step = s.stride[1] as isize * s.strides[3];
            let run = &mut out_row[lo..hi];
            if step == 1 {
                // A run of the input row: one bounds check, a copy.
                let from = &x[start as usize..start as usize + run.len()];
                for (slot, v) in run.iter_mut().zip(from) {
                    *slot = v.to_f32();
                }
            } else {
                for (k, slot) in run.iter_mut().enumerate() {
                    *slot = x[(start + k as isize * step) as usize].to_f32();
                }
            }
        }
    };
    super::threads::for_each_piece_mut(patches, pixels, fill);
}
