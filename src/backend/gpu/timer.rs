//! GPU time of a flush, from timestamps the device writes at the start
//! and end of the flush's compute pass (`TIMESTAMP_QUERY`): what
//! autotuning times kernels by where the device has them, free of the
//! host's submit and wake-up latency that the wall clock adds to a short
//! kernel.

use super::context::GpuContext;
use super::storage::map_and_read;
use crate::error::Result;

/// Bytes of the two resolved timestamps.
const BYTES: u64 = 2 * wgpu::QUERY_SIZE as u64;

/// A query set of two timestamps and the buffers that bring them back.
pub(crate) struct PassTimer {
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readback: wgpu::Buffer,
}

impl PassTimer {
    /// A timer on `ctx`'s device, or `None` where it writes no timestamps.
    pub fn new(ctx: &GpuContext) -> Option<PassTimer> {
        if !ctx.facts.timestamps {
            return None;
        }
        let buffer = |label, usage| {
            let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: BYTES,
                usage,
                mapped_at_creation: false,
            });
            ctx.pool.note_made(&b);
            b
        };
        Some(PassTimer {
            queries: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("webtensor timer"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolved: buffer(
                "webtensor timestamps",
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            readback: buffer(
                "webtensor timestamps readback",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        })
    }

    /// Flushes what is pending in one timed pass, waits for it, and
    /// returns the seconds the GPU took from the pass's start to its end;
    /// `None` when the timestamps ran backwards (a clock reset between
    /// them: the run has no time, and the op that timed it goes on).
    ///
    /// # Errors
    /// `Error::Gpu` naming `op` when the flush or the readback fails.
    pub async fn time_flush(&self, ctx: &GpuContext, op: &'static str) -> Result<Option<f64>> {
        ctx.scheduler()
            .flush_timed(&ctx.target(), Some(&self.queries), |encoder| {
                encoder.resolve_query_set(&self.queries, 0..2, &self.resolved, 0);
                encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readback, 0, BYTES);
            })?;
        let [start, end] = map_and_read(ctx, op, &self.readback, BYTES, |bytes| {
            let at = |k: usize| {
                let mut word = [0u8; 8];
                word.copy_from_slice(&bytes[8 * k..8 * k + 8]);
                u64::from_le_bytes(word)
            };
            [at(0), at(1)]
        })
        .await?;
        let period_ns = f64::from(ctx.queue.get_timestamp_period());
        Ok(end
            .checked_sub(start)
            .map(|ticks| ticks as f64 * period_ns * 1e-9))
    }
}
