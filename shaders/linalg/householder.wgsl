// One step of a blocked Householder QR (ops/linalg's qr, LAPACK's geqrf):
// a workgroup a matrix factors columns [col_from, col_to) of the panel
// [start, start + width) in place and writes the panel's triangular
// factor T (larft: the panel's reflectors are I - V T Vᴴ); specialised by
// gpu/linalg/, which fills the {{...}} slots:
//   PRELUDE   `struct Params` bound at 0, and kernel/math.wgsl
//   FIELD     type V (f32, or vec2<f32> for complex) and its arithmetic
//   MATRICES  a_buf (1, read_write raw f32), t_buf (2, read_write raw
//             f32); load_a, store_a, load_t, store_t
//   WG        the workgroup's threads (64 or 256)
//
// The matrices are [batch, n, m] and T [batch, width, width] at params'
// offsets and strides (raw f32 units). For column j (LAPACK's larfg):
// alpha = A[j, j] and x = A[j+1.., j]; unless x is zero and alpha real,
// beta = -sign(re alpha) |(alpha, x)|, tau = (beta - alpha) / beta,
// v = (1, x / (alpha - beta)) is stored below the diagonal and beta on it
// (else tau = 0, H = I). Then one pass of dot products d_c = Σ conj(v_r)
// A[r, c] over rows r >= j, for every other column c of the panel: the
// later columns take H(j)ᴴ (A[., c] -= conj(tau) v d_c); the earlier ones
// give T's column, T[0..jj, jj] = -tau T[0..jj, 0..jj] conj(d), and
// T[jj, jj] = tau (jj = j - start). Threads take a column each in groups
// of 64, each group a share of the rows; the groups' sums meet in
// workgroup memory.
{{PRELUDE}}
{{FIELD}}
{{MATRICES}}

const COLUMNS: u32 = 64u;
const GROUPS: u32 = {{WG}}u / 64u;

var<workgroup> norm_part: array<f32, {{WG}}>;
var<workgroup> dot_part: array<V, {{WG}}>;
var<workgroup> dots: array<V, 64>;
var<workgroup> shared_tau: V;
var<workgroup> shared_beta: f32;
// v = x / (alpha - beta) as (x 2^-f) * shared_inverse, 2^f the scale of
// the norm below: the unscaled difference of a column of noise (1e-43
// left below a rank-1 matrix's first reflection) is subnormal, and its
// reciprocal infinite (Q of ones(20, 8) came out NaN).
var<workgroup> shared_inverse: V;
var<workgroup> shared_exp: i32;

fn at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.a_offset + i32(b) * params.a_batch + i32(i) * params.a_row + i32(j) * params.a_col);
}

fn t_at(b: u32, i: u32, j: u32) -> u32 {
    return u32(params.t_offset + i32(b) * params.t_batch + i32(i) * params.t_row + i32(j) * params.t_col);
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let b = wid.x + wid.y * params.groups_x;
    if (b >= params.batch) {
        return;
    }
    let n = params.n;
    let s = params.start;
    let end = s + params.width;
    for (var j = params.col_from; j < params.col_to; j++) {
        // The norm of x, over the workgroup, as LAPACK's nrm2 has it:
        // x is scaled by a power of two near its largest part, so that
        // squares of 1e20 do not overflow (a NaN tau) nor squares of
        // 1e-30 underflow to a zero x (no reflection, R's sign flipped).
        var big = 0.0;
        for (var i = j + 1u + t; i < n; i += {{WG}}u) {
            big = max(big, max_part(load_a(at(b, i, j))));
        }
        norm_part[t] = big;
        workgroupBarrier();
        for (var half = {{WG}}u / 2u; half > 0u; half >>= 1u) {
            if (t < half) {
                norm_part[t] = max(norm_part[t], norm_part[t + half]);
            }
            workgroupBarrier();
        }
        // 2^(e - 1) <= the largest part < 2^e: the scaled parts are below
        // 1, their squares' sum at most 2n, and a NaN still reaches it.
        let e = clamp(frexp(norm_part[0]).exp, -160, 160);
        workgroupBarrier();
        var sum = 0.0;
        for (var i = j + 1u + t; i < n; i += {{WG}}u) {
            sum += abs_sq(scale2_v(load_a(at(b, i, j)), -e));
        }
        norm_part[t] = sum;
        workgroupBarrier();
        for (var half = {{WG}}u / 2u; half > 0u; half >>= 1u) {
            if (t < half) {
                norm_part[t] += norm_part[t + half];
            }
            workgroupBarrier();
        }
        if (t == 0u) {
            let alpha = load_a(at(b, j, j));
            // |x|^2 / 4^e: 0 only for a zero x (else at least 1/4).
            let x2 = norm_part[0];
            if (x2 == 0.0 && im_v(alpha) == 0.0) {
                shared_tau = zero_v();
                shared_beta = re_v(alpha);
                shared_inverse = zero_v();
                shared_exp = 0;
            } else {
                // |(alpha, x)| scaled by the larger of alpha's power of
                // two and x's (x's squares then scaled by 4^(e - f)), of
                // those not zero (whose frexp exponent is 0).
                let top = max_part(alpha);
                let ea = select(-1000, frexp(top).exp, top > 0.0);
                let f = clamp(max(select(-1000, e, x2 > 0.0), ea), -160, 160);
                // tau and v in the scaled terms (at least 1/2 apart),
                // which they do not depend on.
                let a = scale2_v(alpha, -f);
                let r = sqrt(abs_sq(a) + scale2(scale2(x2, e - f), e - f));
                // LAPACK's -sign(r, alpha), -0 counting as negative.
                let negative = (bitcast<u32>(re_v(alpha)) & 0x80000000u) != 0u;
                let beta = select(-r, r, negative);
                shared_tau = div_v(sub_v(from_re(beta), a), from_re(beta));
                shared_beta = scale2(beta, f);
                shared_inverse = div_v(one_v(), sub_v(a, from_re(beta)));
                shared_exp = f;
            }
        }
        let tau = workgroupUniformLoad(&shared_tau);
        let beta = workgroupUniformLoad(&shared_beta);
        if (!is_zero(tau)) {
            let inverse = shared_inverse;
            let f = shared_exp;
            for (var i = j + 1u + t; i < n; i += {{WG}}u) {
                let q = at(b, i, j);
                store_a(q, mul_v(scale2_v(load_a(q), -f), inverse));
            }
        }
        storageBarrier();
        if (t == 0u) {
            store_a(at(b, j, j), from_re(beta));
        }
        // d_c = Σ conj(v_r) A[r, c], v_j = 1, for the panel's columns.
        let c = s + t % COLUMNS;
        let group = t / COLUMNS;
        var d = zero_v();
        if (c < end && c != j) {
            if (group == 0u) {
                d = load_a(at(b, j, c));
            }
            for (var r = j + 1u + group; r < n; r += GROUPS) {
                d = add_v(d, mul_v(conj_v(load_a(at(b, r, j))), load_a(at(b, r, c))));
            }
        }
        dot_part[t] = d;
        workgroupBarrier();
        if (t < COLUMNS) {
            var total = zero_v();
            for (var g = 0u; g < GROUPS; g++) {
                total = add_v(total, dot_part[t + g * COLUMNS]);
            }
            dots[t] = total;
        }
        storageBarrier();
        workgroupBarrier();
        // The later columns take H(j)ᴴ = I - conj(tau) v vᴴ.
        let later = end - j - 1u;
        let rows = n - j;
        let ctau = conj_v(tau);
        for (var e = t; e < rows * later; e += {{WG}}u) {
            let r = j + e / later;
            let col = j + 1u + e % later;
            let v = select(load_a(at(b, r, j)), one_v(), r == j);
            let q = at(b, r, col);
            store_a(q, sub_v(load_a(q), mul_v(ctau, mul_v(v, dots[col - s]))));
        }
        // T's column jj: -tau T[0..jj, 0..jj] conj(d), and tau on the diagonal.
        let jj = j - s;
        if (t < params.width) {
            var value = zero_v();
            if (t == jj) {
                value = tau;
            } else if (t < jj) {
                var acc = zero_v();
                for (var q = t; q < jj; q++) {
                    acc = add_v(acc, mul_v(load_t(t_at(b, t, q)), conj_v(dots[q])));
                }
                value = sub_v(zero_v(), mul_v(tau, acc));
            }
            store_t(t_at(b, t, jj), value);
        }
        storageBarrier();
    }
}
