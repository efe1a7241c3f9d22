//! Living inside an application's GPU: a [`Device`] on the application's
//! own wgpu device and queue, tensors handed out as wgpu buffers
//! ([`GpuBuffer`]), and the application's buffers wrapped as tensors
//! without a copy; and tensors drawn into the application's textures
//! without a readback (`texture.rs`); and (the default `ndarray` feature)
//! conversions to and from `ndarray` arrays (`ndarray.rs`). The only public
//! API that names wgpu types; what it needs of the GPU backend is
//! crate-private there (`backend/gpu/interop.rs`).
//!
//! Ordering: webtensor records ops and submits them to the queue in
//! batches (at a readback, a sync, `Device::flush`, or when a batch fills).
//! Work on one queue runs in submission order, so:
//! - before the application submits work that reads a tensor's buffer, the
//!   ops writing it must be submitted: [`Tensor::gpu_buffer`] flushes, and
//!   so does `Device::flush()`;
//! - before the application writes a buffer that recorded ops still read
//!   (`queue.write_buffer` runs before the next submit), call
//!   `Device::flush()` so those ops go first.

mod buffers;
#[cfg(feature = "ndarray")]
mod ndarray;
mod texture;

pub use buffers::GpuBuffer;
pub use texture::ColorMap;
