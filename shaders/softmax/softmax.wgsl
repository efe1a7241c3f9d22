// Softmax (or log-softmax) along the lines of a tensor, one workgroup per
// line, specialised by softmax/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  the source (binding 1) and `out_buf` (binding 2)
//   ACCESS    how a line is read and written: `gather` (a thread's
//             Partial over its elements) and `spread` (the results of its
//             elements stored), one element at a time through the lines'
//             steps, or four at a time as whole array entries where every
//             line is an aligned run of a length that is a multiple of four
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   RESULT    the value stored for x: `exp(x - m) / s` or `x - m - log(s)`
//             (unused where `spread` stores each line's `total`)
//   ROWS_ENTRY  rows mode's entry point, on adapters with subgroups, for
//             lines short enough for a subgroup's registers (see below)
//
// One pass over the line keeps, per thread, the running maximum m of its
// finite elements and s, the sum of exp(x - m) rescaled whenever m grows
// (an online softmax); the workgroup merges the threads' (m, s) pairs,
// then a second pass writes every element. A line holding NaN or +inf, or
// only -inf, is NaN throughout, as `exp(x - max) / sum` gives it. A
// logsumexp writes one f32 per line instead, `total` of its (m, s).
// Every exp is `exp_accurate_f32` (math.wgsl's, about an ulp): WGSL
// allows the built-in 3 + 2|x| ulp, and x - m runs down to -104 before
// exp(x - m) underflows (lavapipe's built-in gave 14-ulp softmaxes).
{{PRELUDE}}
{{BINDINGS}}
{{WALK}}

const WORKGROUP: u32 = 128u;

// A partial softmax: the maximum of the finite elements seen, the sum of
// exp(x - m) over them (0 while none), whether a NaN or +inf was seen, and
// whether a NaN was.
struct Partial {
    m: f32,
    s: f32,
    bad: bool,
    nan: bool,
}

fn merge(a: Partial, b: Partial) -> Partial {
    let bad = a.bad || b.bad;
    let nan = a.nan || b.nan;
    if (a.s == 0.0) {
        return Partial(b.m, b.s, bad, nan);
    }
    if (b.s == 0.0) {
        return Partial(a.m, a.s, bad, nan);
    }
    let m = max(a.m, b.m);
    return Partial(m, a.s * exp_accurate_f32(a.m - m) + b.s * exp_accurate_f32(b.m - m), bad, nan);
}

// An input as the softmax takes it: negated for a softmin (`params.flip`
// its sign bit), exactly.
fn flipped(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ params.flip);
}

fn flipped_quad(v: vec4<f32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) ^ vec4<u32>(params.flip));
}

// `p` with element x taken in.
fn absorb(p: Partial, x: f32) -> Partial {
    if (is_nan_f32(x)) {
        return Partial(p.m, p.s, true, true);
    }
    if (is_inf_f32(x) && !sign_bit_f32(x)) {
        return Partial(p.m, p.s, true, p.nan);
    }
    if (is_inf_f32(x)) {
        // -inf adds exp(-inf) = 0.
        return p;
    }
    if (p.s == 0.0) {
        return Partial(x, 1.0, p.bad, p.nan);
    }
    if (x > p.m) {
        return Partial(x, p.s * exp_accurate_f32(p.m - x) + 1.0, p.bad, p.nan);
    }
    return Partial(p.m, p.s + exp_accurate_f32(x - p.m), p.bad, p.nan);
}

// A whole line's logsumexp, as PyTorch's (its maximum shifted by 0 where
// infinite): NaN for a NaN, +inf for a +inf, -inf for no finite element.
fn total(p: Partial) -> f32 {
    if (p.nan) {
        return nan_f32();
    }
    if (p.bad) {
        return f32_from_bits(0x7f800000u);
    }
    if (p.s == 0.0) {
        return f32_from_bits(0xff800000u);
    }
    return p.m + log_f32(p.s);
}

fn result(x: f32, m: f32, s: f32) -> f32 {
    return {{RESULT}};
}

{{ACCESS}}

var<workgroup> partials: array<Partial, WORKGROUP>;

@compute @workgroup_size(WORKGROUP)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let l = wid.x + wid.y * params.row_width;
    if (l >= params.lines) {
        return;
    }
    let start = line_starts(l);
    let p = gather(start[0], t);
    partials[t] = p;
    workgroupBarrier();
    for (var width = WORKGROUP / 2u; width > 0u; width = width / 2u) {
        if (t < width) {
            partials[t] = merge(partials[t], partials[t + width]);
        }
        workgroupBarrier();
    }
    spread(start[0], start[1], t, partials[0]);
}
{{ROWS_ENTRY}}