//! [`Shape`]: the extents of a tensor, and NumPy's broadcasting rule.

use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt;

/// The largest rank a tensor may have. GPU kernels carry this many
/// (extent, stride) pairs per operand in their parameters.
pub const MAX_RANK: usize = 8;

/// The most elements a shape may describe: 2^60 on 64-bit targets, 2^28 on
/// 32-bit ones (wasm32), so that the byte size of any dtype's storage and
/// every element offset fit in an `isize`.
pub const MAX_ELEMENTS: usize = (isize::MAX as usize >> 3) + 1;

/// Inline storage for per-dimension values: no heap up to rank 4, the
/// common case (a layout, two of these, is copied several times on the way
/// from an op to its kernel: room for [`MAX_RANK`] inline cost ~10% of an
/// elementwise op's host instructions, BENCHMARKS.md). Ranks 5 to 8 spill
/// to the heap.
pub(crate) type DimVec<T> = SmallVec<[T; 4]>;

/// The extent of each dimension, outermost first. A rank-0 shape is a scalar.
#[derive(PartialEq, Eq, Hash, Default)]
pub struct Shape(DimVec<usize>);

// One copy of the extents (a derived clone copies them one at a time).
impl Clone for Shape {
    fn clone(&self) -> Self {
        Shape(DimVec::from_slice(&self.0))
    }
}

impl Shape {
    /// The shape of a rank-0 (scalar) tensor.
    pub fn scalar() -> Self {
        Shape(DimVec::new())
    }

    /// The shape with extents `dims` (no copy to the heap).
    pub(crate) fn from_dims(dims: DimVec<usize>) -> Self {
        Shape(dims)
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The number of elements (1 for a scalar, 0 if any extent is 0). A
    /// shape past [`MAX_ELEMENTS`] (which no tensor has) saturates at
    /// `usize::MAX` rather than overflowing.
    pub fn numel(&self) -> usize {
        if self.0.contains(&0) {
            return 0;
        }
        self.0
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .unwrap_or(usize::MAX)
    }

    /// Checks the rank against [`MAX_RANK`] and the element count against
    /// [`MAX_ELEMENTS`]. As in NumPy, the count is checked with zero extents
    /// taken as 1, so that every stride of every view fits too.
    ///
    /// # Errors
    /// `Error::Shape` naming `op` and the shape when either is over its limit.
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        if self.rank() > MAX_RANK {
            return Err(Error::shape(
                op,
                format!("rank {} exceeds the maximum rank {MAX_RANK}", self.rank()),
            ));
        }
        let fits = self
            .0
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d.max(1)))
            .is_some_and(|n| n <= MAX_ELEMENTS);
        if !fits {
            return Err(Error::shape(
                op,
                format!("shape {self} has more than {MAX_ELEMENTS} elements"),
            ));
        }
        Ok(())
    }

    /// Row-major (C order) strides for this shape, in elements.
    pub fn contiguous_strides(&self) -> DimVec<isize> {
        let mut strides: DimVec<isize> = smallvec::smallvec![0; self.rank()];
        let mut acc = 1isize;
        for (s, &d) in strides.iter_mut().zip(self.0.iter()).rev() {
            *s = acc;
            // The product past the first axis is never a stride: it
            // saturates where the element count passes `isize::MAX`.
            acc = acc.saturating_mul(d.max(1) as isize);
        }
        strides
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims())
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape(DimVec::from_slice(d))
    }
}

impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape(SmallVec::from_vec(d))
    }
}

impl From<&Vec<usize>> for Shape {
    fn from(d: &Vec<usize>) -> Self {
        Shape::from(d.as_slice())
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape(d.into_iter().collect())
    }
}

impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(d: &[usize; N]) -> Self {
        Shape(d.iter().copied().collect())
    }
}

impl From<usize> for Shape {
    fn from(d: usize) -> Self {
        Shape(smallvec::smallvec![d])
    }
}

impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape::scalar()
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<DimVec<usize>> for Shape {
    fn from(d: DimVec<usize>) -> Self {
        Shape(d)
    }
}

/// The extent `a * b` (a repetition), within [`MAX_ELEMENTS`].
///
/// # Errors
/// `Error::Shape` naming `op` and both values when it is over the limit.
pub(crate) fn mul_extents(op: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| Error::shape(op, format!("extent {a} x {b} is over {MAX_ELEMENTS}")))
}

/// The extent `a + b` (a join), within [`MAX_ELEMENTS`].
///
/// # Errors
/// `Error::Shape` naming `op` and both values when it is over the limit.
pub(crate) fn add_extents(op: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_add(b)
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| Error::shape(op, format!("extent {a} + {b} is over {MAX_ELEMENTS}")))
}

/// The shape two operands broadcast to, by NumPy's rule (`np.broadcast_shapes`):
/// align trailing dimensions; each pair must be equal or contain a 1.
///
/// ```
/// use webtensor::{Shape, broadcast_shapes};
/// let out = broadcast_shapes(&Shape::from([2, 1, 3]), &Shape::from([4, 1]))?;
/// assert_eq!(out.dims(), &[2, 4, 3]);
/// # Ok::<(), webtensor::Error>(())
/// ```
///
/// # Errors
/// `Error::Shape` naming `broadcast_shapes` and both shapes when a pair is
/// incompatible.
pub fn broadcast_shapes(a: &Shape, b: &Shape) -> Result<Shape> {
    broadcast_for("broadcast_shapes", a, b)
}

/// [`broadcast_shapes`] for `op`, whose name the error carries.
pub(crate) fn broadcast_for(op: &'static str, a: &Shape, b: &Shape) -> Result<Shape> {
    let rank = a.rank().max(b.rank());
    let mut out: DimVec<usize> = smallvec::smallvec![0; rank];
    for (i, o) in out.iter_mut().enumerate() {
        let da = dim_from_end(a, rank - i);
        let db = dim_from_end(b, rank - i);
        *o = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::shape(
                    op,
                    format!("cannot broadcast shapes {a} and {b}"),
                ));
            }
        };
    }
    Ok(Shape(out))
}

/// Extent `k` places from the end (1-based), or 1 past the front.
fn dim_from_end(s: &Shape, k: usize) -> usize {
    if k <= s.rank() {
        s.dims()[s.rank() - k]
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let s = |d: &[usize]| Shape::from(d);
        assert_eq!(
            broadcast_for("t", &s(&[2, 1, 3]), &s(&[4, 1])).unwrap(),
            s(&[2, 4, 3])
        );
        assert_eq!(broadcast_for("t", &s(&[]), &s(&[5])).unwrap(), s(&[5]));
        assert_eq!(broadcast_for("t", &s(&[0]), &s(&[1])).unwrap(), s(&[0]));
        let err = broadcast_for("add", &s(&[2, 3]), &s(&[4])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "add: cannot broadcast shapes [2, 3] and [4]"
        );
    }

    #[test]
    fn contiguous_strides_are_row_major() {
        assert_eq!(
            Shape::from([2, 3, 4]).contiguous_strides().as_slice(),
            &[12, 4, 1]
        );
        assert_eq!(
            Shape::from([2, 0, 4]).contiguous_strides().as_slice(),
            &[4, 4, 1]
        );
        assert!(Shape::scalar().contiguous_strides().is_empty());
    }

    #[test]
    fn element_counts_past_the_limit_are_errors() {
        assert!(Shape::from([1 << 30, 1 << 30]).check("t").is_ok());
        let err = Shape::from([1 << 62, 4]).check("zeros").unwrap_err();
        assert_eq!(
            err.to_string(),
            "zeros: shape [4611686018427387904, 4] has more than 1152921504606846976 elements"
        );
        // Zero extents do not hide an overflow of the others.
        assert!(Shape::from([0, 1 << 32, 1 << 32]).check("t").is_err());
        assert!(Shape::from([usize::MAX, 2]).check("t").is_err());
        assert!(Shape::from([0, 1 << 40]).check("t").is_ok());
        assert!(Shape::from([1; 9]).check("t").is_err());
    }
}
