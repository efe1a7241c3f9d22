//! Each quantized type's `chunk(base, j, v)` for `quant.wgsl`: the 32
//! values of chunk `j` of the block at byte `base`, as `crate::quant`'s
//! decoders (bit for bit gguf-py's) compute them, in the same order; and
//! its `element(base, e)`, one value of the block by the same expressions. Every
//! product that feeds another operation is rounded first (`keep`: its
//! bits xor `params.zero`, always 0), so that no compiler fuses it into an
//! `fma` or reassociates it (fast math) and the value stays the
//! reference's.

use crate::quant::GgmlType;

/// WGSL `BLOCK_BYTES` and `CHUNKS` of `t`, and its `chunk` and `element`
/// functions; `None` for a type without a kernel.
pub(super) fn block_and_chunk(t: GgmlType) -> Option<(String, String)> {
    let (chunk, element) = match t {
        GgmlType::Q4_0 => (Q4_0, E_Q4_0),
        GgmlType::Q4_1 => (Q4_1, E_Q4_1),
        GgmlType::Q5_0 => (Q5_0, E_Q5_0),
        GgmlType::Q5_1 => (Q5_1, E_Q5_1),
        GgmlType::Q8_0 => (Q8_0, E_Q8_0),
        GgmlType::Q2_K => (Q2_K, E_Q2_K),
        GgmlType::Q3_K => (Q3_K, E_Q3_K),
        GgmlType::Q4_K => (Q4_K, E_Q4_K),
        GgmlType::Q5_K => (Q5_K, E_Q5_K),
        GgmlType::Q6_K => (Q6_K, E_Q6_K),
        GgmlType::IQ4_NL => (IQ4_NL, E_IQ4_NL),
        _ => return None,
    };
    let decode = format!("{chunk}\n\n{element}").replace("SCALE_MIN", SCALE_MIN);
    let block = format!(
        "const BLOCK_BYTES: u32 = {}u;\nconst CHUNKS: u32 = {}u;\n\n\
         /// A product rounded before it is added to anything.\n\
         fn keep(p: f32) -> f32 {{\n    return bitcast<f32>(bitcast<u32>(p) ^ params.zero);\n}}\n",
        t.block_bytes(),
        t.block_size() / 32,
    );
    Some((block, decode))
}

/// `d` (f16), 16 bytes of nibbles: low nibble of byte `l` is element `l`,
/// the high one element `l + 16`, less 8.
const Q4_0: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    for (var l = 0u; l < 16u; l++) {
        let q = byte_at(base + 2u + l);
        (*v)[l] = d * (f32(q & 15u) - 8.0);
        (*v)[l + 16u] = d * (f32(q >> 4u) - 8.0);
    }
}";

/// `d`, `m`, 16 bytes of nibbles: `d * q + m`.
const Q4_1: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    let m = half_at(base + 2u);
    for (var l = 0u; l < 16u; l++) {
        let q = byte_at(base + 4u + l);
        (*v)[l] = keep(d * f32(q & 15u)) + m;
        (*v)[l + 16u] = keep(d * f32(q >> 4u)) + m;
    }
}";

/// `d`, `qh` (bit `e` is element `e`'s fifth), 16 bytes of nibbles:
/// `d * (q - 16)`.
const Q5_0: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    let qh = word_at(base + 2u);
    for (var l = 0u; l < 16u; l++) {
        let q = byte_at(base + 6u + l);
        let lo = (q & 15u) | (((qh >> l) & 1u) << 4u);
        let hi = (q >> 4u) | (((qh >> (l + 16u)) & 1u) << 4u);
        (*v)[l] = d * (f32(lo) - 16.0);
        (*v)[l + 16u] = d * (f32(hi) - 16.0);
    }
}";

/// `d`, `m`, `qh`, 16 bytes of nibbles: `d * q + m`.
const Q5_1: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    let m = half_at(base + 2u);
    let qh = word_at(base + 4u);
    for (var l = 0u; l < 16u; l++) {
        let q = byte_at(base + 8u + l);
        let lo = (q & 15u) | (((qh >> l) & 1u) << 4u);
        let hi = (q >> 4u) | (((qh >> (l + 16u)) & 1u) << 4u);
        (*v)[l] = keep(d * f32(lo)) + m;
        (*v)[l + 16u] = keep(d * f32(hi)) + m;
    }
}";

/// `d`, 32 signed bytes: `q * d`.
const Q8_0: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    for (var l = 0u; l < 32u; l++) {
        (*v)[l] = signed(byte_at(base + 2u + l)) * d;
    }
}";

/// 16 scale bytes (low nibble a scale, high a min), 64 bytes of 2-bit
/// quants, `d`, `dmin`. Element `e = 32 j + l`: bits `2 (j % 4)` of quant
/// byte `32 (j / 4) + l`, scale byte `e / 16`: `d * sc * q - dmin * m`.
const Q2_K: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base + 80u);
    let dmin = half_at(base + 82u);
    for (var l = 0u; l < 32u; l++) {
        let q = (byte_at(base + 16u + 32u * (j / 4u) + l) >> (2u * (j % 4u))) & 3u;
        let sc = byte_at(base + 2u * j + l / 16u);
        let dl = keep(d * f32(sc & 15u));
        let ml = keep(dmin * f32(sc >> 4u));
        (*v)[l] = keep(dl * f32(q)) - ml;
    }
}";

/// 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit
/// scales, `d`: low bits as `Q2_K`'s, high bit `j` of byte `l` (clear: less
/// 4), scale `e / 16` less 32: `d * scale * q`.
const Q3_K: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base + 108u);
    for (var l = 0u; l < 32u; l++) {
        let i = 2u * j + l / 16u;
        let low_s = (byte_at(base + 96u + i % 8u) >> (4u * (i / 8u))) & 15u;
        let high_s = (byte_at(base + 104u + i % 4u) >> (2u * (i / 4u))) & 3u;
        let scale = f32(i32(low_s | (high_s << 4u)) - 32);
        let low = i32((byte_at(base + 32u + 32u * (j / 4u) + l) >> (2u * (j % 4u))) & 3u);
        let clear = ((byte_at(base + l) >> j) & 1u) ^ 1u;
        let q = low - i32(clear << 2u);
        (*v)[l] = keep(d * scale) * f32(q);
    }
}";

/// The 6-bit scale and min of sub-block `j` of a `Q4_K`/`Q5_K` block whose
/// 12 scale bytes start at `s`.
const SCALE_MIN: &str = "fn scale_min(s: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(byte_at(s + j) & 63u, byte_at(s + 4u + j) & 63u);
    }
    let packed = byte_at(s + 4u + j);
    let sc = (packed & 15u) | ((byte_at(s + j - 4u) >> 2u) & 48u);
    let m = (packed >> 4u) | ((byte_at(s + j) >> 2u) & 48u);
    return vec2<u32>(sc, m);
}";

/// `d`, `dmin`, 12 scale bytes, 128 bytes of nibbles: nibble `j % 2` of
/// byte `32 (j / 2) + l`, `d * sc * q - dmin * m`.
const Q4_K: &str = "SCALE_MIN
fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let sm = scale_min(base + 4u, j);
    let dl = keep(half_at(base) * f32(sm.x));
    let ml = keep(half_at(base + 2u) * f32(sm.y));
    for (var l = 0u; l < 32u; l++) {
        let q = (byte_at(base + 16u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 15u;
        (*v)[l] = keep(dl * f32(q)) - ml;
    }
}";

/// As `Q4_K`, with 32 bytes of fifth bits (bit `j` of byte `l`) before the
/// nibbles.
const Q5_K: &str = "SCALE_MIN
fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let sm = scale_min(base + 4u, j);
    let dl = keep(half_at(base) * f32(sm.x));
    let ml = keep(half_at(base + 2u) * f32(sm.y));
    for (var l = 0u; l < 32u; l++) {
        let low = (byte_at(base + 48u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 15u;
        let high = (byte_at(base + 16u + l) >> j) & 1u;
        (*v)[l] = keep(dl * f32(low | (high << 4u))) - ml;
    }
}";

/// 128 bytes of low nibbles, 64 of high bit pairs, 16 signed scales, `d`:
/// element `e = 32 j + l` takes nibble `(j % 4) / 2` of low byte
/// `64 (j / 4) + 32 (j % 2) + l` and bits `2 (j % 4)` of high byte
/// `32 (j / 4) + l`, less 32, times `d * scale[e / 16]`.
const Q6_K: &str = "fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base + 208u);
    let g = j / 4u;
    for (var l = 0u; l < 32u; l++) {
        let low = (byte_at(base + 64u * g + 32u * (j % 2u) + l) >> (4u * ((j % 4u) / 2u))) & 15u;
        let high = (byte_at(base + 128u + 32u * g + l) >> (2u * (j % 4u))) & 3u;
        let q = f32(i32(low | (high << 4u)) - 32);
        let scale = signed(byte_at(base + 192u + 2u * j + l / 16u));
        (*v)[l] = keep(d * scale) * q;
    }
}";

// Each type's `element(base, e)`: element `e` of the block at byte
// `base` alone, by the same expressions as its `chunk` (chunk `e / 32`,
// lane `e % 32`), for the tiled product's loads of single elements.

/// `d`, 16 bytes of nibbles as `Q4_0`'s, each an index into ggml's
/// `kvalues_iq4nl` (`crate::quant`'s `IQ4_NL_VALUES`): `d * value`. The
/// index is a nibble: inside the table.
const IQ4_NL: &str = "fn iq4_nl_value(q: u32) -> f32 {
    var table = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
        1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
    return table[q & 15u];
}

fn chunk(base: u32, j: u32, v: ptr<function, array<f32, 32>>) {
    let d = half_at(base);
    for (var l = 0u; l < 16u; l++) {
        let q = byte_at(base + 2u + l);
        (*v)[l] = d * iq4_nl_value(q & 15u);
        (*v)[l + 16u] = d * iq4_nl_value(q >> 4u);
    }
}";

const E_IQ4_NL: &str = "fn element(base: u32, e: u32) -> f32 {
    let q = (byte_at(base + 2u + e % 16u) >> (4u * (e / 16u))) & 15u;
    return half_at(base) * iq4_nl_value(q);
}";

const E_Q4_0: &str = "fn element(base: u32, e: u32) -> f32 {
    let q = (byte_at(base + 2u + e % 16u) >> (4u * (e / 16u))) & 15u;
    return half_at(base) * (f32(q) - 8.0);
}";

const E_Q4_1: &str = "fn element(base: u32, e: u32) -> f32 {
    let q = (byte_at(base + 4u + e % 16u) >> (4u * (e / 16u))) & 15u;
    return keep(half_at(base) * f32(q)) + half_at(base + 2u);
}";

const E_Q5_0: &str = "fn element(base: u32, e: u32) -> f32 {
    let low = (byte_at(base + 6u + e % 16u) >> (4u * (e / 16u))) & 15u;
    let q = low | (((word_at(base + 2u) >> e) & 1u) << 4u);
    return half_at(base) * (f32(q) - 16.0);
}";

const E_Q5_1: &str = "fn element(base: u32, e: u32) -> f32 {
    let low = (byte_at(base + 8u + e % 16u) >> (4u * (e / 16u))) & 15u;
    let q = low | (((word_at(base + 4u) >> e) & 1u) << 4u);
    return keep(half_at(base) * f32(q)) + half_at(base + 2u);
}";

const E_Q8_0: &str = "fn element(base: u32, e: u32) -> f32 {
    return signed(byte_at(base + 2u + e)) * half_at(base);
}";

const E_Q2_K: &str = "fn element(base: u32, e: u32) -> f32 {
    let j = e / 32u;
    let l = e % 32u;
    let q = (byte_at(base + 16u + 32u * (j / 4u) + l) >> (2u * (j % 4u))) & 3u;
    let sc = byte_at(base + e / 16u);
    let dl = keep(half_at(base + 80u) * f32(sc & 15u));
    let ml = keep(half_at(base + 82u) * f32(sc >> 4u));
    return keep(dl * f32(q)) - ml;
}";

const E_Q3_K: &str = "fn element(base: u32, e: u32) -> f32 {
    let j = e / 32u;
    let l = e % 32u;
    let i = e / 16u;
    let low_s = (byte_at(base + 96u + i % 8u) >> (4u * (i / 8u))) & 15u;
    let high_s = (byte_at(base + 104u + i % 4u) >> (2u * (i / 4u))) & 3u;
    let scale = f32(i32(low_s | (high_s << 4u)) - 32);
    let low = i32((byte_at(base + 32u + 32u * (j / 4u) + l) >> (2u * (j % 4u))) & 3u);
    let clear = ((byte_at(base + l) >> j) & 1u) ^ 1u;
    return keep(half_at(base + 108u) * scale) * f32(low - i32(clear << 2u));
}";

const E_Q4_K: &str = "fn element(base: u32, e: u32) -> f32 {
    let j = e / 32u;
    let sm = scale_min(base + 4u, j);
    let dl = keep(half_at(base) * f32(sm.x));
    let ml = keep(half_at(base + 2u) * f32(sm.y));
    let q = (byte_at(base + 16u + 32u * (j / 2u) + e % 32u) >> (4u * (j % 2u))) & 15u;
    return keep(dl * f32(q)) - ml;
}";

const E_Q5_K: &str = "fn element(base: u32, e: u32) -> f32 {
    let j = e / 32u;
    let l = e % 32u;
    let sm = scale_min(base + 4u, j);
    let dl = keep(half_at(base) * f32(sm.x));
    let ml = keep(half_at(base + 2u) * f32(sm.y));
    let low = (byte_at(base + 48u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 15u;
    let high = (byte_at(base + 16u + l) >> j) & 1u;
    return keep(dl * f32(low | (high << 4u))) - ml;
}";

const E_Q6_K: &str = "fn element(base: u32, e: u32) -> f32 {
    let j = e / 32u;
    let l = e % 32u;
    let g = j / 4u;
    let low = (byte_at(base + 64u * g + 32u * (j % 2u) + l) >> (4u * ((j % 4u) / 2u))) & 15u;
    let high = (byte_at(base + 128u + 32u * g + l) >> (2u * (j % 4u))) & 3u;
    let q = f32(i32(low | (high << 4u)) - 32);
    let scale = signed(byte_at(base + 192u + e / 16u));
    return keep(half_at(base + 208u) * scale) * q;
}";
