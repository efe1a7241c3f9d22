//! Scaled dot-product attention, PyTorch's `scaled_dot_product_attention`
//! (its reference code: `q @ k^T * scale`, a bias of -inf where masked,
//! softmax over the keys, `@ v`), with grouped-query heads.
//!
//! On a GPU, a flash kernel (`backend::gpu::attention`: one pass over K
//! and V with an online softmax, no scores tensor; the query heads a key
//! head serves share its workgroups, so no head of K or V is copied or
//! read once per query head); f16 attention of a fragment's rows or more
//! (f32 under `MatmulPrecision::Fast`) takes the kernel's cooperative
//! form where the device has cooperative matrices, the scores and the
//! weighted values as fragment products (tensor cores), the weights
//! rounded to f16 as FlashAttention's. On the CPU,
//! and on a GPU for heads wider than the kernel's workgroup memory holds,
//! composed from batched products, one masking op and a softmax: grouped
//! heads are a reshape of the queries into (key heads, group) and a
//! broadcast axis of the keys and values. Both compute f16 and bf16 in
//! f32 and round the output once.

use super::check_float;
use crate::backend::{AttentionCall, attention};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, check_devices};
use crate::shape::{MAX_RANK, Shape, broadcast_shapes};
use crate::tensor::Tensor;

const OP: &str = "sdpa";

/// How [`Tensor::sdpa`] attends: PyTorch's `attn_mask`, `is_causal` and
/// `scale`.
#[derive(Clone, Default)]
pub struct Attention {
    mask: Option<Tensor>,
    causal: bool,
    scale: Option<f64>,
}

/// The mask's shape and dtype, not its values (printing them would read
/// them back).
impl std::fmt::Debug for Attention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mask = self
            .mask
            .as_ref()
            .map(|m| format!("{:?} {}", m.dims(), m.dtype()));
        f.debug_struct("Attention")
            .field("mask", &mask)
            .field("causal", &self.causal)
            .field("scale", &self.scale)
            .finish()
    }
}

impl Attention {
    /// Every query attends every key, scaled by `1 / sqrt(head_dim)`.
    pub fn new() -> Attention {
        Attention::default()
    }

    /// A mask broadcastable to the scores' `(..., heads, queries, keys)`:
    /// bool, true where a query attends a key, or float, added to the
    /// scores (which f16 and bf16 queries compute in f32: an f32 mask
    /// beside them is added as it is, as PyTorch's CPU kernels add it, so
    /// that -1e9 stays finite).
    pub fn mask(mut self, mask: &Tensor) -> Attention {
        self.mask = Some(mask.clone());
        self
    }

    /// PyTorch's `is_causal`: query `i` attends keys `0..=i` (the upper
    /// left triangle of the scores, also when there are more keys than
    /// queries; a decoding step with a cache masks nothing, or passes a
    /// mask).
    pub fn causal(mut self) -> Attention {
        self.causal = true;
        self
    }

    /// The scores' scale in place of `1 / sqrt(head_dim)`.
    pub fn scale(mut self, scale: f64) -> Attention {
        self.scale = Some(scale);
        self
    }
}

impl Tensor {
    /// Scaled dot-product attention of these queries `(..., heads, L, E)`
    /// over `key` `(..., kv_heads, S, E)` and `value` `(..., kv_heads, S,
    /// Ev)`: `softmax(q @ k^T * scale + bias) @ v`, of shape `(..., heads,
    /// L, Ev)`, where the bias is -inf where `attention` masks (see
    /// [`Attention`]; a bool mask's -inf is added, as PyTorch's, so a NaN
    /// or +inf score at a key it hides makes the row NaN). Grouped-query
    /// attention where `heads` is a multiple of `kv_heads` (query head `h`
    /// attends key head `h / (heads / kv_heads)`); leading axes broadcast
    /// as `matmul`'s, and so do heads that are not such groups (one of
    /// queries and keys beside several of values, say). Keys and values
    /// of different head counts that both divide `heads` are grouped each
    /// by its own (PyTorch's `enable_gqa`: query head `h` reads value
    /// head `h / (heads / v_heads)`). A row that
    /// attends no key has weights of 0, and so an output of 0, as
    /// PyTorch's (since 2.5: its safe softmax; it was NaN before); a NaN
    /// or infinite value at a key a row does not attend makes that column
    /// of the row NaN, as the reference product (`weights @ v`, 0 x inf)
    /// does.
    ///
    /// On a GPU it is a flash kernel (module docs): one or two dispatches
    /// (two per chunk where the keys are split and the partial results
    /// outgrow a binding), no `[L, S]` scores tensor; heads wider than its
    /// workgroup memory holds (past 256, or 128 on adapters with 16 KiB)
    /// and operands spanning more than one storage binding are composed
    /// from products and a softmax, as on the CPU. The flash kernel sums
    /// the weighted values before it divides by the weights' sum, as
    /// PyTorch's fused CUDA kernels do: where that sum passes f32's range
    /// (values beyond about `f32::MAX` over the keys a row attends, 1e38
    /// at 4 keys) it gives ±inf where the composed form, the CPU's and
    /// NumPy's, gives the finite mean.
    ///
    /// ```
    /// use webtensor::{Attention, DType, Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::cpu();
    /// let q = Tensor::randn([1, 8, 5, 16], DType::F32, 1, &dev)?;
    /// let k = Tensor::randn([1, 2, 5, 16], DType::F32, 2, &dev)?; // 4 query heads a key head
    /// let v = Tensor::randn([1, 2, 5, 16], DType::F32, 3, &dev)?;
    /// let out = q.sdpa(&k, &v, &Attention::new().causal())?;
    /// assert_eq!(out.dims(), &[1, 8, 5, 16]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `sdpa` for operands of other ranks or fewer
    /// than 2 axes, head sizes or key counts that differ, query heads that
    /// are not a multiple of the key's and the value's heads, or a mask
    /// that does not broadcast to the scores; `Error::DType` for operands
    /// of different or non-float dtypes, or a mask neither bool nor float;
    /// `Error::Argument` for a mask with `causal` (as PyTorch documents);
    /// `Error::DeviceMismatch`.
    pub fn sdpa(&self, key: &Tensor, value: &Tensor, attention: &Attention) -> Result<Tensor> {
        let _region = crate::profile_region::op(OP);
        self.attend(key, value, attention).map_err(|e| e.named(OP))
    }

    /// [`Tensor::sdpa`], whose parts' errors name their own ops.
    fn attend(&self, key: &Tensor, value: &Tensor, attention: &Attention) -> Result<Tensor> {
        let (q, k, v) = (self, key, value);
        let mut args = vec![Arg::Tensor(k), Arg::Tensor(v)];
        if let Some(m) = &attention.mask {
            args.push(Arg::Tensor(m));
        }
        check_devices(OP, q, &args)?;
        check_float(OP, q.dtype())?;
        if k.dtype() != q.dtype() || v.dtype() != q.dtype() {
            return Err(Error::dtype(
                OP,
                format!(
                    "query, key and value are {}, {} and {}; give them one dtype",
                    q.dtype(),
                    k.dtype(),
                    v.dtype()
                ),
            ));
        }
        let rank = q.rank();
        let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
        let shape_error = |msg: String| Error::shape(OP, msg);
        if rank < 2 || k.rank() != rank || v.rank() != rank {
            return Err(shape_error(format!(
                "query {qd:?}, key {kd:?} and value {vd:?} must have one rank of at least 2"
            )));
        }
        // The axes before the heads broadcast (as matmul's), all three.
        let (q, k, v) = &if rank > 3 {
            let lead = |t: &Tensor| Shape::from(&t.dims()[..rank - 3]);
            let common = broadcast_shapes(&broadcast_shapes(&lead(q), &lead(k))?, &lead(v))
                .map_err(|_| {
                    shape_error(format!(
                        "the leading axes of query {qd:?}, key {kd:?} and value {vd:?} do not broadcast"
                    ))
                })?;
            let to = |t: &Tensor| -> Result<Tensor> {
                let mut dims = common.dims().to_vec();
                dims.extend_from_slice(&t.dims()[rank - 3..]);
                t.broadcast_to(dims)
            };
            (to(q)?, to(k)?, to(v)?)
        } else {
            (q.clone(), k.clone(), v.clone())
        };
        // Heads that are not groups (the queries' a multiple of the keys'
        // and values' alike) broadcast, as any other leading axis
        // (PyTorch's `q (1, L, E)` with `k (4, S, E)`, or `v (4, S, Ev)`
        // beside one head of queries and keys).
        let (q, k, v) = &match rank >= 3 {
            true => {
                let h = |t: &Tensor| t.dims()[rank - 3];
                let (hq, hk, hv) = (h(q), h(k), h(v));
                let grouped = hk == hv && hk > 0 && hq.is_multiple_of(hk);
                let most = hq.max(hk).max(hv);
                let broadcasts = [hq, hk, hv].iter().all(|&n| n == 1 || n == most);
                let to = |t: &Tensor| -> Result<Tensor> {
                    let mut dims = t.dims().to_vec();
                    dims[rank - 3] = most;
                    t.broadcast_to(dims)
                };
                // Keys and values of different groups of the queries'
                // heads (PyTorch's enable_gqa: query head `h` reads key
                // head `h / (hq / hk)` and value head `h / (hq / hv)`)
                // repeat each head to their least common multiple, which
                // groups the queries' heads.
                let regroup =
                    hk != hv && hk > 0 && hv > 0 && hq.is_multiple_of(hk) && hq.is_multiple_of(hv);
                match (!grouped && broadcasts, regroup) {
                    (true, _) => (to(q)?, to(k)?, to(v)?),
                    (false, true) => {
                        let heads = hk / gcd(hk, hv) * hv;
                        (q.clone(), repeat_heads(k, heads)?, repeat_heads(v, heads)?)
                    }
                    (false, false) => (q.clone(), k.clone(), v.clone()),
                }
            }
            false => (q.clone(), k.clone(), v.clone()),
        };
        let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
        let (e, s) = (qd[rank - 1], kd[rank - 2]);
        if kd[rank - 1] != e || vd[rank - 2] != s {
            return Err(shape_error(format!(
                "query {qd:?}, key {kd:?} and value {vd:?}: the key's head size must be the \
                 query's and the value's length the key's"
            )));
        }
        let groups = if rank >= 3 && qd[rank - 3] != kd[rank - 3] {
            let (hq, hk) = (qd[rank - 3], kd[rank - 3]);
            if hk == 0 || vd[rank - 3] != hk || !hq.is_multiple_of(hk) {
                return Err(shape_error(format!(
                    "{hq} query heads are not groups of the key's and value's heads ({kd:?}, \
                     {vd:?})"
                )));
            }
            Some((hk, hq / hk))
        } else {
            None
        };
        if attention.causal && attention.mask.is_some() {
            return Err(Error::argument(
                OP,
                "a mask and causal together: PyTorch documents them as an error; fold the triangle into the mask",
            ));
        }
        // Heads of nothing make every score an empty sum, 0, whatever the
        // scale (PyTorch scales the empty operands: no 0 x inf NaN).
        let scale = match e {
            0 => 1.0,
            _ => attention.scale.unwrap_or(1.0 / (e as f64).sqrt()),
        };
        // Masks broadcast to the scores, (..., heads, L, S).
        let mut scores_dims = qd[..rank - 1].to_vec();
        scores_dims.push(s);
        let mask = match &attention.mask {
            Some(m) if m.dtype() != DType::Bool && !m.dtype().is_float() => {
                return Err(Error::dtype(
                    OP,
                    format!("the mask is {}: give a bool mask or a float one", m.dtype()),
                ));
            }
            Some(m) => Some(m.broadcast_to(scores_dims.clone()).map_err(|_| {
                shape_error(format!(
                    "the mask {:?} does not broadcast to the scores {scores_dims:?}",
                    m.dims()
                ))
            })?),
            None => None,
        };
        let group = groups.map_or(1, |(_, g)| g);
        // The flash kernel reads a float mask in the queries' dtype: one of
        // another (an f32 mask beside f16 queries) is added in the
        // composed form's compute type, unrounded.
        let kernel_mask = mask
            .as_ref()
            .is_none_or(|m| m.dtype() == DType::Bool || m.dtype() == q.dtype());
        if kernel_mask
            && let Some(out) = flash(q, k, v, mask.as_ref(), attention.causal, group, scale)?
        {
            return Ok(out);
        }
        composed(q, k, v, mask.as_ref(), attention.causal, groups, scale)
    }
}

/// `t` `(..., h, S, E)` with each head repeated to `heads` (a multiple of
/// `h`) in order: head `j` of the result is head `j / (heads / h)` of
/// `t` (a view where `t` has one head; gathered at [`MAX_RANK`], where the
/// repeats' axis would be one too many).
fn repeat_heads(t: &Tensor, heads: usize) -> Result<Tensor> {
    let rank = t.rank();
    let h = t.dims()[rank - 3];
    if h == heads {
        return Ok(t.clone());
    }
    if rank == MAX_RANK {
        let of = (0..heads as i64).map(|j| j / (heads / h) as i64).collect();
        let index = Tensor::from_vec(of, [heads], t.device())?;
        return t.index_select(&index, -3);
    }
    let mut spread = t.dims().to_vec();
    spread.insert(rank - 2, heads / h);
    let mut dims = t.dims().to_vec();
    dims[rank - 3] = heads;
    t.unsqueeze(rank as isize - 2)?
        .broadcast_to(spread)?
        .reshape(dims)
}

/// The greatest common divisor of `a` and `b`.
fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Attention on a GPU's flash kernel (`backend::gpu::attention`): `None`
/// on the CPU, for empty operands, keys and values whose leading axes do
/// not broadcast to the queries', views over more than one binding, or
/// heads wider than the kernel's workgroup memory holds.
fn flash(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    groups: usize,
    scale: f64,
) -> Result<Option<Tensor>> {
    let kernel_dtype = matches!(q.dtype(), DType::F32 | DType::F16 | DType::BF16);
    if !q.device().is_gpu() || !kernel_dtype || [q, k, v].iter().any(|t| t.numel() == 0) {
        return Ok(None);
    }
    let rank = q.rank();
    // Keys and values over the queries' leading axes and the keys' heads
    // (a value of one head serves them all, as the composed product
    // broadcasts it).
    let mut lead = q.dims()[..rank.saturating_sub(3)].to_vec();
    if rank >= 3 {
        lead.push(k.dims()[rank - 3]);
    }
    let expand = |t: &Tensor| {
        let mut dims = lead.clone();
        dims.extend_from_slice(&t.dims()[rank - 2..]);
        t.broadcast_to(dims).ok()
    };
    let (Some(k), Some(v)) = (expand(k), expand(v)) else {
        return Ok(None);
    };
    if [q, &k, &v]
        .into_iter()
        .chain(mask)
        .any(|t| t.binding_cut().is_some())
    {
        return Ok(None);
    }
    let mut out_dims = q.dims()[..rank - 1].to_vec();
    out_dims.push(v.dims()[rank - 1]);
    let out = Tensor::empty_dense(out_dims.into(), q.dtype(), q.device(), OP)?;
    if out.binding_cut().is_some() {
        return Ok(None);
    }
    fn kernel(t: &Tensor) -> Result<crate::backend::TensorRef<'_>> {
        t.kernel_ref(t.layout().clone())
    }
    let done = attention(&AttentionCall {
        q: kernel(q)?,
        k: kernel(&k)?,
        v: kernel(&v)?,
        mask: mask.map(kernel).transpose()?,
        out: out.kernel_out(out.layout().clone())?,
        groups,
        causal,
        scale: scale as f32,
    })?;
    Ok(done.then_some(out))
}

/// Attention composed from batched products, a masking op and a softmax
/// (the CPU's, and a GPU's where the flash kernel does not take the
/// operands), in f32 for f16 and bf16 as the flash kernel computes: the
/// output is rounded once. `mask` is broadcast to the scores.
fn composed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    groups: Option<(usize, usize)>,
    scale: f64,
) -> Result<Tensor> {
    let dtype = q.dtype();
    let compute = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let (q, k, v) = (
        q.to_dtype(compute)?,
        k.to_dtype(compute)?,
        v.to_dtype(compute)?,
    );
    let rank = q.rank();
    let (qd, vd) = (q.dims().to_vec(), v.dims().to_vec());
    let (l, e, s) = (qd[rank - 2], qd[rank - 1], vd[rank - 2]);
    // Grouped: queries (..., kv_heads, group, L, E) against keys and
    // values (..., kv_heads, 1, S, E), a broadcast axis.
    // At MAX_RANK, where that axis is one too many, the keys' and values'
    // heads repeated instead.
    let (q, k, v) = match groups {
        Some((hk, g)) if rank < MAX_RANK => {
            let mut grouped = qd[..rank - 3].to_vec();
            grouped.extend([hk, g, l, e]);
            (q.reshape(grouped)?, k.unsqueeze(-3)?, v.unsqueeze(-3)?)
        }
        Some((hk, g)) => (q, repeat_heads(&k, hk * g)?, repeat_heads(&v, hk * g)?),
        None => (q, k, v),
    };
    let scores = q.matmul(&k.transpose(-1, -2)?)?.mul_scalar(scale)?;
    let grouped_shape = scores.shape().clone();
    let mut heads_shape = qd[..rank - 1].to_vec();
    heads_shape.push(s);
    let scores = scores.reshape(heads_shape)?;
    let dev = scores.device().clone();
    let scores = if causal {
        let above = Tensor::ones([l, s], DType::Bool, &dev)?.triu(1)?;
        scores.masked_fill(&above, f64::NEG_INFINITY)?
    } else if let Some(mask) = mask {
        if mask.dtype() == DType::Bool {
            // Added as PyTorch adds it, not filled: a masked NaN score
            // stays NaN.
            let bias = Tensor::zeros(mask.dims(), scores.dtype(), &dev)?
                .masked_fill(&mask.logical_not()?, f64::NEG_INFINITY)?;
            scores.add(&bias)?
        } else {
            scores.add(&mask.to_dtype(compute)?)?
        }
    } else {
        scores
    };
    // PyTorch's safe softmax: a row of -inf scores alone (it attends no
    // key) has weights of 0, not NaN.
    let weights = scores.softmax(-1)?;
    let weights = if s > 0 {
        let nothing = scores.max_keepdim(-1)?.eq_scalar(f64::NEG_INFINITY)?;
        weights.masked_fill(&nothing, 0.0)?
    } else {
        weights
    };
    let weights = weights.reshape(grouped_shape)?;
    let out = weights.matmul(&v)?;
    let mut out_shape = qd[..rank - 1].to_vec();
    out_shape.push(vd[rank - 1]);
    out.reshape(out_shape)?.to_dtype(dtype)
}
