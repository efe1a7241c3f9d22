// Small triangular solves T · X = B in place of B (ops/linalg), a thread
// per column of each B; specialised by gpu/linalg/, which fills the
// {{...}} slots:
//   PRELUDE   `struct Params` bound at 0, and kernel/math.wgsl
//   FIELD     type V (f32, or vec2<f32> for complex) and its arithmetic
//   MATRICES  b_buf (1, read_write raw f32) and, unless T lies in B's
//             storage, t_buf (2, read); load_b, store_b, load_t
//
// T is [batch, w, w] and B [batch, w, r] at params' offsets and strides
// (raw f32 units; a batch stride of 0 shares one T). Thread o solves
// column o % r of matrix o / r by forward (lower) or back (upper)
// substitution, reading only T's triangle, its diagonal as ones with
// `unit`, conjugated with `conj`. The op layer keeps w to its block
// (64), so a thread loops at most w (w + 1) / 2 times.
{{PRELUDE}}
{{FIELD}}
{{MATRICES}}

fn tri(b: u32, i: u32, j: u32) -> V {
    let v = load_t(u32(params.t_offset + i32(b) * params.t_batch + i32(i) * params.t_row + i32(j) * params.t_col));
    return select(v, conj_v(v), params.conj != 0u);
}

fn b_at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.b_offset + i32(b) * params.b_batch + i32(i) * params.b_row + i32(j) * params.b_col);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * params.row_threads;
    if (o >= params.count) {
        return;
    }
    let b = o / params.r;
    let col = o - b * params.r;
    let w = params.w;
    let lower = params.lower != 0u;
    for (var step = 0u; step < w; step++) {
        let j = select(w - 1u - step, step, lower);
        let q = b_at(b, j, col);
        var s = load_b(q);
        let first = select(j + 1u, 0u, lower);
        let last = select(w, j, lower);
        for (var k = first; k < last; k++) {
            s = sub_v(s, mul_v(tri(b, j, k), load_b(b_at(b, k, col))));
        }
        if (params.unit == 0u) {
            s = div_v(s, tri(b, j, j));
        }
        store_b(q, s);
    }
}
