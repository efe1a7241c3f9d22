//! The GPU backend on wgpu: pooled buffers, generated WGSL kernels that read
//! every operand through (shape, strides, offset) parameters, a pipeline
//! cache and a scheduler that batches ops into few submits and fuses
//! elementwise chains.
//!
//! The map, with no import cycle among these files:
//! - the device: `context` (opens it, owns the pieces below), `facts`
//!   (what the adapter allows), `pool` (size-bucketed buffers), `storage`
//!   (tensor buffers, uploads and readbacks with the fault record),
//!   `faults` (out-of-range index reports);
//! - recording and submitting: `command` (what is recorded), `scheduler`
//!   (batches, flushes against a borrowed `Target`), `fusion` (folds dead
//!   elementwise intermediates into their reader), `program` (an
//!   elementwise program and its key);
//! - the toolkit every kernel family uses: `wgsl_type` (compute types and
//!   their literals), `template` (fills `{{SLOT}}`s, failing on a missing
//!   or unknown one), `params_block` (Pod parameter blocks checked against
//!   naga) and `params` (the elementwise block), `grid`, `launch`
//!   (`record_kernel`), `loop_budget` (how long one invocation may loop),
//!   `pipeline` (compiled once per family key, naming no family);
//! - `codegen`: the storage modes, buffer declarations and accessors every
//!   family uses, and the elementwise program's code (still one file; to
//!   be split into the toolkit and the elementwise family);
//! - the kernel families: `elementwise`, `reduce`, `scan`, `matmul`,
//!   `indexing`, each with its shader in `shaders/`.

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
