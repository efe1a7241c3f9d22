//! Joins and repeats: concat and stack copy each input into a slice of one
//! fresh tensor (any input layout, one recorded copy each); tile and repeat
//! copy a broadcast (stride-0) view of the input once. The views that split
//! a tensor (narrow, split, chunk) and move its axes are in
//! `tensor/views.rs`.

use super::Arg;
use super::check_devices;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, normalize_axis};
use crate::shape::{DimVec, MAX_RANK, Shape, add_extents, mul_extents};
use crate::tensor::Tensor;

impl Tensor {
    /// Joins tensors along an existing `axis` (NumPy's `concatenate`,
    /// PyTorch's `cat`). Every input has the same rank and device, and the
    /// same extents except along `axis`; inputs may be views of any layout
    /// and of any dtypes, which are promoted to their common one
    /// ([`Tensor::result_type`]). The result is a new row-major tensor, or
    /// channels-last where every input is a channels-last image of two or
    /// more channels ([`Tensor::to_channels_last`]), as PyTorch's `cat`
    /// keeps its inputs' memory format.
    ///
    /// # Errors
    /// `Error::Argument` for an empty list, `Error::Shape` for a 0-d input or
    /// mismatched extents, `Error::Axis`, `Error::DType` for dtypes with no
    /// common one, `Error::DeviceMismatch`.
    pub fn concat(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        const OP: &str = "concat";
        let (first, dtype) = lead(OP, tensors)?;
        if first.rank() == 0 {
            return Err(Error::shape(OP, "cannot concatenate 0-d tensors"));
        }
        let axis = normalize_axis(OP, axis, first.rank())?;
        let mut dims: DimVec<usize> = first.dims().iter().copied().collect();
        dims[axis] = 0;
        for (k, t) in tensors.iter().enumerate() {
            let fits = t.rank() == first.rank()
                && (0..t.rank()).all(|d| d == axis || t.dims()[d] == first.dims()[d]);
            if !fits {
                return Err(Error::shape(
                    OP,
                    format!(
                        "input {k} has shape {}, input 0 has {}; they may differ only along axis {axis}",
                        t.shape(),
                        first.shape()
                    ),
                ));
            }
            dims[axis] = add_extents(OP, dims[axis], t.dims()[axis])?;
        }
        // Channels-last images join into channels-last memory, as
        // PyTorch's `cat` keeps its inputs' memory format.
        let channels_last = dims.len() == 4
            && tensors
                .iter()
                .all(|t| t.dims()[1] > 1 && t.is_channels_last());
        let out = if channels_last {
            let [n, c, h, w] = [dims[0], dims[1], dims[2], dims[3]];
            Tensor::empty_dense(Shape::from([n, h, w, c]), dtype, first.device(), OP)?
                .permute(&[0, 3, 1, 2])?
        } else {
            Tensor::empty_dense(Shape::from(dims), dtype, first.device(), OP)?
        };
        let mut start = 0;
        for t in tensors {
            let n = t.dims()[axis];
            if n > 0 && t.numel() > 0 {
                out.with_layout(out.layout().narrowed(axis, start, n))
                    .assign(t)?;
            }
            start += n;
        }
        Ok(out)
    }

    /// Joins tensors of one shape along a new `axis` (in `-(rank+1)..=rank`),
    /// as NumPy's and PyTorch's `stack`.
    ///
    /// # Errors
    /// `Error::Argument` for an empty list, `Error::Shape` when the shapes
    /// differ or the result would exceed the maximum rank, `Error::Axis`,
    /// `Error::DType`, `Error::DeviceMismatch`.
    pub fn stack(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        super::as_op("stack", || {
            const OP: &str = "stack";
            let (first, _) = lead(OP, tensors)?;
            let axis = normalize_axis(OP, axis, first.rank() + 1)?;
            let mut views = Vec::with_capacity(tensors.len());
            for (k, t) in tensors.iter().enumerate() {
                if t.shape() != first.shape() {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "input {k} has shape {}, input 0 has {}; stack needs equal shapes",
                            t.shape(),
                            first.shape()
                        ),
                    ));
                }
                views.push(t.unsqueeze(axis as isize)?);
            }
            let refs: Vec<&Tensor> = views.iter().collect();
            Tensor::concat(&refs, axis as isize)
        })
    }

    /// The tensor repeated `reps[k]` times along each axis (NumPy's `tile`,
    /// PyTorch's `repeat`). When `reps` is shorter than the rank it is
    /// padded with leading 1s; when longer, the tensor gains leading axes.
    ///
    /// # Errors
    /// `Error::Shape` when the result would exceed the maximum rank.
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        const OP: &str = "tile";
        let rank = self.rank().max(reps.len());
        Shape::from(vec![1; rank]).check(OP)?;
        let mut t = self.clone();
        while t.rank() < rank {
            t = t.unsqueeze(0)?;
        }
        let reps: Vec<usize> = std::iter::repeat_n(1, rank - reps.len())
            .chain(reps.iter().copied())
            .collect();
        // One copy of a view that interleaves a stride-0 axis of extent
        // reps[k] before each tiled axis, when that fits the rank limit.
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: Vec<isize> = Vec::new();
        for (k, &r) in reps.iter().enumerate() {
            let (d, s) = (t.dims()[k], t.strides()[k]);
            if r != 1 && d != 1 {
                dims.push(r);
                strides.push(0);
            }
            dims.push(if d == 1 { r } else { d });
            strides.push(if d == 1 { 0 } else { s });
        }
        let out_dims = t
            .dims()
            .iter()
            .zip(&reps)
            .map(|(&d, &r)| mul_extents(OP, d, r))
            .collect::<Result<Vec<usize>>>()?;
        Shape::from(&out_dims).check(OP)?;
        if dims.len() <= MAX_RANK {
            return copy_of_view(&t, dims, strides, out_dims, OP);
        }
        // Otherwise tile one axis at a time through merged 4-d views.
        for (k, &r) in reps.iter().enumerate() {
            if r != 1 {
                t = repeat_block(&t.contiguous()?, k, r, true, OP)?;
            }
        }
        Ok(t)
    }

    /// Each element repeated `repeats` times along `axis`, the copies
    /// adjacent (NumPy's `repeat` with an axis, PyTorch's
    /// `repeat_interleave`). For whole-tensor repetition see
    /// [`Tensor::tile`].
    ///
    /// # Errors
    /// `Error::Axis`; `Error::Shape` for a 0-d tensor.
    pub fn repeat(&self, repeats: usize, axis: isize) -> Result<Tensor> {
        const OP: &str = "repeat";
        if self.rank() == 0 {
            return Err(Error::shape(OP, "a 0-d tensor has no axis to repeat along"));
        }
        let a = normalize_axis(OP, axis, self.rank())?;
        if self.rank() < MAX_RANK {
            let mut dims: Vec<usize> = self.dims().to_vec();
            let mut strides: Vec<isize> = self.strides().to_vec();
            dims.insert(a + 1, repeats);
            strides.insert(a + 1, 0);
            let mut out_dims = self.dims().to_vec();
            out_dims[a] = mul_extents(OP, out_dims[a], repeats)?;
            Shape::from(&out_dims).check(OP)?;
            return copy_of_view(self, dims, strides, out_dims, OP);
        }
        repeat_block(&self.contiguous()?, a, repeats, false, OP)
    }
}

/// The first of `tensors`, after checking that all share its dtype and device.
fn lead<'a>(op: &'static str, tensors: &[&'a Tensor]) -> Result<(&'a Tensor, DType)> {
    let Some(&first) = tensors.first() else {
        return Err(Error::argument(op, "needs at least one tensor"));
    };
    let args: Vec<Arg> = tensors.iter().map(|t| Arg::Tensor(t)).collect();
    check_devices(op, first, &args)?;
    let mut dtype = first.dtype();
    for t in tensors {
        dtype = super::elementwise::result_dtype_on(op, first.device(), dtype, t.dtype())?;
    }
    Ok((first, dtype))
}

/// A new row-major tensor of `out_dims` holding, in row-major order, the
/// elements of the view (`dims`, `strides`) over `src`'s storage at its offset.
fn copy_of_view(
    src: &Tensor,
    dims: Vec<usize>,
    strides: Vec<isize>,
    out_dims: Vec<usize>,
    op: &'static str,
) -> Result<Tensor> {
    let view = src.with_layout(Layout::from_parts(
        Shape::from(dims),
        strides.into_iter().collect(),
        src.offset(),
    ));
    let out = Tensor::empty_dense(Shape::from(out_dims), src.dtype(), src.device(), op)?;
    if out.numel() > 0 {
        out.with_layout(Layout::contiguous(view.shape().clone()))
            .assign(&view)?;
    }
    Ok(out)
}

/// Repeats the contiguous `t` `r` times along `axis` through a 4-d view
/// (outer, axis, inner with a stride-0 axis of `r` inserted): whole blocks
/// when `tile`, else each element.
fn repeat_block(t: &Tensor, axis: usize, r: usize, tile: bool, op: &'static str) -> Result<Tensor> {
    let outer: usize = t.dims()[..axis].iter().product();
    let d = t.dims()[axis];
    let inner: usize = t.dims()[axis + 1..].iter().product();
    let (dims, strides) = if tile {
        (
            vec![outer, r, d, inner],
            vec![(d * inner) as isize, 0, inner as isize, 1],
        )
    } else {
        (
            vec![outer, d, r, inner],
            vec![(d * inner) as isize, inner as isize, 0, 1],
        )
    };
    let mut out_dims = t.dims().to_vec();
    out_dims[axis] = mul_extents(op, out_dims[axis], r)?;
    Shape::from(&out_dims).check(op)?;
    copy_of_view(t, dims, strides, out_dims, op)
}
