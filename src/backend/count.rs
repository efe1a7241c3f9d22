//! Counting into bins (`ops/counting`'s `bincount` and `histogram`), on
//! the backend that holds the output: `cpu/count.rs` and `gpu/count/`.

use super::{Storage, TensorRef, check_bounds, cpu, gpu, live};
use crate::error::Result;

/// One count: each element of `index` (a contiguous 1-D view of i32, i64,
/// u32 or u8) names a bin of `out`; elements outside `[0, out.len)` are
/// skipped. With `edges` (contiguous, `out.len + 1` increasing values of
/// `index`'s float dtype, none NaN), `index` holds values instead, each in
/// the bin `i` where `edges[i] <= x < edges[i + 1]`, the last bin closed,
/// and those outside (or NaN) skipped. Without `weights`, `out` (zeroed
/// i64) counts its elements; with them (f32, contiguous, as long as
/// `index`), `out` (zeroed f32) sums their weights.
pub(crate) struct CountCall<'a> {
    pub index: TensorRef<'a>,
    pub edges: Option<TensorRef<'a>>,
    pub weights: Option<TensorRef<'a>>,
    pub out: TensorRef<'a>,
}

/// Runs a count on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn count(call: &CountCall) -> Result<()> {
    check_bounds(&call.index)?;
    if let Some(e) = &call.edges {
        check_bounds(e)?;
    }
    if let Some(w) = &call.weights {
        check_bounds(w)?;
    }
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("bincount", s, || cpu::count(s, call)),
        Storage::Gpu(s) => gpu::count(live("bincount", s)?, call),
    }
}
