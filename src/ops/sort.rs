//! Sorting along an axis: `sort`, `argsort` and `topk`, stable, with
//! NumPy's NaN rule (NaN sorts last ascending; descending it comes first, as
//! PyTorch treats NaN as the largest value). One sort kernel computes each
//! line's order (a bitonic network on a GPU, a sort of (key, position)
//! pairs on the CPU); values are gathered through it, so every dtype and
//! -0 come back exactly.

use super::binding_parts::for_each_part_across;
use crate::backend::{SortCall, sort};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::tensor::Tensor;

/// The direction of [`Tensor::sort`] and [`Tensor::argsort`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// From the smallest; NaN last (NumPy's `sort`).
    Ascending,
    /// From the largest; NaN first (PyTorch's `descending=True`, NaN being
    /// the largest value).
    Descending,
}

/// Which end of each line [`Tensor::topk`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopK {
    /// The `k` largest, largest first (NaN counts as the largest).
    Largest,
    /// The `k` smallest, smallest first.
    Smallest,
}

impl Tensor {
    /// The elements sorted along `axis` in `order`: ascending (NaN last) or
    /// descending from the largest (NaN first). The sort is stable: equal
    /// elements keep their order.
    ///
    /// ```
    /// use webtensor::{Device, SortOrder, Tensor, TopK};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::from_slice(&[3.0f32, f32::NAN, -1.0, 2.0], [4], &Device::cpu())?;
    /// let up: Vec<f32> = t.sort(0, SortOrder::Ascending)?.to_vec()?;
    /// assert_eq!(&up[..3], [-1.0, 2.0, 3.0]);
    /// assert!(up[3].is_nan());
    /// assert_eq!(t.argsort(0, SortOrder::Ascending)?.to_vec::<i32>()?, vec![2, 3, 0, 1]);
    /// let (values, indices) = t.topk(2, 0, TopK::Smallest)?; // the two smallest
    /// assert_eq!(values.to_vec::<f32>()?, vec![-1.0, 2.0]);
    /// assert_eq!(indices.to_vec::<i32>()?, vec![2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A 0-d tensor is one line of one element (axis 0 or -1), as PyTorch
    /// takes it.
    ///
    /// # Errors
    /// `Error::Axis` naming `sort` for an axis out of range;
    /// `Error::DType` for c64; `Error::Shape` for a line longer
    /// than `i32::MAX`; `Error::TooLarge` on a GPU for one line whose
    /// scratch (4 bytes per element, padded to a power of two) or compact
    /// copy (twice its bytes) is over one storage binding (views larger
    /// than a binding go in parts of fewer lines).
    pub fn sort(&self, axis: isize, order: SortOrder) -> Result<Tensor> {
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.sort(0, order)) {
            return out;
        }
        super::as_op("sort", || {
            let order = self.order("sort", axis, order == SortOrder::Descending)?;
            self.gather(&order, axis)
        })
    }

    /// The positions (i32) along `axis` that sort each line, as
    /// [`Tensor::sort`] orders them (NumPy's `argsort` with a stable kind).
    ///
    /// # Errors
    /// As [`Tensor::sort`], naming `argsort`.
    pub fn argsort(&self, axis: isize, order: SortOrder) -> Result<Tensor> {
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.argsort(0, order)) {
            return out;
        }
        super::as_op("argsort", || {
            self.order("argsort", axis, order == SortOrder::Descending)
        })
    }

    /// The `k` largest or smallest elements along `axis` (as `which`
    /// says), in order from that end, and their positions (i32) along it (PyTorch's
    /// `topk`; NaN counts as the largest value). Ties keep the earlier
    /// position first. A 0-d tensor gives itself and 0 for `k` of 0 or 1
    /// (PyTorch's: its results are 0-d).
    ///
    /// # Errors
    /// `Error::Argument` naming `topk` when `k` exceeds the axis; as
    /// [`Tensor::sort`] otherwise.
    pub fn topk(&self, k: usize, axis: isize, which: TopK) -> Result<(Tensor, Tensor)> {
        const OP: &str = "topk";
        if self.rank() == 0 && matches!(axis, 0 | -1) {
            // Its one element for k of 0 too, as PyTorch's (whose result
            // keeps the input's shape, 0-d).
            let (values, indices) = self.reshape([1])?.topk(k.max(1), 0, which)?;
            let scalar = Vec::<usize>::new;
            return Ok((values.reshape(scalar())?, indices.reshape(scalar())?));
        }
        let a = normalize_axis(OP, axis, self.rank())?;
        let n = self.dims()[a];
        if k > n {
            return Err(Error::argument(
                OP,
                format!("k = {k} is more than the {n} elements along axis {a}"),
            ));
        }
        super::as_op(OP, || {
            let order = self.order(OP, axis, which == TopK::Largest)?;
            let indices = order.narrow(a as isize, 0, k)?.contiguous()?;
            let values = self.gather(&indices, axis)?;
            Ok((values, indices))
        })
    }

    /// [`Tensor::order`] of an i64 tensor on a GPU, whose sort kernel keys
    /// are 32-bit: two stable passes (least significant first), by the low
    /// word unsigned, then by the high word signed.
    ///
    /// # Errors
    /// As [`Tensor::order`].
    fn order_of_words(&self, op: &'static str, axis: usize, descending: bool) -> Result<Tensor> {
        let axis = axis as isize;
        let low = self.to_dtype(DType::U32)?;
        let high = self.floor_divide_scalar(1i64 << 32)?.to_dtype(DType::I32)?;
        let by_low = low.order(op, axis, descending)?;
        let by_high = high.gather(&by_low, axis)?.order(op, axis, descending)?;
        by_low.gather(&by_high, axis)
    }

    /// The i32 positions that sort each line along `axis`.
    fn order(&self, op: &'static str, axis: isize, descending: bool) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op));
        }
        let axis = normalize_axis(op, axis, self.rank())?;
        if self.dtype() == DType::I64 && self.device().is_gpu() {
            return self.order_of_words(op, axis, descending);
        }
        // No lines (or empty ones): nothing to sort, whatever their length.
        if self.numel() == 0 {
            return Tensor::empty_dense(self.shape().clone(), DType::I32, self.device(), op);
        }
        let n = self.dims()[axis];
        if n > i32::MAX as usize {
            return Err(Error::shape(
                op,
                format!("lines of {n} elements are past the i32 positions it returns"),
            ));
        }
        let out = Tensor::empty_dense(self.shape().clone(), DType::I32, self.device(), op)?;
        // A view over many storage bindings goes in parts across the lines,
        // each with its GPU scratch (4 bytes per element of a line padded to
        // a power of two) within one binding; a part whose lines do not fit
        // one binding where they are goes through a compact copy of itself
        // with the lines contiguous.
        let n64 = n as u64;
        let per_line =
            (n64.next_power_of_two() * 4).max(2 * n64 * self.dtype().size_in_bytes() as u64);
        let max_lines = match self.gpu_binding_limit() {
            Some(limit) if per_line > limit => {
                return Err(Error::TooLarge {
                    op,
                    what: "bytes of one line's sort scratch or compact copy (twice the line) in one storage binding",
                    requested: per_line,
                    limit,
                });
            }
            Some(limit) => (limit / per_line) as usize,
            None => usize::MAX,
        };
        let last = self.rank() as isize - 1;
        let (a, z) = (axis as isize, last);
        // Lines made contiguous: the part's copy with the axis last,
        // viewed back in the part's coordinates.
        let compact =
            |t: &Tensor| -> Result<Tensor> { t.transpose(a, z)?.contiguous()?.transpose(a, z) };
        let both = [self.clone(), out.clone()];
        for_each_part_across(&both, axis, max_lines, &mut |part| {
            let [input, out] = part else {
                return Err(Error::internal(op, "a sort part has two views"));
            };
            let input = match input.binding_cut() {
                Some(_) => compact(input)?,
                None => input.clone(),
            };
            let dest = match out.binding_cut() {
                Some(_) => compact(out)?,
                None => out.clone(),
            };
            // Both go to the kernel with the sorted axis last: free views.
            sort(&SortCall {
                input: input.kernel_ref(input.layout().transpose(a, z)?)?,
                out: dest.kernel_out(dest.layout().transpose(a, z)?)?,
                descending,
            })?;
            if !dest.shares_storage(out) {
                out.assign(&dest)?;
            }
            Ok(())
        })?;
        Ok(out)
    }
}
