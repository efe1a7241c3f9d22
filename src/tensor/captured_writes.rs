//! The storages a captured step writes, so that every run of it counts as
//! a write to them (a host copy kept for a recovery goes stale: see
//! `backend/kept.rs`). A capture writes each destination once, through
//! `Tensor::kernel_out`; its runs replay the writes without the op layer.
//! The writes are noted by device, from every thread: ops other threads
//! record on the device while a step is captured become part of it.

use super::Tensor;
use crate::backend::Storage;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Captures in progress in the process: while none is, noting a write
/// costs one relaxed load.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// An open capture: its own number, its device's id, and the storages
/// written on the device so far (weakly: the step's intermediates go as
/// they would, and fuse).
type Open = (usize, u64, Vec<Weak<Storage>>);

/// The open captures (a second on a device is refused, but is open until
/// then): the process's, or on wasm (one thread, whose storages are not
/// `Send`) the thread's.
#[cfg(not(target_arch = "wasm32"))]
static OPEN: std::sync::Mutex<Vec<Open>> = std::sync::Mutex::new(Vec::new());
#[cfg(target_arch = "wasm32")]
thread_local! {
    static OPEN: std::cell::RefCell<Vec<Open>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Numbers the captures.
static OPENED: AtomicUsize = AtomicUsize::new(0);

/// `f` of the open captures.
fn with_open<R>(f: impl FnOnce(&mut Vec<Open>) -> R) -> R {
    #[cfg(not(target_arch = "wasm32"))]
    return f(&mut OPEN.lock().unwrap_or_else(|e| e.into_inner()));
    #[cfg(target_arch = "wasm32")]
    return OPEN.with_borrow_mut(f);
}

/// Notes a write to `t`'s storage for the capture open on the device it
/// writes, if any: its own storage's, or the one a recovery restored it to
/// (the write is counted on its own, which keeps the copy).
#[inline(always)]
pub(crate) fn note(t: &Tensor) {
    if CAPTURING.load(Ordering::Relaxed) > 0 {
        note_now(t);
    }
}

#[cold]
#[inline(never)]
fn note_now(t: &Tensor) {
    let Storage::Gpu(written) = &**t.storage() else {
        return;
    };
    let device = written.ctx.id();
    let storage = t.own_storage();
    with_open(|open| {
        for (_, _, writes) in open.iter_mut().filter(|(_, id, _)| *id == device) {
            if !writes
                .iter()
                .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(storage)))
            {
                writes.push(Arc::downgrade(storage));
            }
        }
    });
}

/// `f`'s result and the storages ops wrote on the device of id `device`
/// while it ran, on any thread.
pub(crate) fn during<R>(device: u64, f: impl FnOnce() -> R) -> (R, Vec<Weak<Storage>>) {
    /// Closes the capture of this number, on unwinding too.
    struct Capturing(usize);
    impl Capturing {
        fn close(&self) -> Vec<Weak<Storage>> {
            with_open(|open| {
                let at = open.iter().position(|(n, _, _)| *n == self.0);
                at.map(|at| open.swap_remove(at).2).unwrap_or_default()
            })
        }
    }
    impl Drop for Capturing {
        fn drop(&mut self) {
            self.close();
            CAPTURING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let number = OPENED.fetch_add(1, Ordering::Relaxed);
    with_open(|open| open.push((number, device, Vec::new())));
    CAPTURING.fetch_add(1, Ordering::Relaxed);
    let guard = Capturing(number);
    let result = f();
    let written = guard.close();
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
