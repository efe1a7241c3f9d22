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
use crate::backend::Storage;
use crate::error::Error;
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// What the operation that refused to be captured is called in errors.
pub(crate) const OP: &str = "Device::capture";

/// The storages a captured step holds, and whether an op inside it was
/// refused.
#[derive(Default)]
pub(crate) struct Capture {
    held: Vec<Arc<Storage>>,
    /// Addresses of the storages in `held`.
    seen: FxHashSet<usize>,
    /// Why the capture cannot be replayed, once an op inside it was refused.
    refused: Option<String>,
}

impl Capture {
    /// Holds what `command` binds that holds a buffer already.
    pub fn hold_recorded(&mut self, command: &Command) {
        for (storage, claim) in command.operands() {
            if claim.is_none_or(|s| s.is_taken())
                && let Some(storage) = storage.upgrade()
            {
                self.hold(storage);
            }
        }
    }

    /// Holds every storage of `commands` that a tensor still holds.
    pub fn hold_live(&mut self, commands: &[Command]) {
        for command in commands {
            for (storage, _) in command.operands() {
                if let Some(storage) = storage.upgrade() {
                    self.hold(storage);
                }
            }
        }
    }

    fn hold(&mut self, storage: Arc<Storage>) {
        if self.seen.insert(Arc::as_ptr(&storage) as usize) {
            self.held.push(storage);
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

    /// The storages held.
    pub fn into_held(self) -> Vec<Arc<Storage>> {
        self.held
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
}

/// A captured step's batch as encoded once: everything a run submits,
/// and everything that must outlive the runs.
pub(crate) struct CapturedBatch {
    pub dispatches: Vec<CapturedDispatch>,
    /// The parameter blocks, written once (bound by the groups; kept here
    /// to say so).
    pub _params: wgpu::Buffer,
    /// The flush's temporaries, the graph's for good (given back to the
    /// pool when the graph goes).
    pub temporaries: Vec<PooledBuffer>,
    /// The storages whose buffers the dispatches bind.
    pub held: Vec<Arc<Storage>>,
    /// The buffers the dispatches write, poisoned when a run fails.
    pub written: Vec<Arc<BufferClaim>>,
    /// Ops recorded by the step.
    pub ops: usize,
    /// True when a dispatch may record an index fault: each run arms the
    /// device's fault record (see `faults.rs`).
    pub faults: bool,
}
