//! [`Layout`]: how a tensor's logical elements map onto its storage.
//!
//! A layout is a shape, one signed stride per dimension and an offset, all in
//! elements. Element `[i0, i1, ...]` lives at `offset + Σ ik * stride_k`.
//! Every view operation (see `views.rs`) is a pure function from one layout to
//! another; the storage is never touched.

mod channels;
mod overlap;
mod plan;
mod views;
mod windows;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod windows_tests;

pub(crate) use plan::{IterPlan, dense_layout_like};
pub(crate) use views::normalize_axis;
pub(crate) use windows::{Window, WindowOperand, split_into_windows, window_of};

use crate::error::{Error, Result};
use crate::shape::{DimVec, Shape};

/// Shape, strides and offset of a tensor over its storage, all in elements.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Shape,
    strides: DimVec<isize>,
    offset: usize,
}

// One copy of each array (a derived clone copies them one at a time): a
// layout is cloned several times on the way from an op to its kernel.
impl Clone for Layout {
    fn clone(&self) -> Self {
        Layout {
            shape: self.shape.clone(),
            strides: DimVec::from_slice(&self.strides),
            offset: self.offset,
        }
    }
}

impl Layout {
    /// A row-major layout of `shape` starting at element 0.
    pub fn contiguous(shape: impl Into<Shape>) -> Layout {
        let shape = shape.into();
        let strides = shape.contiguous_strides();
        Layout {
            shape,
            strides,
            offset: 0,
        }
    }

    /// A layout from raw parts. The caller guarantees that every element lies
    /// inside the storage it is used with. An empty layout addresses no
    /// element, so its offset is 0 whatever the parts say (an empty view at
    /// the end of its storage may not point past it).
    pub(crate) fn from_parts(shape: Shape, strides: DimVec<isize>, offset: usize) -> Layout {
        debug_assert_eq!(shape.rank(), strides.len());
        let offset = if shape.numel() == 0 { 0 } else { offset };
        Layout {
            shape,
            strides,
            offset,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The strides in elements (signed; 0 for a broadcast dimension).
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The storage position of the first logical element.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// The number of logical elements.
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }

    /// True when the elements are laid out row-major with no gaps (extents of
    /// 1 may have any stride, as in NumPy's C-contiguous flag).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1isize;
        for (&d, &s) in self.dims().iter().zip(self.strides.iter()).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected *= d as isize;
            }
        }
        true
    }

    /// True when two different indices address the same element, which only a
    /// stride of 0 on an extent above 1 can cause with the views webtensor makes.
    pub fn has_self_overlap(&self) -> bool {
        self.numel() > 1
            && self
                .dims()
                .iter()
                .zip(self.strides.iter())
                .any(|(&d, &s)| d > 1 && s == 0)
    }

    /// True when every element's storage position is a multiple of `n`
    /// (the offset and every stride of an axis longer than one are): a
    /// kernel may then read whole groups of `n` from each position.
    pub(crate) fn positions_aligned(&self, n: usize) -> bool {
        let n = n as isize;
        self.offset as isize % n == 0
            && self
                .dims()
                .iter()
                .zip(self.strides.iter())
                .all(|(&d, &s)| d <= 1 || s % n == 0)
    }

    /// The smallest and largest storage positions touched, inclusive, or `None`
    /// for an empty tensor.
    pub fn span(&self) -> Option<(usize, usize)> {
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&d, &s) in self.dims().iter().zip(self.strides.iter()) {
            if d == 0 {
                return None;
            }
            let reach = (d as isize - 1) * s;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        Some((lo as usize, hi as usize))
    }

    /// The storage position of the element at `index` (one entry per dimension,
    /// each already in range).
    pub fn position(&self, index: &[usize]) -> usize {
        let mut pos = self.offset as isize;
        for (&i, &s) in index.iter().zip(self.strides.iter()) {
            pos += i as isize * s;
        }
        pos as usize
    }

    /// Storage positions of all elements in row-major logical order. This is the
    /// naive reference the fast iterators are tested against.
    pub fn positions(&self) -> Vec<usize> {
        let n = self.numel();
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        let mut index: DimVec<usize> = smallvec::smallvec![0; self.rank()];
        for _ in 0..n {
            out.push(self.position(&index));
            for d in (0..self.rank()).rev() {
                index[d] += 1;
                if index[d] < self.dims()[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        out
    }

    /// The same elements in the same row-major order with as few axes as
    /// possible: extent-1 axes dropped and neighbours that step evenly
    /// merged (a row-major matrix becomes one axis). Row-major index `i`
    /// of the result is row-major index `i` of `self`.
    pub(crate) fn coalesced(&self) -> Layout {
        let mut dims: DimVec<usize> = DimVec::new();
        let mut strides: DimVec<isize> = DimVec::new();
        if self.numel() == 0 {
            return Layout::from_parts(Shape::from([0]), smallvec::smallvec![1], self.offset);
        }
        for (&n, &s) in self.dims().iter().zip(self.strides.iter()) {
            if n == 1 {
                continue;
            }
            match (dims.last_mut(), strides.last_mut()) {
                (Some(last_n), Some(last_s)) if *last_s == s * n as isize => {
                    *last_n *= n;
                    *last_s = s;
                }
                _ => {
                    dims.push(n);
                    strides.push(s);
                }
            }
        }
        Layout::from_parts(Shape::from_dims(dims), strides, self.offset)
    }

    /// The axes before `axis` (at most the rank), at this layout's offset;
    /// [`Layout::trailing`] gives the rest at offset 0, so that the
    /// position of index `(i, j)` is `leading.position(i)` plus the
    /// trailing strides dotted with `j` (below zero along negative
    /// strides). Kernels walk the leading axes to find a start
    /// and the trailing ones from it (kept and reduced axes, batches and
    /// matrices, lines and the steps along them).
    pub(crate) fn leading(&self, axis: usize) -> Layout {
        let axis = axis.min(self.rank());
        let (dims, strides) = (self.dims(), self.strides());
        Layout::from_parts(
            dims[..axis].into(),
            DimVec::from_slice(&strides[..axis]),
            self.offset,
        )
    }

    /// The axes from `axis` on (at most the rank), at offset 0 (see
    /// [`Layout::leading`]).
    pub(crate) fn trailing(&self, axis: usize) -> Layout {
        let axis = axis.min(self.rank());
        let (dims, strides) = (self.dims(), self.strides());
        Layout::from_parts(dims[axis..].into(), DimVec::from_slice(&strides[axis..]), 0)
    }

    /// The layout of all axes but the last (at this layout's offset) and
    /// the last axis's stride: lines along the last axis, and the step
    /// along them. A rank-0 layout is one line of one element.
    pub(crate) fn split_last(&self) -> (Layout, isize) {
        let last = self.rank().saturating_sub(1);
        let step = self.strides().get(last).copied().unwrap_or(1);
        (self.leading(last), step)
    }

    /// Checks that writing through this layout touches each element once.
    ///
    /// # Errors
    /// `Error::OverlappingWrite` naming `op` for a broadcast (stride-0) view.
    pub(crate) fn check_writable(&self, op: &'static str) -> Result<()> {
        if self.has_self_overlap() {
            return Err(Error::OverlappingWrite {
                op,
                shape: self.dims().to_vec(),
                strides: self.strides.to_vec(),
            });
        }
        Ok(())
    }
}
