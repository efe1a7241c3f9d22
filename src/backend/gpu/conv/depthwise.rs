//! The depthwise convolution kernel (`conv/depthwise.wgsl`): a thread per
//! four outputs of a row (`kernel::grid::row_segments`), each output's
//! channel's taps read where they lie in the input, the padding implied,
//! the bias added before the one rounding; one dispatch
//! where the composed form took a padded copy, a zero fill and a
//! multiply-add pass per tap.

use crate::backend::DepthwiseCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{buffer_decl, io_parts, load_fn, needs_f16};
use crate::backend::gpu::kernel::grid::{ROW_OUTPUTS, grid, row_segments};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const DEPTHWISE_WGSL: &str = shader!("conv/depthwise.wgsl");

params_block! {
    /// `Params` of depthwise.wgsl.
    pub(crate) struct DepthwiseParams {
        /// Threads, each writing up to `ROW_OUTPUTS` outputs of a row.
        threads: u32,
        row_threads: u32,
        /// Always 0 (see `kept` in depthwise.wgsl).
        zero: u32,
        /// Output channels, and output channels per input channel.
        channels: u32,
        per_group: u32,
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
        /// The input's strides: image, channel, row, column.
        x_ns: i32,
        x_cs: i32,
        x_hs: i32,
        x_ws: i32,
        w_offset: u32,
        bias_offset: u32,
        out_offset: u32,
        /// A row's outputs over the outputs a thread writes, rounded up.
        segment: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Everything that selects a distinct depthwise pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DepthwiseKey {
    /// The input's, the weights' and the output's: f32, f16 or bf16.
    pub dtype: KernelType,
    pub native_f16: bool,
    pub bias: bool,
}

family_key!(DepthwiseKey, "webtensor depthwise conv", depthwise_source);

/// The WGSL source of the depthwise kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn depthwise_source(key: &DepthwiseKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let [mut bindings, mut access] = io_parts(&["x", "w"], dtype, native);
    let mut bias = "";
    if key.bias {
        bindings.push_str(&buffer_decl(4, "bias", KernelType::F32, native, false));
        access.push_str(&load_fn("load_bias", "bias", KernelType::F32, native));
        bias = "acc = acc + load_bias(params.bias_offset + k);";
    }
    let outs = format!("const OUTS: u32 = {ROW_OUTPUTS}u;");
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("BIAS", bias),
        ("OUTS", outs.as_str()),
    ];
    let (f16, params) = (needs_f16(dtype, native), DepthwiseParams::wgsl());
    fill_kernel("depthwise kernel", DEPTHWISE_WGSL, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for an
/// output over one dispatch's grid or an operand view over one storage
/// binding (the op layer composes those convolutions).
pub(crate) fn depthwise(out: &GpuStorage, call: &DepthwiseCall) -> Result<()> {
    const OP: &str = "conv2d";
    if call.activation.is_some() {
        return Err(Error::internal(
            OP,
            "the GPU's depthwise kernel takes no activation (the op layer applies it)",
        ));
    }
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    let dtype = call.out.dtype;
    let float = matches!(dtype, KernelType::F32 | KernelType::F16 | KernelType::BF16);
    let bias_f32 = call
        .bias
        .as_ref()
        .is_none_or(|b| b.dtype == KernelType::F32);
    if !float || call.input.dtype != dtype || call.weight.dtype != dtype || !bias_f32 {
        return Err(Error::internal(
            OP,
            "the depthwise kernel got dtypes it does not take",
        ));
    }
    let (x_bound, x) = Bound::view(OP, call.input.clone(), false)?;
    let (w_bound, w) = Bound::view(OP, call.weight.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let mut bindings = smallvec![x_bound, w_bound, out_bound];
    let mut bias_offset = 0;
    if let Some(b) = &call.bias {
        let (b_bound, b) = Bound::view(OP, b.clone(), false)?;
        bindings.push(b_bound);
        bias_offset = b.layout.offset() as u32;
    }
    let (xd, xs) = (x.layout.dims(), x.layout.strides());
    let o = dest.layout.dims();
    let (segment, threads) = row_segments(OP, &dest.layout)?;
    let groups = grid(threads, ctx.facts.max_workgroups_per_dim)?;
    let key = DepthwiseKey {
        dtype,
        native_f16: ctx.facts.native_f16,
        bias: call.bias.is_some(),
    };
    // The op layer checked every extent, padded extent and kernel reach
    // against 2^31 - 1 (ops/windows.rs): these fit the kernel's i32.
    let params = DepthwiseParams {
        threads: threads as u32,
        row_threads: groups[0] * 64,
        channels: o[1] as u32,
        per_group: (o[1] / xd[1]) as u32,
        in_h: xd[2] as u32,
        in_w: xd[3] as u32,
        out_h: o[2] as u32,
        out_w: o[3] as u32,
        kernel_h: call.kernel[0] as u32,
        kernel_w: call.kernel[1] as u32,
        stride_h: call.stride[0] as u32,
        stride_w: call.stride[1] as u32,
        pad_h: call.pad[0] as u32,
        pad_w: call.pad[1] as u32,
        dil_h: call.dilation[0] as u32,
        dil_w: call.dilation[1] as u32,
        x_offset: x.layout.offset() as u32,
        x_ns: xs[0] as i32,
        x_cs: xs[1] as i32,
        x_hs: xs[2] as i32,
        x_ws: xs[3] as i32,
        w_offset: w.layout.offset() as u32,
        bias_offset,
        out_offset: dest.layout.offset() as u32,
        segment: segment as u32,
        ..bytemuck::Zeroable::zeroed()
    };
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
    fn every_depthwise_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            for bias in [false, true] {
                let key = DepthwiseKey {
                    dtype,
                    native_f16,
                    bias,
                };
                let source = depthwise_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(
                    &source,
                    DepthwiseParams::FIELDS,
                    DepthwiseParams::SIZE,
                    "depthwise",
                );
            }
        }
    }
}
