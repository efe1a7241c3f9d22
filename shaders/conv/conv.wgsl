// A 2-D convolution as an implicit matrix product: per image and group,
// the weights (`[out, in * kh * kw]`, row-major) times the matrix of the
// input's patches, whose element (r, c) (tap r of output pixel c) is read
// from the input where it lies, zero in the padding: no im2col tensor.
// The register-tiled matmul kernel (matmul/tiling.rs) computes it with
// this file's patch loader: each thread finds its output pixel once and
// advances its patch rows by the tile's depth each step, dividing nothing
// in the loop. conv/mod.rs fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the weights (binding 1), the input (binding 2), out_buf
//             (binding 3)
//   ACCESS    load_a / load_b (element -> Acc), store_out and load_out
//   ACC       `alias Acc = f32;` and `const ZERO: Acc`
//   PUT       put(base, r, c, v): an output stored (matmul/put.wgsl)
//   KERNEL    the tile's constants, workgroup tiles, loaders and `main`
//
// A dispatch covers k in [k_start, k), adding what the output holds when
// `accumulate` is set (the launcher cuts a long k into slices, as the
// matmul's does).
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{ACC}}

// Where the weights of batch z's group, its image and its outputs start
// (z counts groups fastest).
fn batch_bases(z: u32) -> array<i32, 3> {
    let image = z / params.groups;
    let group = z % params.groups;
    return array<i32, 3>(
        i32(params.a_offset + group * params.m * u32(params.a_rs)),
        i32(params.b_offset) + i32(image) * params.x_batch + i32(group * params.group_channels) * params.x_cs,
        i32(params.c_offset + image * params.c_image + group * params.m * params.n),
    );
}

{{PUT}}

// Output pixel c's first input row and column (its tap (0, 0), padding
// counted), and 1 where c is an output of this image (0 past them).
fn pixel_of(c: u32) -> vec3<i32> {
    let y = i32((c / params.out_w) * params.stride_h) - i32(params.pad_h);
    let x = i32((c % params.out_w) * params.stride_w) - i32(params.pad_w);
    return vec3<i32>(y, x, select(0, 1, c < params.n));
}

// Patch row r as (channel, tap row, tap column): r = channel kh kw + i kw + j.
fn tap_of(r: u32) -> vec3<u32> {
    let tap = r % params.taps;
    return vec3<u32>(r / params.taps, tap / params.kw, tap % params.kw);
}

// The row `step` (as tap_of gives it) past `t`: each carry is at most one,
// as both parts are below kw and kh. No division: a thread's rows advance
// by BK each step of the product.
fn advance(t: vec3<u32>, step: vec3<u32>) -> vec3<u32> {
    var channel = t[0] + step[0];
    var i = t[1] + step[1];
    var j = t[2] + step[2];
    if (j >= params.kw) {
        j -= params.kw;
        i += 1u;
    }
    if (i >= params.kh) {
        i -= params.kh;
        channel += 1u;
    }
    return vec3<u32>(channel, i, j);
}

// Patch element (r, c) of the image at `base`, `pixel` = pixel_of(c) and
// `tap` = tap_of(r): tap (i, j) of channel `channel` at output pixel (y,
// x); zero in the padding, past the outputs and outside this slice of k.
fn b_tap(base: i32, r: u32, pixel: vec3<i32>, tap: vec3<u32>) -> Acc {
    if (r < params.k && pixel[2] != 0) {
        let y = pixel[0] + i32(tap[1] * params.dil_h);
        let x = pixel[1] + i32(tap[2] * params.dil_w);
        if (y >= 0 && y < i32(params.height) && x >= 0 && x < i32(params.width)) {
            return load_b(u32(base + i32(tap[0]) * params.x_cs + y * params.x_hs + x * params.x_ws));
        }
    }
    return ZERO;
}

{{KERNEL}}
