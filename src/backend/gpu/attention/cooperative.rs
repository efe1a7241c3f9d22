//! Flash attention on cooperative matrices (tensor cores): the scores
//! `q kᵀ` and the products `p v` of each tile of keys as `F` x `F` x `F`
//! fragment products, the online softmax between them in f32 by the
//! lanes. With `F` the fragment side and `S` the device's subgroup size:
//! - A workgroup is four subgroups (`4 S` threads) and takes `4 F` query
//!   rows of one batch (a key head: the queries of the query heads it
//!   serves), `F` rows a subgroup, and one part of the value rows: up to
//!   128 columns, the grid's third dimension counting the parts (wider
//!   value rows take more workgroups, each scoring the keys again, rather
//!   than more accumulators than registers hold). Each subgroup loads its
//!   rows of `q` as fragments once, staged through workgroup memory in
//!   chunks of at most 128 columns of the head (fewer where workgroup
//!   memory is short), and keeps them in registers; it keeps its rows of
//!   its part of the output as accumulator fragments.
//! - Per tile of `2 F` keys: all threads stage the keys in workgroup
//!   memory as f16 (rows padded by 8 halves); each subgroup multiplies its
//!   `q` fragments by them into its rows of scores and stores them; the
//!   lanes (`S / F` a row, merging by subgroup shuffles) mask, scale and
//!   bias the scores, update the row's maximum and sum, and write the
//!   weights `exp(score - max)` as f16, while all threads stage the values
//!   in the keys' place; where a row's maximum grew, the subgroups take
//!   their accumulators through workgroup memory to scale them; then each
//!   subgroup adds its weights times the values to its accumulators.
//! - Everything inside the loop over key tiles is unrolled: a thread's
//!   loop trips are the tiles (lavapipe counts every trip of every loop).
//!
//! Semantics are flash.wgsl's: scores, maxima and sums in f32; a row with
//! a NaN or +inf score is NaN, one that attends no key has weights of 0;
//! a non-finite value of
//! a key that no query of the workgroup reaches (causal) makes its column
//! NaN, as the composed product's zero weight would. The operands are
//! rounded to f16 on the way in (exact for f16; f32 only under
//! `MatmulPrecision::Fast`, whose range is f16's), and so are the weights
//! (as FlashAttention's).

use super::plan::Extents;
use super::{FlashParams, MaskKind, operands, walk};
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget::ITERATIONS;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::matmul_tile_choice::MatmulTile;
use crate::backend::gpu::record::{family_key, record_family};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::SmallVec;

const FLASH_COOP_WGSL: &str = shader!("attention/flash_coop.wgsl");

/// The finish's store of an output.
pub(super) const STORE: &str = "store_out(u32(o0 + i32(col) * params.o_col), y);";

/// Subgroups a workgroup.
pub(super) const SUBGROUPS: u32 = 4;

/// Halves each staged row of keys, values and weights is padded by.
pub(super) const PAD: u32 = 8;

/// Floats each row of scores and of the accumulators' area is padded by.
pub(super) const PAD_F: u32 = 4;

/// The widest head rows (elements) the kernel takes: a lane holds its
/// subgroup's rows of `q` in registers.
const WIDEST_HEAD: usize = 256;

/// The most value columns a workgroup takes (elements): a lane holds `F`
/// rows' share of their accumulators in registers.
const WIDEST_PART: usize = 128;

/// The cooperative flash kernel's shape on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopFlash {
    /// `F`: the device's products are `F` x `F` x `F` (8 or 16).
    pub fragment: u32,
    /// `S`: lanes a subgroup (`S` >= `F`, a power of two up to 64).
    pub lanes: u32,
    /// Fragments across a head row, and across a workgroup's part of a
    /// value row (zeros past the rows).
    pub head_frags: u32,
    pub value_frags: u32,
    /// Fragments of the head staged at a time to load `q` (`head_frags`
    /// where workgroup memory holds a whole row).
    pub q_frags: u32,
}

/// Everything that selects a distinct cooperative flash pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CoopFlashKey {
    /// q's, k's, v's and the output's: f16, or f32 under
    /// `MatmulPrecision::Fast`.
    pub dtype: KernelType,
    pub mask: MaskKind,
    pub shape: CoopFlash,
    /// Every output off by one (`GpuOptions::sabotage_matmul` naming the
    /// cooperative tile: a test's way to show the self-check at work).
    pub sabotaged: bool,
}

family_key!(
    CoopFlashKey,
    "webtensor attention cooperative",
    coop_flash_source
);

impl CoopFlash {
    /// The kernel for an attention of `extents` in `dtype` on the device of
    /// `facts`: `None` where the device has no cooperative matrices for
    /// `dtype`, the head rows are wider than [`WIDEST_HEAD`], the value
    /// rows' parts outnumber a grid dimension, the workgroup memory is too
    /// small, the keys' tiles outrun the loop budget, or a batch has fewer
    /// query rows than a fragment (a decoding step's: the split kernel
    /// reads its keys with more workgroups). Value rows past
    /// [`WIDEST_PART`] are cut into parts of equal fragments; `q` is
    /// staged in the widest chunks that fit, of at most [`WIDEST_PART`]
    /// columns (what the widest narrow head stages whole).
    pub fn plan(facts: &AdapterFacts, extents: &Extents, dtype: KernelType) -> Option<Self> {
        let fragment = facts.cooperative.filter(|_| facts.cooperative_for(dtype))?;
        let lanes = facts.subgroup_min_size;
        let shape_ok = matches!(fragment, 8 | 16)
            && matches!(lanes, 8 | 16 | 32 | 64)
            && lanes >= fragment
            && lanes * 8 >= fragment * fragment;
        let f = fragment as usize;
        let value_frags = extents.value.div_ceil(f);
        let parts = value_frags.div_ceil(WIDEST_PART / f);
        let fits = extents.head <= WIDEST_HEAD
            && parts <= facts.max_workgroups_per_dim as usize
            && extents.length >= f
            && extents.source.div_ceil(2 * f) <= ITERATIONS;
        if !(shape_ok && fits && extents.head > 0 && extents.value > 0) {
            return None;
        }
        let head_frags = extents.head.div_ceil(f) as u32;
        (1..=head_frags.min((WIDEST_PART / f) as u32))
            .rev()
            .map(|q_frags| CoopFlash {
                fragment,
                lanes,
                head_frags,
                value_frags: value_frags.div_ceil(parts) as u32,
                q_frags,
            })
            .find(|shape| shape.workgroup_bytes() <= facts.workgroup_bytes)
    }

    /// Workgroups across a value row of `value` elements.
    pub fn parts(self, value: usize) -> usize {
        value.div_ceil((self.value_frags * self.fragment) as usize)
    }

    /// Query rows a workgroup takes.
    pub fn rows(self) -> u32 {
        SUBGROUPS * self.fragment
    }

    /// Keys a tile.
    pub(super) fn keys(self) -> u32 {
        2 * self.fragment
    }

    pub(super) fn threads(self) -> u32 {
        SUBGROUPS * self.lanes
    }

    /// Halves a staged row of keys or values.
    pub(super) fn kv_pitch(self) -> u32 {
        self.head_frags.max(self.value_frags) * self.fragment + PAD
    }

    /// Halves a staged chunk of a row of queries.
    pub(super) fn q_pitch(self) -> u32 {
        self.q_frags * self.fragment + PAD
    }

    /// Halves of the area the queries, then the keys and values, pass
    /// through.
    pub(super) fn kv_halves(self) -> u32 {
        (self.rows() * self.q_pitch()).max(self.keys() * self.kv_pitch())
    }

    /// Bytes of workgroup memory the kernel declares.
    pub fn workgroup_bytes(self) -> u32 {
        let (f, rows, keys) = (self.fragment, self.rows(), self.keys());
        let kv = 2 * self.kv_halves();
        let scores = 4 * rows * (keys + PAD_F);
        let weights = 2 * rows * (keys + PAD);
        let out = 4 * 2 * SUBGROUPS * f * (f + PAD_F);
        let rows_state = 4 * 3 * rows;
        let poison = 4 * self.value_frags * f;
        kv + scores + weights + out + rows_state + poison + 8
    }
}

/// Records an attention on the cooperative kernel `shape`: `params` with
/// everything but the grid filled, `bindings` q, k, v, the output and the
/// mask where given; one dispatch, a workgroup per `4 F` query rows of a
/// batch and part of the value rows.
///
/// # Errors
/// `TooLarge` for more workgroups than a dispatch holds or extents past
/// the kernel's 32 bits.
pub(super) fn record(
    ctx: &GpuContext,
    shape: CoopFlash,
    (dtype, mask): (KernelType, MaskKind),
    extents: &Extents,
    mut params: FlashParams,
    bindings: SmallVec<[Bound; 4]>,
) -> Result<bool> {
    let tiles = extents.length.div_ceil(shape.rows() as usize);
    let workgroups = extents.batches.saturating_mul(tiles);
    let big = |what: &'static str, n: usize| Error::TooLarge {
        op: "sdpa",
        what,
        requested: n as u64,
        limit: u32::MAX as u64,
    };
    let rows_wide = extents.batches.saturating_mul(extents.length);
    let elements = rows_wide.saturating_mul(extents.value.max(extents.head));
    if u32::try_from(workgroups).is_err() {
        return Err(big("workgroups", workgroups));
    }
    if u32::try_from(elements).is_err() {
        return Err(big("elements", elements));
    }
    let parts = shape.parts(extents.value);
    if parts > ctx.facts.max_workgroups_per_dim as usize {
        return Err(big("value parts", parts));
    }
    let groups = grid_of(workgroups, 1, ctx.facts.max_workgroups_per_dim)?;
    params.tiles = tiles as u32;
    params.splits = 1;
    params.tiles_per_split = extents.source.div_ceil(shape.keys() as usize) as u32;
    params.workgroups = workgroups as u32;
    params.row_width = groups[0];
    params.pair_offset = 0;
    let key = CoopFlashKey {
        dtype,
        mask,
        shape,
        sabotaged: ctx.tuner.sabotaged() == Some(MatmulTile::Cooperative),
    };
    record_family(
        ctx,
        &key,
        params.bytes(),
        bindings,
        [groups[0], groups[1], parts as u32],
    )?;
    Ok(true)
}

/// The WGSL source of the cooperative flash kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn coop_flash_source(key: &CoopFlashKey) -> Result<String> {
    let (bindings, access) = operands(key.dtype, true, key.mask, false);
    let walk = walk();
    let main = key.shape.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("MAIN", main.as_str()),
    ];
    let source = fill_kernel(
        "cooperative attention kernel",
        FLASH_COOP_WGSL,
        true,
        &FlashParams::wgsl(),
        &slots,
    )?;
    let source = match key.sabotaged {
        true => source.replace(
            STORE,
            "store_out(u32(o0 + i32(col) * params.o_col), y + 1.0);",
        ),
        false => source,
    };
    Ok(format!("enable wgpu_cooperative_matrix;\n{source}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    #[cfg(not(target_arch = "wasm32"))]
    use crate::backend::gpu::kernel::prelude::tests::translate_to_spirv;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    /// Every shape a device may run: both fragment sides, the subgroup
    /// sizes, narrow and wide rows, the widest heads staged whole and in
    /// chunks (one dividing the head, one not).
    fn shapes() -> Vec<CoopFlash> {
        let mut all = Vec::new();
        for (fragment, lanes) in [(8, 8), (8, 32), (16, 32), (16, 64)] {
            let (wide, part) = (256 / fragment, 128 / fragment);
            for (head_frags, value_frags, q_frags) in [
                (1, 1, 1),
                (2, 3, 2),
                (part, part, part),
                (wide, part, wide),
                (wide, part, wide / 2),
                (wide, 3, wide / 2 + 2),
            ] {
                all.push(CoopFlash {
                    fragment,
                    lanes,
                    head_frags,
                    value_frags,
                    q_frags,
                });
            }
        }
        all
    }

    #[test]
    fn every_cooperative_attention_kernel_is_valid_wgsl_and_translates_to_spirv() {
        for (i, shape) in shapes().into_iter().enumerate() {
            let mask = [MaskKind::None, MaskKind::Bool, MaskKind::Float][i % 3];
            for dtype in [KernelType::F16, KernelType::F32] {
                let key = CoopFlashKey {
                    dtype,
                    mask,
                    shape,
                    sabotaged: false,
                };
                let source = coop_flash_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, FlashParams::FIELDS, FlashParams::SIZE, "flash");
                // The subgroup and lane index workgroup arrays: both are
                // clamped before any use.
                for (id, clamp) in [
                    ("sg_id", "let sg = min(sg_id, 3u);"),
                    ("lane_id", "let lane = min(lane_id, LANES - 1u);"),
                ] {
                    assert_eq!(source.matches(id).count(), 2, "{key:?}: {id}");
                    assert!(source.contains(clamp), "{key:?}: {clamp}");
                }
                #[cfg(not(target_arch = "wasm32"))]
                translate_to_spirv(&source, &format!("{key:?}"));
            }
        }
    }

    #[test]
    fn the_widest_rows_fit_a_big_gpu_and_lavapipe() {
        // An NVIDIA GPU: 16 x 16 fragments, 32 lanes, 48 KiB.
        let wide = CoopFlash {
            fragment: 16,
            lanes: 32,
            head_frags: 8,
            value_frags: 8,
            q_frags: 8,
        };
        assert!(
            wide.workgroup_bytes() <= 48 << 10,
            "{}",
            wide.workgroup_bytes()
        );
        // Lavapipe: 8 x 8 fragments, 8 lanes, 32 KiB.
        let lvp = CoopFlash {
            fragment: 8,
            lanes: 8,
            head_frags: 16,
            value_frags: 16,
            q_frags: 16,
        };
        assert!(
            lvp.workgroup_bytes() <= 32 << 10,
            "{}",
            lvp.workgroup_bytes()
        );
    }

    /// A device of `fragment` x `fragment` products, `lanes` lanes and
    /// `kib` KiB of workgroup memory.
    fn device(fragment: u32, lanes: u32, kib: u32) -> AdapterFacts {
        AdapterFacts {
            name: String::new(),
            backend: String::new(),
            device_type: String::new(),
            driver: String::new(),
            native_f16: true,
            subgroups: true,
            subgroup_min_size: lanes,
            timestamps: false,
            max_storage_binding: 1 << 30,
            max_buffer_size: 1 << 30,
            max_workgroups_per_dim: 65535,
            max_storage_buffers: 8,
            max_fft_line: 4096,
            workgroup_bytes: kib << 10,
            max_uniform_binding: 1 << 16,
            elementwise_run: 4,
            resident_threads: 1 << 16,
            spin_wait: std::time::Duration::ZERO,
            uniform_align: 256,
            storage_align: 256,
            runtime_checks: false,
            cooperative: Some(fragment),
            matmul_precision: crate::backend::gpu::matmul_tile_choice::MatmulPrecision::Exact,
        }
    }

    fn extents(head: usize, value: usize) -> Extents {
        Extents {
            batches: 4,
            length: 100,
            source: 100,
            head,
            value,
            rank: 4,
        }
    }

    /// Heads up to 256 wide run, `q` staged in chunks where a whole row
    /// would not fit beside the rest; value rows past 128 are cut into
    /// parts of equal fragments, each within 128.
    #[test]
    fn wide_heads_stage_q_in_chunks_and_wide_values_take_parts() {
        let nvidia = device(16, 32, 48);
        let plan = |e: Extents| CoopFlash::plan(&nvidia, &e, KernelType::F16).unwrap();
        let narrow = plan(extents(128, 128));
        assert_eq!((narrow.head_frags, narrow.q_frags), (8, 8));
        assert_eq!((narrow.value_frags, narrow.parts(128)), (8, 1));
        let gemma = plan(extents(256, 256));
        assert_eq!(gemma.head_frags, 16);
        assert_eq!(gemma.q_frags, 8);
        assert_eq!((gemma.value_frags, gemma.parts(256)), (8, 2));
        assert!(gemma.workgroup_bytes() <= 48 << 10);
        // 200 columns: 13 fragments in parts of 7 and 6, not 8 and 5.
        let uneven = plan(extents(64, 200));
        assert_eq!((uneven.value_frags, uneven.parts(200)), (7, 2));
        assert_eq!(uneven.q_frags, 4);
        let lavapipe = device(8, 8, 32);
        let lvp = CoopFlash::plan(&lavapipe, &extents(256, 1000), KernelType::F16).unwrap();
        assert_eq!(
            (lvp.head_frags, lvp.value_frags, lvp.parts(1000)),
            (32, 16, 8)
        );
        assert_eq!(lvp.q_frags, 16);
        assert!(lvp.workgroup_bytes() <= 32 << 10, "{lvp:?}");
        // Past the widest head: the flash kernel's.
        assert_eq!(
            CoopFlash::plan(&nvidia, &extents(257, 64), KernelType::F16),
            None
        );
    }
}
