//! f32 blocks of 32 quantized to ggml's legacy types, as gguf-py's
//! `quants.py` (0.19) quantizes them: llama.cpp's reference arithmetic,
//! in f32 in the same order, scales rounded to f16 to nearest even.
//! Values are expected finite, and scales within f16's range
//! (`quantize` checks both).

use half::f16;

/// The index of the first largest magnitude (NumPy's `argmax` of `abs`).
fn first_largest(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if v.abs() > x[best].abs() {
            best = i;
        }
    }
    best
}

/// `1 / d`, or 0 where `d` is 0.
fn inverse(d: f32) -> f32 {
    if d == 0.0 { 0.0 } else { 1.0 / d }
}

/// `trunc(v)` as NumPy's `astype(uint8)` then `clip(0, top)` take it:
/// inf and NaN (a block whose scale's reciprocal is inf) as 0, as NumPy
/// casts them on x86 (Rust saturates +inf to 255).
fn nibble(v: f32, top: u8) -> u8 {
    (finite_or_zero(v).trunc() as u8).min(top)
}

/// `v`, or 0 where it is inf or NaN.
fn finite_or_zero(v: f32) -> f32 {
    if v.is_finite() { v } else { 0.0 }
}

fn put_half(out: &mut [u8], at: usize, v: f32) {
    out[at..at + 2].copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes());
}

/// Low nibbles of `q` packed two to a byte: element `j` low, `j + 16` high.
fn pack_nibbles(q: &[u8; 32], out: &mut [u8]) {
    for j in 0..16 {
        out[j] = (q[j] & 0x0f) | q[j + 16] << 4;
    }
}

/// The fifth bits of `q` as a little-endian u32, bit `j` element `j`'s.
fn pack_fifth_bits(q: &[u8; 32], out: &mut [u8]) {
    let bits = q
        .iter()
        .enumerate()
        .fold(0u32, |acc, (j, &v)| acc | u32::from(v >> 4 & 1) << j);
    out[..4].copy_from_slice(&bits.to_le_bytes());
}

/// `Q8_0`: `d = max |x| / 127`, `q = round(x / d)` away from zero.
pub(crate) fn q8_0(x: &[f32], out: &mut [u8]) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = inverse(d);
    put_half(out, 0, d);
    for j in 0..32 {
        out[2 + j] = finite_or_zero((x[j] * id).round()) as i8 as u8;
    }
}

/// `x id + offset` as gguf-py (0.19) and llama.cpp's reference source
/// compute it: a product and a sum in f32, each rounded (Rust never fuses
/// them; a C build that contracts them into a fused multiply-add puts
/// about one element in a million a step higher).
fn offset_quant(x: f32, id: f32, offset: f32) -> f32 {
    x * id + offset
}

/// `Q4_0`: `d = x[argmax |x|] / -8`, `q = trunc(x / d + 8.5)` in 0..=15.
pub(crate) fn q4_0(x: &[f32], out: &mut [u8]) {
    let d = x[first_largest(x)] / -8.0;
    let id = inverse(d);
    let q: [u8; 32] = std::array::from_fn(|j| nibble(offset_quant(x[j], id, 8.5), 15));
    put_half(out, 0, d);
    pack_nibbles(&q, &mut out[2..18]);
}

/// The smallest and the largest of a block.
fn min_max(x: &[f32]) -> (f32, f32) {
    x.iter()
        .fold((x[0], x[0]), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// `Q4_1`: `d = (max - min) / 15`, `q = trunc((x - min) / d + 0.5)`.
pub(crate) fn q4_1(x: &[f32], out: &mut [u8]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 15.0;
    let id = inverse(d);
    let q: [u8; 32] = std::array::from_fn(|j| nibble((x[j] - min) * id + 0.5, 15));
    put_half(out, 0, d);
    put_half(out, 2, min);
    pack_nibbles(&q, &mut out[4..20]);
}

/// `Q5_0`: `d = x[argmax |x|] / -16`, `q = trunc(x / d + 16.5)` in 0..=31.
pub(crate) fn q5_0(x: &[f32], out: &mut [u8]) {
    let d = x[first_largest(x)] / -16.0;
    let id = inverse(d);
    let q: [u8; 32] = std::array::from_fn(|j| nibble(offset_quant(x[j], id, 16.5), 31));
    put_half(out, 0, d);
    pack_fifth_bits(&q, &mut out[2..6]);
    pack_nibbles(&q, &mut out[6..22]);
}

/// `Q5_1`: `d = (max - min) / 31`, `q = trunc((x - min) / d + 0.5)`.
pub(crate) fn q5_1(x: &[f32], out: &mut [u8]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 31.0;
    let id = inverse(d);
    let q: [u8; 32] = std::array::from_fn(|j| nibble((x[j] - min) * id + 0.5, 31));
    put_half(out, 0, d);
    put_half(out, 2, min);
    pack_fifth_bits(&q, &mut out[4..8]);
    pack_nibbles(&q, &mut out[8..24]);
}
