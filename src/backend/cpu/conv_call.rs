//! A convolution call on the CPU (all but depthwise): its operands locked,
//! its residual found (a tensor's values, or the values its output holds),
//! and its output's layout sending it to the channels-last pixel kernels
//! (`conv_nhwc.rs`) or to the planes' products (`conv_gemm.rs`).

use super::conv_nhwc::{Extras, ResidualAt};
use super::storage::{Bias, CpuData, CpuStorage, Reads};
use crate::backend::{ConvCall, ConvResidual};
use crate::error::{Error, Result};

const OP: &str = "conv2d";

fn mismatch() -> Error {
    Error::internal(OP, "convolution operands' dtypes differ from the call's")
}

/// Runs `call`, whose dense `[n, o, ho, wo]` output (or a channels-last
/// one with rows apart, `conv_nhwc::pitched_out`) storage is `out`, on
/// this thread, its bands split over the op's pool (where there are two or
/// more: a convolution of one band never wakes the pool). The output is
/// fresh, but where the residual is the values it holds
/// ([`ConvResidual::InOutput`]).
///
/// # Errors
/// `Error::Internal` for operands whose dtypes differ from the call's, a
/// residual that is not of the channels-last f32 output's dims and
/// strides, or an output holding its residual that an operand shares; as
/// the kernels for layouts they do not take.
pub(crate) fn conv(out: &CpuStorage, call: &ConvCall) -> Result<()> {
    let in_output = matches!(call.residual, Some(ConvResidual::InOutput));
    let residual = call.residual.as_ref().and_then(ConvResidual::tensor);
    let operands = [
        Some(&call.input),
        Some(&call.weight),
        call.bias.as_ref(),
        residual,
    ];
    // An output that is its own residual is read and written under its
    // write lock alone: no operand read may share its storage.
    for t in operands.iter().flatten() {
        if in_output && std::ptr::eq(t.storage.host(OP)?, out) {
            return Err(Error::internal(
                OP,
                "an output holding its residual is an operand too",
            ));
        }
    }
    let reads = Reads::lock(OP, &operands)?;
    let (x, w) = (reads.of(OP, &call.input)?, reads.of(OP, &call.weight)?);
    let bias = Bias::of(&reads, OP, call.bias.as_ref())?;
    let bias = bias.values(OP)?;
    let values = Bias::of(&reads, OP, residual)?;
    let values = values.values(OP)?;
    let mut dst = out.write();
    let pixels = super::conv_nhwc::channels_last_out(&call.out.layout, &call.input.layout)
        || super::conv_nhwc::pitched_out(&call.out.layout);
    // A residual only into a channels-last f32 output of its dims and
    // strides (the pixel kernels add it in registers; planes' tiles adding
    // it row by row ran a network slower than one pass after them).
    let residual = match (&call.residual, values) {
        (None, _) => None,
        (Some(ConvResidual::InOutput), _) => Some(ResidualAt::Output),
        (Some(ConvResidual::Tensor(r)), Some(v))
            if r.layout.dims() == call.out.layout.dims()
                && r.layout.strides() == call.out.layout.strides()
                && v.len() >= dst.len() =>
        {
            Some(ResidualAt::Values(v))
        }
        (Some(ConvResidual::Tensor(_)), _) => return Err(residual_misfit()),
    };
    if residual.is_some() && !(pixels && matches!(&*dst, CpuData::F32(_))) {
        return Err(residual_misfit());
    }
    // The weight's storage keeps its packed panels (`kept_weights.rs`).
    let weights = call.weight.storage.host(OP)?;
    macro_rules! run {
        ($x:expr, $w:expr, $o:expr) => {
            if pixels {
                let extras = Extras {
                    bias,
                    residual,
                    weights,
                };
                super::conv_nhwc::images($x, $w, extras, $o, call)
            } else {
                super::conv_gemm::images(($x, $w), (bias, weights), $o, call)
            }
        };
    }
    match (x, w, &mut *dst) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(o)) => run!(x, w, o),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(o)) => run!(x, w, o),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(o)) => run!(x, w, o),
        _ => Err(mismatch()),
    }
}

fn residual_misfit() -> Error {
    Error::internal(
        OP,
        "a residual is added in the kernel only into a channels-last f32 output of its dims and \
         strides",
    )
}
