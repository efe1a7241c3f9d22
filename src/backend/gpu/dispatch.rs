//! Dispatches ready to encode: an elementwise program's pipeline, grid,
//! parameters and bindings (whole buffers, or windows of buffers larger
//! than one binding), and the bind group a dispatch binds.

use super::bind_groups::{Binding, GroupKey, GroupProbe};
use super::buffer_claim::BufferClaim;
use super::elementwise::access::choose_access;
use super::elementwise::codegen::elementwise_pipeline;
use super::elementwise::params::write_params;
use super::elementwise::program::{Operand, Program};
use super::kernel::buffer::element_bytes;
use super::kernel::grid::grid_of;
use super::kernel::pipeline::Pipeline;
use super::pool::PooledBuffer;
use super::target::Target;
use crate::error::{Error, Result};
use crate::layout::{IterPlan, Layout, Window, WindowOperand, split_into_windows};
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// One dispatch, ready to encode.
pub(super) struct Encoded {
    pub pipeline: Arc<Pipeline>,
    /// Bindings 1.., in order.
    pub buffers: SmallVec<[Binding; 4]>,
    /// Where its parameter block starts in the arena.
    pub offset: u32,
    pub groups: [u32; 3],
    /// Elementwise ops folded into it by fusion.
    pub fused_ops: usize,
}

impl Encoded {
    /// Bytes its storage bindings span, a binding the kernel writes counted
    /// twice (see `ProfiledKernel::bytes_bound`).
    pub fn bytes_bound(&self) -> u64 {
        self.buffers
            .iter()
            .zip(&self.pipeline.read_only)
            .map(|(b, &read_only)| {
                let size = b.window.map_or(b.buffer.size(), |w| w.size);
                if read_only { size } else { 2 * size }
            })
            .sum()
    }
}

/// The dispatches of one program, their parameters appended to `params`
/// (each block aligned to `align`): one over whole buffers when they all
/// fit a storage binding, else one per block of the program's index space
/// whose operands fit a window of their buffers (see `layout::windows`),
/// each input on a binding of its own. A program reading its destination's
/// buffer more than half a binding away from where it writes runs in two
/// steps through a temporary buffer (see `Program::through`), added to
/// `temporaries` (the flush's, given back when it ends or kept by a
/// captured step).
pub(super) fn encode_windows(
    ctx: &Target<'_>,
    program: Program,
    (params, align): (&mut Vec<u8>, usize),
    out: &mut Vec<Encoded>,
    temporaries: &mut Vec<PooledBuffer>,
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
            || batch,
            |_| false,
        )?;
        let (compute, copy) = program.through(&Arc::new(BufferClaim::ready(temp.clone())));
        let encoded = encode_blocks(ctx, &compute, params, align, out)
            .and_then(|()| encode_blocks(ctx, &copy, params, align, out));
        temporaries.push(temp);
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
    let mut folded = false;
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
        if let Some(mut e) = encode(ctx, program, &block.layouts, bindings, params)? {
            // The program's ops are folded once, however many blocks run it.
            e.fused_ops *= usize::from(!folded);
            folded = true;
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
        .map(|claim| {
            claim
                .buffer()
                .ok_or_else(|| Error::internal("flush", "a program's buffer was not taken"))
        })
        .collect()
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
    let (access, plan) = choose_access(
        plan,
        &program.operands,
        whole_vec4s,
        ctx.facts.elementwise_run,
    );
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
pub(super) fn group_probe<'a>(e: &'a Encoded, arena: &'a wgpu::Buffer) -> GroupProbe<'a> {
    GroupProbe {
        layout: &e.pipeline.layout,
        arena,
        params_size: e.pipeline.params_size,
        buffers: &e.buffers,
    }
}

/// A bind group binding what `key` names: the arena's parameter block
/// (at a dynamic offset) at 0, the storage buffers from 1.
pub(super) fn create_group(device: &wgpu::Device, key: &GroupKey) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &key.arena,
            offset: 0,
            size: wgpu::BufferSize::new(key.params_size),
        }),
    }];
    for (k, Binding { buffer, window }) in key.buffers.iter().enumerate() {
        let resource = match *window {
            None => buffer.as_entire_binding(),
            Some(w) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: w.offset,
                size: wgpu::BufferSize::new(w.size),
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
