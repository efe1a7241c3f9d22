//! What the public interop (`src/interop/`: a `Device` on the
//! application's wgpu device, tensors handed out as wgpu buffers and the
//! application's buffers wrapped as tensors, tensors drawn into textures)
//! needs of the GPU backend: a storage's buffer handed out, an
//! application's buffer wrapped as storage, a buffer copied into a
//! texture. Nothing here names a tensor or a device handle.

use super::context::GpuContext;
use super::kernel::buffer::{array_type, storage_mode};
use super::kernel::pipeline::pop_now;
use super::storage::GpuStorage;
use crate::backend::Storage;
use crate::dtype::{DType, KernelType};
use crate::error::{Error, Result};
use std::sync::Arc;

/// How `dtype` sits in a device buffer: its storage dtype (f32 for c64) and
/// bytes per element.
pub(crate) fn stored_layout(dtype: DType) -> (KernelType, u64) {
    let (stored, per_element) = dtype.stored_as();
    (
        stored,
        (super::storage::element_bytes(stored) * per_element) as u64,
    )
}

/// The GPU storage in `storage`, or `Error::Argument` naming `op`.
fn gpu_storage<'a>(op: &'static str, storage: &'a Storage) -> Result<&'a GpuStorage> {
    match storage {
        Storage::Gpu(s) => Ok(s),
        Storage::Cpu(_) => Err(Error::argument(
            op,
            "the tensor is on the CPU; move it to a GPU device with to_device",
        )),
    }
}

/// `Error::Argument` naming `op` unless `storage` is on a GPU.
///
/// # Errors
/// As described.
pub(crate) fn check_on_gpu(op: &'static str, storage: &Storage) -> Result<()> {
    gpu_storage(op, storage).map(drop)
}

/// The buffer of `storage` after every op recorded on its device is
/// submitted (so that work the application submits next sees them), known
/// from now on as that storage's (wrapped back, it is the same storage),
/// and the WGSL array type webtensor's kernels declare it with.
///
/// # Errors
/// `Error::Argument` naming `op` for a CPU storage; `Error::DeviceLost`
/// on a lost device; `Error::Gpu` when the submit fails.
pub(crate) fn hand_out(
    op: &'static str,
    storage: &Arc<Storage>,
) -> Result<(wgpu::Buffer, &'static str)> {
    let s = gpu_storage(op, storage)?;
    s.ctx.check_lost(op)?;
    // Taken before the flush: a buffer the pool hands out may have been
    // given back by work not yet submitted (another thread's, or a flush
    // under way on one), which the flush then submits before the
    // application's next write can land.
    let buffer = s.buffer(op)?;
    // The application may destroy it: never pooled again.
    s.claim().hand_out();
    s.ctx.flush().map_err(|e| e.named(op))?;
    // The storage's own buffer: no other storage can be it.
    let _ = s.ctx.share(&buffer, storage);
    let wgsl = array_type(storage_mode(s.dtype, s.ctx.facts.native_f16), false);
    Ok((buffer, wgsl))
}

/// The checks of an application's `buffer` that do not depend on a
/// shape: its usage, its size, the device's largest buffer.
///
/// # Errors
/// `Error::DeviceLost` naming `op` on a lost device; `Error::Argument`
/// for a buffer without the usages, of 0 bytes or of a size that is not a
/// multiple of 4; `Error::TooLarge` past the device's largest buffer.
pub(crate) fn check_wrappable(
    op: &'static str,
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
) -> Result<()> {
    ctx.check_lost(op)?;
    let needs = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    if !buffer.usage().contains(needs) {
        return Err(Error::argument(
            op,
            format!(
                "the buffer's usage is {:?}; it needs STORAGE | COPY_SRC",
                buffer.usage()
            ),
        ));
    }
    let size = buffer.size();
    if size == 0 {
        // Nothing could be bound (an empty tensor takes a buffer of 4
        // bytes or more, as webtensor's own).
        return Err(Error::argument(
            op,
            "the buffer has 0 bytes; an empty tensor needs a buffer of 4 bytes or more",
        ));
    }
    if !size.is_multiple_of(4) {
        return Err(Error::argument(
            op,
            format!("the buffer has {size} bytes, not a multiple of 4"),
        ));
    }
    let limit = ctx.facts.max_tensor_bytes();
    if size > limit {
        return Err(Error::TooLarge {
            op,
            what: "buffer bytes",
            requested: size,
            limit,
        });
    }
    Ok(())
}

/// The application's `buffer` (checked by [`check_wrappable`]) as storage
/// of `dtype` on `ctx`'s device. A buffer wrapped or handed out before is
/// that storage again.
///
/// # Errors
/// `Error::Argument` naming `op` for a buffer of another wgpu device or
/// instance, or one already wrapped as a dtype stored otherwise.
pub(crate) fn wrap(
    op: &'static str,
    ctx: &Arc<GpuContext>,
    buffer: &wgpu::Buffer,
    dtype: DType,
) -> Result<Arc<Storage>> {
    let size = buffer.size();
    let (stored, element_bytes) = stored_layout(dtype);
    // A buffer wrapped or handed out before is that storage again, so
    // the overlap rules see one storage however many handles wrap it.
    if let Some((known, storage)) = ctx.shared_storage(buffer) {
        check_same_device(op, ctx, buffer)?;
        let Storage::Gpu(s) = &*storage else {
            return Err(Error::internal(
                op,
                "a shared buffer's storage is not on the GPU",
            ));
        };
        if known.size() != size || known.usage() != buffer.usage() {
            return Err(foreign(op));
        }
        if s.dtype != stored {
            return Err(Error::argument(
                op,
                format!(
                    "the buffer already holds a tensor stored as {:?}; wrap it as a dtype stored alike, not {dtype}",
                    s.dtype
                ),
            ));
        }
        return Ok(storage);
    }
    // wgpu compares buffers by their id in the instance that made them;
    // one this device made and never handed out cannot be the
    // application's.
    if ctx.pool.made(buffer) {
        return Err(foreign(op));
    }
    check_same_device(op, ctx, buffer)?;
    let len = (size / element_bytes) as usize * dtype.stored_as().1;
    let storage = Arc::new(Storage::Gpu(GpuStorage::lent(
        ctx,
        buffer.clone(),
        stored,
        len,
    )));
    // Another thread may have wrapped it since the lookup: then that
    // storage, checked as one found at first.
    let known = ctx.share(buffer, &storage);
    if !Arc::ptr_eq(&known, &storage) {
        drop(storage);
        return wrap(op, ctx, buffer, dtype);
    }
    Ok(storage)
}

/// Copies `width x height` texels from `source` (rows `bytes_per_row`
/// apart from byte `offset`, 4 bytes a texel) into the top-left of
/// `texture`, mip level 0, in a submit of its own.
///
/// # Errors
/// `Error::DeviceLost` naming `op` on a lost device; `Error::Argument`
/// when the device rejects the copy, or for a texture of another wgpu
/// instance.
pub(crate) fn copy_to_texture(
    op: &'static str,
    ctx: &GpuContext,
    source: (&wgpu::Buffer, u64, u32),
    texture: &wgpu::Texture,
    extent: (u32, u32),
) -> Result<()> {
    ctx.check_lost(op)?;
    // A texture of another instance has an id this one's hub may not
    // hold: wgpu-core panics looking it up ("Cannot get non-existent
    // resource"), before anything is recorded. Natively that is caught
    // and refused.
    #[cfg(not(target_arch = "wasm32"))]
    {
        let copy = std::panic::AssertUnwindSafe(|| encode_copy(op, ctx, source, texture, extent));
        std::panic::catch_unwind(copy).unwrap_or_else(|_| {
            Err(Error::argument(
                op,
                "the texture is not one of this device's wgpu instance (keep one instance)",
            ))
        })
    }
    #[cfg(target_arch = "wasm32")]
    encode_copy(op, ctx, source, texture, extent)
}

/// [`copy_to_texture`]'s copy, in an error scope.
fn encode_copy(
    op: &'static str,
    ctx: &GpuContext,
    (source, offset, bytes_per_row): (&wgpu::Buffer, u64, u32),
    texture: &wgpu::Texture,
    (width, height): (u32, u32),
) -> Result<()> {
    let device = &ctx.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("webtensor write_to_texture"),
    });
    encoder.copy_buffer_to_texture(
        wgpu::TexelCopyBufferInfo {
            buffer: source,
            layout: wgpu::TexelCopyBufferLayout {
                offset,
                bytes_per_row: Some(bytes_per_row),
                rows_per_image: Some(height),
            },
        },
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
    );
    ctx.queue.submit([encoder.finish()]);
    ctx.uploads.submitted_outside();
    match pop_now(scope) {
        Some(e) => Err(Error::argument(
            op,
            format!("the copy into the texture failed: {e}"),
        )),
        None => Ok(()),
    }
}

/// A buffer that has the identity of one of webtensor's own: wgpu tells a
/// buffer only by its id within its instance, so it is another instance's.
fn foreign(op: &'static str) -> Error {
    Error::argument(
        op,
        "the buffer has the identity of a buffer of webtensor's own that no live tensor handed out: a buffer of another wgpu::Instance (which wgpu tells only by an id that may be one of this instance's: keep one instance), or one kept after its tensor was dropped",
    )
}

/// `Error::Argument` naming `op` when `buffer` belongs to another wgpu
/// device than `ctx`'s: binding it in a bind group of this device is a
/// validation error, caught in an error scope. (In a browser the scope's
/// answer comes later; there a mismatch surfaces as a WebGPU error.)
fn check_same_device(op: &'static str, ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<()> {
    // A buffer of another instance whose id names a slot of this one that
    // holds another buffer makes wgpu-core panic ("Cannot get BufferId");
    // natively that is caught here and refused (nothing is written before
    // the lookup fails).
    #[cfg(not(target_arch = "wasm32"))]
    {
        let probe = std::panic::AssertUnwindSafe(|| probe_binding(op, ctx, buffer));
        std::panic::catch_unwind(probe).unwrap_or_else(|_| Err(foreign(op)))
    }
    #[cfg(target_arch = "wasm32")]
    probe_binding(op, ctx, buffer)
}

/// Binds `buffer` in a bind group of `ctx`'s device and submits a copy of
/// its first word, inside an error scope: a buffer of another device
/// fails the binding, a mapped one (or one being mapped) the submit,
/// which would otherwise fail the first batch that reads it.
fn probe_binding(op: &'static str, ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<()> {
    let device = &ctx.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("webtensor buffer check"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let _group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("webtensor buffer check"),
        layout: &layout,
        // Its first binding's worth: a buffer may be larger than a binding.
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: wgpu::BufferSize::new(buffer.size().min(ctx.facts.max_storage_binding)),
            }),
        }],
    });
    let scratch = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("webtensor buffer check"),
        size: 4,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("webtensor buffer check"),
    });
    if buffer.size() >= 4 {
        encoder.copy_buffer_to_buffer(buffer, 0, &scratch, 0, 4);
    }
    ctx.queue.submit([encoder.finish()]);
    ctx.uploads.submitted_outside();
    match pop_now(scope) {
        Some(e) => Err(Error::argument(
            op,
            format!(
                "the buffer cannot be bound or read on this device ({}; a mapped buffer must \
                 be unmapped first): {e}",
                ctx.facts.name
            ),
        )),
        None => Ok(()),
    }
}
