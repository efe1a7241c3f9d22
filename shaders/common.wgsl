// Shared by every elementwise kernel: the per-dispatch parameter block and
// the strided index helper.
//
// Operand 0 is the destination, operands 1..3 the inputs. Every operand is
// read through (shape, strides, offset) in elements, so a transposed,
// stepped, reversed or broadcast view goes into the kernel without a copy.

struct Params {
    numel: u32,
    rank: u32,
    // Threads per row of the 2-D dispatch grid (x workgroups * 64).
    row_threads: u32,
    // A scalar operand's bits (f32 bits for float dtypes).
    scalar: u32,
    shape: array<vec4<u32>, 2>,
    offsets: vec4<u32>,
    strides: array<array<vec4<i32>, 2>, 4>,
}

@group(0) @binding(0) var<uniform> params: Params;

fn linear_index(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * params.row_threads;
}

fn dim_stride(operand: u32, d: u32) -> i32 {
    return params.strides[operand][d / 4u][d % 4u];
}

// Storage positions of the element with row-major index `i`, one per operand.
fn strided_positions(i: u32) -> vec4<u32> {
    var rem = i;
    var pos = vec4<i32>(params.offsets);
    for (var d = i32(params.rank) - 1; d >= 0; d--) {
        let du = u32(d);
        let n = params.shape[du / 4u][du % 4u];
        let c = i32(rem % n);
        rem = rem / n;
        pos += c * vec4<i32>(dim_stride(0u, du), dim_stride(1u, du), dim_stride(2u, du), dim_stride(3u, du));
    }
    return vec4<u32>(pos);
}

// Every operand is one forward run: position = offset + i.
fn contiguous_positions(i: u32) -> vec4<u32> {
    return params.offsets + vec4<u32>(i);
}
