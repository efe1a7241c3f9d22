// The partial results of an attention's splits merged into its output
// (flash.wgsl writes one per query row and split: the row's largest finite
// score m, its sum l of exp(score - m) or NaN where a score was NaN or
// +inf, and the weighted values' sums acc), specialised by
// gpu/attention/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the partials (1, f32: 16 rows for each (batch, query tile)
//             pair of the dispatch, in order) and `out_buf` (2)
//   ACCESS    store_out
//
// A thread per output element: the largest m of the splits that summed
// anything, then the splits' l and acc rescaled to it and added, and the
// quotient stored, rounded once; NaN for a row with a NaN l, and for a
// column whose acc is NaN in any split; 0 for a row that summed nothing
// (it attends no key: weights of 0, as PyTorch's safe softmax gives). Its loops run over the splits, which the launcher keeps within
// the loop budget.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = gid.x + gid.y * params.row_width * 64u;
    if (x >= params.rows * params.value) {
        return;
    }
    // Partial row `row`: query i of batch b, past the last query for a
    // short last tile.
    let row = x / params.value;
    let col = x % params.value;
    let pair = params.pair_offset + row / 16u;
    let i = (pair % params.tiles) * 16u + row % 16u;
    if (i >= params.length) {
        return;
    }
    let b = pair / params.tiles;
    let width = params.value + 2u;
    let first = row * params.splits * width;
    var top = f32_from_bits(0xff800000u);
    var bad = false;
    for (var s = 0u; s < params.splits; s++) {
        let l = part_buf[first + s * width + 1u];
        if (is_nan_f32(l)) {
            bad = true;
        } else if (l > 0.0) {
            top = max(top, part_buf[first + s * width]);
        }
    }
    var l = 0.0;
    var o = 0.0;
    for (var s = 0u; s < params.splits; s++) {
        let p = first + s * width;
        let ls = part_buf[p + 1u];
        let acc = part_buf[p + 2u + col];
        // A split that summed nothing still multiplied (or skipped) its
        // values by a weight of 0: a NaN there is the column's.
        if (is_nan_f32(acc)) {
            bad = true;
        } else if (!is_nan_f32(ls) && ls > 0.0) {
            let scale = exp(part_buf[p] - top);
            l += ls * scale;
            o += acc * scale;
        }
    }
    var y = nan_f32();
    if (!bad) {
        y = 0.0;
        if (l > 0.0) {
            y = div_f32(o, l);
        }
    }
    store_out(params.out_offset + (b * params.length + i) * params.value + col, y);
}
