// Layer, RMS and group normalisation along the lines of a tensor
// (PyTorch's `layer_norm` and `rms_norm` over the trailing axes, flattened
// into one line; `group_norm` over each (batch, group) pair's channels),
// one workgroup per line, specialised by gpu/norm/mod.rs, which fills
// the {{...}} slots (STATS is not a slot of its own: mod.rs puts it in
// ENTRY's text):
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the source (1), `out_buf` (2), then the f32 weight and
//             bias where given (3 and 4, or 3 for either alone)
//   ACCESS    load_src (element -> f32), store_out, and load_weight and
//             load_bias where given
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   STATS     the line's `shift`, `fine` and `scale`: its mean as an
//             estimate and a correction to it, and 1 / sqrt(var + eps)
//             (layer), or 0, 0 and 1 / sqrt(mean of squares + eps) (RMS)
//   AFFINE    affine(y, l, i): y times weight c plus bias c, as given, where
//             c is element i of line l's channel (group normalisation) or i
//   ENTRY     the entry point: `main`, a workgroup per line (gpu/norm's
//             GROUP_ENTRY), `main_rows`, a subgroup per aligned line held
//             in registers (kernel/rows.rs's `entry`), or a split line's
//             two stages, `main_stats` and `main_apply` (gpu/norm/split.rs),
//             a workgroup per chunk, the second reading the partials the
//             first wrote
//
// The statistics are sums over the line in f32: each thread's share, then
// a tree over the workgroup; the variance sums the deviations from the
// mean and their squares (a second read of the line), corrected for the
// mean's error (`corrected`), never E[x^2] - E[x]^2. Divisions and square
// roots are the exact ones of math.wgsl. Each output is (x - shift - fine)
// times scale, then the weight and bias, rounded once into its dtype.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{WALK}}

const WORKGROUP: u32 = 128u;

var<workgroup> sums: array<f32, WORKGROUP>;

// The sum of every thread's `v` (every thread of the workgroup calls it).
fn total(v: f32, t: u32) -> f32 {
    sums[t] = v;
    workgroupBarrier();
    for (var width = WORKGROUP / 2u; width > 0u; width = width / 2u) {
        if (t < width) {
            sums[t] = sums[t] + sums[t + width];
        }
        workgroupBarrier();
    }
    let s = sums[0];
    workgroupBarrier();
    return s;
}

// The mean squared deviation from the mean, given the mean square `m` of
// the deviations from an estimate of the mean and their mean `fine` (how
// far the estimate is off): m - fine^2, never negative (m overflowed to
// inf stays inf; NaN stays NaN).
fn corrected(m: f32, fine: f32) -> f32 {
    return maximum_f32(m - min(fine * fine, 3.4e38), 0.0);
}

fn element(src0: i32, i: u32) -> f32 {
    return load_src(u32(src0 + i32(i) * params.src_step));
}

{{AFFINE}}

{{ENTRY}}
