//! Binary searches of sorted rows (`ops/counting`'s `searchsorted` and
//! `digitize`), on the backend that holds the output: `cpu/search.rs` and
//! `gpu/search/` find the same positions.

use super::{Storage, TensorRef, check_bounds, cpu, gpu, live};
use crate::error::Result;

/// One search: for each element `(r, j)` of `values` (a `[rows, m]` view),
/// the position in row `r` of `sorted` (a `[rows, n]` view of the same
/// dtype, ascending with NaN last) where it would go, written as i64 to
/// `out`, a fresh contiguous `[rows * m]`: before the elements equal to
/// it (`right` false) or after them (`right` true). With `auto_direction`,
/// a row whose last element orders before its first is taken as
/// descending (NumPy's `digitize`): the search runs over the row reversed
/// and gives `n` minus its position.
pub(crate) struct SearchCall<'a> {
    pub sorted: TensorRef<'a>,
    pub values: TensorRef<'a>,
    pub out: TensorRef<'a>,
    pub right: bool,
    pub auto_direction: bool,
}

/// Runs a search on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn search(call: &SearchCall) -> Result<()> {
    check_bounds(&call.sorted)?;
    check_bounds(&call.values)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("searchsorted", s, || cpu::search(s, call)),
        Storage::Gpu(s) => gpu::search(live("searchsorted", s)?, call),
    }
}
