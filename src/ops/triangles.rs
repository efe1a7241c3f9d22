//! Matrix structure over the last two axes: `diag`, and the triangles
//! `triu` / `tril` (with in-place forms), batched over any leading axes.
//! The `diagonal` view is in `tensor/views.rs`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// NumPy's `diag`: a 1-D tensor becomes the square matrix with it on
    /// diagonal `k` (zeros elsewhere); a 2-D tensor gives a copy of its
    /// diagonal `k` (see [`Tensor::diagonal`] for the view).
    ///
    /// # Errors
    /// `Error::Shape` naming `diag` for other ranks or a matrix side over
    /// the shape limits.
    pub fn diag(&self, k: isize) -> Result<Tensor> {
        const OP: &str = "diag";
        match self.rank() {
            1 => {
                let side = self
                    .numel()
                    .checked_add(k.unsigned_abs())
                    .ok_or_else(|| Error::shape(OP, format!("offset {k} overflows")))?;
                let out = Tensor::zeros([side, side], self.dtype(), self.device())
                    .map_err(|e| e.named(OP))?;
                out.diagonal(k)?.assign(self)?;
                Ok(out)
            }
            2 => self.diagonal(k)?.contiguous_copy(),
            _ => Err(Error::shape(
                OP,
                format!("needs a 1-D or 2-D tensor, the shape is {}", self.shape()),
            )),
        }
    }

    /// The upper triangle of the last two axes: elements with
    /// `column - row >= k` kept, the others zero (NumPy's `triu`).
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let m = Tensor::arange(1i32, 10, 1, &Device::cpu())?.reshape([3, 3])?;
    /// assert_eq!(m.triu(0)?.to_vec::<i32>()?, vec![1, 2, 3, 0, 5, 6, 0, 0, 9]);
    /// assert_eq!(m.tril(-1)?.to_vec::<i32>()?, vec![0, 0, 0, 4, 0, 0, 7, 8, 0]);
    /// m.diagonal(0)?.fill_(0)?; // a view: writes into m
    /// assert_eq!(m.diag(0)?.to_vec::<i32>()?, vec![0, 0, 0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `triu` for fewer than 2 axes.
    pub fn triu(&self, k: isize) -> Result<Tensor> {
        self.triangle("triu", k, true).map_err(|e| e.named("triu"))
    }

    /// The lower triangle of the last two axes: elements with
    /// `column - row <= k` kept, the others zero (NumPy's `tril`).
    ///
    /// # Errors
    /// `Error::Shape` naming `tril` for fewer than 2 axes.
    pub fn tril(&self, k: isize) -> Result<Tensor> {
        self.triangle("tril", k, false).map_err(|e| e.named("tril"))
    }

    /// [`Tensor::triu`] in place: zeros written below the triangle.
    ///
    /// # Errors
    /// As [`Tensor::triu`], and `Error::OverlappingWrite` for a broadcast view.
    pub fn triu_(&self, k: isize) -> Result<()> {
        if self.no_matrix_elements("triu_")? {
            return Ok(());
        }
        // Outside triu(k) is inside tril(k - 1).
        let outside = self.triangle_mask("triu_", k.saturating_sub(1), false)?;
        self.zero_where("triu_", &outside)
    }

    /// [`Tensor::tril`] in place: zeros written above the triangle.
    ///
    /// # Errors
    /// As [`Tensor::tril`], and `Error::OverlappingWrite` for a broadcast view.
    pub fn tril_(&self, k: isize) -> Result<()> {
        if self.no_matrix_elements("tril_")? {
            return Ok(());
        }
        let outside = self.triangle_mask("tril_", k.saturating_add(1), true)?;
        self.zero_where("tril_", &outside)
    }

    /// True for a tensor of matrices with no elements (nothing to mask:
    /// no `[rows, cols]` mask is made, however long the other side).
    ///
    /// # Errors
    /// `Error::Shape` naming `op` for fewer than 2 axes.
    fn no_matrix_elements(&self, op: &'static str) -> Result<bool> {
        self.layout().matrix_sides(op)?;
        Ok(self.numel() == 0)
    }

    fn triangle(&self, op: &'static str, k: isize, upper: bool) -> Result<Tensor> {
        if self.no_matrix_elements(op)? {
            return self.contiguous_copy();
        }
        if self.dtype().is_complex() {
            let (re, im) = (self.real()?, self.imag()?);
            return Tensor::complex(&re.triangle(op, k, upper)?, &im.triangle(op, k, upper)?);
        }
        let keep = self.triangle_mask(op, k, upper)?;
        let zero = Tensor::zeros([], self.dtype(), self.device())?;
        Tensor::where_cond(&keep, self, &zero)
    }

    /// `[rows, cols]` bool: `column - row >= k` (upper) or `<= k` (lower).
    fn triangle_mask(&self, op: &'static str, k: isize, upper: bool) -> Result<Tensor> {
        let (rows, cols) = self.layout().matrix_sides(op)?;
        let k = clamped_offset(k, rows, cols);
        let (Ok(r), Ok(c), Ok(k)) = (i32::try_from(rows), i32::try_from(cols), i32::try_from(k))
        else {
            return Err(Error::shape(
                op,
                format!("matrix sides {rows} x {cols} past the i32 range"),
            ));
        };
        let dev = self.device();
        let row = Tensor::arange(0i32, r, 1, dev)?.reshape([rows, 1])?;
        let col = Tensor::arange(0i32, c, 1, dev)?.reshape([1, cols])?;
        let diff = col.sub(&row)?;
        if upper {
            diff.ge_scalar(k)
        } else {
            diff.le_scalar(k)
        }
    }

    /// Writes zero where `mask` (broadcast) is true.
    fn zero_where(&self, op: &'static str, mask: &Tensor) -> Result<()> {
        self.layout().check_writable(op)?;
        if self.dtype().is_complex() {
            self.real()?.zero_where(op, mask)?;
            return self.imag()?.zero_where(op, mask);
        }
        let zero = if self.dtype() == DType::Bool {
            crate::scalar::Scalar::Bool(false)
        } else {
            crate::scalar::Scalar::Int(0)
        };
        self.masked_fill_(mask, zero)
    }
}

/// `k` clamped to `[-rows, cols]`: the differences column - row lie in
/// `[1 - rows, cols - 1]`, so no mask changes, and `k` stays within i32
/// wherever both sides do.
fn clamped_offset(k: isize, rows: usize, cols: usize) -> isize {
    k.clamp(-(rows as isize), cols as isize)
}

#[cfg(test)]
mod tests {
    use super::clamped_offset;

    #[test]
    fn clamped_offsets_keep_every_mask_and_fit_i32() {
        for (rows, cols) in [(1, 1), (2, 5), (5, 2), (3, 3)] {
            for k in -9isize..=9 {
                let c = clamped_offset(k, rows, cols);
                for r in 0..rows as isize {
                    for col in 0..cols as isize {
                        assert_eq!(col - r >= k, col - r >= c, "{rows}x{cols} k {k}");
                        assert_eq!(col - r <= k, col - r <= c, "{rows}x{cols} k {k}");
                    }
                }
            }
        }
        let widest = i32::MAX as usize;
        for k in [isize::MIN, -(1 << 40), 1 << 31, isize::MAX] {
            let c = clamped_offset(k, widest, widest);
            assert!(i32::try_from(c).is_ok(), "{k} -> {c}");
        }
    }
}
