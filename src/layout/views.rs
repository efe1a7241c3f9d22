//! View operations: pure functions from one [`Layout`] to another.

use super::Layout;
use crate::error::{Error, Result};
use crate::index::SliceItem;
use crate::shape::{DimVec, Shape};

/// Resolves a possibly negative axis against `rank`.
///
/// # Errors
/// `Error::Axis` when `axis` is outside `-rank..rank`.
pub(crate) fn normalize_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    if axis < -r || axis >= r {
        return Err(Error::Axis { op, axis, rank });
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// NumPy's slice adjustment: (first position, count) of `start..end; step`
/// on an axis of extent `n`. `step` must not be zero.
fn resolve_range(
    start: Option<isize>,
    end: Option<isize>,
    step: isize,
    n: usize,
) -> (isize, usize) {
    let n = n as isize;
    // Negative bounds count from the end; out-of-range bounds are clamped to
    // the ends of the walk (-1 means "before the first" for a negative step).
    let adjust = |v: isize| -> isize {
        let v = if v < 0 { v + n } else { v };
        match v {
            v if v < 0 => {
                if step < 0 {
                    -1
                } else {
                    0
                }
            }
            v if v >= n => {
                if step < 0 {
                    n - 1
                } else {
                    n
                }
            }
            v => v,
        }
    };
    let (start, end) = if step > 0 {
        (start.map_or(0, adjust), end.map_or(n, adjust))
    } else {
        (start.map_or(n - 1, adjust), end.map_or(-1, adjust))
    };
    let count = if step > 0 && start < end {
        (end - start - 1) / step + 1
    } else if step < 0 && end < start {
        ((start - end - 1) as usize / step.unsigned_abs()) as isize + 1
    } else {
        0
    };
    (start, count as usize)
}

impl Layout {
    /// Applies a NumPy basic-indexing expression (see [`s!`](crate::s)).
    ///
    /// # Errors
    /// `Error::Index` for an integer index out of range, `Error::Argument` for a
    /// zero step or more items than axes, `Error::Shape` above the maximum rank.
    pub fn slice(&self, items: &[SliceItem]) -> Result<Layout> {
        const OP: &str = "slice";
        let consumed = items
            .iter()
            .filter(|i| !matches!(i, SliceItem::NewAxis))
            .count();
        if consumed > self.rank() {
            return Err(Error::argument(
                OP,
                format!(
                    "{consumed} indices given for a tensor of rank {} (shape {})",
                    self.rank(),
                    self.shape
                ),
            ));
        }
        let mut shape: DimVec<usize> = DimVec::new();
        let mut strides: DimVec<isize> = DimVec::new();
        let mut offset = self.offset as isize;
        let mut axis = 0;
        for item in items {
            match *item {
                SliceItem::NewAxis => {
                    shape.push(1);
                    strides.push(0);
                }
                SliceItem::Index(i) => {
                    let n = self.dims()[axis];
                    let pos = if i < 0 { i + n as isize } else { i };
                    if pos < 0 || pos >= n as isize {
                        return Err(Error::Index {
                            op: OP,
                            index: i,
                            axis,
                            size: n,
                        });
                    }
                    offset += pos * self.strides[axis];
                    axis += 1;
                }
                SliceItem::Range { start, end, step } => {
                    if step == 0 {
                        return Err(Error::argument(
                            OP,
                            format!("step must not be zero (axis {axis})"),
                        ));
                    }
                    let (first, count) = resolve_range(start, end, step, self.dims()[axis]);
                    if count > 0 {
                        offset += first * self.strides[axis];
                    }
                    shape.push(count);
                    // Steps past the axis leave one element, whose stride
                    // does not matter (and might not fit an isize).
                    strides.push(if count > 1 {
                        self.strides[axis] * step
                    } else {
                        self.strides[axis]
                    });
                    axis += 1;
                }
            }
        }
        shape.extend_from_slice(&self.dims()[axis..]);
        strides.extend_from_slice(&self.strides[axis..]);
        let shape = Shape::from(shape);
        shape.check(OP)?;
        Ok(Layout::from_parts(shape, strides, offset as usize))
    }

    /// Reorders the axes: axis `k` of the result is axis `axes[k]` of `self`.
    ///
    /// # Errors
    /// `Error::Argument` when `axes` is not a permutation of `0..rank`
    /// (negative axes are allowed).
    pub fn permute(&self, axes: &[isize]) -> Result<Layout> {
        const OP: &str = "permute";
        if axes.len() != self.rank() {
            return Err(Error::argument(
                OP,
                format!(
                    "{} axes given for a tensor of rank {}",
                    axes.len(),
                    self.rank()
                ),
            ));
        }
        // Sized by the rank: an internal layout may hold more axes than a
        // tensor's MAX_RANK (a pair view, an axis split in two).
        let mut seen: DimVec<bool> = smallvec::smallvec![false; self.rank()];
        let mut shape: DimVec<usize> = DimVec::new();
        let mut strides: DimVec<isize> = DimVec::new();
        for &a in axes {
            let a = normalize_axis(OP, a, self.rank())?;
            if seen[a] {
                return Err(Error::argument(
                    OP,
                    format!("axis {a} repeated in {axes:?}"),
                ));
            }
            seen[a] = true;
            shape.push(self.dims()[a]);
            strides.push(self.strides[a]);
        }
        Ok(Layout::from_parts(shape.into(), strides, self.offset))
    }

    /// Swaps two axes.
    ///
    /// # Errors
    /// `Error::Axis` when either axis is out of range.
    pub fn transpose(&self, a: isize, b: isize) -> Result<Layout> {
        let a = normalize_axis("transpose", a, self.rank())?;
        let b = normalize_axis("transpose", b, self.rank())?;
        let mut axes: DimVec<isize> = (0..self.rank() as isize).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// Reverses the order of all axes (NumPy's `.T`).
    pub fn reversed_axes(&self) -> Layout {
        let mut shape: DimVec<usize> = DimVec::from_slice(self.dims());
        let mut strides = self.strides.clone();
        shape.reverse();
        strides.reverse();
        Layout::from_parts(shape.into(), strides, self.offset)
    }

    /// Broadcasts to `shape` by NumPy's rule; new and size-1 axes get stride 0.
    ///
    /// # Errors
    /// `Error::Shape` when `self` cannot broadcast to `shape`.
    pub fn broadcast_to(&self, shape: &Shape) -> Result<Layout> {
        const OP: &str = "broadcast_to";
        if shape == self.shape() {
            return Ok(self.clone());
        }
        shape.check(OP)?;
        let fail = || {
            Error::shape(
                OP,
                format!("cannot broadcast shape {} to {}", self.shape, shape),
            )
        };
        if shape.rank() < self.rank() {
            return Err(fail());
        }
        let lead = shape.rank() - self.rank();
        let mut strides: DimVec<isize> = smallvec::smallvec![0; shape.rank()];
        for (k, &target) in shape.dims().iter().enumerate().skip(lead) {
            let (d, s) = (self.dims()[k - lead], self.strides[k - lead]);
            strides[k] = match d {
                _ if d == target => s,
                1 => 0,
                _ => return Err(fail()),
            };
        }
        Ok(Layout::from_parts(shape.clone(), strides, self.offset))
    }

    /// Inserts an axis of extent 1 at `axis` (in `-(rank+1)..=rank`).
    ///
    /// # Errors
    /// `Error::Axis` when out of range, `Error::Shape` above the maximum rank.
    pub fn unsqueeze(&self, axis: isize) -> Result<Layout> {
        let axis = normalize_axis("unsqueeze", axis, self.rank() + 1)?;
        let mut shape: DimVec<usize> = DimVec::from_slice(self.dims());
        let mut strides = self.strides.clone();
        shape.insert(axis, 1);
        strides.insert(axis, 0);
        let shape = Shape::from(shape);
        shape.check("unsqueeze")?;
        Ok(Layout::from_parts(shape, strides, self.offset))
    }

    /// Removes axes of extent 1: the one given, or all when `axis` is `None`.
    /// A 0-d layout's axis 0 or -1 is its one element, as NumPy and
    /// PyTorch take it: squeezed, it stays 0-d.
    ///
    /// # Errors
    /// `Error::Axis` when out of range, `Error::Shape` when that axis is not 1.
    pub fn squeeze(&self, axis: Option<isize>) -> Result<Layout> {
        let keep: DimVec<bool> = match axis {
            None => self.dims().iter().map(|&d| d != 1).collect(),
            Some(0 | -1) if self.rank() == 0 => DimVec::new(),
            Some(a) => {
                let a = normalize_axis("squeeze", a, self.rank())?;
                if self.dims()[a] != 1 {
                    return Err(Error::shape(
                        "squeeze",
                        format!(
                            "axis {a} has extent {}, not 1 (shape {})",
                            self.dims()[a],
                            self.shape
                        ),
                    ));
                }
                (0..self.rank()).map(|k| k != a).collect()
            }
        };
        let shape: DimVec<usize> = (0..self.rank())
            .filter(|&k| keep[k])
            .map(|k| self.dims()[k])
            .collect();
        let strides: DimVec<isize> = (0..self.rank())
            .filter(|&k| keep[k])
            .map(|k| self.strides[k])
            .collect();
        Ok(Layout::from_parts(shape.into(), strides, self.offset))
    }

    /// Reverses the given axes (NumPy's `flip`): negative stride, moved offset.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range, `Error::Argument` for a repeat.
    pub fn flip(&self, axes: &[isize]) -> Result<Layout> {
        let mut out = self.clone();
        let mut seen: DimVec<bool> = smallvec::smallvec![false; self.rank()];
        for &a in axes {
            let a = normalize_axis("flip", a, self.rank())?;
            if seen[a] {
                return Err(Error::argument(
                    "flip",
                    format!("axis {a} repeated in {axes:?}"),
                ));
            }
            seen[a] = true;
            let n = self.dims()[a];
            if self.numel() > 0 {
                out.offset = (out.offset as isize + (n as isize - 1) * out.strides[a]) as usize;
            }
            out.strides[a] = -out.strides[a];
        }
        Ok(out)
    }

    /// Elements `start..start + len` along `axis` (resolved and checked by
    /// the caller): the same strides from a moved offset.
    pub(crate) fn narrowed(&self, axis: usize, start: usize, len: usize) -> Layout {
        debug_assert!(start + len <= self.dims()[axis]);
        let mut dims: DimVec<usize> = DimVec::from_slice(self.dims());
        dims[axis] = len;
        // A non-empty range starts at an element of the view, so the new
        // offset is a valid position even for a negative stride.
        let offset = if len == 0 {
            self.offset
        } else {
            (self.offset as isize + start as isize * self.strides[axis]) as usize
        };
        Layout::from_parts(dims.into(), self.strides.clone(), offset)
    }

    /// This layout with one more axis, last, of extent `size` and stride
    /// `stride` (the reach of an indexed axis beside the coordinates an
    /// index op walks; it may pass the maximum rank).
    pub(crate) fn with_last_axis(&self, size: usize, stride: isize) -> Layout {
        let dims: DimVec<usize> = self.dims().iter().copied().chain([size]).collect();
        let strides: DimVec<isize> = self.strides.iter().copied().chain([stride]).collect();
        Layout::from_parts(dims.into(), strides, self.offset)
    }

    /// This layout without its last axis (at that axis's first position);
    /// itself when it has none.
    pub(crate) fn without_last_axis(&self) -> Layout {
        let keep = self.rank().saturating_sub(1);
        Layout::from_parts(
            self.dims()[..keep]
                .iter()
                .copied()
                .collect::<DimVec<usize>>()
                .into(),
            self.strides[..keep].iter().copied().collect(),
            self.offset,
        )
    }

    /// The extents of the last two axes (the matrices of a batch).
    ///
    /// # Errors
    /// `Error::Shape` naming `op` for a rank below 2.
    pub(crate) fn matrix_sides(&self, op: &'static str) -> Result<(usize, usize)> {
        let rank = self.rank();
        if rank < 2 {
            return Err(Error::shape(
                op,
                format!("needs at least 2 axes, the shape is {}", self.shape()),
            ));
        }
        Ok((self.dims()[rank - 2], self.dims()[rank - 1]))
    }

    /// The diagonal `offset` of the last two axes (above the main diagonal
    /// for `offset > 0`, below for `< 0`) as a new last axis, the batch axes
    /// kept in front: stride `row + column`, no copy. A diagonal outside
    /// the matrix is empty.
    ///
    /// # Errors
    /// `Error::Shape` naming `op` for a rank below 2.
    pub(crate) fn diagonal(&self, op: &'static str, offset: isize) -> Result<Layout> {
        let (rows, cols) = self.matrix_sides(op)?;
        let rank = self.rank();
        let (rs, cs) = (self.strides[rank - 2], self.strides[rank - 1]);
        let (skip_rows, skip_cols) = if offset >= 0 {
            (0, offset.unsigned_abs())
        } else {
            (offset.unsigned_abs(), 0)
        };
        let len = rows
            .saturating_sub(skip_rows)
            .min(cols.saturating_sub(skip_cols));
        let mut dims: DimVec<usize> = DimVec::from_slice(&self.dims()[..rank - 2]);
        dims.push(len);
        let mut strides: DimVec<isize> = DimVec::from_slice(&self.strides[..rank - 2]);
        strides.push(rs + cs);
        // The first element exists when the diagonal is not empty.
        let start = if len == 0 {
            self.offset
        } else {
            (self.offset as isize + skip_rows as isize * rs + skip_cols as isize * cs) as usize
        };
        Ok(Layout::from_parts(dims.into(), strides, start))
    }

    /// The layout of `shape` over the same elements in row-major order, if the
    /// strides allow it without a copy (NumPy's no-copy reshape); `None` when a
    /// copy is needed, and when the element counts differ.
    pub fn reshaped(&self, shape: &Shape) -> Option<Layout> {
        if shape.numel() != self.numel() {
            return None;
        }
        if self.numel() == 0 || self.is_contiguous() {
            let mut l = Layout::contiguous(shape.clone());
            if self.numel() > 0 {
                l.offset = self.offset;
            }
            return Some(l);
        }
        // Drop extent-1 axes; they constrain nothing.
        let (old_d, old_s): (DimVec<usize>, DimVec<isize>) = self
            .dims()
            .iter()
            .zip(self.strides.iter())
            .filter(|(d, _)| **d != 1)
            .map(|(&d, &s)| (d, s))
            .unzip();
        let new_d = shape.dims();
        let mut new_s: DimVec<isize> = smallvec::smallvec![0; new_d.len()];
        let (mut oi, mut oj, mut ni, mut nj) = (0, 1, 0, 1);
        while ni < new_d.len() && oi < old_d.len() {
            let (mut np, mut op) = (new_d[ni], old_d[oi]);
            while np != op {
                if np < op {
                    np *= new_d[nj];
                    nj += 1;
                } else {
                    op *= old_d[oj];
                    oj += 1;
                }
            }
            // The old axes oi..oj must form one evenly strided block.
            for k in oi..oj - 1 {
                if old_s[k] != old_d[k + 1] as isize * old_s[k + 1] {
                    return None;
                }
            }
            new_s[nj - 1] = old_s[oj - 1];
            for k in (ni + 1..nj).rev() {
                new_s[k - 1] = new_s[k] * new_d[k] as isize;
            }
            ni = nj;
            nj += 1;
            oi = oj;
            oj += 1;
        }
        // Trailing extent-1 axes of the new shape.
        for s in new_s.iter_mut().skip(ni) {
            *s = 1;
        }
        Some(Layout::from_parts(shape.clone(), new_s, self.offset))
    }
}
