//! Ops over GPU views that span more than one storage binding, split into
//! ops over views that fit one (each bound in a window of the buffer, see
//! `Bound::rebased`), whose results are joined. Elementwise ops need none of
//! this: the scheduler binds them in windows itself.

use crate::tensor::Tensor;

/// The most elements a GPU kernel combines into one output (a reduction's,
/// a product's inner dimension): its counts and positions are 32-bit. A
/// broadcast view makes longer ones cheap to ask for; they are cut.
pub(super) const MAX_KERNEL_EXTENT: usize = (1 << 31) - 1;

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
        self.binding_cut_except(None)
    }

    /// [`Tensor::binding_cut`] along any axis but `keep` (when the view
    /// spans more than one binding along `keep` alone: `None`, and binding
    /// it fails).
    pub(super) fn binding_cut_except(&self, keep: Option<usize>) -> Option<Cut> {
        // Most tensors: no view of them needs a cut.
        if self.storage().fits_one_binding() {
            return None;
        }
        let limit = self.storage().binding_limit()?;
        // Positions in storage elements (a c64 element is two f32).
        let per = self.dtype().stored_as().1;
        let (lo, hi) = self.layout().span()?;
        if self.storage().window_fits(lo * per, hi * per + per - 1) {
            return None;
        }
        let bytes = (self.dtype().size_in_bytes()) as u64;
        let span = (hi - lo + 1) as u64 * bytes;
        let half = (limit / 2).max(1);
        let dims = self.dims();
        let reach = |a: &usize| self.layout().strides()[*a].unsigned_abs() * (dims[*a] - 1);
        let axis = (0..self.rank())
            .filter(|&a| dims[a] > 1 && Some(a) != keep)
            .max_by_key(reach)?;
        let parts = span.div_ceil(half).min(dims[axis] as u64).max(2) as usize;
        Some(Cut { axis, parts })
    }

    /// The storage binding limit in bytes of this tensor's GPU device;
    /// `None` on the CPU.
    pub(super) fn gpu_binding_limit(&self) -> Option<u64> {
        self.storage().binding_limit()
    }

    /// True when one line of this view along `axis` spans at most half a
    /// storage binding (so a view of one line always fits one); always on
    /// the CPU.
    pub(super) fn line_fits_binding(&self, axis: usize) -> bool {
        let Some(limit) = self.gpu_binding_limit() else {
            return true;
        };
        let n = self.dims()[axis].max(1) as u64;
        let step = self.strides()[axis].unsigned_abs() as u64;
        let bytes = self.dtype().size_in_bytes() as u64;
        (step * (n - 1) + 1) * bytes <= limit / 2
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

/// The operands of one part of an indexing op (see [`for_each_indexed_part`]).
pub(super) struct IndexedPart<'a> {
    /// The op's other operands, over the coordinates it walks.
    pub views: &'a [Tensor],
    /// The indexed tensor over those coordinates, with the indexed axis
    /// appended last, from position `first` of that axis.
    pub target: &'a Tensor,
    pub first: usize,
}

/// Runs `f` over parts of an indexing op whose every operand fits one
/// storage binding: `views` (of one shape) and `target` (that shape and the
/// indexed axis, last) are cut alike along the walked coordinates, and
/// `target` alone along the indexed axis, whose every part then takes the
/// indices that fall in it. Once, for the whole op, when everything fits
/// (always on the CPU).
///
/// # Errors
/// Those of `f`.
pub(super) fn for_each_indexed_part(
    part: IndexedPart<'_>,
    f: &mut dyn FnMut(IndexedPart<'_>) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let IndexedPart {
        views,
        target,
        first,
    } = part;
    let Some(cut) = views.iter().chain([target]).find_map(Tensor::binding_cut) else {
        return f(part);
    };
    let along = target.rank() - 1;
    let step = target.dims()[cut.axis].div_ceil(cut.parts);
    let targets = target.cut_parts(cut)?;
    // Cut along the indexed axis, the parts keep the views whole and move
    // `first`; cut along another, the views are cut alike.
    let cut_views = if cut.axis == along {
        None
    } else {
        let cut_views = views.iter().map(|v| v.cut_parts(cut));
        Some(cut_views.collect::<crate::error::Result<Vec<_>>>()?)
    };
    for (k, target) in targets.iter().enumerate() {
        let (views, first): (Vec<Tensor>, usize) = match &cut_views {
            None => (views.to_vec(), first + k * step),
            Some(cut_views) => (cut_views.iter().map(|p| p[k].clone()).collect(), first),
        };
        for_each_indexed_part(
            IndexedPart {
                views: &views,
                target,
                first,
            },
            f,
        )?;
    }
    Ok(())
}

/// Runs `f` over parts of `views` (of one shape) cut alike across the
/// lines along `axis`, never along it, so that a part has at most
/// `max_lines` lines and every view whose one line fits half a storage
/// binding ([`Tensor::line_fits_binding`]) fits one binding in a part
/// (the caller copies parts of the others, or takes another way). Once,
/// for the whole op, when everything fits (always on the CPU).
///
/// # Errors
/// Those of `f`.
pub(super) fn for_each_part_across(
    views: &[Tensor],
    axis: usize,
    max_lines: usize,
    f: &mut dyn FnMut(&[Tensor]) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let Some(first) = views.first() else {
        return Ok(());
    };
    let dims = first.dims();
    let lines = first.numel() / dims[axis].max(1);
    let too_many = || {
        let widest = (0..dims.len())
            .filter(|&a| a != axis && dims[a] > 1)
            .max_by_key(|&a| dims[a])?;
        let parts = lines.div_ceil(max_lines.max(1)).min(dims[widest]).max(2);
        Some(Cut {
            axis: widest,
            parts,
        })
    };
    let cut = views
        .iter()
        .filter(|v| v.line_fits_binding(axis))
        .find_map(|v| v.binding_cut_except(Some(axis)))
        .or_else(|| if lines > max_lines { too_many() } else { None });
    let Some(cut) = cut else {
        return f(views);
    };
    let cut_views = views
        .iter()
        .map(|v| v.cut_parts(cut))
        .collect::<crate::error::Result<Vec<_>>>()?;
    for k in 0..cut_views[0].len() {
        let part: Vec<Tensor> = cut_views.iter().map(|p| p[k].clone()).collect();
        for_each_part_across(&part, axis, max_lines, f)?;
    }
    Ok(())
}
