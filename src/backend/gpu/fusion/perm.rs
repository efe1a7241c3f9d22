//! Axis permutations between a producer's write and its reader's read, as
//! fusion composes them: a few bytes, copied, never on the heap.

use crate::layout::Layout;
use crate::shape::{DimVec, MAX_RANK, Shape};
use std::borrow::Cow;

/// An axis permutation: axis `d` of the result is axis `get(d)` of the
/// source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Perm {
    axes: [u8; MAX_RANK],
    rank: u8,
}

impl Perm {
    /// The permutation that keeps each of `rank` axes in place.
    pub fn identity(rank: usize) -> Perm {
        Perm::from_axes(0..rank)
    }

    /// The permutation taking axis `axes[d]` of the source to axis `d`
    /// (at most [`MAX_RANK`] axes, each below it: ranks are bounded so).
    fn from_axes(axes: impl IntoIterator<Item = usize>) -> Perm {
        let mut p = Perm {
            axes: [0; MAX_RANK],
            rank: 0,
        };
        for (slot, a) in p.axes.iter_mut().zip(axes) {
            *slot = a as u8;
            p.rank += 1;
        }
        p
    }

    /// The source axis of result axis `d`.
    pub fn get(&self, d: usize) -> usize {
        usize::from(self.axes[d])
    }

    /// The source axes, in result order.
    pub fn axes(&self) -> impl Iterator<Item = usize> + '_ {
        self.axes[..usize::from(self.rank)]
            .iter()
            .map(|&a| usize::from(a))
    }

    pub fn is_identity(&self) -> bool {
        self.axes().enumerate().all(|(d, a)| d == a)
    }

    /// `outer` applied after `self`: permuting by the result equals
    /// permuting by `self`, then by `outer`.
    pub fn then(&self, outer: &Perm) -> Perm {
        Perm::from_axes(outer.axes().map(|d| self.get(d)))
    }

    /// [`Perm::apply`], borrowing `layout` itself when this keeps every
    /// axis in place.
    pub fn view<'a>(&self, layout: &'a Layout) -> Cow<'a, Layout> {
        if self.is_identity() {
            Cow::Borrowed(layout)
        } else {
            Cow::Owned(self.apply(layout))
        }
    }

    /// `layout` with its axes permuted by this (a permutation of its rank).
    pub fn apply(&self, layout: &Layout) -> Layout {
        if self.is_identity() {
            return layout.clone();
        }
        let dims: DimVec<usize> = self.axes().map(|a| layout.dims()[a]).collect();
        Layout::from_parts(
            Shape::from_dims(dims),
            self.axes().map(|a| layout.strides()[a]).collect(),
            layout.offset(),
        )
    }
}

/// True when two layouts of one shape address the same element at every
/// index (strides of extent-1 axes do not matter).
pub(super) fn same_elements(a: &Layout, b: &Layout) -> bool {
    // One pass over the few axes (fusion asks this several times an op).
    let (dims, other) = (a.dims(), b.dims());
    if dims.len() != other.len() {
        return false;
    }
    let (sa, sb) = (a.strides(), b.strides());
    let (mut empty, mut strides_agree) = (false, true);
    for d in 0..dims.len() {
        let n = dims[d];
        if n != other[d] {
            return false;
        }
        empty |= n == 0;
        strides_agree &= n == 1 || sa[d] == sb[d];
    }
    empty || (strides_agree && a.offset() == b.offset())
}

/// The permutation `p` with `p.apply(written)` addressing what `read`
/// addresses, if there is one.
pub(super) fn read_permutation(read: &Layout, written: &Layout) -> Option<Perm> {
    if read.rank() != written.rank() {
        return None;
    }
    // Most reads use the write's own layout.
    if same_elements(read, written) {
        return Some(Perm::identity(read.rank()));
    }
    let mut used = [false; MAX_RANK];
    let mut axes: DimVec<usize> = DimVec::new();
    for d in 0..read.rank() {
        let (n, stride) = (read.dims()[d], read.strides()[d]);
        let e = (0..written.rank()).find(|&e| {
            !used[e] && written.dims()[e] == n && (n == 1 || written.strides()[e] == stride)
        })?;
        used[e] = true;
        axes.push(e);
    }
    let perm = Perm::from_axes(axes);
    same_elements(&perm.view(written), read).then_some(perm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    #[test]
    fn permutations_compose_like_successive_permutes() {
        let l = Layout::contiguous([2, 3, 4]);
        let (inner, outer) = (Perm::from_axes([2, 0, 1]), Perm::from_axes([0, 2, 1]));
        let twice = outer.apply(&inner.apply(&l));
        assert_eq!(inner.then(&outer).apply(&l), twice);
        assert_eq!(twice.dims(), &[4, 3, 2]);
        assert_eq!(twice.strides(), &[1, 4, 12]);
        assert_eq!(Perm::identity(3).apply(&l), l);
    }

    #[test]
    fn a_transposed_read_is_a_permutation_of_the_write() {
        let written = Layout::contiguous([3, 4]);
        let read = written.transpose(0, 1).unwrap();
        let perm = read_permutation(&read, &written).unwrap();
        assert_eq!(perm.axes().collect::<Vec<_>>(), [1, 0]);
        let same = read_permutation(&written, &written).unwrap();
        assert_eq!(same.axes().collect::<Vec<_>>(), [0, 1]);
        // A stepped or reshaped read is not.
        let stepped = Layout::contiguous([6, 4])
            .slice(&[crate::index::SliceItem::Range {
                start: None,
                end: None,
                step: 2,
            }])
            .unwrap();
        assert!(read_permutation(&stepped, &written).is_none());
        let reshaped = written.reshaped(&[4, 3].into()).unwrap();
        assert!(read_permutation(&reshaped, &written).is_none());
    }

    #[test]
    fn extent_one_strides_do_not_matter() {
        let a = Layout::from_parts([1, 4].into(), smallvec![99, 1], 0);
        let b = Layout::contiguous([1, 4]);
        assert!(same_elements(&a, &b));
        assert!(!same_elements(&b, &Layout::contiguous([4, 1])));
        assert!(!same_elements(&b, &Layout::contiguous([1, 4, 1])));
        // Empty layouts address nothing, whatever their strides.
        let empty = Layout::from_parts([0, 4].into(), smallvec![7, 2], 0);
        assert!(same_elements(&empty, &Layout::contiguous([0, 4])));
        assert!(!same_elements(&empty, &Layout::contiguous([4, 0])));
        // Other strides or another offset are other elements.
        let shifted = Layout::from_parts([2, 4].into(), smallvec![4, 1], 1);
        assert!(!same_elements(&shifted, &Layout::contiguous([2, 4])));
        let stepped = Layout::from_parts([2, 4].into(), smallvec![8, 1], 0);
        assert!(!same_elements(&stepped, &Layout::contiguous([2, 4])));
    }
}
