//! `roll` and `pad`: copies that move elements along axes, built from
//! views (`narrow`), `concat`, `assign` and `index_select`, so they run on
//! every device and read any layout in place.

use crate::backend::cpu::try_collect;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::scalar::{Scalar, TypedScalar};
use crate::shape::{DimVec, Shape};
use crate::tensor::Tensor;

/// How [`Tensor::pad`] fills the new elements (NumPy's `pad` modes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PadMode {
    /// Every new element is this value (NumPy's `constant`).
    Constant(Scalar),
    /// The nearest edge element is repeated (NumPy's `edge`, PyTorch's
    /// `replicate`).
    Edge,
    /// Mirrored about the edge element, which is not repeated (NumPy's
    /// and PyTorch's `reflect`: `[1, 2, 3]` padded by 2 gives `3 2 1 2 3 2 1`).
    Reflect,
    /// The axis repeated periodically (NumPy's `wrap`, PyTorch's `circular`).
    Wrap,
}

impl Tensor {
    /// The elements shifted by `shift` places along `axis`, those pushed off
    /// one end coming back at the other (NumPy's `roll` with an axis; roll
    /// a flattened tensor for NumPy's default). A copy.
    ///
    /// # Errors
    /// `Error::Axis` naming `roll` for an axis out of range.
    pub fn roll(&self, shift: isize, axis: isize) -> Result<Tensor> {
        super::as_op("roll", || {
            let a = normalize_axis("roll", axis, self.rank())?;
            let n = self.dims()[a];
            let k = if n == 0 {
                0
            } else {
                shift.rem_euclid(n as isize) as usize
            };
            if k == 0 {
                return self.contiguous_copy();
            }
            let axis = a as isize;
            Tensor::concat(
                &[&self.narrow(axis, n - k, k)?, &self.narrow(axis, 0, n - k)?],
                axis,
            )
        })
    }

    /// A copy grown by `widths[i] = (before, after)` elements on the last
    /// `widths.len()` axes (all axes when there are `rank` pairs), the new
    /// elements filled as `mode` says (NumPy's `pad`). Each padded axis is
    /// up to three copies of views (nothing uploaded), or, where a
    /// reflection or wrap reaches past the axis and repeats it, a gather
    /// through an index of the padded axis's positions.
    ///
    /// ```
    /// use webtensor::{Device, PadMode, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::from_slice(&[1i32, 2, 3], [3], &Device::cpu())?;
    /// let p = t.pad(&[(2, 1)], PadMode::Constant(0.into()))?;
    /// assert_eq!(p.to_vec::<i32>()?, vec![0, 0, 1, 2, 3, 0]);
    /// assert_eq!(t.pad(&[(2, 2)], PadMode::Reflect)?.to_vec::<i32>()?, vec![3, 2, 1, 2, 3, 2, 1]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `pad` for more pairs than axes, a padded shape
    /// over the limits, or padding an empty axis by `Edge`, `Reflect` or
    /// `Wrap`; `Error::DType` for a constant the dtype cannot represent;
    /// `Error::OutOfMemory` when the padded tensor (or, for a reflection
    /// or wrap that repeats an axis, its index along it) cannot be
    /// allocated.
    pub fn pad(&self, widths: &[(usize, usize)], mode: PadMode) -> Result<Tensor> {
        self.pad_parts(widths, mode).map_err(|e| e.named("pad"))
    }

    /// [`Tensor::pad`], whose composed parts' errors name their own ops.
    fn pad_parts(&self, widths: &[(usize, usize)], mode: PadMode) -> Result<Tensor> {
        const OP: &str = "pad";
        let rank = self.rank();
        if widths.len() > rank {
            return Err(Error::shape(
                OP,
                format!(
                    "{} (before, after) pairs for the {rank} axes of shape {}",
                    widths.len(),
                    self.shape()
                ),
            ));
        }
        let first = rank - widths.len();
        let mut dims: DimVec<usize> = self.dims().iter().copied().collect();
        for (k, &(before, after)) in widths.iter().enumerate() {
            dims[first + k] = before
                .checked_add(after)
                .and_then(|w| w.checked_add(dims[first + k]))
                .ok_or_else(|| Error::shape(OP, format!("padding {before} + {after} overflows")))?;
        }
        let shape = Shape::from(dims);
        shape.check(OP)?;
        match mode {
            PadMode::Constant(value) => {
                if !self.dtype().is_complex() {
                    TypedScalar::new(OP, value, self.dtype())?;
                }
                let out = Tensor::full(&shape, value, self.dtype(), self.device())?;
                let mut inner = out.clone();
                for (k, &(before, _)) in widths.iter().enumerate() {
                    let axis = (first + k) as isize;
                    inner = inner.narrow(axis, before, self.dims()[first + k])?;
                }
                inner.assign(self)?;
                Ok(out)
            }
            // c64 has no index_select: its real and imaginary views are
            // padded alike.
            _ if self.dtype().is_complex() => Tensor::complex(
                &self.real()?.pad(widths, mode)?,
                &self.imag()?.pad(widths, mode)?,
            ),
            _ => {
                for (k, &(before, after)) in widths.iter().enumerate() {
                    let axis = first + k;
                    if self.dims()[axis] == 0 && before + after > 0 {
                        return Err(Error::shape(
                            OP,
                            format!("cannot pad the empty axis {axis} by {mode:?}"),
                        ));
                    }
                }
                if shape.numel() == 0 {
                    // Empty along an axis not padded: no index to build,
                    // however long the padded axis (NumPy's shape at once).
                    return Tensor::zeros(&shape, self.dtype(), self.device());
                }
                let mut out = self.clone();
                for (k, &(before, after)) in widths.iter().enumerate() {
                    let axis = first + k;
                    let n = self.dims()[axis];
                    if before == 0 && after == 0 {
                        continue;
                    }
                    if let Some(padded) = pad_by_views(&out, axis, before, after, mode)? {
                        out = padded;
                        continue;
                    }
                    // The host may refuse an index as long as the padded
                    // axis: an OutOfMemory, as the output's own allocation.
                    let len = before + n + after;
                    let sources =
                        (0..len).map(|i| source_index(mode, i as i64 - before as i64, n as i64));
                    // i32 indices where they reach (a GPU tensor holds
                    // 2^31 - 1 elements at most; the CPU's may hold more).
                    let index = match i32::try_from(n) {
                        Ok(_) => {
                            let index = try_collect(OP, len, sources.map(|j| j as i32))?;
                            Tensor::from_vec(index, [len], self.device())?
                        }
                        Err(_) => {
                            Tensor::from_vec(try_collect(OP, len, sources)?, [len], self.device())?
                        }
                    };
                    out = out.index_select(&index, axis as isize)?;
                }
                if widths.iter().all(|&(b, a)| b == 0 && a == 0) {
                    return out.contiguous_copy();
                }
                Ok(out)
            }
        }
    }
}

/// `x` padded along `axis` by `before` and `after` under `mode` (`Edge`,
/// `Reflect` or `Wrap`) with no index: a fresh tensor whose middle is `x`
/// and whose bands are copies of views of `x` (its ends broadcast, a
/// reversed run, or its other end): up to three copies, nothing uploaded
/// (a centred `stft` of a long signal uploaded an index as long as it).
/// `None` where a band reaches past the axis (a reflection or a wrap of
/// more than the axis holds repeats it), for the gather to take.
fn pad_by_views(
    x: &Tensor,
    axis: usize,
    before: usize,
    after: usize,
    mode: PadMode,
) -> Result<Option<Tensor>> {
    let n = x.dims()[axis];
    let ax = axis as isize;
    // A reflection of one element repeats it, as an edge does.
    let mode = match mode {
        PadMode::Reflect if n == 1 => PadMode::Edge,
        mode => mode,
    };
    let fits = match mode {
        PadMode::Reflect => before < n && after < n,
        PadMode::Wrap => before <= n && after <= n,
        _ => true,
    };
    if !fits {
        return Ok(None);
    }
    let mut dims = x.dims().to_vec();
    dims[axis] = before + n + after;
    let out = Tensor::empty_dense(Shape::from(dims), x.dtype(), x.device(), "pad")?;
    out.narrow(ax, before, n)?.assign(x)?;
    for (start, len, first) in [(0, before, true), (before + n, after, false)] {
        if len == 0 {
            continue;
        }
        let band = out.narrow(ax, start, len)?;
        let source = match (mode, first) {
            (PadMode::Reflect, true) => x.narrow(ax, 1, len)?.flip(&[ax])?,
            (PadMode::Reflect, false) => x.narrow(ax, n - 1 - len, len)?.flip(&[ax])?,
            (PadMode::Wrap, true) => x.narrow(ax, n - len, len)?,
            (PadMode::Wrap, false) => x.narrow(ax, 0, len)?,
            (_, true) => x.narrow(ax, 0, 1)?.broadcast_to(band.shape().clone())?,
            (_, false) => x.narrow(ax, n - 1, 1)?.broadcast_to(band.shape().clone())?,
        };
        band.assign(&source)?;
    }
    Ok(Some(out))
}

/// The element of an axis of extent `n` that position `i` (counted from the
/// axis's first element, negative before it) copies under `mode`.
fn source_index(mode: PadMode, i: i64, n: i64) -> i64 {
    match mode {
        PadMode::Edge | PadMode::Constant(_) => i.clamp(0, n - 1),
        PadMode::Wrap => i.rem_euclid(n),
        PadMode::Reflect if n == 1 => 0,
        PadMode::Reflect => {
            let period = 2 * (n - 1);
            let r = i.rem_euclid(period);
            if r < n { r } else { period - r }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_indices_follow_numpy() {
        let along = |mode, before: i64, n: i64, after: i64| -> Vec<i64> {
            (-before..n + after)
                .map(|i| source_index(mode, i, n))
                .collect()
        };
        // np.pad([0, 1, 2], 4, mode) indices.
        assert_eq!(along(PadMode::Edge, 2, 3, 2), [0, 0, 0, 1, 2, 2, 2]);
        assert_eq!(
            along(PadMode::Wrap, 4, 3, 4),
            [2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            along(PadMode::Reflect, 4, 3, 4),
            [0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2]
        );
        assert_eq!(along(PadMode::Reflect, 2, 1, 1), [0, 0, 0, 0]);
        // A CPU axis past 2^31 elements: its indices stay whole (as i32
        // they wrapped negative, and index_select counted them from the
        // end).
        let n = 3_000_000_000;
        assert_eq!(source_index(PadMode::Wrap, -1, n), n - 1);
        assert_eq!(source_index(PadMode::Edge, n + 4, n), n - 1);
        assert_eq!(source_index(PadMode::Reflect, n, n), n - 2);
    }
}
