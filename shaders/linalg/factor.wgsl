// One step of a blocked LU or Cholesky factorization (ops/linalg), one
// workgroup a matrix, in place; specialised by gpu/linalg/, which fills
// the {{...}} slots:
//   PRELUDE   `struct Params` bound at 0, and kernel/math.wgsl
//   FIELD     type V (f32, or vec2<f32> for complex) and its arithmetic
//   MATRICES  a_buf (1, read_write raw f32), aux_buf (2, read_write i32);
//             load_a, store_a
//   WG        the workgroup's threads (64 or 256)
//
// The matrices are [batch, n, m] at params' offset and strides (raw f32
// units: a complex value is two f32 at a stride of one). Each batch row
// of aux_buf holds, for LU, the pivots [0, k), the row order [k, k + n)
// and the info (last); for Cholesky only the info. This dispatch works
// on columns [col_from, col_to) of the panel [start, start + width):
// launchers cut a panel into slices of columns so that no invocation
// loops past kernel/loop_budget.rs's bound.
//
// LU (LAPACK's getf2): for each column j, the first row of the largest
// magnitude at or below j (the diagonal where it is NaN, as LAPACK's
// i?amax) is found by a tree over the workgroup, the two
// rows are swapped across all m columns, the column below is divided by
// the pivot (a zero pivot instead sets the info, once) and
// the panel's later columns get the rank-1 update. Cholesky (potf2): for
// each column of the diagonal block, the real diagonal's square root
// (a diagonal that is not positive, or NaN, sets the info and ends the
// step), the column below scaled, the row right of the diagonal zeroed
// (to the matrix's last column), the block's lower triangle updated.
// storageBarrier orders each phase's writes before the next one's reads.
{{PRELUDE}}
{{FIELD}}
{{MATRICES}}

var<workgroup> best_size: array<f32, {{WG}}>;
var<workgroup> best_row: array<u32, {{WG}}>;
var<workgroup> shared_value: f32;
var<workgroup> shared_flag: u32;

fn at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.a_offset + i32(b) * params.a_batch + i32(i) * params.a_row + i32(j) * params.a_col);
}

fn lu_step(b: u32, t: u32, aux: u32, info_at: u32) {
    let n = params.n;
    let perm = aux + params.k;
    if (params.col_from == 0u) {
        for (var i = t; i < n; i += {{WG}}u) {
            aux_buf[perm + i] = i32(i);
        }
    }
    storageBarrier();
    let end = params.start + params.width;
    for (var j = params.col_from; j < params.col_to; j++) {
        var size = -1.0;
        var row = n;
        for (var i = j + t; i < n; i += {{WG}}u) {
            var s = pivot_size(load_a(at(b, i, j)));
            // A NaN on the diagonal stays, as the largest: LAPACK's i?amax
            // starts from it, and nothing is larger than a NaN.
            if (i == j && is_nan_f32(s)) {
                s = f32_from_bits(F32_INF_BITS);
            }
            if (s > size) {
                size = s;
                row = i;
            }
        }
        best_size[t] = size;
        best_row[t] = row;
        workgroupBarrier();
        for (var half = {{WG}}u / 2u; half > 0u; half >>= 1u) {
            if (t < half) {
                let s = best_size[t + half];
                let r = best_row[t + half];
                if (s > best_size[t] || (s == best_size[t] && r < best_row[t])) {
                    best_size[t] = s;
                    best_row[t] = r;
                }
            }
            workgroupBarrier();
        }
        let found = workgroupUniformLoad(&best_row[0]);
        // Every magnitude NaN: the diagonal stays.
        let p = select(found, j, found >= n);
        if (p != j) {
            for (var c = t; c < params.m; c += {{WG}}u) {
                let x = at(b, j, c);
                let y = at(b, p, c);
                let u = load_a(x);
                store_a(x, load_a(y));
                store_a(y, u);
            }
            if (t == 0u) {
                let q = aux_buf[perm + j];
                aux_buf[perm + j] = aux_buf[perm + p];
                aux_buf[perm + p] = q;
            }
        }
        if (t == 0u) {
            aux_buf[aux + j] = i32(p);
        }
        storageBarrier();
        let pivot = load_a(at(b, j, j));
        if (is_zero(pivot)) {
            if (t == 0u && aux_buf[info_at] == 0) {
                aux_buf[info_at] = i32(j + 1u);
            }
        } else {
            // Divided, not multiplied by the reciprocal: a tiny pivot's
            // reciprocal overflows, a huge one's is subnormal (flushed
            // on some GPUs).
            for (var i = j + 1u + t; i < n; i += {{WG}}u) {
                let q = at(b, i, j);
                store_a(q, div_v(load_a(q), pivot));
            }
        }
        storageBarrier();
        let cols = end - j - 1u;
        let total = (n - j - 1u) * cols;
        for (var e = t; e < total; e += {{WG}}u) {
            let i = j + 1u + e / cols;
            let c = j + 1u + e % cols;
            let q = at(b, i, c);
            store_a(q, sub_v(load_a(q), mul_v(load_a(at(b, i, j)), load_a(at(b, j, c)))));
        }
        storageBarrier();
    }
}

fn cholesky_step(b: u32, t: u32, info_at: u32) {
    if (t == 0u) {
        shared_flag = u32(aux_buf[info_at] != 0);
    }
    if (workgroupUniformLoad(&shared_flag) != 0u) {
        return;
    }
    let end = params.start + params.width;
    for (var j = params.col_from; j < params.col_to; j++) {
        if (t == 0u) {
            shared_value = re_v(load_a(at(b, j, j)));
        }
        let d = workgroupUniformLoad(&shared_value);
        if (!(d > 0.0)) {
            if (t == 0u) {
                aux_buf[info_at] = i32(j + 1u);
            }
            return;
        }
        let l = sqrt(d);
        let r = div_f32(1.0, l);
        if (t == 0u) {
            store_a(at(b, j, j), from_re(l));
        }
        for (var i = j + 1u + t; i < end; i += {{WG}}u) {
            let q = at(b, i, j);
            store_a(q, scale_v(load_a(q), r));
        }
        // Row j right of the diagonal is the factor's zero: nothing later
        // reads or writes it (the trailing updates start below the block).
        for (var c = j + 1u + t; c < params.m; c += {{WG}}u) {
            store_a(at(b, j, c), zero_v());
        }
        storageBarrier();
        let size = end - j - 1u;
        let total = size * size;
        for (var e = t; e < total; e += {{WG}}u) {
            let i = j + 1u + e / size;
            let c = j + 1u + e % size;
            if (c <= i) {
                let q = at(b, i, c);
                store_a(q, sub_v(load_a(q), mul_v(load_a(at(b, i, j)), conj_v(load_a(at(b, c, j))))));
            }
        }
        storageBarrier();
    }
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let b = wid.x + wid.y * params.groups_x;
    if (b >= params.batch) {
        return;
    }
    let aux = params.aux_offset + b * params.aux_batch;
    let info_at = aux + params.aux_len - 1u;
    if (params.cholesky == 0u) {
        lu_step(b, t, aux, info_at);
    } else {
        cholesky_step(b, t, info_at);
    }
}
