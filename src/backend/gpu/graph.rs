//! Captured steps on a GPU: a batch of recorded ops encoded once and
//! submitted again on every run, without recording, planning, fusing or
//! encoding anything on the host (the way CUDA graphs replay a stream).
//!
//! While the step's code runs, ops record as usual (fusion folds dead
//! intermediates, results dropped unread are never computed) but nothing
//! is submitted: an op that needs a submit at once is refused, and so is
//! the capture (see `capture.rs`). The batch is then encoded once, with
//! its parameter blocks in a buffer of its own, its bind groups made, its
//! temporaries and every buffer it binds held for the graph's life, and
//! submitted: the step's first run. Each later run is one submit of the
//! same dispatches, after whatever was recorded before it.

use super::capture::CapturedBatch;
use super::context::GpuContext;
use crate::error::{Error, Result};
use std::sync::Arc;

/// A captured step on one GPU.
pub(crate) struct GpuGraph {
    ctx: Arc<GpuContext>,
    batch: CapturedBatch,
}

/// Ends a capture that `capture_step` did not end (its step panicked):
/// the device records and submits as before.
struct Capturing<'a> {
    ctx: &'a GpuContext,
    ended: bool,
}

impl Drop for Capturing<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let aborted = Err(crate::error::Error::argument(
                super::capture::OP,
                "the step panicked",
            ));
            let _ = self
                .ctx
                .scheduler()
                .end_capture(&self.ctx.target(), aborted);
        }
    }
}

/// Captures `step` on `ctx` and runs it once (see the module docs).
///
/// # Errors
/// The step's own error (what it recorded until then runs, as eager ops
/// would have); `Error::Argument` when an op inside it needs a submit at
/// once, an op inside it ran on another GPU, or a step is being captured
/// on the device already; `Error::DeviceLost` when the device is lost
/// before or during the capture; as a flush.
pub(crate) fn capture_step(
    ctx: &Arc<GpuContext>,
    step: &mut dyn FnMut() -> Result<()>,
) -> Result<GpuGraph> {
    ctx.check_lost(super::capture::OP)?;
    let graph = capture_now(ctx, step);
    ctx.explain(super::capture::OP, graph)
}

fn capture_now(ctx: &Arc<GpuContext>, step: &mut dyn FnMut() -> Result<()>) -> Result<GpuGraph> {
    // Another thread's self-check or autotuning submits as it goes: the
    // capture begins once it is done, and no new one starts meanwhile.
    let mut scheduler = super::own_work::scheduler_after_own_work(ctx);
    scheduler.begin_capture(&ctx.target())?;
    drop(scheduler);
    let mut capturing = Capturing { ctx, ended: false };
    // The scheduler is not locked while the step records.
    let watch = super::capture::Watch::start(ctx.id());
    let result = step();
    let (foreign, other) = watch.end();
    let result = match result {
        Ok(()) if foreign > 0 => Err(Error::argument(
            super::capture::OP,
            format!(
                "the step ran {foreign} op(s) on gpu#{other}, not on gpu#{} whose step is \
                 captured (they ran once, now, and its runs would not repeat them); make \
                 the step's tensors on gpu#{}, or capture a step on each device",
                ctx.id(),
                ctx.id()
            ),
        )),
        other => other,
    };
    capturing.ended = true;
    let batch = ctx.scheduler().end_capture(&ctx.target(), result)?;
    Ok(GpuGraph {
        ctx: ctx.clone(),
        batch,
    })
}

impl GpuGraph {
    /// Submits the step again, after what was recorded before.
    ///
    /// # Errors
    /// As `Scheduler::replay`.
    pub fn run(&self) -> Result<()> {
        // Inside another GPU's step: a run that step's replays would skip.
        super::capture::note_op(self.ctx.id());
        let mut scheduler = self.ctx.scheduler();
        if self.batch.faults {
            // Under the scheduler's lock, as when an indexing op records.
            self.ctx.faults.arm();
        }
        let ran = scheduler.replay(&self.ctx.target(), &self.batch);
        drop(scheduler);
        self.ctx.explain("Graph::run", ran)
    }

    /// True once the graph's device is lost.
    pub fn is_lost(&self) -> bool {
        self.ctx.is_lost()
    }

    /// True when the graph was captured on `ctx`.
    pub fn runs_on(&self, ctx: &Arc<GpuContext>) -> bool {
        Arc::ptr_eq(&self.ctx, ctx)
    }

    /// Ops the step recorded.
    pub fn ops(&self) -> usize {
        self.batch.ops
    }

    /// Dispatches one run submits.
    pub fn dispatches(&self) -> usize {
        self.batch.dispatches.len()
    }
}

impl Drop for GpuGraph {
    fn drop(&mut self) {
        // Runs already submitted finish before a later batch reuses these.
        self.batch.give_back(&self.ctx.target());
    }
}
