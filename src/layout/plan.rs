//! Iteration planning for elementwise kernels.
//!
//! Elementwise work does not depend on the order in which elements are
//! visited, so before a kernel runs, the operands' layouts are simplified
//! together: extent-1 axes are dropped, axes the destination walks backwards
//! are turned around, axes are ordered so that the destination is walked in
//! memory order, and neighbouring axes that every operand steps through evenly
//! are merged. A transposed-but-dense operand set then becomes one flat run,
//! and the contiguous fast path applies.

use super::Layout;
use crate::shape::{DimVec, Shape};
use smallvec::SmallVec;

/// Operand strides and offsets over a simplified common shape. Operand 0 is
/// the one whose memory order is followed (the destination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IterPlan {
    /// The simplified extents (rank 1 at least).
    pub shape: DimVec<usize>,
    /// One stride vector per operand, same rank as `shape`.
    pub strides: SmallVec<[DimVec<isize>; 4]>,
    /// One storage offset per operand.
    pub offsets: SmallVec<[usize; 4]>,
}

/// Innermost runs shorter than this make [`IterPlan::with_long_runs`] put
/// a longer axis innermost.
pub(crate) const SHORT_RUN: usize = 16;

impl IterPlan {
    /// Plans iteration over operands that all have the same shape (inputs
    /// already broadcast). `layouts[0]` leads the memory order.
    pub fn new(layouts: &[&Layout]) -> IterPlan {
        let numel = layouts[0].numel();
        let mut offsets: SmallVec<[usize; 4]> = layouts.iter().map(|l| l.offset()).collect();
        if numel <= 1 {
            return IterPlan {
                shape: smallvec::smallvec![numel],
                strides: layouts.iter().map(|_| smallvec::smallvec![1]).collect(),
                offsets,
            };
        }
        let lead = layouts[0];
        // Axes that matter, turned so that the lead operand walks forwards.
        let axes: DimVec<usize> = (0..lead.rank()).filter(|&k| lead.dims()[k] > 1).collect();
        let mut strides: SmallVec<[DimVec<isize>; 4]> = layouts
            .iter()
            .map(|l| axes.iter().map(|&k| l.strides()[k]).collect())
            .collect();
        let mut shape: DimVec<usize> = axes.iter().map(|&k| lead.dims()[k]).collect();
        for j in 0..shape.len() {
            if strides[0][j] < 0 {
                for (s, off) in strides.iter_mut().zip(offsets.iter_mut()) {
                    *off = (*off as isize + (shape[j] as isize - 1) * s[j]) as usize;
                    s[j] = -s[j];
                }
            }
        }
        // Order axes by the lead operand's stride, largest first (stable, so
        // equal strides keep their logical order).
        let mut order: DimVec<usize> = (0..shape.len()).collect();
        order.sort_by_key(|&j| std::cmp::Reverse(strides[0][j]));
        shape = order.iter().map(|&j| shape[j]).collect();
        for s in strides.iter_mut() {
            *s = order.iter().map(|&j| s[j]).collect();
        }
        // Merge axis j into j-1 wherever every operand steps evenly across both.
        let mut k = shape.len() - 1;
        while k > 0 {
            let mergeable = strides.iter().all(|s| s[k - 1] == s[k] * shape[k] as isize);
            if mergeable {
                shape[k - 1] *= shape[k];
                shape.remove(k);
                for s in strides.iter_mut() {
                    s.remove(k - 1);
                }
            }
            k -= 1;
        }
        IterPlan {
            shape,
            strides,
            offsets,
        }
    }

    /// The plan with a longer axis innermost where the innermost one is
    /// shorter than [`SHORT_RUN`] (a transposed shuffle's, an interleave's):
    /// the innermost of those at least that long (the lead's smallest
    /// stride among them), else the longest. Longer runs, for loops whose
    /// results do not depend on the order they visit the elements in
    /// (elementwise ops, not sums).
    pub fn with_long_runs(mut self) -> IterPlan {
        let rank = self.shape.len();
        if rank < 2 || self.shape[rank - 1] >= SHORT_RUN {
            return self;
        }
        let outer = 0..rank - 1;
        let long = outer.clone().rev().find(|&j| self.shape[j] >= SHORT_RUN);
        let Some(j) = long.or_else(|| outer.max_by_key(|&j| self.shape[j])) else {
            return self;
        };
        if self.shape[j] > self.shape[rank - 1] {
            self.shape[j..].rotate_left(1);
            for s in self.strides.iter_mut() {
                s[j..].rotate_left(1);
            }
        }
        self
    }

    /// For a plan of an output and one input: where the output's axis of
    /// unit stride is 2 to [`SHORT_RUN`] - 1 long (a nearest upsampling's
    /// repeats, whose input stride is 0; a pixel shuffle's interleave), the
    /// plan without that axis, the output's axis of stride `rep` (its
    /// length) innermost, `rep`, and the input's stride `t` along it.
    /// Element `i` of a run of that plan is output elements `i rep + k`
    /// for `k < rep`, from input elements `i sa + k t`.
    pub fn interleaved(&self) -> Option<(IterPlan, usize, isize)> {
        let [out, a] = [self.strides.first()?, self.strides.get(1)?];
        let rank = self.shape.len();
        let r = (0..rank).find(|&d| out[d] == 1 && (2..SHORT_RUN).contains(&self.shape[d]))?;
        let rep = self.shape[r];
        let q = (0..rank)
            .filter(|&d| d != r && out[d] == rep as isize && self.shape[d] > 1)
            .max_by_key(|&d| self.shape[d])?;
        let order: DimVec<usize> = (0..rank).filter(|&d| d != r && d != q).chain([q]).collect();
        let plan = IterPlan {
            shape: order.iter().map(|&d| self.shape[d]).collect(),
            strides: self
                .strides
                .iter()
                .map(|s| order.iter().map(|&d| s[d]).collect())
                .collect(),
            offsets: self.offsets.clone(),
        };
        Some((plan, rep, a[r]))
    }

    /// The number of elements visited.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when every operand is one forward run of consecutive elements.
    pub fn is_contiguous(&self) -> bool {
        self.shape.len() == 1 && self.strides.iter().all(|s| s[0] == 1)
    }
}

/// The layout a fresh destination of `shape` should get: the memory order of
/// the first input that has this shape and is dense in some axis order (so
/// that an op on transposed inputs streams through memory, as NumPy's `K`
/// order does), else row-major. Strides are always positive.
pub(crate) fn dense_layout_like(shape: &Shape, inputs: &[&Layout]) -> Layout {
    for input in inputs {
        if input.shape() != shape {
            continue;
        }
        if input.is_contiguous() {
            break;
        }
        let mut order: DimVec<usize> = (0..shape.rank()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(input.strides()[k].unsigned_abs()));
        let mut expected = 1usize;
        let mut dense = true;
        let mut strides: DimVec<isize> = smallvec::smallvec![0; shape.rank()];
        for &k in order.iter().rev() {
            let d = shape.dims()[k];
            if d != 1 && input.strides()[k].unsigned_abs() != expected {
                dense = false;
                break;
            }
            strides[k] = expected as isize;
            expected *= d.max(1);
        }
        if dense {
            return Layout::from_parts(shape.clone(), strides, 0);
        }
    }
    Layout::contiguous(shape.clone())
}
