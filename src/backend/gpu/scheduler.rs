//! Pending GPU work. Ops record dispatches here instead of submitting them;
//! a flush encodes every pending dispatch into one compute pass of one
//! command encoder, uploads all their parameters as one arena buffer bound
//! with dynamic offsets, and submits once.
//!
//! A flush happens on readback, on `Device::sync`, and when
//! [`FLUSH_THRESHOLD`] dispatches are pending.

use super::context::GpuContext;
use super::params::{PARAMS_SIZE, Params};
use super::pipeline::Pipeline;
use crate::error::Result;
use smallvec::SmallVec;
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// Pending dispatches that trigger a flush.
pub(crate) const FLUSH_THRESHOLD: usize = 256;

/// One recorded dispatch.
struct Dispatch {
    pipeline: Arc<Pipeline>,
    /// Destination first, then the input bindings in binding order.
    buffers: SmallVec<[wgpu::Buffer; 4]>,
    params: Params,
    groups: [u32; 2],
}

/// The dispatches recorded since the last submit, and counters.
#[derive(Default)]
pub(crate) struct Scheduler {
    pending: Vec<Dispatch>,
    pub submits: u64,
    pub dispatches: u64,
}

impl Scheduler {
    /// Records a dispatch; flushes when the threshold is reached.
    ///
    /// # Errors
    /// `Error::Gpu` when the flush fails.
    pub fn record(
        &mut self,
        ctx: &GpuContext,
        pipeline: Arc<Pipeline>,
        buffers: SmallVec<[wgpu::Buffer; 4]>,
        params: Params,
        groups: [u32; 2],
    ) -> Result<()> {
        self.pending.push(Dispatch {
            pipeline,
            buffers,
            params,
            groups,
        });
        self.dispatches += 1;
        if self.pending.len() >= FLUSH_THRESHOLD {
            self.flush(ctx, |_| {})?;
        }
        Ok(())
    }

    /// Encodes all pending dispatches, then whatever `after` adds (a copy for
    /// readback), and submits once. Submits even with nothing pending when
    /// `after` has work.
    ///
    /// # Errors
    /// Currently infallible; kept fallible for device-loss reporting.
    pub fn flush(
        &mut self,
        ctx: &GpuContext,
        after: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("webtensor batch"),
            });
        if !self.pending.is_empty() {
            let stride = PARAMS_SIZE.next_multiple_of(ctx.facts.uniform_align as u64) as usize;
            let mut arena = vec![0u8; stride * self.pending.len()];
            for (k, d) in self.pending.iter().enumerate() {
                arena[k * stride..k * stride + PARAMS_SIZE as usize]
                    .copy_from_slice(bytemuck::bytes_of(&d.params));
            }
            let arena = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("webtensor params"),
                    contents: &arena,
                    usage: wgpu::BufferUsages::UNIFORM,
                });
            let groups: Vec<wgpu::BindGroup> = self
                .pending
                .iter()
                .map(|d| bind_group(ctx, d, &arena))
                .collect();
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("webtensor batch"),
                timestamp_writes: None,
            });
            for (k, (d, group)) in self.pending.iter().zip(groups.iter()).enumerate() {
                pass.set_pipeline(&d.pipeline.pipeline);
                pass.set_bind_group(0, group, &[(k * stride) as u32]);
                pass.dispatch_workgroups(d.groups[0], d.groups[1], 1);
            }
        }
        after(&mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
        self.pending.clear();
        self.submits += 1;
        Ok(())
    }
}

fn bind_group(ctx: &GpuContext, d: &Dispatch, arena: &wgpu::Buffer) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: arena,
            offset: 0,
            size: wgpu::BufferSize::new(PARAMS_SIZE),
        }),
    }];
    for (k, buffer) in d.buffers.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry {
            binding: 1 + k as u32,
            resource: buffer.as_entire_binding(),
        });
    }
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &d.pipeline.layout,
        entries: &entries,
    })
}
