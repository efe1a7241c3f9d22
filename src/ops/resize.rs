//! Resizing the last two axes, as PyTorch's `interpolate`: `nearest`
//! picks rows and then columns by index (`index_select`), `bilinear`
//! blends the two nearest rows, then the two nearest columns, with weights
//! worked out on the host in f64. Each axis is its own pass, so any
//! leading axes and any view work.

use super::windows::compute_dtype;
use crate::backend::cpu::try_collect;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// How [`Tensor::resize`] samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// The element at `floor(out_index * in / out)` (PyTorch's `nearest`).
    Nearest,
    /// Linear between the two nearest elements of each axis, pixel centres
    /// aligned (PyTorch's `bilinear`, `align_corners=False`).
    Bilinear,
    /// Linear, the first and last elements of each axis aligned
    /// (`align_corners=True`).
    BilinearAlignCorners,
}

impl Tensor {
    /// This tensor with its last two axes resized to `size` (PyTorch's
    /// `interpolate(x, size=..., mode=...)` on `[.., height, width]`).
    /// f16 computes in f32.
    ///
    /// ```
    /// use webtensor::{Device, Resize, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let x = Tensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0], [1, 1, 2, 2], &Device::cpu())?;
    /// let up = x.resize([3, 3], Resize::BilinearAlignCorners)?;
    /// assert_eq!(up.to_vec::<f32>()?, vec![0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `resize` for fewer than 2 axes or a size of 0
    /// from a non-empty axis (or any size from an empty one);
    /// `Error::DType` for non-float tensors (bilinear).
    pub fn resize(&self, size: [usize; 2], mode: Resize) -> Result<Tensor> {
        self.resize_with("resize", size, None, mode)
    }

    /// [`Tensor::resize`] by `scale` per axis (PyTorch's `scale_factor`):
    /// the output is `floor(n * scale)` long, and output `i` samples input
    /// position `i / scale` as PyTorch does when it is given the factor.
    ///
    /// # Errors
    /// As [`Tensor::resize`], naming `resize_by`; `Error::Argument` for a
    /// scale that is not positive and finite.
    pub fn resize_by(&self, scale: [f64; 2], mode: Resize) -> Result<Tensor> {
        const OP: &str = "resize_by";
        if scale.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(Error::argument(
                OP,
                format!("scales {scale:?} must be positive and finite"),
            ));
        }
        let r = self.rank().max(2);
        let dims = self.dims();
        let size = [0, 1].map(|a| {
            (dims.get(r - 2 + a).copied().unwrap_or(0) as f64 * scale[a]).floor() as usize
        });
        self.resize_with(OP, size, Some(scale), mode)
    }

    fn resize_with(
        &self,
        op: &'static str,
        size: [usize; 2],
        scale: Option<[f64; 2]>,
        mode: Resize,
    ) -> Result<Tensor> {
        // Nearest copies elements of any dtype; bilinear computes in f32.
        let compute = match mode {
            Resize::Nearest => self.dtype(),
            _ => compute_dtype(op, self.dtype())?,
        };
        let r = self.rank();
        if r < 2 {
            return Err(Error::shape(
                op,
                format!("needs 2 spatial axes, got shape {}", self.shape()),
            ));
        }
        let mut x = self.to_dtype(compute)?;
        for a in 0..2 {
            let axis = r - 2 + a;
            let (n, m) = (self.dims()[axis], size[a]);
            if (n == 0) != (m == 0) {
                return Err(Error::shape(
                    op,
                    format!("axis {axis} of {n} cannot be resized to {m}"),
                ));
            }
            if n == m && scale.is_none() {
                continue;
            }
            // Input positions per output position.
            let ratio = match scale {
                Some(s) => 1.0 / s[a],
                None => n as f64 / m as f64,
            };
            x = resize_axis(&x, axis, n, m, ratio, mode)?;
        }
        x.to_dtype(self.dtype())
    }
}

/// One axis of `x` (`n` long) resized to `m`.
fn resize_axis(
    x: &Tensor,
    axis: usize,
    n: usize,
    m: usize,
    ratio: f64,
    mode: Resize,
) -> Result<Tensor> {
    const OP: &str = "resize";
    let device = x.device();
    let index = |v: Vec<i32>| Tensor::from_vec(v, [m], device);
    let last = (n - 1) as f64;
    // The output's extent comes from the caller: the host may refuse it.
    let sources = try_collect(
        OP,
        m,
        (0..m).map(|i| match mode {
            Resize::Nearest => (i as f64 * ratio).floor().min(last),
            Resize::Bilinear => ((i as f64 + 0.5) * ratio - 0.5).max(0.0),
            Resize::BilinearAlignCorners if m > 1 => i as f64 * last / (m - 1) as f64,
            Resize::BilinearAlignCorners => 0.0,
        }),
    )?;
    let lower = try_collect(
        OP,
        m,
        sources
            .iter()
            .map(|s| (s.floor() as usize).min(n - 1) as i32),
    )?;
    if mode == Resize::Nearest {
        return x.index_select(&index(lower)?, axis as isize);
    }
    let upper = try_collect(OP, m, lower.iter().map(|&i| (i + 1).min(n as i32 - 1)))?;
    let weight = try_collect(
        OP,
        m,
        sources
            .iter()
            .zip(&lower)
            .map(|(s, &i)| (s - i as f64).clamp(0.0, 1.0) as f32),
    )?;
    let mut shape = vec![1usize; x.rank()];
    shape[axis] = m;
    let w1 = Tensor::from_vec(weight, [m], device)?
        .reshape(shape)?
        .to_dtype(x.dtype())?;
    let w0 = w1.neg()?.add_scalar(1.0)?;
    let a = x.index_select(&index(lower)?, axis as isize)?;
    let b = x.index_select(&index(upper)?, axis as isize)?;
    a.mul(&w0)?.add(&b.mul(&w1)?)
}
