//! Work a device submits on its own behalf (a kernel's self-check probes,
//! matmul autotuning's timed runs), and the wait of a capture or a profile
//! for it: a capture would refuse its submits (failing both the op and the
//! step), and a profile would show ops the profiled code never ran.

use super::context::GpuContext;
use super::scheduler::Scheduler;
use std::sync::MutexGuard;

/// Work of the device's own, while it is under way (see the scheduler's
/// `enter_own_work`): a capture or profile another thread begins waits
/// until it is dropped.
pub(crate) struct OwnWork<'a> {
    ctx: &'a GpuContext,
}

impl<'a> OwnWork<'a> {
    /// Starts it, unless a step is being captured or the device profiled.
    pub(crate) fn enter(ctx: &'a GpuContext) -> Option<OwnWork<'a>> {
        // The lock let go before a guard exists (its drop takes it).
        let entered = ctx.scheduler().enter_own_work();
        entered.then(|| OwnWork { ctx })
    }
}

impl Drop for OwnWork<'_> {
    fn drop(&mut self) {
        self.ctx.scheduler().leave_own_work();
    }
}

/// `ctx`'s scheduler, locked once no work of the device's own is under
/// way (a millisecond's poll; natively only, where threads are): no new
/// work starts while this waits.
pub(crate) fn scheduler_after_own_work(ctx: &GpuContext) -> MutexGuard<'_, Scheduler> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut waiting = false;
        loop {
            let mut scheduler = ctx.scheduler();
            if !scheduler.own_work_under_way(waiting) {
                break scheduler;
            }
            waiting = true;
            drop(scheduler);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    #[cfg(target_arch = "wasm32")]
    ctx.scheduler()
}
