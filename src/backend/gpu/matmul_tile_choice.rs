//! Which tile the matmul uses, fixed or found by autotuning. The device
//! holds the setting (`GpuOptions`, `WEBTENSOR_MATMUL_TILE`,
//! `WEBTENSOR_AUTOTUNE`, `Device::set_matmul_tile`) with the tuning results,
//! and `matmul/` reads them when it records; the file sits beside `matmul/`
//! rather than in it because the device context, which `matmul/` uses,
//! owns it.

use crate::backend::gpu::attention_mask::MaskKind;
use crate::dtype::{DType, KernelType};
use crate::quant::{GgmlType, PRODUCT_TYPES};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

/// Which tile the GPU matmul uses. [`MatmulTile::Auto`] picks by the
/// product's size, or, where the device autotunes (`GpuOptions::autotune`),
/// by timing every tile that fits on the first product of each class; the
/// others fix one kernel (for reproducible timings, and so that tests run
/// every kernel on every size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatmulTile {
    /// By the number of output blocks each tile gives (the default); f16
    /// products of more than 16 x 16 outputs (and f32 ones under
    /// [`MatmulPrecision::Fast`]) on cooperative matrices where the device
    /// has them, as PyTorch's f16 products take tensor cores. Autotuning
    /// keeps that choice unless another tile runs 10% faster.
    #[default]
    Auto,
    /// 128 x 128 blocks, 8 x 8 outputs per thread, 256 threads.
    Large,
    /// 64 x 64 blocks, 4 x 4 outputs per thread, 256 threads.
    Medium,
    /// 32 x 32 blocks, 4 x 4 outputs per thread, 64 threads.
    Small,
    /// 16 x 64 blocks (rows by columns), 4 x 4 outputs per thread, 64
    /// threads: for products of few rows (a short `a`), which a square
    /// block would mostly pad.
    FewRows,
    /// 64 x 16 blocks: for products of few columns (a narrow `b`).
    FewColumns,
    /// 128 x 64 blocks (rows by columns), 8 x 4 outputs per thread, 256
    /// threads: half the large tile's blocks, twice its count, each
    /// thread still feeding 32 products from every 12 values it reads.
    Tall,
    /// 64 x 128 blocks, 4 x 8 outputs per thread, 256 threads.
    Wide,
    /// No tile: one thread per output element, the outputs of consecutive
    /// matrices sharing workgroups, for batches of small matrices (what
    /// `Auto` runs for outputs of at most 16 x 16).
    PerOutput,
    /// 64 x 64 blocks, 8 x 4 outputs per thread, 128 threads, in teams of
    /// eight subgroup lanes that load `a` straight from memory and pass
    /// its values among themselves by subgroup shuffles (only `b` goes
    /// through workgroup memory). On devices without subgroups of at
    /// least eight lanes (browsers, `GpuOptions::subgroups` off) it runs
    /// as [`MatmulTile::Medium`], the same block without shuffles.
    Subgroup,
    /// Cooperative matrices (tensor cores): 128 x 128 blocks of 16 x 16 x
    /// 16 products of f16 accumulating in f32 (64 x 64 blocks where the
    /// device's products are 8 x 8 x 8), four subgroups a block, for f16
    /// products, and f32 ones under [`MatmulPrecision::Fast`]. On devices
    /// without cooperative matrices (`DeviceInfo::cooperative_matrix`), and
    /// for other dtypes, it runs as [`MatmulTile::Medium`].
    Cooperative,
}

/// How an f32 matmul may compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatmulPrecision {
    /// As f32 products accumulating in f32 (the default).
    #[default]
    Exact,
    /// Where the device has cooperative matrices, f32 operands may be
    /// rounded to f16 and multiplied on them, accumulating in f32
    /// (PyTorch's `allow_tf32`, with f16's 11-bit significand): several
    /// times faster, about three decimal digits per operand. Unlike TF32
    /// it also has f16's range: an operand beyond ±65,504 becomes
    /// infinite, and one below 6.1e-5 in magnitude keeps fewer digits. The
    /// same holds for f32 convolutions and for quantized products of many
    /// rows (their activations). f16 products use cooperative matrices
    /// either way.
    Fast,
}

impl MatmulPrecision {
    /// Parses `exact` or `fast` (the values of
    /// `WEBTENSOR_MATMUL_PRECISION`).
    pub fn parse(s: &str) -> Option<MatmulPrecision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "exact" => Some(MatmulPrecision::Exact),
            "fast" => Some(MatmulPrecision::Fast),
            _ => None,
        }
    }
}

impl MatmulTile {
    /// Every fixed choice (all but [`MatmulTile::Auto`]).
    pub const FIXED: [MatmulTile; 10] = [
        MatmulTile::Large,
        MatmulTile::Medium,
        MatmulTile::Small,
        MatmulTile::FewRows,
        MatmulTile::FewColumns,
        MatmulTile::Tall,
        MatmulTile::Wide,
        MatmulTile::PerOutput,
        MatmulTile::Subgroup,
        MatmulTile::Cooperative,
    ];

    /// Parses `auto`, `large`, `medium`, `small`, `few-rows`,
    /// `few-columns`, `tall`, `wide`, `per-output`, `subgroup` or
    /// `cooperative` (the values of `WEBTENSOR_MATMUL_TILE`).
    pub fn parse(s: &str) -> Option<MatmulTile> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => MatmulTile::Auto,
            "large" => MatmulTile::Large,
            "medium" => MatmulTile::Medium,
            "small" => MatmulTile::Small,
            "few-rows" => MatmulTile::FewRows,
            "few-columns" => MatmulTile::FewColumns,
            "tall" => MatmulTile::Tall,
            "wide" => MatmulTile::Wide,
            "per-output" => MatmulTile::PerOutput,
            "subgroup" => MatmulTile::Subgroup,
            "cooperative" => MatmulTile::Cooperative,
            _ => return None,
        })
    }
}

/// A matmul kernel the self-check verifies (see `matmul/self_check.rs`):
/// a fixed tile's kernel, or the matrix-vector kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MatmulVariant {
    /// Never `MatmulTile::Auto`, which runs one of the others.
    Tile(MatmulTile),
    Gemv,
    /// The convolution's implicit-GEMM kernel on this tile
    /// (`backend/gpu/conv/`).
    Conv(MatmulTile),
    /// The transposed convolution's kernel on this tile
    /// (`backend/gpu/conv/transposed.rs`).
    ConvTransposed(MatmulTile),
    /// The quantized products' kernels of a block type
    /// (`backend/gpu/quant/`).
    Quant(GgmlType),
    /// The cooperative attention kernel of this many fragments across a
    /// head row and a value row, with this mask
    /// (`backend/gpu/attention/cooperative.rs`).
    Attention {
        head_frags: u32,
        value_frags: u32,
        mask: MaskKind,
    },
}

impl MatmulVariant {
    /// The op whose first call probes this variant: its probe's failures
    /// (the device's loss before wgpu told of it) name that op. (A browser
    /// probes nothing.)
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub fn op(self) -> &'static str {
        match self {
            MatmulVariant::Tile(_) | MatmulVariant::Gemv => "matmul",
            MatmulVariant::Conv(_) => "conv2d",
            MatmulVariant::ConvTransposed(_) => "conv_transpose2d",
            MatmulVariant::Quant(_) => "qmatmul",
            MatmulVariant::Attention { .. } => "sdpa",
        }
    }

    /// Its name in `DeviceInfo::dropped_kernels`: `matmul large f16`.
    pub fn describe(self, dtype: KernelType) -> String {
        let name = match self {
            MatmulVariant::Tile(tile) => format!("matmul {tile:?}"),
            MatmulVariant::Gemv => "matmul gemv".to_string(),
            MatmulVariant::Conv(tile) => format!("conv {tile:?}"),
            MatmulVariant::ConvTransposed(tile) => format!("conv_transpose {tile:?}"),
            MatmulVariant::Quant(ty) => format!("qmatmul {ty}"),
            MatmulVariant::Attention {
                head_frags,
                value_frags,
                mask,
            } => format!("attention cooperative {head_frags}x{value_frags} {mask:?}"),
        };
        format!("{} {dtype}", name.to_ascii_lowercase())
    }
}

/// What makes two products alike for autotuning: the dtype, each extent
/// and the batch count by powers of two, and which way each operand's
/// matrix runs in memory (the tiles load them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct MatmulClass {
    pub dtype: KernelType,
    /// Bit lengths of m, n, k and the batch count.
    pub sizes: [u8; 4],
    /// a's k axis has the smaller stride; b's n axis has.
    pub fast: [bool; 2],
}

impl MatmulClass {
    /// The class of an `m` x `k` by `k` x `n` product over `batches`.
    pub fn of(dtype: KernelType, [m, n, k, batches]: [usize; 4], fast: [bool; 2]) -> MatmulClass {
        let bits = |x: usize| (usize::BITS - x.leading_zeros()) as u8;
        MatmulClass {
            dtype,
            sizes: [bits(m), bits(n), bits(k), bits(batches)],
            fast,
        }
    }
}

/// What autotuning chose for one class of products.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tuned {
    /// The size rule's tile (what `MatmulTile::Auto` runs untuned).
    pub default: MatmulTile,
    pub winner: MatmulTile,
    /// The median run of one product by the winner, and by the size
    /// rule's tile, in seconds, where timed.
    pub seconds: Option<f64>,
    pub default_seconds: Option<f64>,
}

impl Tuned {
    /// The tile the class's products run: the winner, or `Auto` where the
    /// size rule's tile won, so that each product of the class (whose
    /// extents span a factor of two) takes its own size rule's tile.
    pub fn runtime(&self) -> MatmulTile {
        if self.winner == self.default {
            MatmulTile::Auto
        } else {
            self.winner
        }
    }

    /// `winner`, the one kernel that fits (nothing timed).
    pub fn untimed(default: MatmulTile, winner: MatmulTile) -> Tuned {
        Tuned {
            default,
            winner,
            seconds: None,
            default_seconds: None,
        }
    }
}

/// One class of products a device's autotuning chose a tile for
/// (`DeviceInfo::tuned_matmuls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunedMatmul {
    /// The products' dtype.
    pub dtype: DType,
    /// The class's m, n, k and batch count: each in `below[i] / 2 ..
    /// below[i]` (powers of two).
    pub below: [u64; 4],
    /// Whether a's k axis and b's n axis have the smaller stride (each
    /// operand's matrix read along its rows).
    pub along_rows: [bool; 2],
    /// The tile the size rule picks (what [`MatmulTile::Auto`] runs on a
    /// device that does not tune).
    pub size_rule: MatmulTile,
    /// The tile kept: the size rule's unless another ran at least 10%
    /// faster (its median of 5 runs of 4 products back to back). Where the
    /// size rule's won, each product of the class takes its own size
    /// rule's tile (the class spans extents a factor of two apart).
    pub winner: MatmulTile,
    /// The median time of one product by the winner; `None` where nothing
    /// was timed (one kernel fits).
    pub time: Option<Duration>,
    /// The same for the size rule's tile; `None` also where the
    /// self-check dropped its kernel.
    pub size_rule_time: Option<Duration>,
}

impl std::fmt::Display for TunedMatmul {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [m, n, k, b] = self.below;
        let ms = |t: Option<Duration>| {
            t.map_or("untimed".to_string(), |t| {
                format!("{:.4} ms", t.as_secs_f64() * 1e3)
            })
        };
        write!(
            f,
            "{} m<{m} n<{n} k<{k} batches<{b}: {:?} {} (size rule {:?} {})",
            self.dtype,
            self.winner,
            ms(self.time),
            self.size_rule,
            ms(self.size_rule_time)
        )
    }
}

/// Verdicts by (variant, dtype): every tile (`Auto` too, though no verdict
/// names it), the matrix-vector kernel and the convolution kernel on every
/// tile, by every kernel dtype.
struct Known([AtomicU8; Known::LEN]);

impl Known {
    const VARIANTS: usize = 3 * (MatmulTile::FIXED.len() + 2) + PRODUCT_TYPES.len();
    const DTYPES: usize = KernelType::ALL.len();
    const LEN: usize = Self::VARIANTS * Self::DTYPES;

    fn slot(variant: MatmulVariant, dtype: KernelType) -> usize {
        let fixed = MatmulTile::FIXED.len();
        let tile_slot = |tile| {
            MatmulTile::FIXED
                .iter()
                .position(|&t| t == tile)
                .unwrap_or(fixed + 1)
        };
        let v = match variant {
            MatmulVariant::Tile(tile) => tile_slot(tile),
            MatmulVariant::Gemv => fixed,
            MatmulVariant::Conv(tile) => fixed + 2 + tile_slot(tile),
            MatmulVariant::Quant(ty) => {
                let at = PRODUCT_TYPES.iter().position(|&t| t == ty);
                2 * (fixed + 2) + at.unwrap_or(0)
            }
            MatmulVariant::ConvTransposed(tile) => {
                2 * (fixed + 2) + PRODUCT_TYPES.len() + tile_slot(tile)
            }
            // Kept in `MatmulTuner::verdicts` alone (see `verdict`).
            MatmulVariant::Attention { .. } => 0,
        };
        v * Self::DTYPES + dtype as usize
    }
}

impl Default for Known {
    fn default() -> Known {
        Known(std::array::from_fn(|_| AtomicU8::new(0)))
    }
}

/// The device's autotuning: whether it runs, the winning tile of each
/// product class it has timed, and how many timed runs it took.
#[derive(Default)]
pub(crate) struct MatmulTuner {
    enabled: AtomicBool,
    winners: Mutex<HashMap<MatmulClass, Tuned>>,
    runs: AtomicU64,
    timed_ns: AtomicU64,
    /// The self-check's verdict on each variant and dtype probed so far:
    /// true where it computed the probe products right.
    verdicts: Mutex<Vec<(MatmulVariant, KernelType, bool)>>,
    /// The same verdicts by (variant, dtype), read without a lock on
    /// every product: 0 not probed, 1 right, 2 wrong.
    known: Known,
    /// A tile whose kernel computes a wrong product on purpose (a test's
    /// way to show the self-check at work; see `GpuOptions`).
    sabotaged: Option<MatmulTile>,
    /// A block type whose quantized kernels are wrong on purpose.
    sabotaged_quant: Option<GgmlType>,
}

impl MatmulTuner {
    /// A tuner, on or off; `sabotaged` names a tile whose kernel is to be
    /// wrong (tests only).
    pub fn new(enabled: bool, sabotaged: Option<MatmulTile>) -> MatmulTuner {
        let tuner = MatmulTuner {
            sabotaged,
            ..MatmulTuner::default()
        };
        tuner.set_enabled(enabled);
        tuner
    }

    /// The tile whose kernel is wrong on purpose, if any.
    pub fn sabotaged(&self) -> Option<MatmulTile> {
        self.sabotaged
    }

    /// Makes the quantized kernels of `ty` wrong on purpose (tests only).
    pub fn sabotage_quant(mut self, ty: Option<GgmlType>) -> MatmulTuner {
        self.sabotaged_quant = ty;
        self
    }

    /// The block type whose quantized kernels are wrong on purpose.
    pub fn sabotaged_quant(&self) -> Option<GgmlType> {
        self.sabotaged_quant
    }

    /// The self-check's verdict on `variant` over `dtype`, once probed.
    pub fn verdict(&self, variant: MatmulVariant, dtype: KernelType) -> Option<bool> {
        // The attention kernel's shapes are too many for a slot each; one
        // lookup under the lock is little beside an attention.
        if matches!(variant, MatmulVariant::Attention { .. }) {
            let verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
            return verdicts
                .iter()
                .find(|&&(v, d, _)| v == variant && d == dtype)
                .map(|&(.., right)| right);
        }
        match self.known.0[Known::slot(variant, dtype)].load(Ordering::Acquire) {
            0 => None,
            state => Some(state == 1),
        }
    }

    /// Keeps the self-check's verdict on `variant` over `dtype`.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub fn set_verdict(&self, variant: MatmulVariant, dtype: KernelType, right: bool) {
        let mut verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(variant, MatmulVariant::Attention { .. }) {
            if !verdicts.iter().any(|&(v, d, _)| v == variant && d == dtype) {
                verdicts.push((variant, dtype, right));
            }
            return;
        }
        let known = &self.known.0[Known::slot(variant, dtype)];
        if known.load(Ordering::Acquire) == 0 {
            verdicts.push((variant, dtype, right));
            known.store(if right { 1 } else { 2 }, Ordering::Release);
        }
    }

    /// (variants probed, variants dropped) so far, and the names of the
    /// dropped ones in the order found.
    pub fn checked(&self) -> (u64, Vec<String>) {
        let verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        let dropped = verdicts
            .iter()
            .filter(|&&(.., right)| !right)
            .map(|&(v, d, _)| v.describe(d))
            .collect();
        (verdicts.len() as u64, dropped)
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// The tile `class`'s products run (see [`Tuned::runtime`]), once
    /// timed.
    pub fn winner(&self, class: &MatmulClass) -> Option<MatmulTile> {
        self.lock().get(class).map(Tuned::runtime)
    }

    /// Keeps what autotuning chose for `class`.
    pub fn remember(&self, class: MatmulClass, tuned: Tuned) {
        self.lock().insert(class, tuned);
    }

    /// Every class chosen for so far, smallest first.
    pub fn tuned(&self) -> Vec<TunedMatmul> {
        let mut all: Vec<TunedMatmul> = self
            .lock()
            .iter()
            .map(|(class, t)| TunedMatmul {
                dtype: class.dtype.dtype(),
                below: class.sizes.map(|bits| 1u64 << bits),
                along_rows: class.fast,
                size_rule: t.default,
                winner: t.winner,
                time: t.seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()),
                size_rule_time: t
                    .default_seconds
                    .and_then(|s| Duration::try_from_secs_f64(s).ok()),
            })
            .collect();
        all.sort_by_key(|t| (t.below, t.dtype.name(), t.along_rows));
        all
    }

    /// Counts one timed run.
    pub fn count_run(&self) {
        self.runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Timed runs so far (warm-ups included).
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// Adds the time a run measured.
    pub fn add_time(&self, seconds: f64) {
        self.timed_ns
            .fetch_add((seconds * 1e9) as u64, Ordering::Relaxed);
    }

    /// Nanoseconds the timed runs measured so far.
    pub fn timed_ns(&self) -> u64 {
        self.timed_ns.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<MatmulClass, Tuned>> {
        self.winners.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_and_dtype_has_a_verdict_slot_of_its_own() {
        let dtypes = KernelType::ALL;
        let variants = MatmulTile::FIXED
            .into_iter()
            .chain([MatmulTile::Auto])
            .map(MatmulVariant::Tile)
            .chain([MatmulVariant::Gemv])
            .chain(MatmulTile::FIXED.map(MatmulVariant::Conv))
            .chain(MatmulTile::FIXED.map(MatmulVariant::ConvTransposed))
            .chain(PRODUCT_TYPES.map(MatmulVariant::Quant));
        let mut seen = std::collections::HashSet::new();
        for variant in variants {
            for dtype in dtypes {
                let slot = Known::slot(variant, dtype);
                assert!(
                    slot < Known::LEN && seen.insert(slot),
                    "{variant:?} {dtype}"
                );
            }
        }
    }
}
