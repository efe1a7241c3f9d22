//! Max and average pooling in one pass (`pooling/pooling.wgsl`): each
//! output reads its window's taps where they lie in the input (any view),
//! padding implied, so a pooling is one dispatch with no padded copy, no
//! pass per tap and no table of divisors to upload. A thread writes four
//! outputs of a row (`kernel::grid::row_segments`). PyTorch's adaptive
//! average runs on it too: each output's bin found in the kernel from its
//! position, so no table of bins is uploaded either.

use crate::backend::PoolCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{io_parts, needs_f16};
use crate::backend::gpu::kernel::grid::{ROW_OUTPUTS, grid, row_segments};
use crate::backend::gpu::kernel::params_block::{dims8, params_block, strides8};
use crate::backend::gpu::kernel::prelude::{LEAD_AXES_WGSL, fill_kernel};
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const POOLING_WGSL: &str = shader!("pooling/pooling.wgsl");

params_block! {
    /// `Params` of pooling.wgsl.
    pub(crate) struct PoolParams {
        /// Threads, each writing up to `ROW_OUTPUTS` outputs of a row.
        threads: u32,
        row_threads: u32,
        /// Leading axes (all but the last two).
        lead_rank: u32,
        /// 1 for an average, 0 for a maximum.
        average: u32,
        count_include_pad: u32,
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        kernel_h: u32,
        kernel_w: u32,
        stride_h: u32,
        stride_w: u32,
        pad_h: u32,
        pad_w: u32,
        dil_h: u32,
        dil_w: u32,
        x_offset: u32,
        x_hs: i32,
        x_ws: i32,
        out_offset: u32,
        /// A row's outputs over the outputs a thread writes, rounded up.
        segment: u32,
        /// 1 for PyTorch's adaptive bins (`kernel_*` the longest bin).
        adaptive: u32,
        pad2: u32,
        lead_shape: [u32; 8],
        lead_strides: [i32; 8],
    }
}

/// Everything that selects a distinct pooling pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    /// f32, f16 or bf16.
    pub dtype: KernelType,
    pub native_f16: bool,
}

family_key!(PoolKey, "webtensor pooling", pool_source);

/// The WGSL source of the pooling kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn pool_source(key: &PoolKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let [bindings, access] = io_parts(&["x"], dtype, native);
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("LEAD", LEAD_AXES_WGSL),
        ("OUTS", &format!("const OUTS: u32 = {ROW_OUTPUTS}u;")),
    ];
    let (f16, params) = (needs_f16(dtype, native), PoolParams::wgsl());
    fill_kernel("pooling kernel", POOLING_WGSL, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for an
/// output over one dispatch's grid or an operand view over one storage
/// binding (the op layer composes those poolings).
pub(crate) fn pool(out: &GpuStorage, call: &PoolCall) -> Result<()> {
    let op = match (call.adaptive, call.average) {
        (true, _) => "adaptive_avg_pool2d",
        (false, true) => "avg_pool2d",
        (false, false) => "max_pool2d",
    };
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    let float = matches!(
        call.out.dtype,
        KernelType::F32 | KernelType::F16 | KernelType::BF16
    );
    if !float || call.input.dtype != call.out.dtype || (call.adaptive && !call.average) {
        return Err(Error::internal(
            op,
            "the pooling kernel got a dtype it does not take",
        ));
    }
    let (x_bound, x) = Bound::view(op, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(op, call.out.clone(), true)?;
    let (dims, strides) = (x.layout.dims(), x.layout.strides());
    let r = dims.len();
    let o = dest.layout.dims();
    let (segment, threads) = row_segments(op, &dest.layout)?;
    let groups = grid(threads, ctx.facts.max_workgroups_per_dim)?;
    let key = PoolKey {
        dtype: call.out.dtype,
        native_f16: ctx.facts.native_f16,
    };
    // The op layer checked every extent, padded extent and window reach
    // against 2^31 - 1 (ops/windows.rs): these fit the kernel's i32.
    let params = PoolParams {
        threads: threads as u32,
        row_threads: groups[0] * 64,
        lead_rank: (r - 2) as u32,
        average: u32::from(call.average),
        adaptive: u32::from(call.adaptive),
        count_include_pad: u32::from(call.count_include_pad),
        in_h: dims[r - 2] as u32,
        in_w: dims[r - 1] as u32,
        out_h: o[r - 2] as u32,
        out_w: o[r - 1] as u32,
        kernel_h: call.kernel[0] as u32,
        kernel_w: call.kernel[1] as u32,
        stride_h: call.stride[0] as u32,
        stride_w: call.stride[1] as u32,
        pad_h: call.pad[0] as u32,
        pad_w: call.pad[1] as u32,
        dil_h: call.dilation[0] as u32,
        dil_w: call.dilation[1] as u32,
        x_offset: x.layout.offset() as u32,
        x_hs: strides[r - 2] as i32,
        x_ws: strides[r - 1] as i32,
        out_offset: dest.layout.offset() as u32,
        segment: segment as u32,
        lead_shape: dims8(&dims[..r - 2]),
        lead_strides: strides8(&strides[..r - 2]),
        ..bytemuck::Zeroable::zeroed()
    };
    let bindings = smallvec![x_bound, out_bound];
    record_family(
        ctx,
        &key,
        params.bytes(),
        bindings,
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::{FLOAT_STORAGES, validate};

    #[test]
    fn every_pooling_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            let key = PoolKey { dtype, native_f16 };
            let source = pool_source(&key).unwrap();
            validate(&source, &format!("{key:?}"));
            assert_layout(&source, PoolParams::FIELDS, PoolParams::SIZE, "pooling");
        }
    }
}
