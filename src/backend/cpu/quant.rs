//! Products with a quantized weight on the CPU, and its dequantization:
//! each weight row's blocks decoded by the reference decoders
//! (`crate::quant`, bit for bit gguf-py's) into a row of f32, then dotted
//! with every activation row, rows split over the device's threads. Each
//! type's decoder is called statically (inlined and compiled per type: a
//! call through a pointer per block was slower).

use super::storage::{CpuData, CpuStorage, Reads};
use super::threads::for_each_piece_mut;
use crate::backend::QuantCall;
use crate::error::{Error, Result};

const OP: &str = "qmatmul";

/// Weight rows each piece of a product decodes.
pub(super) const ROWS_PER_PIECE: usize = 16;

/// `$body` with `$decode` bound to the decoder of `$ty`, a function item,
/// in one arm per type (so that each type's loops are compiled with its
/// decoder inlined); `Error::Internal` for a type without a decoder.
macro_rules! with_decoder {
    ($ty:expr, |$decode:ident| $body:expr) => {{
        use crate::quant::GgmlType as T;
        use crate::quant::decode as d;
        match $ty {
            T::Q4_0 => Ok({
                let $decode = d::q4_0;
                $body
            }),
            T::Q4_1 => Ok({
                let $decode = d::q4_1;
                $body
            }),
            T::Q5_0 => Ok({
                let $decode = d::q5_0;
                $body
            }),
            T::Q5_1 => Ok({
                let $decode = d::q5_1;
                $body
            }),
            T::Q8_0 => Ok({
                let $decode = d::q8_0;
                $body
            }),
            T::Q2_K => Ok({
                let $decode = d::q2_k;
                $body
            }),
            T::Q3_K => Ok({
                let $decode = d::q3_k;
                $body
            }),
            T::Q4_K => Ok({
                let $decode = d::q4_k;
                $body
            }),
            T::Q5_K => Ok({
                let $decode = d::q5_k;
                $body
            }),
            T::Q6_K => Ok({
                let $decode = d::q6_k;
                $body
            }),
            T::IQ4_NL => Ok({
                let $decode = d::iq4_nl;
                $body
            }),
            other => Err(Error::internal(OP, format!("no decoder for {other}"))),
        }
    }};
}

/// Runs `call` (see [`QuantCall`]) into `out`.
///
/// # Errors
/// `Error::Internal` for operands that are not the call's dtypes or a type
/// without a decoder.
pub(crate) fn quant(out: &CpuStorage, call: &QuantCall) -> Result<()> {
    // Every lock at once, in address order (see `Reads::lock_writing`).
    let (reads, mut out_data) = Reads::lock_writing(OP, out, &[Some(&call.w), call.x.as_ref()])?;
    let CpuData::U8(bytes) = reads.of(OP, &call.w)? else {
        return Err(Error::internal(OP, "the weight's storage is not u8"));
    };
    let rows = Rows {
        bytes,
        at: call.w.layout.offset(),
        row_bytes: call.row_bytes(),
        width: call.ty.block_bytes() as usize,
        block: call.ty.block_size() as usize,
        k: call.k,
    };
    let (n, k, m) = (call.n, call.k, call.m);
    let Some(x) = &call.x else {
        let CpuData::F32(dst) = &mut *out_data else {
            return Err(Error::internal(OP, "the output's storage is not f32"));
        };
        let at = call.out.layout.offset();
        let dst = &mut dst[at..at + n * k];
        return with_decoder!(call.ty, |decode| rows.decode_all(decode, dst));
    };
    // Each piece: ROWS_PER_PIECE weight rows' dot products with every
    // activation row, as [row][activation].
    let mut dots = vec![0f32; n * m];
    {
        let CpuData::F32(xv) = reads.of(OP, x)? else {
            return Err(Error::internal(OP, "the activations' storage is not f32"));
        };
        let xv = &xv[x.layout.offset()..x.layout.offset() + m * k];
        if !super::quant_fused::dots(call.ty, &rows, xv, &mut dots) {
            with_decoder!(call.ty, |decode| rows.dots(decode, xv, &mut dots))?;
        }
    }
    let CpuData::F32(dst) = &mut *out_data else {
        return Err(Error::internal(OP, "the output's storage is not f32"));
    };
    let at = call.out.layout.offset();
    for i in 0..m {
        let dst_row = &mut dst[at + i * call.out_stride..at + i * call.out_stride + n];
        for (r, d) in dst_row.iter_mut().enumerate() {
            *d = dots[r * m + i];
        }
    }
    Ok(())
}

/// `a . b` (equal lengths) in f32, over eight running sums so that the
/// adds need not wait on each other (and vectorise).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for l in 0..8 {
            sums[l] += x[l] * y[l];
        }
    }
    let halves = [
        sums[0] + sums[4],
        sums[1] + sums[5],
        sums[2] + sums[6],
        sums[3] + sums[7],
    ];
    (halves[0] + halves[2]) + (halves[1] + halves[3]) + tail
}

/// A weight's rows of blocks.
pub(super) struct Rows<'a> {
    pub bytes: &'a [u8],
    /// Where row 0 starts, bytes per row, a block's bytes and elements,
    /// elements per row.
    pub at: usize,
    pub row_bytes: usize,
    pub width: usize,
    pub block: usize,
    pub k: usize,
}

impl Rows<'_> {
    /// Row `r` decoded into `values` (`k` long).
    #[inline(always)]
    fn decode_row(&self, decode: impl Fn(&[u8], &mut [f32]), r: usize, values: &mut [f32]) {
        let at = self.at + r * self.row_bytes;
        let blocks = self.bytes[at..at + self.row_bytes].chunks_exact(self.width);
        for (b, chunk) in blocks.zip(values.chunks_exact_mut(self.block)) {
            decode(b, chunk);
        }
    }

    /// Every row decoded into `dst` (`[n, k]`), rows split over the
    /// device's threads.
    fn decode_all(&self, decode: impl Fn(&[u8], &mut [f32]) + Sync, dst: &mut [f32]) {
        for_each_piece_mut(dst, self.k.max(1), |(r, values)| {
            self.decode_row(&decode, r, values)
        });
    }

    /// `dots` (`[n][m]`) filled with every row's dot products with each
    /// of the `m` activation rows of `xv` (`[m, k]`), pieces of
    /// [`ROWS_PER_PIECE`] rows split over the device's threads, each row
    /// decoded once.
    fn dots(&self, decode: impl Fn(&[u8], &mut [f32]) + Sync, xv: &[f32], dots: &mut [f32]) {
        let k = self.k;
        let m = xv.len() / k.max(1);
        for_each_piece_mut(dots, ROWS_PER_PIECE * m.max(1), |(p, piece)| {
            let mut values = vec![0f32; k];
            for (j, row_dots) in piece.chunks_exact_mut(m).enumerate() {
                self.decode_row(&decode, p * ROWS_PER_PIECE + j, &mut values);
                for (i, d) in row_dots.iter_mut().enumerate() {
                    *d = dot(&values, &xv[i * k..(i + 1) * k]);
                }
            }
        });
    }
}
