//! A team of threads that splits one op's work: the calling thread and
//! `n - 1` workers take the indices of a job from one counter. Between
//! jobs a worker spins a while ([`SPIN`]) before it sleeps, so that the
//! next op of a network (microseconds later) finds it awake: a pool whose
//! threads sleep after each op, and whose caller sleeps while they work,
//! paid two wake-ups an op (20 to 100 us each on a 2-core VM), as much as
//! a small op's work. onnxruntime's and OpenMP's pools spin the same way.
//!
//! One job runs at a time: a caller that finds the team busy (another
//! thread's op, or a job inside a job) runs its indices itself.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a worker waits for the next job awake before it sleeps.
const SPIN: Duration = Duration::from_micros(200);

/// The calling thread and its workers.
pub(crate) struct Team {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Held by the caller whose job runs.
    caller: Mutex<()>,
}

/// What the workers and the caller share.
struct Shared {
    /// Bumped for each job: a worker joins each job once.
    epoch: AtomicU64,
    /// The running job (a `Job` on its caller's stack), null between jobs.
    job: AtomicPtr<()>,
    /// Workers between taking `job` and finishing with it.
    active: AtomicUsize,
    /// Workers asleep, or about to be.
    sleepers: AtomicUsize,
    quit: AtomicBool,
    sleep: Mutex<()>,
    wake: Condvar,
}

/// One job: `f(k)` for each `k < n`.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    n: usize,
    /// The next index to take.
    next: AtomicUsize,
    /// Indices finished.
    done: AtomicUsize,
    /// The first panic of an index, resumed on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Job<'_> {
    /// Takes and runs indices until none is left.
    fn work(&self) {
        loop {
            let k = self.next.fetch_add(1, SeqCst);
            if k >= self.n {
                return;
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.f)(k)));
            if let Err(payload) = ran {
                let mut first = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(payload);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

impl Team {
    /// A team of `n` threads: this one and `n - 1` workers named
    /// `webtensor-cpu-{k}`.
    ///
    /// # Errors
    /// The system's, when it refuses a thread.
    pub(crate) fn new(n: usize) -> std::io::Result<Team> {
        let mut team = Team::alone();
        for k in 0..n.saturating_sub(1) {
            let shared = team.shared.clone();
            // The epoch before any job: a worker that starts after the
            // first job was posted still joins it.
            let worker = std::thread::Builder::new()
                .name(format!("webtensor-cpu-{k}"))
                .spawn(move || shared.serve(0))?;
            // Pushed one by one: a refusal drops (and stops) those made.
            team.workers.push(worker);
        }
        Ok(team)
    }

    /// The calling thread alone: jobs run where they are called.
    pub(crate) fn alone() -> Team {
        Team {
            shared: Arc::new(Shared {
                epoch: AtomicU64::new(0),
                job: AtomicPtr::new(std::ptr::null_mut()),
                active: AtomicUsize::new(0),
                sleepers: AtomicUsize::new(0),
                quit: AtomicBool::new(false),
                sleep: Mutex::new(()),
                wake: Condvar::new(),
            }),
            workers: Vec::new(),
            caller: Mutex::new(()),
        }
    }

    /// The threads a job runs on: the caller and the workers.
    pub(crate) fn size(&self) -> usize {
        self.workers.len() + 1
    }

    /// Calls `f(k)` for each `k < n`, on this thread and the workers, and
    /// returns when every call has; a call's panic is resumed here. On
    /// this thread alone when the team is busy or has no workers.
    pub(crate) fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        // (A poisoned lock only says an earlier job's index panicked.)
        let _running = match self.caller.try_lock() {
            Ok(running) => running,
            Err(std::sync::TryLockError::Poisoned(running)) => running.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return (0..n).for_each(f),
        };
        if n < 2 || self.workers.is_empty() {
            return (0..n).for_each(f);
        }
        let job = Job {
            f,
            n,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        };
        let s = &self.shared;
        s.job.store((&job as *const Job).cast_mut().cast(), SeqCst);
        s.epoch.fetch_add(1, SeqCst);
        if s.sleepers.load(SeqCst) > 0 {
            let _asleep = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        job.work();
        // Every index finished, then no worker holds the job any longer:
        // a worker counted active after the null below sees the null.
        let mut waits = 0u32;
        while job.done.load(SeqCst) < n {
            pause(&mut waits);
        }
        s.job.store(std::ptr::null_mut(), SeqCst);
        while s.active.load(SeqCst) != 0 {
            pause(&mut waits);
        }
        let panic = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    }
}

/// Waits a moment: spinning at first, then yielding the core (a worker
/// running a long index, on a machine with more threads than cores).
fn pause(waits: &mut u32) {
    *waits = waits.saturating_add(1);
    if *waits < 1 << 12 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl Shared {
    /// A worker's loop: each job after epoch `seen` joined, spinning
    /// between jobs for [`SPIN`], then asleep until the next.
    fn serve(&self, mut seen: u64) {
        loop {
            let since = Instant::now();
            let mut spins = 0u32;
            while self.epoch.load(SeqCst) == seen {
                if self.quit.load(SeqCst) {
                    return;
                }
                spins = spins.wrapping_add(1);
                std::hint::spin_loop();
                if spins.is_multiple_of(256) {
                    if since.elapsed() > SPIN {
                        self.sleep_while(seen);
                    } else {
                        // The core to any other thread that waits for it
                        // (more threads than cores: tests, other pools).
                        std::thread::yield_now();
                    }
                }
            }
            seen = self.epoch.load(SeqCst);
            self.active.fetch_add(1, SeqCst);
            let job = self.job.load(SeqCst);
            if !job.is_null() {
                // SAFETY: the caller keeps its job alive, and the pointer
                // stored, until `active` is 0 again after it has cleared
                // the pointer; this worker counted itself active first.
                unsafe { (*job.cast::<Job>().cast_const()).work() };
            }
            self.active.fetch_sub(1, SeqCst);
        }
    }

    /// Sleeps until the epoch moves past `seen` or the team quits.
    fn sleep_while(&self, seen: u64) {
        let mut asleep = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
        // Counted before the epoch is read again: a caller bumping the
        // epoch after this read sees the count and wakes this thread.
        self.sleepers.fetch_add(1, SeqCst);
        while self.epoch.load(SeqCst) == seen && !self.quit.load(SeqCst) {
            asleep = self.wake.wait(asleep).unwrap_or_else(|e| e.into_inner());
        }
        self.sleepers.fetch_sub(1, SeqCst);
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.quit.store(true, SeqCst);
        {
            let _asleep = self.shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        // A worker never holds the team; still, one dropping it would
        // wait for itself: the others are joined, it ends on its own.
        let here = std::thread::current().id();
        for worker in self.workers.drain(..) {
            if worker.thread().id() != here {
                let _ = worker.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_index_runs_once_on_the_team() {
        let team = Team::new(3).unwrap();
        assert_eq!(team.size(), 3);
        for n in [0, 1, 2, 3, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let names = Mutex::new(HashSet::new());
            team.run(n, &|k| {
                hits[k].fetch_add(1, SeqCst);
                let name = std::thread::current().name().map(str::to_string);
                names.lock().unwrap().insert(name);
                // Long enough for the workers to join in.
                std::thread::sleep(Duration::from_micros(50));
            });
            assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "{n} indices");
            if n >= 100 {
                assert!(
                    names.lock().unwrap().len() > 1,
                    "one thread ran {n} indices"
                );
            }
        }
    }

    #[test]
    fn jobs_after_the_workers_slept_still_run_everywhere() {
        let team = Team::new(2).unwrap();
        for _ in 0..3 {
            std::thread::sleep(SPIN * 5);
            let sum = AtomicUsize::new(0);
            let names = Mutex::new(HashSet::new());
            team.run(64, &|k| {
                sum.fetch_add(k, SeqCst);
                let name = std::thread::current().name().map(str::to_string);
                names.lock().unwrap().insert(name);
                // 32 ms in all: time for the sleeping worker to wake.
                std::thread::sleep(Duration::from_micros(500));
            });
            assert_eq!(sum.load(SeqCst), 64 * 63 / 2);
            assert_eq!(
                names.lock().unwrap().len(),
                2,
                "the sleeping worker was not woken"
            );
        }
    }

    #[test]
    fn a_panic_reaches_the_caller_and_the_team_goes_on() {
        let team = Team::new(2).unwrap();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            team.run(50, &|k| assert!(k != 17, "index 17"));
        }));
        assert!(ran.is_err());
        let count = AtomicUsize::new(0);
        team.run(10, &|_| {
            count.fetch_add(1, SeqCst);
        });
        assert_eq!(count.load(SeqCst), 10);
    }

    #[test]
    fn a_job_inside_a_job_and_two_callers_run_on_their_own_threads() {
        let team = Arc::new(Team::new(2).unwrap());
        let total = AtomicUsize::new(0);
        team.run(4, &|_| {
            team.run(5, &|_| {
                total.fetch_add(1, SeqCst);
            });
        });
        assert_eq!(total.load(SeqCst), 20);
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let team = team.clone();
                std::thread::spawn(move || {
                    let sum = AtomicUsize::new(0);
                    for _ in 0..200 {
                        team.run(8, &|k| {
                            sum.fetch_add(k, SeqCst);
                        });
                    }
                    sum.load(SeqCst)
                })
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.join().unwrap(), 200 * 28);
        }
    }
}
