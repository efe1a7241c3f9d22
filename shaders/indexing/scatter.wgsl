// Indexing that writes (scatter, scatter_add), specialised by
// indexing/mod.rs, which fills the {{...}} slots as for
// gather.wgsl (WALK giving the destination, source and index positions
// of a line's first element), plus
//   WRITE     the write of value v at position p (a store, or an add)
//
// One thread per line of the index (the scattered axis is last): element i
// of the line sends the source element at the same coordinates to the
// destination at the line's position moved `index` steps along the axis.
// Lines write distinct elements, and a line writes in order, so the last
// duplicate wins and sums are deterministic. A dispatch walks elements
// [first, end) of every line; the launcher records one dispatch per slice
// of a long line, in order (kernel/loop_budget.rs says why). An
// out-of-range index skips its write and is reported in the fault record.
// A dispatch may take only positions part_first..part_first + part_count
// of the indexed axis (the destination's offset is at part_first): it
// skips indices outside them, which another dispatch of the op takes
// (ops/binding_parts.rs, for a destination larger than one storage binding).
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{WALK}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x + gid.y * params.row_threads;
    if (l >= params.lines) {
        return;
    }
    let pos = positions(l);
    let op = pos[0];
    let sp = pos[1];
    let ip = pos[2];
    for (var i = params.first; i < params.end; i++) {
        let raw = load_raw(u32(ip + i32(i) * params.idx_step));
        let k = resolve(raw);
        if (k < 0) {
            report(raw);
            continue;
        }
        let j = k - i32(params.part_first);
        if (j < 0 || j >= i32(params.part_count)) {
            continue;
        }
        let p = u32(op + j * params.axis_stride);
        let v = load_src(u32(sp + i32(i) * params.src_step));
        {{WRITE}}
    }
}
