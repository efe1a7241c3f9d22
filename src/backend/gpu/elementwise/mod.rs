//! The elementwise kernel family: the programs the scheduler compiles
//! recorded elementwise ops into (one op, or a chain fused at flush time).
//!
//! - `program`: what one generated kernel computes (`KernelKey`, the
//!   pipeline's key) and what one dispatch of it binds (`Program`);
//! - `params`: its parameter block, byte for byte the `Params` of
//!   `common.wgsl`;
//! - `access`: how a dispatch walks its operands (strided, contiguous,
//!   vec4, tiled), chosen from the iteration plan;
//! - `exprs`: each node's WGSL expression, and the program as one function;
//! - `codegen`: the kernel for one key (`elementwise.wgsl`, or its rows and
//!   tiled forms), and its pipeline;
//! - `quads`: the kernels reading whole array entries (vec4, vec8, spans);
//! - `windowed`: a program made ready for buffers larger than one binding.
//!
//! Ops reach it through `launch::record_elementwise` and the scheduler.

pub(crate) mod access;
pub(crate) mod codegen;
mod exprs;
pub(crate) mod params;
pub(crate) mod program;
mod quads;
mod windowed;
