//! The CPU's transposed convolution in f32, as a product and a scatter
//! (col2im): for each image, group and band of input rows,
//! `columns [og kh kw, rows w] = W^T x` on `gemm` (each input pixel's
//! contribution to every tap of every output channel, summed over the
//! group's input channels), then each column added at its output position
//! `(y s + i d - pad, x s + j d - pad)`, taps in row-major order, into the
//! zeroed output. Bands keep the columns within 8 MiB; the composed form
//! made a strided pass over the whole output per tap instead.

use super::storage::{CpuData, CpuStorage, Reads};
use crate::backend::ConvCall;
use crate::error::{Error, Result};

const OP: &str = "conv_transpose2d";

/// f32s a band's columns hold at the most (8 MiB).
const BAND: usize = 1 << 21;

/// Runs `call` (`input [n, c, h, w]`, `weight [c, o / groups, kh, kw]`,
/// `pad` the zeros cropped before each axis), whose fresh, zeroed, dense
/// `[n, o, ho, wo]` f32 output storage is `out`.
/// Its operands are locked here, on the calling thread, in address order
/// (see `matmul`).
pub(crate) fn conv_transpose(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    let (reads, mut dst) = Reads::lock_writing(OP, out, &[Some(&call.input), Some(&call.weight)])?;
    let (x, w) = (reads.of(OP, &call.input)?, reads.of(OP, &call.weight)?);
    let o: &mut CpuData = &mut dst;
    super::threads::install(|| conv_transpose_here(x, w, o, call))
}

/// [`conv_transpose`] of the locked operands on this thread (its products
/// and bands split over the current pool).
fn conv_transpose_here(x: &CpuData, w: &CpuData, o: &mut CpuData, call: &ConvCall) -> Result<()> {
    let (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) = (x, w, o) else {
        return Err(Error::internal(
            OP,
            "the CPU's transposed convolution takes f32",
        ));
    };
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let (xd, wd, od) = (xl.dims(), wl.dims(), ol.dims());
    let dense = ol.offset() == 0 && o.len() == ol.numel() && wl.is_contiguous();
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 || !dense {
        return Err(Error::internal(
            OP,
            "operands must be rank 4, the output fresh and the weight dense",
        ));
    }
    let [n, c, h, wi] = [xd[0], xd[1], xd[2], xd[3]];
    let [oc, ho, wo] = [od[1], od[2], od[3]];
    let [kh, kw] = call.kernel;
    let g = call.groups;
    let (cg, og) = (c / g, oc / g);
    let (rows, plane) = (og * kh * kw, ho * wo);
    if n == 0 || rows == 0 || h * wi == 0 || plane == 0 || cg == 0 {
        return Ok(());
    }
    let xs = xl.strides();
    // Input rows per band, the band's input as a dense `[cg, band w]`
    // matrix, and its columns.
    // In checked products: one input row's columns may pass the band (and,
    // on a 32-bit target, usize), where the scratch would be sliced short
    // of what the product below writes.
    let past = |factors: [usize; 3]| Error::TooLarge {
        op: OP,
        what: "scratch elements",
        requested: factors
            .iter()
            .fold(1u64, |p, &f| p.saturating_mul(f as u64)),
        limit: usize::MAX as u64,
    };
    let row_floats = |of: usize| of.checked_mul(wi).ok_or_else(|| past([of, wi, 1]));
    let band_rows = (BAND / row_floats(rows.max(cg))?).clamp(1, h);
    let scratch = |of: usize| -> Result<Vec<f32>> {
        let len = row_floats(of)?
            .checked_mul(band_rows)
            .ok_or_else(|| past([of, wi, band_rows]))?;
        super::alloc::try_zeroed(OP, len)
    };
    let (mut input, mut columns) = (scratch(cg)?, scratch(rows)?);
    let weights = w.get(wl.offset()..).unwrap_or_default();
    // What the products below read: every group's [cg, rows] weights, and
    // the output's channels and pixels.
    if wd != [c, og, kh, kw] || weights.len() < g * cg * rows || oc != g * og {
        return Err(Error::internal(
            OP,
            format!("weight {wd:?} is not [{c}, {og}, {kh}, {kw}] inside its storage"),
        ));
    }
    let bands = |gi| (0..h).step_by(band_rows).map(move |first| (gi, first));
    for (image, image_out) in o.chunks_mut(oc * plane).enumerate() {
        for (gi, first) in (0..g).flat_map(bands) {
            let band = band_rows.min(h - first);
            let pixels = band * wi;
            let (input, columns) = (&mut input[..cg * pixels], &mut columns[..rows * pixels]);
            for (ci, channel) in input.chunks_mut(pixels).enumerate() {
                for (y, row) in channel.chunks_mut(wi).enumerate() {
                    let base = xl.offset() as isize
                        + image as isize * xs[0]
                        + (gi * cg + ci) as isize * xs[1]
                        + (first + y) as isize * xs[2];
                    if xs[3] == 1 {
                        row.copy_from_slice(&x[base as usize..base as usize + wi]);
                    } else {
                        for (k, slot) in row.iter_mut().enumerate() {
                            *slot = x[(base + k as isize * xs[3]) as usize];
                        }
                    }
                }
            }
            // columns [rows, pixels] = weights^T [rows, cg] x input [cg,
            // pixels] (weight (gi cg + ci, r) is at (gi cg + ci) rows + r),
            // computed as its transpose, pixels as gemm's rows, as the
            // convolution's product is.
            // SAFETY: `columns` holds rows x pixels, `input` cg x pixels
            // (sliced so above), and the weights from `gi cg rows` on hold
            // cg x rows (checked above).
            unsafe {
                gemm::gemm(
                    pixels,
                    rows,
                    cg,
                    columns.as_mut_ptr(),
                    pixels as isize,
                    1,
                    false,
                    input.as_ptr(),
                    pixels as isize,
                    1,
                    weights.as_ptr().add(gi * cg * rows),
                    1,
                    rows as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    super::matmul::parallelism(),
                );
            }
            let group_out = &mut image_out[gi * og * plane..(gi + 1) * og * plane];
            scatter(columns, group_out, call, [first, band, wi], [ho, wo]);
        }
    }
    Ok(())
}

/// Adds each column of `columns` (`[og kh kw, band w]`, input rows
/// `first..first + band`) at its output position in `out` (`[og, ho,
/// wo]`), output channel by channel (on the op's threads on native
/// targets), taps in row-major order.
fn scatter(columns: &[f32], out: &mut [f32], call: &ConvCall, input: [usize; 3], size: [usize; 2]) {
    let [kh, kw] = call.kernel;
    let ([first, h, w], [ho, wo]) = (input, size);
    let (s, d, p) = (call.stride, call.dilation, call.pad);
    let taps = kh * kw;
    let one = |(channel, plane): (usize, &mut [f32])| {
        for t in 0..taps {
            let (i, j) = (t / kw, t % kw);
            let column = &columns[(channel * taps + t) * h * w..][..h * w];
            for y in 0..h {
                let oy = ((first + y) * s[0] + i * d[0]) as isize - p[0] as isize;
                if !(0..ho as isize).contains(&oy) {
                    continue;
                }
                let row = &mut plane[oy as usize * wo..][..wo];
                for x in 0..w {
                    let ox = (x * s[1] + j * d[1]) as isize - p[1] as isize;
                    if (0..wo as isize).contains(&ox) {
                        row[ox as usize] += column[y * w + x];
                    }
                }
            }
        }
    };
    super::threads::for_each_piece_mut(out, ho * wo, one);
}
