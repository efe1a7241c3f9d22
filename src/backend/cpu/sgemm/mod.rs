//! The CPU's f32 product tiles: packed panels multiplied by a register
//! tile, the kernel chosen once by what the processor has (AVX-512F,
//! AVX2 with FMA, else portable code the compiler vectorises).
//!
//! A product `C [m, n] = A [m, k] B [k, n]` is cut into tiles of
//! [`Isa::mr`] rows by [`Isa::nr`] columns. `A` is packed once as panels of
//! `mr` rows (`[panel][p][i]`, zero rows past `m`, [`pack_a`]) and `B` as
//! panels of `nr` columns (`[panel][p][j]`, zero columns past `n`; the
//! caller packs them, as a convolution packs its patches). [`tile`] sums a
//! tile over all `k` in registers and hands it back for the caller to
//! finish (a bias, a rounding) and store: the layout of `C` is the
//! caller's.
//!
//! Every output is one f32 sum over `p` in order, each term a fused
//! multiply-add on the x86 kernels and a product then a sum in the portable
//! one: the same on every thread count, within rounding of each other
//! across kernels.

mod pairs;
mod pixels;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use pairs::{PairOut, PairRun, pair_run_store};
pub(crate) use pixels::{
    CHANNELS, NARROW_PIXELS, PIXELS, PixelRows, PixelRun, PixelSums, Steps, pixel_run_store,
    pixel_tile, pixel_tile_store,
};

use super::host_vec::HostVec;
use crate::error::Result;
use std::sync::OnceLock;

/// The floats a tile holds at the most (AVX-512's 8 x 32).
pub(crate) const MAX_TILE: usize = 8 * 32;

/// The tile kernel a processor runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// 8 x 32 tiles in 16 zmm registers.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// 6 x 16 tiles in 12 ymm registers.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 4 x 16 tiles in plain Rust.
    Portable,
}

impl Isa {
    /// The best kernel this processor runs (detected once).
    pub(crate) fn best() -> Isa {
        static BEST: OnceLock<Isa> = OnceLock::new();
        *BEST.get_or_init(|| Isa::available().into_iter().next().unwrap_or(Isa::Portable))
    }

    /// Every kernel this processor runs, best first (the tests run each).
    pub(crate) fn available() -> Vec<Isa> {
        let mut all = vector_kernels();
        all.push(Isa::Portable);
        all
    }

    /// Rows of a tile.
    pub(crate) fn mr(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => 8,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => 6,
            Isa::Portable => 4,
        }
    }

    /// Columns of a tile.
    pub(crate) fn nr(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => 32,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => 16,
            Isa::Portable => 16,
        }
    }
}

/// The x86 kernels this processor has the features of, best first.
#[cfg(target_arch = "x86_64")]
fn vector_kernels() -> Vec<Isa> {
    use std::arch::is_x86_feature_detected as has;
    let mut found = Vec::new();
    if has!("avx512f") {
        found.push(Isa::Avx512);
    }
    if has!("avx2") && has!("fma") {
        found.push(Isa::Avx2);
    }
    found
}

/// No vector kernels but x86's yet: the portable one is vectorised by the
/// compiler.
#[cfg(not(target_arch = "x86_64"))]
fn vector_kernels() -> Vec<Isa> {
    Vec::new()
}

/// `A [m, k]` (element `(r, p)` is `at(r, p)`) packed as panels of
/// `isa.mr()` rows: panel `q` holds `[p][i]` = `at(q mr + i, p)`, zero for
/// rows past `m`; on a cache line (`HostVec`), as every packed panel.
///
/// # Errors
/// `Error::OutOfMemory` naming `op` where the allocation is refused.
pub(crate) fn pack_a(
    op: &'static str,
    isa: Isa,
    (m, k): (usize, usize),
    at: impl Fn(usize, usize) -> f32,
) -> Result<HostVec<f32>> {
    let mr = isa.mr();
    let mut packed = HostVec::try_zeroed(op, m.div_ceil(mr) * mr * k)?;
    if k == 0 {
        return Ok(packed);
    }
    for (q, panel) in packed.chunks_mut(mr * k).enumerate() {
        for (p, column) in panel.chunks_mut(mr).enumerate() {
            for (i, slot) in column.iter_mut().enumerate() {
                let r = q * mr + i;
                if r < m {
                    *slot = at(r, p);
                }
            }
        }
    }
    Ok(packed)
}

/// Where a tile's `B` rows lie: row `p` is the `nr` floats from `base +
/// offsets[p]` of the slice [`tile`] reads. A packed panel's rows follow
/// each other ([`Rows::packed`]); a convolution's may be runs of its
/// input, a tap each, read in place.
pub(crate) struct Rows {
    offsets: Vec<usize>,
    /// The kernel the rows are for (its `nr` floats a row).
    isa: Isa,
    /// One past the furthest float a tile at base 0 reads.
    reach: usize,
}

impl Rows {
    /// Rows at `offsets` for `isa`'s tiles.
    pub(crate) fn new(offsets: Vec<usize>, isa: Isa) -> Rows {
        let reach = offsets.iter().max().map_or(0, |&o| o + isa.nr());
        Rows {
            offsets,
            isa,
            reach,
        }
    }

    /// The `k` rows of a packed panel of `isa`'s `nr` columns (`[p][j]`).
    pub(crate) fn packed(k: usize, isa: Isa) -> Rows {
        Rows::new((0..k).map(|p| p * isa.nr()).collect(), isa)
    }

    /// One past the furthest float of `B` a tile at base 0 reads.
    pub(crate) fn reach(&self) -> usize {
        self.reach
    }

    /// The depth `k` of a tile over these rows.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len()
    }
}

/// The tile `out[i nr + j] = sum over p < k of a[p mr + i] b[base +
/// rows[p] + j]` of one packed `A` panel and `k = rows.len()` rows of `B`,
/// on the kernel the rows were made for.
///
/// # Panics
/// When the `A` panel holds fewer than `k` steps or a row leaves `b`
/// (a caller's bug).
pub(crate) fn tile(a: &[f32], b: &[f32], base: usize, rows: &Rows, out: &mut [f32; MAX_TILE]) {
    let (isa, k) = (rows.isa, rows.len());
    assert!(
        a.len() >= k * isa.mr()
            && rows
                .reach
                .checked_add(base)
                .is_some_and(|end| end <= b.len()),
        "sgemm tile: an A panel of {} floats for {k} steps, B rows reaching {} + {base} of {}",
        a.len(),
        rows.reach,
        b.len()
    );
    let b = &b[base..];
    match isa {
        // SAFETY: `best`/`available` chose the kernel only where the
        // processor has its features, and the assert above bounds every
        // read (k steps of mr floats of `a`; each row's nr floats, at
        // most `reach`, inside `b`) and write (mr nr <= MAX_TILE).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { x86::tile_avx512(a.as_ptr(), b.as_ptr(), &rows.offsets, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { x86::tile_avx2(a.as_ptr(), b.as_ptr(), &rows.offsets, out) },
        Isa::Portable => portable(a, b, &rows.offsets, out),
    }
}

/// An activation [`tile_store`] applies to the biased sums in registers,
/// bit for bit the f32 function's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Relu,
    Hardsigmoid,
    Hardswish,
}

impl Act {
    /// The kernels' form of `op`, where they have one.
    pub(crate) fn of(op: Option<crate::op::UnaryOp>) -> Option<Act> {
        use crate::op::UnaryOp;
        match op? {
            UnaryOp::Relu => Some(Act::Relu),
            UnaryOp::Hardsigmoid => Some(Act::Hardsigmoid),
            UnaryOp::Hardswish => Some(Act::Hardswish),
            _ => None,
        }
    }
}

/// [`tile`], each row `i < bias.len()` plus `bias[i]`, then `act`, stored
/// straight from the kernel's registers into `dst + i ldc`, its first
/// `columns` sums, where the kernel can (AVX-512): true then, false
/// (nothing done) elsewhere, where the caller runs [`tile`] and stores the
/// tile itself.
///
/// # Safety
/// `dst + i ldc .. + columns` is the caller's to write, for every `i <
/// bias.len()`, and no one else's meanwhile.
///
/// # Panics
/// As [`tile`]; more rows than a tile has, or more columns.
pub(crate) unsafe fn tile_store(
    a: &[f32],
    b: &[f32],
    base: usize,
    rows: &Rows,
    (dst, ldc, columns): (*mut f32, usize, usize),
    (bias, act): (&[f32], Option<Act>),
) -> bool {
    let (isa, k) = (rows.isa, rows.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            assert!(
                a.len() >= k * isa.mr()
                    && rows
                        .reach
                        .checked_add(base)
                        .is_some_and(|end| end <= b.len())
                    && bias.len() <= isa.mr()
                    && columns <= isa.nr(),
                "sgemm tile_store: an A panel of {} floats for {k} steps, B rows reaching \
                 {} + {base} of {}, {} rows of {columns}",
                a.len(),
                rows.reach,
                b.len(),
                bias.len()
            );
            // SAFETY: as in `tile` for the reads; the writes are the
            // caller's (this function's contract), at most 8 rows of 32.
            unsafe {
                x86::tile_store_avx512(
                    a.as_ptr(),
                    b[base..].as_ptr(),
                    &rows.offsets,
                    (dst, ldc, columns),
                    (bias, act),
                );
            }
            true
        }
        _ => {
            // No kernel stores its tile here (all of them elsewhere).
            let _ = (a, b, base, dst, ldc, columns, bias, act, k);
            false
        }
    }
}

/// The 4 x 16 tile in plain Rust: the compiler keeps the sums in vector
/// registers of whatever width the target has.
fn portable(a: &[f32], b: &[f32], rows: &[usize], out: &mut [f32; MAX_TILE]) {
    const MR: usize = 4;
    const NR: usize = 16;
    let mut acc = [[0.0f32; NR]; MR];
    for (ap, &row) in a.chunks_exact(MR).zip(rows) {
        let bp = &b[row..row + NR];
        for (sums, &av) in acc.iter_mut().zip(ap) {
            for (sum, &bv) in sums.iter_mut().zip(bp) {
                *sum += av * bv;
            }
        }
    }
    for (dst, sums) in out.chunks_exact_mut(NR).zip(&acc) {
        dst.copy_from_slice(sums);
    }
}

#[cfg(test)]
mod tests;
