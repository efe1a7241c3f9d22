//! Zero-copy views: each is a new layout over the same storage.

use super::Tensor;
use crate::error::Result;
use crate::index::SliceItem;
use crate::shape::Shape;

impl Tensor {
    /// NumPy basic indexing with [`s!`](crate::s): a view, never a copy.
    ///
    /// # Errors
    /// `Error::Index` for an index out of range, `Error::Argument` for a zero
    /// step or too many items.
    pub fn slice(&self, items: impl AsRef<[SliceItem]>) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().slice(items.as_ref())?))
    }

    /// Reorders the axes: axis `k` of the result is axis `axes[k]`.
    ///
    /// # Errors
    /// `Error::Argument` unless `axes` is a permutation of the axes.
    pub fn permute(&self, axes: &[isize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().permute(axes)?))
    }

    /// Swaps two axes (negative axes count from the end).
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range.
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().transpose(a, b)?))
    }

    /// Reverses all axes (NumPy's `.T`; the matrix transpose for rank 2).
    pub fn t(&self) -> Tensor {
        self.with_layout(self.layout().reversed_axes())
    }

    /// Broadcasts to `shape` (new and extent-1 axes get stride 0). The result
    /// is read-only: writing through it is an `OverlappingWrite` error.
    ///
    /// # Errors
    /// `Error::Shape` when the shapes are incompatible.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().broadcast_to(&shape.into())?))
    }

    /// Inserts an axis of extent 1 at `axis` (in `-(rank+1)..=rank`).
    ///
    /// # Errors
    /// `Error::Axis` when out of range.
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().unsqueeze(axis)?))
    }

    /// Removes every axis of extent 1.
    pub fn squeeze(&self) -> Tensor {
        match self.layout().squeeze(None) {
            Ok(l) => self.with_layout(l),
            Err(_) => self.clone(),
        }
    }

    /// Removes one axis, which must have extent 1.
    ///
    /// # Errors
    /// `Error::Axis` when out of range, `Error::Shape` when its extent is not 1.
    pub fn squeeze_axis(&self, axis: isize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().squeeze(Some(axis))?))
    }

    /// Reverses the order of elements along `axes`.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range, `Error::Argument` for a repeat.
    pub fn flip(&self, axes: &[isize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().flip(axes)?))
    }

    /// The same elements in row-major order with another shape: a view when
    /// the strides allow it, otherwise a contiguous copy (as NumPy). One
    /// extent may be `-1`, inferred from the element count
    /// (`t.reshape([-1, 3])`; see [`ShapeSpec`](crate::ShapeSpec)).
    ///
    /// # Errors
    /// `Error::Shape` when the element counts differ, for two `-1`s or
    /// another negative extent, and when `-1` cannot be inferred.
    pub fn reshape(&self, shape: impl Into<crate::ShapeSpec>) -> Result<Tensor> {
        let shape = shape.into().resolve("reshape", self.shape())?;
        match self.layout().reshaped(&shape) {
            Some(layout) => Ok(self.with_layout(layout)),
            None => self.contiguous()?.reshape(shape),
        }
    }

    /// The elements in row-major order as a 1-D tensor: a view when the
    /// strides allow it, otherwise a contiguous copy (PyTorch's `flatten`,
    /// NumPy's `ravel`).
    ///
    /// # Errors
    /// Only as [`Tensor::contiguous`] when a copy is needed.
    pub fn flatten(&self) -> Result<Tensor> {
        self.reshape(self.numel())
    }
}
