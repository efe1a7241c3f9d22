//! Scaled dot-product attention in one pass over the keys and values
//! (`ops/nn/attention.rs`'s `sdpa`): the GPU's flash kernel
//! (`gpu/attention/`). The CPU, and a GPU for heads wider than its
//! workgroup memory holds, compose the op from products and a softmax.

use super::{Storage, TensorRef, check_bounds, gpu, live};
use crate::error::{Error, Result};

/// One attention: `out[.., h, i, :] = sum_j w_ij v[.., h / groups, j, :]`
/// with `w_i = softmax_j(scale * q[.., h, i, :] . k[.., h / groups, j, :] +
/// bias_ij)`. `q` is `[.., heads, L, E]`; `k` and `v` are `[.., heads /
/// groups, S, E]` and `[.., heads / groups, S, Ev]`, their leading axes
/// already broadcast to the queries'; `mask`, where given, is broadcast to
/// `[.., heads, L, S]`: a bool (true where a query attends a key) or an
/// additive bias of the queries' dtype; `causal` masks keys past the
/// query's position. `out` is a fresh contiguous `[.., heads, L, Ev]`. A
/// row whose scores hold NaN or +inf is NaN, as a softmax of them gives;
/// a row that attends no key has weights of 0 (PyTorch's safe softmax),
/// so its output is 0, or NaN in a column a non-finite value reaches
/// through them. Every operand has at least one element.
pub(crate) struct AttentionCall<'a> {
    pub q: TensorRef<'a>,
    pub k: TensorRef<'a>,
    pub v: TensorRef<'a>,
    pub mask: Option<TensorRef<'a>>,
    pub out: TensorRef<'a>,
    /// Query heads a key head serves (1 without grouped heads).
    pub groups: usize,
    pub causal: bool,
    pub scale: f32,
}

/// Runs an attention on the GPU's flash kernel: false (nothing recorded)
/// where its heads are wider than the device's workgroup memory holds or
/// its partial results would not fit one binding, for the op layer to
/// compose it.
///
/// # Errors
/// `Error::Internal` on the CPU (the op layer composes attention there);
/// GPU failures and device limits.
pub(crate) fn attention(call: &AttentionCall) -> Result<bool> {
    for t in [&call.q, &call.k, &call.v, &call.out]
        .into_iter()
        .chain(call.mask.as_ref())
    {
        check_bounds(t)?;
    }
    match &**call.out.storage {
        Storage::Cpu(_) => Err(Error::internal(
            "sdpa",
            "an attention kernel call reached the CPU",
        )),
        Storage::Gpu(s) => gpu::attention(live("sdpa", s)?, call),
    }
}
