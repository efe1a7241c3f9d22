// Binary searches of sorted rows (ops/counting's searchsorted and
// digitize), specialised by gpu/search/, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   WIDE_INTS kernel/int64.wgsl (i64 compares), for i64
//   BINDINGS  sorted (1), values (2), out_buf (3): i64 as vec2<u32>
//   ACCESS    load_sorted, load_values (element -> compute type)
//   LESS      fn less(a, b) -> bool: the sort's order (NaN last, -0 = +0)
//
// Thread o finds value o's position (values as [rows, m], row-major) in
// its row of `sorted` ([rows, n], any strides), as the CPU does: at most
// 32 halvings of [0, n).
{{PRELUDE}}
{{WIDE_INTS}}
{{BINDINGS}}
{{ACCESS}}
{{LESS}}

fn sorted_at(base: i32, k: u32) -> {T} {
    return load_sorted(u32(base + i32(k) * params.s_step));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * params.row_threads;
    if (o >= params.count) {
        return;
    }
    let r = o / params.m;
    let j = o - r * params.m;
    let v = load_values(u32(params.v_offset + i32(r) * params.v_row + i32(j) * params.v_step));
    let base = params.s_offset + i32(r) * params.s_row;
    let n = params.n;
    var reversed = false;
    if (params.auto_direction != 0u && n > 0u) {
        reversed = less(sorted_at(base, n - 1u), sorted_at(base, 0u));
    }
    var lo = 0u;
    var hi = n;
    for (var step = 0u; step < 32u && lo < hi; step++) {
        let mid = lo + (hi - lo) / 2u;
        let s = sorted_at(base, select(mid, n - 1u - mid, reversed));
        var right_of = less(s, v);
        if (params.right != 0u) {
            right_of = !less(v, s);
        }
        if (right_of) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    out_buf[params.out_offset + o] = vec2<u32>(select(lo, n - lo, reversed), 0u);
}
