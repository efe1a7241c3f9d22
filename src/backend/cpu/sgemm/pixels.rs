//! Pixel tiles: the product tiles of a channels-last convolution, whose
//! rows are output pixels and columns output channels. Row `i`'s `A`
//! value at step `p` is read in place, `a[bases[i] + steps[p]]` (a
//! pixel's patch: its channels follow each other, its taps a row or a
//! pixel apart), and `B` is a packed panel of [`CHANNELS`] weight columns
//! (`[p][j]`). A tile sums [`PIXELS`] x [`CHANNELS`] outputs (or
//! [`NARROW_PIXELS`] x 16) over every step in registers, each one f32 sum over `p` in order: fused
//! multiply-adds where [`Isa`]'s product tiles fuse them (AVX-512, AVX2
//! with FMA), a product then a sum in the portable kernel, so that a
//! channels-last convolution's sums are bit for bit those of the same
//! convolution over planes on the same processor.

use super::{Act, Isa};

/// Pixels (rows) of a wide pixel tile: 8 pixels by [`CHANNELS`].
pub(crate) const PIXELS: usize = 8;

/// Output channels (columns) of a wide pixel tile: a packed panel's width.
pub(crate) const CHANNELS: usize = 32;

/// Pixels of a narrow tile: 16 pixels by 16 channels, for panels of 16
/// output channels or fewer (a wide tile would compute twice the products
/// it keeps).
pub(crate) const NARROW_PIXELS: usize = 16;

/// A tile's outputs, `[i][j]`, `P` pixels (of a tile `16 V` channels
/// wide).
pub(crate) type PixelSums<const P: usize> = [[f32; CHANNELS]; P];

/// A patch's steps: step `p` of a pixel's patch lies `steps[p]` after its
/// first element.
pub(crate) struct Steps {
    steps: Vec<usize>,
    /// The largest step.
    reach: usize,
}

impl Steps {
    pub(crate) fn new(steps: Vec<usize>) -> Steps {
        let reach = steps.iter().copied().max().unwrap_or(0);
        Steps { steps, reach }
    }

    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// The steps' offsets.
    #[cfg(any(target_arch = "x86_64", test))]
    pub(super) fn offsets(&self) -> &[usize] {
        &self.steps
    }

    /// The largest offset.
    pub(super) fn reach(&self) -> usize {
        self.reach
    }
}

/// Where a tile's `A` values lie: row `i` at step `p` is `a[bases[i] +
/// shift + steps[p]]`.
pub(crate) struct PixelRows<'a, const P: usize> {
    a: &'a [f32],
    bases: &'a [usize; P],
    /// The largest base, found once for the tile's every panel (a tile's
    /// check costs a comparison, where each panel's tile of 16 steps
    /// spent a fifth of its time finding it).
    top: usize,
    /// Added to every base: the group's first channel.
    pub(crate) shift: usize,
    steps: &'a Steps,
}

impl<'a, const P: usize> PixelRows<'a, P> {
    /// The rows at `bases` of `a`, no shift.
    pub(crate) fn new(a: &'a [f32], bases: &'a [usize; P], steps: &'a Steps) -> Self {
        let top = bases.iter().fold(0, |m, &b| m.max(b));
        PixelRows {
            a,
            bases,
            top,
            shift: 0,
            steps,
        }
    }

    /// Panics unless every read lies inside `a` and `b` holds a panel row
    /// for each step (a caller's bug otherwise).
    fn check(&self, b: &[f32]) {
        let last = self
            .top
            .checked_add(self.shift)
            .and_then(|l| l.checked_add(self.steps.reach));
        assert!(
            (self.steps.steps.is_empty() || last.is_some_and(|l| l < self.a.len()))
                && b.len() >= self.steps.len() * CHANNELS,
            "sgemm pixel tile: A reads reaching {last:?} of {}, a B panel of {} floats for {} steps",
            self.a.len(),
            b.len(),
            self.steps.len()
        );
    }

    /// The steps, for the kernels.
    pub(super) fn steps(&self) -> &[usize] {
        &self.steps.steps
    }

    /// The bases, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn bases(&self) -> &[usize; P] {
        self.bases
    }

    /// The input, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn a(&self) -> &[f32] {
        self.a
    }
}

/// A run of whole pixel tiles along evenly spaced pixels (an output row's,
/// or a band's where its rows follow each other in the input): pixel `r`'s
/// `A` value at step `p` is `a[base + r pitch + shift + steps[p]]`.
pub(crate) struct PixelRun<'a> {
    a: &'a [f32],
    base: usize,
    pitch: usize,
    pixels: usize,
    /// Added to every base: the group's first channel.
    pub(crate) shift: usize,
    steps: &'a Steps,
}

impl<'a> PixelRun<'a> {
    /// `pixels` pixels from `base` of `a`, `pitch` apart, no shift.
    pub(crate) fn new(
        a: &'a [f32],
        (base, pitch, pixels): (usize, usize, usize),
        steps: &'a Steps,
    ) -> Self {
        PixelRun {
            a,
            base,
            pitch,
            pixels,
            shift: 0,
            steps,
        }
    }

    /// Panics unless the run is whole tiles of `P`, every read lies inside
    /// `a` (the reads' offsets, too, fit a `usize`) and `b` holds a panel
    /// row for each step (a caller's bug otherwise).
    fn check<const P: usize>(&self, b: &[f32]) {
        let last = (self.pixels.max(1) - 1)
            .checked_mul(self.pitch)
            .and_then(|r| {
                r.checked_add(self.base)?
                    .checked_add(self.shift)?
                    .checked_add(self.steps.reach)
            });
        assert!(
            self.pixels.is_multiple_of(P)
                && (self.pixels == 0
                    || self.steps.steps.is_empty()
                    || last.is_some_and(|l| l < self.a.len()))
                && b.len() >= self.steps.len() * CHANNELS,
            "sgemm pixel run: {} pixels of tiles of {P}, A reads reaching {last:?} of {}, \
             a B panel of {} floats for {} steps",
            self.pixels,
            self.a.len(),
            b.len(),
            self.steps.len()
        );
    }

    /// The first pixel's patch, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn first(&self) -> *const f32 {
        self.a.as_ptr().wrapping_add(self.base + self.shift)
    }

    /// The pixels' pitch, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn pitch(&self) -> usize {
        self.pitch
    }

    /// The run's pixels.
    pub(crate) fn pixels(&self) -> usize {
        self.pixels
    }

    /// The steps, for the kernels.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn steps(&self) -> &[usize] {
        &self.steps.steps
    }
}

/// [`pixel_run_store`]'s kernel for `act`, with (`RES`) or without the
/// residual `res`.
///
/// # Safety
/// As `x86::pixel_run_avx512`.
#[cfg(target_arch = "x86_64")]
unsafe fn run_act<const P: usize, const V: usize, const RES: bool>(
    run: &PixelRun<'_>,
    b: *const f32,
    to: (*mut f32, usize, usize),
    (bias, act, res): (&[f32; CHANNELS], Option<Act>, *const f32),
) {
    use super::x86::pixel_run_avx512 as run_with;
    // SAFETY: the caller's.
    unsafe {
        match act {
            None => run_with::<P, V, 0, RES>(run, b, to, (bias, res)),
            Some(Act::Relu) => run_with::<P, V, 1, RES>(run, b, to, (bias, res)),
            Some(Act::Hardsigmoid) => run_with::<P, V, 2, RES>(run, b, to, (bias, res)),
            Some(Act::Hardswish) => run_with::<P, V, 3, RES>(run, b, to, (bias, res)),
        }
    }
}

impl Isa {
    /// Whether [`pixel_run_store`] runs here.
    pub(crate) fn stores_pixel_runs(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self == Isa::Avx512 {
            return true;
        }
        false
    }
}

/// [`pixel_tile_store`] for each tile of `run` in turn (pixel `r` into
/// `dst + r ldc`), each pixel's sums over the steps in the same order on
/// the same arithmetic: bit for bit the tiles'; with a `residual`, its
/// value at `residual + r ldc + j` is added to each biased sum before
/// `act` (one more f32 rounding, as a following `add` makes); the
/// residual may be the output itself (`residual == dst`: each value is
/// read before its sum is stored over it). True where a kernel does it
/// (AVX-512), false (nothing done) elsewhere.
///
/// # Safety
/// `dst + r ldc .. + columns` is the caller's to write for every pixel `r`
/// of the run, and no one else's meanwhile; `residual + r ldc .. +
/// columns`, where given, are floats to read.
///
/// # Panics
/// As [`PixelRun::check`]; more columns than the tile has.
pub(crate) unsafe fn pixel_run_store<const P: usize, const V: usize>(
    isa: Isa,
    run: &PixelRun<'_>,
    b: &[f32],
    (dst, ldc, columns): (*mut f32, usize, usize),
    (bias, act, residual): (&[f32; CHANNELS], Option<Act>, Option<*const f32>),
) -> bool {
    assert!(
        16 * V <= CHANNELS && columns <= 16 * V,
        "sgemm pixel run: {columns} channels"
    );
    run.check::<P>(b);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            let to = (dst, ldc, columns);
            // SAFETY: the reads checked; the writes and the residual's
            // reads the caller's (this function's contract).
            unsafe {
                match residual {
                    Some(r) => run_act::<P, V, true>(run, b.as_ptr(), to, (bias, act, r)),
                    None => run_act::<P, V, false>(run, b.as_ptr(), to, (bias, act, b.as_ptr())),
                }
            }
            true
        }
        _ => {
            let _ = (run, b, dst, ldc, columns, bias, act, residual);
            false
        }
    }
}

/// The tile `out[i][j] = sum over p of a[bases[i] + shift + steps[p]]
/// b[p CHANNELS + j]` for `j < 16 V` on `isa`'s arithmetic: `P = 8, V =
/// 2` (wide) or `P = 16, V = 1` (narrow).
///
/// # Panics
/// When a read leaves `a` or `b` (a caller's bug).
pub(crate) fn pixel_tile<const P: usize, const V: usize>(
    isa: Isa,
    rows: &PixelRows<'_, P>,
    b: &[f32],
    out: &mut PixelSums<P>,
) {
    assert!(16 * V <= CHANNELS, "a tile at most a panel wide");
    rows.check(b);
    match isa {
        // SAFETY: `Isa::best`/`available` chose the kernel only where the
        // processor has its features; `check` bounds every read.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { super::x86::pixel_tile_avx512::<P, V>(rows, b.as_ptr(), out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { sums_fused::<P, V>(rows, b, out) },
        // SAFETY: as above.
        Isa::Portable => unsafe { sums_in::<P, V, false>(rows, b, out) },
    }
}

/// [`pixel_tile`], each column `j` plus `bias[j]`, then `act`, stored
/// straight from the kernel's registers: row `i < pixels` into `dst + i
/// ldc`, its first `columns` sums. True where the kernel can (AVX-512);
/// false elsewhere, nothing done (the caller stores [`pixel_tile`]'s
/// sums itself).
///
/// # Safety
/// `dst + i ldc .. + columns` is the caller's to write for every `i <
/// pixels`, and no one else's meanwhile.
///
/// # Panics
/// As [`pixel_tile`]; more pixels or columns than the tile has.
pub(crate) unsafe fn pixel_tile_store<const P: usize, const V: usize>(
    isa: Isa,
    rows: &PixelRows<'_, P>,
    b: &[f32],
    (dst, ldc, pixels, columns): (*mut f32, usize, usize, usize),
    (bias, act): (&[f32; CHANNELS], Option<Act>),
) -> bool {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            assert!(16 * V <= CHANNELS, "a tile at most a panel wide");
            rows.check(b);
            assert!(
                pixels <= P && columns <= 16 * V,
                "sgemm pixel tile: {pixels} pixels of {columns} channels"
            );
            // SAFETY: the reads as in `pixel_tile`; the writes are the
            // caller's (this function's contract).
            unsafe {
                super::x86::pixel_store_avx512::<P, V>(
                    rows,
                    b.as_ptr(),
                    (dst, ldc, pixels, columns),
                    (bias, act),
                );
            }
            true
        }
        _ => {
            let _ = (rows, b, dst, ldc, pixels, columns, bias, act);
            false
        }
    }
}

/// The AVX2 product tiles' arithmetic (fused multiply-adds).
///
/// # Safety
/// The processor has AVX2 and FMA; the reads as [`sums_in`]'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sums_fused<const P: usize, const V: usize>(
    rows: &PixelRows<'_, P>,
    b: &[f32],
    out: &mut PixelSums<P>,
) {
    // SAFETY: the caller's.
    unsafe { sums_in::<P, V, true>(rows, b, out) }
}

/// The tile in plain Rust, `FUSED` (`mul_add`) or a product then a sum.
///
/// # Safety
/// `rows.check(b)` passed.
#[inline(always)]
unsafe fn sums_in<const P: usize, const V: usize, const FUSED: bool>(
    rows: &PixelRows<'_, P>,
    b: &[f32],
    out: &mut PixelSums<P>,
) {
    *out = [[0.0; CHANNELS]; P];
    let a = rows.a.as_ptr().wrapping_add(rows.shift);
    for (&s, bp) in rows.steps().iter().zip(b.chunks_exact(CHANNELS)) {
        for (sums, &base) in out.iter_mut().zip(rows.bases) {
            // SAFETY: base + shift + s is within the checked reach,
            // inside `a`.
            let av = unsafe { *a.add(base + s) };
            for (sum, &bv) in sums[..16 * V].iter_mut().zip(bp) {
                *sum = if FUSED {
                    av.mul_add(bv, *sum)
                } else {
                    *sum + av * bv
                };
            }
        }
    }
}
