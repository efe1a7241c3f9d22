//! Selections whose length depends on the data (NumPy's `nonzero`,
//! `argwhere`, `masked_select`): a running count of the mask (the scan
//! kernel) is read back at its end for the length `k`, and the position of
//! the `j`-th kept element is where the count first reaches `j + 1` (the
//! search kernel, a thread per kept element); the elements are gathered
//! from there. One readback a call, which is why each has an `_async`
//! form (the only one on wasm); nothing is uploaded.

use super::Side;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The flat positions (i64, ascending) where flat bool `keep` is true.
///
/// # Errors
/// Readback errors.
pub(super) async fn kept_positions(keep: &Tensor) -> Result<Tensor> {
    let n = keep.numel();
    let running = keep.to_dtype(DType::I64)?.cumsum(0)?;
    let kept = if n == 0 {
        0
    } else {
        running.narrow(0, n - 1, 1)?.item_async::<i64>().await? as usize
    };
    // 1, 2, .., kept, made on the device.
    let targets = Tensor::ones([kept], DType::I64, keep.device())?.cumsum(0)?;
    running.searchsorted(&targets, Side::Left)
}

impl Tensor {
    /// The coordinates of the nonzero (true) elements, in row-major order,
    /// as a `[k, rank]` i64 tensor (NumPy's `argwhere`), blocking for `k`
    /// (native only; see [`Tensor::argwhere_async`]).
    ///
    /// # Errors
    /// As [`Tensor::argwhere_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn argwhere(&self) -> Result<Tensor> {
        pollster::block_on(self.argwhere_async())
    }

    /// [`Tensor::argwhere`] on every target: the count of nonzero elements
    /// is read back (one readback), then their coordinates are made on
    /// the device.
    ///
    /// A 0-d tensor has one row of no coordinates where it is nonzero, none
    /// where it is zero (`[1, 0]` or `[0, 0]`), as NumPy's and PyTorch's.
    ///
    /// # Errors
    /// Readback errors.
    pub async fn argwhere_async(&self) -> Result<Tensor> {
        crate::ops::as_op_async("argwhere", async {
            if self.rank() == 0 {
                let kept = kept_positions(&self.reshape([1])?.as_bool()?).await?;
                return Tensor::zeros([kept.numel(), 0], DType::I64, self.device());
            }
            let axes = self.nonzero_parts("argwhere").await?;
            let refs: Vec<&Tensor> = axes.iter().collect();
            Tensor::stack(&refs, 1)
        })
        .await
    }

    /// The indices of the nonzero (true) elements along each axis, one i64
    /// tensor per axis (NumPy's `nonzero`), blocking for their count
    /// (native only; see [`Tensor::nonzero_async`]).
    ///
    /// # Errors
    /// As [`Tensor::nonzero_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn nonzero(&self) -> Result<Vec<Tensor>> {
        pollster::block_on(self.nonzero_async())
    }

    /// [`Tensor::nonzero`] on every target (one readback).
    ///
    /// # Errors
    /// `Error::Shape` naming `nonzero` for a 0-d tensor (NumPy's error
    /// too); readback errors.
    pub async fn nonzero_async(&self) -> Result<Vec<Tensor>> {
        crate::ops::as_op_async("nonzero", self.nonzero_parts("nonzero")).await
    }

    /// [`Tensor::nonzero_async`] for `op` (`nonzero` or `argwhere`), whose
    /// composed parts' errors name their own ops.
    async fn nonzero_parts(&self, op: &'static str) -> Result<Vec<Tensor>> {
        if self.rank() == 0 {
            return Err(Error::shape(op, "a 0-d tensor has no axes to index"));
        }
        let n = self.numel();
        let flat = self.reshape([n])?;
        // Non-zero by bits (a c64 by either part): a float comparison on a
        // GPU that flushes subnormals would drop them.
        let keep = flat.as_bool()?;
        let at = kept_positions(&keep).await?;
        // Row-major coordinates of each flat position.
        let mut stride = n.max(1);
        let mut axes = Vec::with_capacity(self.rank());
        for &d in self.dims() {
            stride /= d.max(1);
            let coordinate = at
                .floor_divide_scalar(stride as i64)?
                .remainder_scalar(d.max(1) as i64)?;
            axes.push(coordinate);
        }
        Ok(axes)
    }

    /// The elements where `mask` is true, in row-major order of their
    /// broadcast shape (PyTorch's `masked_select`, NumPy's `x[mask]`), as a
    /// 1-D tensor, blocking for its length (native only; see
    /// [`Tensor::masked_select_async`]).
    ///
    /// # Errors
    /// As [`Tensor::masked_select_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        pollster::block_on(self.masked_select_async(mask))
    }

    /// [`Tensor::masked_select`] on every target (one readback).
    ///
    /// # Errors
    /// `Error::DType` naming `masked_select` for a mask that is not bool;
    /// `Error::Shape` when the shapes do not broadcast; device mismatch;
    /// readback errors.
    pub async fn masked_select_async(&self, mask: &Tensor) -> Result<Tensor> {
        let parts = self.masked_select_parts(mask);
        crate::ops::as_op_async("masked_select", parts).await
    }

    /// [`Tensor::masked_select_async`], whose composed parts' errors name their own ops.
    async fn masked_select_parts(&self, mask: &Tensor) -> Result<Tensor> {
        const OP: &str = "masked_select";
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                OP,
                format!("the mask must be bool, got {}", mask.dtype()),
            ));
        }
        crate::ops::check_devices(OP, self, &[crate::ops::Arg::Tensor(mask)])?;
        let shape = crate::shape::broadcast_shapes(self.shape(), mask.shape())?;
        let n = shape.numel();
        let x = self.broadcast_to(shape.clone())?.reshape([n])?;
        let keep = mask.broadcast_to(shape)?.reshape([n])?;
        let at = kept_positions(&keep).await?;
        x.index_select(&at, 0)
    }

    /// How many elements are nonzero (true), as a 0-d i64 tensor on this
    /// tensor's device (NumPy's `count_nonzero`; nothing is read back).
    ///
    /// # Errors
    /// Every dtype counts (c64 where either part is nonzero); the count is
    /// summed from an i64 copy of the elements (8 bytes each), so a view
    /// larger than it (a broadcast of billions of elements) gives
    /// `Error::TooLarge` or `Error::OutOfMemory` where `sum` would not;
    /// device errors otherwise.
    pub fn count_nonzero(&self) -> Result<Tensor> {
        crate::ops::as_op("count_nonzero", || {
            // Non-zero by bits, as `nonzero`.
            self.as_bool()?.to_dtype(DType::I64)?.sum(..)
        })
    }
}
