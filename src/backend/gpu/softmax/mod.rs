//! GPU softmax and log-softmax: `softmax.wgsl`, one workgroup per line
//! (an online maximum and sum in one pass, then one pass writing the
//! results), specialised per dtype and form, reading and writing four
//! elements at a time where every line is an aligned run; and, where the
//! adapter has subgroups and an aligned line fits a subgroup's registers,
//! one subgroup per line reading it once (rows mode). A logsumexp
//! (`total`) is the same pass writing one f32 per line.

use crate::backend::SoftmaxCall;
use crate::backend::gpu::kernel::buffer::needs_f16;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::rows;
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::Result;
use smallvec::smallvec;

const SOFTMAX_WGSL: &str = shader!("softmax/softmax.wgsl");

line_params! {
    /// `Params` of softmax.wgsl.
    /// `row_width` counts workgroups, one per line.
    pub(crate) struct SoftmaxParams {
        /// XORed into each input's bits: the sign bit for a softmin (the
        /// softmax of `-x`), else 0.
        flip: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Everything that selects a distinct softmax pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SoftmaxKey {
    /// f32 or f16.
    pub dtype: KernelType,
    pub log: bool,
    /// One f32 per line, its logsumexp (`log` unused).
    pub total: bool,
    pub native_f16: bool,
    /// Every line of the source and of the destination is a run of stride
    /// 1 from a multiple of four, of a length that is a multiple of four,
    /// in bindings of whole 16-byte entries: a thread reads and writes four
    /// elements at a time as one array entry (no atomics for packed f16).
    pub quads: bool,
    /// Rows mode (quads only): one subgroup per line, this many lines per
    /// workgroup of `rows::WIDTH`; 0 for a workgroup per line.
    pub rows: u32,
    /// Quads each lane holds in registers in rows mode.
    pub registers: u32,
}

/// Rows mode (`kernel/rows.rs`): a subgroup per line, its lanes holding
/// quad `j * lanes + lane` of the line for j < REGISTERS in registers: the
/// line is read once, its maximum and sum come from subgroup operations,
/// and the results are written from the registers. A NaN or +inf makes the
/// line NaN, as does a line of -inf only (its sum is 0).
const ROWS_SETUP: &str = "    let quads = params.length / 4u;
    let minus_inf = f32_from_bits(0xff800000u);";

/// The body of [`ROWS_SETUP`]'s loop: line `r`, up to its sums (the
/// stores follow: [`ROWS_SPREAD`] or [`ROWS_TOTAL`]).
const ROWS_BODY: &str = "            let start = line_starts(r);
            let src_q = u32(start[0]) / 4u;
            var v: array<vec4<f32>, REGISTERS>;
            var m = minus_inf;
            var bad = false;
            var nan = false;
            for (var j = 0u; j < REGISTERS; j++) {
                let q = j * sg_size + sg_lane;
                if (q < quads) {
                    let x = flipped_quad(load_quad(src_q + q));
                    v[j] = x;
                    for (var c = 0u; c < 4u; c++) {
                        let e = x[c];
                        if (is_nan_f32(e) || (is_inf_f32(e) && !sign_bit_f32(e))) {
                            bad = true;
                            nan = nan || is_nan_f32(e);
                        } else if (!is_inf_f32(e)) {
                            m = max(m, e);
                        }
                    }
                }
            }
            m = subgroupMax(m);
            bad = subgroupAny(bad);
            nan = subgroupAny(nan);
            var s = 0.0;
            for (var j = 0u; j < REGISTERS; j++) {
                if (j * sg_size + sg_lane < quads) {
                    for (var c = 0u; c < 4u; c++) {
                        let e = v[j][c];
                        if (!is_inf_f32(e) && !is_nan_f32(e)) {
                            s += exp_accurate_f32(e - m);
                        }
                    }
                }
            }
            s = subgroupAdd(s);
";

/// Rows mode's stores of a softmax: every element, from the registers.
const ROWS_SPREAD: &str = "            let dst_q = u32(start[1]) / 4u;
            let undefined = bad || s == 0.0;
            for (var j = 0u; j < REGISTERS; j++) {
                let q = j * sg_size + sg_lane;
                if (q < quads) {
                    let x = v[j];
                    var y = vec4<f32>(nan_f32());
                    if (!undefined) {
                        y = vec4<f32>(result(x.x, m, s), result(x.y, m, s), result(x.z, m, s), result(x.w, m, s));
                    }
                    store_quad(dst_q + q, y);
                }
            }";

/// Rows mode's store of a logsumexp: one f32 for the line.
const ROWS_TOTAL: &str = "            if (sg_lane == 0u) {
                out_buf[u32(start[1])] = total(Partial(m, s, bad, nan));
            }";

/// `gather` one element at a time, through the lines' steps.
const GATHER_ONE: &str = "fn gather(src0: i32, t: u32) -> Partial {
    var p = Partial(0.0, 0.0, false, false);
    for (var i = t; i < params.length; i += WORKGROUP) {
        p = absorb(p, flipped(load_src(u32(src0 + i32(i) * params.src_step))));
    }
    return p;
}
";

/// `spread` one element at a time, through the lines' steps.
const SPREAD_ONE: &str = "fn spread(src0: i32, dst0: i32, t: u32, whole: Partial) {
    let undefined = whole.bad || whole.s == 0.0;
    for (var i = t; i < params.length; i += WORKGROUP) {
        var y = nan_f32();
        if (!undefined) {
            y = result(flipped(load_src(u32(src0 + i32(i) * params.src_step))), whole.m, whole.s);
        }
        store_out(u32(dst0 + i32(i) * params.dst_step), y);
    }
}
";

/// `gather` four elements at a time (`load_quad` takes an entry's index).
const GATHER_FOUR: &str = "fn gather(src0: i32, t: u32) -> Partial {
    var p = Partial(0.0, 0.0, false, false);
    for (var q = t; q < params.length / 4u; q += WORKGROUP) {
        let v = flipped_quad(load_quad(u32(src0) / 4u + q));
        p = absorb(absorb(absorb(absorb(p, v.x), v.y), v.z), v.w);
    }
    return p;
}
";

/// `spread` four elements at a time (`store_quad` takes an entry's index).
const SPREAD_FOUR: &str = "fn spread(src0: i32, dst0: i32, t: u32, whole: Partial) {
    let undefined = whole.bad || whole.s == 0.0;
    let m = whole.m;
    let s = whole.s;
    for (var q = t; q < params.length / 4u; q += WORKGROUP) {
        var y = vec4<f32>(nan_f32());
        if (!undefined) {
            let v = flipped_quad(load_quad(u32(src0) / 4u + q));
            y = vec4<f32>(result(v.x, m, s), result(v.y, m, s), result(v.z, m, s), result(v.w, m, s));
        }
        store_quad(u32(dst0) / 4u + q, y);
    }
}
";

/// `spread` of a logsumexp: the line's one f32, by its first thread.
const SPREAD_TOTAL: &str = "fn spread(src0: i32, dst0: i32, t: u32, whole: Partial) {
    if (t == 0u) {
        out_buf[u32(dst0)] = total(whole);
    }
}
";

family_key!(SoftmaxKey, "webtensor softmax", softmax_source, entry: |k| if k.rows > 0 {
    "main_rows"
} else {
    "main"
});

/// The WGSL source of the softmax kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn softmax_source(key: &SoftmaxKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let gather = if key.quads { GATHER_FOUR } else { GATHER_ONE };
    let (bindings, access) = match (key.total, key.quads) {
        (true, _) => rows::source_bindings(dtype, native, key.quads),
        (false, true) => rows::quad_bindings(dtype, native),
        (false, false) => rows::element_bindings(dtype, native),
    };
    let spread = match (key.total, key.quads) {
        (true, _) => SPREAD_TOTAL,
        (false, true) => SPREAD_FOUR,
        (false, false) => SPREAD_ONE,
    };
    let access = access + gather + spread;
    let walk = LINE_STARTS.wgsl();
    let result = if key.log {
        "(x - m) - log_f32(s)"
    } else {
        "exp_accurate_f32(x - m) / s"
    };
    let rows_entry = if key.rows > 0 {
        rows::entry(
            key.rows,
            key.registers,
            "params.lines",
            ROWS_SETUP,
            &(ROWS_BODY.to_string() + if key.total { ROWS_TOTAL } else { ROWS_SPREAD }),
        )
    } else {
        String::new()
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("RESULT", result),
        ("ROWS_ENTRY", rows_entry.as_str()),
    ];
    let (f16, params) = (needs_f16(dtype, native), SoftmaxParams::wgsl());
    fill_kernel("softmax kernel", SOFTMAX_WGSL, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; `TooLarge` for more
/// lines than one dispatch can cover, or a view over one storage binding
/// (the op layer cuts larger views).
pub(crate) fn softmax(out: &GpuStorage, call: &SoftmaxCall) -> Result<()> {
    let ctx = &out.ctx;
    let bind = match call.total {
        true => rows::bind_line_totals,
        false => rows::bind_lines,
    };
    let Some(l) = bind("softmax", &ctx.facts, &call.input, &call.out)? else {
        return Ok(());
    };
    let key = SoftmaxKey {
        dtype: call.input.dtype,
        log: call.log && !call.total,
        total: call.total,
        native_f16: ctx.facts.native_f16,
        quads: l.quads,
        rows: l.rows,
        registers: l.registers,
    };
    // One workgroup per line, or per `rows` lines.
    let groups = grid_of(
        rows::workgroups(l.count, l.rows),
        1,
        ctx.facts.max_workgroups_per_dim,
    )?;
    let params = SoftmaxParams {
        flip: if call.negate { 0x8000_0000 } else { 0 },
        ..bytemuck::Zeroable::zeroed()
    }
    .walking([&l.lines[0], &l.lines[1]], l.steps, l.length, groups[0]);
    let [input, output] = l.bindings;
    record_family(
        ctx,
        &key,
        params.bytes(),
        smallvec![input, output],
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_softmax_kernel_is_valid_wgsl_and_matches_its_params() {
        for dtype in [KernelType::F32, KernelType::F16, KernelType::BF16] {
            for (log, total) in [(false, false), (true, false), (false, true)] {
                for (native_f16, quads, rows, registers) in [
                    (true, false, 0, 0),
                    (false, false, 0, 0),
                    (true, true, 0, 0),
                    (false, true, 0, 0),
                    (true, true, 8, 1),
                    (false, true, 32, 8),
                ] {
                    let key = SoftmaxKey {
                        dtype,
                        log,
                        total,
                        native_f16,
                        quads,
                        rows,
                        registers,
                    };
                    let source = softmax_source(&key).unwrap();
                    validate(&source, &format!("{key:?}"));
                    assert_layout(
                        &source,
                        SoftmaxParams::FIELDS,
                        SoftmaxParams::SIZE,
                        "softmax",
                    );
                }
            }
        }
    }
}
