//! GPU scaled dot-product attention: `attention/flash.wgsl`, a flash
//! kernel (an online softmax over tiles of keys staged in workgroup
//! memory, 16 queries a workgroup, scores and sums in f32). One dispatch
//! where the (batch, query tile) pairs fill half the device and each
//! workgroup's keys fit the loop budget (about 380 keys of a 128-wide
//! head, 700 of a 64-wide one); else the keys are split over workgroups
//! that write partial results, and `attention/combine.wgsl` merges them:
//! two dispatches, or two per chunk of pairs whose partial results fit
//! one binding (a decoding step's one query row reads its keys with many
//! workgroups; a long prompt's keys outrun the budget). Where the device
//! has cooperative matrices, f16 attention of a fragment's query rows or
//! more (f32 under `MatmulPrecision::Fast`) runs `cooperative.rs`'s kernel
//! instead: one dispatch, the scores and weighted values on tensor cores,
//! once its self-check (`probe.rs`) found it right for the shape and mask.

mod cooperative;
mod cooperative_wgsl;
mod plan;
#[cfg(not(target_arch = "wasm32"))]
mod probe;

use crate::backend::AttentionCall;
use crate::backend::Storage;
pub(crate) use crate::backend::gpu::attention_mask::MaskKind;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn, needs_f16, store_out_fn};
use crate::backend::gpu::kernel::grid::{grid, grid_of};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::strided::numbered_walk;
use crate::backend::gpu::matmul::self_check::{Verdict, verdict_with};
use crate::backend::gpu::matmul_tile_choice::MatmulVariant;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use cooperative::CoopFlash;
use plan::{Extents, Limits, Plan, batch_layouts};
use smallvec::smallvec;
use std::sync::Arc;

const FLASH_WGSL: &str = shader!("attention/flash.wgsl");
const COMBINE_WGSL: &str = shader!("attention/combine.wgsl");

/// The operands in the order of the batch walk and the parameter block.
const OPERANDS: [&str; 5] = ["q", "k", "v", "m", "o"];

params_block! {
    /// `Params` of flash.wgsl.
    pub(crate) struct FlashParams {
        /// Axes of the batch walk (its shape: the leading axes, the key
        /// heads and the query heads of each).
        rank: u32,
        /// Queries a head, keys, the head's and the value's extents.
        length: u32,
        source: u32,
        head: u32,
        value: u32,
        /// Tiles of 16 rows a batch; splits of the keys; key tiles a
        /// split.
        tiles: u32,
        splits: u32,
        tiles_per_split: u32,
        /// Workgroups of the dispatch, and per grid row.
        workgroups: u32,
        row_width: u32,
        /// Keys past a query's position are masked.
        causal: u32,
        scale: f32,
        /// Steps between rows and along a row of each operand.
        q_row: i32,
        q_col: i32,
        k_row: i32,
        k_col: i32,
        v_row: i32,
        v_col: i32,
        m_row: i32,
        m_col: i32,
        o_row: i32,
        o_col: i32,
        /// Where each operand's views start.
        q_offset: u32,
        k_offset: u32,
        v_offset: u32,
        m_offset: u32,
        o_offset: u32,
        /// The first (batch, query tile) pair of the dispatch.
        pair_offset: u32,
        /// Rows a batch (queries times the query heads a key head serves),
        /// and the steps between those heads in q, the mask and the output.
        rows: u32,
        q_group: i32,
        m_group: i32,
        o_group: i32,
        /// The batch walk's extents, and each operand's strides over it.
        shape: [u32; 8],
        q_strides: [i32; 8],
        k_strides: [i32; 8],
        v_strides: [i32; 8],
        m_strides: [i32; 8],
        o_strides: [i32; 8],
    }
}

params_block! {
    /// `Params` of combine.wgsl.
    pub(crate) struct CombineParams {
        /// Partial rows (16 a pair), the value's extent, the splits.
        rows: u32,
        value: u32,
        splits: u32,
        /// Workgroups per grid row.
        row_width: u32,
        out_offset: u32,
        /// The dispatch's first (batch, query tile) pair; query tiles a
        /// batch, queries.
        pair_offset: u32,
        tiles: u32,
        length: u32,
    }
}

/// Everything that selects a distinct flash pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FlashKey {
    /// q's, k's and v's (f32, f16 or bf16), and the output's unless
    /// `partials`.
    pub dtype: KernelType,
    pub native_f16: bool,
    pub mask: MaskKind,
    /// Keys a tile (32, 16 or 8).
    pub keys: u32,
    /// Quads of a head and of a value row (a value row's a multiple of 4).
    pub head4: u32,
    pub value4: u32,
    /// Writes f32 partial results for `combine.wgsl`, not the output.
    pub partials: bool,
}

family_key!(FlashKey, "webtensor attention", flash_source);

/// Everything that selects a distinct combine pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CombineKey {
    pub dtype: KernelType,
    pub native_f16: bool,
}

family_key!(CombineKey, "webtensor attention combine", combine_source);

/// `fn quad_{name}(start, row, e4)`: elements `4 e4 .. 4 e4 + 4` of row
/// `row` of operand `name`, through its row and column steps; zero past
/// `limit`.
fn quad_fn(name: &str, limit: &str) -> String {
    let lane = |c: usize, field: &str| {
        format!(
            "    if (e + {c}u < params.{limit}) {{\n        \
             v.{field} = load_{name}(u32(base + i32(e + {c}u) * params.{name}_col));\n    }}\n"
        )
    };
    format!(
        "fn quad_{name}(start: i32, row: u32, e4: u32) -> vec4<f32> {{\n    \
         let base = start + i32(row) * params.{name}_row;\n    \
         let e = 4u * e4;\n    \
         var v = vec4<f32>(0.0);\n{}{}{}{}    return v;\n}}\n",
        lane(0, "x"),
        lane(1, "y"),
        lane(2, "z"),
        lane(3, "w")
    )
}

/// The output row's share of a thread: the quotient, `acc` where the row
/// attends no key (weights of 0), or NaN.
const FINISH_OUTPUT: &str = "        for (var u = 0u; u < OWNED; u++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (part + 4u * u) + c;
                if (col < params.value) {
                    var y = nan_f32();
                    if (!bad && poison[u][c] == 0u) {
                        y = acc[u][c];
                        if (l != 0.0) {
                            y = div_f32(y, l);
                        }
                    }
                    store_out(u32(o0 + i32(col) * params.o_col), y);
                }
            }
        }";

/// The split's partial result for the row: m and l (NaN for a bad row)
/// by the row's first thread, and each thread's share of acc.
const FINISH_PARTIALS: &str = "        let row = (w / params.splits) * ROWS + r;
        let p0 = (row * params.splits + split) * (params.value + 2u);
        if (part == 0u) {
            var total = l;
            if (bad) {
                total = nan_f32();
            }
            part_buf[p0] = m;
            part_buf[p0 + 1u] = total;
        }
        for (var u = 0u; u < OWNED; u++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (part + 4u * u) + c;
                if (col < params.value) {
                    var a = acc[u][c];
                    if (poison[u][c] != 0u) {
                        a = nan_f32();
                    }
                    part_buf[p0 + 2u + col] = a;
                }
            }
        }";

/// The bindings and access functions of a flash kernel: q (1), k (2), v
/// (3), the output (4; f32 partial results where `partials`), the mask
/// (5) where given; `quad_q`, `quad_k`, `quad_v`, `store_out`, `allowed`
/// and `bias`.
fn operands(dtype: KernelType, native: bool, mask: MaskKind, partials: bool) -> (String, String) {
    let mut bindings = String::new();
    let mut access = String::new();
    for (binding, name) in [(1, "q"), (2, "k"), (3, "v")] {
        let buf = format!("{name}_buf");
        bindings.push_str(&buffer_decl(binding, &buf, dtype, native, false));
        access.push_str(&load_fn(&format!("load_{name}"), &buf, dtype, native));
    }
    access.push_str(&quad_fn("q", "head"));
    access.push_str(&quad_fn("k", "head"));
    access.push_str(&quad_fn("v", "value"));
    if partials {
        bindings.push_str("@group(0) @binding(4) var<storage, read_write> part_buf: array<f32>;\n");
    } else {
        bindings.push_str(&buffer_decl(4, "out_buf", dtype, native, true));
        access.push_str(&store_out_fn(dtype, native));
    }
    let position = "u32(start + i32(i) * params.m_row + i32(key) * params.m_col)";
    let (allowed, bias) = match mask {
        MaskKind::None => ("true".to_string(), "0.0".to_string()),
        MaskKind::Bool => (format!("load_mask({position})"), "0.0".to_string()),
        MaskKind::Float => ("true".to_string(), format!("load_mask({position})")),
    };
    match mask {
        MaskKind::None => {}
        MaskKind::Bool => {
            bindings.push_str(&buffer_decl(5, "mask_buf", KernelType::Bool, native, false));
            access.push_str(&load_fn("load_mask", "mask_buf", KernelType::Bool, native));
        }
        MaskKind::Float => {
            bindings.push_str(&buffer_decl(5, "mask_buf", dtype, native, false));
            access.push_str(&load_fn("load_mask", "mask_buf", dtype, native));
        }
    }
    access.push_str(&format!(
        "fn allowed(start: i32, i: u32, key: u32) -> bool {{\n    return {allowed};\n}}\n\
         fn bias(start: i32, i: u32, key: u32) -> f32 {{\n    return {bias};\n}}\n"
    ));
    (bindings, access)
}

/// The batch walk of a flash kernel: `batch_starts(b)`.
fn walk() -> String {
    numbered_walk(
        "batch_starts",
        ["params.rank", "params.shape"],
        OPERANDS.len(),
        |k| format!("i32(params.{}_offset)", OPERANDS[k]),
        |k| format!("params.{}_strides", OPERANDS[k]),
    )
}

/// The WGSL source of the flash kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn flash_source(key: &FlashKey) -> Result<String> {
    let (bindings, access) = operands(key.dtype, key.native_f16, key.mask, key.partials);
    let walk = walk();
    let tile = format!(
        "const KEYS: u32 = {}u;\nconst HEAD4: u32 = {}u;\nconst VALUE4: u32 = {}u;\n\
         const KV_STRIDE: u32 = {}u;\n",
        key.keys,
        key.head4,
        key.value4,
        key.head4.max(key.value4) + 1
    );
    let finish = if key.partials {
        FINISH_PARTIALS
    } else {
        FINISH_OUTPUT
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("TILE", tile.as_str()),
        ("FINISH", finish),
    ];
    let (f16, params) = (needs_f16(key.dtype, key.native_f16), FlashParams::wgsl());
    fill_kernel("attention kernel", FLASH_WGSL, f16, &params, &slots)
}

/// The WGSL source of the combine kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn combine_source(key: &CombineKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let bindings = format!(
        "@group(0) @binding(1) var<storage, read> part_buf: array<f32>;\n{}",
        buffer_decl(2, "out_buf", dtype, native, true)
    );
    let access = store_out_fn(dtype, native);
    let slots = [("BINDINGS", bindings.as_str()), ("ACCESS", access.as_str())];
    let (f16, params) = (needs_f16(dtype, native), CombineParams::wgsl());
    fill_kernel(
        "attention combine kernel",
        COMBINE_WGSL,
        f16,
        &params,
        &slots,
    )
}

/// Records `call`, whose output storage is `out`: false (nothing
/// recorded) where its heads are wider than the device's workgroup memory
/// holds, or its partial results would not fit one binding.
///
/// # Errors
/// `Error::Internal` for operands the op layer should not have sent (other
/// dtypes, an output that is not fresh and contiguous); `Error::Gpu` when
/// an operand is not on this GPU; `TooLarge` for views over more than one
/// storage binding or more workgroups than a dispatch holds; failures of
/// the cooperative kernel's probe.
pub(crate) fn attention(out: &GpuStorage, call: &AttentionCall) -> Result<bool> {
    const OP: &str = "sdpa";
    let ctx = &out.ctx;
    let facts = &ctx.facts;
    let dtype = call.q.dtype;
    let float = matches!(dtype, KernelType::F32 | KernelType::F16 | KernelType::BF16);
    let same = [&call.k, &call.v, &call.out]
        .iter()
        .all(|t| t.dtype == dtype);
    let mask = match &call.mask {
        None => MaskKind::None,
        Some(m) if m.dtype == KernelType::Bool => MaskKind::Bool,
        Some(m) if m.dtype == dtype => MaskKind::Float,
        Some(_) => {
            return Err(Error::internal(
                OP,
                "the attention kernel got a mask dtype it does not take",
            ));
        }
    };
    if !float || !same || !call.out.layout.is_contiguous() {
        return Err(Error::internal(
            OP,
            "the attention kernel got operands it does not take",
        ));
    }
    let coop = match CoopFlash::plan(facts, &Extents::of(call), dtype) {
        Some(shape) if coop_runs(ctx, shape, dtype, mask)? => Some(shape),
        _ => None,
    };
    record(out, call, mask, coop)
}

/// Whether `shape` is to run an attention of `dtype` with `mask` on the
/// device of `ctx`: its probe was right, or cannot run there (a browser,
/// wgpu's noop backend, bindings capped below its operands). Not while a
/// capture or profile is open before the probe: the flash kernel runs.
///
/// # Errors
/// Failures of the probe's uploads, dispatch or readback.
fn coop_runs(
    ctx: &Arc<GpuContext>,
    shape: CoopFlash,
    dtype: KernelType,
    mask: MaskKind,
) -> Result<bool> {
    let variant = MatmulVariant::Attention {
        head_frags: shape.head_frags,
        value_frags: shape.value_frags,
        mask,
    };
    #[cfg(not(target_arch = "wasm32"))]
    let verdict = verdict_with(
        ctx,
        variant,
        dtype,
        || probe::Probe::of(shape).fits(ctx, dtype),
        || probe::Probe::of(shape).answers_right(ctx, shape, dtype, mask),
    )?;
    // A browser probes nothing (its queue cannot be waited on).
    #[cfg(target_arch = "wasm32")]
    let verdict = verdict_with(ctx, variant, dtype, || false, || Ok(false))?;
    Ok(matches!(verdict, Verdict::Right | Verdict::Unchecked))
}

/// Records `call` (checked by `attention`, whose mask is `mask`) on the
/// cooperative kernel `coop` where given, else on the flash kernel: false
/// (nothing recorded) where the flash kernel cannot take it.
///
/// # Errors
/// As `attention`'s.
fn record(
    out: &GpuStorage,
    call: &AttentionCall,
    mask: MaskKind,
    coop: Option<CoopFlash>,
) -> Result<bool> {
    const OP: &str = "sdpa";
    let ctx = &out.ctx;
    let facts = &ctx.facts;
    let dtype = call.q.dtype;
    let extents = Extents::of(call);
    let plan = match coop {
        Some(_) => None,
        None => match Plan::new(extents, Limits::of(facts)) {
            Some(plan) => Some(plan),
            None => return Ok(false),
        },
    };
    let layouts = batch_layouts(call)?;
    let (q_bound, q) = Bound::view(OP, call.q.clone(), false)?;
    let (k_bound, k) = Bound::view(OP, call.k.clone(), false)?;
    let (v_bound, v) = Bound::view(OP, call.v.clone(), false)?;
    let (o_bound, o) = Bound::view(OP, call.out.clone(), true)?;
    let mut bindings = smallvec![q_bound, k_bound, v_bound];
    let mut params = FlashParams {
        rank: layouts.shape.len() as u32,
        length: call.q.layout.dims()[call.q.layout.rank() - 2] as u32,
        rows: extents.length as u32,
        q_group: layouts.group_steps[0] as i32,
        m_group: layouts.group_steps[1] as i32,
        o_group: layouts.group_steps[2] as i32,
        source: extents.source as u32,
        head: extents.head as u32,
        value: extents.value as u32,
        causal: u32::from(call.causal),
        scale: call.scale,
        ..bytemuck::Zeroable::zeroed()
    };
    let steps = |t: &crate::backend::TensorRef| {
        let s = t.layout.strides();
        let r = s.len();
        [s[r - 2] as i32, s[r - 1] as i32]
    };
    [params.q_row, params.q_col] = steps(&q);
    [params.k_row, params.k_col] = steps(&k);
    [params.v_row, params.v_col] = steps(&v);
    [params.o_row, params.o_col] = steps(&o);
    params.q_offset = q.layout.offset() as u32;
    params.k_offset = k.layout.offset() as u32;
    params.v_offset = v.layout.offset() as u32;
    params.o_offset = o.layout.offset() as u32;
    if let Some(m) = &call.mask {
        let (m_bound, m) = Bound::view(OP, m.clone(), false)?;
        bindings.push(m_bound);
        [params.m_row, params.m_col] = steps(&m);
        params.m_offset = m.layout.offset() as u32;
    }
    for (a, n) in layouts.shape.iter().enumerate() {
        params.shape[a] = *n as u32;
        params.q_strides[a] = layouts.strides[0][a] as i32;
        params.k_strides[a] = layouts.strides[1][a] as i32;
        params.v_strides[a] = layouts.strides[2][a] as i32;
        params.m_strides[a] = layouts.strides[3][a] as i32;
        params.o_strides[a] = layouts.strides[4][a] as i32;
    }
    if let Some(shape) = coop {
        bindings.insert(3, o_bound);
        return cooperative::record(ctx, shape, (dtype, mask), &extents, params, bindings);
    }
    let Some(plan) = plan else {
        return Ok(false);
    };
    params.tiles = plan.tiles as u32;
    params.splits = plan.splits as u32;
    params.tiles_per_split = plan.tiles_per_split as u32;
    let key = FlashKey {
        dtype,
        native_f16: facts.native_f16,
        mask,
        keys: plan.keys,
        head4: plan.head4,
        value4: plan.value4,
        partials: plan.splits > 1,
    };
    let combine_key = CombineKey {
        dtype,
        native_f16: facts.native_f16,
    };
    // The pairs of (batch, query tile) in chunks whose partial results
    // fit one binding (all at once without splits).
    let pairs = plan.batches * plan.tiles;
    for first in (0..pairs).step_by(plan.pairs_per_chunk) {
        let count = plan.pairs_per_chunk.min(pairs - first);
        let workgroups = count * plan.splits;
        let groups = grid_of(workgroups, 1, facts.max_workgroups_per_dim)?;
        params.workgroups = workgroups as u32;
        params.row_width = groups[0];
        params.pair_offset = first as u32;
        let mut all = bindings.clone();
        if plan.splits == 1 {
            // The mask is bound last (binding 5) where given; the output
            // is 4.
            all.insert(3, o_bound.clone());
            record_family(ctx, &key, params.bytes(), all, [groups[0], groups[1], 1])?;
            continue;
        }
        let rows = count * plan::ROWS;
        let partials = Arc::new(Storage::Gpu(GpuStorage::uninit(
            ctx,
            OP,
            KernelType::F32,
            rows * plan.splits * (plan.value + 2),
        )?));
        all.insert(3, Bound::new(OP, &partials, true)?);
        record_family(ctx, &key, params.bytes(), all, [groups[0], groups[1], 1])?;
        let combine_groups = grid(rows * plan.value, facts.max_workgroups_per_dim)?;
        let combine = CombineParams {
            rows: rows as u32,
            value: plan.value as u32,
            splits: plan.splits as u32,
            row_width: combine_groups[0],
            out_offset: o.layout.offset() as u32,
            pair_offset: first as u32,
            tiles: plan.tiles as u32,
            length: plan.length as u32,
        };
        record_family(
            ctx,
            &combine_key,
            combine.bytes(),
            smallvec![Bound::new(OP, &partials, false)?, o_bound.clone()],
            [combine_groups[0], combine_groups[1], 1],
        )?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::{FLOAT_STORAGES, validate};

    #[test]
    fn every_attention_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            for mask in [MaskKind::None, MaskKind::Bool, MaskKind::Float] {
                for (keys, head4, value4, partials) in [
                    (32, 32, 32, false),
                    (16, 4, 8, true),
                    (8, 64, 64, false),
                    (32, 2, 4, true),
                    (16, 20, 28, false),
                ] {
                    let key = FlashKey {
                        dtype,
                        native_f16,
                        mask,
                        keys,
                        head4,
                        value4,
                        partials,
                    };
                    let source = flash_source(&key).unwrap();
                    validate(&source, &format!("{key:?}"));
                    assert_layout(&source, FlashParams::FIELDS, FlashParams::SIZE, "flash");
                }
            }
            let key = CombineKey { dtype, native_f16 };
            let source = combine_source(&key).unwrap();
            validate(&source, &format!("{key:?}"));
            assert_layout(
                &source,
                CombineParams::FIELDS,
                CombineParams::SIZE,
                "combine",
            );
        }
    }
}
