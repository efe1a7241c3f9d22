//! Allocations kept for reuse: the shared cells behind a tensor's storage
//! and behind a GPU storage's buffer claim. The last [`Shared`] handle to a
//! cell empties it (its data, buffer and device let go, as dropping would)
//! and parks it, and the next storage or claim made on the same thread
//! takes it: a loop replacing a tensor by an op's result
//! (`x = x.add(&y)?`) allocates nothing on the heap once warm. A cell held
//! elsewhere too (another handle, a weak one) is left to its last holder.

use super::Storage;
use super::cpu::{CpuData, CpuStorage, Threads};
use super::gpu::BufferClaim;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::LocalKey;

/// Parked cells of one type, on one thread.
pub(crate) type Parked<T> = RefCell<Vec<Arc<T>>>;

/// A value whose cells are parked for reuse.
pub(crate) trait Recycle: Sized + 'static {
    /// Cells kept a thread at most.
    const KEPT: usize;
    /// This thread's parked cells.
    fn parked() -> &'static LocalKey<Parked<Self>>;
    /// Lets go of what the value holds: no handle is left.
    fn empty(&mut self);
}

thread_local! {
    static STORAGES: Parked<Storage> = const { RefCell::new(Vec::new()) };
    static CLAIMS: Parked<BufferClaim> = const { RefCell::new(Vec::new()) };
}

impl Recycle for Storage {
    // A loop drops about as many tensors as it makes.
    const KEPT: usize = 64;

    fn parked() -> &'static LocalKey<Parked<Self>> {
        &STORAGES
    }

    fn empty(&mut self) {
        // A GPU storage gives its buffer back and lets its claim go.
        *self = Storage::Cpu(CpuStorage::new(CpuData::empty(), Threads::default()));
    }
}

impl Recycle for BufferClaim {
    // A batch's commands hold its outputs' claims until the flush, which
    // lets go of them all at once: about a thousand for 1024 ops.
    const KEPT: usize = 2048;

    fn parked() -> &'static LocalKey<Parked<Self>> {
        &CLAIMS
    }

    fn empty(&mut self) {
        self.let_go_of_buffer();
    }
}

/// `value` in a shared cell: a parked one when this thread has one.
pub(crate) fn cell<T: Recycle>(value: T) -> Arc<T> {
    // A thread being torn down has no list: a new cell then.
    let parked = T::parked()
        .try_with(|l| l.borrow_mut().pop())
        .ok()
        .flatten();
    match parked {
        Some(mut cell) => match Arc::get_mut(&mut cell) {
            Some(slot) => {
                *slot = value;
                cell
            }
            None => Arc::new(value),
        },
        None => Arc::new(value),
    }
}

/// A counted handle to a cell (an `Arc`) whose last holder parks the cell
/// for reuse (see the module docs).
pub(crate) struct Shared<T: Recycle>(ManuallyDrop<Arc<T>>);

impl<T: Recycle> Shared<T> {
    /// The first handle to `cell` (from [`cell`], or a cell of its own).
    pub fn new(cell: Arc<T>) -> Shared<T> {
        Shared(ManuallyDrop::new(cell))
    }
}

impl<T: Recycle> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        Shared::new(Arc::clone(&self.0))
    }
}

impl<T: Recycle> Deref for Shared<T> {
    type Target = Arc<T>;

    fn deref(&self) -> &Arc<T> {
        &self.0
    }
}

impl<T: Recycle> Drop for Shared<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the handle is being dropped: its `Arc` is taken once,
        // here, and never used again.
        let cell = unsafe { ManuallyDrop::take(&mut self.0) };
        // The count alone lets a shared cell go without `get_mut`'s atomic
        // exchange.
        if Arc::strong_count(&cell) == 1 {
            park(cell);
        }
    }
}

/// Empties and parks `cell` when nobody else holds it; drops it else.
#[inline(never)]
fn park<T: Recycle>(mut cell: Arc<T>) {
    if let Some(value) = Arc::get_mut(&mut cell) {
        value.empty();
        let _ = T::parked().try_with(|l| {
            let mut l = l.borrow_mut();
            if l.len() < T::KEPT {
                l.push(cell);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Storage {
        Storage::Cpu(CpuStorage::new(CpuData::empty(), Threads::default()))
    }

    #[test]
    fn a_parked_cell_is_reused_and_a_shared_one_is_not_parked() {
        let first = Shared::new(cell(empty()));
        let address = Arc::as_ptr(&first);
        drop(first);
        let second = Shared::new(cell(empty()));
        assert_eq!(Arc::as_ptr(&second), address, "the parked cell comes back");
        let weak = Arc::downgrade(&second);
        drop(second);
        let third = Shared::new(cell(empty()));
        assert_ne!(
            Arc::as_ptr(&third),
            address,
            "a cell still held is not parked"
        );
        drop(weak);
    }
}
