//! Indexing that copies: take, index_select and gather read through an
//! index tensor; scatter and scatter_add write through one; masked_fill
//! writes a value where a bool mask is set.
//!
//! Index tensors hold i32, i64 (NumPy's and PyTorch's default) or u32. A
//! signed index may be negative and then counts from the end of the axis
//! (NumPy), so the valid range is `-size..size` for i32 and i64 and
//! `0..size` for u32.
//!
//! Out-of-range indices: on the CPU the op returns `Error::Index`. On the
//! GPU the indices are not on the host, so the kernel checks them: a read
//! of an out-of-range index gives 0, a write is skipped, and the next
//! readback from that device (`to_vec`, `item`, `to_device`, `sync`)
//! returns `Error::Index` naming the op, the first bad index and the axis.

use super::binding_parts::{IndexedPart, for_each_indexed_part};
use super::{Arg, check_devices, check_same_dtype};
use crate::backend::{GatherCall, IndexedAxis, ScatterCall, gather, scatter};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, normalize_axis};
use crate::op::{ElementwiseOp, IndexOp};
use crate::scalar::{Scalar, TypedScalar};
use crate::shape::{DimVec, Shape};
use crate::tensor::Tensor;

impl Tensor {
    /// Elements picked along `axis` by `index` of any shape (NumPy's
    /// `take` with an axis): the result's shape is this shape with `axis`
    /// replaced by the index's shape.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let dev = Device::cpu();
    /// let t = Tensor::from_slice(&[10.0f32, 11.0, 12.0, 13.0], [4], &dev)?;
    /// let i = Tensor::from_slice(&[3i32, -4, 1], [3], &dev)?;
    /// assert_eq!(t.take(&i, 0)?.to_vec::<f32>()?, vec![13.0, 10.0, 11.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::DType` for an index that is not i32, i64 or u32, or a c64
    /// tensor (take its `real` and `imag` parts); `Error::Axis`;
    /// `Error::Shape` above the maximum rank; `Error::Index` for an
    /// out-of-range index (see the module docs for the GPU), and at once
    /// for any index into an empty axis (`size` 0, `index` 0: no index is
    /// read; nor where an axis before `axis` makes the result empty, as
    /// NumPy's `take`, where PyTorch's `index_select` checks them);
    /// `Error::DeviceMismatch`; `Error::TooLarge` on a GPU
    /// for an axis past 2^31 - 1 elements (its indices resolve in i32; only
    /// a broadcast view is that long there).
    pub fn take(&self, index: &Tensor, axis: isize) -> Result<Tensor> {
        self.take_as(IndexOp::Take, index, axis)
    }

    /// Slices along `axis` picked by the 1-D `index` (PyTorch's
    /// `index_select`); the result keeps the rank. As PyTorch's, a 0-d
    /// index is one of one element, and a 0-d tensor is one of one element
    /// along axis 0 or -1 (its result is 0-d, its index of one element).
    ///
    /// # Errors
    /// As [`Tensor::take`], and `Error::Shape` unless `index` is 1-D or 0-d
    /// (of one element for a 0-d tensor).
    pub fn index_select(&self, index: &Tensor, axis: isize) -> Result<Tensor> {
        const OP: &str = "index_select";
        if index.rank() > 1 || (self.rank() == 0 && index.numel() != 1) {
            return Err(Error::shape(
                OP,
                format!(
                    "the index must be 1-D (of one element for a 0-d tensor), it has shape {}",
                    index.shape()
                ),
            ));
        }
        let index = &as_one_axis(index)?;
        if self.rank() == 0 {
            normalize_axis(OP, axis, 1)?;
            return as_one_axis(self)?
                .take_as(IndexOp::IndexSelect, index, 0)?
                .squeeze_axis(0);
        }
        self.take_as(IndexOp::IndexSelect, index, axis)
    }

    fn take_as(&self, op: IndexOp, index: &Tensor, axis: isize) -> Result<Tensor> {
        let name = op.name();
        let index = self.check_index(name, index)?;
        let a = normalize_axis(name, axis, self.rank())?;
        let (pre, post) = (&self.dims()[..a], &self.dims()[a + 1..]);
        let out_dims: Vec<usize> = [pre, index.dims(), post].concat();
        let shape = Shape::from(out_dims);
        shape.check(name)?;
        if post.contains(&0) && !pre.contains(&0) && index.numel() > 0 {
            // An empty result that an axis after `axis` empties: NumPy
            // checks the indices (only an axis before skips them), so
            // they are taken from a line along `axis`, checked as every
            // take's (at once on the CPU, at the next readback on a GPU).
            // The line is one zero broadcast: a line of the axis's length
            // took memory in proportion (2^40 bytes for an empty [2^40, 0]).
            let mut dims = vec![1; a];
            dims.push(self.dims()[a]);
            let line =
                Tensor::zeros(vec![1; a + 1], DType::U8, self.device())?.broadcast_to(dims)?;
            line.take_as(op, &index, a as isize)?;
        }
        // The source and the index as layouts over the output's coordinates.
        let zeros = |n: usize| std::iter::repeat_n(0isize, n);
        let s = self.strides();
        let src_strides: DimVec<isize> = s[..a]
            .iter()
            .copied()
            .chain(zeros(index.rank()))
            .chain(s[a + 1..].iter().copied())
            .collect();
        let index_strides: DimVec<isize> = zeros(a)
            .chain(index.strides().iter().copied())
            .chain(zeros(post.len()))
            .collect();
        let src = Layout::from_parts(shape.clone(), src_strides, self.offset());
        let idx = Layout::from_parts(shape.clone(), index_strides, index.offset());
        self.gather_into(op, shape, src, &index, idx, a)
    }

    /// Elements picked along `axis` by an index of the same rank (PyTorch's
    /// `gather`): `out[i][j] = self[index[i][j]][j]` for axis 0. The result
    /// has the index's shape, which may be smaller than this one except
    /// along `axis`.
    ///
    /// As PyTorch's, a 0-d tensor or index is one of one element (axis 0
    /// or -1); the result has the index's shape.
    ///
    /// # Errors
    /// As [`Tensor::take`], and `Error::Shape` when the ranks differ (but
    /// for a 0-d operand beside a 1-D one) or the index is larger than this
    /// tensor along another axis.
    pub fn gather(&self, index: &Tensor, axis: isize) -> Result<Tensor> {
        const OP: &str = "gather";
        if (self.rank() == 0 || index.rank() == 0) && self.rank().max(index.rank()) <= 1 {
            normalize_axis(OP, axis, 1)?;
            let out = as_one_axis(self)?.gather(&as_one_axis(index)?, 0)?;
            return out.reshape(index.dims());
        }
        let index = self.check_index(OP, index)?;
        let a = normalize_axis(OP, axis, self.rank())?;
        check_index_fits(OP, &index, self, Some(a), "this tensor")?;
        let mut strides: DimVec<isize> = self.strides().iter().copied().collect();
        strides[a] = 0;
        let src = Layout::from_parts(index.shape().clone(), strides, self.offset());
        let idx = index.layout().clone();
        self.gather_into(IndexOp::Gather, index.shape().clone(), src, &index, idx, a)
    }

    /// Runs a gather into a fresh tensor of `shape`, reading this tensor
    /// through `src` and `index` through `idx` (both over `shape`).
    fn gather_into(
        &self,
        op: IndexOp,
        shape: Shape,
        src: Layout,
        index: &Tensor,
        idx: Layout,
        axis: usize,
    ) -> Result<Tensor> {
        let out = Tensor::empty_dense(shape, self.dtype(), self.device(), op.name())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        check_axis_not_empty(op.name(), self, axis)?;
        let (size, stride) = (self.dims()[axis], self.strides()[axis]);
        // Operands larger than one storage binding go in parts.
        let whole = IndexedPart {
            views: &[out.clone(), index.with_layout(idx)],
            target: &self.with_layout(src.with_last_axis(size, stride)),
            first: 0,
        };
        for_each_indexed_part(whole, &mut |part| {
            let [out, index] = part.views else {
                return Err(Error::internal(op.name(), "a gather part has two views"));
            };
            let src = part.target.layout().without_last_axis();
            gather(&GatherCall {
                op,
                src: part.target.kernel_ref(src)?,
                index: index.kernel_ref(index.layout().clone())?,
                out: out.kernel_out(out.layout().clone())?,
                target: IndexedAxis {
                    first: part.first,
                    count: part.target.dims()[part.target.rank() - 1],
                    ..IndexedAxis::whole(axis, size, stride)
                },
            })
        })?;
        Ok(out)
    }

    /// A copy of this tensor with `src` written along `axis` at the
    /// positions `index` names (PyTorch's `scatter`): for axis 0,
    /// `out[index[i][j]][j] = src[i][j]`. `index` and `src` have this rank;
    /// `src` is at least as large as `index` on every axis, and this tensor
    /// at least as large on every axis but `axis`. When an index repeats
    /// along `axis`, the last write wins (on both devices). As PyTorch's,
    /// a 0-d operand beside others of at most one axis is one of one
    /// element (axis 0 or -1).
    ///
    /// # Errors
    /// As [`Tensor::take`]; `Error::Shape` for the size rules above;
    /// `Error::DType` when `src` has another dtype.
    pub fn scatter(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<Tensor> {
        let out = self.contiguous_copy()?;
        out.scatter_as(IndexOp::Scatter, index, src, axis)?;
        Ok(out)
    }

    /// [`Tensor::scatter`] in place, written through this view.
    ///
    /// # Errors
    /// As [`Tensor::scatter`], and `Error::OverlappingWrite` for a
    /// broadcast view. On the CPU nothing is written when an index is out
    /// of range.
    pub fn scatter_(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<()> {
        self.scatter_as(IndexOp::Scatter, index, src, axis)
    }

    /// A copy of this tensor with `src` added along `axis` at the positions
    /// `index` names (PyTorch's `scatter_add`): repeated indices
    /// accumulate, in index order. Integers wrap; f16 and bf16 sums
    /// accumulate in f32 and round to the dtype once, as PyTorch's CPU
    /// (`[2048] + 1 + 1 + 1 + 1` is 2052 in f16, where rounding after each
    /// add would leave 2048).
    ///
    /// # Errors
    /// As [`Tensor::scatter`], and `Error::DType` for bool.
    pub fn scatter_add(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<Tensor> {
        let out = self.contiguous_copy()?;
        out.scatter_as(IndexOp::ScatterAdd, index, src, axis)?;
        Ok(out)
    }

    /// [`Tensor::scatter_add`] in place, written through this view.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`], and `Error::DType` for bool.
    pub fn scatter_add_(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<()> {
        self.scatter_as(IndexOp::ScatterAdd, index, src, axis)
    }

    fn scatter_as(&self, op: IndexOp, index: &Tensor, src: &Tensor, axis: isize) -> Result<()> {
        let name = op.name();
        let ranks = [self.rank(), index.rank(), src.rank()];
        if ranks.contains(&0) && ranks.iter().all(|&r| r <= 1) {
            normalize_axis(name, axis, 1)?;
            let [t, i, s] = [self, index, src].map(as_one_axis);
            return t?.scatter_as(op, &i?, &s?, 0);
        }
        check_devices(name, self, &[Arg::Tensor(src)])?;
        let mut index = self.check_index(name, index)?;
        check_same_dtype(name, self.dtype(), src.dtype())?;
        if op == IndexOp::ScatterAdd && self.dtype() == DType::Bool {
            return Err(Error::dtype(name, "not defined for dtype bool"));
        }
        self.layout().check_writable(name)?;
        let a = normalize_axis(name, axis, self.rank())?;
        check_index_fits(name, &index, src, None, "src")?;
        check_index_fits(name, &index, self, Some(a), "this tensor")?;
        if index.numel() == 0 {
            return Ok(());
        }
        check_axis_not_empty(name, self, a)?;
        if op == IndexOp::ScatterAdd && self.dtype().is_half() {
            // f16 and bf16 sums accumulate in f32 and round once, as
            // PyTorch's CPU (a kernel's adds would round each).
            let wide = self.to_dtype(DType::F32)?;
            wide.scatter_as(op, &index, &src.to_dtype(DType::F32)?, axis)?;
            return self.assign(&wide.to_dtype(self.dtype())?);
        }
        // Operands never share storage with the destination (nor the index
        // with the source): a kernel may then read and write freely.
        let mut src = src.clone();
        if src.shares_storage(self) {
            src = src.contiguous_copy()?;
        }
        if index.shares_storage(self) || index.shares_storage(&src) {
            index = index.contiguous_copy()?;
        }
        // The source cut to the index's shape.
        let mut src_layout = src.layout().clone();
        for (d, &n) in index.dims().iter().enumerate() {
            src_layout = src_layout.narrowed(d, 0, n);
        }
        let (size, stride) = (self.dims()[a], self.strides()[a]);
        let mut out_strides: DimVec<isize> = self.strides().iter().copied().collect();
        out_strides[a] = 0;
        let out_layout = Layout::from_parts(index.shape().clone(), out_strides, self.offset());
        // Operands larger than one storage binding go in parts, in order
        // along the lines (so the last duplicate still wins).
        let whole = IndexedPart {
            views: &[src.with_layout(src_layout), index.clone()],
            target: &self.with_layout(out_layout.with_last_axis(size, stride)),
            first: 0,
        };
        // The kernel walks lines along `axis`, moved last.
        let order: DimVec<isize> = (0..self.rank())
            .filter(|&d| d != a)
            .chain([a])
            .map(|d| d as isize)
            .collect();
        for_each_indexed_part(whole, &mut |part| {
            let [src, index] = part.views else {
                return Err(Error::internal(name, "a scatter part has two views"));
            };
            let out = part.target.layout().without_last_axis();
            scatter(&ScatterCall {
                op,
                out: part.target.kernel_out(out.permute(&order)?)?,
                src: src.kernel_ref(src.layout().permute(&order)?)?,
                index: index.kernel_ref(index.layout().permute(&order)?)?,
                target: IndexedAxis {
                    first: part.first,
                    count: part.target.dims()[part.target.rank() - 1],
                    ..IndexedAxis::whole(a, size, stride)
                },
            })
        })
    }

    /// A copy with `value` wherever the bool `mask` is true, both
    /// broadcast to their common shape (PyTorch's `masked_fill`: a mask
    /// with more axes gives a larger result).
    ///
    /// # Errors
    /// `Error::DType` for a non-bool mask, a value the dtype cannot hold,
    /// or a c64 tensor; `Error::Shape` when the mask and this shape do not
    /// broadcast;
    /// `Error::DeviceMismatch`.
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        const OP: &str = "masked_fill";
        let value = self.check_mask(OP, mask, value.into(), false)?;
        if let Some(wide) = self.wide_scalar(&value)? {
            return Tensor::where_cond(mask, &wide, self);
        }
        Tensor::launch_new(
            self,
            OP,
            ElementwiseOp::Where,
            self.dtype(),
            &[Arg::Tensor(mask), Arg::Scalar(value), Arg::Tensor(self)],
        )
    }

    /// [`Tensor::masked_fill`] in place, written through this view: the
    /// mask broadcast to this shape.
    ///
    /// # Errors
    /// As [`Tensor::masked_fill`], `Error::Shape` when the mask does not
    /// broadcast to this shape, and `Error::OverlappingWrite` for a
    /// broadcast view.
    pub fn masked_fill_(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<()> {
        const OP: &str = "masked_fill_";
        let value = self.check_mask(OP, mask, value.into(), true)?;
        if let Some(wide) = self.wide_scalar(&value)? {
            // Refused before the selection is made.
            self.layout().check_writable(OP)?;
            return Tensor::where_cond(mask, &wide, self)
                .and_then(|t| self.assign(&t))
                .map_err(|e| e.named(OP));
        }
        self.launch_into_args(
            OP,
            ElementwiseOp::Where,
            &[Arg::Tensor(mask), Arg::Scalar(value), Arg::Tensor(self)],
        )
    }

    /// Checks a mask (broadcast to this shape `in_place`, else to one
    /// with it) and converts the fill value to this dtype.
    fn check_mask(
        &self,
        op: &'static str,
        mask: &Tensor,
        value: Scalar,
        in_place: bool,
    ) -> Result<TypedScalar> {
        check_devices(op, self, &[Arg::Tensor(mask)])?;
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                op,
                format!("the mask must be bool, it is {}", mask.dtype()),
            ));
        }
        let fits = match in_place {
            true => mask.layout().broadcast_to(self.shape()).is_ok(),
            false => crate::shape::broadcast_shapes(self.shape(), mask.shape()).is_ok(),
        };
        if !fits {
            return Err(Error::shape(
                op,
                format!(
                    "mask of shape {} does not broadcast to the tensor's shape {}",
                    mask.shape(),
                    self.shape()
                ),
            ));
        }
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op));
        }
        TypedScalar::new(op, value, self.dtype())
    }

    /// Checks an index tensor's device and dtype; a copy when it shares
    /// this tensor's storage (the kernels read them separately).
    fn check_index(&self, op: &'static str, index: &Tensor) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op));
        }
        check_devices(op, self, &[Arg::Tensor(index)])?;
        if !matches!(index.dtype(), DType::I32 | DType::I64 | DType::U32) {
            return Err(Error::dtype(
                op,
                format!("the index must be i32, i64 or u32, it is {}", index.dtype()),
            ));
        }
        if index.shares_storage(self) {
            return index.contiguous_copy();
        }
        Ok(index.clone())
    }
}

/// Checks that `index` has `other`'s rank and is no larger on any axis
/// (except `skip`).
///
/// # Errors
/// `Error::Shape` naming `op`, both shapes and `what` the other one is.
fn check_index_fits(
    op: &'static str,
    index: &Tensor,
    other: &Tensor,
    skip: Option<usize>,
    what: &str,
) -> Result<()> {
    let fits = index.rank() == other.rank()
        && (0..index.rank()).all(|d| Some(d) == skip || index.dims()[d] <= other.dims()[d]);
    if fits {
        return Ok(());
    }
    let except = skip.map_or(String::new(), |a| format!(" except along axis {a}"));
    Err(Error::shape(
        op,
        format!(
            "index of shape {} must have the rank of {what} (shape {}) and be no larger on any axis{except}",
            index.shape(),
            other.shape()
        ),
    ))
}

/// Every index into an empty axis is out of range; that is known before
/// any index is read (so the error's index is 0, not one read).
///
/// # Errors
/// `Error::Index` naming `op`.
fn check_axis_not_empty(op: &'static str, t: &Tensor, axis: usize) -> Result<()> {
    if t.dims()[axis] == 0 {
        return Err(Error::Index {
            op,
            index: 0,
            axis,
            size: 0,
        });
    }
    Ok(())
}

/// `t`, or a 0-d `t` as one of one element.
fn as_one_axis(t: &Tensor) -> Result<Tensor> {
    match t.rank() {
        0 => t.unsqueeze(0),
        _ => Ok(t.clone()),
    }
}
