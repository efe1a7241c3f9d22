// Running sums or products along the lines of a tensor, specialised by
// scan/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  the source (binding 1) and `out_buf` (binding 2)
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   OPS       `alias Acc`, `fn identity() -> Acc`, `fn combine(a, b)`,
//             `fn load(p) -> Acc`, `fn store(p, v: Acc)`,
//             `fn load_done(p) -> Acc` (an output already written)
//
// Line l starts at the row-major index l of the line axes, read through
// their (shape, strides, offset) for the source and the destination, and
// steps `src_step` / `dst_step` along the scanned axis: any view scans
// without a copy.
{{PRELUDE}}
{{BINDINGS}}
{{OPS}}
{{WALK}}

// Thread mode: one thread walks a whole (short) line.
@compute @workgroup_size(64)
fn main_thread(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x + gid.y * params.row_width;
    if (l >= params.lines) {
        return;
    }
    let start = line_starts(l);
    var acc = identity();
    for (var i = 0u; i < params.length; i++) {
        acc = combine(acc, load(u32(start[0] + i32(i) * params.src_step)));
        store(u32(start[1] + i32(i) * params.dst_step), acc);
    }
}

var<workgroup> chunk: array<Acc, 64>;

// Group mode: one workgroup per (long) line scans elements [first, end) of
// it 64 at a time (Hillis-Steele in workgroup memory), carrying the total
// forward. The launcher records one dispatch per slice of a long line, in
// order (kernel/loop_budget.rs says why).
@compute @workgroup_size(64)
fn main_group(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let l = wid.x + wid.y * params.row_width;
    if (l >= params.lines) {
        return;
    }
    let start = line_starts(l);
    var carry = identity();
    if (params.first > 0u) {
        carry = load_done(u32(start[1] + i32(params.first - 1u) * params.dst_step));
    }
    for (var first = params.first; first < params.end; first += 64u) {
        let i = first + t;
        var v = identity();
        if (i < params.end) {
            v = load(u32(start[0] + i32(i) * params.src_step));
        }
        chunk[t] = v;
        workgroupBarrier();
        for (var width = 1u; width < 64u; width *= 2u) {
            var earlier = identity();
            if (t >= width) {
                earlier = chunk[t - width];
            }
            workgroupBarrier();
            chunk[t] = combine(earlier, chunk[t]);
            workgroupBarrier();
        }
        if (i < params.end) {
            store(u32(start[1] + i32(i) * params.dst_step), combine(carry, chunk[t]));
        }
        carry = combine(carry, chunk[63]);
        workgroupBarrier();
    }
}
