// Products with a quantized weight (GGUF's blocks, as the file holds
// them), and the weight's dequantization; specialised by gpu/quant, which
// fills the {{...}} slots:
//   PRELUDE  `struct Params` bound at 0, and kernel/math.wgsl
//   BLOCK    BLOCK_BYTES, a block's bytes, and CHUNKS, its 32-element
//            chunks (1 for the legacy types, 8 for the k-quants)
//   DECODE   chunk(base, j, v): the 32 values of chunk j of the block
//            starting at byte `base`, decoded as gguf-py's quants.py does,
//            and element(base, e): value e of the block alone, by the same
//            expressions
//   M        rows of activations a product workgroup takes (1 to 8)
//   ENTRY    main_product (a workgroup per weight row), main_dequantize
//            (a thread per chunk), or the tiled product's `main` (the
//            matmul's register tiles, the weight's tile decoded element by
//            element as it is staged: gpu/quant/tiled.rs)
//
// The weight is bound as words and read a byte at a time, so a block
// may start at any byte (Q4_0's are 18 long); f16 scales are decoded from
// their bits, so no adapter needs SHADER_F16 and none may flush a
// subnormal scale (common in k-quants: Q6_K's d is a block's largest
// weight / 4096). A product's threads
// take the row's chunks in turn, each chunk decoded once for every
// activation row, and sum in f32; a tree over the workgroup adds the
// threads' sums.
{{PRELUDE}}
@group(0) @binding(1) var<storage, read> w: array<u32>;
{{BINDINGS}}

const WG: u32 = 64u;
{{BLOCK}}
const M: u32 = {{M}}u;

/// Byte `at` of the weight.
fn byte_at(at: u32) -> u32 {
    return (w[at >> 2u] >> ((at & 3u) << 3u)) & 0xffu;
}

/// The f16 at bytes `at`, `at + 1`, widened exactly (math.wgsl's
/// `f16_value`: subnormals too).
fn half_at(at: u32) -> f32 {
    return f16_value(byte_at(at) | (byte_at(at + 1u) << 8u));
}

/// The little-endian u32 at bytes `at .. at + 4`.
fn word_at(at: u32) -> u32 {
    return byte_at(at) | (byte_at(at + 1u) << 8u) | (byte_at(at + 2u) << 16u)
        | (byte_at(at + 3u) << 24u);
}

/// A byte read as a signed one.
fn signed(b: u32) -> f32 {
    return f32(bitcast<i32>(b << 24u) >> 24u);
}

{{DECODE}}
{{ENTRY}}
