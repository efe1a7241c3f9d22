//! Products with a quantized weight on the CPU, and its dequantization:
//! each weight row's blocks decoded by the reference decoders
//! (`crate::quant`, bit for bit gguf-py's) into a row of f32, then dotted
//! with every activation row, rows split over the device's threads.

use super::storage::{CpuData, CpuStorage};
use super::threads::for_each_piece_mut;
use crate::backend::{QuantCall, Storage};
use crate::error::{Error, Result};

const OP: &str = "qmatmul";

/// Weight rows each piece of work decodes.
const ROWS_PER_PIECE: usize = 16;

/// Runs `call` (see [`QuantCall`]) into `out`.
///
/// # Errors
/// `Error::Internal` for operands that are not the call's dtypes or a type
/// without a decoder.
pub(crate) fn quant(out: &CpuStorage, call: &QuantCall) -> Result<()> {
    let Storage::Cpu(w) = &**call.w.storage else {
        return Err(Error::internal(OP, "the weight is not in host memory"));
    };
    let decode = crate::quant::block_decoder(call.ty)
        .ok_or_else(|| Error::internal(OP, format!("no decoder for {}", call.ty)))?;
    let (n, k, m) = (call.n, call.k, call.m);
    let (block, width) = (
        call.ty.block_size() as usize,
        call.ty.block_bytes() as usize,
    );
    let row_bytes = call.row_bytes();
    let w_data = w.read();
    let CpuData::U8(bytes) = &*w_data else {
        return Err(Error::internal(OP, "the weight's storage is not u8"));
    };
    let w_at = call.w.layout.offset();
    let row = |r: usize, values: &mut [f32]| {
        let at = w_at + r * row_bytes;
        for (b, chunk) in values.chunks_exact_mut(block).enumerate() {
            decode(&bytes[at + b * width..at + (b + 1) * width], chunk);
        }
    };
    let Some(x) = &call.x else {
        let mut out_data = out.write();
        let CpuData::F32(dst) = &mut *out_data else {
            return Err(Error::internal(OP, "the output's storage is not f32"));
        };
        let at = call.out.layout.offset();
        for_each_piece_mut(&mut dst[at..at + n * k], k, |(r, values)| row(r, values));
        return Ok(());
    };
    // Each piece: ROWS_PER_PIECE weight rows' dot products with every
    // activation row, as [row][activation].
    let mut dots = vec![0f32; n * m];
    {
        let Storage::Cpu(xs) = &**x.storage else {
            return Err(Error::internal(
                OP,
                "the activations are not in host memory",
            ));
        };
        let x_data = xs.read();
        let CpuData::F32(xv) = &*x_data else {
            return Err(Error::internal(OP, "the activations' storage is not f32"));
        };
        let xv = &xv[x.layout.offset()..x.layout.offset() + m * k];
        let rows = Rows {
            bytes,
            at: w_at,
            row_bytes,
            width,
            block,
            xv,
            k,
            m,
        };
        use crate::quant::GgmlType as T;
        use crate::quant::decode as d;
        match call.ty {
            T::Q4_0 => rows.all(d::q4_0, &mut dots),
            T::Q4_1 => rows.all(d::q4_1, &mut dots),
            T::Q5_0 => rows.all(d::q5_0, &mut dots),
            T::Q5_1 => rows.all(d::q5_1, &mut dots),
            T::Q8_0 => rows.all(d::q8_0, &mut dots),
            T::Q2_K => rows.all(d::q2_k, &mut dots),
            T::Q3_K => rows.all(d::q3_k, &mut dots),
            T::Q4_K => rows.all(d::q4_k, &mut dots),
            T::Q5_K => rows.all(d::q5_k, &mut dots),
            T::Q6_K => rows.all(d::q6_k, &mut dots),
            other => return Err(Error::internal(OP, format!("no decoder for {other}"))),
        }
    }
    let mut out_data = out.write();
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

/// A product's weight rows and activations.
struct Rows<'a> {
    bytes: &'a [u8],
    /// Where row 0 starts, bytes per row, a block's bytes and elements.
    at: usize,
    row_bytes: usize,
    width: usize,
    block: usize,
    /// The activations, `[m, k]`.
    xv: &'a [f32],
    k: usize,
    m: usize,
}

impl Rows<'_> {
    /// Fills `dots` (`[n][m]`) with every weight row's dot products, rows
    /// split over the device's threads (`decode` inlined: each type's loop
    /// compiled on its own, which a call through a pointer was not).
    fn all<D: Fn(&[u8], &mut [f32]) + Copy + Sync>(&self, decode: D, dots: &mut [f32]) {
        for_each_piece_mut(dots, ROWS_PER_PIECE * self.m, |(p, piece)| {
            self.piece(decode, p, piece)
        });
    }

    /// Piece `p`: its weight rows decoded one at a time, then dotted with
    /// every activation row.
    fn piece<D: Fn(&[u8], &mut [f32]) + Copy>(&self, decode: D, p: usize, piece: &mut [f32]) {
        let (k, m) = (self.k, self.m);
        let mut values = vec![0f32; k];
        for (j, row_dots) in piece.chunks_exact_mut(m).enumerate() {
            let at = self.at + (p * ROWS_PER_PIECE + j) * self.row_bytes;
            let row = &self.bytes[at..at + self.row_bytes];
            let blocks = row.chunks_exact(self.width);
            for (b, chunk) in blocks.zip(values.chunks_exact_mut(self.block)) {
                decode(b, chunk);
            }
            for (i, d) in row_dots.iter_mut().enumerate() {
                *d = dot(&values, &self.xv[i * k..(i + 1) * k]);
            }
        }
    }
}
