//! Zero-copy views: each is a new layout over the same storage, so
//! in-place ops write through it. Slicing, axis moves, broadcasting,
//! reshapes that the strides allow, narrowing and splitting, the diagonal,
//! and the real and imaginary parts of a c64 tensor.

use super::Tensor;
use crate::error::{Error, Result};
use crate::index::SliceItem;
use crate::layout::normalize_axis;
use crate::shape::{DimVec, Shape, add_extents};

impl Tensor {
    /// This tensor with `axis` split into two of extents `parts` (whose
    /// product is the axis's extent): always a view.
    ///
    /// # Errors
    /// `Error::Internal` naming `op` should the split not be a view.
    pub(crate) fn split_axis(
        &self,
        op: &'static str,
        axis: usize,
        parts: [usize; 2],
    ) -> Result<Tensor> {
        let mut dims = self.dims().to_vec();
        dims.splice(axis..=axis, parts);
        let layout = self
            .layout()
            .reshaped(&Shape::from(dims))
            .ok_or_else(|| Error::internal(op, "an axis split in two is not a view"))?;
        Ok(self.with_layout(layout))
    }

    /// NumPy basic indexing with [`s!`](crate::s): a view, never a copy.
    ///
    /// # Errors
    /// `Error::Index` for an index out of range, `Error::Argument` for a zero
    /// step or too many items, `Error::Shape` when new axes take the rank
    /// past the limit.
    pub fn slice(&self, items: impl AsRef<[SliceItem]>) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().slice(items.as_ref())?))
    }

    /// Reorders the axes: axis `k` of the result is axis `axes[k]`.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range; `Error::Argument` unless
    /// `axes` is a permutation of the axes.
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

    /// Broadcasts to `shape` (new and extent-1 axes get stride 0). Writing
    /// through an axis it broadcast (stride 0, more than one element) is an
    /// `OverlappingWrite` error; a result that repeats nothing (the same
    /// shape, or new axes of 1) is as writable as this tensor, where NumPy
    /// makes every broadcast read-only.
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

    /// Removes one axis, which must have extent 1 (a 0-d tensor's axis 0 or
    /// -1 is its one element: it stays 0-d, as NumPy's and PyTorch's).
    ///
    /// # Errors
    /// `Error::Axis` when out of range, `Error::Shape` when its extent is not 1.
    pub fn squeeze_axis(&self, axis: isize) -> Result<Tensor> {
        let layout = self.layout().squeeze(Some(axis));
        Ok(self.with_layout(layout.map_err(|e| e.named("squeeze_axis"))?))
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

    /// Elements `start..start + len` along `axis`: a view (PyTorch's `narrow`).
    ///
    /// # Errors
    /// `Error::Axis`; `Error::Index` when the range passes the end of the
    /// axis, naming its last index (its start where it is empty).
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Tensor> {
        const OP: &str = "narrow";
        let a = normalize_axis(OP, axis, self.rank())?;
        let size = self.dims()[a];
        if start.checked_add(len).is_none_or(|end| end > size) {
            let last = start.saturating_add(len.saturating_sub(1));
            return Err(Error::Index {
                op: OP,
                index: isize::try_from(last).unwrap_or(isize::MAX),
                axis: a,
                size,
            });
        }
        Ok(self.with_layout(self.layout().narrowed(a, start, len)))
    }

    /// Views of consecutive pieces along `axis` with the given extents, which
    /// must add up to the axis (PyTorch's `split` with a list of sizes).
    ///
    /// # Errors
    /// `Error::Axis`; `Error::Shape` when the sizes do not add up;
    /// `OutOfMemory` for more views than the host can list.
    pub fn split(&self, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>> {
        const OP: &str = "split";
        let a = normalize_axis(OP, axis, self.rank())?;
        let total = sizes
            .iter()
            .try_fold(0, |total, &n| add_extents(OP, total, n))?;
        if total != self.dims()[a] {
            return Err(Error::shape(
                OP,
                format!(
                    "sizes {sizes:?} add up to {total}, axis {a} of shape {} has {}",
                    self.shape(),
                    self.dims()[a]
                ),
            ));
        }
        self.pieces(OP, a, sizes.len(), sizes.iter().copied())
    }

    /// The `count` consecutive views along axis `a` of extents `sizes`, in
    /// a list the host may refuse (`Error::OutOfMemory` naming `op`, not an
    /// abort: `chunk` of an empty axis into 2^32 pieces asks 300 GB).
    fn pieces(
        &self,
        op: &'static str,
        a: usize,
        count: usize,
        sizes: impl Iterator<Item = usize>,
    ) -> Result<Vec<Tensor>> {
        let mut start = 0;
        let views = sizes.map(|n| {
            let view = self.with_layout(self.layout().narrowed(a, start, n));
            start += n;
            view
        });
        crate::backend::cpu::try_collect(op, count, views)
    }

    /// At most `chunks` views along `axis`, each `ceil(extent / chunks)` long
    /// except a shorter last one (PyTorch's `chunk`: `chunk(3)` of 4 gives
    /// 2 + 2; an empty axis gives `chunks` empty views, as PyTorch's).
    ///
    /// # Errors
    /// `Error::Axis`; `Error::Argument` for zero chunks; `OutOfMemory` for
    /// more views than the host can list.
    pub fn chunk(&self, chunks: usize, axis: isize) -> Result<Vec<Tensor>> {
        const OP: &str = "chunk";
        let a = normalize_axis(OP, axis, self.rank())?;
        if chunks == 0 {
            return Err(Error::argument(OP, "chunks must be at least 1"));
        }
        let n = self.dims()[a];
        if n == 0 {
            return self.pieces(OP, a, chunks, std::iter::repeat_n(0, chunks));
        }
        let step = n.div_ceil(chunks);
        let last = (!n.is_multiple_of(step)).then_some(n % step);
        let sizes = std::iter::repeat_n(step, n / step).chain(last);
        self.pieces(OP, a, n.div_ceil(step), sizes)
    }

    /// Moves axis `source` to position `destination`, keeping the order of
    /// the others (NumPy's `moveaxis`): a view.
    ///
    /// # Errors
    /// `Error::Axis` when either axis is out of range.
    pub fn moveaxis(&self, source: isize, destination: isize) -> Result<Tensor> {
        const OP: &str = "moveaxis";
        let src = normalize_axis(OP, source, self.rank())?;
        let dst = normalize_axis(OP, destination, self.rank())?;
        let mut order: DimVec<isize> = (0..self.rank() as isize)
            .filter(|&a| a != src as isize)
            .collect();
        order.insert(dst, src as isize);
        self.permute(&order)
    }

    /// Rolls `axis` backwards until it lies before position `start` (NumPy's
    /// `rollaxis`; `start` in `-rank..=rank`): a view.
    ///
    /// # Errors
    /// `Error::Axis` when `axis` or `start` is out of range.
    pub fn rollaxis(&self, axis: isize, start: isize) -> Result<Tensor> {
        const OP: &str = "rollaxis";
        let a = normalize_axis(OP, axis, self.rank())?;
        // NumPy adds the rank (not rank + 1) to a negative start, then
        // takes 0..=rank.
        let r = self.rank() as isize;
        let mut s = match start {
            s if (-r..0).contains(&s) => (s + r) as usize,
            s if (0..=r).contains(&s) => s as usize,
            _ => {
                return Err(Error::Axis {
                    op: OP,
                    axis: start,
                    rank: self.rank(),
                });
            }
        };
        if a < s {
            s -= 1;
        }
        self.moveaxis(a as isize, s as isize)
    }

    /// The diagonal `offset` of the last two axes as a new last axis (above
    /// the main diagonal for `offset > 0`, below for `< 0`): a view, so
    /// in-place ops write into the matrix (PyTorch's `linalg.diagonal`;
    /// its `diagonal` and NumPy's default to the first two axes).
    ///
    /// # Errors
    /// `Error::Shape` naming `diagonal` for fewer than 2 axes.
    pub fn diagonal(&self, offset: isize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().diagonal("diagonal", offset)?))
    }

    /// The real parts of a c64 tensor as an f32 **view** of its storage
    /// (doubled strides, same offset): writing through it changes the
    /// complex tensor, and every f32 op and view applies. For a real tensor,
    /// the tensor itself.
    ///
    /// The c64 ops: `add sub mul div` (tensor, scalar, in-place forms; a real
    /// f32 operand or a real or [`Complex32`](crate::Complex32) scalar is promoted), `neg conj
    /// exp` (and `_` forms), `abs` and `angle` (giving f32), `sum` and
    /// `mean`, `matmul`, `assign`/`fill_`, copies, views, joins, device moves.
    ///
    /// # Errors
    /// None for c64 and real dtypes (kept as `Result` for symmetry with
    /// [`Tensor::imag`]).
    pub fn real(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        self.part(0)
    }

    /// The imaginary parts of a c64 tensor as an f32 view of its storage
    /// (offset by one f32); see [`Tensor::real`].
    ///
    /// # Errors
    /// `Error::DType` for a real tensor (it has no imaginary storage to view).
    pub fn imag(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(Error::dtype(
                "imag",
                format!("a {} tensor has no imaginary part to view", self.dtype()),
            ));
        }
        self.part(1)
    }

    fn part(&self, k: usize) -> Result<Tensor> {
        let pairs = self.pairs();
        pairs.narrow(-1, k, 1)?.squeeze_axis(-1)
    }
}
