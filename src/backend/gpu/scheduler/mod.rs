//! Pending GPU work. Ops record themselves here instead of submitting; a
//! flush fuses what it can (see `fusion/`), encodes every dispatch into
//! one compute pass of one command encoder, writes all their parameters into
//! one arena buffer bound with dynamic offsets, and submits once.
//!
//! A flush happens on readback, on `Device::sync`, before a host write into
//! a buffer that pending work may still read, and when the number of ops
//! recorded reaches the flush threshold, a setting the scheduler owns with
//! the fusion switch.
//!
//! This file is the stream (record, flush, plan, encode, the parameter
//! arena, submit); `replay.rs` holds the scheduler's side of captured
//! steps, `profiling.rs` that of profiles.

mod arena;
mod one_op;
mod profiling;
mod replay;

use arena::ParamArena;
use one_op::OneOpMemo;

use super::bind_groups::{BindGroupCache, Binding};
use super::capture::Capture;
use super::command::{Bound, Command, KernelCommand, carry_poison, poison_outputs};
use super::dispatch::{Encoded, create_group, encode_windows, group_probe};
use super::fusion::{FusionScratch, Step, programs};
use super::kernel::pipeline::Pipeline;
#[cfg(not(target_arch = "wasm32"))]
use super::kernel::pipeline::pop_now;
use super::pool::PooledBuffer;
use super::profile_log::{Dispatch, Origin, ProfileLog};
use super::target::Target;
use super::temporaries::Temporaries;
use crate::clock::Stamp;
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Flush threshold when neither the options nor `WEBTENSOR_FLUSH_THRESHOLD`
/// set one: recorded ops per submit. Measured (BENCHMARKS.md, `scheduler`):
/// on lavapipe a submit blocks while the previous one runs, so fewer,
/// larger batches win both host time and total time; recording stays
/// around a microsecond per op, so a large batch costs little latency.
pub(crate) const DEFAULT_FLUSH_THRESHOLD: usize = 1024;

/// A batch's recorded commands and the parameter bytes its kernel
/// commands hold ranges of.
#[derive(Clone, Copy)]
struct Batch<'a> {
    commands: &'a [Command],
    params: &'a [u8],
}

/// Counters reported by `Device::stats`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SchedulerCounters {
    pub submits: u64,
    pub ops_recorded: u64,
    pub dispatches: u64,
    pub fused_kernels: u64,
    pub fused_ops: u64,
    /// Outputs whose buffers were never taken: fused away and dropped.
    pub buffers_avoided: u64,
    /// Ops never run: their results were dropped unread before the flush.
    pub dead_ops: u64,
    /// Runs of captured steps (each one submit).
    pub graph_runs: u64,
}

impl SchedulerCounters {
    /// Counts a submit of dispatches that each folded in `fused_ops`.
    fn count_submit(&mut self, fused_ops: impl Iterator<Item = usize>) {
        self.submits += 1;
        for fused in fused_ops {
            self.dispatches += 1;
            self.fused_ops += fused as u64;
            self.fused_kernels += u64::from(fused > 0);
        }
    }
}

/// The commands recorded since the last submit, the parameter arena, and
/// the settings that decide when and how a batch is submitted.
pub(crate) struct Scheduler {
    /// The id of the device's context (see `capture::note_op`).
    device_id: u64,
    pending: Vec<Command>,
    /// The parameter blocks of the pending kernel commands, each command
    /// holding its range (one growing buffer: no allocation per command).
    pending_params: Vec<u8>,
    arena: ParamArena,
    /// Bind groups kept across flushes.
    pub groups: BindGroupCache,
    pub counters: SchedulerCounters,
    /// Recorded ops that trigger a flush (at least 1), as set.
    flush_threshold: usize,
    /// The count `record` flushes at: the threshold, or never while work
    /// of the device's own is under way (autotuning's runs wait for the
    /// one flush it times; see `replay.rs`'s `enter_own_work`).
    flush_at: usize,
    /// True when a flush fuses elementwise chains.
    fusion: bool,
    /// Planning scratch and the steps, dispatches and parameter bytes of
    /// the last flush: kept (emptied) so that their memory is reused.
    scratch: FusionScratch,
    steps: Vec<Step>,
    encoded: Vec<Encoded>,
    params: Vec<u8>,
    /// Per step of the last flush, the index of its first dispatch.
    step_starts: Vec<usize>,
    /// Plans of the last flushes of one elementwise op (see `one_op.rs`).
    one_op: OneOpMemo,
    /// The step being captured, if one is: nothing is submitted meanwhile
    /// (see `graph.rs`).
    capture: Option<Capture>,
    /// The open profile, if one is (see `profile_log.rs`).
    profile: Option<ProfileLog>,
    /// Self-checks and autotuning under way, which submit work of their
    /// own (see `replay.rs`'s `enter_own_work`): a capture or profile
    /// waits for them.
    own_work: usize,
    /// Captures and profiles waiting for that work to end: no new work
    /// starts meanwhile (the wait would have no end).
    own_work_waiters: usize,
}

impl Scheduler {
    /// An empty scheduler flushing every `flush_threshold` ops (at least 1),
    /// fusing when `fusion` is set.
    pub fn new(device_id: u64, flush_threshold: usize, fusion: bool) -> Scheduler {
        Scheduler {
            device_id,
            pending: Vec::new(),
            pending_params: Vec::new(),
            arena: ParamArena::default(),
            groups: BindGroupCache::default(),
            counters: SchedulerCounters::default(),
            flush_threshold: flush_threshold.max(1),
            flush_at: flush_threshold.max(1),
            fusion,
            scratch: FusionScratch::default(),
            steps: Vec::new(),
            encoded: Vec::new(),
            params: Vec::new(),
            step_starts: Vec::new(),
            one_op: OneOpMemo::default(),
            capture: None,
            profile: None,
            own_work: 0,
            own_work_waiters: 0,
        }
    }

    pub fn flush_threshold(&self) -> usize {
        self.flush_threshold
    }

    /// Sets the flush threshold (at least 1), from the next recorded op on
    /// (once no work of the device's own is under way).
    pub fn set_flush_threshold(&mut self, ops: usize) {
        self.flush_threshold = ops.max(1);
        if self.own_work == 0 {
            self.flush_at = self.flush_threshold;
        }
    }

    pub fn fusion(&self) -> bool {
        self.fusion
    }

    /// Turns fusion on or off, from the next flush on.
    pub fn set_fusion(&mut self, on: bool) {
        self.fusion = on;
    }

    /// Records a command; flushes when the threshold is reached. (Inline:
    /// the command, several hundred bytes, is then built in place.)
    ///
    /// # Errors
    /// `Error::DeviceLost` on a lost device; as [`Scheduler::flush`].
    #[inline]
    pub fn record(&mut self, ctx: &Target<'_>, command: Command) -> Result<()> {
        if ctx.lost.is_lost() {
            return Err(refused(ctx.lost, command));
        }
        match &mut self.capture {
            Some(capture) => capture.hold_recorded(&command),
            None => crate::backend::gpu::capture::note_op(self.device_id),
        }
        if let Some(profile) = &mut self.profile {
            profile.record(command.name(), self.pending.len());
        }
        self.pending.push(command);
        self.counters.ops_recorded += 1;
        if self.capture.is_none() && self.pending.len() >= self.flush_at {
            self.flush(ctx, |_| {})?;
        }
        Ok(())
    }

    /// Records a dispatch of `pipeline` with the parameter block `params`,
    /// the storage `bindings` 1.. and `groups` workgroups; flushes when the
    /// threshold is reached.
    ///
    /// # Errors
    /// As [`Scheduler::flush`].
    #[inline]
    pub fn record_kernel(
        &mut self,
        ctx: &Target<'_>,
        pipeline: Arc<Pipeline>,
        params: &[u8],
        bindings: SmallVec<[Bound; 4]>,
        groups: [u32; 3],
    ) -> Result<()> {
        let start = self.pending_params.len();
        self.pending_params.extend_from_slice(params);
        let command = Command::Kernel(KernelCommand {
            pipeline,
            params: start..self.pending_params.len(),
            bindings,
            groups,
        });
        self.record(ctx, command)
    }

    /// Takes the pending commands and their kernels' parameter bytes.
    fn take_pending(&mut self) -> (Vec<Command>, Vec<u8>) {
        (
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.pending_params),
        )
    }

    /// Gives back the lists [`Scheduler::take_pending`] took, emptied, to
    /// keep their memory, unless commands were recorded meanwhile.
    fn restore_pending(&mut self, (mut commands, mut params): (Vec<Command>, Vec<u8>)) {
        commands.clear();
        params.clear();
        if self.pending.is_empty() {
            self.pending = commands;
            self.pending_params = params;
        }
    }

    /// True while a step is being captured on this device.
    pub fn is_capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// True when ops are waiting to be submitted.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Encodes all pending ops, then whatever `after` adds (a copy for
    /// readback), and submits once.
    ///
    /// # Errors
    /// `Error::Gpu` when a generated kernel fails to build (a bug) or a
    /// dispatch exceeds the device's grid; `Error::DeviceLost` on a lost
    /// device (nothing is submitted then, and the batch's outputs are
    /// poisoned).
    pub fn flush(
        &mut self,
        ctx: &Target<'_>,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        self.flush_timed(ctx, None, after)
    }

    /// [`Scheduler::flush`] whose compute pass writes GPU timestamps at
    /// its start and end into queries 0 and 1 of `timestamps` (a pass is
    /// encoded even with nothing pending).
    ///
    /// # Errors
    /// As [`Scheduler::flush`].
    pub fn flush_timed(
        &mut self,
        ctx: &Target<'_>,
        timestamps: Option<&wgpu::QuerySet>,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        if let Some(capture) = &mut self.capture {
            return Err(capture.refuse_submit());
        }
        if ctx.lost.is_lost() {
            return Err(self.abandon(ctx));
        }
        let started = self.profile.as_ref().map(|_| Stamp::now());
        let (commands, kernel_params) = self.take_pending();
        carry_poison(&commands);
        let unwinding = Unwinding {
            commands: &commands,
            open_batch: ctx.open_batch,
        };
        // Natively the device reports a batch's validation errors (a
        // destroyed application buffer ...) as it is submitted: a scope
        // around it gives them to this batch, never to the device's
        // handler (a `Device::from_wgpu` application's would panic).
        #[cfg(not(target_arch = "wasm32"))]
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let batch = Batch {
            commands: &commands,
            params: &kernel_params,
        };
        let result = self.submit(ctx, batch, timestamps, after);
        #[cfg(not(target_arch = "wasm32"))]
        let result = match (result, pop_now(scope)) {
            (Ok(()), Some(e)) => Err(Error::gpu("flush", format!("the device reported: {e}"))),
            (result, _) => result,
        };
        std::mem::forget(unwinding);
        // Whatever happened, the batch is closed: buffers released while it
        // was open are safe to write once it is submitted (or abandoned).
        ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = &result {
            poison_outputs(&commands, &e.to_string());
        }
        if let (Some(profile), Some(started)) = (&mut self.profile, started) {
            profile.close_batch(started, result.is_ok());
        }
        // The emptied lists keep their memory for the next batch.
        self.restore_pending((commands, kernel_params));
        result
    }

    /// Drops the pending batch of a lost device, poisoning its outputs,
    /// and returns the loss (out of line: a flush keeps only the check).
    #[cold]
    #[inline(never)]
    fn abandon(&mut self, ctx: &Target<'_>) -> Error {
        let e = ctx.lost.error("flush");
        let (commands, kernel_params) = self.take_pending();
        poison_outputs(&commands, &e.to_string());
        ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        self.restore_pending((commands, kernel_params));
        e
    }

    fn submit(
        &mut self,
        ctx: &Target<'_>,
        batch: Batch<'_>,
        timestamps: Option<&wgpu::QuerySet>,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut bytes = std::mem::take(&mut self.params);
        let (result, temporaries) = self.plan_and_encode(ctx, batch, &mut encoded, &mut bytes);
        // Later batches run after this one: its temporaries go back now.
        release(ctx, temporaries);
        let result = result.and_then(|()| {
            self.encode_and_submit(ctx, batch.commands, timestamps, after, &encoded, &bytes)
        });
        encoded.clear();
        bytes.clear();
        self.encoded = encoded;
        self.params = bytes;
        result
    }

    /// Plans `commands` (fusing when on) and appends their dispatches to
    /// `encoded` and their parameter blocks to `bytes`, taking buffers as
    /// the dispatches come; also returns the temporaries taken, which the
    /// caller gives back or keeps.
    fn plan_and_encode(
        &mut self,
        ctx: &Target<'_>,
        batch: Batch<'_>,
        encoded: &mut Vec<Encoded>,
        bytes: &mut Vec<u8>,
    ) -> (Result<()>, Vec<PooledBuffer>) {
        // A profile attributes dispatches to steps: it takes the long way.
        let one_op = match batch.commands {
            [Command::Elementwise(op)] if self.profile.is_none() => Some((op, self.fusion)),
            _ => None,
        };
        let (start, align) = (encoded.len(), ctx.facts.uniform_align as usize);
        if let Some(op) = one_op {
            self.one_op.forget_after(ctx.pipelines.evicted());
            match self.one_op.encode(ctx, op, (bytes, align), encoded) {
                Ok(false) => {}
                done => return (done.map(|_| ()), Vec::new()),
            }
        }
        let mut steps = std::mem::take(&mut self.steps);
        let (limits, commands) = (ctx.facts.program_limits(), batch.commands);
        programs(commands, self.fusion, limits, &mut self.scratch, &mut steps);
        let mut temporaries = Temporaries::new(&steps, commands);
        let result = self.encode_steps(ctx, batch, &mut steps, &mut temporaries, encoded, bytes);
        self.steps = steps;
        if let (Some(op), Ok(()), [e], true) = (
            one_op,
            &result,
            &encoded[start..],
            temporaries.all.is_empty(),
        ) {
            self.one_op.remember(op, e, bytes);
        }
        (result, temporaries.all)
    }

    /// Encodes the dispatches `encoded` (their parameter blocks in
    /// `bytes`), then whatever `after` adds, and submits once.
    fn encode_and_submit(
        &mut self,
        ctx: &Target<'_>,
        commands: &[Command],
        timestamps: Option<&wgpu::QuerySet>,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
        encoded: &[Encoded],
        bytes: &[u8],
    ) -> Result<()> {
        self.counters.buffers_avoided += unwritten(commands);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("webtensor batch"),
            });
        let timestamp_writes = timestamps.map(|query_set| wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        });
        if encoded.is_empty() && timestamp_writes.is_some() {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("webtensor batch"),
                timestamp_writes,
            });
        } else if !encoded.is_empty() {
            self.groups.begin_flush(ctx.pool.counters().dropped);
            let (arena, base) = self.arena.place(ctx, bytes, &mut self.groups);
            // Inline for a flush of one dispatch (no allocation).
            let groups: SmallVec<[wgpu::BindGroup; 1]> = encoded
                .iter()
                .map(|e| {
                    let probe = group_probe(e, &arena);
                    self.groups.get(probe, |key| create_group(ctx.device, key))
                })
                .collect();
            self.groups.end_flush();
            if let (Some(profile), None) = (&mut self.profile, &timestamp_writes) {
                let dispatches: Vec<Dispatch> = encoded
                    .iter()
                    .zip(&groups)
                    .map(|(e, group)| Dispatch {
                        pipeline: &e.pipeline,
                        group,
                        offset: base + e.offset,
                        groups: e.groups,
                        bytes_bound: e.bytes_bound(),
                    })
                    .collect();
                let mut command_steps = Vec::with_capacity(commands.len());
                self.scratch.steps_of_commands(&mut command_steps);
                let origin = Origin::Batch {
                    command_steps: &command_steps,
                    step_starts: &self.step_starts,
                };
                profile.encode(ctx, &mut encoder, &dispatches, origin);
            } else {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("webtensor batch"),
                    timestamp_writes,
                });
                let mut last = None;
                for (e, group) in encoded.iter().zip(&groups) {
                    set_pipeline(&mut pass, &mut last, &e.pipeline);
                    pass.set_bind_group(0, group, &[base + e.offset]);
                    pass.dispatch_workgroups(e.groups[0], e.groups[1], e.groups[2]);
                }
            }
        }
        after(&mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
        ctx.uploads.submitted();
        self.counters
            .count_submit(encoded.iter().map(|e| e.fused_ops));
        Ok(())
    }

    /// Encodes `steps` in order, taking each program's buffers as it
    /// comes (see `buffer_claim.rs`): the dispatches and their parameter blocks.
    ///
    /// # Errors
    /// As [`Scheduler::flush`]; `OutOfMemory` when a buffer taken now does
    /// not fit under the memory cap.
    fn encode_steps(
        &mut self,
        ctx: &Target<'_>,
        batch: Batch<'_>,
        steps: &mut Vec<Step>,
        temporaries: &mut Temporaries,
        encoded: &mut Vec<Encoded>,
        bytes: &mut Vec<u8>,
    ) -> Result<()> {
        // Every parameter block goes straight into the arena's bytes.
        let align = ctx.facts.uniform_align as usize;
        self.step_starts.clear();
        for (index, step) in steps.drain(..).enumerate() {
            self.step_starts.push(encoded.len());
            let e = match step {
                Step::Program(program) => {
                    // A result dropped unread before the flush is never
                    // computed (its write could not be observed).
                    if temporaries.is_dead(index, &program.buffers[0]) {
                        self.counters.dead_ops += program.fused_ops() as u64 + 1;
                        temporaries.after(index);
                        continue;
                    }
                    temporaries.take(ctx, index, &program.buffers)?;
                    let kept = &mut temporaries.all;
                    encode_windows(ctx, program, (bytes, align), encoded, kept)?;
                    temporaries.after(index);
                    continue;
                }
                Step::Kernel(c) => {
                    let Some(Command::Kernel(k)) = batch.commands.get(c) else {
                        return Err(Error::internal(
                            "flush",
                            "a kernel step without its command",
                        ));
                    };
                    let offset = bytes.len() as u32;
                    let Some(params) = batch.params.get(k.params.clone()) else {
                        return Err(Error::internal(
                            "flush",
                            "a kernel command's parameters outside its batch's",
                        ));
                    };
                    bytes.extend_from_slice(params);
                    Some(Encoded {
                        pipeline: k.pipeline.clone(),
                        buffers: k
                            .bindings
                            .iter()
                            .map(|b| Binding {
                                buffer: b.buffer.clone(),
                                window: b.window,
                            })
                            .collect(),
                        offset,
                        groups: k.groups,
                        fused_ops: 0,
                    })
                }
            };
            if let Some(e) = e {
                encoded.push(e);
                bytes.resize(bytes.len().next_multiple_of(align), 0);
            }
        }
        Ok(())
    }
}

/// Sets `pipeline` on `pass` unless it is `last`, the one set before (a
/// pass keeps it between dispatches).
fn set_pipeline<'a>(
    pass: &mut wgpu::ComputePass<'_>,
    last: &mut Option<&'a Arc<Pipeline>>,
    pipeline: &'a Arc<Pipeline>,
) {
    if last.is_none_or(|p| !Arc::ptr_eq(p, pipeline)) {
        pass.set_pipeline(&pipeline.pipeline);
        *last = Some(pipeline);
    }
}

/// Gives `buffers` back to the pool: work submitted so far may still use
/// them, work submitted later runs after it.
fn release(ctx: &Target<'_>, buffers: impl IntoIterator<Item = PooledBuffer>) {
    let open_batch = ctx.open_batch.load(Ordering::Acquire);
    for b in buffers {
        ctx.pool.release(b, open_batch);
    }
}

/// How many of `commands`' elementwise outputs never took a buffer.
fn unwritten(commands: &[Command]) -> u64 {
    commands
        .iter()
        .filter_map(Command::elementwise)
        .filter(|op| !op.out.claim.is_taken())
        .count() as u64
}

/// The error of recording `command` on a lost device (out of line, with the
/// command's drop: recording keeps only the check).
#[cold]
#[inline(never)]
fn refused(lost: &super::lost::Lost, command: Command) -> Error {
    lost.error(command.name())
}

/// A flush's batch while it is encoded and submitted: if that panics (a
/// bug), its outputs are poisoned and the batch closed as a failed
/// flush's are, so that a later read of them on any thread is an error,
/// not zeros or a recycled buffer's bytes. A flush that returns forgets
/// it.
struct Unwinding<'a> {
    commands: &'a [Command],
    open_batch: &'a std::sync::atomic::AtomicU64,
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        poison_outputs(self.commands, "a flush panicked (a bug in webtensor)");
        self.open_batch.fetch_add(1, Ordering::AcqRel);
    }
}
