//! The storages a captured step writes, so that every run of it counts as
//! a write to them (a host copy kept for a recovery goes stale: see
//! `backend/kept.rs`). A capture writes each destination once, through
//! `Tensor::kernel_out`; its runs replay the writes without the op layer.

use crate::backend::Storage;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Captures in progress in the process: while none is, noting a write
/// costs one relaxed load.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The storages the step this thread captures has written (weakly: the
    /// step's intermediates go as they would, and fuse).
    static WRITES: RefCell<Option<Vec<Weak<Storage>>>> = const { RefCell::new(None) };
}

/// Notes a write to `storage` for the capture this thread runs, if any.
#[inline(always)]
pub(crate) fn note(storage: &Arc<Storage>) {
    if CAPTURING.load(Ordering::Relaxed) > 0 {
        note_now(storage);
    }
}

#[cold]
#[inline(never)]
fn note_now(storage: &Arc<Storage>) {
    WRITES.with_borrow_mut(|writes| {
        if let Some(writes) = writes
            && !writes
                .iter()
                .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(storage)))
        {
            writes.push(Arc::downgrade(storage));
        }
    });
}

/// `f`'s result and the storages its ops wrote on this thread.
pub(crate) fn during<R>(f: impl FnOnce() -> R) -> (R, Vec<Weak<Storage>>) {
    struct Capturing(Option<Vec<Weak<Storage>>>);
    impl Drop for Capturing {
        fn drop(&mut self) {
            WRITES.with_borrow_mut(|writes| *writes = self.0.take());
            CAPTURING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    CAPTURING.fetch_add(1, Ordering::Relaxed);
    let outer = WRITES.with_borrow_mut(|writes| writes.replace(Vec::new()));
    let guard = Capturing(outer);
    let result = f();
    let written = WRITES
        .with_borrow_mut(|writes| writes.take())
        .unwrap_or_default();
    drop(guard);
    (result, written)
}

/// Counts a write to each of `storages` still alive (after a run of the
/// step that wrote them was recorded).
pub(crate) fn written(storages: &[Weak<Storage>]) {
    for storage in storages.iter().filter_map(Weak::upgrade) {
        if let Storage::Gpu(s) = &*storage
            && let Some(kept) = s.kept()
        {
            kept.written();
        }
    }
}
