// One reduction stage, specialised by reduce/mod.rs, which
// fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   WALK      kept_walk and reduced_walk (kernel/strided.rs): positions
//             over the kept and the reduced axes
//   BINDINGS  the source (binding 1, plus its indices for a staged arg op)
//             and the destination (the output, or partial values/indices)
//   STATE     `alias Acc = ...;`, `fn fresh() -> State`, `fn combine`
//   LOAD      `fn base_of(o) -> i32` and `fn load(base, r) -> State`:
//             element r of the reduced set of the output at `base`;
//             `fn set_center(o)`, which a fold calls first (a sum of
//             squared deviations keeps output o's center for `load`)
//   STORE     `fn store(o, s, st)`: the output, or partial s of output o
//   QUADS     for a source read four elements at a time (see reduce/mod.rs):
//             in group and rows modes, where each output's reduced elements
//             are one run from a multiple of four, `fold_quads`; in thread
//             mode, where four adjacent outputs' elements of a row are one
//             entry, the entry point `main_columns`
//   FOLD      the fold group mode runs: `fold` or `fold_quads`
//   GROUP_BUILTINS, GROUP_COMBINE  how a workgroup combines its threads'
//             states into shared_states[0]: through workgroup memory, or
//             (on adapters with subgroups) across each subgroup's lanes
//             first, then the subgroups' results
//   WG        threads per workgroup in group mode
//   ROWS_ENTRY  rows mode's entry point (kernel/rows.rs: a subgroup per
//             output), on adapters with subgroups
//
// Output o reduces `extent` elements; a stage may split that into `splits`
// partial results of `chunk` elements each, which a second stage combines.
// A thread folds its elements into four states from four independent loads
// in flight (vec4 loads where `QUADS`), combined at the end.
// A tensor source is read through (shape, strides, offset) of its kept axes
// (o, row-major) and its reduced axes (r, row-major), so any view reduces
// without a copy.
{{PRELUDE}}
struct State {
    v: Acc,
    // Row-major index of `v` among the reduced elements (arg ops); -1 while empty.
    i: i32,
}

{{WALK}}

// Storage position of the first reduced element of output `o`.
fn kept_base(o: u32) -> i32 {
    return kept_walk(o)[0];
}

// Storage offset of reduced element `r` from its output's base.
fn reduced_offset(r: u32) -> i32 {
    // Coalesced on the host, most reductions have one reduced axis.
    if (params.red_rank == 1u) {
        return i32(r) * params.red_strides[0][0];
    }
    return reduced_walk(r)[0];
}

{{BINDINGS}}
{{STATE}}
{{LOAD}}
{{STORE}}

const WG: u32 = {{WG}}u;

// The state of output `o` over reduced elements [start, end), visited by
// one thread in steps of `step` from `start + first`: four elements in
// flight each turn, into four states (`combine` is symmetric: an arg op's
// ties go to the lower index whatever the order).
fn fold(o: u32, start: u32, end: u32, first: u32, step: u32) -> State {
    set_center(o);
    let base = base_of(o);
    var s0 = fresh();
    var s1 = fresh();
    var s2 = fresh();
    var s3 = fresh();
    var r = start + first;
    for (; r < end && end - r > 3u * step; r += 4u * step) {
        s0 = combine(s0, load(base, r));
        s1 = combine(s1, load(base, r + step));
        s2 = combine(s2, load(base, r + 2u * step));
        s3 = combine(s3, load(base, r + 3u * step));
    }
    for (; r < end; r += step) {
        s0 = combine(s0, load(base, r));
    }
    return combine(combine(s0, s1), combine(s2, s3));
}

{{QUADS}}

var<workgroup> shared_states: array<State, WG>;

// Group mode: one workgroup of WG threads per (output, split).
@compute @workgroup_size(WG)
fn main_group(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,{{GROUP_BUILTINS}}
) {
    let w = wid.x + wid.y * params.row_width;
    let o = w / params.splits;
    let s = w % params.splits;
    let live = o < params.outputs;
    var st = fresh();
    if (live) {
        let start = s * params.chunk;
        let end = min(start + params.chunk, params.extent);
        st = {{FOLD}}(o, start, end, t, WG);
    }
{{GROUP_COMBINE}}
    if (t == 0u && live) {
        store(o, s, shared_states[0]);
    }
}
{{ROWS_ENTRY}}
// Thread mode: one thread per (output, split), consecutive threads on
// consecutive outputs, for short reductions and for reductions across the
// fast axis (a column sum of a row-major matrix reads each row coalesced;
// `main_columns`, in the QUADS slot, takes four adjacent columns a thread).
@compute @workgroup_size(64)
fn main_thread(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * params.row_width;
    if (i >= params.outputs * params.splits) {
        return;
    }
    let o = i % params.outputs;
    let s = i / params.outputs;
    let start = s * params.chunk;
    store(o, s, fold(o, start, min(start + params.chunk, params.extent), 0u, 1u));
}
