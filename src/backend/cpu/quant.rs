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
        for_each_piece_mut(&mut dots, ROWS_PER_PIECE * m, |(p, piece)| {
            let mut values = vec![0f32; k];
            for (j, row_dots) in piece.chunks_exact_mut(m).enumerate() {
                row(p * ROWS_PER_PIECE + j, &mut values);
                for (i, d) in row_dots.iter_mut().enumerate() {
                    *d = dot(&values, &xv[i * k..(i + 1) * k]);
                }
            }
        });
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
