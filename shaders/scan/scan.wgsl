// Running sums or products along the lines of a tensor, specialised by
// scan/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  the source (binding 1) and `out_buf` (binding 2)
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   OPS       `alias Acc`, `fn identity() -> Acc`, `fn combine(a, b)`,
//             `fn load(p) -> Acc`, `fn store(p, v: Acc)`,
//             `fn load_done(p) -> Acc` (an output already written);
//             `const NEAR_ONE: bool`, and `is_far(v)`, `to_near(v, near)`,
//             `from_near(v, near)`, `combine_near(a, b, near)` (see
//             main_group)
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
// Whether some factor of the chunk lies far from 1 (NEAR_ONE kernels).
var<workgroup> far: atomic<u32>;

// Group mode: one workgroup per (long) line scans elements [first, end) of
// it 64 at a time (Hillis-Steele in workgroup memory), carrying the total
// forward. The launcher records one dispatch per slice of a long line, in
// order (kernel/loop_budget.rs says why).
//
// NEAR_ONE (f32 products): a chunk whose factors all lie within 2^-7 of 1
// is scanned as deviations d = x - 1 (exact there), (1 + a)(1 + b) = 1 +
// (a + b + ab), and each prefix rounded to 1 + d once. Products of two
// factors near 1 round with a bias (where they straddle 1, a tie on the
// finer grid below 1 is broken downward by their negative cross term):
// the tree's chunk totals were 0.55 ulp low on average, and a cumprod of
// 1e7 factors 1 + U(-1e-3, 1e-3) ended 8.7e-3 off (NumPy's: 1.2e-5).
// Within 2^-7, a prefix of 64 factors stays in [0.6, 1.7].
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
        var near = false;
        if (NEAR_ONE) {
            if (is_far(v)) {
                atomicOr(&far, 1u);
            }
            workgroupBarrier();
            near = atomicLoad(&far) == 0u;
        }
        chunk[t] = to_near(v, near);
        workgroupBarrier();
        for (var width = 1u; width < 64u; width *= 2u) {
            var earlier = to_near(identity(), near);
            if (t >= width) {
                earlier = chunk[t - width];
            }
            workgroupBarrier();
            chunk[t] = combine_near(earlier, chunk[t], near);
            workgroupBarrier();
        }
        if (i < params.end) {
            store(u32(start[1] + i32(i) * params.dst_step), combine(carry, from_near(chunk[t], near)));
        }
        carry = combine(carry, from_near(chunk[63], near));
        workgroupBarrier();
        if (NEAR_ONE) {
            if (t == 0u) {
                atomicStore(&far, 0u);
            }
            workgroupBarrier();
        }
    }
}
