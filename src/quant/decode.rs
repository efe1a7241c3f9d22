//! Blocks of ggml's quantized types decoded to f32, as gguf-py's
//! `quants.py` decodes them (and llama.cpp's `dequantize_row_*`): every
//! product and difference rounded to f32 in the same order, so that the
//! values are bit for bit the reference's.
//!
//! Each decoder takes one block's bytes and writes its elements; a block's
//! scales are f16 (`d`, `dmin`) widened exactly, its quants packed in
//! nibbles, bit planes and 6-bit scale fields as the comments show.

use half::f16;

/// The f16 at `b[at..at + 2]`, widened.
#[inline(always)]
fn half_at(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// `Q4_0`: `d` (f16), 16 bytes of nibbles; element `j` is the low nibble
/// of byte `j`, element `j + 16` its high one, less 8.
#[inline(always)]
pub(crate) fn q4_0(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        out[j] = d * (f32::from(q & 0x0f) - 8.0);
        out[j + 16] = d * (f32::from(q >> 4) - 8.0);
    }
}

/// ggml's `kvalues_iq4nl`: the values `IQ4_NL`'s nibbles index.
pub(crate) const IQ4_NL_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// `IQ4_NL`: `d` (f16), 16 bytes of nibbles as `Q4_0`'s, each an index
/// into [`IQ4_NL_VALUES`]: `d * value`.
#[inline(always)]
pub(crate) fn iq4_nl(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 0);
    let value = |q: u8| f32::from(IQ4_NL_VALUES[usize::from(q)]);
    for j in 0..16 {
        let q = b[2 + j];
        out[j] = d * value(q & 0x0f);
        out[j + 16] = d * value(q >> 4);
    }
}

/// `Q4_1`: `d`, `m` (f16), 16 bytes of nibbles: `d * q + m`.
#[inline(always)]
pub(crate) fn q4_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (half_at(b, 0), half_at(b, 2));
    for j in 0..16 {
        let q = b[4 + j];
        out[j] = d * f32::from(q & 0x0f) + m;
        out[j + 16] = d * f32::from(q >> 4) + m;
    }
}

/// The 5-bit quants of a `Q5_0`/`Q5_1` block: low nibbles as in `Q4_0`,
/// the fifth bit of element `j` bit `j` of the little-endian `qh`.
#[inline(always)]
fn five_bits(qh: &[u8], qs: &[u8], j: usize) -> u8 {
    let high = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]) >> j & 1;
    let low = if j < 16 {
        qs[j] & 0x0f
    } else {
        qs[j - 16] >> 4
    };
    low | (high as u8) << 4
}

/// `Q5_0`: `d`, `qh` (4 bytes), 16 bytes of nibbles: `d * (q - 16)`.
#[inline(always)]
pub(crate) fn q5_0(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 0);
    for (j, o) in out.iter_mut().enumerate().take(32) {
        *o = d * (f32::from(five_bits(&b[2..6], &b[6..22], j)) - 16.0);
    }
}

/// `Q5_1`: `d`, `m`, `qh`, 16 bytes of nibbles: `d * q + m`.
#[inline(always)]
pub(crate) fn q5_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (half_at(b, 0), half_at(b, 2));
    for (j, o) in out.iter_mut().enumerate().take(32) {
        *o = d * f32::from(five_bits(&b[4..8], &b[8..24], j)) + m;
    }
}

/// `Q8_0`: `d`, 32 signed bytes: `q * d`.
#[inline(always)]
pub(crate) fn q8_0(b: &[u8], out: &mut [f32]) {
    let d = half_at(b, 0);
    for j in 0..32 {
        out[j] = f32::from(b[2 + j] as i8) * d;
    }
}

/// `Q2_K`: 16 scale bytes (low nibble a scale, high one a min), 64 bytes of
/// 2-bit quants, `d`, `dmin`. Element `e` = `128 g + 32 s + l` is bits
/// `2s..2s+2` of quant byte `32 g + l`; its scale byte is `e / 16`:
/// `d * sc * q - dmin * m`.
#[inline(always)]
pub(crate) fn q2_k(b: &[u8], out: &mut [f32]) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    let (d, dmin) = (half_at(b, 80), half_at(b, 82));
    for (e, o) in out.iter_mut().enumerate().take(256) {
        let (g, s, l) = (e / 128, e % 128 / 32, e % 32);
        let q = qs[32 * g + l] >> (2 * s) & 3;
        let sc = scales[e / 16];
        let dl = d * f32::from(sc & 0x0f);
        let ml = dmin * f32::from(sc >> 4);
        *o = dl * f32::from(q) - ml;
    }
}

/// `Q3_K`: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of
/// 6-bit scales, `d`. Element `e` = `128 g + 32 s + l`: low bits as in
/// `Q2_K`, high bit `e / 32` of byte `l` of the mask (set means no offset,
/// clear means -4); scale `e / 16`, less 32.
#[inline(always)]
pub(crate) fn q3_k(b: &[u8], out: &mut [f32]) {
    let (hmask, qs, packed) = (&b[0..32], &b[32..96], &b[96..108]);
    let d = half_at(b, 108);
    let mut scales = [0f32; 16];
    for (i, s) in scales.iter_mut().enumerate() {
        // Low nibbles from bytes 0..8 (i < 8: low halves, else high), the
        // two high bits from bytes 8..12 (pair i / 4 of byte 8 + i % 4).
        let low = packed[i % 8] >> (4 * (i / 8)) & 0x0f;
        let high = packed[8 + i % 4] >> (2 * (i / 4)) & 3;
        *s = f32::from(((low | high << 4) as i8).wrapping_sub(32));
    }
    for (e, o) in out.iter_mut().enumerate().take(256) {
        let (g, s, l) = (e / 128, e % 128 / 32, e % 32);
        let low = (qs[32 * g + l] >> (2 * s) & 3) as i8;
        let high_clear = (hmask[l] >> (e / 32) & 1) ^ 1;
        let q = low - ((high_clear << 2) as i8);
        *o = d * scales[e / 16] * f32::from(q);
    }
}

/// The 6-bit scale and min of sub-block `j` (0..8) of a `Q4_K`/`Q5_K`
/// block's 12 scale bytes.
#[inline(always)]
fn scale_min(s: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (s[j] & 0x3f, s[4 + j] & 0x3f)
    } else {
        (
            (s[8 + j - 4] & 0x0f) | (s[j - 4] >> 2 & 0x30),
            (s[8 + j - 4] >> 4) | (s[j] >> 2 & 0x30),
        )
    }
}

/// `Q4_K`: `d`, `dmin`, 12 scale bytes, 128 bytes of nibbles. Element `e` =
/// `64 g + 32 h + l` is nibble `h` of byte `32 g + l`; sub-block `e / 32`:
/// `d * sc * q - dmin * m`.
#[inline(always)]
pub(crate) fn q4_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (half_at(b, 0), half_at(b, 2));
    let (scales, qs) = (&b[4..16], &b[16..144]);
    for j in 0..8 {
        let (sc, m) = scale_min(scales, j);
        let (dl, ml) = (d * f32::from(sc), dmin * f32::from(m));
        for l in 0..32 {
            let e = 32 * j + l;
            let q = qs[32 * (e / 64) + l] >> (4 * (j % 2)) & 0x0f;
            out[e] = dl * f32::from(q) - ml;
        }
    }
}

/// `Q5_K`: as `Q4_K`, with 32 bytes of fifth bits before the nibbles: bit
/// `e / 32` of byte `l` is element `e`'s fifth bit.
#[inline(always)]
pub(crate) fn q5_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (half_at(b, 0), half_at(b, 2));
    let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
    for j in 0..8 {
        let (sc, m) = scale_min(scales, j);
        let (dl, ml) = (d * f32::from(sc), dmin * f32::from(m));
        for l in 0..32 {
            let e = 32 * j + l;
            let low = qs[32 * (e / 64) + l] >> (4 * (j % 2)) & 0x0f;
            let high = qh[l] >> j & 1;
            out[e] = dl * f32::from(low | high << 4) - ml;
        }
    }
}

/// `Q6_K`: 128 bytes of low nibbles, 64 bytes of high bit pairs, 16 signed
/// scales, `d`. Element `e` = `128 g + 64 h + l` (l < 64) takes nibble `h`
/// of low byte `64 g + l`, and bits `2s..2s+2` of high byte `32 g + l % 32`
/// for `s = (e % 128) / 32`; less 32, times `d * scale[e / 16]`.
#[inline(always)]
pub(crate) fn q6_k(b: &[u8], out: &mut [f32]) {
    let (ql, qh, scales) = (&b[0..128], &b[128..192], &b[192..208]);
    let d = half_at(b, 208);
    for (e, o) in out.iter_mut().enumerate().take(256) {
        let (g, h, l) = (e / 128, e % 128 / 64, e % 64);
        let low = ql[64 * g + l] >> (4 * h) & 0x0f;
        let s = e % 128 / 32;
        let high = qh[32 * g + e % 32] >> (2 * s) & 3;
        let q = ((low | high << 4) as i8).wrapping_sub(32);
        *o = d * f32::from(scales[e / 16] as i8) * f32::from(q);
    }
}
