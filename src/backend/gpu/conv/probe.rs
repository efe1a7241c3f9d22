//! The convolution kernel's self-check (as the matmul's, whose tiles it
//! runs: `matmul/self_check.rs`): before the kernel computes its first
//! convolution of a dtype on a tile, it computes a probe whose answer is
//! known exactly, and a kernel that answers wrong is dropped for the
//! device (its convolutions are composed from products instead).
//!
//! The probe exercises what the convolution adds to the matmul's tile: two
//! images in two groups, a stride, a dilation and padding on one axis
//! each, an input read through a permuted (NHWC) view, an output wider
//! than the largest tile, output channels past 64 a group, and a k
//! (channels x taps) past every kernel's k step and a multiple of none. Its
//! values are small integers, exact in f16.

use super::kernel::ConvTile;
use super::kernel::record;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::matmul::probe::{read, upload};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{ConvCall, Storage, StorageRef, TensorRef};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use std::sync::Arc;

const OP: &str = "conv2d (self-check)";

/// The probe: input `[2, 12, 9, 40]`, weights `[132, 6, 3, 2]` in 2
/// groups (66 output channels each: past 64, a tile's rows beyond the
/// first 64, as the 128-row tiles' second half; k = 36, past every
/// kernel's k step, the cooperative kernel's 32 included, so taps
/// advance), stride (2, 1), padding (1, 0), dilation (1, 2). Sums stay
/// within 36 x 6 = 216: exact in bf16.
const INPUT: [usize; 4] = [2, 12, 9, 40];
const WEIGHT: [usize; 4] = [132, 6, 3, 2];
const GROUPS: usize = 2;
const STRIDE: [usize; 2] = [2, 1];
const PAD: [usize; 2] = [1, 0];
const DILATION: [usize; 2] = [1, 2];

/// The output's extents.
fn out_dims() -> [usize; 4] {
    let extent = |a: usize| DILATION[a] * (WEIGHT[2 + a] - 1) + 1;
    let size = |a: usize| (INPUT[2 + a] + 2 * PAD[a] - extent(a)) / STRIDE[a] + 1;
    [INPUT[0], WEIGHT[0], size(0), size(1)]
}

pub(super) fn x_value([n, c, y, x]: [usize; 4]) -> i64 {
    ((n * 3 + c * 5 + y * 7 + x * 11) % 5) as i64 - 2
}

pub(super) fn w_value([o, c, i, j]: [usize; 4]) -> i64 {
    ((o * 3 + c * 7 + i * 5 + j) % 7) as i64 - 3
}

/// True when the probe's operands fit one storage binding of the device.
pub(super) fn fits(ctx: &GpuContext, dtype: KernelType) -> bool {
    let largest = INPUT
        .iter()
        .product::<usize>()
        .max(out_dims().iter().product());
    (largest * dtype.dtype().size_in_bytes()) as u64 <= ctx.facts.max_storage_binding
}

/// True when `tiling` computes the probe right.
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
    // The input stored NHWC and read through its NCHW view.
    let operands = [(INPUT, [0, 2, 3, 1]), (WEIGHT, [0, 1, 2, 3])];
    let dims = out_dims();
    let record = |out: &GpuStorage, call: &ConvCall| record(out, call, tiling);
    answers(ctx, dtype, operands, geometry, dims, record, expected(dims))
}

/// True when `record` gives `want` (row-major `dims`) for the probe
/// operands `(dims, memory order)` (the input's values from `x_value`,
/// the weight's from `w_value`) uploaded as `dtype`.
///
/// # Errors
/// Failures of the uploads, the dispatch or the readback.
pub(super) fn answers(
    ctx: &Arc<GpuContext>,
    dtype: KernelType,
    [(input, input_order), (weight, weight_order)]: [([usize; 4], [usize; 4]); 2],
    geometry: ProbeGeometry,
    dims: [usize; 4],
    record: impl FnOnce(&GpuStorage, &ConvCall) -> Result<()>,
    want: impl Iterator<Item = f64>,
) -> Result<bool> {
    let operands = [
        stored(input, input_order, x_value)?,
        stored(weight, weight_order, w_value)?,
    ];
    let got = run(ctx, dtype, operands, dims, geometry, record)?;
    Ok(got.iter().copied().eq(want))
}

/// A probe's geometry (as `ConvCall` holds it).
pub(super) struct ProbeGeometry {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

/// `dims` stored in the axis order `order` (outermost first), and the
/// view that reads them as `dims`.
///
/// # Errors
/// None for a permutation `order`.
fn stored(
    dims: [usize; 4],
    order: [usize; 4],
    value: fn([usize; 4]) -> i64,
) -> Result<(Vec<i64>, Layout)> {
    let memory = order.map(|a| dims[a]);
    let mut values = Vec::with_capacity(dims.iter().product());
    for k in 0..memory.iter().product::<usize>() {
        let mut at = [0; 4];
        let mut rest = k;
        for a in (0..4).rev() {
            at[order[a]] = rest % memory[a];
            rest /= memory[a];
        }
        values.push(value(at));
    }
    let mut back = [0isize; 4];
    for (a, &o) in order.iter().enumerate() {
        back[o] = a as isize;
    }
    Ok((values, Layout::contiguous(memory.to_vec()).permute(&back)?))
}

/// The output (`dims`, row-major) that `record` gives for the input and
/// the weight (values and views) uploaded as `dtype`, read back.
///
/// # Errors
/// Failures of the uploads, the dispatch or the readback.
fn run(
    ctx: &Arc<GpuContext>,
    dtype: KernelType,
    [(x_values, x_layout), (w_values, w_layout)]: [(Vec<i64>, Layout); 2],
    dims: [usize; 4],
    geometry: ProbeGeometry,
    record: impl FnOnce(&GpuStorage, &ConvCall) -> Result<()>,
) -> Result<Vec<f64>> {
    let x = Arc::new(Storage::Gpu(upload(ctx, dtype, &x_values)?));
    let weight = Arc::new(Storage::Gpu(upload(ctx, dtype, &w_values)?));
    let y = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        OP,
        dtype,
        dims.iter().product(),
    )?));
    let Storage::Gpu(out) = &*y else {
        return Err(Error::internal(OP, "the probe's output is not on the GPU"));
    };
    let tensor = |storage, layout| TensorRef {
        storage: StorageRef::own(storage),
        layout,
        dtype,
    };
    let call = ConvCall {
        input: tensor(&x, x_layout),
        weight: tensor(&weight, w_layout),
        out: tensor(&y, Layout::contiguous(dims.to_vec())),
        kernel: geometry.kernel,
        stride: geometry.stride,
        pad: geometry.pad,
        dilation: geometry.dilation,
        groups: geometry.groups,
        bias: None,
        activation: None,
        residual: None,
    };
    record(out, &call)?;
    pollster::block_on(read(out, dtype))
}

/// The probe's exact answer, row-major.
fn expected([n, o, ho, wo]: [usize; 4]) -> impl Iterator<Item = f64> {
    let (og, cg) = (o / GROUPS, WEIGHT[1]);
    let out = move |b: usize, oc: usize, y: usize, xx: usize| {
        let mut acc = 0i64;
        for ch in 0..cg {
            let channel = (oc / og) * cg + ch;
            for i in 0..WEIGHT[2] {
                for j in 0..WEIGHT[3] {
                    let yy = (y * STRIDE[0] + i * DILATION[0]) as isize - PAD[0] as isize;
                    let xi = (xx * STRIDE[1] + j * DILATION[1]) as isize - PAD[1] as isize;
                    let inside = (0..INPUT[2] as isize).contains(&yy)
                        && (0..INPUT[3] as isize).contains(&xi);
                    if inside {
                        acc += w_value([oc, ch, i, j])
                            * x_value([b, channel, yy as usize, xi as usize]);
                    }
                }
            }
        }
        acc as f64
    };
    (0..n * o * ho * wo)
        .map(move |k| out(k / (o * ho * wo), k / (ho * wo) % o, k / wo % ho, k % wo))
}
