//! The CPU's convolution (all but depthwise) into a channels-last output:
//! tiles of [`PIXELS`] output pixels by [`CHANNELS`] output channels, or
//! of [`NARROW_PIXELS`] by 16 for a panel of 16 channels or fewer
//! (`sgemm::pixel_tile`), each pixel's patch read where it lies; on
//! AVX-512 an f32 output's whole tiles along a row (or a band whose rows
//! follow each other) run in one call (`sgemm::pixel_run_store`). The input
//! is read in place where its channels lie side by side and nothing needs
//! padding (f32; a 1x1 convolution of a channels-last image is a product
//! over its pixels as they are), else through a band's copy of the input
//! rows it reads (zero-padded, widened to f32, channels-last). The
//! group's weights are packed once as panels of [`CHANNELS`] output
//! channels. A group of 8 or 24 f32 channels from a copy runs in pairs of
//! pixels instead (`sgemm::pair_run_store`): the copy then holds each
//! value of two pixels side by side, and a group's one panel each
//! channel's weight twice.
//!
//! Each output is the one f32 sum the convolution over planes makes
//! (`conv_gemm.rs`): over the input channels and taps in the same order,
//! on the same arithmetic, its bias added, a one-op activation applied,
//! rounded once into the dtype; so a channels-last image's outputs are
//! bit for bit an NCHW image's. An f32 residual (`Conv::residual`) is
//! added to each biased sum before the activation, as a following `add`
//! would.

use super::conv_bands::{Input, copy_pairs, copy_rows};
use super::host_vec::HostVec;
use super::numeric::Widen;
use super::sgemm::{
    self, CHANNELS, Isa, NARROW_PIXELS, PIXELS, PairOut, PairRun, PixelRows, PixelRun, PixelSums,
    Steps,
};
use super::storage::CpuStorage;
use super::strided::Shared;
use crate::backend::ConvCall;
use crate::error::{Error, Result};
use crate::layout::Layout;

const OP: &str = "conv2d";

/// Bytes of input rows a band copies (unless one output row needs more):
/// what a core's L2 cache keeps while the band's tiles read them.
const BAND_BYTES: usize = 512 << 10;

/// Pixels of a run at most: its inputs (`depth` floats a pixel), read
/// again for each panel, stay in a core's L1 cache.
const RUN_PIXELS: usize = 128;

/// Everything a band needs of the call.
struct Geometry {
    /// Input `[c, h, w]`, strides `[n, c, h, w]` and offset.
    input: [usize; 3],
    strides: [isize; 4],
    offset: usize,
    /// Output `[n, o, ho, wo]`.
    out: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

impl Geometry {
    /// Input channels of a group.
    fn cg(&self) -> usize {
        self.input[0] / self.groups
    }

    /// Whether every tap of every output lies inside the input, with no
    /// padding before it: the call's padding after the input (the
    /// output's size implies it) is none either.
    fn inside(&self) -> bool {
        (0..2).all(|a| {
            let reach =
                (self.out[2 + a] - 1) * self.stride[a] + (self.kernel[a] - 1) * self.dilation[a];
            self.pad[a] == 0 && reach < self.input[1 + a]
        })
    }

    /// Steps of a group's patch: its input channels times the taps.
    fn depth(&self) -> usize {
        self.cg() * self.kernel[0] * self.kernel[1]
    }

    /// Where each step of a patch lies from the patch's first element,
    /// in the order of the convolution over planes (input channel, tap
    /// row, tap column): a channel `channel` apart, a tap row `row` and a
    /// tap column `column` apart times the dilation.
    fn steps(&self, channel: usize, row: usize, column: usize) -> Steps {
        let ([kh, kw], [d0, d1]) = (self.kernel, self.dilation);
        Steps::new(
            (0..self.depth())
                .map(|p| {
                    let (c, i, j) = (p / (kh * kw), p / kw % kh, p % kw);
                    c * channel + i * d0 * row + j * d1 * column
                })
                .collect(),
        )
    }
}

/// A call's f32 operands added to its sums: a bias per output channel
/// (from its view's first element) and a residual.
#[derive(Clone, Copy)]
pub(super) struct Extras<'a> {
    pub(super) bias: Option<&'a [f32]>,
    pub(super) residual: Option<ResidualAt<'a>>,
    /// The weight's storage, locked for reading: its packed panels are
    /// kept there for the next call (`kept_weights.rs`).
    pub(super) weights: &'a CpuStorage,
}

/// Where a call's residual (of the output's dims and strides) lies.
#[derive(Clone, Copy)]
pub(super) enum ResidualAt<'a> {
    /// A tensor's values, from its view's first element: output index `k`
    /// adds value `k`.
    Values(&'a [f32]),
    /// The f32 output's own: each sum adds the value it replaces.
    Output,
}

/// Whether a convolution's fresh `out`put is channels-last for its
/// kernels: of two or more channels (one channel's planes are its
/// pixels), and, where an output of one pixel an image is both layouts,
/// following its `input`.
pub(crate) fn channels_last_out(out: &Layout, input: &Layout) -> bool {
    out.rank() == 4
        && out.dims()[1] > 1
        && out.is_channels_last()
        && (!out.is_contiguous() || input.has_channels_innermost())
}

/// Whether `out` is a channels-last output with rows apart: its `[n, o,
/// h, w]` channels side by side and pixels along a row one after another,
/// each row and image at least as far from the last as it is long (a
/// transposed convolution writes each tap row's columns straight into
/// every `kh`-th row of its output so).
pub(crate) fn pitched_out(out: &Layout) -> bool {
    let (d, s) = (out.dims(), out.strides());
    out.rank() == 4
        && d[1] > 1
        && out.numel() > 0
        && s[1] == 1
        && s[3] == d[1] as isize
        && s[2] >= (d[3] * d[1]) as isize
        && s[0] >= d[2] as isize * s[2]
}

/// Runs `call` into `out`, the channels-last storage of its `[n, o,
/// ho, wo]` output: every image's bands of output rows on the op's
/// threads.
pub(super) fn images<T: Widen>(
    x: &[T],
    w: &[T],
    Extras {
        bias,
        residual,
        weights,
    }: Extras<'_>,
    out: &mut [T],
    call: &ConvCall,
) -> Result<()> {
    let (xl, wl, ol) = (&call.input.layout, &call.weight.layout, &call.out.layout);
    let (xd, od) = (xl.dims(), ol.dims());
    // Dense, or rows apart (`pitched_out`): each row's pixels side by
    // side, the last element inside the storage.
    let dense = ol.offset() == 0 && out.len() == ol.numel() && ol.is_channels_last();
    let pitched = pitched_out(ol)
        && ol.strides()[0] as usize * (od[0] - 1)
            + ol.strides()[2] as usize * (od[2] - 1)
            + od[3] * od[1]
            + ol.offset()
            <= out.len();
    if xd.len() != 4 || wl.rank() != 4 || !(dense || pitched) {
        return Err(Error::internal(
            OP,
            "a channels-last convolution's output must be dense or rows apart, and its weight \
             rank 4",
        ));
    }
    // Where output pixel (image, y, x) starts: `offset + image pitch.image
    // + y pitch.row + x o` (`Store::at`).
    let pitch = if dense {
        Pitch {
            offset: 0,
            row: od[3] * od[1],
            image: od[2] * od[3] * od[1],
        }
    } else {
        Pitch {
            offset: ol.offset(),
            row: ol.strides()[2] as usize,
            image: ol.strides()[0] as usize,
        }
    };
    if residual.is_some() && !dense {
        return Err(Error::internal(
            OP,
            "a residual is added only into a dense channels-last output",
        ));
    }
    let g = Geometry {
        input: [xd[1], xd[2], xd[3]],
        strides: [0, 1, 2, 3].map(|a| xl.strides()[a]),
        offset: xl.offset(),
        out: [od[0], od[1], od[2], od[3]],
        kernel: call.kernel,
        stride: call.stride,
        pad: call.pad,
        dilation: call.dilation,
        groups: call.groups,
    };
    let [n, o, ho, wo] = g.out;
    if bias.is_some_and(|b| b.len() < o) {
        return Err(Error::internal(
            OP,
            "the bias holds fewer values than channels",
        ));
    }
    if n * ho * wo == 0 || o == 0 {
        return Ok(());
    }
    let activate = super::elementwise::activation_rows(call.activation)?;
    let (depth, og) = (g.depth(), o / g.groups);
    if depth == 0 {
        if !dense {
            return Err(Error::internal(
                OP,
                "a convolution of no input channels writes a dense output",
            ));
        }
        // No input channels: each output is its activated bias.
        for (k, v) in out.iter_mut().enumerate() {
            let mut sum = [bias.map_or(0.0, |b| b[k % o])];
            match residual {
                Some(ResidualAt::Values(r)) => sum[0] += r[k],
                Some(ResidualAt::Output) => sum[0] += v.to_f32(),
                None => {}
            }
            activate(&mut sum);
            *v = T::from_f32(sum[0]);
        }
        return Ok(());
    }
    let isa = Isa::best();
    // In place: f32 channels side by side, no padding before or after
    // (`same` pads an even kernel after the image only), no negative
    // stride (the channels of a single-channel image need no stride).
    let in_place = T::as_f32s(x).filter(|_| {
        g.pad == [0, 0]
            && g.inside()
            && (g.strides[1] == 1 || g.input[0] == 1)
            && g.strides.iter().all(|&s| s >= 0)
    });
    // Pairs of pixels (`sgemm::pair_run_store`, `V` vectors a pair): a
    // group of 8 or 24 channels read from a copy (the pairs' copy costs
    // what the plain one does) into f32, each row a tile of pairs at
    // least.
    let paired = match og {
        8 => Some(1),
        24 => Some(3),
        _ => None,
    }
    .filter(|&v| {
        in_place.is_none() && T::IS_F32 && isa.stores_pair_runs() && wo.div_ceil(2) >= pair_tile(v)
    });
    // Each group's weights as panels of CHANNELS output channels, `[p][j]`,
    // zeros past the group's last channel (for pairs one panel a group,
    // each channel's weight twice, `[p][2 j]` and `[p][2 j + 1]`): packed
    // once for the weight's data as it is and kept with its storage (a
    // network's every pass packed all its weights again: more than half of
    // the squeeze-excite's 480 -> 128 on one pixel), but where the panels
    // would be more than half padding (unpaired groups of fewer than 16
    // channels), which are packed for the call alone. Kept panels are f32
    // and live as long as the weight's storage, or to the next write to it
    // and convolution.
    let panels = og.div_ceil(CHANNELS);
    let (width, lanes) = paired.map_or((CHANNELS, 1), |v| (16 * v, 2));
    let from = super::kept_weights::from(wl, g.groups, width);
    let at = super::kept_weights::element(wl);
    // On a cache line: each step's two 64-byte loads of a panel row, from
    // a block of the system allocator's 16 bytes past one, straddled two
    // lines (a 3x3 convolution 96 -> 24 channels at 160x160 on a Xeon:
    // 8.56 -> 7.5 ms).
    let pack = || {
        let mut packed = HostVec::<f32>::try_zeroed(OP, g.groups * panels * depth * width)?;
        for (k, panel) in packed.chunks_mut(depth * width).enumerate() {
            let (group, q) = (k / panels, k % panels);
            for col in 0..width {
                let j = q * CHANNELS + col / lanes;
                if j >= og {
                    break;
                }
                for p in 0..depth {
                    panel[p * width + col] = w[at(group * og + j, p)].to_f32();
                }
            }
        }
        Ok(packed)
    };
    let keep = paired.is_some() || panels * CHANNELS <= 2 * og;
    let kept = super::kept_weights::packed(weights, from, keep, pack)?;
    // -0 for no bias: adding it keeps every sum as it is.
    let biases: Vec<f32> = (0..g.groups * panels * CHANNELS)
        .map(|k| {
            let (group, j) = (k / (panels * CHANNELS), k % (panels * CHANNELS));
            match bias {
                Some(b) if j < og => b[group * og + j],
                _ => -0.0,
            }
        })
        .collect();
    let store = Store {
        out: Shared(out.as_mut_ptr()),
        len: out.len(),
        pitch,
        packed: &kept.packed,
        biases: &biases,
        has_bias: bias.is_some(),
        residual,
        activate,
        act: sgemm::Act::of(call.activation),
        rows_after: call.activation.is_some() && sgemm::Act::of(call.activation).is_none(),
        o,
        og,
        depth,
    };
    if let Some(x) = in_place {
        let [sn, _, sh, sw] = g.strides.map(|s| s as usize);
        let steps = g.steps(1, sh, sw);
        // Bands of rows enough for four a thread.
        let band = ho
            .div_ceil((4 * super::threads::count()).div_ceil(n))
            .max(1);
        let bands = ho.div_ceil(band);
        super::threads::for_each_index(n * bands, |k| {
            let (image, y0) = (k / bands, k % bands * band);
            let y1 = ho.min(y0 + band);
            let at = |y: usize, x: usize| {
                g.offset + image * sn + y * g.stride[0] * sh + x * g.stride[1] * sw
            };
            let a = (x, &steps);
            // SAFETY: job k alone writes output rows y0..y1 of its image.
            unsafe { store.band(isa, a, at, (image, y0, y1), wo, g.cg()) };
        });
        return Ok(());
    }
    let ([kh, kw], [d0, d1], [s0, s1]) = (g.kernel, g.dilation, g.stride);
    let c = g.input[0];
    // A copied row: the padded columns the outputs read, each pixel's
    // channels side by side; for pairs, those of the pairs' first pixels,
    // each channel's value beside the second pixel's (`half` columns on).
    let pairs = wo.div_ceil(2);
    let wq = (paired.map_or(wo, |_| pairs) - 1) * s1 + (kw - 1) * d1 + 1;
    let row = wq * c * lanes;
    let steps = g.steps(lanes, row, c * lanes);
    let halo = (kh - 1) * d0 + 1;
    let fit = (BAND_BYTES / 4 / row).saturating_sub(halo) / s0 + 1;
    let band = fit
        .min(ho.div_ceil((4 * super::threads::count()).div_ceil(n)))
        .max(1);
    let bands = ho.div_ceil(band);
    let input = Input {
        x,
        dims: g.input,
        strides: g.strides,
        offset: g.offset,
        pad: g.pad,
    };
    super::threads::for_each_index(n * bands, |k| {
        let (image, y0) = (k / bands, k % bands * band);
        let y1 = ho.min(y0 + band);
        let rows = (y1 - y0 - 1) * s0 + halo;
        let mut copy = SCRATCH.take();
        copy.resize(rows * row, 0.0);
        let (to, top) = (&mut copy[..rows * row], y0 * s0);
        let at = |y: usize, x: usize| (y - y0) * s0 * row + x * s1 * c * lanes;
        let rows = (image, y0, y1);
        // SAFETY: (both) job k alone writes output rows y0..y1 of its
        // image.
        match paired {
            Some(v) => {
                copy_pairs(&input, to, image, top, (wq, pairs * s1));
                let a = (&copy[..], &steps);
                unsafe { store.pairs(v, isa, a, at, rows, wo, g.cg()) };
            }
            None => {
                copy_rows(&input, to, image, top, wq);
                let a = (&copy[..], &steps);
                unsafe { store.band(isa, a, at, rows, wo, g.cg()) };
            }
        }
        SCRATCH.set(copy);
    });
    Ok(())
}

/// Pairs of a paired tile: 16 of 8 channels (one vector each), 8 of 24
/// (three).
const fn pair_tile(v: usize) -> usize {
    if v == 1 { 16 } else { 8 }
}

/// Where an output's pixels lie in its storage: pixel `(image, y, x)`'s
/// channels from `offset + image image + y row + x o`.
#[derive(Clone, Copy)]
struct Pitch {
    offset: usize,
    row: usize,
    image: usize,
}

/// Where and how a tile's sums are stored: into the channels-last output
/// (`len` elements, `o` channels a pixel, rows `pitch` apart), each sum
/// with its channel's bias added, the residual (where there is one) and
/// the activation applied, rounded once into the dtype.
struct Store<'a, T> {
    out: Shared<T>,
    len: usize,
    pitch: Pitch,
    /// Each group's weight panels, `[group][q][p][j]` (paired:
    /// `[group][p][2 j + lane]`, one panel a group), and their biases
    /// `[group][q][j]` (-0 where there is none).
    packed: &'a [f32],
    biases: &'a [f32],
    has_bias: bool,
    /// Added to each biased sum before the activation, at the output's
    /// index (its dims and strides are the output's).
    residual: Option<ResidualAt<'a>>,
    activate: fn(&mut [f32]),
    /// The activation as the kernel applies it in registers, if it can.
    act: Option<sgemm::Act>,
    /// Whether a tile stored from registers still needs `activate`.
    rows_after: bool,
    o: usize,
    og: usize,
    depth: usize,
}

impl<T: Widen> Store<'_, T> {
    /// Sums and stores output rows `y0..y1` of `image` (each `wo`
    /// pixels) along the band: runs of whole groups of [`NARROW_PIXELS`]
    /// pixels along a row (or across rows where the band is flat and the
    /// output dense), up to [`RUN_PIXELS`], in one kernel call a panel
    /// (f32 on AVX-512), else groups of [`NARROW_PIXELS`] pixels that may
    /// cross from one row into the next where the output is dense.
    /// Pixel `(y, x)`'s patch in group `g` starts at `a[at(y, x) + g
    /// cg]`, its steps `steps` after it (`at` grows by the same pitch
    /// from one pixel of a row to the next, and by the same from one
    /// row to the next). A panel of 16 output channels or fewer takes
    /// narrow tiles (16 pixels by 16), a wider one wide tiles (8 by
    /// 32).
    ///
    /// # Safety
    /// No other thread reads or writes those output rows meanwhile.
    unsafe fn band(
        &self,
        isa: Isa,
        (a, steps): (&[f32], &Steps),
        at: impl Fn(usize, usize) -> usize,
        (image, y0, y1): (usize, usize, usize),
        wo: usize,
        cg: usize,
    ) {
        let pixels = (y1 - y0) * wo;
        // Output pixel u of the band (`y0 + u / wo`, `u % wo`) starts at
        // `self.at(image, ..)`; pixels of one row are `o` apart, and rows
        // too where the output is dense.
        let dense = self.pitch.row == wo * self.o;
        let panels = self.og.div_ceil(CHANNELS);
        let groups = self.o / self.og;
        let mut wide: PixelSums<PIXELS> = [[0.0; CHANNELS]; PIXELS];
        let mut narrow: PixelSums<NARROW_PIXELS> = [[0.0; CHANNELS]; NARROW_PIXELS];
        let mut bases = [0; NARROW_PIXELS];
        // Whether a panel is narrow (the last, of 16 channels or fewer)
        // and whether one is wide.
        let narrow_too = self.og - (panels - 1) * CHANNELS <= 16;
        let wide_too = self.og > 16;
        // A pixel's patch lies `pitch` after its left neighbour's; `flat`:
        // and each row's first a pitch after the row above's last.
        let lead = at(y0, 0);
        let pitch = if wo > 1 { at(y0, 1) - lead } else { 0 };
        let flat = y1 - y0 == 1 || (dense && at(y0 + 1, 0) == lead + wo * pitch);
        let runs = T::IS_F32 && isa.stores_pixel_runs();
        let mut u = 0;
        while u < pixels {
            let (y, x) = (y0 + u / wo, u % wo);
            // Whole tile groups along the row (the band, where flat): one
            // run a panel, at most RUN_PIXELS (the run's inputs stay in
            // the L1 cache from one panel to the next).
            let left = if flat { pixels - u } else { wo - x };
            let run = (left / NARROW_PIXELS * NARROW_PIXELS).min(RUN_PIXELS);
            if runs && run > 0 {
                let mut rows = PixelRun::new(a, (at(y, x), pitch, run), steps);
                for group in 0..groups {
                    rows.shift = group * cg;
                    for q in 0..panels {
                        // SAFETY: the band's pixels are the caller's.
                        unsafe { self.run(isa, &rows, self.at(image, y, x), (group, q)) };
                    }
                }
                u += run;
                continue;
            }
            // A group of 16 pixels at most, crossing into the next rows
            // where the output's rows follow each other.
            let n = NARROW_PIXELS.min(if dense { pixels - u } else { wo - x });
            let mut base = at(y, x);
            let mut next = (y, x);
            for slot in &mut bases[..n] {
                *slot = base;
                next.1 += 1;
                base += pitch;
                if next.1 == wo {
                    next = (next.0 + 1, 0);
                    if next.0 < y1 {
                        base = at(next.0, 0);
                    }
                }
            }
            // Rows past the band's last pixel read the group's first
            // pixel's patch (and are not stored).
            let lead = bases[0];
            bases[n..].fill(lead);
            // The group's rows: all 16 (narrow), or 8 and 8 (wide), each
            // set where a panel takes it.
            let (low, high) = bases.split_at(PIXELS);
            let mut all = narrow_too.then(|| PixelRows::new(a, &bases, steps));
            let mut halves = wide_too.then(|| {
                [low, high]
                    .map(|h| PixelRows::new(a, h.try_into().expect("half of a tile group"), steps))
            });
            for group in 0..groups {
                all.iter_mut().for_each(|h| h.shift = group * cg);
                halves
                    .iter_mut()
                    .flatten()
                    .for_each(|h| h.shift = group * cg);
                for q in 0..panels {
                    let (b, bias, channel, columns) = self.panel(group, q);
                    let start = self.at(image, y, x) + channel;
                    assert!(start + (n - 1) * self.o + columns <= self.len);
                    // SAFETY: (for every store) the group's n pixels from
                    // `start` on, `o` apart (one row where the output is
                    // not dense), channels `channel..+ columns`, are inside
                    // the output (asserted) and the caller's alone to write.
                    unsafe {
                        if columns <= 16 {
                            let all = all.as_ref().expect("a narrow panel's rows");
                            let to = (start, n, columns);
                            self.tile::<NARROW_PIXELS, 1>(isa, (all, b), &mut narrow, to, bias);
                            continue;
                        }
                        let halves = halves.as_ref().expect("a wide panel's rows");
                        for (h, half) in halves.iter().enumerate().take(n.div_ceil(PIXELS)) {
                            let to = (
                                start + h * PIXELS * self.o,
                                PIXELS.min(n - h * PIXELS),
                                columns,
                            );
                            self.tile::<PIXELS, 2>(isa, (half, b), &mut wide, to, bias);
                        }
                    }
                }
            }
            u += n;
        }
    }

    /// Where output pixel `(image, y, x)`'s channels start in the storage.
    fn at(&self, image: usize, y: usize, x: usize) -> usize {
        self.pitch.offset + image * self.pitch.image + y * self.pitch.row + x * self.o
    }

    /// Adds the residual's values from output index `at` on to the biased
    /// sums `row`, then applies the activation: the rows a kernel did not
    /// finish as it stored them.
    ///
    /// # Safety
    /// As [`Store::band`], for outputs `at..at + row.len()`, which hold
    /// the residual where it is the output's (not yet stored over).
    unsafe fn finish(&self, row: &mut [f32], at: usize) {
        let residual = match self.residual {
            Some(ResidualAt::Values(r)) => Some(&r[at..at + row.len()]),
            Some(ResidualAt::Output) => {
                assert!(T::IS_F32 && at + row.len() <= self.len);
                // SAFETY: T is f32; the outputs are inside the storage
                // (asserted) and the caller's, and no reference to them
                // is held meanwhile.
                Some(unsafe {
                    std::slice::from_raw_parts(self.out.get().cast::<f32>().add(at), row.len())
                })
            }
            None => None,
        };
        if let Some(r) = residual {
            row.iter_mut().zip(r).for_each(|(v, r)| *v += r);
        }
        (self.activate)(row);
    }

    /// Group `group`'s panel `q`: its packed weights, its biases, its first
    /// output channel and its channels.
    fn panel(&self, group: usize, q: usize) -> (&[f32], &[f32; CHANNELS], usize, usize) {
        let k = group * self.og.div_ceil(CHANNELS) + q;
        let panel = self.depth * CHANNELS;
        let b = &self.packed[k * panel..(k + 1) * panel];
        let bias = self.biases[k * CHANNELS..][..CHANNELS]
            .try_into()
            .expect("a panel's biases");
        let columns = CHANNELS.min(self.og - q * CHANNELS);
        (b, bias, group * self.og + q * CHANNELS, columns)
    }

    /// The run `rows` of whole tile groups through group `group`'s panel
    /// `q` into the output pixels from storage index `pixel` on, `o` apart
    /// (f32, a kernel that stores runs).
    ///
    /// # Safety
    /// As [`Store::band`], for those outputs.
    unsafe fn run(&self, isa: Isa, rows: &PixelRun<'_>, pixel: usize, (group, q): (usize, usize)) {
        let (b, bias, channel, columns) = self.panel(group, q);
        let n = rows.pixels();
        let start = pixel + channel;
        assert!(T::IS_F32 && start + (n - 1) * self.o + columns <= self.len);
        let dst = self.out.get().cast::<f32>().wrapping_add(start);
        let act = if self.rows_after { None } else { self.act };
        let residual = self.residual_from(start, dst);
        let to = (dst, self.o, columns);
        // SAFETY: T is f32; pixels `pixel..+ n` of channels `channel..+
        // columns` are inside the output (asserted) and the caller's; the
        // residual holds as many values (asserted) at the same indices.
        let stored = unsafe {
            if columns <= 16 {
                sgemm::pixel_run_store::<NARROW_PIXELS, 1>(isa, rows, b, to, (bias, act, residual))
            } else {
                sgemm::pixel_run_store::<PIXELS, 2>(isa, rows, b, to, (bias, act, residual))
            }
        };
        assert!(stored, "conv2d: {isa:?} stores no pixel runs");
        // SAFETY: as above.
        unsafe { self.after(dst, n, columns) };
    }

    /// The residual's values at the outputs' indices from `start` (whose
    /// output is at `dst`), for a kernel to add: each output read before
    /// it is stored over, where it is the residual.
    fn residual_from(&self, start: usize, dst: *mut f32) -> Option<*const f32> {
        self.residual.map(|r| match r {
            ResidualAt::Values(r) => {
                assert!(
                    r.len() >= self.len,
                    "conv2d: a residual shorter than the output"
                );
                r[start..].as_ptr()
            }
            ResidualAt::Output => dst.cast_const(),
        })
    }

    /// The activation a kernel did not apply (`rows_after`), over `n`
    /// pixels' `columns` f32 outputs from `dst`, `o` apart.
    ///
    /// # Safety
    /// As [`Store::band`], for those outputs, which a kernel stored.
    unsafe fn after(&self, dst: *mut f32, n: usize, columns: usize) {
        if self.rows_after {
            for i in 0..n {
                // SAFETY: the caller's.
                let row = unsafe { std::slice::from_raw_parts_mut(dst.add(i * self.o), columns) };
                (self.activate)(row);
            }
        }
    }

    /// [`Store::band`] for a paired panel of `V = v` vectors: each output
    /// row's pixels `x` and `x + wo.div_ceil(2)` as a pair, row `y`'s pair
    /// `r`'s patch (the copy's `[ch][2]` for both) in group `g` from `a[at(y,
    /// r) + 2 g cg]`.
    ///
    /// # Safety
    /// As [`Store::band`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn pairs(
        &self,
        v: usize,
        isa: Isa,
        (a, steps): (&[f32], &Steps),
        at: impl Fn(usize, usize) -> usize,
        (image, y0, y1): (usize, usize, usize),
        wo: usize,
        cg: usize,
    ) {
        let pairs = wo.div_ceil(2);
        let (width, panel) = (16 * v, 16 * v * self.depth);
        let pitch = if pairs > 1 { at(y0, 1) - at(y0, 0) } else { 0 };
        let act = if self.rows_after { None } else { self.act };
        for y in y0..y1 {
            let mut run = PairRun::new(a, (at(y, 0), pitch, pairs), steps);
            for group in 0..self.o / self.og {
                run.shift = 2 * group * cg;
                let b = &self.packed[group * panel..][..panel];
                let bias = self.biases[group * CHANNELS..][..CHANNELS]
                    .try_into()
                    .expect("a panel's biases");
                let start = self.at(image, y, 0) + group * self.og;
                assert!(T::IS_F32 && start + (wo - 1) * self.o + self.og <= self.len);
                let dst = self.out.get().cast::<f32>().wrapping_add(start);
                let residual = self.residual_from(start, dst);
                let to = PairOut {
                    dst,
                    ldc: self.o,
                    apart: pairs * self.o,
                    seconds: wo - pairs,
                    columns: self.og,
                };
                debug_assert_eq!(b.len(), width * steps.len());
                // SAFETY: T is f32; the row's `wo` pixels of channels
                // `start..+ og` are inside the output (asserted) and the
                // caller's; the residual holds as many values (asserted) at
                // the same indices.
                let stored = unsafe {
                    if v == 1 {
                        sgemm::pair_run_store::<16, 1>(isa, &run, b, to, (bias, act, residual))
                    } else {
                        sgemm::pair_run_store::<8, 3>(isa, &run, b, to, (bias, act, residual))
                    }
                };
                assert!(stored, "conv2d: {isa:?} stores no pair runs");
                // SAFETY: as above.
                unsafe { self.after(dst, wo, self.og) };
            }
        }
    }

    /// One tile into output `start + i o ..` for its `n` pixels and
    /// `columns` channels.
    ///
    /// # Safety
    /// As [`Store::band`], for those outputs.
    unsafe fn tile<const P: usize, const V: usize>(
        &self,
        isa: Isa,
        (rows, b): (&PixelRows<'_, P>, &[f32]),
        sums: &mut PixelSums<P>,
        (start, n, columns): (usize, usize, usize),
        bias: &[f32; CHANNELS],
    ) {
        // Sums stored from registers, but over a residual they must read.
        if T::IS_F32 && !matches!(self.residual, Some(ResidualAt::Output)) {
            let dst = self.out.get().cast::<f32>().wrapping_add(start);
            // A residual is added to the stored sums, the activation after.
            let after = self.rows_after || self.residual.is_some();
            let act = if after { None } else { self.act };
            // SAFETY: T is f32; the outputs are the caller's.
            let stored = unsafe {
                let to = (dst, self.o, n, columns);
                sgemm::pixel_tile_store::<P, V>(isa, rows, b, to, (bias, act))
            };
            if stored {
                if after {
                    for i in 0..n {
                        // SAFETY: as above; the residual is not the output's.
                        unsafe {
                            let row = std::slice::from_raw_parts_mut(dst.add(i * self.o), columns);
                            self.finish(row, start + i * self.o);
                        }
                    }
                }
                return;
            }
        }
        sgemm::pixel_tile::<P, V>(isa, rows, b, sums);
        for (i, row) in sums.iter_mut().enumerate().take(n) {
            let row = &mut row[..columns];
            if self.has_bias {
                row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
            }
            // SAFETY: the outputs are the caller's, not yet stored.
            unsafe { self.finish(row, start + i * self.o) };
            // SAFETY: the caller's.
            let to = unsafe {
                std::slice::from_raw_parts_mut(self.out.get().add(start + i * self.o), columns)
            };
            for (slot, &v) in to.iter_mut().zip(&*row) {
                *slot = T::from_f32(v);
            }
        }
    }
}

thread_local! {
    /// This thread's last band copy, kept for the next.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}
