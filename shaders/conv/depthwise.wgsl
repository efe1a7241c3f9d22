// A depthwise convolution (one input channel per group, any number of
// output channels per group) in one pass, specialised by conv/depthwise.rs,
// which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  x (1), the weights w (2, [out, 1, kh, kw] contiguous),
//             out_buf (3), and with a bias, the bias (4, f32, one per
//             output channel)
//   ACCESS    load_x, load_w (element -> f32), store_out, and load_bias
//   BIAS      `acc = acc + load_bias(params.bias_offset + k);`, or nothing
//   OUTS      `const OUTS`: outputs of a row each thread writes
//
// Each output of [batch, out channels, height, width] (contiguous from
// `out_offset`) is written by one thread, which reads its channel's taps
// where they lie in the input (any view; the padding reads 0). It adds the taps'
// products to 0 in the order ops/conv.rs composes them on the CPU (rows,
// then columns, each product rounded before it is added), then the bias,
// and rounds once into the output's dtype.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}

// A product the compiler cannot fuse into the add after it (`params.zero`
// is always 0): each rounds as the CPU's does.
fn kept(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ params.zero);
}

{{OUTS}}

// Each thread writes OUTS outputs of one row, `params.segment` (the row's
// width over OUTS, rounded up) apart: neighbouring threads read and write
// neighbouring elements, and a thread finds its row, channel and image
// once for all of them.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = gid.x + gid.y * params.row_threads;
    if (q >= params.threads) {
        return;
    }
    let first = q % params.segment;
    let rest = q / params.segment;
    let oy = rest % params.out_h;
    let plane = rest / params.out_h;
    let k = plane % params.channels;
    let image = plane / params.channels;
    let base = i32(params.x_offset) + i32(image) * params.x_ns
        + i32(k / params.per_group) * params.x_cs;
    let taps = params.kernel_h * params.kernel_w;
    let row = params.out_offset + rest * params.out_w;
    for (var p = 0u; p < OUTS; p++) {
        let ox = first + p * params.segment;
        if (ox >= params.out_w) {
            break;
        }
        // One loop over the window's taps, row after row (tap t is (i, j)):
        // a loop per row would add the window's height to the iterations
        // a loop budget counts (see ops/conv.rs).
        var acc = 0.0;
        var i = 0u;
        var j = 0u;
        for (var t = 0u; t < taps; t++) {
            let y = i32(oy * params.stride_h + i * params.dil_h) - i32(params.pad_h);
            let x = i32(ox * params.stride_w + j * params.dil_w) - i32(params.pad_w);
            var v = 0.0;
            if (y >= 0 && y < i32(params.in_h) && x >= 0 && x < i32(params.in_w)) {
                v = load_x(u32(base + y * params.x_hs + x * params.x_ws));
            }
            // The padding's 0 is multiplied too (0 times inf is NaN, as on
            // the CPU, which pads with zeros).
            acc = acc + kept(v * load_w(params.w_offset + k * taps + t));
            j += 1u;
            if (j == params.kernel_w) {
                j = 0u;
                i += 1u;
            }
        }
        {{BIAS}}
        store_out(row + ox, acc);
    }
}
