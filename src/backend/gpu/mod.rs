//! The GPU backend on wgpu: pooled buffers, generated WGSL kernels that read
//! every operand through (shape, strides, offset) parameters, a pipeline
//! cache and a scheduler that batches ops into few submits and fuses
//! elementwise chains.

pub(crate) mod codegen;
mod command;
mod context;
mod elementwise;
mod facts;
mod faults;
mod fusion;
mod grid;
mod indexing;
mod launch;
mod loop_budget;
mod matmul;
mod params;
mod params_block;
mod pipeline;
mod pool;
mod program;
mod reduce;
mod scan;
mod scheduler;
mod storage;
mod template;
mod wgsl_type;

pub(crate) use context::GpuContext;
pub use context::GpuOptions;
pub(crate) use elementwise::run;
pub(crate) use indexing::{gather, scatter};
pub(crate) use matmul::matmul;
pub(crate) use reduce::reduce;
pub(crate) use scan::scan;
pub(crate) use storage::GpuStorage;
