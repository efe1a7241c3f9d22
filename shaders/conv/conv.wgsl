// A 2-D convolution as an implicit matrix product: per image and group,
// the weights (`[out, in * kh * kw]`, row-major) times the matrix of the
// input's patches, whose element (r, c) (tap r of output pixel c) is read
// from the input where it lies, zero in the padding: no im2col tensor.
// The register-tiled matmul kernel (matmul/tiling.rs) computes it with
// this file's `b_at`. conv/mod.rs fills the {{...}} slots:
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

// Patch element (r, c) of the image at `base`: channel r / (kh kw), tap
// (i, j) = r % (kh kw), output pixel c = (y, x); zero in the padding and
// outside this slice of k.
fn b_at(base: i32, r: u32, c: u32) -> Acc {
    if (r < params.k && c < params.n) {
        let channel = r / params.taps;
        let tap = r % params.taps;
        let i = tap / params.kw;
        let j = tap % params.kw;
        let y = i32((c / params.out_w) * params.stride_h + i * params.dil_h) - i32(params.pad_h);
        let x = i32((c % params.out_w) * params.stride_w + j * params.dil_w) - i32(params.pad_w);
        if (y >= 0 && y < i32(params.height) && x >= 0 && x < i32(params.width)) {
            return load_b(u32(base + i32(channel) * params.x_cs + y * params.x_hs + x * params.x_ws));
        }
    }
    return ZERO;
}

{{KERNEL}}
