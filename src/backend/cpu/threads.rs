//! The threads a CPU device's ops run on: a [`Team`] (the calling thread
//! and spinning workers) for the kernels' parts, and a rayon pool for
//! gemm's products: the process's (one thread per core, or
//! `RAYON_NUM_THREADS`) for `Device::cpu()`, or a team and a pool of the
//! device's own for `Device::cpu_with_threads(n)`. Host storage carries the
//! threads of the device that made it, and an op on the CPU runs inside
//! [`Threads::enter`] of its output's storage: the kernels ask [`count`]
//! how many parts to cut their work into and run them with
//! [`for_each_index`] and its kin, and the products run under [`install`].
//! An op that does not split never leaves the calling thread. wasm has one
//! thread.

#[cfg(not(target_arch = "wasm32"))]
use super::team::Team;
use crate::error::{Error, Result};
#[cfg(not(target_arch = "wasm32"))]
use std::cell::RefCell;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::{Arc, OnceLock};

/// The threads behind a CPU device: `None` for the process's.
#[derive(Clone, Default)]
pub(crate) struct Threads {
    /// gemm's products.
    #[cfg(not(target_arch = "wasm32"))]
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Every other kernel's parts.
    #[cfg(not(target_arch = "wasm32"))]
    team: Option<Arc<Team>>,
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    /// The threads of the op running on this thread, while it runs.
    static CURRENT: RefCell<Option<Threads>> = const { RefCell::new(None) };
}

/// The process's team: one thread per rayon thread (per core, or
/// `RAYON_NUM_THREADS`), made on first use; the calling thread alone where
/// the system refuses the workers.
#[cfg(not(target_arch = "wasm32"))]
fn global_team() -> &'static Team {
    static TEAM: OnceLock<Team> = OnceLock::new();
    TEAM.get_or_init(|| {
        // The process's rayon pool, asked from a thread of no pool: on a
        // worker of an application's pool (its first op run inside
        // `pool.install`) `current_num_threads` is that pool's size.
        let size = std::thread::spawn(rayon::current_num_threads)
            .join()
            .unwrap_or_else(|_| rayon::current_num_threads());
        Team::new(size).unwrap_or_else(|_| Team::alone())
    })
}

/// The most threads a device takes: a count past it spawned threads
/// (rayon's pool quietly holds no more than 65,535) until the system
/// refused one, starving the machine first.
pub(crate) const MAX_THREADS: usize = 1024;

impl Threads {
    /// `n` threads of its own (one thread on wasm).
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for `n == 0` or past [`MAX_THREADS`];
    /// `Error::Internal` when the system refuses the threads.
    pub fn new(op: &'static str, n: usize) -> Result<Threads> {
        if n == 0 || n > MAX_THREADS {
            return Err(Error::argument(
                op,
                format!("threads = {n}; a device takes 1 to {MAX_THREADS}"),
            ));
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let refused =
                |e: &dyn std::fmt::Display| Error::internal(op, format!("{n} threads: {e}"));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("webtensor-gemm-{i}"))
                .build()
                .map_err(|e| refused(&e))?;
            let team = Team::new(n).map_err(|e| refused(&e))?;
            Ok(Threads {
                pool: Some(Arc::new(pool)),
                team: Some(Arc::new(team)),
            })
        }
        #[cfg(target_arch = "wasm32")]
        Ok(Threads {})
    }

    /// How many threads this device's ops split over.
    pub fn count(&self) -> usize {
        #[cfg(not(target_arch = "wasm32"))]
        return match &self.team {
            Some(team) => team.size(),
            None => global_team().size(),
        };
        #[cfg(target_arch = "wasm32")]
        1
    }

    /// Whether two handles run ops on the same threads.
    pub fn same(&self, other: &Threads) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        return match (&self.team, &other.team) {
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

    /// Runs `op` with these threads as the ones its kernels split over.
    pub fn enter<R>(&self, op: impl FnOnce() -> R) -> R {
        #[cfg(not(target_arch = "wasm32"))]
        {
            /// Puts back the threads that were current, also on unwinding.
            struct Restore(Option<Threads>);
            impl Drop for Restore {
                fn drop(&mut self) {
                    let previous = self.0.take();
                    CURRENT.with(|current| *current.borrow_mut() = previous);
                }
            }
            let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
            let _restore = Restore(previous);
            op()
        }
        #[cfg(target_arch = "wasm32")]
        op()
    }
}

/// The running op's threads (the process's outside [`Threads::enter`], or
/// on a worker).
#[cfg(not(target_arch = "wasm32"))]
fn current() -> Threads {
    CURRENT.with(|current| current.borrow().clone().unwrap_or_default())
}

/// How many parts the running op may cut its work into: its team's thread
/// count (read in place: this is asked once an op).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn count() -> usize {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .map_or_else(|| global_team().size(), Threads::count)
    })
}

/// wasm's one thread.
#[cfg(target_arch = "wasm32")]
pub(crate) fn count() -> usize {
    1
}

/// Runs `work` (gemm's products, which split themselves with rayon) on the
/// running op's rayon pool: moved onto it when this thread is not one of
/// its workers and the pool has more than one thread (a pool of one runs
/// it here; the process's pool takes rayon's work from any thread).
///
/// From a worker of another rayon pool (the application's), the work is
/// moved from a thread of its own: rayon's wait for it there runs that
/// pool's other jobs on this thread, which holds the op's storage locks,
/// and a job that locks the same storage waited on itself.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn install<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    let threads = current();
    match &threads.pool {
        Some(pool) if pool.current_num_threads() > 1 && pool.current_thread_index().is_none() => {
            // The op's threads go along: the work's own parts split over
            // the op's team, not the process's.
            let pool = pool.clone();
            let run = move || pool.install(move || threads.enter(work));
            if rayon::current_thread_index().is_none() {
                return run();
            }
            std::thread::scope(|s| match s.spawn(run).join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
        }
        _ => work(),
    }
}

/// True when this thread may wait on rayon's pool for gemm's parts: not
/// a worker of a pool other than the op's (see [`install`]), where the
/// wait would run that pool's jobs under the op's locks.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn may_wait_on_rayon() -> bool {
    let own = current()
        .pool
        .as_ref()
        .and_then(|p| p.current_thread_index());
    own.is_some() || rayon::current_thread_index().is_none()
}

/// wasm's one thread runs `work` where it is.
#[cfg(target_arch = "wasm32")]
pub(crate) fn install<R>(work: impl FnOnce() -> R) -> R {
    work()
}

/// Calls `f(k)` for each `k < n`: on the running op's team when it has
/// more than one thread and `n > 1` (this thread one of them), here
/// otherwise.
pub(crate) fn for_each_index(n: usize, f: impl Fn(usize) + Sync + Send) {
    #[cfg(not(target_arch = "wasm32"))]
    if n > 1 {
        let own = CURRENT.with(|current| current.borrow().as_ref().and_then(|t| t.team.clone()));
        let team = match &own {
            Some(team) => team,
            None => global_team(),
        };
        if team.size() > 1 {
            return team.run(n, &f);
        }
    }
    (0..n).for_each(f)
}

/// Calls `f((k, piece))` for the `k`-th `len`-element piece of `data`
/// (the last may be shorter), as [`for_each_index`] runs its indices.
pub(crate) fn for_each_piece_mut<T: Send>(
    data: &mut [T],
    len: usize,
    f: impl Fn((usize, &mut [T])) + Sync + Send,
) {
    assert!(len > 0, "pieces of no elements");
    let (total, first) = (data.len(), super::strided::Shared(data.as_mut_ptr()));
    for_each_index(total.div_ceil(len), |k| {
        let start = k * len;
        let piece = len.min(total - start);
        // SAFETY: pieces `start..start + piece` of distinct `k` are
        // disjoint and inside `data`, which the caller lends mutably
        // until every call has returned.
        let piece = unsafe { std::slice::from_raw_parts_mut(first.get().add(start), piece) };
        f((k, piece))
    })
}

/// Calls `f(group)` for each `len`-element group of `items` (the last may
/// be shorter), as [`for_each_index`] runs its indices.
pub(crate) fn for_each_group<T: Sync>(items: &[T], len: usize, f: impl Fn(&[T]) + Sync + Send) {
    assert!(len > 0, "groups of no items");
    for_each_index(items.len().div_ceil(len), |k| {
        f(&items[k * len..items.len().min((k + 1) * len)])
    })
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
                // Long enough for the team's workers to join in (32 ms
                // for the calling thread alone).
                std::thread::sleep(std::time::Duration::from_micros(500));
            });
            count()
        });
        assert!(data.iter().enumerate().all(|(k, &v)| v as usize == k));
        (counted, names.into_inner().unwrap())
    }

    #[test]
    fn an_op_splits_over_its_own_team_and_only_there() {
        let here = std::thread::current().name().map(str::to_string);
        let (counted, names) = runners(&Threads::new("test", 3).unwrap());
        assert_eq!(counted, 3);
        // The calling thread and the device's workers, no one else.
        assert!(
            names.iter().all(|n| *n == here
                || n.as_deref()
                    .is_some_and(|n| n.starts_with("webtensor-cpu-"))),
            "{names:?}"
        );
        assert!(
            names.iter().any(|n| *n != here),
            "no worker joined: {names:?}"
        );
        // One thread: every piece on the calling thread.
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
        // Work moved onto the device's rayon pool (gemm's products) still
        // splits over the device's team.
        let n = rayon::current_num_threads() + 1;
        let own = Threads::new("test", n).unwrap();
        assert_eq!(own.enter(|| install(count)), n);
        // Outside an op, the process's threads are back.
        assert_eq!(count(), rayon::current_num_threads());
        assert!(Threads::new("test", 0).is_err());
    }
}
