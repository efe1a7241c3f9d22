//! The CPU's convolution (all but depthwise) as products of register
//! tiles (`sgemm/`): the group's weights `[out, in * kh * kw]` are packed
//! once as panels of `mr` channels, and each tile of `mr` channels by `nr`
//! output pixels is summed in registers over every input channel and tap,
//! then finished where it is stored: the f32 bias added, a one-op
//! activation applied, the sum rounded once into the dtype. A tile's
//! pixels are read one of two ways:
//! - in place ([`in_place`]): a band of output rows copies the input rows
//!   it reads once (zero-padded, widened to f32, each row's columns split
//!   into the phases of the horizontal stride), so that each tap of a
//!   tile reads one run of the copy where it lies; or its tiles read the
//!   input itself where it needs no copy (unpadded f32 rows of unit
//!   stride, [`uncopied`]); at unit strides a band's rows may run as one
//!   (flat), its tiles crossing from one row into the next;
//! - packed ([`packed`]), for rows too short for whole panels: the
//!   patches of a band of output pixels are packed straight into panels
//!   of `nr` pixels (im2col into the layout the tile reads).
//!
//! Bands run on the current pool's threads, each copying into a scratch
//! buffer of its thread's. Each output is one f32 sum over the input
//! channels and taps in order (fused multiply-adds on x86), whatever the
//! thread count and the way its pixels were read: within the tolerance of
//! a convolution's definition, as a GPU's implicit GEMM is.

use super::host_vec::HostVec;
use super::numeric::Widen;
use super::sgemm::{self, Isa, MAX_TILE};
use super::storage::CpuStorage;
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

    /// The tiles' `B` rows at `offset(c, i, j)` for each row of the patch
    /// matrix, in its order: input channel `c` of the group, the tap's
    /// dilated row `i` and column `j` (its kernel index times the
    /// dilation).
    fn tap_rows(&self, isa: Isa, offset: impl Fn(usize, usize, usize) -> usize) -> sgemm::Rows {
        let ([kh, kw], [d0, d1]) = (self.kernel, self.dilation);
        let offsets = (0..self.depth())
            .map(|r| offset(r / (kh * kw), r / kw % kh * d0, r % kw * d1))
            .collect();
        sgemm::Rows::new(offsets, isa)
    }
}

/// Runs `call` into `out`, the storage of its dense row-major `[n, o, ho,
/// wo]` output: each image's groups as products of register tiles, its
/// bands on the op's threads.
///
/// # Errors
/// `Error::Internal` for an output that is not dense or a weight that is
/// not `[o, c / groups, kh, kw]`.
pub(super) fn images<T: Widen>(
    (x, w): (&[T], &[T]),
    (bias, storage): (Option<&[f32]>, &CpuStorage),
    out: &mut [T],
    call: &ConvCall,
) -> Result<()> {
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let (xd, od) = (xl.dims(), ol.dims());
    let dense = ol.offset() == 0 && out.len() == ol.numel();
    if xd.len() != 4 || od.len() != 4 || wl.rank() != 4 || !dense {
        return Err(Error::internal(
            OP,
            "convolution operands must be rank 4 and the output fresh",
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
    let og = o / s.groups;
    // Each group's weights `[og, depth]` as panels of mr channels, kept
    // with the weight's storage where at most half padding.
    let mr = isa.mr();
    let from = super::kept_weights::from(wl, s.groups, mr);
    let at = super::kept_weights::element(wl);
    let kept = super::kept_weights::packed(storage, from, og.div_ceil(mr) * mr <= 2 * og, || {
        (0..s.groups)
            .map(|g| sgemm::pack_a(OP, isa, (og, depth), |r, p| w[at(g * og + r, p)].to_f32()))
            .collect::<Result<Vec<_>>>()
    })?;
    let weights = &kept.packed;
    let store = Store {
        out: Shared(out.as_mut_ptr()),
        len: out.len(),
        bias,
        activate,
        act: sgemm::Act::of(call.activation),
        rows_after: call.activation.is_some() && sgemm::Act::of(call.activation).is_none(),
        o,
        og,
        plane,
        mr: isa.mr(),
        nr: isa.nr(),
    };
    let (wo, nr) = (s.out[2], isa.nr());
    // Rows of the input in place where the rows' panels waste at most a
    // quarter of their columns, or flat bands (unit strides, taps two or
    // more: a single tap's patches are packed no larger than its input)
    // whose columns past the outputs' waste at most a quarter, the one
    // that sums fewer columns a row; and where a band's copy of one output
    // row stays small (taps dilated far apart over a few outputs would
    // copy rows no output reads). Patches packed otherwise. Measured on a
    // 2-core Zen 5 VM: a 3x3 over 96 channels into 24 ran at 40x40 in
    // 0.35 ms flat against 0.71 packed, at 80x80 in 1.17 ms flat against
    // 1.31 in rows of three panels; a 1x1 over 160 channels into 480 at
    // 20x20 in 0.32 ms packed against 0.42 flat.
    let one_row = |width: usize| {
        (s.input[0] / s.groups)
            .saturating_mul(
                (s.kernel[0] - 1)
                    .saturating_mul(s.dilation[0])
                    .saturating_add(1),
            )
            .saturating_mul(width)
            .saturating_mul(4)
    };
    let panels = wo.div_ceil(nr).saturating_mul(nr);
    let rows = panels.saturating_mul(4) <= wo.saturating_mul(5)
        && one_row(s.stride[1].saturating_mul(row_phase(&s, nr))) <= IN_PLACE_MOST;
    let width = flat_width(&s);
    let flat = s.stride == [1, 1]
        && s.kernel[0] * s.kernel[1] > 1
        && width.saturating_mul(3) <= wo.saturating_mul(4)
        && one_row(width) <= IN_PLACE_MOST;
    if flat && (!rows || width < panels) {
        in_place(x, &s, isa, weights, &store, od[0], true);
    } else if rows {
        in_place(x, &s, isa, weights, &store, od[0], false);
    } else {
        // A band's panels hold depth x (at most BAND_PIXELS + nr) floats:
        // past usize on a 32-bit target, refused rather than wrapped.
        let most = s.depth().checked_mul(BAND_PIXELS + isa.nr());
        if most.is_none() {
            return Err(Error::TooLarge {
                op: OP,
                what: "patch panel elements",
                requested: (s.depth() as u64).saturating_mul((BAND_PIXELS + isa.nr()) as u64),
                limit: usize::MAX as u64,
            });
        }
        packed(x, &s, isa, weights, &store, od[0]);
    }
    Ok(())
}

/// Where and how a tile's sums are stored: into the dense output `[n, o,
/// ho, wo]` (`len` elements), each sum with its channel's bias added and
/// the activation applied, rounded once into the dtype.
struct Store<'a, T> {
    out: Shared<T>,
    len: usize,
    bias: Option<&'a [f32]>,
    activate: fn(&mut [f32]),
    /// The activation as the kernel applies it in registers, if it can.
    act: Option<sgemm::Act>,
    /// Whether a tile stored from registers still needs `activate` (an
    /// activation the kernel does not apply).
    rows_after: bool,
    /// Output channels, and those of a group; pixels of a plane.
    o: usize,
    og: usize,
    plane: usize,
    mr: usize,
    nr: usize,
}

impl<T: Widen> Store<'_, T> {
    /// Sums the tile of `a` and rows `rows` of `b` from `base` ([`sgemm::
    /// tile`]) and stores it as [`Store::put`] does; an f32 output straight
    /// from the kernel's registers where the kernel can.
    ///
    /// # Safety
    /// As [`Store::put`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile(
        &self,
        tile: &mut [f32; MAX_TILE],
        (a, b, base, rows): (&[f32], &[f32], usize, &sgemm::Rows),
        (image, g, t): (usize, usize, usize),
        pixel: usize,
        columns: usize,
    ) {
        if T::IS_F32 {
            let channel = image * self.o + g * self.og + t * self.mr;
            let n = self.mr.min(self.og - t * self.mr);
            let at = channel * self.plane + pixel;
            assert!(
                pixel + columns <= self.plane && at + (n - 1) * self.plane + columns <= self.len
            );
            // -0 for no bias: adding it keeps every sum as it is.
            let mut add = [-0.0f32; 8];
            if let Some(bias) = self.bias {
                let first = g * self.og + t * self.mr;
                add[..n].copy_from_slice(&bias[first..first + n]);
            }
            let dst = self.out.get().cast::<f32>().wrapping_add(at);
            // SAFETY: T is f32; rows `at + i plane .. + columns` are inside
            // the output (asserted) and the caller's alone to write.
            let stored = unsafe {
                let to = (dst, self.plane, columns);
                sgemm::tile_store(a, b, base, rows, to, (&add[..n], self.act))
            };
            if stored {
                if self.rows_after {
                    for i in 0..n {
                        // SAFETY: as above.
                        let row = unsafe {
                            std::slice::from_raw_parts_mut(dst.add(i * self.plane), columns)
                        };
                        (self.activate)(row);
                    }
                }
                return;
            }
        }
        sgemm::tile(a, b, base, rows, tile);
        // SAFETY: the caller's.
        unsafe { self.put(tile, (image, g, t), pixel, (0, columns)) };
    }

    /// Sums the tile of `a` and rows `rows` of `b` from `base` over
    /// virtual pixels `v..v + nr` of a flat band ([`in_place`]) and stores
    /// the outputs among them: virtual pixel `u < span` is output row
    /// `y0 + u / width`, column `u % width`, where that is below `wo` (the
    /// columns past it are no output's).
    ///
    /// # Safety
    /// As [`Store::put`], for the band's output rows.
    #[allow(clippy::too_many_arguments)]
    unsafe fn flat_tile(
        &self,
        tile: &mut [f32; MAX_TILE],
        from: (&[f32], &[f32], usize, &sgemm::Rows),
        (image, g, t): (usize, usize, usize),
        (y0, v, span): (usize, usize, usize),
        (width, wo): (usize, usize),
    ) {
        let end = (v + self.nr).min(span);
        let (r, x) = (v / width, v % width);
        if x < wo && (r + 1) * width >= end {
            // One run from the tile's first column: stored as a row's.
            let columns = end.min(r * width + wo) - v;
            // SAFETY: the caller's.
            unsafe { self.tile(tile, from, (image, g, t), (y0 + r) * wo + x, columns) };
            return;
        }
        let (a, b, base, rows) = from;
        sgemm::tile(a, b, base, rows, tile);
        let mut u = v;
        while u < end {
            let (r, x) = (u / width, u % width);
            if x >= wo {
                u = (r + 1) * width;
                continue;
            }
            let run = end.min(r * width + wo) - u;
            // SAFETY: the caller's.
            unsafe { self.put(tile, (image, g, t), (y0 + r) * wo + x, (u - v, run)) };
            u += run;
        }
    }

    /// Stores sums `from..from + columns` of each row of `tile`, the tile
    /// of channels `t mr..` of group `g` of `image`, at pixels `pixel..`.
    ///
    /// # Safety
    /// No other thread writes or reads those outputs meanwhile.
    unsafe fn put(
        &self,
        tile: &mut [f32; MAX_TILE],
        (image, g, t): (usize, usize, usize),
        pixel: usize,
        (from, columns): (usize, usize),
    ) {
        let channels = image * self.o + g * self.og;
        let rows = self.mr.min(self.og - t * self.mr);
        for (i, sums) in tile.chunks_mut(self.nr).take(rows).enumerate() {
            let channel = t * self.mr + i;
            let sums = &mut sums[from..from + columns];
            if let Some(b) = self.bias {
                let add = b[g * self.og + channel];
                sums.iter_mut().for_each(|v| *v += add);
            }
            (self.activate)(sums);
            let at = (channels + channel) * self.plane + pixel;
            assert!(pixel + columns <= self.plane && at + columns <= self.len);
            // SAFETY: inside the output (asserted), and no other thread
            // touches these outputs (the caller's promise).
            let row = unsafe { std::slice::from_raw_parts_mut(self.out.get().add(at), columns) };
            for (slot, &v) in row.iter_mut().zip(&*sums) {
                *slot = T::from_f32(v);
            }
        }
    }
}

/// Bands of pixels whose patches are packed as panels (short rows).
fn packed<T: Widen>(
    x: &[T],
    s: &Shape,
    isa: Isa,
    weights: &[HostVec<f32>],
    store: &Store<'_, T>,
    images: usize,
) {
    let (mr, nr, depth, plane) = (isa.mr(), isa.nr(), s.depth(), store.plane);
    // Pixels per band: whole panels, as many as BAND_BYTES holds but
    // BAND_PIXELS at the least; fewer where that leaves threads idle
    // (four bands a thread, a panel each at the least).
    let groups = s.groups;
    let wanted = (4 * super::threads::count()).div_ceil(images * groups);
    let band = (BAND_BYTES / 4 / depth)
        .max(BAND_PIXELS)
        .min(plane.div_ceil(wanted))
        .div_ceil(nr)
        * nr;
    let bands = plane.div_ceil(band);
    let rows = sgemm::Rows::packed(depth, isa);
    let job = |k: usize| {
        let (image, g, first) = (k / (groups * bands), k / bands % groups, k % bands * band);
        let pixels = band.min(plane - first);
        let mut patches = SCRATCH.take();
        patches.resize(patches.len().max(depth * pixels.div_ceil(nr) * nr), 0.0);
        pack_patches(
            x,
            &mut patches,
            s,
            image,
            g * (s.input[0] / groups),
            first,
            pixels,
            nr,
        );
        let mut tile = [0.0f32; MAX_TILE];
        for q in 0..pixels.div_ceil(nr) {
            let columns = nr.min(pixels - q * nr);
            for (t, a) in weights[g].chunks(depth * mr).enumerate() {
                let from = (a, &patches[..], q * depth * nr, &rows);
                // SAFETY: job k alone stores pixels first..first + pixels
                // of its image's and group's channels.
                unsafe { store.tile(&mut tile, from, (image, g, t), first + q * nr, columns) };
            }
        }
        SCRATCH.set(patches);
    };
    super::threads::for_each_index(images * groups * bands, job);
}

/// Bands of output rows over a zero-padded copy of the input rows they
/// read, `[c][r][b][q]` (every channel of the group, each row once, its
/// columns split into the phases `b` of the horizontal stride, widened to
/// f32, zeros past the input; [`copy_rows`]): a tile of `nr` pixels of an
/// output row reads, for each tap, one run of one phase of a copied row,
/// in place ([`sgemm::Rows`]). The copy is the input's size and a halo,
/// where packed patches repeat each input value once a tap.
///
/// A `flat` band (unit strides, where its rows waste fewer columns so than
/// in whole panels) copies rows [`flat_width`] long, the padded input's,
/// and runs its tiles along the band's rows as one: virtual pixel `u` is
/// row `u / width`, column `u % width`, and reads tap `(i, j)` at `u + i
/// width + j` of the copy; the columns past the outputs' are summed and
/// not stored.
#[allow(clippy::too_many_arguments)]
fn in_place<T: Widen>(
    x: &[T],
    s: &Shape,
    isa: Isa,
    weights: &[HostVec<f32>],
    store: &Store<'_, T>,
    images: usize,
    flat: bool,
) {
    let (mr, nr, depth) = (isa.mr(), isa.nr(), s.depth());
    let ([kh, _], [d0, _], [s0, s1]) = (s.kernel, s.dilation, s.stride);
    let (cg, ho, wo, groups) = (s.input[0] / s.groups, s.out[1], s.out[2], s.groups);
    let wq = if flat {
        flat_width(s)
    } else {
        row_phase(s, nr)
    };
    let width = s1 * wq;
    // Output rows per band: the copy about IN_PLACE_BYTES, four bands a
    // thread at the least.
    let reach = (kh - 1) * d0;
    let fit = (IN_PLACE_BYTES / 4 / (cg * width)).saturating_sub(reach + 1) / s0 + 1;
    let wanted = (4 * super::threads::count()).div_ceil(images * groups);
    let band = fit.min(ho.div_ceil(wanted)).max(1);
    let bands = ho.div_ceil(band);
    let copied = (band - 1) * s0 + reach + 1;
    let rows = s.tap_rows(isa, |c, i, j| {
        (c * copied + i) * width + j % s1 * wq + j / s1
    });
    let direct = T::as_f32s(x).and_then(|x| uncopied(x, s, isa, images, flat));
    let [sn, sc, sh, _] = s.strides.map(|v| v as usize);
    let job = |k: usize| {
        let (image, g, y0) = (k / (groups * bands), k / bands % groups, k % bands * band);
        // A flat band's virtual pixels.
        let span = (ho.min(y0 + band) - y0) * wq;
        let mut copy = SCRATCH.take();
        {
            // The rows a tile reads, and where output row y0's first tile
            // and each next row's read from (a step wrapping only where a
            // stride past the input leaves one output row, which takes
            // none: a stride of 2^63 overflowed).
            let (b, rows, first, step) = match &direct {
                Some((x, rows)) => {
                    let first = s.offset + image * sn + g * cg * sc + y0 * s0 * sh;
                    (*x, rows, first, s0.wrapping_mul(sh))
                }
                None => {
                    let len = cg * copied * width;
                    // A flat band's last tiles read past the copy, into
                    // values only columns past the outputs' take.
                    let past = if flat {
                        (span - 1) / nr * nr + rows.reach()
                    } else {
                        0
                    };
                    copy.resize(copy.len().max(len).max(past), 0.0);
                    let to = &mut copy[..len];
                    copy_rows(x, to, s, image, g * cg, y0 * s0, (copied, wq));
                    (&copy[..], &rows, 0, s0.wrapping_mul(width))
                }
            };
            let mut tile = [0.0f32; MAX_TILE];
            if flat {
                // About a row's tiles of one block of channels after
                // another, as a row band's.
                let run = wq.div_ceil(nr) * nr;
                for u in (0..span).step_by(run) {
                    for (t, a) in weights[g].chunks(depth * mr).enumerate() {
                        for v in (u..span.min(u + run)).step_by(nr) {
                            let from = (a, b, first + v, rows);
                            let at = (y0, v, span);
                            // SAFETY: job k alone stores rows y0..y0 +
                            // band of its image's and group's channels.
                            unsafe {
                                store.flat_tile(&mut tile, from, (image, g, t), at, (wq, wo))
                            };
                        }
                    }
                }
            } else {
                // A row's tiles of one block of channels after another:
                // each block's stores run along its channels' rows.
                for y in y0..ho.min(y0 + band) {
                    for (t, a) in weights[g].chunks(depth * mr).enumerate() {
                        for x0 in (0..wo).step_by(nr) {
                            let from = (a, b, first + (y - y0) * step + x0, rows);
                            let (pixel, columns) = (y * wo + x0, nr.min(wo - x0));
                            // SAFETY: job k alone stores rows y0..y0 + band
                            // of its image's and group's channels.
                            unsafe { store.tile(&mut tile, from, (image, g, t), pixel, columns) };
                        }
                    }
                }
            }
        }
        SCRATCH.set(copy);
    };
    super::threads::for_each_index(images * groups * bands, job);
}

/// The length of a phase of a row [`in_place`] copies: every panel of
/// `nr` outputs of a row reads inside it, at each tap.
fn row_phase(s: &Shape, nr: usize) -> usize {
    let reach = (s.kernel[1] - 1).saturating_mul(s.dilation[1]) / s.stride[1];
    (s.out[2].div_ceil(nr) * nr).saturating_add(reach)
}

/// The length of a row a `flat` [`in_place`] band copies: the padded
/// input's, where the last output column's last tap lies.
fn flat_width(s: &Shape) -> usize {
    let reach = (s.kernel[1] - 1).saturating_mul(s.dilation[1]);
    s.out[2].saturating_mul(s.stride[1]).saturating_add(reach)
}

/// The input's own rows for [`in_place`]'s tiles, where they need no copy:
/// f32 rows of unit stride, no padding, the strides not negative, and
/// every tile's reads (a last panel's past its row's end included) inside
/// the input; for `flat` bands, rows one after another (a row's stride its
/// length).
fn uncopied<'x>(
    x: &'x [f32],
    s: &Shape,
    isa: Isa,
    images: usize,
    flat: bool,
) -> Option<(&'x [f32], sgemm::Rows)> {
    if s.pad != [0, 0] || s.stride[1] != 1 || s.strides[3] != 1 || s.strides.iter().any(|&v| v < 0)
    {
        return None;
    }
    // Nor padding after the input (`same` pads an even kernel after it
    // only): the last output's taps lie inside the input.
    let inside = (0..2).all(|a| {
        (s.out[1 + a] - 1) * s.stride[a] + (s.kernel[a] - 1) * s.dilation[a] < s.input[1 + a]
    });
    if !inside {
        return None;
    }
    if flat && s.strides[2] as usize != flat_width(s) {
        return None;
    }
    let nr = isa.nr();
    let [sn, sc, sh, _] = s.strides.map(|v| v as usize);
    let cg = s.input[0] / s.groups;
    let rows = s.tap_rows(isa, |c, i, j| c * sc + i * sh + j);
    // The last tile's base: the last image, group, row and panel (a flat
    // band's: its last virtual pixel at the most).
    let [ho, wo] = [s.out[1], s.out[2]];
    let within = if flat {
        ho * sh - 1
    } else {
        (ho - 1) * s.stride[0] * sh + (wo - 1) / nr * nr
    };
    let last = s.offset + (images - 1) * sn + (s.groups - 1) * cg * sc + within;
    (last + rows.reach() <= x.len()).then_some((x, rows))
}

/// Copies padded input rows `top..top + copied` of channels `channel..
/// channel + cg` of `image` into `copy`, `[c][r][b][q]`: row `r` is input
/// row `r - pad0`, and its phase `b < s1` (a horizontal stride's) `wq`
/// long, column `q` input column `q s1 + b - pad1`, zeros outside the
/// input. Every element written.
#[allow(clippy::too_many_arguments)]
fn copy_rows<T: Widen>(
    x: &[T],
    copy: &mut [f32],
    s: &Shape,
    image: usize,
    channel: usize,
    top: usize,
    (copied, wq): (usize, usize),
) {
    let (h, wd, s1) = (s.input[1] as isize, s.input[2] as isize, s.stride[1]);
    let [pad0, pad1] = s.pad;
    let step = s1 as isize * s.strides[3];
    for (n, row) in copy.chunks_mut(wq).enumerate() {
        let (c, r, b) = (n / (s1 * copied), n / s1 % copied, n % s1);
        let y = (top + r) as isize - pad0 as isize;
        // Columns q inside the input: 0 <= q s1 + shift < wd.
        let shift = b as isize - pad1 as isize;
        let lo = ((-shift).max(0) as usize).div_ceil(s1).min(wq);
        let hi = ((wd - shift).max(0) as usize).div_ceil(s1).clamp(lo, wq);
        if !(0..h).contains(&y) || lo == hi {
            row.fill(0.0);
            continue;
        }
        row[..lo].fill(0.0);
        row[hi..].fill(0.0);
        let start = s.offset as isize
            + image as isize * s.strides[0]
            + (channel + c) as isize * s.strides[1]
            + y * s.strides[2]
            + (lo as isize * s1 as isize + shift) * s.strides[3];
        let run = &mut row[lo..hi];
        if step == 1 {
            let from = &x[start as usize..start as usize + run.len()];
            for (slot, v) in run.iter_mut().zip(from) {
                *slot = v.to_f32();
            }
        } else {
            for (q, slot) in run.iter_mut().enumerate() {
                *slot = x[(start + q as isize * step) as usize].to_f32();
            }
        }
    }
}

/// Bytes of input rows [`in_place`] copies a band (unless one output row
/// needs more): what a core's L2 cache keeps while the band's tiles read
/// them.
const IN_PLACE_BYTES: usize = 1 << 20;

/// The most bytes [`in_place`] copies for one output row; patches are
/// packed past it.
const IN_PLACE_MOST: usize = 16 << 20;

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
