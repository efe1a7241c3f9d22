//! [`ShapeSpec`]: the target shape of `reshape`, where one extent may be
//! left for the element count to decide (`-1`, as in NumPy and PyTorch).

use crate::error::{Error, Result};
use crate::shape::{DimVec, Shape};

/// A target shape for [`Tensor::reshape`](crate::Tensor::reshape): extents,
/// at most one of them `-1`, which is inferred from the element count.
///
/// Built from what a [`Shape`] is built from (`[2, 3]`, `&[usize]`, a
/// `Shape` ...) and from signed extents: `[-1, 3]`, `&[isize]`, `vec![4i64, -1]`.
///
/// ```
/// use webtensor::{Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let t = Tensor::arange(0i32, 12, 1, &Device::cpu())?;
/// assert_eq!(t.reshape([-1, 3])?.shape().dims(), &[4, 3]);
/// assert_eq!(t.reshape([2, -1, 2])?.shape().dims(), &[2, 3, 2]);
/// assert!(t.reshape([-1, 5]).is_err()); // 12 is not a multiple of 5
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeSpec(DimVec<i64>);

impl ShapeSpec {
    /// The extents, `-1` where one is to be inferred.
    pub fn extents(&self) -> &[i64] {
        &self.0
    }

    /// The shape this spec gives `numel` elements: `-1` replaced by the
    /// extent that makes the counts equal.
    ///
    /// # Errors
    /// `Error::Shape` naming `op` for an extent below -1, two `-1`s, or an
    /// element count the other extents do not divide (or, with a zero
    /// extent among them, cannot decide), and when the counts differ.
    pub(crate) fn resolve(&self, op: &'static str, from: &Shape) -> Result<Shape> {
        let numel = from.numel();
        let bad =
            |why: String| Error::shape(op, format!("cannot reshape {from} into {self}: {why}"));
        if let Some(&e) = self.0.iter().find(|&&e| e < -1) {
            return Err(bad(format!("extent {e} is negative")));
        }
        let inferred: Vec<usize> = (0..self.0.len()).filter(|&i| self.0[i] == -1).collect();
        if inferred.len() > 1 {
            return Err(bad("at most one extent may be -1".into()));
        }
        let known = self
            .0
            .iter()
            .filter(|&&e| e >= 0)
            .try_fold(1usize, |n, &e| {
                usize::try_from(e).ok().and_then(|e| n.checked_mul(e))
            });
        // An extent past usize (a 32-bit target's) is refused, not wrapped
        // onto one that happens to hold the count.
        let mut dims = DimVec::<usize>::new();
        for &e in &self.0 {
            dims.push(
                usize::try_from(e.max(0))
                    .map_err(|_| bad(format!("extent {e} is past this target's usize")))?,
            );
        }
        if let Some(&i) = inferred.first() {
            dims[i] = match known {
                Some(k) if k > 0 && numel.is_multiple_of(k) => numel / k,
                Some(0) => {
                    return Err(bad("the -1 extent is ambiguous beside a zero extent".into()));
                }
                _ => {
                    return Err(bad(format!(
                        "{numel} elements are not a multiple of the other extents"
                    )));
                }
            };
        }
        let shape = Shape::from(dims);
        shape.check(op)?;
        if shape.numel() != numel {
            return Err(bad(format!(
                "it has {numel} elements, the new shape {}",
                shape.numel()
            )));
        }
        Ok(shape)
    }
}

impl std::fmt::Display for ShapeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[")?;
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{e}")?;
        }
        write!(f, "]")
    }
}

impl From<Shape> for ShapeSpec {
    fn from(s: Shape) -> Self {
        ShapeSpec::from(&s)
    }
}

impl From<&Shape> for ShapeSpec {
    fn from(s: &Shape) -> Self {
        // A `Shape` is not checked as it is built: extents past `i64::MAX`
        // saturate as other extents do (they wrapped to -1, the one to infer).
        ShapeSpec(s.dims().iter().map(|&d| extent(d)).collect())
    }
}

impl From<()> for ShapeSpec {
    fn from(_: ()) -> Self {
        ShapeSpec(DimVec::new())
    }
}

/// Extents past `i64::MAX` become `i64::MAX`, which no element count matches.
fn extent<T: TryInto<i64>>(v: T) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

macro_rules! spec_from {
    ($($t:ty),*) => {$(
        impl From<$t> for ShapeSpec {
            fn from(d: $t) -> Self {
                ShapeSpec(smallvec::smallvec![extent(d)])
            }
        }
        impl From<&[$t]> for ShapeSpec {
            fn from(d: &[$t]) -> Self {
                ShapeSpec(d.iter().map(|&e| extent(e)).collect())
            }
        }
        impl From<Vec<$t>> for ShapeSpec {
            fn from(d: Vec<$t>) -> Self {
                ShapeSpec::from(d.as_slice())
            }
        }
        impl From<&Vec<$t>> for ShapeSpec {
            fn from(d: &Vec<$t>) -> Self {
                ShapeSpec::from(d.as_slice())
            }
        }
        impl<const N: usize> From<[$t; N]> for ShapeSpec {
            fn from(d: [$t; N]) -> Self {
                ShapeSpec::from(d.as_slice())
            }
        }
        impl<const N: usize> From<&[$t; N]> for ShapeSpec {
            fn from(d: &[$t; N]) -> Self {
                ShapeSpec::from(d.as_slice())
            }
        }
    )*};
}

spec_from!(usize, isize, i32, i64);

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(spec: impl Into<ShapeSpec>, from: impl Into<Shape>) -> Result<Vec<usize>> {
        Ok(spec
            .into()
            .resolve("reshape", &from.into())?
            .dims()
            .to_vec())
    }

    #[test]
    fn infers_one_extent() {
        assert_eq!(resolve([-1, 3], [12]).unwrap(), vec![4, 3]);
        assert_eq!(resolve([2, -1, 2], [3, 4]).unwrap(), vec![2, 3, 2]);
        assert_eq!(resolve(-1, [3, 4]).unwrap(), vec![12]);
        assert_eq!(resolve([-1], ()).unwrap(), vec![1]);
        assert!(resolve([-1, 0], [0]).is_err());
        assert!(resolve([0, -1], [0, 5]).is_err());
        assert_eq!(resolve([3, -1], [0]).unwrap(), vec![3, 0]);
        assert_eq!(resolve(vec![4usize, 3], [12]).unwrap(), vec![4, 3]);
    }

    #[test]
    fn refuses_what_cannot_be() {
        for (spec, why) in [
            (ShapeSpec::from([-1, -1]), "at most one"),
            (ShapeSpec::from([-2, 6]), "extent -2"),
            (ShapeSpec::from([-1, 5]), "not a multiple"),
            (ShapeSpec::from([5, 3]), "12 elements, the new shape 15"),
            (ShapeSpec::from([u64::MAX as usize, 1]), "elements"),
        ] {
            let e = spec.resolve("reshape", &Shape::from([3, 4])).unwrap_err();
            assert!(e.to_string().contains(why), "{spec}: {e}");
            assert!(e.to_string().contains("reshape"), "{e}");
        }
    }
}
