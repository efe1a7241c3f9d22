//! `searchsorted` and `digitize`: each value's position in a sorted row,
//! found by one kernel (a thread per value on a GPU) over the rows where
//! they lie.

use crate::backend::{SearchCall, search};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Which end of a run of elements equal to the value
/// [`Tensor::searchsorted`] gives (NumPy's `side`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Before them: the count of elements less than the value.
    Left,
    /// After them: the count of elements less than or equal to it.
    Right,
}

impl Tensor {
    /// Where each of `values` would go in this sorted tensor to keep it
    /// sorted (NumPy's `searchsorted`, PyTorch's for rows): i64 positions
    /// of the shape of `values`. This tensor is 1-D (any `values`), or
    /// sorted along its last axis with `values` of the same leading axes
    /// (each row searched for its own values). The order is the sort's:
    /// NaN after every number, `-0 == +0`. Both are read where they lie
    /// (any view). Operands of two dtypes are compared in the one
    /// [`DType::promote`](crate::DType::promote) gives (PyTorch's rule:
    /// i64 and f32 meet in f32, where NumPy would compare in f64).
    /// Rows that are not sorted give unspecified positions, as NumPy's
    /// do: nothing checks them.
    ///
    /// ```
    /// use webtensor::{Device, Side, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::cpu();
    /// let edges = Tensor::from_slice(&[1.0f32, 2.0, 2.0, 5.0], [4], &dev)?;
    /// let at = Tensor::from_slice(&[2.0f32, 0.0, 9.0], [3], &dev)?;
    /// assert_eq!(edges.searchsorted(&at, Side::Left)?.to_vec::<i64>()?, vec![1, 0, 4]);
    /// assert_eq!(edges.searchsorted(&at, Side::Right)?.to_vec::<i64>()?, vec![3, 0, 4]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `searchsorted` for a 0-d tensor, or `values`
    /// whose leading axes differ from an N-d tensor's; `Error::DType` for
    /// c64 or dtypes that do not promote; device mismatch.
    pub fn searchsorted(&self, values: &Tensor, side: Side) -> Result<Tensor> {
        crate::ops::as_op("searchsorted", || {
            search_rows(self, values, side == Side::Right, false)
        })
    }

    /// [`Tensor::searchsorted`] of this tensor ordered by `sorter`, the
    /// positions that sort it along its last axis (an i32 or i64 tensor of
    /// its shape, as `argsort` gives: NumPy's `sorter`). A negative
    /// position counts from the end, as [`Tensor::gather`]'s indices do
    /// (NumPy and PyTorch refuse it).
    ///
    /// # Errors
    /// As [`Tensor::searchsorted`], naming `searchsorted`; as
    /// [`Tensor::gather`] for a `sorter` of another shape or out-of-range
    /// positions.
    pub fn searchsorted_by(&self, values: &Tensor, side: Side, sorter: &Tensor) -> Result<Tensor> {
        crate::ops::as_op("searchsorted", || {
            if sorter.shape() != self.shape() {
                return Err(Error::shape(
                    "searchsorted",
                    format!(
                        "sorter {} must have the shape {}",
                        sorter.shape(),
                        self.shape()
                    ),
                ));
            }
            let sorted = self.gather(sorter, -1)?;
            search_rows(&sorted, values, side == Side::Right, false)
        })
    }

    /// The bin of each element of this tensor (NumPy's `digitize`): for
    /// increasing 1-D `bins`, `i` with `bins[i - 1] <= x < bins[i]` (or
    /// `bins[i - 1] < x <= bins[i]` with `right`), 0 below the first edge
    /// and `bins.len()` past the last; for decreasing bins, the mirror
    /// (`bins[i - 1] > x >= bins[i]`). i64, of this tensor's shape. Values
    /// and bins of two dtypes compare in the one they promote to, as in
    /// [`Tensor::searchsorted`] (i64 beside f32 in f32). The direction is
    /// read from the first and last edges on the device, so nothing is
    /// read back; bins that are not monotonic give unspecified bins (NumPy
    /// raises: its check reads the bins on the host).
    ///
    /// # Errors
    /// `Error::Shape` naming `digitize` for `bins` that are not 1-D; as
    /// [`Tensor::searchsorted`].
    pub fn digitize(&self, bins: &Tensor, right: bool) -> Result<Tensor> {
        crate::ops::as_op("digitize", || {
            if bins.rank() != 1 {
                return Err(Error::shape(
                    "digitize",
                    format!("bins must be 1-D, got shape {}", bins.shape()),
                ));
            }
            search_rows(bins, self, !right, true)
        })
    }
}

/// The search of `values` in the rows of `sorted` (see [`SearchCall`]).
fn search_rows(
    sorted: &Tensor,
    values: &Tensor,
    right: bool,
    auto_direction: bool,
) -> Result<Tensor> {
    const OP: &str = "searchsorted";
    crate::ops::check_devices(OP, sorted, &[crate::ops::Arg::Tensor(values)])?;
    let dtype = sorted
        .dtype()
        .promote(values.dtype())
        .filter(|d| !d.is_complex())
        .ok_or_else(|| {
            Error::dtype(
                OP,
                format!(
                    "cannot search {} values in {}",
                    values.dtype(),
                    sorted.dtype()
                ),
            )
        })?;
    let r = sorted.rank();
    if r == 0 {
        return Err(Error::shape(
            OP,
            "the sorted tensor must have at least one axis",
        ));
    }
    let n = sorted.dims()[r - 1];
    let (rows, m) = if r == 1 {
        (1, values.numel())
    } else {
        let lead = &sorted.dims()[..r - 1];
        if values.rank() != r || values.dims()[..r - 1] != *lead {
            return Err(Error::shape(
                OP,
                format!(
                    "values {} must share the leading axes of the sorted {}",
                    values.shape(),
                    sorted.shape()
                ),
            ));
        }
        (lead.iter().product(), values.dims()[r - 1])
    };
    if n > i32::MAX as usize {
        return Err(Error::shape(
            OP,
            format!("rows of {n} elements are longer than i32::MAX"),
        ));
    }
    let out = Tensor::empty_dense(values.shape().clone(), DType::I64, values.device(), OP)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let sorted = sorted.to_dtype(dtype)?.reshape([rows, n])?;
    let values = values.to_dtype(dtype)?.reshape([rows, m])?;
    let dest = out.reshape([rows, m])?;
    search_into(
        &sorted,
        &values,
        &dest,
        Order {
            right,
            auto_direction,
        },
    )?;
    Ok(out)
}

/// How a search places a value (see [`SearchCall`]).
#[derive(Clone, Copy)]
struct Order {
    right: bool,
    auto_direction: bool,
}

/// Writes the search of `values` (`[rows, m]`) in the rows of `sorted`
/// (`[rows, n]`, the same dtype) to `dest` (an i64 `[rows, m]` view): one
/// kernel where every operand fits one storage binding, else in parts
/// that fit (see `ops/binding_parts.rs`). Rows are cut alike in all three;
/// values (and their positions) on their own; a row too long for one
/// binding is searched part by part and the positions added, as a
/// position is the count of the elements that order before the value
/// (before or at it with `right`), which adds over parts.
fn search_into(sorted: &Tensor, values: &Tensor, dest: &Tensor, how: Order) -> Result<()> {
    if let Some(cut) = values.binding_cut().or_else(|| dest.binding_cut()) {
        let rows = if cut.axis == 0 {
            sorted.cut_parts(cut)?
        } else {
            vec![sorted.clone(); cut.parts]
        };
        let (values, dests) = (values.cut_parts(cut)?, dest.cut_parts(cut)?);
        for ((s, v), d) in rows.iter().zip(&values).zip(&dests) {
            search_into(s, v, d, how)?;
        }
        return Ok(());
    }
    let Some(cut) = sorted.binding_cut() else {
        return search_one(sorted, values, dest, how);
    };
    if cut.axis == 0 {
        let parts = sorted.cut_parts(cut)?.into_iter();
        let (values, dests) = (values.cut_parts(cut)?, dest.cut_parts(cut)?);
        for ((s, v), d) in parts.zip(&values).zip(&dests) {
            search_into(&s, v, d, how)?;
        }
        return Ok(());
    }
    // Along the rows: the counts of every part added.
    let parts = sorted.cut_parts(cut)?;
    let ascending = Order {
        auto_direction: false,
        ..how
    };
    let count = |parts: &mut dyn Iterator<Item = Result<Tensor>>| -> Result<Tensor> {
        let mut total: Option<Tensor> = None;
        for part in parts {
            let c = search_into_fresh(&part?, values, ascending)?;
            total = Some(match total {
                None => c,
                Some(t) => t.add(&c)?,
            });
        }
        total.ok_or_else(|| Error::internal("searchsorted", "a cut row has parts"))
    };
    let forward = count(&mut parts.iter().cloned().map(Ok))?;
    if !how.auto_direction {
        return dest.assign(&forward);
    }
    // A row whose last element orders before its first is descending (see
    // `SearchCall`): `n` minus the position in the row reversed, whose
    // parts are the parts reversed, each flipped.
    let n = sorted.dims()[1];
    let backward = count(&mut parts.iter().rev().map(|p| p.flip(&[1])))?;
    let from_end = backward.neg()?.add_scalar(n as i64)?;
    // last < first in the search's own order, strictly (as the kernel's
    // and the CPU's test: a row of one value ascends): the count of [last]
    // before first, 0 or 1 a row, searched on the left whatever `right`.
    let first = sorted.narrow(1, 0, 1)?;
    let last = sorted.narrow(1, n - 1, 1)?;
    let strictly = Order {
        right: false,
        auto_direction: false,
    };
    let descending = search_into_fresh(&last, &first, strictly)?;
    dest.assign(&forward.add(&descending.mul(&from_end.sub(&forward)?)?)?)
}

/// [`search_into`] a fresh i64 `[rows, m]` tensor.
fn search_into_fresh(sorted: &Tensor, values: &Tensor, how: Order) -> Result<Tensor> {
    let out = Tensor::empty_dense(
        values.shape().clone(),
        DType::I64,
        values.device(),
        "searchsorted",
    )?;
    search_into(sorted, values, &out, how)?;
    Ok(out)
}

/// One search kernel (see [`SearchCall`]) of operands that fit one storage
/// binding each: into `dest` when it is contiguous (a fresh tensor or a
/// block of its rows), else into a fresh tensor copied there.
fn search_one(sorted: &Tensor, values: &Tensor, dest: &Tensor, how: Order) -> Result<()> {
    const OP: &str = "searchsorted";
    if !dest.layout().is_contiguous() {
        let out = Tensor::empty_dense(values.shape().clone(), DType::I64, values.device(), OP)?;
        search_one(sorted, values, &out, how)?;
        return dest.assign(&out);
    }
    let flat = dest
        .layout()
        .reshaped(&Shape::from([dest.numel()]))
        .ok_or_else(|| Error::internal(OP, "a contiguous view reshapes"))?;
    search(&SearchCall {
        sorted: sorted.kernel_ref(sorted.layout().clone())?,
        values: values.kernel_ref(values.layout().clone())?,
        out: dest.kernel_out(flat)?,
        right: how.right,
        auto_direction: how.auto_direction,
    })
}
