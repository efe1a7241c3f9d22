//! Products with Q4_0 and Q8_0 weights on x86-64 CPUs with AVX2, FMA and
//! F16C: each block decoded in registers (its quants widened to f32 and
//! multiplied by its scale, the values `quant::decode` gives bit for bit)
//! and multiplied into four running sums of eight lanes, so that a weight
//! row is read once and never written out. Two activation rows share each
//! decoded block, each summed as a row alone is (so a row's result does
//! not depend on how many rows the product has, up to the rows
//! `ops/quant/product.rs` multiplies here: past them it multiplies by the
//! decoded weight, which sums in another order). Elsewhere, and for the
//! other types, `quant.rs` decodes a row at a time and dots it.

use super::quant::Rows;
use crate::quant::GgmlType;

/// Fills `dots` (`[n][m]`) as `Rows::dots` does, with the fused kernels,
/// and returns true; false (nothing written) where this CPU or type has
/// none.
pub(super) fn dots(ty: GgmlType, rows: &Rows, xv: &[f32], dots: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        match ty {
            GgmlType::Q4_0 => x86::dots::<x86::Q40>(rows, xv, dots),
            GgmlType::Q8_0 => x86::dots::<x86::Q80>(rows, xv, dots),
            _ => return false,
        }
        return true;
    }
    let _ = (ty, rows, xv, dots);
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::quant::{ROWS_PER_PIECE, Rows};
    use super::super::threads::for_each_piece_mut;
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// True when this CPU has AVX2, FMA and F16C (checked once).
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
        })
    }

    /// A block type the kernels decode: its bytes, and its 32 values as
    /// four vectors of eight.
    pub trait Block {
        const BYTES: usize;
        /// # Safety
        /// `b` points at `BYTES` readable bytes; the CPU has AVX2, FMA and
        /// F16C.
        unsafe fn values(b: *const u8) -> [__m256; 4];
    }

    /// `Q4_0`: `d`, 16 bytes of nibbles (element `j` the low nibble of
    /// byte `j`, element `j + 16` its high one, less 8).
    pub struct Q40;

    /// `Q8_0`: `d`, 32 signed bytes.
    pub struct Q80;

    /// The block's scale (the f16 at `b`), widened, in every lane.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale(b: *const u8) -> __m256 {
        // SAFETY: the caller's block holds its two scale bytes at `b`.
        let bits = unsafe { u16::from_le_bytes([*b, *b.add(1)]) };
        _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(
            bits,
        )))))
    }

    /// Eight signed bytes (the low eight of `q`) as f32, times `d`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn widened(q: __m128i, d: __m256) -> __m256 {
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d)
    }

    impl Block for Q40 {
        const BYTES: usize = 18;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn values(b: *const u8) -> [__m256; 4] {
            // SAFETY: the block's 18 bytes are readable (the caller's).
            let (d, q) = unsafe { (scale(b), _mm_loadu_si128(b.add(2).cast())) };
            let (low4, eight) = (_mm_set1_epi8(0x0f), _mm_set1_epi8(8));
            let lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);
            let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight);
            [
                widened(lo, d),
                widened(_mm_srli_si128(lo, 8), d),
                widened(hi, d),
                widened(_mm_srli_si128(hi, 8), d),
            ]
        }
    }

    impl Block for Q80 {
        const BYTES: usize = 34;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn values(b: *const u8) -> [__m256; 4] {
            // SAFETY: the block's 34 bytes are readable (the caller's).
            unsafe {
                let d = scale(b);
                [
                    widened(_mm_loadl_epi64(b.add(2).cast()), d),
                    widened(_mm_loadl_epi64(b.add(10).cast()), d),
                    widened(_mm_loadl_epi64(b.add(18).cast()), d),
                    widened(_mm_loadl_epi64(b.add(26).cast()), d),
                ]
            }
        }
    }

    /// The sum of the eight lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn lanes_sum(v: __m256) -> f32 {
        let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1)))
    }

    /// The dot product of a weight row (`blocks` blocks at `row`) with the
    /// activation row at `x` (`32 blocks` values), four running sums.
    ///
    /// # Safety
    /// As [`Block::values`] for every block; `x` holds `32 blocks` values.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot1<B: Block>(row: *const u8, blocks: usize, x: *const f32) -> f32 {
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in 0..blocks {
            // SAFETY: block i and values 32 i .. 32 i + 32 are in bounds.
            unsafe {
                let w = B::values(row.add(i * B::BYTES));
                let xs = x.add(32 * i);
                for (l, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(_mm256_loadu_ps(xs.add(8 * l)), w[l], *a);
                }
            }
        }
        lanes_sum(_mm256_add_ps(
            _mm256_add_ps(acc[0], acc[1]),
            _mm256_add_ps(acc[2], acc[3]),
        ))
    }

    /// [`dot1`] for two activation rows at once, each block decoded once.
    ///
    /// # Safety
    /// As [`dot1`], for `x0` and `x1`.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot2<B: Block>(
        row: *const u8,
        blocks: usize,
        x0: *const f32,
        x1: *const f32,
    ) -> [f32; 2] {
        let mut acc = [[_mm256_setzero_ps(); 4]; 2];
        for i in 0..blocks {
            // SAFETY: block i and values 32 i .. 32 i + 32 are in bounds.
            unsafe {
                let w = B::values(row.add(i * B::BYTES));
                for (a, x) in acc.iter_mut().zip([x0, x1]) {
                    let xs = x.add(32 * i);
                    for (l, w) in w.iter().enumerate() {
                        a[l] = _mm256_fmadd_ps(_mm256_loadu_ps(xs.add(8 * l)), *w, a[l]);
                    }
                }
            }
        }
        // Summed as `dot1` sums: a row's result is the same alone or in a
        // pair.
        acc.map(|a| {
            lanes_sum(_mm256_add_ps(
                _mm256_add_ps(a[0], a[1]),
                _mm256_add_ps(a[2], a[3]),
            ))
        })
    }

    /// `Rows::dots` on the fused kernels: pieces of `ROWS_PER_PIECE`
    /// weight rows over the device's threads, activation rows in pairs.
    pub fn dots<B: Block>(rows: &Rows, xv: &[f32], dots: &mut [f32]) {
        let k = rows.k;
        let m = xv.len() / k.max(1);
        let blocks = k / 32;
        assert!(
            rows.width == B::BYTES && rows.block == 32 && rows.row_bytes == blocks * B::BYTES,
            "the fused kernels got another type's rows"
        );
        assert!(rows.at + dots.len() / m.max(1) * rows.row_bytes <= rows.bytes.len());
        assert_eq!(xv.len(), m * k);
        for_each_piece_mut(dots, ROWS_PER_PIECE * m.max(1), |(p, piece)| {
            for (j, row_dots) in piece.chunks_exact_mut(m).enumerate() {
                let at = rows.at + (p * ROWS_PER_PIECE + j) * rows.row_bytes;
                let row = rows.bytes[at..at + rows.row_bytes].as_ptr();
                let mut i = 0;
                while i < m {
                    let x0 = xv[i * k..(i + 1) * k].as_ptr();
                    // SAFETY: the row's blocks and each activation row's k
                    // values are in bounds (the slices above); `available`
                    // checked the CPU.
                    if i + 1 < m {
                        let x1 = xv[(i + 1) * k..(i + 2) * k].as_ptr();
                        let [a, b] = unsafe { dot2::<B>(row, blocks, x0, x1) };
                        row_dots[i] = a;
                        row_dots[i + 1] = b;
                        i += 2;
                    } else {
                        row_dots[i] = unsafe { dot1::<B>(row, blocks, x0) };
                        i += 1;
                    }
                }
            }
        });
    }
}
