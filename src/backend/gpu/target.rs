//! [`Target`]: what recording and flushing need of the device, borrowed
//! from the context that owns the scheduler (so that the scheduler and
//! the pieces a flush uses do not depend on that context).

use super::adapter_facts::AdapterFacts;
use super::kernel::pipeline::PipelineCache;
use super::lost::Lost;
use super::pool::BufferPool;
use super::upload_window::UploadWindow;
use std::sync::atomic::AtomicU64;

/// What a flush needs of the device.
pub(crate) struct Target<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub facts: &'a AdapterFacts,
    pub pipelines: &'a PipelineCache,
    /// Id of the batch being recorded; a flush closes it (see the pool).
    pub open_batch: &'a AtomicU64,
    /// The device's buffer pool, for temporaries of a flush.
    pub pool: &'a BufferPool,
    /// Whether the device is lost: nothing is submitted to a lost device.
    pub lost: &'a Lost,
    /// The uploads a submit takes along (see `upload_window.rs`).
    pub uploads: &'a UploadWindow,
}
