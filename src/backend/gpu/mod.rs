//! The GPU backend on wgpu: pooled buffers, generated WGSL kernels that read
//! every operand through (shape, strides, offset) parameters, a pipeline
//! cache and a scheduler that batches ops into few submits and fuses
//! elementwise chains.
//!
//! The map, in layers, each using only those above it (no import cycle):
//! - `kernel/`, the toolkit: compute types, buffer storage modes, the
//!   strided walk, template filling, parameter blocks, the grid, the loop
//!   budget, the pipeline cache (see its module doc);
//! - `elementwise/`, the elementwise family: programs, their parameter
//!   block and code generation;
//! - recording: `command` (what is recorded), `fusion` (folds dead
//!   elementwise intermediates into their reader), `dispatch` (a
//!   program's pipeline, grid, parameters and bindings; bind groups),
//!   `temporaries` (buffers of a flush for outputs whose tensors are
//!   gone), `target` (what a flush borrows of the device), `scheduler`
//!   (batches, flushes against a borrowed `Target`);
//! - the device: `facts` (what the adapter allows), `tuning` (settings
//!   that choose among kernel variants), `pool` (size-bucketed
//!   buffers), `faults` (out-of-range index reports), `context` (opens the
//!   device, owns the pieces above), `storage` (tensor buffers, uploads and
//!   readbacks with the fault record);
//! - `capture` and `graph`: steps captured once and submitted again;
//!   `profile_log` and `profile`: what the scheduler notes while a profile
//!   is open (host times, kernels timed per dispatch), and the profile's run;
//! - `launch`: how an op becomes a recorded command; `interop`: devices,
//!   buffers and tensors shared with the application (the public API that
//!   names wgpu types), `texture` (tensors drawn into the application's
//!   textures);
//! - the fixed-function families, each a folder with its shader beside its
//!   launcher: `reduce/`, `scan/`, `softmax/`, `sort/`, `matmul/`, `indexing/`;
//!   and `custom`, the user's WGSL kernels.

mod bind_groups;
mod capture;
mod command;
mod context;
mod custom;
mod dispatch;
mod elementwise;
mod facts;
mod faults;
mod fusion;
mod graph;
mod indexing;
mod interop;
mod kernel;
mod launch;
mod matmul;
mod pool;
mod profile;
mod profile_log;
mod reduce;
mod scan;
mod scheduler;
mod slot;
mod softmax;
mod sort;
mod storage;
mod target;
mod temporaries;
mod texture;
#[cfg(not(target_arch = "wasm32"))]
mod timer;
mod tuning;

pub(crate) use context::GpuContext;
pub use context::GpuOptions;
pub(crate) use custom::custom;
pub(crate) use graph::{GpuGraph, capture_step};
pub(crate) use indexing::{gather, scatter};
pub use interop::GpuBuffer;
pub(crate) use launch::record_elementwise;
pub(crate) use matmul::matmul;
pub(crate) use profile::profile_ops;
pub(crate) use reduce::reduce;
pub(crate) use scan::scan;
pub(crate) use softmax::softmax;
pub(crate) use sort::sort;
pub(crate) use storage::GpuStorage;
pub use texture::ColorMap;
pub use tuning::MatmulTile;
