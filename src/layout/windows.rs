//! Binding windows: how one op over operands larger than a storage binding
//! is split into blocks whose operands each fit one window of their buffer.
//!
//! A device binds at most `max_storage_buffer_binding_size` bytes of a
//! buffer at a time (128 MiB in browsers and on lavapipe), at an offset
//! that is a multiple of its storage offset alignment, while the buffer
//! itself may be larger. An op over such a buffer runs once per block of
//! its index space, each time binding only the bytes that block touches.
//! Operands sharing a buffer (an in-place op reading its own storage)
//! share one window. Pure layout math: no device is involved.

use super::Layout;
use crate::shape::DimVec;

/// One operand of an op to split: its layout over the op's common shape,
/// the binding it is read through and the bytes of one element there.
#[derive(Debug, Clone)]
pub(crate) struct WindowOperand<'a> {
    pub layout: &'a Layout,
    /// Operands with the same binding share one window.
    pub binding: usize,
    /// Bytes per element in the buffer (2 for f16 packed or not, 1 for u8).
    pub element_bytes: u64,
}

/// The bytes of one binding a block touches: bind `size` bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Window {
    /// A multiple of the alignment.
    pub offset: u64,
    /// A multiple of 4, at least 4.
    pub size: u64,
}

/// One block of an op: the operands' layouts inside it, rebased to their
/// binding's window, and the window of each binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// Per operand, in the order given: the block's elements, positions
    /// counted from the start of the operand's window.
    pub layouts: Vec<Layout>,
    /// Per binding (index = binding); `None` for a binding no operand uses.
    pub windows: Vec<Option<Window>>,
}

/// The window of a binding covering elements `lo..=hi` of `element_bytes`
/// each, starting at a multiple of `align` and ending on a 4-byte word.
pub(crate) fn window_of(lo: usize, hi: usize, element_bytes: u64, align: u64) -> Window {
    let offset = (lo as u64 * element_bytes) / align * align;
    let end = ((hi as u64 + 1) * element_bytes).next_multiple_of(4);
    Window {
        offset,
        size: (end - offset).max(4),
    }
}

/// Splits the op over `operands` (all of one shape) into blocks whose every
/// binding window is at most `limit` bytes, windows starting at multiples
/// of `align` (a power of two, at least 4). One block when everything fits
/// already; none for an empty op. A block is split in two along the axis
/// over which some operand reaches furthest in its buffer, until it fits.
/// A single element fits any real device (`limit` is far above `align`
/// plus an element); one that did not would come back as it is, and the
/// caller's binding would fail.
pub(crate) fn split_into_windows(
    operands: &[WindowOperand<'_>],
    limit: u64,
    align: u64,
) -> Vec<Block> {
    let Some(first) = operands.first() else {
        return Vec::new();
    };
    let dims: DimVec<usize> = DimVec::from_slice(first.layout.dims());
    if dims.contains(&0) {
        return Vec::new();
    }
    let bindings = operands.iter().map(|o| o.binding + 1).max().unwrap_or(0);
    let mut blocks = Vec::new();
    // Blocks as (start, len) per axis, split depth first so that blocks
    // come out in the destination's index order.
    let mut todo: Vec<DimVec<(usize, usize)>> = vec![dims.iter().map(|&d| (0, d)).collect()];
    while let Some(ranges) = todo.pop() {
        let layouts: Vec<Layout> = operands.iter().map(|o| narrow(o.layout, &ranges)).collect();
        let windows = windows_of(operands, &layouts, bindings, align);
        let fits = windows.iter().flatten().all(|w| w.size <= limit);
        let axis = if fits {
            None
        } else {
            widest_axis(operands, &layouts)
        };
        match axis {
            Some(axis) => {
                let (start, len) = ranges[axis];
                let half = len / 2;
                let mut low = ranges.clone();
                low[axis] = (start, half);
                let mut high = ranges;
                high[axis] = (start + half, len - half);
                todo.push(high);
                todo.push(low);
            }
            None => blocks.push(rebased(operands, layouts, windows)),
        }
    }
    blocks
}

/// The sub-layout of `layout` over `ranges` (start, len) per axis.
fn narrow(layout: &Layout, ranges: &[(usize, usize)]) -> Layout {
    let mut out = layout.clone();
    for (axis, &(start, len)) in ranges.iter().enumerate() {
        out = out.narrowed(axis, start, len);
    }
    out
}

/// The window of each binding over the operands' `layouts`.
fn windows_of(
    operands: &[WindowOperand<'_>],
    layouts: &[Layout],
    bindings: usize,
    align: u64,
) -> Vec<Option<Window>> {
    let mut spans: Vec<Option<(usize, usize, u64)>> = vec![None; bindings];
    for (o, l) in operands.iter().zip(layouts) {
        let Some((lo, hi)) = l.span() else { continue };
        let slot = &mut spans[o.binding];
        *slot = Some(match *slot {
            Some((a, b, e)) => (a.min(lo), b.max(hi), e),
            None => (lo, hi, o.element_bytes),
        });
    }
    spans
        .into_iter()
        .map(|s| s.map(|(lo, hi, e)| window_of(lo, hi, e, align)))
        .collect()
}

/// The axis (extent above 1) along which some operand reaches furthest in
/// bytes; `None` when every extent is 1.
fn widest_axis(operands: &[WindowOperand<'_>], layouts: &[Layout]) -> Option<usize> {
    let dims = layouts[0].dims();
    (0..dims.len()).filter(|&a| dims[a] > 1).max_by_key(|&a| {
        operands
            .iter()
            .zip(layouts)
            .map(|(o, l)| {
                l.strides()[a].unsigned_abs() as u64 * (dims[a] as u64 - 1) * o.element_bytes
            })
            .max()
            .unwrap_or(0)
    })
}

/// The block with each operand's offset counted from its window's start.
fn rebased(
    operands: &[WindowOperand<'_>],
    layouts: Vec<Layout>,
    windows: Vec<Option<Window>>,
) -> Block {
    let layouts = operands
        .iter()
        .zip(layouts)
        .map(|(o, l)| match windows[o.binding] {
            Some(w) => {
                let shift = (w.offset / o.element_bytes) as usize;
                Layout::from_parts(l.shape().clone(), l.strides().into(), l.offset() - shift)
            }
            None => l,
        })
        .collect();
    Block { layouts, windows }
}
