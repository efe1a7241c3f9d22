//! A transposed convolution on a GPU's one kernel (`gpu/conv/transposed.rs`):
//! each output phase a stride-1 product over only the taps that reach it,
//! the weight and the input read through their strides, the output written
//! where it lies. The bias, a residual and the activation are the caller's.

use super::conv_args::Conv;
use crate::backend::ConvCall;
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Most taps the kernel tries on one axis to find a phase's first (it
/// does so three times a thread, beside its k loop): lavapipe stops a
/// thread's loops silently past 65,535 iterations (`loop_budget.rs`), and
/// phases past about 21,800 of a stride of 30,000 were written as 0.
const PHASE_SEARCH: usize = 2048;

/// The geometry of a transposed convolution the op layer has checked: the
/// kernel's taps, the stride, the dilation, the padding cropped from each
/// side, and the output's `[n, o, h, w]`.
pub(super) struct Transposed {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub pad: [usize; 2],
    pub out: [usize; 4],
}

/// The output of `x` by `weight` (`[in, out / groups, kh, kw]`) on the
/// GPU's kernel, before the bias, residual and activation, in the dtype
/// the kernel computes (f32, or the f16 / bf16 of both operands without a
/// bias or a residual); `None` where the kernel does not take it (another
/// dtype, an empty operand, an operand over one binding, strides and kernels both
/// past [`PHASE_SEARCH`] on an axis, a kernel its self-check dropped), for
/// the caller to compose.
///
/// # Errors
/// GPU failures and device limits, naming `op`.
pub(super) fn on_kernel(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
    geometry: &Transposed,
) -> Result<Option<Tensor>> {
    let dtype = match Tensor::result_type(x, weight)? {
        // A bias and a residual are added to the f32 result before its
        // one rounding, and slices of k past the first add to an f32
        // output (a phase has at most the group's channels times the
        // taps).
        DType::F16 | DType::BF16
            if conv.bias.is_some()
                || conv.residual.is_some()
                || super::conv::sliced(
                    x,
                    weight.dims()[0] / conv.groups * geometry.kernel.iter().product::<usize>(),
                ) =>
        {
            DType::F32
        }
        d @ (DType::F16 | DType::BF16 | DType::F32) => d,
        _ => return Ok(None),
    };
    if !x.device().is_gpu() || x.numel() == 0 || weight.numel() == 0 {
        return Ok(None);
    }
    // Along an axis of one input pixel the stride places nothing: one of
    // the output's extent gives the same output in fewer phases (strides
    // of 65536 each way made 2^32 phases, past the kernel's u32 count).
    let stride = [0, 1].map(|a| match x.dims()[2 + a] {
        1 => geometry.stride[a].min(geometry.out[2 + a].max(1)),
        _ => geometry.stride[a],
    });
    let batches =
        (stride[0].checked_mul(stride[1])).and_then(|p| p.checked_mul(x.dims()[0] * conv.groups));
    let in_u32 = |v: &usize| i32::try_from(*v).is_ok();
    // A thread finds its phase's first tap by trying up to min(kernel,
    // stride) taps on each axis, three times: within the loop budget.
    let searched = (0..2).all(|a| geometry.kernel[a].min(stride[a]) <= PHASE_SEARCH);
    let fits = batches.is_some_and(|b| u32::try_from(b).is_ok())
        && searched
        && [stride, geometry.pad, geometry.dilation, geometry.kernel]
            .iter()
            .all(|v| v.iter().all(in_u32));
    if !fits {
        return Ok(None);
    }
    let (x, weight) = (x.to_dtype(dtype)?, weight.to_dtype(dtype)?);
    let out = Tensor::empty_dense(Shape::from(geometry.out.to_vec()), dtype, x.device(), op)?;
    if [&x, &weight, &out]
        .iter()
        .any(|t| t.binding_cut().is_some())
    {
        return Ok(None);
    }
    let ran = crate::backend::conv_transpose(&ConvCall {
        input: x.kernel_ref(x.layout().clone())?,
        weight: weight.kernel_ref(weight.layout().clone())?,
        out: out.kernel_out(out.layout().clone())?,
        kernel: geometry.kernel,
        stride,
        pad: geometry.pad,
        dilation: geometry.dilation,
        groups: conv.groups,
        bias: None,
        activation: None,
        residual: None,
    })?;
    Ok(ran.then_some(out))
}
