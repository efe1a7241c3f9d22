//! The elementwise kernel family: the programs the scheduler compiles
//! recorded elementwise ops into (one op, or a chain fused at flush time).
//!
//! - `program`: what one generated kernel computes (`KernelKey`, the
//!   pipeline's key) and what one dispatch of it binds (`Program`);
//! - `params`: its parameter block, byte for byte the `Params` of
//!   `common.wgsl`;
//! - `codegen`: `elementwise.wgsl` filled for one key, and its pipeline.
//!
//! Ops reach it through `launch::record_elementwise` and the scheduler.

pub(crate) mod codegen;
pub(crate) mod params;
pub(crate) mod program;
