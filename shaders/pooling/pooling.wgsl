// Max, average and adaptive average pooling over the last two axes in one
// pass (PyTorch's `max_pool2d`, `avg_pool2d` and `adaptive_avg_pool2d`),
// specialised by gpu/pooling/, which
// fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  x (1), out_buf (2)
//   ACCESS    load_x (element -> f32), store_out
//   LEAD      lead_base (kernel/lead_axes.wgsl)
//   OUTS      `const OUTS`: outputs of a row each thread writes
//
// Each output (row-major over the output, contiguous from `out_offset`)
// is written by one thread, which writes four of a row (see `OUTS`). It
// reads its window's taps where they lie in the
// input (any view), in the order ops/pool.rs composes them on the CPU
// (rows, then columns): a maximum starts from the first tap and keeps the
// first of equals (NaN wins); an average adds the taps to 0, then divides
// by the window's count exactly. Padding, and the space a ceil-mode
// window reaches past the input, read as -inf for a maximum and 0 for an
// average. An adaptive output (`params.adaptive`) adds its bin's elements
// to 0 in row-major order, then divides by the bin's height and then by
// its width, as PyTorch's kernels do.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{LEAD}}

// Tap (i, j) of the window at output (oy, ox) of the image at `base`, or
// `pad` outside the input.
fn tap(base: i32, oy: u32, ox: u32, i: u32, j: u32, pad: f32) -> f32 {
    let y = i32(oy * params.stride_h + i * params.dil_h) - i32(params.pad_h);
    let x = i32(ox * params.stride_w + j * params.dil_w) - i32(params.pad_w);
    if (y < 0 || y >= i32(params.in_h) || x < 0 || x >= i32(params.in_w)) {
        return pad;
    }
    return load_x(u32(base + y * params.x_hs + x * params.x_ws));
}

// The window's elements an average divides by along one axis: those inside
// [lo, hi) of the padded axis.
fn count(o: u32, stride: u32, taps: u32, size: u32, pad: u32) -> u32 {
    let start = o * stride;
    var lo = 0u;
    var hi = size + 2u * pad;
    if (params.count_include_pad == 0u) {
        lo = pad;
        hi = pad + size;
    }
    let end = min(start + taps, hi);
    let first = max(start, lo);
    return select(0u, end - first, end > first);
}

// The bin of output `o` of `m` along an axis of `n` inputs (PyTorch's
// adaptive pooling): `floor(o n / m)..ceil((o + 1) n / m)`. The launcher
// keeps `m (n + 1)` within 2^32, so no product wraps.
fn bin(o: u32, n: u32, m: u32) -> vec2<u32> {
    return vec2<u32>(o * n / m, ((o + 1u) * n + m - 1u) / m);
}

// The mean of output (oy, ox)'s adaptive bin in the image at `base`: one
// loop over the bin's elements, row after row (at most 256, within the
// loop budget).
fn adaptive_mean(base: i32, oy: u32, ox: u32) -> f32 {
    let ys = bin(oy, params.in_h, params.out_h);
    let xs = bin(ox, params.in_w, params.out_w);
    let h = ys.y - ys.x;
    let w = xs.y - xs.x;
    var acc = 0.0;
    var i = 0u;
    var j = 0u;
    for (var t = 0u; t < h * w; t++) {
        let y = i32(ys.x + i);
        let x = i32(xs.x + j);
        acc = acc + load_x(u32(base + y * params.x_hs + x * params.x_ws));
        j += 1u;
        if (j == w) {
            j = 0u;
            i += 1u;
        }
    }
    return div_f32(div_f32(acc, f32(h)), f32(w));
}

// Outputs a thread writes: OUTS of one row, `params.segment` (the row's
// width over OUTS, rounded up) apart, so that neighbouring threads read
// and write neighbouring elements, and a thread finds its row and image
// once for all of them.
{{OUTS}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = gid.x + gid.y * params.row_threads;
    if (q >= params.threads) {
        return;
    }
    let first = q % params.segment;
    let rest = q / params.segment;
    let oy = rest % params.out_h;
    let base = lead_base(rest / params.out_h);
    let row = params.out_offset + rest * params.out_w;
    let taps = params.kernel_h * params.kernel_w;
    for (var p = 0u; p < OUTS; p++) {
        let ox = first + p * params.segment;
        if (ox >= params.out_w) {
            break;
        }
        // One loop over the window's taps, row after row (tap t is (i, j)):
        // a loop per row would add the window's height to the iterations
        // a loop budget counts (see ops/pool.rs).
        var acc: f32;
        var i = 0u;
        var j = 0u;
        if (params.adaptive != 0u) {
            acc = adaptive_mean(base, oy, ox);
        } else if (params.average == 0u) {
            let neg_inf = f32_from_bits(0xff800000u);
            acc = tap(base, oy, ox, 0u, 0u, neg_inf);
            for (var t = 1u; t < taps; t++) {
                j += 1u;
                if (j == params.kernel_w) {
                    j = 0u;
                    i += 1u;
                }
                acc = maximum_f32(acc, tap(base, oy, ox, i, j, neg_inf));
            }
        } else {
            acc = 0.0;
            for (var t = 0u; t < taps; t++) {
                acc = acc + tap(base, oy, ox, i, j, 0.0);
                j += 1u;
                if (j == params.kernel_w) {
                    j = 0u;
                    i += 1u;
                }
            }
            let rows = count(oy, params.stride_h, params.kernel_h, params.in_h, params.pad_h);
            let cols = count(ox, params.stride_w, params.kernel_w, params.in_w, params.pad_w);
            acc = div_f32(acc, f32(rows) * f32(cols));
        }
        store_out(row + ox, acc);
    }
}
