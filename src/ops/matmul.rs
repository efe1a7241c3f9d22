//! Matrix products with NumPy's `matmul` rules, and `dot`/`outer`.

use super::binding_parts::{Cut, MAX_KERNEL_EXTENT};
use super::{Arg, check_devices, check_same_dtype};
use crate::backend::{K_SLICE, MatmulCall, matmul};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{DimVec, Shape, broadcast_for};
use crate::tensor::Tensor;
use std::borrow::Cow;

impl Tensor {
    /// The matrix product, as NumPy's `matmul`: 2-D operands multiply as
    /// matrices; N-D operands are stacks of matrices in the last two axes
    /// whose leading (batch) axes broadcast; a 1-D left operand is a row
    /// vector and a 1-D right operand a column vector, and that axis is
    /// dropped from the result. Operands may be any views (`a.t()` is not
    /// copied). f32, f16 and bf16 (accumulated in f32 and rounded once on
    /// every device: a GPU's product over k past 8,192, which its kernels
    /// take a slice at a time, keeps the partial sums in an f32 scratch
    /// of the output's size, so a partial sum past f16's range is no inf
    /// where the product is in range), f64 (CPU),
    /// i32, i64 and u32 (wrapping). A GPU has no i64 product kernel: it
    /// sums the products (elementwise ops and sums over parts of at most
    /// 2^22 of them). A GPU's product of more than 1,048,560 rows or
    /// columns runs in parts of that many (its output tiles' grid). A
    /// GPU's f32 product of a few output tiles, over all its matrices,
    /// over a long k (64 x 64 over 65,536, or 3 matrices of 2 x 2; k at
    /// least 8 times the longer side and 4,096) runs as a batch over
    /// slices of k and a sum of the slices' partials (split-k: the same
    /// bits every run, and shorter sums).
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let dev = Device::cpu();
    /// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &dev)?;
    /// let b = Tensor::from_slice(&[1.0f32, 0.0, -1.0], [3], &dev)?;
    /// assert_eq!(a.matmul(&b)?.to_vec::<f32>()?, vec![-2.0, -2.0]);
    /// assert_eq!(a.matmul(&a.t())?.dims(), &[2, 2]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` for 0-d operands, inner dimensions that differ or batch
    /// shapes that do not broadcast; `Error::DType` for different dtypes or
    /// u8/bool; `Error::DeviceMismatch`.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "matmul";
        check_devices(OP, self, &[Arg::Tensor(other)])?;
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return self.complex_matmul(other);
        }
        check_same_dtype(OP, self.dtype(), other.dtype())?;
        if matches!(self.dtype(), DType::U8 | DType::Bool) {
            return Err(Error::dtype(
                OP,
                format!(
                    "not defined for dtype {} (cast to i32 or f32 first)",
                    self.dtype()
                ),
            ));
        }
        if self.rank() == 0 || other.rank() == 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "operands must have at least one axis, got shapes {} and {} (use mul for scalars)",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        // Borrowed where no view is needed (the common case: no clones).
        let a = match self.rank() {
            1 => Cow::Owned(self.unsqueeze(0)?),
            _ => Cow::Borrowed(self),
        };
        let b = match other.rank() {
            1 => Cow::Owned(other.unsqueeze(1)?),
            _ => Cow::Borrowed(other),
        };
        let (ra, rb) = (a.rank(), b.rank());
        let (m, k, kb, n) = (
            a.dims()[ra - 2],
            a.dims()[ra - 1],
            b.dims()[rb - 2],
            b.dims()[rb - 1],
        );
        if k != kb {
            return Err(Error::shape(
                OP,
                format!(
                    "inner dimensions differ: {} @ {} ({k} != {kb})",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let batch = broadcast_for(
            OP,
            &Shape::from(&a.dims()[..ra - 2]),
            &Shape::from(&b.dims()[..rb - 2]),
        )
        .map_err(|_| {
            let (x, y) = (self.shape(), other.shape());
            Error::shape(OP, format!("the batch axes of {x} @ {y} do not broadcast"))
        })?;
        let with = |tail: [usize; 2]| -> Shape {
            let mut dims = DimVec::from_slice(batch.dims());
            dims.extend_from_slice(&tail);
            Shape::from_dims(dims)
        };
        let out_shape = with([m, n]);
        out_shape.check(OP)?;
        let a = match &a.dims()[..ra - 2] == batch.dims() {
            true => a,
            false => Cow::Owned(a.broadcast_to(with([m, k]))?),
        };
        let b = match &b.dims()[..rb - 2] == batch.dims() {
            true => b,
            false => Cow::Owned(b.broadcast_to(with([k, n]))?),
        };
        let mut out = if let Some(out) = super::matmul_split::product(&a, &b)? {
            out
        } else if self.dtype() == DType::I64 && self.device().is_gpu() {
            wide_product(&a, &b, &out_shape).map_err(|e| e.named(OP))?
        } else {
            let storage = crate::tensor::alloc_beside(self, OP, self.dtype(), out_shape.numel())?;
            let out = Tensor::from_parts(
                storage,
                Layout::contiguous(out_shape),
                self.dtype(),
                self.device().clone(),
            );
            matmul_in_parts(&a, &b, &out)?;
            out
        };
        if other.rank() == 1 {
            out = out.squeeze_axis(-1)?;
        }
        if self.rank() == 1 {
            out = out.squeeze_axis(-1 - (other.rank() != 1) as isize)?;
        }
        Ok(out)
    }

    /// The inner product of two 1-D tensors, as a 0-d tensor.
    ///
    /// # Errors
    /// `Error::Shape` unless both are 1-D of one length; as [`Tensor::matmul`].
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() != 1 || other.rank() != 1 {
            return Err(Error::shape(
                "dot",
                format!(
                    "takes two 1-D tensors, got shapes {} and {} (use matmul)",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.matmul(other).map_err(|e| e.named("dot"))
    }

    /// The outer product of two 1-D tensors: `out[i, j] = self[i] * other[j]`.
    ///
    /// # Errors
    /// `Error::Shape` unless both are 1-D; dtype and device errors as `mul`.
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() != 1 || other.rank() != 1 {
            return Err(Error::shape(
                "outer",
                format!(
                    "takes two 1-D tensors, got shapes {} and {}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        (self.unsqueeze(1))
            .and_then(|a| a.mul(&other.unsqueeze(0)?))
            .map_err(|e| e.named("outer"))
    }
}

/// The most rows (or columns) of one GPU product's recording: every
/// kernel's output tiles are at least 16 a side, and WebGPU promises 65,535
/// workgroups along each grid axis.
const GRID_EXTENT: usize = 16 * 65_535;

/// The cut of a GPU product whose inner dimension is longer than its
/// kernels count in 32 bits (only a view broadcast along it fits a binding
/// then): `a`'s last axis (operand 0's, so an inner cut) into parts of at
/// most `MAX_KERNEL_EXTENT`.
fn inner_extent_cut(a: &Tensor) -> Option<(usize, Cut)> {
    let k = *a.dims().last()?;
    (a.device().is_gpu() && k > MAX_KERNEL_EXTENT).then(|| {
        let cut = Cut {
            axis: a.rank() - 1,
            parts: k.div_ceil(MAX_KERNEL_EXTENT),
        };
        (0, cut)
    })
}

/// `out = a @ b` (operands already broadcast to one batch shape), cut
/// into products of parts that each fit one storage binding when a GPU
/// view spans more (see `ops/binding_parts.rs`): batches, rows of `a` and `out`,
/// columns of `b` and `out` are written part by part into views of `out`;
/// parts of the inner dimension are multiplied into a fresh tensor and
/// added to `out` after the first.
pub(super) fn matmul_in_parts(a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    let r = out.rank();
    // (operand, its cut) of the first operand needing one.
    let cut = [a, b, out]
        .into_iter()
        .enumerate()
        .find_map(|(k, t)| t.binding_cut().map(|c| (k, c)))
        .or_else(|| inner_extent_cut(a));
    let Some((operand, cut)) = cut else {
        // Rows of a and out, or columns of b and out, in parts whose
        // output tiles fit one grid axis.
        let (m, n) = (out.dims()[r - 2], out.dims()[r - 1]);
        if out.device().is_gpu() && m.max(n) > GRID_EXTENT {
            let (axis, len) = if m > GRID_EXTENT { (-2, m) } else { (-1, n) };
            for start in (0..len).step_by(GRID_EXTENT) {
                let part = |t: &Tensor| t.narrow(axis, start, GRID_EXTENT.min(len - start));
                let (ap, bp) = match axis {
                    -2 => (part(a)?, b.clone()),
                    _ => (a.clone(), part(b)?),
                };
                matmul_in_parts(&ap, &bp, &part(out)?)?;
            }
            return Ok(());
        }
        // A GPU's f16 or bf16 product over slices of k keeps its partial
        // sums in f32 and rounds once (each slice's sum rounded to the
        // dtype could pass its range where the product does not).
        let k = a.dims()[r - 1];
        let wide = (out.dtype().is_half() && out.device().is_gpu() && k > K_SLICE)
            .then(|| Tensor::empty_dense(out.shape().clone(), DType::F32, out.device(), "matmul"))
            .transpose()?;
        let dest = wide.as_ref().unwrap_or(out);
        matmul(MatmulCall {
            a: a.kernel_ref(a.layout().clone())?,
            b: b.kernel_ref(b.layout().clone())?,
            out: dest.kernel_out(dest.layout().clone())?,
        })?;
        if let Some(sum) = &wide {
            out.assign(sum)?;
        }
        return Ok(());
    };
    // Which of batch, m, k, n the cut axis is.
    let along = |axis: usize| Cut {
        axis,
        parts: cut.parts,
    };
    let (m_axis, n_axis) = (r - 2, r - 1);
    let inner = (operand == 0 && cut.axis == n_axis) || (operand == 1 && cut.axis == m_axis);
    if inner {
        // f16 and bf16 parts of k are summed in f32 and rounded once: each
        // part rounded to its dtype would round the sum once a part (a
        // binding's rows of k, fewer than the 8,192 a product rounds at).
        let half = out.dtype().is_half();
        let sum = match half {
            true => Tensor::empty_dense(out.shape().clone(), DType::F32, out.device(), "matmul")?,
            false => out.clone(),
        };
        let wide = |t: &Tensor| match half {
            true => t.to_dtype(DType::F32),
            false => Ok(t.clone()),
        };
        let a_parts = a.cut_parts(along(n_axis))?;
        let b_parts = b.cut_parts(along(m_axis))?;
        for (k, (ap, bp)) in a_parts.iter().zip(&b_parts).enumerate() {
            let (ap, bp) = (wide(ap)?, wide(bp)?);
            if k == 0 {
                matmul_in_parts(&ap, &bp, &sum)?;
            } else {
                let part =
                    Tensor::empty_dense(sum.shape().clone(), sum.dtype(), sum.device(), "matmul")?;
                matmul_in_parts(&ap, &bp, &part)?;
                sum.add_(&part)?;
            }
        }
        if half {
            out.assign(&sum)?;
        }
        return Ok(());
    }
    // Batches cut all three; rows cut a and out; columns cut b and out.
    let (a_cut, b_cut) = match cut.axis {
        x if x < m_axis => (Some(x), Some(x)),
        x if x == m_axis && operand != 1 => (Some(m_axis), None),
        _ => (None, Some(n_axis)),
    };
    let out_axis = if cut.axis < m_axis {
        cut.axis
    } else if a_cut == Some(m_axis) {
        m_axis
    } else {
        n_axis
    };
    let outs = out.cut_parts(along(out_axis))?;
    let pieces = |t: &Tensor, axis: Option<usize>| -> Result<Vec<Tensor>> {
        match axis {
            Some(x) => t.cut_parts(along(x)),
            None => Ok(vec![t.clone(); outs.len()]),
        }
    };
    let (a_parts, b_parts) = (pieces(a, a_cut)?, pieces(b, b_cut)?);
    for ((ap, bp), op) in a_parts.iter().zip(&b_parts).zip(&outs) {
        matmul_in_parts(ap, bp, op)?;
    }
    Ok(())
}

/// `a @ b` of i64 operands (broadcast to one batch shape) on a GPU, which
/// has no i64 product kernel: each output sums its k products, formed for
/// a part of the rows (and of k) at a time so that no more than 2^22 of
/// them are held at once (wrapping sums: the parts add to the same bits).
fn wide_product(a: &Tensor, b: &Tensor, shape: &Shape) -> Result<Tensor> {
    const HELD: usize = 1 << 22;
    let r = shape.rank();
    if r == crate::shape::MAX_RANK {
        // The products take an axis more than the operands: one batch
        // entry of the first axis at a time.
        let out = Tensor::zeros(shape.clone(), DType::I64, a.device())?;
        let inner = Shape::from(&shape.dims()[1..]);
        let entry = |t: &Tensor, i: usize| t.narrow(0, i, 1)?.squeeze_axis(0);
        for i in 0..shape.dims()[0] {
            entry(&out, i)?.assign(&wide_product(&entry(a, i)?, &entry(b, i)?, &inner)?)?;
        }
        return Ok(out);
    }
    let (m, k) = (shape.dims()[r - 2], a.dims()[r - 1]);
    let lanes = (shape.numel() / m.max(1)).max(1);
    let k_part = k.min(HELD / lanes).max(1);
    let rows = (HELD / (lanes * k_part).max(1)).max(1);
    let out = Tensor::zeros(shape.clone(), DType::I64, a.device())?;
    for row in (0..m).step_by(rows) {
        let count = rows.min(m - row);
        let target = out.narrow(-2, row, count)?;
        for at in (0..k).step_by(k_part) {
            let len = k_part.min(k - at);
            let x = a.narrow(-2, row, count)?.narrow(-1, at, len)?;
            let y = b.narrow(-2, at, len)?;
            target.add_(&x.unsqueeze(-1)?.mul(&y.unsqueeze(-3)?)?.sum(-2)?)?;
        }
    }
    Ok(out)
}
