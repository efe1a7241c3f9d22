//! The threads a CPU device's ops run on: rayon's global pool (sized by
//! `RAYON_NUM_THREADS`, else one thread per core) for `Device::cpu()`, or
//! a pool of its own for `Device::cpu_with_threads(n)`. Host storage
//! carries the pool of the device that made it, and an op on the CPU runs
//! inside [`Threads::enter`] of its output's storage: the kernels ask
//! [`count`] how many parts to cut their work into and run the parts under
//! [`install`], which moves them onto the op's pool. An op that does not
//! split never leaves the calling thread. wasm has one thread.

use crate::error::{Error, Result};
#[cfg(not(target_arch = "wasm32"))]
use std::cell::RefCell;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::Arc;

/// The pool behind a CPU device: `None` for rayon's global pool.
#[derive(Clone, Default)]
pub(crate) struct Threads {
    #[cfg(not(target_arch = "wasm32"))]
    pool: Option<Arc<rayon::ThreadPool>>,
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    /// The pool of the op running on this thread, while it runs.
    static CURRENT: RefCell<Option<Arc<rayon::ThreadPool>>> = const { RefCell::new(None) };
}

impl Threads {
    /// A pool of `n` threads of its own (one thread on wasm).
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for `n == 0`; `Error::Internal` when the
    /// system refuses the threads.
    pub fn new(op: &'static str, n: usize) -> Result<Threads> {
        if n == 0 {
            return Err(Error::argument(
                op,
                "threads = 0; a device needs at least one",
            ));
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("webtensor-cpu-{i}"))
                .build()
                .map_err(|e| Error::internal(op, format!("{n} threads: {e}")))?;
            Ok(Threads {
                pool: Some(Arc::new(pool)),
            })
        }
        #[cfg(target_arch = "wasm32")]
        Ok(Threads {})
    }

    /// How many threads this device's ops split over.
    pub fn count(&self) -> usize {
        #[cfg(not(target_arch = "wasm32"))]
        return match &self.pool {
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        };
        #[cfg(target_arch = "wasm32")]
        1
    }

    /// Whether two handles run ops on the same threads.
    pub fn same(&self, other: &Threads) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        return match (&self.pool, &other.pool) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        #[cfg(target_arch = "wasm32")]
        {
            let _ = other;
            true
        }
    }

    /// Runs `op` with this pool as the one its kernels split over.
    pub fn enter<R>(&self, op: impl FnOnce() -> R) -> R {
        #[cfg(not(target_arch = "wasm32"))]
        {
            /// Puts back the pool that was current, also on unwinding.
            struct Restore(Option<Arc<rayon::ThreadPool>>);
            impl Drop for Restore {
                fn drop(&mut self) {
                    let previous = self.0.take();
                    CURRENT.with(|current| *current.borrow_mut() = previous);
                }
            }
            let previous = CURRENT.with(|current| current.replace(self.pool.clone()));
            let _restore = Restore(previous);
            op()
        }
        #[cfg(target_arch = "wasm32")]
        op()
    }
}

/// How many parts the running op may cut its work into: its pool's thread
/// count (rayon's current pool outside [`Threads::enter`], or on a worker).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn count() -> usize {
    CURRENT.with(|current| match &*current.borrow() {
        Some(pool) => pool.current_num_threads(),
        None => rayon::current_num_threads(),
    })
}

/// wasm's one thread.
#[cfg(target_arch = "wasm32")]
pub(crate) fn count() -> usize {
    1
}

/// Runs `work` (which splits itself with rayon) on the running op's pool:
/// moved onto it when this thread is not one of its workers and the pool
/// has more than one (a pool of one runs it here).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn install<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    let pool = CURRENT.with(|current| current.borrow().clone());
    match pool {
        Some(pool) if pool.current_num_threads() > 1 && pool.current_thread_index().is_none() => {
            pool.install(work)
        }
        _ => work(),
    }
}

/// wasm's one thread runs `work` where it is.
#[cfg(target_arch = "wasm32")]
pub(crate) fn install<R>(work: impl FnOnce() -> R) -> R {
    work()
}

/// Calls `f((k, piece))` for the `k`-th `len`-element piece of `data`:
/// the pieces in parallel when the running op has more than one thread
/// and there are two pieces at least (one runs here, sparing the pool's
/// threads a wake-up).
pub(crate) fn for_each_piece_mut<T: Send>(
    data: &mut [T],
    len: usize,
    f: impl Fn((usize, &mut [T])) + Sync + Send,
) {
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > len && count() > 1 {
        use rayon::prelude::*;
        return install(|| data.par_chunks_mut(len).enumerate().for_each(f));
    }
    data.chunks_mut(len).enumerate().for_each(f)
}

/// Calls `f(k)` for each `k < n`: in parallel when the running op has
/// more than one thread and `n > 1`.
pub(crate) fn for_each_index(n: usize, f: impl Fn(usize) + Sync + Send) {
    #[cfg(not(target_arch = "wasm32"))]
    if n > 1 && count() > 1 {
        use rayon::prelude::*;
        return install(|| (0..n).into_par_iter().for_each(f));
    }
    (0..n).for_each(f)
}

/// Calls `f(group)` for each `len`-element group of `items`: the groups
/// in parallel when the running op has more than one thread and there are
/// two groups at least.
pub(crate) fn for_each_group<T: Sync>(items: &[T], len: usize, f: impl Fn(&[T]) + Sync + Send) {
    #[cfg(not(target_arch = "wasm32"))]
    if items.len() > len && count() > 1 {
        use rayon::prelude::*;
        return install(|| items.par_chunks(len).for_each(f));
    }
    items.chunks(len).for_each(f)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The threads `for_each_piece_mut` ran 64 pieces on, under `threads`.
    fn runners(threads: &Threads) -> (usize, Vec<Option<String>>) {
        let names = Mutex::new(Vec::new());
        let mut data = [0u8; 64];
        let counted = threads.enter(|| {
            for_each_piece_mut(&mut data, 1, |(k, piece)| {
                piece[0] = k as u8;
                let name = std::thread::current().name().map(str::to_string);
                names.lock().unwrap().push(name);
            });
            count()
        });
        assert!(data.iter().enumerate().all(|(k, &v)| v as usize == k));
        (counted, names.into_inner().unwrap())
    }

    #[test]
    fn an_op_splits_over_its_own_pool_and_only_there() {
        let (counted, names) = runners(&Threads::new("test", 3).unwrap());
        assert_eq!(counted, 3);
        assert!(
            names.iter().all(|n| n
                .as_deref()
                .is_some_and(|n| n.starts_with("webtensor-cpu-"))),
            "{names:?}"
        );
        // One thread: every piece on the calling thread.
        let here = std::thread::current().name().map(str::to_string);
        let (counted, names) = runners(&Threads::new("test", 1).unwrap());
        assert_eq!(counted, 1);
        assert!(names.iter().all(|n| *n == here), "{names:?}");
        // One piece, index or group runs here: the pool is not woken.
        let pool = Threads::new("test", 3).unwrap();
        let ran = Mutex::new(Vec::new());
        let name = || std::thread::current().name().map(str::to_string);
        pool.enter(|| {
            for_each_index(1, |_| ran.lock().unwrap().push(name()));
            for_each_piece_mut(&mut [0u8; 4], 4, |_| ran.lock().unwrap().push(name()));
            for_each_group(&[0u8; 4], 8, |_| ran.lock().unwrap().push(name()));
        });
        assert_eq!(ran.into_inner().unwrap(), vec![here.clone(); 3]);
        // Outside an op, rayon's pool is back.
        assert_eq!(count(), rayon::current_num_threads());
        assert!(Threads::new("test", 0).is_err());
    }
}
