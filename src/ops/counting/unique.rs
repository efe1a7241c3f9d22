//! `unique` (NumPy's, with `return_index`, `return_inverse` and
//! `return_counts`): a stable sort of the flattened tensor, the starts of
//! its runs of equal values (NaN equal to NaN, -0 to +0), their count read
//! back, and their positions found by the search kernel; no scatter, so a
//! GPU does each step in parallel.

use super::search::Side;
use super::select::kept_positions;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::SortOrder;
use crate::tensor::Tensor;

/// What [`Tensor::unique_all`] gives: NumPy's
/// `unique(x, return_index=True, return_inverse=True, return_counts=True)`.
#[derive(Debug, Clone)]
pub struct Unique {
    /// The distinct values, ascending (NaN last, all NaN as one; `-0` and
    /// `+0` as one, the first of them).
    pub values: Tensor,
    /// Where each value first occurs in the flattened tensor (i64).
    pub indices: Tensor,
    /// Each element's value, as its position in `values` (i64, of the
    /// tensor's shape: `values[inverse]` is the tensor).
    pub inverse: Tensor,
    /// How many times each value occurs (i64).
    pub counts: Tensor,
}

impl Tensor {
    /// The distinct values, ascending, as [`Unique::values`] (NumPy's
    /// `unique`), blocking for their number (native only; see
    /// [`Tensor::unique_async`]).
    ///
    /// # Errors
    /// As [`Tensor::unique_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn unique(&self) -> Result<Tensor> {
        pollster::block_on(self.unique_async())
    }

    /// [`Tensor::unique`] on every target (one readback).
    ///
    /// # Errors
    /// `Error::DType` naming `unique` for c64; as [`Tensor::argsort`];
    /// readback errors.
    pub async fn unique_async(&self) -> Result<Tensor> {
        crate::ops::as_op_async("unique", async {
            let runs = Runs::of("unique", self).await?;
            runs.sorted.index_select(&runs.starts, 0)
        })
        .await
    }

    /// The distinct values with where each first occurs, which each element
    /// is and how often each occurs ([`Unique`]), blocking for their number
    /// (native only; see [`Tensor::unique_all_async`]).
    ///
    /// # Errors
    /// As [`Tensor::unique_all_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn unique_all(&self) -> Result<Unique> {
        pollster::block_on(self.unique_all_async())
    }

    /// [`Tensor::unique_all`] on every target (one readback).
    ///
    /// # Errors
    /// As [`Tensor::unique_async`], naming `unique_all`.
    pub async fn unique_all_async(&self) -> Result<Unique> {
        const OP: &str = "unique_all";
        crate::ops::as_op_async(OP, async {
            let runs = Runs::of(OP, self).await?;
            let n = self.numel();
            let k = runs.starts.numel();
            let values = runs.sorted.index_select(&runs.starts, 0)?;
            let indices = runs.order.index_select(&runs.starts, 0)?;
            // Each run ends where the next starts, the last at n.
            let counts = if k == 0 {
                Tensor::zeros([0], DType::I64, self.device())?
            } else {
                let end = Tensor::full([1], n as i64, DType::I64, self.device())?;
                let ends = Tensor::concat(&[&runs.starts.narrow(0, 1, k - 1)?, &end], 0)?;
                ends.sub(&runs.starts)?
            };
            // Sorted position i holds run `run[i]`; element order[i] is it,
            // so the inverse permutation of order reads the runs back.
            let run = runs.first.to_dtype(DType::I64)?.cumsum(0)?.sub_scalar(1)?;
            let back = runs.order.argsort(0, SortOrder::Ascending)?;
            let inverse = run.index_select(&back, 0)?.reshape(self.shape().clone())?;
            Ok(Unique {
                values,
                indices,
                inverse,
                counts,
            })
        })
        .await
    }
}

/// The flattened tensor sorted, the order that sorts it, which sorted
/// positions start a run of equal values, and those positions.
struct Runs {
    sorted: Tensor,
    /// i64 positions in the flattened tensor, in sorted order.
    order: Tensor,
    /// `[n]` bool: the first of each run.
    first: Tensor,
    /// `[k]` i64: where each run starts.
    starts: Tensor,
}

impl Runs {
    async fn of(op: &'static str, x: &Tensor) -> Result<Runs> {
        if x.dtype().is_complex() {
            return Err(super::super::complex::not_for_complex(op));
        }
        let named = |e: crate::error::Error| e.named(op);
        let n = x.numel();
        let flat = x.reshape([n]).map_err(named)?;
        let order = flat
            .argsort(0, SortOrder::Ascending)
            .and_then(|o| o.to_dtype(DType::I64))
            .map_err(named)?;
        let sorted = flat.index_select(&order, 0).map_err(named)?;
        let first = if n == 0 {
            Tensor::zeros([0], DType::Bool, x.device())
        } else {
            run_starts(&sorted)
        }
        .map_err(named)?;
        let starts = kept_positions(&first).await.map_err(named)?;
        Ok(Runs {
            sorted,
            order,
            first,
            starts,
        })
    }
}

/// `[n]` bool: true where sorted (non-empty) position i starts a run:
/// the first, and each that differs from the one before (NaN equal to
/// NaN, -0 to 0). Floats are told apart by the search, which compares the
/// sort's keys (their bits): a float comparison on a GPU that flushes
/// subnormals would merge them with 0 and each other.
fn run_starts(sorted: &Tensor) -> Result<Tensor> {
    let n = sorted.numel();
    if sorted.dtype().is_float() {
        let first = sorted.searchsorted(sorted, Side::Left)?;
        let positions = Tensor::arange(0i64, n as i64, 1, sorted.device())?;
        return first.eq(&positions);
    }
    let (next, prev) = (sorted.narrow(0, 1, n - 1)?, sorted.narrow(0, 0, n - 1)?);
    let differs = next.ne(&prev)?;
    let head = Tensor::ones([1], DType::Bool, sorted.device())?;
    Tensor::concat(&[&head, &differs], 0)
}
