//! The GPU backend on wgpu: buffers, generated WGSL kernels that read every
//! operand through (shape, strides, offset) parameters, a pipeline cache and
//! a scheduler that batches dispatches into few submits.

pub(crate) mod codegen;
mod context;
mod elementwise;
mod params;
mod pipeline;
mod scheduler;
mod storage;

pub(crate) use context::GpuContext;
pub use context::GpuOptions;
pub(crate) use elementwise::run;
pub(crate) use storage::GpuStorage;
