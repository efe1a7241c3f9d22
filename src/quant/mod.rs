//! ggml's quantized types: what each is ([`GgmlType`]), and its blocks
//! decoded to f32 and (for the legacy types) encoded from f32, bit for bit
//! as gguf-py's `quants.py` does. A leaf: pure arithmetic on bytes, for the
//! GGUF reader and writer today and the quantized products to come.

pub(crate) mod decode;
mod encode;
mod ggml_type;

use crate::error::{Error, Result};
pub use ggml_type::GgmlType;

/// A decoder: one block's bytes to its elements.
type Decoder = fn(&[u8], &mut [f32]);

/// An encoder: one block's elements to its bytes.
type Encoder = fn(&[f32], &mut [u8]);

fn decoder(t: GgmlType) -> Option<Decoder> {
    Some(match t {
        GgmlType::Q4_0 => decode::q4_0,
        GgmlType::Q4_1 => decode::q4_1,
        GgmlType::Q5_0 => decode::q5_0,
        GgmlType::Q5_1 => decode::q5_1,
        GgmlType::Q8_0 => decode::q8_0,
        GgmlType::Q2_K => decode::q2_k,
        GgmlType::Q3_K => decode::q3_k,
        GgmlType::Q4_K => decode::q4_k,
        GgmlType::Q5_K => decode::q5_k,
        GgmlType::Q6_K => decode::q6_k,
        GgmlType::IQ4_NL => decode::iq4_nl,
        GgmlType::F32 => |b, out| out[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        GgmlType::F16 => |b, out| out[0] = half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
        GgmlType::BF16 => |b, out| out[0] = half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        _ => return None,
    })
}

fn encoder(t: GgmlType) -> Option<Encoder> {
    Some(match t {
        GgmlType::Q4_0 => encode::q4_0,
        GgmlType::Q4_1 => encode::q4_1,
        GgmlType::Q5_0 => encode::q5_0,
        GgmlType::Q5_1 => encode::q5_1,
        GgmlType::Q8_0 => encode::q8_0,
        _ => return None,
    })
}

/// The quantized types whose blocks products take, on every device (the
/// block decoders here and the GPU's `quant` kernels).
pub const PRODUCT_TYPES: [GgmlType; 11] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
];

/// True when [`quantize`] encodes `t`.
pub fn encodes(t: GgmlType) -> bool {
    encoder(t).is_some()
}

/// `input` in pieces of `from` (`what` says what they are, for the
/// error), each mapped by `map` onto the next `to` elements of the output.
///
/// # Errors
/// `Error::Format` naming `op` when `input` is not whole pieces;
/// `Error::OutOfMemory` when the host refuses the output.
fn blockwise<I, O: Clone + Default>(
    op: &'static str,
    input: &[I],
    (from, to): (usize, usize),
    what: impl FnOnce() -> String,
    map: impl Fn(&[I], &mut [O]),
) -> Result<Vec<O>> {
    if !input.len().is_multiple_of(from) {
        return Err(Error::format(op, what()));
    }
    let blocks = input.len() / from;
    let refused = || Error::OutOfMemory {
        op,
        requested: (blocks as u64)
            .saturating_mul(to as u64)
            .saturating_mul(std::mem::size_of::<O>() as u64),
        in_use: 0,
        cap: None,
    };
    // Checked: 1.4 GB of Q2_K blocks decode to more values than a 32-bit
    // usize counts.
    let n = blocks.checked_mul(to).ok_or_else(refused)?;
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| refused())?;
    out.resize(n, O::default());
    for (piece, result) in input.chunks_exact(from).zip(out.chunks_exact_mut(to)) {
        map(piece, result);
    }
    Ok(out)
}

/// The f32 values of `bytes`, whole blocks of `t` (`Q4_0`, `Q4_1`, `Q5_0`,
/// `Q5_1`, `Q8_0`, `Q2_K` to `Q6_K`, `IQ4_NL`, and the plain `F32`, `F16`,
/// `BF16`).
///
/// # Errors
/// `Error::Format` naming `op` for a type without a decoder here or bytes
/// that are not whole blocks; `Error::OutOfMemory` when the host refuses
/// the values.
pub fn dequantize(op: &'static str, t: GgmlType, bytes: &[u8]) -> Result<Vec<f32>> {
    let decode = decoder(t)
        .ok_or_else(|| Error::format(op, format!("{t} blocks are not decoded here yet")))?;
    let (size, width) = (t.block_size() as usize, t.block_bytes() as usize);
    let what = || format!("{} bytes are not whole {t} blocks of {width}", bytes.len());
    blockwise(op, bytes, (width, size), what, decode)
}

/// `values`, whole blocks of `t` (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`,
/// `Q8_0`), as the blocks' bytes.
///
/// # Errors
/// `Error::Format` naming `op` for a type without an encoder here, a
/// count that is not whole blocks, a value that is not finite, or a block
/// whose f16 scale or minimum passes f16's range (a minimum of -70000, a
/// Q8_0 block's largest magnitude past 8.3e6): those blocks would decode
/// to infinities or NaN (gguf-py writes them); `Error::OutOfMemory` when
/// the host refuses the bytes.
pub fn quantize(op: &'static str, t: GgmlType, values: &[f32]) -> Result<Vec<u8>> {
    let encode = encoder(t).ok_or_else(|| {
        Error::format(
            op,
            format!("{t} is not quantized here (Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 are)"),
        )
    })?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::format(
            op,
            format!("value {i} is {}: {t} blocks hold finite values", values[i]),
        ));
    }
    let (size, width) = (t.block_size() as usize, t.block_bytes() as usize);
    let what = || format!("{} values are not whole {t} blocks of {size}", values.len());
    let bytes = blockwise(op, values, (size, width), what, encode)?;
    // Each block's f16 scale (and a Q4_1 or Q5_1 block's minimum after it).
    let halves = if matches!(t, GgmlType::Q4_1 | GgmlType::Q5_1) {
        2
    } else {
        1
    };
    for (b, block) in bytes.chunks_exact(width).enumerate() {
        for h in 0..halves {
            let bits = u16::from_le_bytes([block[2 * h], block[2 * h + 1]]);
            if !half::f16::from_bits(bits).is_finite() {
                let block_values = &values[b * size..(b + 1) * size];
                let largest = block_values.iter().fold(0f32, |m, v| m.max(v.abs()));
                return Err(Error::format(
                    op,
                    format!(
                        "block {b} (values {} to {}, the largest magnitude {largest}) has a {} \
                         past f16's range: {t} would store it as infinite",
                        b * size,
                        (b + 1) * size - 1,
                        if h == 0 { "scale" } else { "minimum" },
                    ),
                ));
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_types_decode_what_they_encode_within_a_step() {
        let x: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 64) as f32 - 31.5) / 8.0)
            .collect();
        for t in [
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q5_0,
            GgmlType::Q5_1,
            GgmlType::Q8_0,
        ] {
            let bytes = quantize("test", t, &x).unwrap();
            assert_eq!(bytes.len() as u64, t.bytes_for(64).unwrap());
            let back = dequantize("test", t, &bytes).unwrap();
            // One step of the type's grid: a value beyond the grid's end
            // (Q4_0 and Q5_0 reach 7 and 15 steps on the side away from
            // the largest magnitude) is clipped by less than one.
            let step = match t {
                GgmlType::Q8_0 => 3.9375 / 127.0,
                GgmlType::Q4_0 => 3.9375 / 8.0,
                GgmlType::Q5_0 => 3.9375 / 16.0,
                GgmlType::Q4_1 => 7.875 / 15.0,
                _ => 7.875 / 31.0,
            };
            for (a, b) in x.iter().zip(&back) {
                assert!((a - b).abs() <= step * 1.001, "{t}: {a} vs {b}");
            }
        }
        assert!(quantize("test", GgmlType::Q4_K, &x).is_err());
        assert!(quantize("test", GgmlType::Q8_0, &x[..40]).is_err());
        assert!(dequantize("test", GgmlType::Q8_0, &[0; 33]).is_err());
        assert!(dequantize("test", GgmlType::IQ2_XXS, &[0; 66]).is_err());
    }
}
