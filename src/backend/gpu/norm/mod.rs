//! GPU layer, RMS and group normalisation: `norm/norm.wgsl`, one workgroup
//! per line (the trailing axes the op normalises over, flattened; a group
//! normalisation's lines are its (batch, group) pairs) or, for aligned
//! lines that fit a subgroup's registers, one subgroup per line reading it
//! once (rows mode); the line's
//! statistics summed in f32 over the workgroup, then one pass writing
//! each output with its weight and bias: one dispatch per op. Few long
//! lines are split over workgroups instead, in two dispatches (`split.rs`).

mod split;

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn, needs_f16};
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::rows;
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{NormCall, Storage};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;
use std::sync::Arc;

const NORM_WGSL: &str = shader!("norm/norm.wgsl");

line_params! {
    /// `Params` of norm.wgsl.
    /// `row_width` counts workgroups, one per line (per chunk of a line
    /// for a split's two stages).
    pub(crate) struct NormParams {
        /// eps as f32 bits.
        eps: u32,
        /// Always 0 (see `kept` in the AFFINE slot).
        zero: u32,
        w_offset: u32,
        b_offset: u32,
        /// A group normalisation's groups, channels per group and elements
        /// per channel (see `NormCall::channels`); 1, 1, 1 otherwise.
        groups: u32,
        per_group: u32,
        span: u32,
        /// Chunks per line and their length (split lines, `split.rs`); 1
        /// and the line's length otherwise.
        splits: u32,
        chunk: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Which kernel of a normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NormStage {
    /// A workgroup (or a subgroup) per line: the whole op.
    Whole,
    /// Split lines' chunk statistics into partials (`split.rs`).
    Stats,
    /// Split lines' outputs from their partials.
    Apply,
}

/// Everything that selects a distinct normalisation pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct NormKey {
    /// f32, f16 or bf16: the input's and the output's.
    pub dtype: KernelType,
    pub native_f16: bool,
    /// RMS (no centring) or layer normalisation.
    pub rms: bool,
    pub weight: bool,
    pub bias: bool,
    /// The weight and bias are indexed by channel (group normalisation),
    /// not by line element.
    pub channels: bool,
    /// Rows mode (lines of whole aligned quads): one subgroup per line,
    /// this many lines per workgroup of `rows::WIDTH`; 0 for a workgroup per
    /// line.
    pub rows: u32,
    /// Quads each lane holds in registers in rows mode.
    pub registers: u32,
    pub stage: NormStage,
}

/// The layer normalisation's statistics: the mean, then the deviations
/// from it and their squares, which correct the mean (`fine`) and the
/// mean squared deviation (less `fine^2`: the corrected two-pass sum of
/// Chan, Golub and LeVeque, whose first-order error does not grow with
/// the mean's rounding; integers over a large offset lose most of their
/// variance without it).
const LAYER_STATS: &str = "var s = 0.0;
    for (var i = t; i < params.length; i += WORKGROUP) {
        s += element(src0, i);
    }
    let shift = div_f32(total(s, t), n);
    var p = 0.0;
    var q = 0.0;
    for (var i = t; i < params.length; i += WORKGROUP) {
        let d = element(src0, i) - shift;
        p += d;
        q += d * d;
    }
    let fine = div_f32(total(p, t), n);
    let spread = corrected(div_f32(total(q, t), n), fine);
    let scale = div_f32(1.0, sqrt_f32(spread + eps));";

/// The RMS normalisation's: the mean square.
const RMS_STATS: &str = "var q = 0.0;
    for (var i = t; i < params.length; i += WORKGROUP) {
        let x = element(src0, i);
        q += x * x;
    }
    let shift = 0.0;
    let fine = 0.0;
    let scale = div_f32(1.0, sqrt_f32(div_f32(total(q, t), n) + eps));";

/// The workgroup-per-line entry point: the statistics (`STATS`) over the
/// workgroup, then every element written.
const GROUP_ENTRY: &str = "@compute @workgroup_size(WORKGROUP)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform across the workgroup: every thread reaches every barrier.
    let l = wid.x + wid.y * params.row_width;
    if (l >= params.lines) {
        return;
    }
    let start = line_starts(l);
    let src0 = start[0];
    let n = u32_to_f32(params.length);
    let eps = bitcast<f32>(params.eps);
    STATS
    for (var i = t; i < params.length; i += WORKGROUP) {
        let y = ((element(src0, i) - shift) - fine) * scale;
        store_out(u32(start[1] + i32(i) * params.dst_step), affine(y, l, i));
    }
}";

/// Rows mode (`kernel/rows.rs`): a subgroup per line, its lanes holding
/// quad `j * lanes + lane` of the line for j < REGISTERS in registers: the
/// line is read once, its sums come from subgroup operations, and the
/// outputs are written from the registers.
const ROWS_SETUP: &str = "    let quads = params.length / 4u;
    let n = u32_to_f32(params.length);
    let eps = bitcast<f32>(params.eps);";

/// The body of [`ROWS_SETUP`]'s loop: line `r` (`STATS` its shift, fine and
/// scale).
const ROWS_BODY: &str = "            let l = r;
            let start = line_starts(l);
            let src_q = u32(start[0]) / 4u;
            let dst_q = u32(start[1]) / 4u;
            var v: array<vec4<f32>, REGISTERS>;
            var s = 0.0;
            for (var j = 0u; j < REGISTERS; j++) {
                let q = j * sg_size + sg_lane;
                if (q < quads) {
                    let x = load_quad(src_q + q);
                    v[j] = x;
                    s += (x.x + x.y) + (x.z + x.w);
                }
            }
            STATS
            for (var j = 0u; j < REGISTERS; j++) {
                let q = j * sg_size + sg_lane;
                if (q < quads) {
                    let y = ((v[j] - vec4<f32>(shift)) - vec4<f32>(fine)) * scale;
                    let i = 4u * q;
                    store_quad(dst_q + q, vec4<f32>(affine(y.x, l, i), affine(y.y, l, i + 1u),
                        affine(y.z, l, i + 2u), affine(y.w, l, i + 3u)));
                }
            }";

/// Rows mode's layer statistics: the mean from the lanes' sums, then the
/// deviations from it and their squares from the registers, corrected as
/// [`LAYER_STATS`]'s.
const LAYER_ROWS_STATS: &str = "let shift = div_f32(subgroupAdd(s), n);
            var p2 = 0.0;
            var q2 = 0.0;
            for (var j = 0u; j < REGISTERS; j++) {
                if (j * sg_size + sg_lane < quads) {
                    let d = v[j] - vec4<f32>(shift);
                    p2 += (d.x + d.y) + (d.z + d.w);
                    q2 += (d.x * d.x + d.y * d.y) + (d.z * d.z + d.w * d.w);
                }
            }
            let fine = div_f32(subgroupAdd(p2), n);
            let spread = corrected(div_f32(subgroupAdd(q2), n), fine);
            let scale = div_f32(1.0, sqrt_f32(spread + eps));";

/// Rows mode's RMS statistics: the mean square from the registers.
const RMS_ROWS_STATS: &str = "var q2 = 0.0;
            for (var j = 0u; j < REGISTERS; j++) {
                if (j * sg_size + sg_lane < quads) {
                    let x = v[j];
                    q2 += (x.x * x.x + x.y * x.y) + (x.z * x.z + x.w * x.w);
                }
            }
            let shift = 0.0;
            let fine = 0.0;
            let scale = div_f32(1.0, sqrt_f32(div_f32(subgroupAdd(q2), n) + eps));";

family_key!(NormKey, "webtensor norm", norm_source, entry: |k| match k.stage {
    NormStage::Stats => "main_stats",
    NormStage::Apply => "main_apply",
    NormStage::Whole if k.rows > 0 => "main_rows",
    NormStage::Whole => "main",
});

/// The WGSL source of the normalisation kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn norm_source(key: &NormKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    if key.stage == NormStage::Stats {
        return stats_source(key);
    }
    let (mut bindings, mut access) = if key.rows > 0 {
        // The source and destination as entries of four elements.
        let (bindings, access) = rows::quad_bindings(dtype, native);
        let element = "fn load_src(p: u32) -> f32 {\n    return load_quad(p / 4u)[p % 4u];\n}\n";
        (bindings, access + element)
    } else {
        rows::element_bindings(dtype, native)
    };
    // Bound in order after the output: 3 and 4, or 3 for either alone.
    let mut binding = 3;
    for (given, name) in [(key.weight, "weight"), (key.bias, "bias")] {
        if given {
            bindings.push_str(&buffer_decl(binding, name, KernelType::F32, native, false));
            binding += 1;
            access.push_str(&load_fn(
                &format!("load_{name}"),
                name,
                KernelType::F32,
                native,
            ));
        }
    }
    // Each product rounded before the add, as the CPU's (`params.zero` is
    // always 0: no compiler fuses through it).
    let scaled = "bitcast<f32>(bitcast<u32>(y * load_weight(params.w_offset + c)) ^ params.zero)";
    let value = match (key.weight, key.bias) {
        (false, false) => "y".to_string(),
        (true, false) => scaled.to_string(),
        (false, true) => "y + load_bias(params.b_offset + c)".to_string(),
        (true, true) => format!("{scaled} + load_bias(params.b_offset + c)"),
    };
    let channel = if key.channels {
        "(l % params.groups) * params.per_group + i / params.span"
    } else {
        "i"
    };
    let affine = format!(
        "fn affine(y: f32, l: u32, i: u32) -> f32 {{\n    let c = {channel};\n    return {value};\n}}\n"
    );
    if key.stage == NormStage::Apply {
        bindings.push_str(&buffer_decl(
            binding,
            "partials",
            KernelType::F32,
            native,
            false,
        ));
    }
    let walk = LINE_STARTS.wgsl();
    let entry = if key.stage == NormStage::Apply {
        let combine = if key.rms {
            split::RMS_COMBINE
        } else {
            split::LAYER_COMBINE
        };
        split::APPLY_ENTRY.replace("COMBINE", combine)
    } else if key.rows > 0 {
        let stats = if key.rms {
            RMS_ROWS_STATS
        } else {
            LAYER_ROWS_STATS
        };
        let body = ROWS_BODY.replace("STATS", stats);
        rows::entry(key.rows, key.registers, "params.lines", ROWS_SETUP, &body)
    } else {
        let stats = if key.rms { RMS_STATS } else { LAYER_STATS };
        GROUP_ENTRY.replace("STATS", stats)
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("AFFINE", affine.as_str()),
        ("ENTRY", entry.as_str()),
    ];
    let (f16, params) = (needs_f16(dtype, native), NormParams::wgsl());
    fill_kernel("norm kernel", NORM_WGSL, f16, &params, &slots)
}

/// The source of a split line's statistics stage: the source (1) read, the
/// partials (2) written.
fn stats_source(key: &NormKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let bindings = [
        buffer_decl(1, "src", dtype, native, false),
        buffer_decl(2, "partials", KernelType::F32, native, true),
    ]
    .concat();
    let access = load_fn("load_src", "src", dtype, native);
    let chunk = if key.rms {
        split::RMS_CHUNK
    } else {
        split::LAYER_CHUNK
    };
    let entry = split::STATS_ENTRY.replace("CHUNK", chunk);
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", &LINE_STARTS.wgsl()),
        ("AFFINE", ""),
        ("ENTRY", entry.as_str()),
    ];
    let (f16, params) = (needs_f16(dtype, native), NormParams::wgsl());
    fill_kernel("norm kernel", NORM_WGSL, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for more
/// lines than one dispatch can cover, or a view over one storage binding
/// (the op layer composes those).
pub(crate) fn norm(out: &GpuStorage, call: &NormCall) -> Result<()> {
    let op = match (call.rms, call.channels) {
        (true, _) => "rms_norm",
        (false, None) => "layer_norm",
        (false, Some(_)) => "group_norm",
    };
    let ctx = &out.ctx;
    let dtype = call.out.dtype;
    let float = matches!(dtype, KernelType::F32 | KernelType::F16 | KernelType::BF16);
    let f32_affine = [&call.weight, &call.bias]
        .iter()
        .all(|t| t.as_ref().is_none_or(|t| t.dtype == KernelType::F32));
    if !float || call.input.dtype != dtype || !f32_affine {
        return Err(Error::internal(
            op,
            "the norm kernel got dtypes it does not take",
        ));
    }
    let Some(l) = rows::bind_lines(op, &ctx.facts, &call.input, &call.out)? else {
        return Ok(());
    };
    let [input, output] = l.bindings;
    let mut bindings = smallvec![input, output];
    let mut offsets = [0u32; 2];
    for (k, t) in [&call.weight, &call.bias].into_iter().enumerate() {
        if let Some(t) = t {
            let (bound, t) = Bound::view(op, t.clone(), false)?;
            bindings.push(bound);
            offsets[k] = t.layout.offset() as u32;
        }
    }
    let key = NormKey {
        dtype,
        native_f16: ctx.facts.native_f16,
        rms: call.rms,
        weight: call.weight.is_some(),
        bias: call.bias.is_some(),
        channels: call.channels.is_some(),
        rows: l.rows,
        registers: l.registers,
        stage: NormStage::Whole,
    };
    let (channel_groups, span) = call.channels.unwrap_or((1, 1));
    let (splits, chunk) = match l.rows {
        0 => split::split(l.count, l.length, ctx.facts.resident_threads),
        _ => (1, l.length),
    };
    // One workgroup per line (per chunk of a split line), or per `rows`
    // lines.
    let groups = grid_of(
        rows::workgroups(l.count * splits, l.rows),
        1,
        ctx.facts.max_workgroups_per_dim,
    )?;
    let block = NormParams {
        eps: call.eps.to_bits(),
        w_offset: offsets[0],
        b_offset: offsets[1],
        groups: channel_groups as u32,
        per_group: (l.length / span) as u32,
        span: span as u32,
        splits: splits as u32,
        chunk: chunk as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    let params = block.walking([&l.lines[0], &l.lines[1]], l.steps, l.length, groups[0]);
    let grid = [groups[0], groups[1], 1];
    if splits == 1 {
        return record_family(ctx, &key, params.bytes(), bindings, grid);
    }
    // Two stages through scratch partials, dropped once recorded: the pool
    // hands the buffer out again only in stream order.
    let partials = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        op,
        KernelType::F32,
        split::PARTIALS * l.count * splits,
    )?));
    let stats = NormKey {
        stage: NormStage::Stats,
        weight: false,
        bias: false,
        channels: false,
        ..key
    };
    let first = smallvec![bindings[0].clone(), Bound::new(op, &partials, true)?];
    record_family(ctx, &stats, params.bytes(), first, grid)?;
    bindings.push(Bound::new(op, &partials, false)?);
    let apply = NormKey {
        stage: NormStage::Apply,
        ..key
    };
    record_family(ctx, &apply, params.bytes(), bindings, grid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::{FLOAT_STORAGES, validate};

    #[test]
    fn every_norm_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            for (rms, weight, bias, channels) in [
                (false, false, false, false),
                (false, true, false, false),
                (false, false, true, false),
                (false, true, true, false),
                (true, false, false, false),
                (true, true, false, false),
                (false, false, false, true),
                (false, true, true, true),
                (false, false, true, true),
            ] {
                for (rows, registers, stage) in [
                    (0, 0, NormStage::Whole),
                    (8, 2, NormStage::Whole),
                    (32, 8, NormStage::Whole),
                    (0, 0, NormStage::Stats),
                    (0, 0, NormStage::Apply),
                ] {
                    let key = NormKey {
                        dtype,
                        native_f16,
                        rms,
                        weight,
                        bias,
                        channels,
                        rows,
                        registers,
                        stage,
                    };
                    let source = norm_source(&key).unwrap();
                    validate(&source, &format!("{key:?}"));
                    assert_layout(&source, NormParams::FIELDS, NormParams::SIZE, "norm");
                }
            }
        }
    }
}
