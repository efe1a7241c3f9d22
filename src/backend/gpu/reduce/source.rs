//! The WGSL of one reduction stage: `reduce.wgsl` specialised per op,
//! dtype, storage and stage (see [`ReduceKey`]), and its parameters.

use crate::backend::Deviation;
use crate::backend::gpu::kernel::buffer::{
    buffer_decl, load_fn, needs_f16, quad_lanes, quad_type, storage_mode, store_out_fn,
};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::{INT64_WGSL, fill_kernel};
use crate::backend::gpu::kernel::rows;
use crate::backend::gpu::kernel::strided::{Walk, Walked};
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{family_key, group_or_thread};
use crate::dtype::KernelType;
use crate::error::Result;
use crate::op::ReduceOp;
use std::fmt::Write;

const REDUCE_WGSL: &str = shader!("reduce/reduce.wgsl");

/// Where a stage reads its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// The input tensor, through its strides.
    Tensor,
    /// Partial results of an earlier stage, `splits` per output.
    Partials,
}

/// Where a stage writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Dest {
    /// The output tensor.
    Output,
    /// Partial results, `splits` per output.
    Partials,
}

/// Everything that selects a distinct reduction pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReduceKey {
    pub op: ReduceOp,
    /// The input tensor's dtype (it fixes the accumulator).
    pub dtype: KernelType,
    /// The output's dtype (i32 for arg ops).
    pub out: KernelType,
    pub source: Source,
    pub dest: Dest,
    pub mean: bool,
    /// A workgroup per output (or a subgroup, `rows`), else a thread.
    pub group: bool,
    /// Threads per workgroup where `group`: 64 or 256.
    pub width: u32,
    /// Rows mode: one subgroup per output, this many outputs per workgroup
    /// (`width` over the adapter's fewest lanes); 0 in the other modes.
    pub rows: u32,
    /// A workgroup combines across subgroup lanes first (group mode on
    /// adapters with subgroups).
    pub subgroups: bool,
    pub native_f16: bool,
    /// The tensor source is read four elements at a time, in a binding of
    /// whole four-element entries. Group and rows modes: each output's
    /// reduced elements are one run of stride 1 starting at a multiple of
    /// four (see `quads_fit` in the family's planning). Thread mode: a
    /// thread takes four adjacent outputs (columns), whose elements of
    /// each reduced row are one aligned entry (`columns_fit`).
    pub quads: bool,
    /// The tensor source's elements enter as deviations from their output's
    /// center, or their squares (`ReduceCall::center`, bound after the
    /// source).
    pub centered: Option<Deviation>,
    /// Partial results lie split-major (partial s of output o at `s *
    /// outputs + o`), where thread mode writes and reads them: neighbouring
    /// threads, on neighbouring outputs, touch neighbouring words. Else
    /// output-major (`o * splits + s`), where a workgroup folds one output's.
    pub split_major: bool,
}

/// How a workgroup of WG threads combines their states into
/// `shared_states[0]`: a tree in workgroup memory.
const GROUP_COMBINE_SHARED: &str = "    shared_states[t] = st;
    workgroupBarrier();
    for (var width = WG / 2u; width > 0u; width = width / 2u) {
        if (t < width) {
            shared_states[t] = combine(shared_states[t], shared_states[t + width]);
        }
        workgroupBarrier();
    }";

/// The builtins [`GROUP_COMBINE_SUBGROUPS`] reads.
const GROUP_BUILTINS_SUBGROUPS: &str = "
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,";

/// [`GROUP_COMBINE_SHARED`] across subgroup lanes first: a butterfly of
/// shuffles within each subgroup (within the workgroup's WG lanes, should a
/// subgroup be wider), then one thread combines the subgroups' results in
/// order. `combine` is symmetric (ties go to the lower index), so every
/// order gives an arg op's answer.
const GROUP_COMBINE_SUBGROUPS: &str = "    let lanes = min(sg_size, WG);
    for (var m = lanes / 2u; m > 0u; m = m / 2u) {
        st = combine(st, State(subgroupShuffleXor(st.v, m), subgroupShuffleXor(st.i, m)));
    }
    if (sg_lane == 0u) {
        shared_states[sg_id] = st;
    }
    workgroupBarrier();
    if (t == 0u) {
        var total = shared_states[0];
        for (var g = 1u; g < sg_count; g++) {
            total = combine(total, shared_states[g]);
        }
        shared_states[0] = total;
    }";

/// Rows mode's body (`kernel/rows.rs`): output `r` folded by its
/// subgroup's lanes striding over its elements, then a butterfly of
/// shuffles; lane 0 stores.
const ROWS_BODY: &str = "            var st = FOLD_ROWS(r, 0u, params.extent, sg_lane, sg_size);
            for (var m = sg_size / 2u; m > 0u; m = m / 2u) {
                st = combine(st, State(subgroupShuffleXor(st.v, m), subgroupShuffleXor(st.i, m)));
            }
            if (sg_lane == 0u) {
                store(r, 0u, st);
            }";

/// The accumulator dtype of a reduction over `dtype`.
pub(super) fn acc_dtype(dtype: KernelType) -> KernelType {
    match dtype {
        KernelType::F32 | KernelType::F16 | KernelType::BF16 | KernelType::F64 => KernelType::F32,
        KernelType::I32 => KernelType::I32,
        KernelType::I64 => KernelType::I64,
        KernelType::U32 | KernelType::U8 | KernelType::Bool => KernelType::U32,
    }
}

params_block! {
    /// `Params` of reduce.wgsl.
    pub(crate) struct ReduceParams {
        outputs: u32,
        extent: u32,
        splits: u32,
        chunk: u32,
        kept_rank: u32,
        red_rank: u32,
        /// Workgroups (group mode) or threads (thread mode) per grid row.
        row_width: u32,
        offset: u32,
        /// Elements behind each output overall (the divisor of a mean).
        count: u32,
        /// Partial results per output in a partials source.
        src_splits: u32,
        pad1: u32,
        pad2: u32,
        kept_shape: [u32; 8],
        kept_strides: [i32; 8],
        red_shape: [u32; 8],
        red_strides: [i32; 8],
    }
}

family_key!(ReduceKey, "webtensor reduce", reduce_source, entry: |k| if k.rows > 0 {
    "main_rows"
} else if k.quads && !k.group {
    "main_columns"
} else {
    group_or_thread(k.group)
});

/// The WGSL source of one reduction stage.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn reduce_source(key: &ReduceKey) -> Result<String> {
    let acc = ScalarType::of(acc_dtype(key.dtype));
    let mut bindings = String::new();
    let mut next = 1u32;
    // Declares a buffer at the next binding (`decl` given its number).
    let mut bind = |decl: &dyn Fn(u32) -> String, out: &mut String| {
        out.push_str(&decl(next));
        next += 1;
    };
    let buffer = |name: &'static str, dtype: KernelType, writes: bool| {
        move |b: u32| buffer_decl(b, name, dtype, key.native_f16, writes)
    };
    let mut load = String::new();
    match key.source {
        Source::Tensor if key.quads => {
            let quads = |b: u32| {
                let entry = quad_type(storage_mode(key.dtype, key.native_f16));
                format!("@group(0) @binding({b}) var<storage, read> src: array<{entry}>;\n")
            };
            bind(&quads, &mut bindings);
            load.push_str(&quad_loads(key.dtype, key.native_f16, acc, key.centered));
        }
        Source::Tensor => {
            bind(&buffer("src", key.dtype, false), &mut bindings);
            load.push_str(&load_fn("load_src", "src", key.dtype, key.native_f16));
        }
        Source::Partials => {}
    }
    match key.source {
        Source::Tensor if key.centered.is_some() => {
            bind(&buffer("center", KernelType::F32, false), &mut bindings);
            load.push_str(CENTERED_LOADS);
            load.push_str(deviation_fn(key.centered));
        }
        Source::Tensor => {
            let value = if key.dtype == KernelType::Bool {
                "select(0u, 1u, load_src(p))"
            } else {
                "load_src(p)"
            };
            let _ = write!(
                load,
                "fn base_of(o: u32) -> i32 {{\n    return kept_base(o);\n}}\n\
                 fn load(base: i32, r: u32) -> State {{\n    \
                 let p = u32(base + reduced_offset(r));\n    \
                 return State({acc}({value}), i32(r));\n}}\n"
            );
        }
        Source::Partials => {
            bind(&buffer("src_v", acc_dtype(key.dtype), false), &mut bindings);
            let index = if key.op.is_arg() {
                bind(&buffer("src_i", KernelType::I32, false), &mut bindings);
                "src_i[p]"
            } else {
                "0"
            };
            let (base, at) = if key.split_major {
                ("o", "u32(base) + r * params.outputs")
            } else {
                ("o * params.src_splits", "u32(base) + r")
            };
            let _ = write!(
                load,
                "fn base_of(o: u32) -> i32 {{\n    return i32({base});\n}}\n\
                 fn load(base: i32, r: u32) -> State {{\n    \
                 let p = {at};\n    return State(src_v[p], {index});\n}}\n"
            );
        }
    }
    if key.centered.is_none() {
        load.push_str("fn set_center(o: u32) {}\n");
    }
    let mut store = String::new();
    match key.dest {
        Dest::Output => {
            bind(&buffer("out_buf", key.out, true), &mut bindings);
            store.push_str(&store_out_fn(key.out, key.native_f16));
            let value = if key.op.is_arg() {
                "max(st.i, 0)".to_string()
            } else {
                // Correctly rounded (a driver's `/` may be a * (1 / b)),
                // by the count as Rust's `as f32` rounds it (WGSL leaves an
                // inexact `f32(u32)` open: past 2^24 elements a driver may
                // truncate where the CPU rounds to nearest).
                let v = if key.mean {
                    "div_f32(st.v, u32_to_f32(params.count))".to_string()
                } else {
                    "st.v".to_string()
                };
                let out = ScalarType::of(key.out);
                match key.out {
                    KernelType::Bool => format!("({v} != 0u)"),
                    // A bool sum accumulates in u32 and stores i32.
                    _ if out != acc => format!("{out}({v})"),
                    _ => v,
                }
            };
            let _ = write!(
                store,
                "fn store(o: u32, s: u32, st: State) {{\n    store_out(o, {value});\n}}\n"
            );
        }
        Dest::Partials => {
            bind(&buffer("dst_v", acc_dtype(key.dtype), true), &mut bindings);
            let at = if key.split_major {
                "s * params.outputs + o"
            } else {
                "o * params.splits + s"
            };
            let index = if key.op.is_arg() {
                bind(&buffer("dst_i", KernelType::I32, true), &mut bindings);
                format!("\n    dst_i[{at}] = st.i;")
            } else {
                String::new()
            };
            let _ = write!(
                store,
                "fn store(o: u32, s: u32, st: State) {{\n    \
                 dst_v[{at}] = st.v;{index}\n}}\n"
            );
        }
    }
    let uses_f16 = key.source == Source::Tensor && needs_f16(key.dtype, key.native_f16)
        || key.dest == Dest::Output && needs_f16(key.out, key.native_f16);
    let mut state = state_source(key.op, acc);
    if acc == ScalarType::I64 {
        state.push_str(INT64_WGSL);
    }
    let walks = [
        Walk {
            name: "kept_walk",
            rank: "params.kept_rank",
            shape: "params.kept_shape",
            operands: &[Walked {
                start: "i32(params.offset)",
                strides: "params.kept_strides",
            }],
        },
        Walk {
            name: "reduced_walk",
            rank: "params.red_rank",
            shape: "params.red_shape",
            operands: &[Walked {
                start: "0",
                strides: "params.red_strides",
            }],
        },
    ]
    .map(|w| w.wgsl())
    .concat();
    let (quads, fold) = match (key.quads, key.group) {
        (true, true) => (QUAD_FOLD, "fold_quads"),
        (true, false) => (COLUMNS, "fold"),
        (false, _) => ("", "fold"),
    };
    let rows_entry = if key.rows > 0 {
        let body = ROWS_BODY.replace("FOLD_ROWS", fold);
        rows::entry(key.rows, 0, "params.outputs", "", &body)
    } else {
        String::new()
    };
    let width = key.width.to_string();
    let mut slots = vec![
        ("WG", width.as_str()),
        ("ROWS_ENTRY", rows_entry.as_str()),
        ("QUADS", quads),
        ("FOLD", fold),
        ("WALK", walks.as_str()),
        ("BINDINGS", bindings.as_str()),
        ("STATE", state.as_str()),
        ("LOAD", load.as_str()),
        ("STORE", store.as_str()),
    ];
    slots.extend(if key.subgroups {
        [
            ("GROUP_BUILTINS", GROUP_BUILTINS_SUBGROUPS),
            ("GROUP_COMBINE", GROUP_COMBINE_SUBGROUPS),
        ]
    } else {
        [
            ("GROUP_BUILTINS", ""),
            ("GROUP_COMBINE", GROUP_COMBINE_SHARED),
        ]
    });
    let params = ReduceParams::wgsl();
    fill_kernel("reduce kernel", REDUCE_WGSL, uses_f16, &params, &slots)
}

/// The `fold` of group and rows modes over a source read in quads: thread
/// `first` of `step` takes the quads from `start + 4 first` (start is a
/// multiple of four) in steps of `4 step`, four quads in flight each turn
/// into four states, then the elements past the last whole quad one at a
/// time.
const QUAD_FOLD: &str = "fn quad_into(st: State, v: vec4<Acc>, r: u32) -> State {
    let i = i32(r);
    return combine(combine(combine(combine(st, State(v.x, i)), State(v.y, i + 1)),
        State(v.z, i + 2)), State(v.w, i + 3));
}

fn fold_quads(o: u32, start: u32, end: u32, first: u32, step: u32) -> State {
    var s0 = fresh();
    var s1 = fresh();
    var s2 = fresh();
    var s3 = fresh();
    if (start >= end) {
        return s0;
    }
    set_center(o);
    let base = base_of(o);
    let whole = start + (end - start) / 4u * 4u;
    let stride = 4u * step;
    var r = start + 4u * first;
    for (; r < whole && whole - r > 3u * stride; r += 4u * stride) {
        s0 = quad_into(s0, load_quad(base, r), r);
        s1 = quad_into(s1, load_quad(base, r + stride), r + stride);
        s2 = quad_into(s2, load_quad(base, r + 2u * stride), r + 2u * stride);
        s3 = quad_into(s3, load_quad(base, r + 3u * stride), r + 3u * stride);
    }
    for (; r < whole; r += stride) {
        s0 = quad_into(s0, load_quad(base, r), r);
    }
    for (var e = whole + first; e < end; e += step) {
        s0 = combine(s0, load(base, e));
    }
    return combine(combine(s0, s1), combine(s2, s3));
}";

/// Thread mode over quads of adjacent outputs (columns): thread `i` takes
/// outputs `4q .. 4q + 3` of split `s`, reading the four elements of each
/// reduced row as one entry, four rows in flight, into a state per output.
/// Neighbouring threads read neighbouring entries: a warp's load is a run
/// of 16-byte entries where one output a thread read 4-byte words.
const COLUMNS: &str = "struct Columns {
    a: State,
    b: State,
    c: State,
    d: State,
}

fn columns_into(q: Columns, v: vec4<Acc>, r: u32) -> Columns {
    let i = i32(r);
    return Columns(combine(q.a, State(v.x, i)), combine(q.b, State(v.y, i)),
        combine(q.c, State(v.z, i)), combine(q.d, State(v.w, i)));
}

@compute @workgroup_size(64)
fn main_columns(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * params.row_width;
    let quads = params.outputs / 4u;
    if (i >= quads * params.splits) {
        return;
    }
    let o = (i % quads) * 4u;
    let s = i / quads;
    let start = s * params.chunk;
    let end = min(start + params.chunk, params.extent);
    let base = kept_base(o);
    var q = Columns(fresh(), fresh(), fresh(), fresh());
    var r = start;
    for (; r < end && end - r > 3u; r += 4u) {
        let v0 = load_quad(base + reduced_offset(r), 0u);
        let v1 = load_quad(base + reduced_offset(r + 1u), 0u);
        let v2 = load_quad(base + reduced_offset(r + 2u), 0u);
        let v3 = load_quad(base + reduced_offset(r + 3u), 0u);
        q = columns_into(columns_into(columns_into(columns_into(q, v0, r), v1, r + 1u), v2, r + 2u), v3, r + 3u);
    }
    for (; r < end; r++) {
        q = columns_into(q, load_quad(base + reduced_offset(r), 0u), r);
    }
    store(o, s, q.a);
    store(o + 1u, s, q.b);
    store(o + 2u, s, q.c);
    store(o + 3u, s, q.d);
}";

/// `base_of`, `set_center` and `load` of an f32 source whose elements
/// enter as deviations from their output's center (`center[o]`, set once
/// per output by the fold), or their squares (`deviation`, of a scalar or
/// a quad: see [`deviation_fn`] and [`quad_loads`]).
const CENTERED_LOADS: &str = "var<private> center_value: f32;
fn base_of(o: u32) -> i32 {
    return kept_base(o);
}
fn set_center(o: u32) {
    center_value = center[o];
}
fn load(base: i32, r: u32) -> State {
    let d = load_src(u32(base + reduced_offset(r))) - center_value;
    return State(deviation(d), i32(r));
}
";

/// `deviation(d)` and `deviation4(d)`: what a centered sum adds of the
/// deviation `d` (of an element, of a quad).
fn deviation_fn(centered: Option<Deviation>) -> &'static str {
    match centered {
        Some(Deviation::Squared) => {
            "fn deviation(d: f32) -> f32 {\n    return d * d;\n}\n\
            fn deviation4(d: vec4<f32>) -> vec4<f32> {\n    return d * d;\n}\n"
        }
        _ => {
            "fn deviation(d: f32) -> f32 {\n    return d;\n}\n\
            fn deviation4(d: vec4<f32>) -> vec4<f32> {\n    return d;\n}\n"
        }
    }
}

/// `load_src(p)` (one element) and `load_quad(base, r)` (the four
/// elements from `base + r`, a multiple of four, in the accumulator type)
/// over `src` bound as four-element entries of `dtype`.
fn quad_loads(
    dtype: KernelType,
    native_f16: bool,
    acc: ScalarType,
    centered: Option<Deviation>,
) -> String {
    let mode = storage_mode(dtype, native_f16);
    let lanes = quad_lanes(dtype, mode, "q");
    let value = if dtype == KernelType::Bool {
        format!("return select(vec4<u32>(0u), vec4<u32>(1u), {lanes});")
    } else if centered.is_some() {
        format!("return deviation4({lanes} - vec4<f32>(center_value));")
    } else {
        format!("return vec4<{acc}>({lanes});")
    };
    format!(
        "fn load_src(p: u32) -> {} {{\n    let q = src[p / 4u];\n    return ({lanes})[p % 4u];\n}}\n\
         fn load_quad(base: i32, r: u32) -> vec4<Acc> {{\n    \
         let q = src[u32(base + i32(r)) / 4u];\n    {value}\n}}\n",
        ScalarType::of(dtype)
    )
}

/// `alias Acc`, `fresh()` and `combine()` for `op` accumulating in `acc`.
fn state_source(op: ReduceOp, acc: ScalarType) -> String {
    let float = acc == ScalarType::F32;
    let (lowest, highest) = (acc.lowest(), acc.highest());
    let (zero, one) = (acc.zero(), acc.one());
    let wide = acc == ScalarType::I64;
    let (identity, combine) = match op {
        // i64 through int64.wgsl's functions.
        ReduceOp::Sum if wide => (zero, "return State(i64_add(a.v, b.v), 0);".to_string()),
        ReduceOp::Prod if wide => (one, "return State(i64_mul(a.v, b.v), 0);".to_string()),
        ReduceOp::Max if wide => (lowest, "return State(i64_max(a.v, b.v), 0);".into()),
        ReduceOp::Min if wide => (highest, "return State(i64_min(a.v, b.v), 0);".into()),
        ReduceOp::Sum => (zero, "return State(a.v + b.v, 0);".to_string()),
        ReduceOp::Prod => (one, "return State(a.v * b.v, 0);".to_string()),
        ReduceOp::Max if float => (lowest, "return State(maximum_f32(a.v, b.v), 0);".into()),
        ReduceOp::Max => (lowest, "return State(max(a.v, b.v), 0);".into()),
        ReduceOp::Min if float => (highest, "return State(minimum_f32(a.v, b.v), 0);".into()),
        ReduceOp::Min => (highest, "return State(min(a.v, b.v), 0);".into()),
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let max = op == ReduceOp::ArgMax;
            // `x {better} y`, spelled for the accumulator: floats by their
            // order keys (bits), as `maximum_f32` compares them, so that a
            // GPU that flushes subnormals still tells them apart.
            let key = |v: &str| format!("order_key_f32(bitcast<u32>({v}))");
            let better = |x: &str, y: &str| match (wide, float, max) {
                (true, _, true) => format!("i64_lt({y}, {x})"),
                (true, _, false) => format!("i64_lt({x}, {y})"),
                (false, true, true) => format!("{} > {}", key(x), key(y)),
                (false, true, false) => format!("{} < {}", key(x), key(y)),
                (false, false, true) => format!("{x} > {y}"),
                (false, false, false) => format!("{x} < {y}"),
            };
            let (a_wins, b_wins) = (better("a.v", "b.v"), better("b.v", "a.v"));
            let nan = if float { "is_nan_f32" } else { "never_nan" };
            (
                zero,
                format!(
                    "if (a.i < 0) {{ return b; }}\n    \
                     if (b.i < 0) {{ return a; }}\n    \
                     let an = {nan}(a.v);\n    \
                     let bn = {nan}(b.v);\n    \
                     // A NaN wins; among equals (or NaNs) the first index.\n    \
                     if (an != bn) {{ if (an) {{ return a; }} return b; }}\n    \
                     if (!an) {{\n        \
                     if ({a_wins}) {{ return a; }}\n        \
                     if ({b_wins}) {{ return b; }}\n    \
                     }}\n    \
                     if (a.i <= b.i) {{ return a; }}\n    \
                     return b;"
                ),
            )
        }
    };
    let fresh_index = if op.is_arg() { -1 } else { 0 };
    format!(
        "alias Acc = {acc};\n\
         fn never_nan(x: Acc) -> bool {{\n    return false;\n}}\n\
         fn fresh() -> State {{\n    return State({identity}, {fresh_index});\n}}\n\
         fn combine(a: State, b: State) -> State {{\n    {combine}\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::buffer::tests::GPU_DTYPES;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_reduction_stage_is_valid_wgsl() {
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::ArgMax,
            ReduceOp::ArgMin,
        ];
        let stages = [
            (Source::Tensor, Dest::Output),
            (Source::Tensor, Dest::Partials),
            (Source::Partials, Dest::Output),
        ];
        for op in ops {
            for dtype in GPU_DTYPES.into_iter().chain([KernelType::I64]) {
                for (source, dest) in stages {
                    // (group, native f16, subgroups, width, rows)
                    let variants = [
                        (true, true, false, 64, 0),
                        (true, false, true, 256, 0),
                        (true, true, true, 256, 32),
                        (true, false, true, 256, 8),
                        (false, false, false, 256, 0),
                    ];
                    for (group, native_f16, subgroups, width, rows) in variants {
                        // Rows mode writes the output itself.
                        if rows > 0 && dest != Dest::Output {
                            continue;
                        }
                        let deviations = [None, Some(Deviation::Plain), Some(Deviation::Squared)];
                        for (quads, centered) in [false, true]
                            .into_iter()
                            .flat_map(|q| deviations.map(|d| (q, d)))
                        {
                            // i64's words hold no quads (`quads_fit`); thread
                            // mode's quads (columns) take no centers.
                            let i64_quads = quads && dtype == KernelType::I64;
                            let centered_columns = quads && centered.is_some() && !group;
                            if i64_quads || centered_columns || quads && source != Source::Tensor {
                                continue;
                            }
                            let sum_of_f32 = op == ReduceOp::Sum && dtype == KernelType::F32;
                            if centered.is_some() && !(source == Source::Tensor && sum_of_f32) {
                                continue;
                            }
                            let widening = matches!(op, ReduceOp::Sum | ReduceOp::Prod);
                            let out = match dtype {
                                _ if op.is_arg() => KernelType::I32,
                                KernelType::Bool if widening => KernelType::I32,
                                KernelType::U8 if widening => KernelType::U32,
                                _ => dtype,
                            };
                            let key = ReduceKey {
                                op,
                                dtype,
                                out,
                                source,
                                dest,
                                mean: op == ReduceOp::Sum && dtype.dtype().is_float(),
                                group,
                                width,
                                rows,
                                subgroups,
                                native_f16,
                                quads,
                                centered,
                                split_major: !group,
                            };
                            validate(&reduce_source(&key).unwrap(), &format!("{key:?}"));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn params_match_the_wgsl_struct() {
        let key = ReduceKey {
            op: ReduceOp::ArgMax,
            dtype: KernelType::F32,
            out: KernelType::I32,
            source: Source::Tensor,
            dest: Dest::Partials,
            mean: false,
            group: true,
            width: 64,
            rows: 0,
            subgroups: false,
            native_f16: true,
            quads: false,
            centered: None,
            split_major: false,
        };
        let source = reduce_source(&key).unwrap();
        assert_layout(&source, ReduceParams::FIELDS, ReduceParams::SIZE, "reduce");
    }
}
