//! The scheduler's side of captured steps (see `graph.rs`): a capture
//! opened and closed around the step's code, the batch encoded once with
//! parameters of its own, and runs submitted again.

use super::{Batch, Scheduler, release, set_pipeline, unwritten};
use crate::backend::gpu::capture::{self, Capture, CapturedBatch, CapturedDispatch};
use crate::backend::gpu::command::{Command, poison_outputs};
use crate::backend::gpu::dispatch::{create_group, group_probe};
#[cfg(not(target_arch = "wasm32"))]
use crate::backend::gpu::kernel::pipeline::pop_now;
use crate::backend::gpu::profile_log::{Dispatch, Origin};
use crate::backend::gpu::target::Target;
use crate::clock::Stamp;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

impl Scheduler {
    /// Starts work that submits on its own behalf (a kernel's self-check
    /// probes, autotuning's timed runs), unless a step is being captured
    /// or the device profiled: false then, and the caller does without.
    /// Until [`Scheduler::leave_own_work`], a capture or profile waits to
    /// begin (see `own_work.rs`).
    pub fn enter_own_work(&mut self) -> bool {
        if self.capture.is_some() || self.profile.is_some() || self.own_work_waiters > 0 {
            return false;
        }
        // Its ops wait for its own flushes, whatever the threshold: with a
        // threshold below autotuning's run, the run was submitted untimed
        // as it was recorded, and the timer timed an empty pass.
        self.own_work += 1;
        self.flush_at = usize::MAX;
        true
    }

    /// Ends what [`Scheduler::enter_own_work`] started.
    pub fn leave_own_work(&mut self) {
        self.own_work = self.own_work.saturating_sub(1);
        if self.own_work == 0 {
            self.flush_at = self.flush_threshold;
        }
    }

    /// True while work of [`Scheduler::enter_own_work`]'s is under way
    /// (never in a browser, which probes and times nothing); `waiting`
    /// says whether a capture or profile is waiting for it to end (none
    /// starts then), noted until it says otherwise.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub fn own_work_under_way(&mut self, waiting: bool) -> bool {
        let under_way = self.own_work > 0;
        match (waiting, under_way) {
            (false, true) => self.own_work_waiters += 1,
            (true, false) => self.own_work_waiters -= 1,
            _ => {}
        }
        under_way
    }

    /// Starts capturing a step (see `graph.rs`): what is pending is
    /// submitted first, then nothing is until [`Scheduler::end_capture`].
    ///
    /// # Errors
    /// `Error::Argument` when a step is being captured already; as
    /// [`Scheduler::flush`].
    pub fn begin_capture(&mut self, ctx: &Target<'_>) -> Result<()> {
        if self.capture.is_some() {
            return Err(Error::argument(
                capture::OP,
                "a step is being captured on this device already",
            ));
        }
        if self.profile.is_some() {
            return Err(Error::argument(
                capture::OP,
                "the device is being profiled: capture the step before the profile, run it inside",
            ));
        }
        if self.has_pending() {
            self.flush(ctx, |_| {})?;
        } else {
            // An empty batch closes as a flush would: a buffer released in
            // it is no pending command's, so an upload inside the step may
            // take it without the flush a capture refuses.
            ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        }
        self.capture = Some(Capture::default());
        Ok(())
    }

    /// Ends the capture. When `step` (what the step's code returned)
    /// succeeded and no op inside it was refused, encodes the batch once,
    /// submits it (the step's first run) and returns it for later runs.
    /// Otherwise what the step recorded is submitted as any batch (as
    /// eager ops up to the error would have run) and the error returned.
    ///
    /// # Errors
    /// The step's error, or the refusal; as [`Scheduler::flush`] (the
    /// step's outputs are poisoned then).
    pub fn end_capture(&mut self, ctx: &Target<'_>, step: Result<()>) -> Result<CapturedBatch> {
        let Some(mut capture) = self.capture.take() else {
            return Err(Error::internal(capture::OP, "no step is being captured"));
        };
        let refused = capture.refused().map(|r| Error::argument(capture::OP, r));
        if let Some(e) = step.err().or(refused) {
            // A failed submit poisons what it was to write; the step's
            // error says more.
            let _submitted = self.flush(ctx, |_| {});
            capture.let_go(ctx);
            return Err(e);
        }
        if let Err(e) = capture.hold_live(&self.pending) {
            let _submitted = self.flush(ctx, |_| {});
            capture.let_go(ctx);
            return Err(e);
        }
        let (commands, kernel_params) = self.take_pending();
        #[cfg(not(target_arch = "wasm32"))]
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let batch = Batch {
            commands: &commands,
            params: &kernel_params,
        };
        let result = self.encode_captured(ctx, batch, capture);
        #[cfg(not(target_arch = "wasm32"))]
        let result = match (result, pop_now(scope)) {
            (Ok(mut batch), Some(e)) => {
                batch.give_back(ctx);
                Err(Error::gpu(capture::OP, format!("the device reported: {e}")))
            }
            (result, _) => result,
        };
        ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        match &result {
            Err(e) => poison_outputs(&commands, &e.to_string()),
            Ok(_) => self.counters.buffers_avoided += unwritten(&commands),
        }
        self.restore_pending((commands, kernel_params));
        let mut batch = result?;
        if let Err(e) = self.replay(ctx, &batch) {
            batch.give_back(ctx);
            return Err(e);
        }
        Ok(batch)
    }

    /// The dispatches of `commands` encoded once, bound to a parameter
    /// buffer of their own, with the buffers they need held.
    ///
    /// # Errors
    /// As [`Scheduler::flush`].
    fn encode_captured(
        &mut self,
        ctx: &Target<'_>,
        batch: Batch<'_>,
        capture: Capture,
    ) -> Result<CapturedBatch> {
        let commands = batch.commands;
        let (mut encoded, mut bytes) = (Vec::new(), Vec::new());
        let (encoding, temporaries) = self.plan_and_encode(ctx, batch, &mut encoded, &mut bytes);
        if let Err(e) = encoding {
            release(ctx, temporaries);
            capture.let_go(ctx);
            return Err(e);
        }
        let params = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webtensor captured params"),
            size: (bytes.len() as u64).next_multiple_of(16).max(16),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.pool.note_made(&params);
        if !bytes.is_empty() {
            ctx.queue.write_buffer(&params, 0, &bytes);
        }
        let dispatches = encoded
            .iter()
            .map(|e| CapturedDispatch {
                pipeline: e.pipeline.clone(),
                group: create_group(ctx.device, &group_probe(e, &params).key()),
                offset: e.offset,
                groups: e.groups,
                fused_ops: e.fused_ops,
                bytes_bound: e.bytes_bound(),
            })
            .collect();
        Ok(CapturedBatch {
            dispatches,
            params,
            temporaries,
            held: capture.into_held(),
            written: commands.iter().flat_map(Command::written_claims).collect(),
            ops: commands.len(),
            faults: commands.iter().any(|c| match c {
                Command::Kernel(k) => k.bindings.iter().any(|b| b.fault_record),
                Command::Elementwise(_) => false,
            }),
            first_run: AtomicBool::new(true),
        })
    }

    /// Submits a captured batch (after what is pending), as one submit.
    ///
    /// # Errors
    /// `Error::Argument` while a step is being captured; `Error::DeviceLost`
    /// on a lost device; a tensor the batch
    /// binds that a failed batch poisoned; the device's validation errors
    /// (the batch's outputs are poisoned then); as [`Scheduler::flush`].
    pub fn replay(&mut self, ctx: &Target<'_>, batch: &CapturedBatch) -> Result<()> {
        if let Some(capture) = &mut self.capture {
            return Err(capture.refuse_submit());
        }
        ctx.lost.check("Graph::run")?;
        if self.has_pending() {
            self.flush(ctx, |_| {})?;
        }
        for claim in &batch.held {
            claim.check_poison("Graph::run")?;
        }
        let started = self.profile.as_mut().map(|profile| {
            profile.record("Graph::run", 0);
            Stamp::now()
        });
        #[cfg(not(target_arch = "wasm32"))]
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("webtensor captured step"),
            });
        if let Some(profile) = &mut self.profile {
            let dispatches: Vec<Dispatch> = batch
                .dispatches
                .iter()
                .map(|d| Dispatch {
                    pipeline: &d.pipeline,
                    group: &d.group,
                    offset: d.offset,
                    groups: d.groups,
                    bytes_bound: d.bytes_bound,
                })
                .collect();
            profile.encode(ctx, &mut encoder, &dispatches, Origin::Replay);
        } else if !batch.dispatches.is_empty() {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("webtensor captured step"),
                timestamp_writes: None,
            });
            let mut last = None;
            for d in &batch.dispatches {
                set_pipeline(&mut pass, &mut last, &d.pipeline);
                pass.set_bind_group(0, &d.group, &[d.offset]);
                pass.dispatch_workgroups(d.groups[0], d.groups[1], d.groups[2]);
            }
        }
        ctx.queue.submit(Some(encoder.finish()));
        ctx.uploads.submitted();
        let result: Result<()> = Ok(());
        #[cfg(not(target_arch = "wasm32"))]
        let result = match pop_now(scope) {
            Some(e) => Err(Error::gpu(
                "Graph::run",
                format!("the device reported: {e}"),
            )),
            None => result,
        };
        ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = &result {
            let failure = e.to_string();
            for claim in &batch.written {
                claim.poison(&failure);
            }
        }
        if let (Some(profile), Some(started)) = (&mut self.profile, started) {
            profile.close_batch(started, result.is_ok());
        }
        self.counters.graph_runs += 1;
        self.counters
            .count_submit(batch.dispatches.iter().map(|d| d.fused_ops));
        // The groups made at capture: created for its run, kept for later ones.
        let groups = &mut self.groups.counters;
        match batch.first_run.swap(false, Ordering::Relaxed) {
            true => groups.created += batch.dispatches.len() as u64,
            false => groups.reused += batch.dispatches.len() as u64,
        }
        result
    }
}
