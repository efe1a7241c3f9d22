// One-sided Jacobi (Hestenes) orthogonalization of the columns of each
// matrix, for ops/linalg's svd: a workgroup a matrix; specialised by
// gpu/linalg/, which fills the {{...}} slots:
//   PRELUDE   `struct Params` bound at 0, and kernel/math.wgsl
//   FIELD     type V (f32, or vec2<f32> for complex) and its arithmetic
//   MATRICES  a_buf (1, read_write raw f32), v_buf (2, read_write raw
//             f32), aux_buf (3, atomic i32); load_a, store_a, load_v,
//             store_v
//   STATES    the aux word's values ROTATED, SIGNIFICANT, CONVERGED
//
// A is [batch, n, m] and V [batch, m, m] (raw f32 units). A sweep is
// m' - 1 steps (m' = m rounded up to even) of a round-robin tournament:
// at step r, column 0 meets 1 + r and, for i >= 1, column
// 1 + (r + i) % (m' - 1) meets 1 + (r - i) % (m' - 1), so each step's
// pairs are disjoint and a sweep meets every pair once; pairs with the
// padding column m are skipped. A thread takes a pair at a time: the
// Gram entries alpha = |a_p|², beta = |a_q|², gamma = a_pᴴ a_q, and
// unless |gamma| <= tol sqrt(alpha beta), the rotation
//   a_p <- c a_p - s conj(e) a_q,  a_q <- s e a_p + c a_q  (e = gamma/|gamma|)
// with t = sign(zeta) / (|zeta| + sqrt(1 + zeta²)), zeta = (beta -
// alpha) / (2 |gamma|), c = 1 / sqrt(1 + t²), s = c t, applied to A's and
// V's columns alike. The aux word per matrix holds ROTATED once a step
// of the current sweep rotated (0 before), SIGNIFICANT too where both
// columns' squared norms passed params.negligible (rotations of rounding
// noise, the columns of singular values below the matrix's precision,
// keep the sweeps going but do not count as unfinished), and is
// CONVERGED once a whole sweep rotated nothing (later steps return at
// once). Dispatches run consecutive steps [step_from, step_to)
// (launchers cut sweeps to keep each invocation's loops within the loop
// budget) over the pairs [pair_from, pair_to) of each step: all of them,
// or for large matrices a share, one step a dispatch (the share from 0
// ends a sweep).
{{PRELUDE}}
{{FIELD}}
{{MATRICES}}
{{STATES}}

var<workgroup> shared_state: i32;

fn a_at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.a_offset + i32(b) * params.a_batch + i32(i) * params.a_row + i32(j) * params.a_col);
}

fn v_at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.v_offset + i32(b) * params.v_batch + i32(i) * params.v_row + i32(j) * params.v_col);
}

fn rotate(b: u32, p: u32, q: u32, flag_at: u32) {
    var alpha = 0.0;
    var beta = 0.0;
    var gamma = zero_v();
    for (var i = 0u; i < params.n; i++) {
        let x = load_a(a_at(b, i, p));
        let y = load_a(a_at(b, i, q));
        alpha += abs_sq(x);
        beta += abs_sq(y);
        gamma = add_v(gamma, mul_v(conj_v(x), y));
    }
    // A pair whose squares leave f32's normal range is summed again, each
    // column scaled by a power of two near its largest part (2^-ex,
    // 2^-ey): a graded matrix's column of 1e-20s, or the noise left of
    // one of two equal columns, which each sweep rotates smaller (its
    // subnormal |gamma| made 1 / |gamma| infinite: an SVD of ones(7, 7)
    // came out NaN). zeta and e do not depend on the scales but through
    // d = ey - ex. A column whose parts are all below 2^-103 (f32's
    // smallest normal over its epsilon; W's largest part is 1) stays:
    // rotated in subnormal steps it never turns orthogonal.
    var d = 0;
    // Whether both columns matter (a rescaled pair's smaller one is far
    // below any negligible norm).
    var significant = min(alpha, beta) > params.negligible;
    if (!(min(alpha, beta) >= 7.888609e-31)) {
        significant = false;
        var mx = 0.0;
        var my = 0.0;
        for (var i = 0u; i < params.n; i++) {
            mx = max(mx, max_part(load_a(a_at(b, i, p))));
            my = max(my, max_part(load_a(a_at(b, i, q))));
        }
        if (!(min(mx, my) >= 9.8607613e-32)) {
            return;
        }
        let ex = frexp(mx).exp;
        let ey = frexp(my).exp;
        alpha = 0.0;
        beta = 0.0;
        gamma = zero_v();
        for (var i = 0u; i < params.n; i++) {
            let x = scale2_v(load_a(a_at(b, i, p)), -ex);
            let y = scale2_v(load_a(a_at(b, i, q)), -ey);
            alpha += abs_sq(x);
            beta += abs_sq(y);
            gamma = add_v(gamma, mul_v(conj_v(x), y));
        }
        d = ey - ex;
    }
    // |gamma| without squaring it (which overflows past 1.8e19).
    let g = magnitude(gamma);
    if (!(g > params.tol * sqrt(alpha) * sqrt(beta))) {
        return;
    }
    let zeta = div_f32(scale2(beta, d) - scale2(alpha, -d), 2.0 * g);
    // sqrt(1 + zeta²) is |zeta| to f32 past 1e18, where zeta² overflows.
    let root = select(sqrt(1.0 + zeta * zeta), abs(zeta), abs(zeta) > 1e18);
    let t = div_f32(select(-1.0, 1.0, zeta >= 0.0), abs(zeta) + root);
    let c = div_f32(1.0, sqrt(1.0 + t * t));
    let s = c * t;
    // A rotation f32 cannot tell from none (norms 2^127 apart) is none.
    if (s == 0.0) {
        return;
    }
    let e = scale_v(gamma, div_f32(1.0, g));
    let se = scale_v(e, s);
    let sce = scale_v(conj_v(e), s);
    for (var i = 0u; i < params.n; i++) {
        let pa = a_at(b, i, p);
        let qa = a_at(b, i, q);
        let x = load_a(pa);
        let y = load_a(qa);
        store_a(pa, sub_v(scale_v(x, c), mul_v(sce, y)));
        store_a(qa, add_v(mul_v(se, x), scale_v(y, c)));
    }
    for (var i = 0u; i < params.m; i++) {
        let pv = v_at(b, i, p);
        let qv = v_at(b, i, q);
        let x = load_v(pv);
        let y = load_v(qv);
        store_v(pv, sub_v(scale_v(x, c), mul_v(sce, y)));
        store_v(qv, add_v(mul_v(se, x), scale_v(y, c)));
    }
    atomicOr(&aux_buf[flag_at], select(ROTATED, ROTATED | SIGNIFICANT, significant));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let b = wid.x + wid.y * params.groups_x;
    if (b >= params.batch) {
        return;
    }
    let flag_at = params.aux_offset + b * params.aux_batch;
    let rounds = params.m_even - 1u;
    for (var k = params.step_from; k < params.step_to; k++) {
        let r = k % rounds;
        if (t == 0u) {
            var state = atomicLoad(&aux_buf[flag_at]);
            if (r == 0u && state != CONVERGED && params.pair_from == 0u) {
                // A sweep ends: none of its steps rotated, or start anew.
                if (k > 0u && state == 0) {
                    state = CONVERGED;
                } else {
                    state = 0;
                }
                atomicStore(&aux_buf[flag_at], state);
            }
            shared_state = state;
        }
        if (workgroupUniformLoad(&shared_state) == CONVERGED) {
            return;
        }
        for (var i = params.pair_from + t; i < params.pair_to; i += 64u) {
            var p = 0u;
            var q = 1u + r;
            if (i > 0u) {
                p = 1u + (r + i) % rounds;
                q = 1u + (r + rounds - i) % rounds;
            }
            if (p < params.m && q < params.m) {
                rotate(b, p, q, flag_at);
            }
        }
        storageBarrier();
    }
}
