//! Device buffers holding tensor elements.

use super::context::GpuContext;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// Bytes one element occupies in a device buffer.
pub(crate) fn element_bytes(dtype: DType) -> usize {
    match dtype {
        DType::F16 => 2,
        DType::U8 | DType::Bool => 1,
        _ => 4,
    }
}

/// A buffer of `len` elements of `dtype` on one GPU.
pub(crate) struct GpuStorage {
    pub buffer: wgpu::Buffer,
    pub len: usize,
    pub dtype: DType,
    pub ctx: Arc<GpuContext>,
}

const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Checks that `len` elements of `dtype` fit one storage binding, and
/// returns the buffer size in bytes (a multiple of 4, at least 4).
///
/// # Errors
/// `UnsupportedDType` for f64, `TooLarge` above the binding limit.
fn buffer_size(ctx: &GpuContext, op: &'static str, dtype: DType, len: usize) -> Result<u64> {
    if dtype == DType::F64 {
        return Err(Error::UnsupportedDType {
            op,
            dtype,
            device: format!("the GPU ({})", ctx.facts.name),
        });
    }
    let bytes = (len as u64 * element_bytes(dtype) as u64)
        .next_multiple_of(4)
        .max(4);
    let limit = ctx.facts.max_storage_binding.min(ctx.facts.max_buffer_size);
    if bytes > limit {
        return Err(Error::TooLarge {
            op,
            what: "tensor storage in bytes",
            requested: bytes,
            limit,
        });
    }
    if len > i32::MAX as usize {
        return Err(Error::TooLarge {
            op,
            what: "element count",
            requested: len as u64,
            limit: i32::MAX as u64,
        });
    }
    Ok(bytes)
}

impl GpuStorage {
    /// A zero-filled buffer.
    ///
    /// # Errors
    /// As [`buffer_size`].
    pub fn zeros(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        dtype: DType,
        len: usize,
    ) -> Result<GpuStorage> {
        let size = buffer_size(ctx, op, dtype, len)?;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webtensor tensor"),
            size,
            usage: USAGE,
            mapped_at_creation: false,
        });
        Ok(GpuStorage {
            buffer,
            len,
            dtype,
            ctx: ctx.clone(),
        })
    }

    /// A buffer holding `values`.
    ///
    /// # Errors
    /// As [`buffer_size`].
    pub fn upload<T: Element>(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        values: &[T],
    ) -> Result<GpuStorage> {
        let size = buffer_size(ctx, op, T::DTYPE, values.len())?;
        let mut bytes = Vec::with_capacity(size as usize);
        T::write_bytes(values, &mut bytes);
        bytes.resize(size as usize, 0);
        let buffer = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("webtensor tensor"),
                contents: &bytes,
                usage: USAGE,
            });
        Ok(GpuStorage {
            buffer,
            len: values.len(),
            dtype: T::DTYPE,
            ctx: ctx.clone(),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Reads elements `start..start + count` back to the host as raw bytes
    /// (the device representation), after submitting all pending work.
    ///
    /// # Errors
    /// `Error::Gpu` when mapping fails or the device is lost.
    pub async fn read_bytes(&self, start: usize, count: usize) -> Result<Vec<u8>> {
        const OP: &str = "to_vec";
        let eb = element_bytes(self.dtype) as u64;
        let first = start as u64 * eb;
        let wanted = count as u64 * eb;
        let aligned_start = first & !3;
        let size = (first + wanted).next_multiple_of(4) - aligned_start;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webtensor readback"),
            size: size.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if wanted > 0 {
            self.ctx.scheduler().flush(&self.ctx, |encoder| {
                encoder.copy_buffer_to_buffer(&self.buffer, aligned_start, &staging, 0, size);
            })?;
        } else {
            return Ok(Vec::new());
        }
        let (sender, receiver) = futures::channel::oneshot::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = sender.send(r);
        });
        #[cfg(not(target_arch = "wasm32"))]
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::gpu(OP, e.to_string()))?;
        receiver
            .await
            .map_err(|_| Error::gpu(OP, "the device was dropped during readback"))?
            .map_err(|e| Error::gpu(OP, e.to_string()))?;
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| Error::gpu(OP, e.to_string()))?;
        let skip = (first - aligned_start) as usize;
        Ok(view[skip..skip + wanted as usize].to_vec())
    }
}
