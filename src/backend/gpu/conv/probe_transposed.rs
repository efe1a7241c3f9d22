//! The transposed convolution kernel's self-check (as `probe.rs` for the
//! convolution's): before the kernel computes its first transposed
//! convolution of a dtype on a tile, it computes a probe whose answer is
//! known exactly, and a kernel that answers wrong is dropped for the device
//! (its transposed convolutions are composed from products instead).
//!
//! The probe exercises what the phases add: strides differing by axis;
//! along the rows a dilation sharing a factor with the stride, so that
//! every other phase has no tap and the others' taps are two input rows
//! apart; along the columns phases of three taps and of two, whose patch
//! rows carry into the tap row and the channel as they advance by a
//! tile's k step; padding and output padding; two images in two groups;
//! the input and the weight read through permuted views; phases of more
//! pixels than the largest tile is wide; output channels past 64 a group;
//! and a k (36) past each tile's k step (8 or 16 on the register tiles;
//! 16 on 8 x 8 cooperative fragments, 32 on 16 x 16) and a multiple of
//! none. Its values are small integers, every sum within 256: exact in
//! f16 and bf16.

use super::kernel::ConvTile;
use super::probe::{ProbeGeometry, answers, w_value, x_value};
use super::transposed::record;
use crate::backend::ConvCall;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::Result;
use std::sync::Arc;

/// The probe: input `[2, 8, 6, 17]`, weight `[8, 66, 3, 7]` in 2 groups
/// (4 input and 66 output channels each), stride (2, 3), padding (1, 0),
/// dilation (4, 1), output padding (1, 0): a `[2, 132, 18, 55]` output.
const INPUT: [usize; 4] = [2, 8, 6, 17];
const WEIGHT: [usize; 4] = [8, 66, 3, 7];
const GROUPS: usize = 2;
const STRIDE: [usize; 2] = [2, 3];
const PAD: [usize; 2] = [1, 0];
const DILATION: [usize; 2] = [4, 1];
const OUTPUT_PADDING: [usize; 2] = [1, 0];

/// The output's extents.
fn out_dims() -> [usize; 4] {
    let size = |a: usize| {
        (INPUT[2 + a] - 1) * STRIDE[a] + DILATION[a] * (WEIGHT[2 + a] - 1) + 1 + OUTPUT_PADDING[a]
            - 2 * PAD[a]
    };
    [INPUT[0], WEIGHT[1] * GROUPS, size(0), size(1)]
}

/// True when the probe's operands fit one storage binding of the device.
pub(super) fn fits(ctx: &GpuContext, dtype: KernelType) -> bool {
    let largest: usize = out_dims().iter().product();
    (largest * dtype.dtype().size_in_bytes()) as u64 <= ctx.facts.max_storage_binding
}

/// True when the kernel of `tiling` computes the probe right.
///
/// # Errors
/// Failures of the uploads, the dispatch or the readback.
pub(super) fn answers_right(
    ctx: &Arc<GpuContext>,
    tiling: ConvTile,
    dtype: KernelType,
) -> Result<bool> {
    let geometry = ProbeGeometry {
        kernel: [WEIGHT[2], WEIGHT[3]],
        stride: STRIDE,
        pad: PAD,
        dilation: DILATION,
        groups: GROUPS,
    };
    // The input channels-last, the weight taps-first.
    let operands = [(INPUT, [0, 2, 3, 1]), (WEIGHT, [2, 3, 0, 1])];
    let dims = out_dims();
    let record = |out: &GpuStorage, call: &ConvCall| record(out, call, tiling);
    answers(ctx, dtype, operands, geometry, dims, record, expected(dims))
}

/// The probe's exact answer, row-major: each input pixel times each tap
/// added at `(y s + i d - p, x s + j d - p)`.
fn expected([n, o, ho, wo]: [usize; 4]) -> impl Iterator<Item = f64> {
    let [_, c, h, w] = INPUT;
    let [_, og, kh, kw] = WEIGHT;
    let cg = c / GROUPS;
    let mut out = vec![0i64; n * o * ho * wo];
    for (b, ch, y, xx) in input_pixels(n, c, h, w) {
        for oc in 0..og {
            for i in 0..kh {
                for j in 0..kw {
                    let yy = (y * STRIDE[0] + i * DILATION[0]) as isize - PAD[0] as isize;
                    let xo = (xx * STRIDE[1] + j * DILATION[1]) as isize - PAD[1] as isize;
                    if (0..ho as isize).contains(&yy) && (0..wo as isize).contains(&xo) {
                        let channel = ch / cg * og + oc;
                        let at = ((b * o + channel) * ho + yy as usize) * wo + xo as usize;
                        out[at] += x_value([b, ch, y, xx]) * w_value([ch, oc, i, j]);
                    }
                }
            }
        }
    }
    out.into_iter().map(|v| v as f64)
}

/// Every (image, channel, row, column) of an `[n, c, h, w]` input.
fn input_pixels(
    n: usize,
    c: usize,
    h: usize,
    w: usize,
) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    (0..n * c * h * w).map(move |k| (k / (c * h * w), k / (h * w) % c, k / w % h, k % w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_answer_is_exact_in_every_float_dtype() {
        // bf16 holds integers to 256 exactly.
        let dims = out_dims();
        assert_eq!(dims, [2, 132, 18, 55]);
        let largest = expected(dims).map(f64::abs).fold(0.0, f64::max);
        assert!((1.0..=256.0).contains(&largest), "{largest}");
        // The widest phase (all three tap rows, three of the columns' seven
        // taps) takes k past 32, the widest k step, and a multiple of no
        // step (8, 16, 32).
        let k = INPUT[1] / GROUPS * WEIGHT[2] * WEIGHT[3].div_ceil(STRIDE[1]);
        assert!(k > 32 && !k.is_multiple_of(8), "{k}");
    }
}
