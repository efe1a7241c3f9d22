//! Reductions: sum, mean, prod, max, min, var, std, all, any, argmax and
//! argmin over one axis, several axes or every element, with `keepdim`.
//!
//! The input view goes to the kernel as it is: its axes are permuted so the
//! kept ones come first, which is a free view, and the kernel walks the
//! reduced ones through their strides.

use super::binding_parts::MAX_KERNEL_EXTENT;
use crate::backend::{Deviation, ReduceCall, Storage, reduce};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, normalize_axis};
use crate::op::ReduceOp;
use crate::shape::{MAX_RANK, Shape};
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::ops::RangeFull;

/// The most parts a GPU reduction over a view too large for one kernel or
/// binding is cut into at once (2^47 elements of a broadcast view, read
/// in 2^31-element parts).
const MAX_PARTS: usize = 1 << 16;

/// The axes a reduction runs over: `..` for every axis, one axis, or a list
/// (negative axes count from the end).
///
/// ```
/// use webtensor::{Device, Tensor};
/// let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &Device::cpu())?;
/// assert_eq!(t.sum(..)?.item::<f32>()?, 21.0);
/// assert_eq!(t.sum(-1)?.to_vec::<f32>()?, vec![6.0, 15.0]);
/// assert_eq!(t.sum_keepdim([0, 1])?.dims(), &[1, 1]);
/// # Ok::<(), webtensor::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Axes {
    /// Every axis.
    All,
    /// These axes.
    List(SmallVec<[isize; MAX_RANK]>),
}

impl From<RangeFull> for Axes {
    fn from(_: RangeFull) -> Axes {
        Axes::All
    }
}

/// An axis as given, `isize::MAX` for one past it (a usize past isize's
/// range wrapped to a negative axis: `usize::MAX` read as the last).
fn axis_of<T: TryInto<isize>>(a: T) -> isize {
    a.try_into().unwrap_or(isize::MAX)
}

macro_rules! axes_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Axes {
            fn from(a: $t) -> Axes {
                Axes::List(smallvec::smallvec![axis_of(a)])
            }
        }
        impl<const N: usize> From<[$t; N]> for Axes {
            fn from(a: [$t; N]) -> Axes {
                Axes::List(a.iter().map(|&x| axis_of(x)).collect())
            }
        }
        impl From<&[$t]> for Axes {
            fn from(a: &[$t]) -> Axes {
                Axes::List(a.iter().map(|&x| axis_of(x)).collect())
            }
        }
        impl From<Vec<$t>> for Axes {
            fn from(a: Vec<$t>) -> Axes {
                Axes::List(a.iter().map(|&x| axis_of(x)).collect())
            }
        }
    )*};
}
axes_from_int!(isize, i32, usize);

impl Axes {
    /// The axes as a sorted mask over `rank` axes. A 0-d tensor is one
    /// line of one element along axis 0 or -1, as PyTorch takes it: over
    /// it, as over `..`, nothing is reduced away.
    ///
    /// # Errors
    /// `Error::Axis` out of range, `Error::Argument` for a repeated axis.
    pub(super) fn mask(&self, op: &'static str, rank: usize) -> Result<[bool; MAX_RANK]> {
        let mut mask = [false; MAX_RANK];
        match self {
            Axes::All => mask[..rank].fill(true),
            Axes::List(axes) if rank == 0 && matches!(axes[..], [0 | -1]) => {}
            Axes::List(axes) => {
                for &a in axes {
                    let k = normalize_axis(op, a, rank)?;
                    if mask[k] {
                        return Err(Error::argument(
                            op,
                            format!("axis {a} is repeated in {axes:?}"),
                        ));
                    }
                    mask[k] = true;
                }
            }
        }
        Ok(mask)
    }
}

/// What one reduction computes: `op` (named `name` in errors) into
/// `out_dtype`, a `mean` divides the sum by the count, `keepdim` keeps the
/// reduced axes with length 1.
#[derive(Clone, Copy)]
struct Reduction {
    name: &'static str,
    op: ReduceOp,
    keepdim: bool,
    out_dtype: DType,
    mean: bool,
}

impl Tensor {
    /// Runs `op` over `axes` into a fresh tensor of `out_dtype`.
    fn reduce_into(
        &self,
        op_name: &'static str,
        op: ReduceOp,
        axes: &Axes,
        keepdim: bool,
        out_dtype: DType,
        mean: bool,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op_name));
        }
        let mask = axes.mask(op_name, self.rank())?;
        let r = Reduction {
            name: op_name,
            op,
            keepdim,
            out_dtype,
            mean,
        };
        if let Some(cut) = self.reduce_cut(&mask, out_dtype) {
            // The whole output must fit one buffer before any part runs:
            // parts fill their outputs one after another (an output of
            // 2^40 f32 grew the host's memory until the process was
            // killed, where the concatenation would have refused it).
            let outputs = (0..self.rank())
                .filter(|&k| !mask[k])
                .fold(1usize, |n, k| n.saturating_mul(self.dims()[k]));
            let (stored, per_element) = out_dtype.stored_as();
            self.device().with_place(|place| {
                Storage::check_fits(place, op_name, stored, outputs.saturating_mul(per_element))
            })?;
            return self.reduce_in_parts(r, &mask, cut);
        }
        self.reduce_masked(r, &mask, None)
    }

    /// Where to cut a GPU reduction over the axes `mask` marks into
    /// `out_dtype` that one kernel cannot take: its input spans more than
    /// one storage binding, it combines more elements per output than the
    /// kernels count, or its output outgrows a binding (see
    /// [`Tensor::output_cut`]). `None` when one kernel takes it.
    fn reduce_cut(
        &self,
        mask: &[bool; MAX_RANK],
        out_dtype: DType,
    ) -> Option<super::binding_parts::Cut> {
        self.binding_cut()
            .or_else(|| self.extent_cut(mask))
            .or_else(|| self.output_cut(mask, out_dtype))
    }

    /// Where to cut a GPU reduction whose output of `out_dtype` spans more
    /// than one storage binding while its input may fit (a sum of bool or
    /// u8 to i32, a reduction of a broadcast view): along the longest kept
    /// axis, into parts whose outputs take at most half a binding each
    /// where that axis allows (a part still larger is cut again, along
    /// another kept axis). `None` on the CPU and for outputs that fit.
    fn output_cut(
        &self,
        mask: &[bool; MAX_RANK],
        out_dtype: DType,
    ) -> Option<super::binding_parts::Cut> {
        let limit = self.gpu_binding_limit()?;
        let dims = self.dims();
        let kept = (0..self.rank()).filter(|&k| !mask[k]);
        let bytes = kept
            .clone()
            .fold(out_dtype.size_in_bytes() as u64, |n, k| {
                n.saturating_mul(dims[k] as u64)
            })
            .next_multiple_of(4);
        if bytes <= limit {
            return None;
        }
        let axis = kept.filter(|&k| dims[k] > 1).max_by_key(|&k| dims[k])?;
        let parts = bytes
            .div_ceil((limit / 2).max(1))
            .clamp(2, dims[axis] as u64) as usize;
        Some(super::binding_parts::Cut { axis, parts })
    }

    /// Where to cut a GPU reduction of more elements per output than its
    /// kernels count (in 32 bits; a broadcast view makes such sizes
    /// cheap): along the longest reduced axis, into parts of at most
    /// `MAX_KERNEL_EXTENT` elements each where that axis allows (a part
    /// still longer is cut again, along another axis). `None` on the CPU
    /// and for shorter reductions.
    fn extent_cut(&self, mask: &[bool; MAX_RANK]) -> Option<super::binding_parts::Cut> {
        let dims = self.dims();
        let reduced = (0..self.rank()).filter(|&k| mask[k]);
        let extent = reduced
            .clone()
            .fold(1usize, |n, k| n.saturating_mul(dims[k]));
        // An empty view has no element to count (an empty [2^48, 0]
        // reduces to an empty result, not to parts).
        if !self.device().is_gpu() || extent <= MAX_KERNEL_EXTENT || self.numel() == 0 {
            return None;
        }
        let axis = reduced.filter(|&k| dims[k] > 1).max_by_key(|&k| dims[k])?;
        let parts = extent.div_ceil(MAX_KERNEL_EXTENT).clamp(2, dims[axis]);
        Some(super::binding_parts::Cut { axis, parts })
    }

    /// `op` over the axes `mask` marks into a fresh tensor of `out_dtype`,
    /// one backend call (see `ReduceCall`; `center`, one value per output
    /// in row-major order, makes it a sum of deviations or their squares).
    fn reduce_masked(
        &self,
        r: Reduction,
        mask: &[bool; MAX_RANK],
        center: Option<(&Tensor, Deviation)>,
    ) -> Result<Tensor> {
        let rank = self.rank();
        let kept: SmallVec<[usize; MAX_RANK]> = (0..rank).filter(|&k| !mask[k]).collect();
        let order: SmallVec<[isize; MAX_RANK]> = kept
            .iter()
            .copied()
            .chain((0..rank).filter(|&k| mask[k]))
            .map(|k| k as isize)
            .collect();
        let input = self.layout().permute(&order)?;
        let out_shape: Shape = kept
            .iter()
            .map(|&k| self.dims()[k])
            .collect::<Vec<_>>()
            .into();
        let storage = crate::tensor::alloc_beside(self, r.name, r.out_dtype, out_shape.numel())?;
        let out = Tensor::from_parts(
            storage,
            Layout::contiguous(out_shape.clone()),
            r.out_dtype,
            self.device().clone(),
        );
        let center = match center {
            Some((c, d)) => Some((c.kernel_ref(Layout::contiguous(out_shape.clone()))?, d)),
            None => None,
        };
        reduce(ReduceCall {
            op: r.op,
            input: self.kernel_ref(input)?,
            kept: kept.len(),
            out: out.kernel_out(out.layout().clone())?,
            mean: r.mean,
            center,
        })?;
        if !r.keepdim {
            return Ok(out);
        }
        let kept_dims: Vec<usize> = (0..rank)
            .map(|k| if mask[k] { 1 } else { self.dims()[k] })
            .collect();
        out.reshape(kept_dims)
    }

    /// A reduction over a GPU view spanning more than one storage binding,
    /// as reductions of the parts of `cut` joined. Along a kept axis the
    /// parts' results are concatenated. Along a reduced axis they are
    /// stacked on a new last axis (contiguous per output, so that this
    /// second reduction needs no cut along it) and reduced again, a mean
    /// as a sum divided by the count. An arg reduction along a cut axis
    /// combines its parts' values and indices (`arg_of_parts`).
    fn reduce_in_parts(
        &self,
        r: Reduction,
        mask: &[bool; MAX_RANK],
        cut: super::binding_parts::Cut,
    ) -> Result<Tensor> {
        let rank = self.rank();
        let reduced: SmallVec<[isize; MAX_RANK]> =
            (0..rank).filter(|&k| mask[k]).map(|k| k as isize).collect();
        let axes = Axes::List(reduced.clone());
        // Each part is a kernel and a result held until the parts join: a
        // broadcast view of 2^56 elements asked for 2^25 of them (the
        // host's memory grew until the process was killed).
        if cut.parts > MAX_PARTS {
            return Err(Error::TooLarge {
                op: r.name,
                what: "parts a reduction of a view this large is cut into",
                requested: cut.parts as u64,
                limit: MAX_PARTS as u64,
            });
        }
        let parts = self.cut_parts(cut)?;
        let out_dims: Vec<usize> = (0..rank)
            .filter(|&k| r.keepdim || !mask[k])
            .map(|k| if mask[k] { 1 } else { self.dims()[k] })
            .collect();
        if !mask[cut.axis] {
            let results = parts
                .iter()
                .map(|p| p.reduce_into(r.name, r.op, &axes, true, r.out_dtype, r.mean))
                .collect::<Result<Vec<_>>>()?;
            let joined = Tensor::concat(&results.iter().collect::<Vec<_>>(), cut.axis as isize)?;
            return joined.reshape(out_dims);
        }
        if rank == MAX_RANK {
            // No axis left to stack the parts' results on.
            let (lo, hi) = self.layout().span().unwrap_or((0, 0));
            return Err(Error::TooLarge {
                op: r.name,
                what: "bytes a rank-8 view spans along its reduced axes (not split)",
                requested: ((hi - lo + 1) * self.dtype().size_in_bytes()) as u64,
                limit: self.device().info().max_storage_binding,
            });
        }
        if r.op.is_arg() {
            return Self::arg_of_parts(r.name, r.op, &parts, cut.axis, out_dims);
        }
        // Sums and products of f16 and bf16 accumulate in f32, as over
        // one part: their parts' results and the total stay f32 until the
        // end (rounded to f16, 2^16 ones a part made the mean of 2^20 ones
        // infinite).
        let half = matches!(r.out_dtype, DType::F16 | DType::BF16);
        let partial = match r.op {
            ReduceOp::Sum | ReduceOp::Prod if half => DType::F32,
            _ => r.out_dtype,
        };
        let results = parts
            .iter()
            .map(|p| p.reduce_into(r.name, r.op, &axes, true, partial, false))
            .collect::<Result<Vec<_>>>()?;
        let mut again = reduced;
        again.push(rank as isize);
        let joined = Tensor::stack(&results.iter().collect::<Vec<_>>(), rank as isize)?;
        let mut total = joined
            .reduce_into(r.name, r.op, &Axes::List(again), true, partial, false)?
            .reshape(out_dims)?;
        if r.mean {
            let count: usize = (0..rank)
                .filter(|&k| mask[k])
                .map(|k| self.dims()[k])
                .product();
            total = total.div_scalar(count as f64)?;
        }
        total.to_dtype(r.out_dtype)
    }

    /// An arg reduction over all of a view (of rank 2 or more): each row's
    /// extreme and its index along the last axis, then the first row whose
    /// extreme wins (an arg reduction over all of the fresh, hence flat,
    /// per-row extremes), whose index in the row is picked with `take`.
    /// First on ties and for NaN, in row-major order, as over all at once.
    fn arg_by_rows(&self, name: &'static str, op: ReduceOp, keepdim: bool) -> Result<Tensor> {
        let last = self.rank() - 1;
        let along = Axes::List(smallvec::smallvec![last as isize]);
        let value_op = if op == ReduceOp::ArgMax {
            ReduceOp::Max
        } else {
            ReduceOp::Min
        };
        let extremes = self.reduce_into(name, value_op, &along, false, self.dtype(), false)?;
        let within = self.reduce_into(name, op, &along, false, DType::I32, false)?;
        let row = extremes.arg_reduce(name, op, Axes::All, false)?;
        let column = within.reshape([within.numel()])?.take(&row, 0)?;
        let index = row.mul_scalar(self.dims()[last] as i64)?.add(&column)?;
        if keepdim {
            index.reshape(vec![1; self.rank()])
        } else {
            Ok(index)
        }
    }

    /// An arg reduction along `axis` from the `parts` of a cut along it:
    /// each part's extreme value and its index there (offset by where the
    /// part starts), stacked on a new last axis; the part whose value wins
    /// (the first, on ties and for NaN, as the value reductions and arg
    /// reductions agree on) gives the index. The result has `out_dims`.
    fn arg_of_parts(
        op_name: &'static str,
        op: ReduceOp,
        parts: &[Tensor],
        axis: usize,
        out_dims: Vec<usize>,
    ) -> Result<Tensor> {
        let value_op = if op == ReduceOp::ArgMax {
            ReduceOp::Max
        } else {
            ReduceOp::Min
        };
        let one = Axes::List(smallvec::smallvec![axis as isize]);
        let (mut values, mut indices) = (Vec::new(), Vec::new());
        let mut start = 0;
        for p in parts {
            values.push(p.reduce_into(op_name, value_op, &one, true, p.dtype(), false)?);
            let local = p.reduce_into(op_name, op, &one, true, DType::I32, false)?;
            indices.push(local.add_scalar(start as i64)?);
            start += p.dims()[axis];
        }
        let last = parts[0].rank();
        let values = Tensor::stack(&values.iter().collect::<Vec<_>>(), last as isize)?;
        let indices = Tensor::stack(&indices.iter().collect::<Vec<_>>(), last as isize)?;
        let along = Axes::List(smallvec::smallvec![last as isize]);
        let winner = values.reduce_into(op_name, op, &along, true, DType::I32, false)?;
        // The winning part's index, picked by elementwise ops (which bind
        // any size in windows) and a sum over the parts.
        let ks = Tensor::arange(0i32, parts.len() as i32, 1, values.device())?;
        let picked = Tensor::where_cond(&winner.eq(&ks)?, &indices, &indices.zeros_like()?)?;
        picked
            .reduce_into(op_name, ReduceOp::Sum, &along, true, DType::I32, false)?
            .reshape(out_dims)
    }

    /// Checks that every output of a reduction over `axes` covers at least
    /// one element, for the ops without an identity (max, min, arg ops).
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for an empty reduced axis.
    pub(super) fn check_not_empty(&self, op: &'static str, axes: &Axes) -> Result<()> {
        let mask = axes.mask(op, self.rank())?;
        // An empty reduced axis is refused even where the output is empty
        // too (NumPy's and PyTorch's `max(zeros([0, 0]), 1)` raise).
        let empty_reduced = (0..self.rank()).any(|k| mask[k] && self.dims()[k] == 0);
        if empty_reduced {
            return Err(Error::argument(
                op,
                format!(
                    "reduction over an empty axis of shape {} has no identity",
                    self.shape()
                ),
            ));
        }
        Ok(())
    }

    /// The number of elements each output of a reduction over `axes` covers.
    fn reduced_count(&self, op: &'static str, axes: &Axes) -> Result<usize> {
        let mask = axes.mask(op, self.rank())?;
        Ok((0..self.rank())
            .filter(|&k| mask[k])
            .map(|k| self.dims()[k])
            .product())
    }

    /// This tensor as the float dtype a mean or variance is computed in:
    /// itself for floats, an f32 copy for integers and bool.
    fn as_float(&self) -> Result<Tensor> {
        if self.dtype().is_float() {
            Ok(self.clone())
        } else {
            self.to_dtype(DType::F32)
        }
    }

    /// [`Tensor::sum`], keeping the reduced axes when `keepdim`.
    pub(crate) fn sum_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_sum(axes, keepdim, false);
        }
        self.widening_reduce("sum", ReduceOp::Sum, &axes, keepdim)
    }

    /// [`Tensor::prod`], keeping the reduced axes when `keepdim`.
    pub(crate) fn prod_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        self.widening_reduce("prod", ReduceOp::Prod, &axes, keepdim)
    }

    /// A sum or product, into i32 for bool and u32 for u8. GPU kernels read
    /// the narrow input and accumulate wide; the CPU path widens a copy
    /// first.
    fn widening_reduce(
        &self,
        name: &'static str,
        op: ReduceOp,
        axes: &Axes,
        keepdim: bool,
    ) -> Result<Tensor> {
        let wide = match self.dtype() {
            DType::Bool => DType::I32,
            DType::U8 => DType::U32,
            other => other,
        };
        if self.device().is_gpu() {
            return self.reduce_into(name, op, axes, keepdim, wide, false);
        }
        let t = self.widened()?;
        t.reduce_into(name, op, axes, keepdim, wide, false)
    }

    /// bool as i32 and u8 as u32, the dtypes sums and products run in.
    pub(super) fn widened(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::Bool => self.to_dtype(DType::I32),
            DType::U8 => self.to_dtype(DType::U32),
            _ => Ok(self.clone()),
        }
    }

    /// [`Tensor::mean`], keeping the reduced axes when `keepdim`.
    pub(crate) fn mean_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_sum(axes, keepdim, true);
        }
        if !self.dtype().is_float() && self.reduced_count("mean", &axes)? > 0 {
            return super::as_op("mean", || self.integer_mean(&axes, keepdim));
        }
        let t = self.as_float()?;
        t.reduce_into("mean", ReduceOp::Sum, &axes, keepdim, t.dtype(), true)
    }

    /// The f32 mean of integers (or bool) over `axes` (of at least one
    /// element), from their exact sum: with `m` the least element and `d`
    /// the differences from it, summed in i64, the mean is `(m + d // n) +
    /// (d % n) / n`, its parts moved to one sign (`-1 + 0.999` is `0 -
    /// 0.001`), whose integer part is exact: within an ulp. Casting
    /// each element to f32 first lost the low digits of i32 and i64 (the
    /// mean of `[-2^31, 2^31 - 1]` was 0, not -0.5). Differences wrap past
    /// 2^63, and their sum past it (a span of 2^55 over 256 elements).
    fn integer_mean(&self, axes: &Axes, keepdim: bool) -> Result<Tensor> {
        let n = self.reduced_count("mean", axes)? as i64;
        let x = self.to_dtype(DType::I64)?;
        let least = x.min_keepdim(axes.clone())?;
        let total = x.sub(&least)?.sum_axes(axes.clone(), keepdim)?;
        let whole = least
            .reshape(total.dims())?
            .add(&total.floor_divide_scalar(n)?)?;
        let rest = total.remainder_scalar(n)?;
        // Both parts of one sign, so that adding them cancels no digits:
        // -1 + 999/1000 rounded apart was 111 ulps from -0.001.
        let below_zero = whole
            .lt_scalar(0)?
            .logical_and(&rest.ne_scalar(0)?)?
            .to_dtype(DType::I64)?;
        let whole = whole.add(&below_zero)?;
        let rest = rest.sub(&below_zero.mul_scalar(n)?)?;
        whole
            .to_dtype(DType::F32)?
            .add(&rest.to_dtype(DType::F32)?.div_scalar(n as f32)?)
    }

    /// [`Tensor::max`], keeping the reduced axes when `keepdim`.
    pub(crate) fn max_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        self.check_not_empty("max", &axes)?;
        self.reduce_into("max", ReduceOp::Max, &axes, keepdim, self.dtype(), false)
    }

    /// [`Tensor::min`], keeping the reduced axes when `keepdim`.
    pub(crate) fn min_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        self.check_not_empty("min", &axes)?;
        self.reduce_into("min", ReduceOp::Min, &axes, keepdim, self.dtype(), false)
    }

    /// [`Tensor::var`], keeping the reduced axes when `keepdim`.
    pub(crate) fn var_axes(&self, axes: Axes, ddof: usize, keepdim: bool) -> Result<Tensor> {
        super::as_op("var", || self.variance(axes, ddof, keepdim, false))
    }

    /// [`Tensor::var_axes`] (its square root where `root`: computed before
    /// f16 and bf16 round, once, as PyTorch's `std`), its errors named by
    /// the ops inside.
    fn variance(&self, axes: Axes, ddof: usize, keepdim: bool, root: bool) -> Result<Tensor> {
        let count = self.reduced_count("var", &axes)?;
        let x = if self.dtype().is_half() {
            self.to_dtype(DType::F32)?
        } else if !self.dtype().is_float() {
            self.above_least(&axes, count)?
        } else {
            self.clone()
        };
        let mean = x.mean_keepdim(axes.clone())?;
        let divisor = count as f64 - ddof as f64;
        let mask = axes.mask("var", x.rank())?;
        let one_pass = x.dtype() == DType::F32 && x.reduce_cut(&mask, DType::F32).is_none();
        // The corrected two-pass sum (Chan, Golub and LeVeque): the squared
        // deviations from the mean less (sum of the deviations)^2 / n,
        // which cancels the first-order error of a mean rounded or summed
        // inexactly (integers over a large offset otherwise lose most
        // of their variance's digits), never negative.
        let (deviations, squares) = if one_pass && mean.layout().is_contiguous() {
            // Each a pass over x, the deviations made as they are read (no
            // tensor of them).
            let r = Reduction {
                name: "var",
                op: ReduceOp::Sum,
                keepdim,
                out_dtype: DType::F32,
                mean: false,
            };
            (
                x.reduce_masked(r, &mask, Some((&mean, Deviation::Plain)))?,
                x.reduce_masked(r, &mask, Some((&mean, Deviation::Squared)))?,
            )
        } else {
            let d = x.sub(&mean)?;
            let sq = d.square()?;
            (
                d.reduce_into("var", ReduceOp::Sum, &axes, keepdim, d.dtype(), false)?,
                sq.reduce_into("var", ReduceOp::Sum, &axes, keepdim, sq.dtype(), false)?,
            )
        };
        // (sum d) · (sum d / n) overflows only where the squares' sum does
        // ((sum d)^2 first made a finite variance 0); capped, as there
        // inf - inf was NaN where the sum alone gave inf.
        let largest = if x.dtype() == DType::F64 {
            f64::MAX
        } else {
            f32::MAX.into()
        };
        let correction = deviations
            .mul(&deviations.div_scalar((count as f64).max(1.0))?)?
            .minimum_scalar(largest)?;
        let var = squares
            .sub(&correction)?
            .maximum_scalar(0.0)?
            .div_scalar(divisor.max(0.0))?;
        if root {
            var.sqrt_()?;
        }
        let out_dtype = if self.dtype().is_float() {
            self.dtype()
        } else {
            DType::F32
        };
        if var.dtype() == out_dtype {
            Ok(var)
        } else {
            var.to_dtype(out_dtype)
        }
    }

    /// This integer tensor less its least element over `axes`, in f32: an
    /// exact integer center, which leaves the variance unchanged, where an
    /// f32 copy of the values would round integers past 2^24 (the Unix
    /// times of one minute) onto a few values and lose the variance whole.
    /// A signed difference past its dtype's range wraps negative: it is the
    /// unsigned difference less 2^32 (2^64), added back in f32.
    fn above_least(&self, axes: &Axes, count: usize) -> Result<Tensor> {
        // What a wrapped (negative) difference lacks, for signed dtypes.
        let wrap = match self.dtype() {
            DType::I32 => Some(2f64.powi(32)),
            DType::I64 => Some(2f64.powi(64)),
            DType::U32 => None,
            _ => return self.to_dtype(DType::F32),
        };
        if count == 0 {
            return self.to_dtype(DType::F32);
        }
        let d = self.sub(&self.min_keepdim(axes.clone())?)?;
        let f = d.to_dtype(DType::F32)?;
        match wrap {
            Some(wrap) => Tensor::where_cond(&d.lt_scalar(0)?, &f.add_scalar(wrap)?, &f),
            None => Ok(f),
        }
    }

    /// [`Tensor::std`], keeping the reduced axes when `keepdim`.
    pub(crate) fn std_axes(&self, axes: Axes, ddof: usize, keepdim: bool) -> Result<Tensor> {
        super::as_op("std", || self.variance(axes, ddof, keepdim, true))
    }

    /// [`Tensor::all`], keeping the reduced axes when `keepdim`.
    pub(crate) fn all_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        let t = self.as_bool()?;
        t.reduce_into("all", ReduceOp::Min, &axes, keepdim, DType::Bool, false)
    }

    /// [`Tensor::any`], keeping the reduced axes when `keepdim`.
    pub(crate) fn any_axes(&self, axes: Axes, keepdim: bool) -> Result<Tensor> {
        let t = self.as_bool()?;
        t.reduce_into("any", ReduceOp::Max, &axes, keepdim, DType::Bool, false)
    }

    /// Whether each element is nonzero (a complex one: either part), by
    /// its bits, as a cast to bool tests them: a float comparison on a GPU
    /// that flushes subnormals would take them for zero.
    pub(super) fn as_bool(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::Bool => Ok(self.clone()),
            DType::C64 => self
                .real()?
                .to_dtype(DType::Bool)?
                .logical_or(&self.imag()?.to_dtype(DType::Bool)?),
            _ => self.to_dtype(DType::Bool),
        }
    }

    /// [`Tensor::argmax`], keeping the reduced axes when `keepdim`.
    pub(crate) fn argmax_axes(&self, axis: Axes, keepdim: bool) -> Result<Tensor> {
        self.arg_reduce("argmax", ReduceOp::ArgMax, axis, keepdim)
    }

    /// [`Tensor::argmin`], keeping the reduced axes when `keepdim`.
    pub(crate) fn argmin_axes(&self, axis: Axes, keepdim: bool) -> Result<Tensor> {
        self.arg_reduce("argmin", ReduceOp::ArgMin, axis, keepdim)
    }

    fn arg_reduce(
        &self,
        name: &'static str,
        op: ReduceOp,
        axis: Axes,
        keepdim: bool,
    ) -> Result<Tensor> {
        if let Axes::List(list) = &axis
            && list.len() != 1
        {
            return Err(Error::argument(
                name,
                format!("takes one axis or `..`, got {list:?}"),
            ));
        }
        self.check_not_empty(name, &axis)?;
        if self.numel() > i32::MAX as usize {
            return Err(Error::TooLarge {
                op: name,
                what: "elements indexed by i32",
                requested: self.numel() as u64,
                limit: i32::MAX as u64,
            });
        }
        if matches!(axis, Axes::All) && self.rank() > 1 && self.binding_cut().is_some() {
            // Over a view spanning many bindings, along its flat view (one
            // axis, cut into parts), or row by row when it has none.
            let Some(flat) = self.layout().reshaped(&Shape::from([self.numel()])) else {
                return self.arg_by_rows(name, op, keepdim);
            };
            let index = self.with_layout(flat).reduce_into(
                name,
                op,
                &Axes::List(smallvec::smallvec![0]),
                false,
                DType::I32,
                false,
            )?;
            return if keepdim {
                index.reshape(vec![1; self.rank()])
            } else {
                Ok(index)
            };
        }
        self.reduce_into(name, op, &axis, keepdim, DType::I32, false)
    }
}
