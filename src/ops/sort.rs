//! Sorting along an axis: `sort`, `argsort` and `topk`, stable, with
//! NumPy's NaN rule (NaN sorts last ascending; descending it comes first, as
//! PyTorch treats NaN as the largest value). One sort kernel computes each
//! line's order (a bitonic network on a GPU, a stable merge sort on the
//! CPU); values are gathered through it, so every dtype and -0 come back
//! exactly.

use crate::backend::{SortCall, sort};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::tensor::Tensor;

impl Tensor {
    /// The elements sorted along `axis`, ascending (NaN last) or with
    /// `descending` from the largest (NaN first). The sort is stable:
    /// equal elements keep their order.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::from_slice(&[3.0f32, f32::NAN, -1.0, 2.0], [4], &Device::cpu())?;
    /// let up: Vec<f32> = t.sort(0, false)?.to_vec()?;
    /// assert_eq!(&up[..3], [-1.0, 2.0, 3.0]);
    /// assert!(up[3].is_nan());
    /// assert_eq!(t.argsort(0, false)?.to_vec::<i32>()?, vec![2, 3, 0, 1]);
    /// let (values, indices) = t.topk(2, 0, false)?; // the two smallest
    /// assert_eq!(values.to_vec::<f32>()?, vec![-1.0, 2.0]);
    /// assert_eq!(indices.to_vec::<i32>()?, vec![2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Axis` naming `sort` for an axis out of range or a 0-d
    /// tensor; `Error::DType` for c64; `Error::Shape` for a line longer
    /// than `i32::MAX`.
    pub fn sort(&self, axis: isize, descending: bool) -> Result<Tensor> {
        let order = self.order("sort", axis, descending)?;
        self.gather(&order, axis)
    }

    /// The positions (i32) along `axis` that sort each line, as
    /// [`Tensor::sort`] orders them (NumPy's `argsort` with a stable kind).
    ///
    /// # Errors
    /// As [`Tensor::sort`], naming `argsort`.
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Tensor> {
        self.order("argsort", axis, descending)
    }

    /// The `k` largest (or, without `largest`, smallest) elements along
    /// `axis` in order, and their positions (i32) along it (PyTorch's
    /// `topk`; NaN counts as the largest value). Ties keep the earlier
    /// position first.
    ///
    /// # Errors
    /// `Error::Argument` naming `topk` when `k` exceeds the axis; as
    /// [`Tensor::sort`] otherwise.
    pub fn topk(&self, k: usize, axis: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        const OP: &str = "topk";
        let a = normalize_axis(OP, axis, self.rank())?;
        let n = self.dims()[a];
        if k > n {
            return Err(Error::argument(
                OP,
                format!("k = {k} is more than the {n} elements along axis {a}"),
            ));
        }
        let order = self.order(OP, axis, largest)?;
        let indices = order.narrow(a as isize, 0, k)?.contiguous()?;
        let values = self.gather(&indices, axis)?;
        Ok((values, indices))
    }

    /// The i32 positions that sort each line along `axis`.
    fn order(&self, op: &'static str, axis: isize, descending: bool) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op));
        }
        let axis = normalize_axis(op, axis, self.rank())?;
        let n = self.dims()[axis];
        if n > i32::MAX as usize {
            return Err(Error::shape(
                op,
                format!("lines of {n} elements are past the i32 positions it returns"),
            ));
        }
        let out = Tensor::empty_dense(self.shape().clone(), DType::I32, self.device(), op)?;
        // Both go to the kernel with the sorted axis last: free views.
        let last = self.rank() as isize - 1;
        let input = self.layout().transpose(axis as isize, last)?;
        let dest = out.layout().transpose(axis as isize, last)?;
        sort(&SortCall {
            input: self.kernel_ref(input)?,
            out: out.kernel_ref(dest)?,
            descending,
        })?;
        Ok(out)
    }
}
