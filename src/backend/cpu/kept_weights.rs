//! A convolution's packed weights kept with the weight's storage for the
//! next call ([`CpuStorage::derived`]), as ONNX Runtime packs a session's
//! weights once: packed again after a write to the storage, or for
//! another view of it.

use super::storage::CpuStorage;
use crate::error::Result;
use std::sync::Arc;

/// Weights packed as `P`, and what they were packed from: the weight
/// view's offset and dims `[o, cg, kh, kw]` (its strides are dense), the
/// groups and the panels' width.
pub(super) struct Kept<P> {
    from: [usize; 7],
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
    from: [usize; 7],
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
