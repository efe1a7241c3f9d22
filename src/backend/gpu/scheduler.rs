//! Pending GPU work. Ops record themselves here instead of submitting; a
//! flush fuses what it can (see `fusion.rs`), encodes every dispatch into
//! one compute pass of one command encoder, writes all their parameters into
//! one arena buffer bound with dynamic offsets, and submits once.
//!
//! A flush happens on readback, on `Device::sync`, before a host write into
//! a buffer that pending work may still read, and when the number of ops
//! recorded reaches the flush threshold, a setting the scheduler owns with
//! the fusion switch.

use super::bind_groups::{BindGroupCache, GroupKey};
use super::command::{Command, poison_outputs};
use super::elementwise::access::choose_access;
use super::elementwise::codegen::elementwise_pipeline;
use super::elementwise::params::write_params;
use super::elementwise::program::{Operand, Program};
use super::facts::AdapterFacts;
use super::fusion::{FusionScratch, Step, programs};
use super::kernel::buffer::element_bytes;
use super::kernel::grid::grid_of;
use super::kernel::pipeline::Pipeline;
use super::kernel::pipeline::PipelineCache;
#[cfg(not(target_arch = "wasm32"))]
use super::kernel::pipeline::pop_now;
use super::pool::{BufferPool, PooledBuffer};
use super::slot::{Slot, Taken};
use crate::error::{Error, Result};
use crate::layout::{IterPlan, Layout, Window, WindowOperand, split_into_windows};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Flush threshold when neither the options nor `WEBTENSOR_FLUSH_THRESHOLD`
/// set one: recorded ops per submit. Measured (BENCHMARKS.md, `scheduler`):
/// on lavapipe a submit blocks while the previous one runs, so fewer,
/// larger batches win both host time and total time; recording stays
/// around a microsecond per op, so a large batch costs little latency.
pub(crate) const DEFAULT_FLUSH_THRESHOLD: usize = 1024;

/// What a flush needs of the device, borrowed from the context that owns
/// the scheduler (so the scheduler does not depend on that context).
pub(crate) struct Target<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub facts: &'a AdapterFacts,
    pub pipelines: &'a PipelineCache,
    /// Id of the batch being recorded; a flush closes it (see the pool).
    pub open_batch: &'a AtomicU64,
    /// The device's buffer pool, for temporaries of a flush.
    pub pool: &'a BufferPool,
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
}

/// The commands recorded since the last submit, the parameter arena, and
/// the settings that decide when and how a batch is submitted.
pub(crate) struct Scheduler {
    pending: Vec<Command>,
    arena: Option<wgpu::Buffer>,
    /// Bind groups kept across flushes.
    pub groups: BindGroupCache,
    pub counters: SchedulerCounters,
    /// Recorded ops that trigger a flush (at least 1).
    flush_threshold: usize,
    /// True when a flush fuses elementwise chains.
    fusion: bool,
    /// Planning scratch and the steps, dispatches and parameter bytes of
    /// the last flush: kept (emptied) so that their memory is reused.
    scratch: FusionScratch,
    steps: Vec<Step>,
    encoded: Vec<Encoded>,
    params: Vec<u8>,
}

/// A storage binding: `size` bytes of `buffer` from `offset`, or all of it.
#[derive(Clone)]
struct Binding {
    buffer: wgpu::Buffer,
    window: Option<Window>,
}

impl Binding {
    fn whole(buffer: wgpu::Buffer) -> Binding {
        Binding {
            buffer,
            window: None,
        }
    }

    fn bytes(&self) -> u64 {
        self.window.map_or(self.buffer.size(), |w| w.size)
    }
}

/// One dispatch, ready to encode.
struct Encoded {
    pipeline: Arc<Pipeline>,
    /// Bindings 1.., in order.
    buffers: SmallVec<[Binding; 4]>,
    /// Where its parameter block starts in the arena.
    offset: u32,
    groups: [u32; 3],
    /// Elementwise ops folded into it by fusion.
    fused_ops: usize,
}

impl Scheduler {
    /// An empty scheduler flushing every `flush_threshold` ops (at least 1),
    /// fusing when `fusion` is set.
    pub fn new(flush_threshold: usize, fusion: bool) -> Scheduler {
        Scheduler {
            pending: Vec::new(),
            arena: None,
            groups: BindGroupCache::default(),
            counters: SchedulerCounters::default(),
            flush_threshold: flush_threshold.max(1),
            fusion,
            scratch: FusionScratch::default(),
            steps: Vec::new(),
            encoded: Vec::new(),
            params: Vec::new(),
        }
    }

    pub fn flush_threshold(&self) -> usize {
        self.flush_threshold
    }

    /// Sets the flush threshold (at least 1), from the next recorded op on.
    pub fn set_flush_threshold(&mut self, ops: usize) {
        self.flush_threshold = ops.max(1);
    }

    pub fn fusion(&self) -> bool {
        self.fusion
    }

    /// Turns fusion on or off, from the next flush on.
    pub fn set_fusion(&mut self, on: bool) {
        self.fusion = on;
    }

    /// Records a command; flushes when the threshold is reached.
    ///
    /// # Errors
    /// As [`Scheduler::flush`].
    pub fn record(&mut self, ctx: &Target<'_>, command: Command) -> Result<()> {
        self.pending.push(command);
        self.counters.ops_recorded += 1;
        if self.pending.len() >= self.flush_threshold {
            self.flush(ctx, |_| {})?;
        }
        Ok(())
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
    /// dispatch exceeds the device's grid.
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
        let mut commands = std::mem::take(&mut self.pending);
        // Natively the device reports a batch's validation errors (a
        // destroyed application buffer ...) as it is submitted: a scope
        // around it gives them to this batch, never to the device's
        // handler (a `Device::from_wgpu` application's would panic).
        #[cfg(not(target_arch = "wasm32"))]
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = self.submit(ctx, &commands, timestamps, after);
        #[cfg(not(target_arch = "wasm32"))]
        let result = match (result, pop_now(scope)) {
            (Ok(()), Some(e)) => Err(Error::gpu("flush", format!("the device reported: {e}"))),
            (result, _) => result,
        };
        // Whatever happened, the batch is closed: buffers released while it
        // was open are safe to write once it is submitted (or abandoned).
        ctx.open_batch.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = &result {
            poison_outputs(&commands, &e.to_string());
        }
        // The emptied list keeps its memory for the next batch.
        commands.clear();
        if self.pending.is_empty() {
            self.pending = commands;
        }
        result
    }

    fn submit(
        &mut self,
        ctx: &Target<'_>,
        commands: &[Command],
        timestamps: Option<&wgpu::QuerySet>,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut steps = std::mem::take(&mut self.steps);
        let limits = ctx.facts.program_limits();
        programs(commands, self.fusion, limits, &mut self.scratch, &mut steps);
        let mut temporaries = Temporaries::new(&steps, commands);
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut bytes = std::mem::take(&mut self.params);
        let result = self.encode_steps(
            ctx,
            commands,
            &mut steps,
            &mut temporaries,
            &mut encoded,
            &mut bytes,
        );
        self.steps = steps;
        // Later batches run after this one: its temporaries go back now.
        let open_batch = ctx.open_batch.load(Ordering::Acquire);
        for t in temporaries.all {
            ctx.pool.release(t, open_batch);
        }
        let result = result.and_then(|()| {
            self.encode_and_submit(ctx, commands, timestamps, after, &encoded, &bytes)
        });
        encoded.clear();
        bytes.clear();
        self.encoded = encoded;
        self.params = bytes;
        result
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
        self.counters.buffers_avoided += commands
            .iter()
            .filter_map(Command::elementwise)
            .filter(|op| !op.out.slot.is_taken())
            .count() as u64;
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
            let arena = self.arena(ctx, bytes.len() as u64);
            // Ordered after every earlier submit and before this one, so an
            // earlier batch never sees these parameters.
            ctx.queue.write_buffer(&arena, 0, bytes);
            self.groups.begin_flush(ctx.pool.counters().dropped);
            let groups: Vec<wgpu::BindGroup> = encoded
                .iter()
                .map(|e| {
                    let key = group_key(e, &arena);
                    self.groups.get(key, |key| create_group(ctx.device, key))
                })
                .collect();
            self.groups.end_flush();
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("webtensor batch"),
                timestamp_writes,
            });
            for (e, group) in encoded.iter().zip(&groups) {
                pass.set_pipeline(&e.pipeline.pipeline);
                pass.set_bind_group(0, group, &[e.offset]);
                pass.dispatch_workgroups(e.groups[0], e.groups[1], e.groups[2]);
            }
        }
        after(&mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
        let c = &mut self.counters;
        c.submits += 1;
        c.dispatches += encoded.len() as u64;
        for e in encoded {
            let fused = e.fused_ops as u64;
            c.fused_ops += fused;
            c.fused_kernels += u64::from(fused > 0);
        }
        Ok(())
    }

    /// Encodes `steps` in order, taking each program's buffers as it
    /// comes (see `slot.rs`): the dispatches and their parameter blocks.
    ///
    /// # Errors
    /// As [`Scheduler::flush`]; `OutOfMemory` when a buffer taken now does
    /// not fit under the memory cap.
    fn encode_steps(
        &mut self,
        ctx: &Target<'_>,
        commands: &[Command],
        steps: &mut Vec<Step>,
        temporaries: &mut Temporaries,
        encoded: &mut Vec<Encoded>,
        bytes: &mut Vec<u8>,
    ) -> Result<()> {
        // Every parameter block goes straight into the arena's bytes.
        let align = ctx.facts.uniform_align as usize;
        for (index, step) in steps.drain(..).enumerate() {
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
                    encode_windows(ctx, program, bytes, align, encoded)?;
                    temporaries.after(index);
                    continue;
                }
                Step::Kernel(c) => {
                    let Some(Command::Kernel(k)) = commands.get(c) else {
                        return Err(Error::internal(
                            "flush",
                            "a kernel step without its command",
                        ));
                    };
                    let offset = bytes.len() as u32;
                    bytes.extend_from_slice(&k.params);
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

    /// The parameter arena, grown to at least `size` bytes.
    fn arena(&mut self, ctx: &Target<'_>, size: u64) -> wgpu::Buffer {
        match &self.arena {
            Some(a) if a.size() >= size => a.clone(),
            _ => {
                let a = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webtensor params"),
                    size: size.next_power_of_two().max(4096),
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                ctx.pool.note_made(&a);
                // Groups binding the old arena would keep it alive.
                self.groups.clear();
                self.arena = Some(a.clone());
                a
            }
        }
    }
}

/// The dispatches of one program, their parameters appended to `params`
/// (each block aligned to `align`): one over whole buffers when they all
/// fit a storage binding, else one per block of the program's index space
/// whose operands fit a window of their buffers (see `layout::windows`),
/// each input on a binding of its own. A program reading its destination's
/// buffer more than half a binding away from where it writes runs in two
/// steps through a temporary buffer (see `Program::through`).
fn encode_windows(
    ctx: &Target<'_>,
    program: Program,
    params: &mut Vec<u8>,
    align: usize,
    out: &mut Vec<Encoded>,
) -> Result<()> {
    let limit = ctx.facts.max_storage_binding;
    if program.buffers.iter().all(|b| b.size() <= limit) {
        let bindings = buffers_of(&program)?
            .into_iter()
            .map(Binding::whole)
            .collect();
        if let Some(e) = encode(ctx, &program, &program.layouts, bindings, params)? {
            out.push(e);
            params.resize(params.len().next_multiple_of(align), 0);
        }
        return Ok(());
    }
    let program = program.unshared();
    let bytes_of = |o: &Operand| element_bytes(o.dtype) as u64;
    if program.self_read_distance(bytes_of) > limit / 2 {
        let numel = program.layouts[0].numel() as u64;
        // From the pool, so that the memory cap counts it.
        let batch = ctx.open_batch.load(Ordering::Acquire);
        let temp = ctx.pool.acquire_for_flush(
            ctx.device,
            "elementwise (through a temporary)",
            (
                (numel * bytes_of(&program.operands[0])).max(4),
                ctx.facts.max_tensor_bytes(),
            ),
            batch,
            |_| false,
        )?;
        let (compute, copy) = program.through(&Arc::new(Slot::ready(temp.clone())));
        let encoded = encode_blocks(ctx, &compute, params, align, out)
            .and_then(|()| encode_blocks(ctx, &copy, params, align, out));
        ctx.pool.release(temp, batch);
        encoded?;
    } else {
        encode_blocks(ctx, &program, params, align, out)?;
    }
    Ok(())
}

/// Appends to `out` the dispatches of `program` over the blocks whose
/// windows fit the device's binding.
///
/// # Errors
/// `Error::Internal` when a block does not fit (a bug: splitting reaches
/// single elements, which fit any device).
fn encode_blocks(
    ctx: &Target<'_>,
    program: &Program,
    params: &mut Vec<u8>,
    align: usize,
    out: &mut Vec<Encoded>,
) -> Result<()> {
    let limit = ctx.facts.max_storage_binding;
    let operands: Vec<WindowOperand<'_>> = program
        .operands
        .iter()
        .zip(&program.layouts)
        .map(|(o, layout)| WindowOperand {
            layout,
            binding: o.binding as usize - 1,
            element_bytes: element_bytes(o.dtype) as u64,
        })
        .collect();
    let buffers = buffers_of(program)?;
    for block in split_into_windows(&operands, limit, u64::from(ctx.facts.storage_align)) {
        let mut bindings = SmallVec::new();
        for (buffer, window) in buffers.iter().zip(&block.windows) {
            let mut w = window.unwrap_or(Window { offset: 0, size: 4 });
            if w.size > limit {
                return Err(Error::internal(
                    "elementwise",
                    format!("a block's window of {} bytes exceeds the binding", w.size),
                ));
            }
            // Whole vec4s where the buffer and the limit allow.
            let whole = w.size.next_multiple_of(16);
            if w.offset + whole <= buffer.size() && whole <= limit {
                w.size = whole;
            }
            bindings.push(Binding {
                buffer: buffer.clone(),
                window: Some(w),
            });
        }
        if let Some(e) = encode(ctx, program, &block.layouts, bindings, params)? {
            out.push(e);
            params.resize(params.len().next_multiple_of(align), 0);
        }
    }
    Ok(())
}

/// The buffers of `program`, which the flush has taken.
///
/// # Errors
/// `Error::Internal` for a buffer not taken (a bug).
fn buffers_of(program: &Program) -> Result<SmallVec<[wgpu::Buffer; 4]>> {
    program
        .buffers
        .iter()
        .map(|slot| {
            slot.buffer()
                .ok_or_else(|| Error::internal("flush", "a program's buffer was not taken"))
        })
        .collect()
}

/// Temporaries of one flush: buffers for the outputs of ops whose tensors
/// are gone but whose writes were not fused away (see `slot.rs`). Each
/// goes to the next such output once the flush has encoded its last use,
/// so a chain that fusion leaves alone needs two, not one per op.
struct Temporaries {
    /// Every temporary taken, to give back when the flush ends.
    all: Vec<PooledBuffer>,
    /// Those free for the next output.
    free: Vec<PooledBuffer>,
    /// The last step using each slot of a program.
    last_use: FxHashMap<*const Slot, usize>,
    /// The last step using each buffer id.
    last_use_of_id: FxHashMap<u64, usize>,
    /// Slots holding a temporary, by the step that uses them last.
    lent: Vec<(usize, Arc<Slot>)>,
}

impl Temporaries {
    fn new(steps: &[Step], commands: &[Command]) -> Temporaries {
        let mut last_use = FxHashMap::default();
        let mut last_use_of_id = FxHashMap::default();
        for (index, step) in steps.iter().enumerate() {
            match step {
                Step::Program(p) => {
                    for slot in &p.buffers {
                        last_use.insert(Arc::as_ptr(slot), index);
                        last_use_of_id.insert(slot.id(), index);
                    }
                }
                Step::Kernel(_) => {
                    for b in step.kernel(commands).iter().flat_map(|k| &k.bindings) {
                        last_use_of_id.insert(b.buffer_id, index);
                    }
                }
            }
        }
        Temporaries {
            all: Vec::new(),
            free: Vec::new(),
            last_use,
            last_use_of_id,
            lent: Vec::new(),
        }
    }

    /// True when step `index` writes `out`, whose tensor is gone, which
    /// has no buffer, and which no later step uses: nothing can observe
    /// the write.
    fn is_dead(&self, index: usize, out: &Arc<Slot>) -> bool {
        out.is_unobservable() && self.last_use.get(&Arc::as_ptr(out)) == Some(&index)
    }

    /// Takes the buffers of step `index`'s `slots`.
    ///
    /// # Errors
    /// `OutOfMemory` over the memory cap.
    fn take(&mut self, ctx: &Target<'_>, index: usize, slots: &[Arc<Slot>]) -> Result<()> {
        let open_batch = ctx.open_batch.load(Ordering::Acquire);
        let limit = ctx.facts.max_tensor_bytes();
        // A buffer released while this batch was open is free for this
        // step when no step from here on uses it.
        let last_use_of_id = &self.last_use_of_id;
        let unused_from_here = |id: u64| last_use_of_id.get(&id).is_none_or(|&last| last < index);
        for slot in slots {
            let (_, taken) = slot.take_for_flush(
                ctx.pool,
                (ctx.device, "flush", limit),
                open_batch,
                &unused_from_here,
                |bytes| {
                    let size = slot.size();
                    if let Some(at) = self.free.iter().position(|b| b.size == size) {
                        return Ok(self.free.swap_remove(at));
                    }
                    let b = ctx.pool.acquire_for_flush(
                        ctx.device,
                        "elementwise (an intermediate kept by the flush)",
                        (bytes, limit),
                        open_batch,
                        unused_from_here,
                    )?;
                    self.all.push(b.clone());
                    Ok(b)
                },
            )?;
            if let Taken::Temporary = taken {
                let last = self.last_use.get(&Arc::as_ptr(slot)).copied();
                self.lent.push((last.unwrap_or(index), slot.clone()));
            }
        }
        Ok(())
    }

    /// Frees the temporaries whose last use was step `index`.
    fn after(&mut self, index: usize) {
        let mut k = 0;
        while k < self.lent.len() {
            if self.lent[k].0 <= index {
                let (_, slot) = self.lent.swap_remove(k);
                if let Some(b) = slot.temporary() {
                    self.free.push(b);
                }
            } else {
                k += 1;
            }
        }
    }
}

/// The pipeline and grid of `program` over `layouts` (its own, or one
/// block's) bound to `bindings`, its parameters appended to `params`;
/// `None` (and nothing appended) when it has no elements.
fn encode(
    ctx: &Target<'_>,
    program: &Program,
    layouts: &[Layout],
    bindings: SmallVec<[Binding; 4]>,
    params: &mut Vec<u8>,
) -> Result<Option<Encoded>> {
    let layouts: Vec<&Layout> = layouts.iter().collect();
    let plan = IterPlan::new(&layouts);
    let numel = plan.numel();
    if numel == 0 {
        return Ok(None);
    }
    let native_f16 = ctx.facts.native_f16;
    let whole_vec4s = bindings.iter().all(|b| b.bytes() % 16 == 0);
    let (access, plan) = choose_access(plan, &program.operands, whole_vec4s);
    let (threads, group) = access.grid(&plan);
    let [x, y] = grid_of(threads, group, ctx.facts.max_workgroups_per_dim)?;
    let key = program.key(native_f16, access);
    let pipeline = elementwise_pipeline(ctx.pipelines, ctx.device, &key)?;
    let offset = params.len() as u32;
    // The tiled kernel numbers workgroups, the others threads, per grid row.
    write_params(params, &plan, x * group, &program.scalars);
    Ok(Some(Encoded {
        pipeline,
        fused_ops: program.fused_ops(),
        buffers: bindings,
        offset,
        groups: [x, y, 1],
    }))
}

/// What `e`'s bind group binds, with the parameter `arena`.
fn group_key(e: &Encoded, arena: &wgpu::Buffer) -> GroupKey {
    GroupKey {
        layout: e.pipeline.layout.clone(),
        arena: arena.clone(),
        params_size: e.pipeline.params_size,
        buffers: e
            .buffers
            .iter()
            .map(|b| (b.buffer.clone(), b.window.map(|w| (w.offset, w.size))))
            .collect(),
    }
}

/// A bind group binding what `key` names: the arena's parameter block
/// (at a dynamic offset) at 0, the storage buffers from 1.
fn create_group(device: &wgpu::Device, key: &GroupKey) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &key.arena,
            offset: 0,
            size: wgpu::BufferSize::new(key.params_size),
        }),
    }];
    for (k, (buffer, window)) in key.buffers.iter().enumerate() {
        let resource = match *window {
            None => buffer.as_entire_binding(),
            Some((offset, size)) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset,
                size: wgpu::BufferSize::new(size),
            }),
        };
        entries.push(wgpu::BindGroupEntry {
            binding: 1 + k as u32,
            resource,
        });
    }
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &key.layout,
        entries: &entries,
    })
}
