// Scaled dot-product attention in one pass over the keys and values (flash
// attention: an online softmax over tiles of keys), specialised by
// gpu/attention/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  q (1), k (2), v (3), the destination (4): the output, or the
//             f32 partial results of a split; the mask (5) where given
//   ACCESS    quad_q, quad_k, quad_v (four elements of a row from a
//             multiple of four, zeros past the row's end), allowed (a bool
//             mask's verdict, or true) and bias (a float mask's value, or 0)
//   WALK      batch_starts(b): where batch b's queries, keys, values, mask
//             and destination start
//   TILE      KEYS (keys a tile), HEAD4 and VALUE4 (quads of a head and of
//             a value row, rounded up to whole quads for each thread),
//             KV_STRIDE
//   FINISH    what a thread writes for its query at the end: its share of
//             the output row (`acc / l`, NaN for a row with a NaN or +inf
//             score, `acc` (zeros, or NaN from values at weights of 0)
//             for a row that attends none), or the split's partial result
//             (m, l or NaN, and acc) for combine.wgsl to merge, at the
//             dispatch's row (its pair's 16 rows in order)
//
// A workgroup of 64 threads takes ROWS = 16 rows of one batch (a key head:
// the queries of the query heads it serves, so that a decoding step's
// grouped heads share each tile of keys), four threads a row, and one split's range of key tiles. Per tile of KEYS keys:
// the keys are staged in workgroup memory (zeros past the last key and the
// head), each thread scores KEYS / 4 keys of its query, the four threads of
// a query merge their maxima, the values replace the keys in workgroup
// memory while each thread turns its scores into exp(score - max), the
// four merge their sums, and each thread rescales and adds the weighted
// values to its share of the row (quads part, part + 4, ...). Scores, the
// softmax and the sums are f32 whatever the operands' dtype; the output is
// rounded once. Every loop runs to a bound the parameters fix: the head and
// value quads, the tile, and this split's tiles (which the launcher keeps
// within the loop budget).
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{WALK}}
{{TILE}}

const WORKGROUP: u32 = 64u;
const ROWS: u32 = 16u;
const PER_THREAD: u32 = KEYS / 4u;
const OWNED: u32 = VALUE4 / 4u;
const Q_STRIDE: u32 = HEAD4 + 1u;
const P_STRIDE: u32 = KEYS + 1u;

var<workgroup> q_tile: array<vec4<f32>, ROWS * Q_STRIDE>;
var<workgroup> kv_tile: array<vec4<f32>, KEYS * KV_STRIDE>;
var<workgroup> p_tile: array<f32, ROWS * P_STRIDE>;
var<workgroup> merge_max: array<f32, WORKGROUP>;
var<workgroup> merge_sum: array<f32, WORKGROUP>;
var<workgroup> merge_bad: array<u32, WORKGROUP>;

// Through f32_from_bits: browsers reject a constant that is infinite.
fn minus_inf() -> f32 {
    return f32_from_bits(0xff800000u);
}

// Neither NaN nor infinite.
fn finite(x: f32) -> bool {
    return !is_nan_f32(x) && !is_inf_f32(x);
}

// The values of keys k0 .. k0 + KEYS (zeros past the last key and the
// value row) into kv_tile, from the values starting at `start`.
fn stage_values(start: i32, k0: u32, t: u32) {
    for (var x = t; x < KEYS * VALUE4; x += WORKGROUP) {
        let j = x / VALUE4;
        var v = vec4<f32>(0.0);
        if (k0 + j < params.source) {
            v = quad_v(start, k0 + j, x % VALUE4);
        }
        kv_tile[j * KV_STRIDE + x % VALUE4] = v;
    }
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform across the workgroup: every thread reaches every barrier.
    let w = wid.x + wid.y * params.row_width;
    if (w >= params.workgroups) {
        return;
    }
    // This dispatch's (batch, query tile) pairs from `pair_offset`, each
    // in `splits` workgroups.
    let split = w % params.splits;
    let pair = params.pair_offset + w / params.splits;
    let tile = pair % params.tiles;
    let b = pair / params.tiles;
    let starts = batch_starts(b);
    // A batch's rows are query i of the j-th query head its key head
    // serves at row j L + i.
    let row0 = tile * ROWS;
    let r = t / 4u;
    let part = t % 4u;
    let live = row0 + r < params.rows;
    let i = (row0 + r) % params.length;
    let m0 = starts[3] + i32((row0 + r) / params.length) * params.m_group;
    for (var x = t; x < ROWS * HEAD4; x += WORKGROUP) {
        let row = x / HEAD4;
        let at = row0 + row;
        var q = vec4<f32>(0.0);
        if (at < params.rows) {
            let head = starts[0] + i32(at / params.length) * params.q_group;
            q = quad_q(head, at % params.length, x % HEAD4);
        }
        q_tile[row * Q_STRIDE + x % HEAD4] = q;
    }
    // This split's keys; for causal attention, none past the tile's last
    // query position (the last of the heads its rows cross).
    let first = split * params.tiles_per_split * KEYS;
    var end = min(params.source, first + params.tiles_per_split * KEYS);
    if (params.causal != 0u) {
        let last = min(row0 + ROWS, params.rows) - 1u;
        var latest = params.length - 1u;
        if (last / params.length == row0 / params.length) {
            latest = last % params.length;
        }
        end = min(end, latest + 1u);
    }
    var m = minus_inf();
    var l = 0.0;
    var bad = false;
    var acc: array<vec4<f32>, OWNED>;
    for (var u = 0u; u < OWNED; u++) {
        acc[u] = vec4<f32>(0.0);
    }
    for (var k0 = first; k0 < end; k0 += KEYS) {
        // The last tile's values are read; the queries are staged.
        workgroupBarrier();
        for (var x = t; x < KEYS * HEAD4; x += WORKGROUP) {
            let j = x / HEAD4;
            var k = vec4<f32>(0.0);
            if (k0 + j < params.source) {
                k = quad_k(starts[1], k0 + j, x % HEAD4);
            }
            kv_tile[j * KV_STRIDE + x % HEAD4] = k;
        }
        workgroupBarrier();
        // Each quad of the query read once for the thread's keys.
        var s: array<f32, PER_THREAD>;
        for (var u = 0u; u < PER_THREAD; u++) {
            s[u] = 0.0;
        }
        for (var e = 0u; e < HEAD4; e++) {
            let q = q_tile[r * Q_STRIDE + e];
            for (var u = 0u; u < PER_THREAD; u++) {
                s[u] += dot(q, kv_tile[(part + 4u * u) * KV_STRIDE + e]);
            }
        }
        var top = minus_inf();
        for (var u = 0u; u < PER_THREAD; u++) {
            let key = k0 + part + 4u * u;
            var score = minus_inf();
            let causal_ok = params.causal == 0u || key <= i;
            if (live && key < params.source && causal_ok) {
                score = s[u] * params.scale + bias(m0, i, key);
                // A bool mask adds -inf, as PyTorch's: a masked NaN or
                // +inf score is NaN.
                if (!allowed(m0, i, key)) {
                    score += minus_inf();
                }
                if (finite(score)) {
                    top = max(top, score);
                } else if (!(is_inf_f32(score) && sign_bit_f32(score))) {
                    bad = true;
                }
            }
            s[u] = score;
        }
        merge_max[t] = top;
        merge_bad[t] = u32(bad);
        workgroupBarrier();
        let base = t & ~3u;
        let tile_top = max(max(merge_max[base], merge_max[base + 1u]),
            max(merge_max[base + 2u], merge_max[base + 3u]));
        bad = (merge_bad[base] | merge_bad[base + 1u] | merge_bad[base + 2u]
            | merge_bad[base + 3u]) != 0u;
        let m_new = max(m, tile_top);
        // Every thread has scored: the values take the keys' place.
        stage_values(starts[2], k0, t);
        var sum = 0.0;
        for (var u = 0u; u < PER_THREAD; u++) {
            var p = 0.0;
            if (finite(s[u])) {
                p = exp(s[u] - m_new);
            }
            p_tile[r * P_STRIDE + part + 4u * u] = p;
            sum += p;
        }
        merge_sum[t] = sum;
        workgroupBarrier();
        let tile_sum = (merge_sum[base] + merge_sum[base + 1u])
            + (merge_sum[base + 2u] + merge_sum[base + 3u]);
        // Nothing summed while the maximum is -inf.
        var alpha = 0.0;
        if (finite(m)) {
            alpha = exp(m - m_new);
        }
        l = l * alpha + tile_sum;
        m = m_new;
        for (var u = 0u; u < OWNED; u++) {
            acc[u] = acc[u] * alpha;
        }
        for (var j = 0u; j < KEYS; j++) {
            let p = p_tile[r * P_STRIDE + j];
            for (var u = 0u; u < OWNED; u++) {
                acc[u] += p * kv_tile[j * KV_STRIDE + part + 4u * u];
            }
        }
    }
    // Keys of this split past a causal tile's last query: not scored, but
    // the composed form's product multiplies their values by a weight of
    // 0, which makes a NaN or infinite value NaN. Each thread notes which
    // of its columns such a value holds.
    var poison: array<vec4<u32>, OWNED>;
    for (var u = 0u; u < OWNED; u++) {
        poison[u] = vec4<u32>(0u);
    }
    let split_end = min(params.source, first + params.tiles_per_split * KEYS);
    let scanned = first + (max(end, first) - first + KEYS - 1u) / KEYS * KEYS;
    for (var k0 = scanned; k0 < split_end; k0 += KEYS) {
        workgroupBarrier();
        stage_values(starts[2], k0, t);
        workgroupBarrier();
        let exponent = vec4<u32>(0x7f800000u);
        for (var j = 0u; j < KEYS; j++) {
            for (var u = 0u; u < OWNED; u++) {
                let bits = bitcast<vec4<u32>>(kv_tile[j * KV_STRIDE + part + 4u * u]);
                poison[u] = poison[u] | select(vec4<u32>(0u), vec4<u32>(1u), (bits & exponent) == exponent);
            }
        }
    }
    if (live) {
        let o0 = starts[4] + i32((row0 + r) / params.length) * params.o_group
            + i32(i) * params.o_row;
{{FINISH}}
    }
}
