// A 2-D transposed convolution as one implicit matrix product, split by
// the output's phase. Output row oy = py + s qy (py < s, the stride) sums
// the input rows y = (oy + p - i d) / s of the taps i that divide exactly:
// those with i d = py + p (mod s). They step by si = s / gcd(s, d) from
// the first, i0, so the phase's t-th tap reads input row qy + base - t e
// (base = (py + p - i0 d) / s, e = d / gcd(s, d)): each phase (py, px) is
// a stride-1 convolution over (qy, qx) with its own cy x cx taps, and no
// tap that adds nothing is visited. A workgroup takes one phase of one
// image and group (the dispatch's z counts phases fastest, then groups,
// then images) and runs the register-tiled kernel (matmul/tiling.rs) over
// k = channels per group x cy cx, reading the weight (`[in, out / groups,
// kh, kw]`) and the input through their strides and writing each output
// where it lies: no zeroed output, no crop, no intermediate, one dispatch.
// conv/transposed.rs fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the weight (binding 1), the input (binding 2), out_buf
//             (binding 3)
//   ACCESS    load_a / load_b (element -> Acc), store_out and load_out
//   ACC       `alias Acc = f32;` and `const ZERO: Acc`
//   KERNEL    the tile's constants, workgroup tiles and `main`
//
// A dispatch covers k in [k_start, k) of every phase, adding what the
// output holds when `accumulate` is set (the launcher cuts a long k into
// slices); a phase whose k ends before a slice adds nothing in it.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{ACC}}

// One axis of a phase: its residue (the first output row), the rows it
// has (`extent`), its taps (`count`, the first at `first`) and the input
// row of its first output's first tap (`base`).
struct Axis {
    residue: u32,
    extent: u32,
    first: u32,
    count: u32,
    base: i32,
}

struct Phase {
    y: Axis,
    x: Axis,
    // cy cx.
    taps: u32,
}

// The axis of residue `r` for an output of `out` rows, a kernel of `kernel`
// taps, the stride, dilation and padding, and the step between taps that
// divide exactly (`step` = s / gcd(s, d)). Tap i divides exactly where
// i d = r + p (mod s); solutions repeat every `step`, so the first is
// below it if there is one.
fn axis_of(r: u32, out: u32, kernel: u32, stride: u32, dil: u32, pad: u32, step: u32) -> Axis {
    var a = Axis(r, 0u, 0u, 0u, 0);
    if (r < out) {
        a.extent = (out - 1u - r) / stride + 1u;
    }
    let want = (r + pad) % stride;
    for (var i = 0u; i < min(kernel, step); i++) {
        if ((i * dil) % stride == want) {
            a.first = i;
            a.count = (kernel - 1u - i) / step + 1u;
            a.base = (i32(r + pad) - i32(i * dil)) / i32(stride);
            break;
        }
    }
    return a;
}

// The phase of batch z.
fn phase_of(z: u32) -> Phase {
    let phase = z % params.phases;
    let y = axis_of(phase / params.stride_w, params.out_h, params.kh, params.stride_h, params.dil_h, params.pad_h, params.step_h);
    let x = axis_of(phase % params.stride_w, params.out_w, params.kw, params.stride_w, params.dil_w, params.pad_w, params.step_w);
    return Phase(y, x, y.count * x.count);
}

// The end of batch z's k in this dispatch: its phase's, or the slice's.
fn slice_end(z: u32) -> u32 {
    return min(params.k, params.group_channels * phase_of(z).taps);
}

// This workgroup's phase and the end of its k (set by batch_bases, which
// `main` calls first).
var<private> ph: Phase;
var<private> k_stop: u32;

// Where the weights of batch z's group, its image and its outputs start.
fn batch_bases(z: u32) -> array<i32, 3> {
    ph = phase_of(z);
    k_stop = slice_end(z);
    let rest = z / params.phases;
    let image = rest / params.groups;
    let group = rest % params.groups;
    let channel = i32(group * params.group_channels);
    return array<i32, 3>(
        i32(params.a_offset) + channel * params.w_cs,
        i32(params.b_offset) + i32(image) * params.x_batch + channel * params.x_cs,
        i32(params.c_offset) + i32(image) * params.c_batch + i32(group * params.m) * params.c_cs,
    );
}

// The phase's output pixel c (row-major over its extents) as its first
// tap's input row and column, and 1 where c is one of the phase's (0
// past them).
fn pixel_of(c: u32) -> vec3<i32> {
    let qw = max(ph.x.extent, 1u);
    let y = i32(c / qw) + ph.y.base;
    let x = i32(c % qw) + ph.x.base;
    return vec3<i32>(y, x, select(0, 1, c < ph.y.extent * ph.x.extent));
}

// Patch row r as (channel, the phase's tap row t, tap column u):
// r = channel cy cx + t cx + u.
fn tap_of(r: u32) -> vec3<u32> {
    let taps = max(ph.taps, 1u);
    let tap = r % taps;
    let cx = max(ph.x.count, 1u);
    return vec3<u32>(r / taps, tap / cx, tap % cx);
}

// The row `step` (as tap_of gives it) past `t`: each carry is at most one,
// as both parts are below cx and cy. No division.
fn advance(t: vec3<u32>, step: vec3<u32>) -> vec3<u32> {
    var channel = t[0] + step[0];
    var i = t[1] + step[1];
    var j = t[2] + step[2];
    if (j >= ph.x.count) {
        j -= ph.x.count;
        i += 1u;
    }
    if (i >= ph.y.count) {
        i -= ph.y.count;
        channel += 1u;
    }
    return vec3<u32>(channel, i, j);
}

// Patch element (r, c) of the image at `base`, `pixel` = pixel_of(c) and
// `tap` = tap_of(r): zero outside the input, past the phase's outputs and
// beyond its k.
fn b_tap(base: i32, r: u32, pixel: vec3<i32>, tap: vec3<u32>) -> Acc {
    if (r < k_stop && pixel[2] != 0) {
        let y = pixel[0] - i32(tap[1] * params.e_h);
        let x = pixel[1] - i32(tap[2] * params.e_w);
        if (y >= 0 && y < i32(params.height) && x >= 0 && x < i32(params.width)) {
            return load_b(u32(base + i32(tap[0]) * params.x_cs + y * params.x_hs + x * params.x_ws));
        }
    }
    return ZERO;
}

// The weight of output channel `row` (of the group at `base`) at patch row
// r, `tap` = tap_of(r): kernel tap (i0 + t si, j0 + u sj) of its input
// channel; zero past the channels and beyond the phase's k.
fn a_tap(base: i32, row: u32, r: u32, tap: vec3<u32>) -> Acc {
    if (row < params.m && r < k_stop) {
        let i = ph.y.first + tap[1] * params.step_h;
        let j = ph.x.first + tap[2] * params.step_w;
        return load_a(u32(base + i32(tap[0]) * params.w_cs + i32(row) * params.w_os + i32(i) * params.w_hs + i32(j) * params.w_ws));
    }
    return ZERO;
}

// Output channel r's value at the phase's pixel c, added to what is there
// when accumulating; nothing past the channels or the phase's pixels.
fn put(base: i32, r: u32, c: u32, v: Acc) {
    if (r < params.m && c < ph.y.extent * ph.x.extent) {
        let qw = max(ph.x.extent, 1u);
        let oy = ph.y.residue + (c / qw) * params.stride_h;
        let ox = ph.x.residue + (c % qw) * params.stride_w;
        let p = u32(base + i32(r) * params.c_cs + i32(oy) * params.c_hs + i32(ox) * params.c_ws);
        var x = v;
        if (params.accumulate != 0u) {
            x += load_out(p);
        }
        store_out(p, x);
    }
}

{{KERNEL}}
