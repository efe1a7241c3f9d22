//! A step being captured (see `graph.rs`): what the scheduler keeps while
//! ops record into a batch that will be submitted again and again.
//!
//! The graph binds the same buffers on every run, so no buffer it binds may
//! go back to the pool while it lives. Outputs that take their buffers at
//! flush time are held at the end of the capture, when the batch is
//! encoded (those whose tensors are gone by then are fused away, never
//! run, or get temporaries the graph keeps). What already held a buffer
//! when an op recorded it (the step's inputs, outputs of other families'
//! kernels) is held from that op on: a tensor dropped inside the step
//! would otherwise give its buffer back while the graph still reads it.

use super::buffer_claim::BufferClaim;
use super::command::Command;
use super::kernel::pipeline::Pipeline;
use super::pool::PooledBuffer;
use super::target::Target;
use crate::error::{Error, Result};
use rustc_hash::FxHashSet;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the operation that refused to be captured is called in errors.
pub(crate) const OP: &str = "Device::capture";

thread_local! {
    /// The GPU (its context's id, 0 for none) whose step this thread is
    /// capturing, the ops this thread recorded on other GPUs meanwhile,
    /// and the last of those GPUs' id.
    static CAPTURING: Cell<(u64, usize, u64)> = const { Cell::new((0, 0, 0)) };
}

/// Notes an op recorded on the GPU `id` outside a capture of its own: one
/// recorded inside another GPU's step is counted there (it ran eagerly,
/// and that step's replays would not run it).
#[inline]
pub(crate) fn note_op(id: u64) {
    CAPTURING.with(|c| {
        let (capturing, ops, _) = c.get();
        if capturing != 0 && capturing != id {
            c.set((capturing, ops + 1, id));
        }
    });
}

/// The capture of GPU `id`'s step on this thread, from its start until
/// [`Watch::end`] (or a panic) restores what was being captured before.
pub(crate) struct Watch {
    before: (u64, usize, u64),
}

impl Watch {
    pub fn start(id: u64) -> Watch {
        Watch {
            before: CAPTURING.with(|c| c.replace((id, 0, 0))),
        }
    }

    /// Ends the watch: the ops recorded on other GPUs meanwhile, and the
    /// last of those GPUs' id.
    pub fn end(self) -> (usize, u64) {
        let (_, ops, other) = CAPTURING.with(|c| c.get());
        (ops, other)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.set(self.before));
    }
}

/// The buffers a captured step holds (see [`BufferClaim::hold_unless_gone`]), and
/// whether an op inside it was refused.
#[derive(Default)]
pub(crate) struct Capture {
    held: Vec<Arc<BufferClaim>>,
    /// Addresses of the claims in `held`.
    seen: FxHashSet<usize>,
    /// Why the capture cannot be replayed, once an op inside it was refused.
    refused: Option<String>,
}

impl Capture {
    /// Holds what `command` binds that holds a buffer already.
    pub fn hold_recorded(&mut self, command: &Command) {
        for operand in command.operands() {
            if let Some(claim) = operand.claim
                && (!operand.deferred || claim.is_taken())
            {
                self.hold(claim);
            }
        }
    }

    /// Holds every buffer of `commands` that a tensor still holds.
    ///
    /// # Errors
    /// `Error::Argument` when a buffer the batch binds went back to the
    /// pool: taken by an op inside the step that failed after binding it
    /// (an error the step let pass), its tensor dropped since. Every run
    /// would write a buffer the pool hands to other tensors.
    pub fn hold_live(&mut self, commands: &[Command]) -> Result<()> {
        for command in commands {
            for claim in command.operands().iter().filter_map(|o| o.claim) {
                self.hold(claim);
                if claim.released_with_buffer() {
                    return Err(Error::argument(
                        OP,
                        "an op inside the step failed after taking the buffer of a tensor \
                         the step then dropped while other ops still wrote it; \
                         a step that lets an op's error pass cannot be replayed",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Holds `claim`'s buffer unless its tensor (and any other step
    /// holding it) is gone.
    fn hold(&mut self, claim: &Arc<BufferClaim>) {
        let id = Arc::as_ptr(claim) as usize;
        if !self.seen.contains(&id) && claim.hold_unless_gone() {
            self.seen.insert(id);
            self.held.push(claim.clone());
        }
    }

    /// Refuses a submit inside the step: the error for the op that asked,
    /// also kept as the capture's own.
    pub fn refuse_submit(&mut self) -> Error {
        let msg = "an op inside the step needs its work submitted at once (a readback, \
                   sync, flush, upload into a buffer pending work reads, gpu_buffer, \
                   or texture), which a captured step cannot replay; \
                   do it before or after the step";
        self.refused.get_or_insert_with(|| msg.to_string());
        Error::argument(OP, msg)
    }

    /// Why the step cannot be replayed, if an op inside it was refused.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The buffers held, for the step to let go when it goes (see
    /// [`CapturedBatch::give_back`]).
    pub fn into_held(self) -> Vec<Arc<BufferClaim>> {
        self.held
    }

    /// Lets go of the buffers held: the capture failed.
    pub fn let_go(self, ctx: &Target<'_>) {
        let_go(self.held, ctx);
    }
}

/// Lets go of the buffers a captured step held: those whose tensors are
/// gone go back to the pool.
fn let_go(held: Vec<Arc<BufferClaim>>, ctx: &Target<'_>) {
    for claim in held {
        claim.let_go(ctx.pool, ctx.open_batch);
    }
}

/// One dispatch of a captured batch, ready to encode again.
pub(crate) struct CapturedDispatch {
    pub pipeline: Arc<Pipeline>,
    /// Binds the batch's own parameter buffer and the held buffers.
    pub group: wgpu::BindGroup,
    /// Where its parameter block starts in the parameter buffer.
    pub offset: u32,
    pub groups: [u32; 3],
    /// Elementwise ops folded into it by fusion.
    pub fused_ops: usize,
    /// See `ProfiledKernel::bytes_bound`.
    pub bytes_bound: u64,
}

/// A captured step's batch as encoded once: everything a run submits,
/// and everything that must outlive the runs.
pub(crate) struct CapturedBatch {
    pub dispatches: Vec<CapturedDispatch>,
    /// The parameter blocks, written once (bound by the groups; kept here
    /// to say so).
    pub params: wgpu::Buffer,
    /// The flush's temporaries, the graph's for good (given back to the
    /// pool when the graph goes).
    pub temporaries: Vec<PooledBuffer>,
    /// The buffers the dispatches bind, held (see [`BufferClaim::hold_unless_gone`]).
    pub held: Vec<Arc<BufferClaim>>,
    /// The buffers the dispatches write, poisoned when a run fails.
    pub written: Vec<Arc<BufferClaim>>,
    /// Ops recorded by the step.
    pub ops: usize,
    /// True when a dispatch may record an index fault: each run arms the
    /// device's fault record (see `faults.rs`).
    pub faults: bool,
    /// True until the first run, whose bind groups count as created (each
    /// later run's as reused).
    pub first_run: AtomicBool,
}

impl CapturedBatch {
    /// Gives the step's temporaries back to the pool and lets go of the
    /// buffers it held: the step will not run again.
    pub fn give_back(&mut self, ctx: &Target<'_>) {
        let open_batch = ctx.open_batch.load(Ordering::Acquire);
        for t in self.temporaries.drain(..) {
            ctx.pool.release(t, open_batch);
        }
        ctx.pool.forget_made(&self.params);
        let_go(std::mem::take(&mut self.held), ctx);
    }
}
