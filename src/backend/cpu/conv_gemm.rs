//! The CPU's convolution (all but depthwise) as packed products: for each
//! image and group, the input's patches for a band of output pixels are
//! packed straight into panels of `nr` pixels (im2col into the layout the
//! tile kernel reads, no matrix in between), the group's weights `[out,
//! in * kh * kw]` are packed once as panels of `mr` channels, and each
//! tile of `mr` channels by `nr` pixels is summed in registers
//! (`sgemm/`) and finished where it is stored: the f32 bias added, a
//! one-op activation applied, the sum rounded once into the dtype. Bands
//! run on the current pool's threads, each packing into a scratch buffer
//! of its thread's.
//!
//! Each output is one f32 sum over the input channels and taps in order
//! (fused multiply-adds on x86), whatever the thread count: within the
//! tolerance of a convolution's definition, as a GPU's implicit GEMM is.

use super::numeric::Widen;
use super::sgemm::{self, Isa, MAX_TILE};
use super::storage::{Bias, CpuData, CpuStorage, host_data};
use super::strided::Shared;
use crate::backend::ConvCall;
use crate::error::{Error, Result};

const OP: &str = "conv2d";

/// Bytes of packed patches a band holds (unless [`BAND_PIXELS`] need
/// more): about what a core's L2 cache keeps while its tiles read it.
/// Measured on a 2-core Xeon (Sapphire Rapids) VM: a 3x3 over 96 channels
/// ran fastest with bands of 300 to 600 pixels (1 to 2 MiB), the shallow
/// ones with 256 KiB.
const BAND_BYTES: usize = 256 << 10;

/// Pixels a band holds at the least: a deep patch matrix (a 3x3 over 96
/// channels) packs each of its rows in runs no shorter than this.
const BAND_PIXELS: usize = 512;

fn mismatch() -> Error {
    Error::internal(OP, "convolution operands' dtypes differ from the call's")
}

/// Runs `call`, whose fresh dense `[n, o, ho, wo]` output storage is `out`.
pub(crate) fn conv(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    super::threads::install(|| conv_here(out, call))
}

/// [`conv`] on this thread (its bands split over the current pool).
fn conv_here(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    let x = host_data(OP, &call.input)?;
    let w = host_data(OP, &call.weight)?;
    let bias = Bias::read(OP, &call.bias)?;
    let bias = bias.values(OP)?;
    let mut dst = out.write();
    match (&*x, &*w, &mut *dst) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) => images(x, w, bias, o, call),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(o)) => images(x, w, bias, o, call),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(o)) => images(x, w, bias, o, call),
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

impl Shape {
    /// Rows of a group's patch matrix: its input channels times the taps.
    fn depth(&self) -> usize {
        self.input[0] / self.groups * self.kernel[0] * self.kernel[1]
    }
}

fn images<T: Widen>(
    x: &[T],
    w: &[T],
    bias: Option<&[f32]>,
    out: &mut [T],
    call: &ConvCall,
) -> Result<()> {
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
    let (plane, o, depth) = (s.out[1] * s.out[2], s.out[0], s.depth());
    if bias.is_some_and(|b| b.len() < o) {
        return Err(Error::internal(
            OP,
            "the bias holds fewer values than channels",
        ));
    }
    if plane == 0 || o == 0 || od[0] == 0 {
        return Ok(());
    }
    let activate = super::elementwise::activation_rows(call.activation)?;
    if depth == 0 {
        // No input channels: each output is its activated bias (an empty
        // sum, 0).
        for (k, v) in out.iter_mut().enumerate() {
            let mut sum = [bias.map_or(0.0, |b| b[k / plane % o])];
            activate(&mut sum);
            *v = T::from_f32(sum[0]);
        }
        return Ok(());
    }
    let isa = Isa::best();
    let (mr, nr) = (isa.mr(), isa.nr());
    let og = o / s.groups;
    // Each group's weights `[og, depth]` as panels of mr channels.
    let weights: Vec<Vec<f32>> = (0..s.groups)
        .map(|g| {
            let first = wl.offset() + g * og * depth;
            sgemm::pack_a(isa, og, depth, |r, p| w[first + r * depth + p].to_f32())
        })
        .collect();
    // Pixels per band: whole panels, as many as BAND_BYTES holds but
    // BAND_PIXELS at the least; fewer where that leaves threads idle
    // (four bands a thread, a panel each at the least).
    let (images, groups) = (od[0], s.groups);
    let wanted = (4 * super::threads::count()).div_ceil(images * groups);
    let band = (BAND_BYTES / 4 / depth)
        .max(BAND_PIXELS)
        .min(plane.div_ceil(wanted))
        .div_ceil(nr)
        * nr;
    let bands = plane.div_ceil(band);
    let dst = Shared(out.as_mut_ptr());
    let job = |k: usize| {
        let (image, g, first) = (k / (groups * bands), k / bands % groups, k % bands * band);
        let pixels = band.min(plane - first);
        let mut patches = SCRATCH.take();
        patches.resize(patches.len().max(depth * pixels.div_ceil(nr) * nr), 0.0);
        pack_patches(
            x,
            &mut patches,
            &s,
            image,
            g * (s.input[0] / groups),
            first,
            pixels,
            nr,
        );
        let channels = (image * o + g * og) * plane;
        let mut tile = [0.0f32; MAX_TILE];
        for (q, b) in patches
            .chunks(depth * nr)
            .take(pixels.div_ceil(nr))
            .enumerate()
        {
            let columns = nr.min(pixels - q * nr);
            for (t, a) in weights[g].chunks(depth * mr).enumerate() {
                sgemm::tile(isa, depth, a, b, &mut tile);
                for (i, sums) in tile.chunks_mut(nr).take(mr.min(og - t * mr)).enumerate() {
                    let channel = t * mr + i;
                    let sums = &mut sums[..columns];
                    if let Some(b) = bias {
                        let add = b[g * og + channel];
                        sums.iter_mut().for_each(|v| *v += add);
                    }
                    activate(sums);
                    let at = channels + channel * plane + first + q * nr;
                    // SAFETY: job k alone writes pixels first..first +
                    // pixels of its image's and group's channels, inside
                    // the dense output (channel < og, q nr + columns <=
                    // pixels, first + pixels <= plane).
                    let row = unsafe { std::slice::from_raw_parts_mut(dst.get().add(at), columns) };
                    for (slot, &v) in row.iter_mut().zip(&*sums) {
                        *slot = T::from_f32(v);
                    }
                }
            }
        }
        SCRATCH.set(patches);
    };
    super::threads::for_each_index(images * groups * bands, job);
    Ok(())
}

thread_local! {
    /// The packed patches of this thread's last band, kept for the next:
    /// a fresh buffer was page-faulted in on every call.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The patches of output pixels `first..first + pixels` of `image`, input
/// channels `channel..` of one group, packed as panels of `nr` pixels:
/// panel `q` holds `[r][j]` = patch row `r = (c kh + i) kw + j'` of pixel
/// `first + q nr + j`, which is input `(c, y s + i d - pad, x s + j' d -
/// pad)` for output pixel `(y, x)`, 0 in the padding and past the last
/// pixel.
#[allow(clippy::too_many_arguments)]
fn pack_patches<T: Widen>(
    x: &[T],
    packed: &mut [f32],
    s: &Shape,
    image: usize,
    channel: usize,
    first: usize,
    pixels: usize,
    nr: usize,
) {
    let [kh, kw] = s.kernel;
    let (depth, wo) = (s.depth(), s.out[2]);
    let (h, wd) = (s.input[1] as isize, s.input[2] as isize);
    let panel = depth * nr;
    for r in 0..depth {
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
        let step = s.stride[1] as isize * s.strides[3];
        let mut pixel = first;
        while pixel < first + pixels {
            let (y, x0) = (pixel / wo, pixel % wo);
            let x1 = wo.min(x0 + (first + pixels - pixel));
            let iy = (y * s.stride[0] + i * s.dilation[0]) as isize - s.pad[0] as isize;
            let (a, b) = if (0..h).contains(&iy) {
                (lo.clamp(x0, x1), hi.clamp(x0, x1))
            } else {
                (x1, x1)
            };
            let at = pixel - first;
            put_row(packed, panel, nr, r, at, a - x0, |slots, _| slots.fill(0.0));
            let start = base
                + iy * s.strides[2]
                + (a as isize * s.stride[1] as isize + shift) * s.strides[3];
            put_row(packed, panel, nr, r, at + a - x0, b - a, |slots, k| {
                let from = start + k as isize * step;
                if step == 1 {
                    let run = &x[from as usize..from as usize + slots.len()];
                    for (slot, v) in slots.iter_mut().zip(run) {
                        *slot = v.to_f32();
                    }
                } else {
                    for (n, slot) in slots.iter_mut().enumerate() {
                        *slot = x[(from + n as isize * step) as usize].to_f32();
                    }
                }
            });
            put_row(packed, panel, nr, r, at + b - x0, x1 - b, |slots, _| {
                slots.fill(0.0)
            });
            pixel += x1 - x0;
        }
        // The last panel's columns past the band.
        let tail = pixels.div_ceil(nr) * nr - pixels;
        put_row(packed, panel, nr, r, pixels, tail, |slots, _| {
            slots.fill(0.0)
        });
    }
}

/// Fills the slots of band pixels `at..at + n` in packed row `r`, a panel
/// at a time: `fill(slots, k)` for the slots of pixels `at + k..`.
#[inline(always)]
fn put_row(
    packed: &mut [f32],
    panel: usize,
    nr: usize,
    r: usize,
    at: usize,
    n: usize,
    mut fill: impl FnMut(&mut [f32], usize),
) {
    let mut done = 0;
    while done < n {
        let o = at + done;
        let len = (nr - o % nr).min(n - done);
        let start = o / nr * panel + r * nr + o % nr;
        fill(&mut packed[start..start + len], done);
        done += len;
    }
}
