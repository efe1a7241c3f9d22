//! The counter-based generator behind `ops/random` on the CPU, step for
//! step what `shaders/random/random.wgsl` computes on a GPU, so that a seed
//! gives the same bits on every device:
//!
//! - **Philox4x32-10** (Salmon et al., 2011; Random123's reference): block
//!   `b` of a stream is the 128-bit counter `(b as u64, 0)` enciphered
//!   under the 64-bit key, four 32-bit words. Element `i` of a call takes
//!   `w` words (1, or 2 for 64-bit draws) from word `w i` on, counted from
//!   the call's first block.
//! - **Floats** from integer steps and f32 `+`, `-` and `*` alone (each
//!   correctly rounded on every device, and kept from fusing into
//!   multiply-adds in the shader): uniforms are whole multiples of the
//!   dtype's resolution; normals come from Box-Muller with a logarithm,
//!   square root, sine and cosine of fixed polynomials
//!   (`tests/data/fit_random_functions.py` fits them and measures each over
//!   every input it can get: within 0.9, 3.1, 1.7 and 1.3 ulp of f64).
//!   f16 and bf16 are rounded once from f32, to nearest even.

use super::CpuStorage;
use super::threads::for_each_piece_mut;
use crate::backend::random::{
    COS_C, LN2_HI, LN2_LO, LOG_P, SIN_S, f32_param, flushed, uniform_bits,
};
use crate::backend::{Draw, RandomCall};
use crate::dtype::Element;
use crate::error::{Error, Result};
use half::{bf16, f16};

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32-10 of `counter` under `key`.
pub(crate) fn philox(mut c: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            key = [key[0].wrapping_add(W0), key[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ key[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ key[1],
            p0 as u32,
        ];
    }
    c
}

/// The four words of block `b` of `key`'s stream.
pub(crate) fn block(key: [u32; 2], b: u64) -> [u32; 4] {
    philox([b as u32, (b >> 32) as u32, 0, 0], key)
}

/// Horner's rule, each step rounded to f32.
fn horner(c: &[f32], v: f32) -> f32 {
    let mut acc = c[c.len() - 1];
    for &k in c[..c.len() - 1].iter().rev() {
        acc = acc * v + k;
    }
    acc
}

/// `-2 ln u` of `u = (2k + 1) 2^-24`, `k` the word's top 23 bits: `u` in
/// `(0, 1)`, never 0 or 1, so the radius is finite and above 0.
pub(crate) fn neg2_log(w: u32) -> f32 {
    let u = ((w >> 9) * 2 + 1) as f32 * (1.0 / 16_777_216.0);
    let b = u.to_bits();
    let mut e = (b >> 23) as i32 - 127;
    let mut m = (b & 0x007f_ffff) | 0x3f80_0000;
    if m > 0x3fb5_04f3 {
        m = (b & 0x007f_ffff) | 0x3f00_0000;
        e += 1;
    }
    let f = f32::from_bits(m) - 1.0;
    let s = f + (f * f) * horner(&LOG_P, f);
    let e = e as f32;
    ((s + e * LN2_LO) + e * LN2_HI) * -2.0
}

/// The square root of `x > 0` by three Newton steps on its reciprocal from
/// the classic bit-level first guess.
pub(crate) fn sqrt32(x: f32) -> f32 {
    let mut y = f32::from_bits(0x5f37_59df - (x.to_bits() >> 1));
    let h = x * 0.5;
    for _ in 0..3 {
        y = y * (1.5 - h * (y * y));
    }
    x * y
}

/// `(cos, sin)` of the turn `(w >> 8) 2^-24` (an angle in `[0, 2 pi)`):
/// the quadrant and the octant's mirror are taken on the integer, the
/// polynomials evaluated on `[0, 1/8]` turn.
pub(crate) fn turn(w: u32) -> (f32, f32) {
    let k = w >> 8;
    let quadrant = k >> 22;
    let j = k & 0x003f_ffff;
    let mirrored = j > 1 << 21;
    let j = if mirrored { (1 << 22) - j } else { j };
    let x = j as f32 * (1.0 / 16_777_216.0);
    let z = x * x;
    let (s, c) = (x * horner(&SIN_S, z), 1.0 + z * horner(&COS_C, z));
    let (c, s) = if mirrored { (s, c) } else { (c, s) };
    match quadrant {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    }
}

/// Two standard normals from two words: the radius from the first, the
/// angle from the second.
pub(crate) fn normal_pair(radius: u32, angle: u32) -> [f32; 2] {
    let r = sqrt32(neg2_log(radius));
    let (c, s) = turn(angle);
    [r * c, r * s]
}

/// The 64-bit value of two words, the first the low half.
fn wide(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// The values of one quad (four consecutive elements, the first a multiple
/// of 4 from the call's start) of a draw into a 32-bit-or-narrower dtype,
/// floats in f32 before their rounding: `words(b)` is block `b` of the
/// call (`w` = 2 draws take two blocks a quad).
enum Quad {
    Float([f32; 4]),
    Word([u32; 4]),
    Wide([u64; 4]),
}

fn quad(draw: &Draw, bits: u32, q: u64, words: impl Fn(u64) -> [u32; 4]) -> Quad {
    match *draw {
        Draw::Bits => Quad::Word(words(q)),
        Draw::Bernoulli { threshold } => {
            Quad::Word(words(q).map(|w| u32::from(u64::from(w) < threshold)))
        }
        Draw::Uniform { low, span, top } => {
            let (low, span, top) = (f32_param(low), f32_param(span), f32_param(top));
            let unit = 1.0 / (1u32 << bits) as f32;
            Quad::Float(words(q).map(|w| {
                let u = (w >> (32 - bits)) as f32 * unit;
                let v = flushed(flushed(span * u) + low);
                if v >= top { low } else { v }
            }))
        }
        Draw::Normal { mean, std } => {
            let w = words(q);
            let ([a, b], [c, d]) = (normal_pair(w[0], w[1]), normal_pair(w[2], w[3]));
            let (mean, std) = (f32_param(mean), f32_param(std));
            Quad::Float([a, b, c, d].map(|z| flushed(flushed(std * z) + mean)))
        }
        Draw::Int { low, span } => {
            let (x, y) = (words(2 * q), words(2 * q + 1));
            let draws = [
                wide(x[0], x[1]),
                wide(x[2], x[3]),
                wide(y[0], y[1]),
                wide(y[2], y[3]),
            ];
            Quad::Wide(draws.map(|v| {
                let q = (u128::from(v) * u128::from(span)) >> 64;
                (low as u64).wrapping_add(q as u64)
            }))
        }
    }
}

/// The f64 values of one quad of a uniform or normal draw (the CPU's f64,
/// two words an element): uniforms of 53 bits; normals from Box-Muller in
/// f64, a block a pair. `None` for other draws, which take f32's steps.
fn quad_f64(draw: &Draw, q: u64, words: impl Fn(u64) -> [u32; 4]) -> Option<[f64; 4]> {
    let unit = 1.0 / (1u64 << 53) as f64;
    if !matches!(draw, Draw::Uniform { .. } | Draw::Normal { .. }) {
        return None;
    }
    let (x, y) = (words(2 * q), words(2 * q + 1));
    match *draw {
        Draw::Uniform { low, span, top } => [
            wide(x[0], x[1]),
            wide(x[2], x[3]),
            wide(y[0], y[1]),
            wide(y[2], y[3]),
        ]
        .map(|v| {
            let v = span * ((v >> 11) as f64 * unit) + low;
            if v >= top { low } else { v }
        })
        .into(),
        Draw::Normal { mean, std } => {
            let pair = |w: [u32; 4]| {
                let u1 = ((wide(w[0], w[1]) >> 12) * 2 + 1) as f64 * unit;
                let u2 = (wide(w[2], w[3]) >> 11) as f64 * unit;
                let r = (-2.0 * u1.ln()).sqrt();
                let t = std::f64::consts::TAU * u2;
                [r * t.cos(), r * t.sin()]
            };
            let ([a, b], [c, d]) = (pair(x), pair(y));
            Some([a, b, c, d].map(|z| std * z + mean))
        }
        _ => None,
    }
}

/// Fills `out` (a fresh contiguous tensor whose first element is element
/// `call.first` of the call) with `call`'s draw.
///
/// # Errors
/// `Error::Internal` for a dtype the draw does not make.
pub(crate) fn random(out: &CpuStorage, call: &RandomCall) -> Result<()> {
    let (key, start, draw) = (call.key, call.block, call.draw);
    let words = move |b: u64| block(key, start.wrapping_add(b));
    let n = call.out.layout.numel();
    let from = call.out.layout.offset();
    let first_quad = call.first / 4;
    let bits = uniform_bits(call.out.dtype);
    let mut dst = out.write();
    let refuse = || Error::internal("random", "the generator got a dtype it does not make");
    macro_rules! fill {
        ($t:ty, $convert:expr) => {{
            let data = dst.as_mut_slice::<$t>().ok_or_else(refuse)?;
            fill_quads(&mut data[from..from + n], first_quad, $convert);
            Ok(())
        }};
    }
    let small = move |q: u64| quad(&draw, bits, q, words);
    use crate::dtype::KernelType as K;
    match call.out.dtype {
        K::F64 => fill!(f64, move |q| quad_f64(&draw, q, words)
            .unwrap_or_else(|| floats(small(q)).map(f64::from))),
        K::F32 => fill!(f32, move |q| floats(small(q))),
        K::F16 => fill!(f16, move |q| floats(small(q)).map(f16::from_f32)),
        K::BF16 => fill!(bf16, move |q| floats(small(q)).map(bf16::from_f32)),
        K::I32 => fill!(i32, move |q| wides(small(q)).map(|v| v as i32)),
        K::U32 => fill!(u32, move |q| wides(small(q)).map(|v| v as u32)),
        K::U8 => fill!(u8, move |q| wides(small(q)).map(|v| v as u8)),
        K::I64 => fill!(i64, move |q| wides(small(q)).map(|v| v as i64)),
        K::Bool => fill!(bool, move |q| wides(small(q)).map(|v| v != 0)),
    }
}

/// A quad's values as f32 (0 and 1 for a Bernoulli draw).
fn floats(q: Quad) -> [f32; 4] {
    match q {
        Quad::Float(v) => v,
        Quad::Word(w) => w.map(|w| w as f32),
        Quad::Wide(w) => w.map(|w| w as f32),
    }
}

/// A quad's values as 64-bit words (floats never reach it: the op layer
/// refuses float draws into integer dtypes).
fn wides(q: Quad) -> [u64; 4] {
    match q {
        Quad::Float(v) => v.map(|v| v as u64),
        Quad::Word(w) => w.map(u64::from),
        Quad::Wide(w) => w,
    }
}

/// Writes quads `first_quad..` into `out`, four elements each (the last
/// quad cut to what remains), in parallel pieces.
fn fill_quads<T: Element>(out: &mut [T], first_quad: u64, quad: impl Fn(u64) -> [T; 4] + Sync) {
    const PIECE: usize = 1 << 14;
    for_each_piece_mut(out, PIECE, |(k, piece)| {
        let base = first_quad + (k * PIECE / 4) as u64;
        for (j, chunk) in piece.chunks_mut(4).enumerate() {
            let v = quad(base + j as u64);
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known answers for Philox4x32-10 (its kat_vectors).
    #[test]
    fn philox_gives_the_reference_answers() {
        let cases = [
            (
                [0; 4],
                [0; 2],
                [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (counter, key, want) in cases {
            assert_eq!(philox(counter, key), want);
        }
    }

    #[test]
    fn the_functions_meet_f64_within_their_bounds() {
        let ulp = |got: f32, want: f64| {
            (f64::from(got) - want).abs()
                / f64::from((want as f32).abs()).max(f64::from(f32::MIN_POSITIVE))
                * 2f64.powi(23)
        };
        for w in (0..=u32::MAX).step_by(4099).chain([0, u32::MAX]) {
            let u = f64::from((w >> 9) * 2 + 1) / 16_777_216.0;
            assert!(ulp(neg2_log(w), -2.0 * u.ln()) <= 2.0, "log of {w}");
            let r = -2.0 * u.ln();
            assert!(
                ulp(sqrt32(r as f32), f64::from(r as f32).sqrt()) <= 4.0,
                "sqrt of {w}"
            );
            let t = std::f64::consts::TAU * f64::from(w >> 8) / 16_777_216.0;
            let (c, s) = turn(w);
            assert!((f64::from(c) - t.cos()).abs() <= 2.5e-7, "cos of {w}");
            assert!((f64::from(s) - t.sin()).abs() <= 2.5e-7, "sin of {w}");
        }
    }
}
