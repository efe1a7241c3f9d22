// Shared by every elementwise kernel: the per-dispatch parameter block and
// the strided index helpers. The generated kernel declares, before this file:
//   const OPERANDS: u32     operands (destination first, then the inputs)
//   const OFFSET_VECS: u32  ceil(OPERANDS / 4)
//   const SCALAR_VECS: u32  vec4s of scalar slots (at least 1)
//
// Every operand is read through (shape, strides, offset) in elements, so a
// transposed, stepped, reversed or broadcast view goes into the kernel
// without a copy.

struct Params {
    numel: u32,
    rank: u32,
    // Threads per row of the 2-D dispatch grid (x workgroups * 64).
    row_threads: u32,
    pad: u32,
    shape: array<vec4<u32>, 2>,
    offsets: array<vec4<u32>, OFFSET_VECS>,
    strides: array<array<vec4<i32>, 2>, OPERANDS>,
    // Scalar operands' bits (f32 bits for float dtypes), one u32 per slot.
    scalars: array<vec4<u32>, SCALAR_VECS>,
}

@group(0) @binding(0) var<uniform> params: Params;

fn linear_index(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * params.row_threads;
}

fn operand_offset(k: u32) -> u32 {
    return params.offsets[k / 4u][k % 4u];
}

fn scalar_bits(slot: u32) -> u32 {
    return params.scalars[slot / 4u][slot % 4u];
}

// Storage positions of the element with row-major index `i`, one per operand.
fn strided_positions(i: u32) -> array<u32, OPERANDS> {
    var pos: array<i32, OPERANDS>;
    for (var k = 0u; k < OPERANDS; k++) {
        pos[k] = i32(operand_offset(k));
    }
    var rem = i;
    for (var d = i32(params.rank) - 1; d >= 0; d--) {
        let du = u32(d);
        let n = params.shape[du / 4u][du % 4u];
        let c = i32(rem % n);
        rem = rem / n;
        for (var k = 0u; k < OPERANDS; k++) {
            pos[k] += c * params.strides[k][du / 4u][du % 4u];
        }
    }
    var out: array<u32, OPERANDS>;
    for (var k = 0u; k < OPERANDS; k++) {
        out[k] = u32(pos[k]);
    }
    return out;
}

// Every operand is one forward run: position = offset + i.
fn contiguous_positions(i: u32) -> array<u32, OPERANDS> {
    var out: array<u32, OPERANDS>;
    for (var k = 0u; k < OPERANDS; k++) {
        out[k] = operand_offset(k) + i;
    }
    return out;
}
