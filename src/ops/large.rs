//! Ops over GPU views that span more than one storage binding, split into
//! ops over views that fit one (each bound in a window of the buffer, see
//! `Bound::view`), whose results are joined. Elementwise ops need none of
//! this: the scheduler binds them in windows itself.

use crate::backend::Storage;
use crate::tensor::Tensor;

/// A cut of a view into parts along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cut {
    pub axis: usize,
    pub parts: usize,
}

impl Tensor {
    /// Where to cut this view when it is on a GPU, in a buffer larger than
    /// one storage binding, and itself spans more than one binding holds
    /// (with its window's aligned start); `None` when it can be bound as it
    /// is. Cuts along the axis the view reaches furthest over, into parts
    /// spanning at most half a binding each where that axis allows (a part
    /// that still spans more is cut again by the caller's recursion).
    pub(super) fn binding_cut(&self) -> Option<Cut> {
        let Storage::Gpu(s) = &**self.storage() else {
            return None;
        };
        // Positions in storage elements (a c64 element is two f32).
        let per = self.dtype().stored_as().1;
        let (lo, hi) = self.layout().span()?;
        if s.window_fits(lo * per, hi * per + per - 1) {
            return None;
        }
        let bytes = (self.dtype().size_in_bytes()) as u64;
        let span = (hi - lo + 1) as u64 * bytes;
        let half = (s.binding_limit() / 2).max(1);
        let dims = self.dims();
        let reach = |a: &usize| self.layout().strides()[*a].unsigned_abs() * (dims[*a] - 1);
        let axis = (0..self.rank())
            .filter(|&a| dims[a] > 1)
            .max_by_key(reach)?;
        let parts = span.div_ceil(half).min(dims[axis] as u64).max(2) as usize;
        Some(Cut { axis, parts })
    }

    /// The views of the parts of `cut`, in order (the last may be shorter).
    pub(super) fn cut_parts(&self, cut: Cut) -> crate::error::Result<Vec<Tensor>> {
        let n = self.dims()[cut.axis];
        let step = n.div_ceil(cut.parts);
        (0..n)
            .step_by(step)
            .map(|start| self.narrow(cut.axis as isize, start, step.min(n - start)))
            .collect()
    }
}
