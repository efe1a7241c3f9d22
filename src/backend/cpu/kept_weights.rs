//! A convolution's packed weights kept with the weight's storage for the
//! next call ([`CpuStorage::derived`]), as ONNX Runtime packs a session's
//! weights once: packed again after a write to the storage, or for
//! another view of it. The weight may be any view of its storage
//! (channels-last, PyTorch's `model.to(memory_format=channels_last)`, or
//! flipped): the panels are packed from its strides, and kept for it.

use super::storage::CpuStorage;
use crate::error::Result;
use crate::layout::Layout;
use std::sync::Arc;

/// What panels were packed from: the weight view's offset, dims `[o, cg,
/// kh, kw]` and strides, the groups and the panels' width.
pub(super) type From = [isize; 11];

/// `From` for the weight view `wl` packed for `groups` groups as panels
/// `width` wide.
pub(super) fn from(wl: &Layout, groups: usize, width: usize) -> From {
    let (d, s) = (wl.dims(), wl.strides());
    let u = |v: usize| v as isize;
    [
        u(wl.offset()),
        u(d[0]),
        u(d[1]),
        u(d[2]),
        u(d[3]),
        s[0],
        s[1],
        s[2],
        s[3],
        u(groups),
        u(width),
    ]
}

/// Where the rank-4 weight view `wl`'s element of output channel `oc` at
/// step `p` of its patch lies (the steps in the planes' order: input
/// channel, tap row, tap column).
pub(super) fn element(wl: &Layout) -> impl Fn(usize, usize) -> usize {
    let (d, s, offset) = (wl.dims(), wl.strides(), wl.offset() as isize);
    let ([kh, kw], s) = ([d[2], d[3]], [s[0], s[1], s[2], s[3]]);
    move |oc, p| {
        let (c, i, j) = (p / (kh * kw), p / kw % kh, p % kw);
        let at =
            offset + oc as isize * s[0] + c as isize * s[1] + i as isize * s[2] + j as isize * s[3];
        at as usize
    }
}

/// Weights packed as `P`, and what they were packed from.
pub(super) struct Kept<P> {
    from: From,
    pub(super) packed: P,
}

/// `pack`'s panels of the weight view `from` (as [`Kept`]'s), kept with
/// the weight's `storage` where `keep` (panels at most half padding),
/// else packed for the call alone. The caller holds the storage's read
/// lock.
///
/// # Errors
/// `pack`'s (an allocation refused).
pub(super) fn packed<P: Send + Sync + 'static>(
    storage: &CpuStorage,
    from: From,
    keep: bool,
    pack: impl FnOnce() -> Result<P>,
) -> Result<Arc<Kept<P>>> {
    let make = || {
        Ok(Kept {
            from,
            packed: pack()?,
        })
    };
    if keep {
        storage.derived(|k: &Kept<P>| k.from == from, make)
    } else {
        make().map(Arc::new)
    }
}
