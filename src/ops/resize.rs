//! Resizing the last two axes, as PyTorch's `interpolate`: `nearest`
//! picks columns and then rows by index, `bilinear` blends the two nearest
//! columns, then the two nearest rows. Positions and weights are worked
//! out by PyTorch's CPU formulas in its precisions (`resize_taps.rs`: f32,
//! and f64 for f64 data's blending modes), so the same source elements
//! are picked with the same weights (but for a weight's last bit where a
//! PyTorch build fuses `scale (i + 1/2) - 1/2` into one multiply-add, as
//! its x86 wheels do: a bilinear output then differs by about 1e-6 of
//! its inputs). A GPU runs one kernel that computes
//! them in the shader
//! (`backend::gpu::resize`); the CPU, and a GPU for views over more than
//! one storage binding, compose it here axis by axis (`index_select`, then
//! a blend), from positions worked out on the host.

use super::resize_taps::{double, single};
use super::windows::compute_dtype;
use crate::backend::cpu::{try_collect, try_with_capacity};
use crate::backend::{MAX_ANTIALIAS_TAPS, ResizeCall, Sampling, resize};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::shape::{MAX_RANK, Shape};
use crate::tensor::Tensor;

/// How [`Tensor::resize`] samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// The element at `floor(out_index * (in / out))`, in f32 (PyTorch's
    /// `nearest`).
    Nearest,
    /// Linear between the two nearest elements of each axis, pixel centres
    /// aligned (PyTorch's `bilinear`, `align_corners=False`).
    Bilinear,
    /// Linear, the first and last elements of each axis aligned
    /// (`align_corners=True`).
    BilinearAlignCorners,
    /// Bilinear with antialiasing (PyTorch's `bilinear` with
    /// `antialias=True`, `align_corners=False`): when an axis shrinks,
    /// each output weighs every input the triangle filter stretched by the
    /// scale covers (a window twice the scale wide, the weights summing to
    /// 1), so detail finer than the output's spacing averages out instead
    /// of aliasing; when it grows, the plain bilinear window. Axes are
    /// resampled columns first, then rows, and an axis of unchanged length
    /// is left as it is. Windows and weights in f32 (f64 for f64 data).
    BilinearAntialias,
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
    /// `Error::DType` for c64 and for non-float tensors (bilinear).
    pub fn resize(&self, size: [usize; 2], mode: Resize) -> Result<Tensor> {
        let _region = crate::profile_region::op("resize");
        self.resize_with("resize", size, None, mode)
            .map_err(|e| e.named("resize"))
    }

    /// [`Tensor::resize`] by `scale` per axis (PyTorch's `scale_factor`):
    /// the output is `floor(n * scale)` long, and output `i` samples input
    /// position `i / scale` as PyTorch's CPU does when it is given the
    /// factor. Nearest follows its two paths: on the fast one (outputs of
    /// at most 128 rows and columns together, channels-last images of more
    /// than 3 channels) an axis as long as its input is copied and one
    /// twice as long takes `i / 2` whatever the factor; elsewhere each
    /// output takes `floor(i / scale)`.
    ///
    /// # Errors
    /// As [`Tensor::resize`], naming `resize_by`; `Error::Argument` for a
    /// scale that is not positive and finite.
    pub fn resize_by(&self, scale: [f64; 2], mode: Resize) -> Result<Tensor> {
        const OP: &str = "resize_by";
        let _region = crate::profile_region::op(OP);
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
            .map_err(|e| e.named(OP))
    }

    fn resize_with(
        &self,
        op: &'static str,
        size: [usize; 2],
        scale: Option<[f64; 2]>,
        mode: Resize,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op));
        }
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
        for a in [1, 0] {
            let axis = r - 2 + a;
            let (n, m) = (self.dims()[axis], size[a]);
            if (n == 0) != (m == 0) {
                return Err(Error::shape(
                    op,
                    format!("axis {axis} of {n} cannot be resized to {m}"),
                ));
            }
        }
        let mut dims = self.dims().to_vec();
        dims[r - 2..].copy_from_slice(&size);
        // Before any axis's taps or intermediate: an output past the limits
        // made a 2^31-long axis's index lists (48 GB) before failing.
        Shape::from(dims.clone()).check(op)?;
        if dims.contains(&0) {
            // No output: no taps to find (an empty batch's axes may be
            // any length).
            return Tensor::zeros(dims, self.dtype(), self.device());
        }
        let shortcuts = mode != Resize::Nearest || scale.is_none() || nearest_shortcuts(self, size);
        let copies = match mode {
            Resize::Nearest => shortcuts,
            Resize::BilinearAntialias => true,
            _ => false,
        };
        if self.dims()[r - 2..] == size && copies {
            // Each pixel its own (PyTorch's antialiased kernel, and its
            // nearest one on its fast path, copy an axis as long as its
            // input, whatever the factor): a copy, never this tensor's
            // storage.
            return self.contiguous_copy();
        }
        if let Some(out) = self.resize_in_one_pass(op, size, scale, mode, shortcuts)? {
            return Ok(out);
        }
        if mode == Resize::Nearest
            && let Some(factors) = whole_factors(self, size, scale, shortcuts)
        {
            return nearest_by_factors(op, self, factors);
        }
        let mut x = self.to_dtype(compute)?;
        // Columns, then rows: PyTorch blends each row's pair of columns
        // first, so the roundings fall alike.
        for a in [1, 0] {
            let axis = r - 2 + a;
            let (n, m) = (self.dims()[axis], size[a]);
            // An axis as long as its input takes each element with weight 1
            // and again with weight 0, even with a factor (PyTorch's CPU
            // kernels): a copy, but that an infinity becomes NaN.
            // (The antialiased form leaves such an axis alone, as PyTorch's,
            // and nearest with its shortcuts.)
            if n == m && shortcuts {
                if !matches!(mode, Resize::Nearest | Resize::BilinearAntialias) {
                    x = x.add(&x.mul_scalar(0.0)?)?;
                }
                continue;
            }
            x = if mode == Resize::BilinearAntialias {
                resize_axis_antialias(op, &x, axis, [n, m], scale.map(|s| s[a]))?
            } else {
                resize_axis(op, &x, axis, [n, m], scale.map(|s| s[a]), mode, shortcuts)?
            };
        }
        x.to_dtype(self.dtype())
    }
}

impl Tensor {
    /// On a GPU, the resize as one kernel (`backend::gpu::resize`), which
    /// works out the same positions and weights as `source_taps` in the
    /// shader: `None` where the op layer composes it instead (the CPU,
    /// views over more than one storage binding, extents past 2^24, whose
    /// positions f32 no longer counts exactly).
    fn resize_in_one_pass(
        &self,
        op: &'static str,
        size: [usize; 2],
        scale: Option<[f64; 2]>,
        mode: Resize,
        shortcuts: bool,
    ) -> Result<Option<Tensor>> {
        let r = self.rank();
        let n = [self.dims()[r - 2], self.dims()[r - 1]];
        let long = n.iter().chain(&size).any(|&e| e >= 1 << 24);
        if !self.device().is_gpu() || long || self.binding_cut().is_some() {
            return Ok(None);
        }
        let mut dims = self.dims().to_vec();
        dims[r - 2..].copy_from_slice(&size);
        let out = Tensor::empty_dense(Shape::from(dims), self.dtype(), self.device(), op)?;
        if out.numel() == 0 {
            return Ok(Some(out));
        }
        if out.binding_cut().is_some() {
            return Ok(None);
        }
        let ratio = [0, 1].map(|a| single::source_ratio(n[a], size[a], scale.map(|s| s[a]), mode));
        // Windows wider than the kernel holds are composed.
        let wide = |r: f32| single::antialias_taps(r) > MAX_ANTIALIAS_TAPS;
        if mode == Resize::BilinearAntialias && ratio.iter().any(|&r| wide(r)) {
            return Ok(None);
        }
        resize(&ResizeCall {
            mode: match mode {
                Resize::Nearest if shortcuts => Sampling::Nearest,
                Resize::Nearest => Sampling::NearestGeneric,
                Resize::Bilinear => Sampling::Bilinear,
                Resize::BilinearAlignCorners => Sampling::BilinearAlignCorners,
                Resize::BilinearAntialias => Sampling::BilinearAntialias,
            },
            ratio,
            input: self.kernel_ref(self.layout().clone())?,
            out: out.kernel_out(out.layout().clone())?,
        })?;
        Ok(Some(out))
    }
}

/// True where PyTorch's CPU takes its fast nearest path
/// (`_use_vectorized_kernel_cond_2d`), whose `nearest_idx` copies an axis
/// as long as its input and takes `i / 2` along one twice as long,
/// whatever factor was given: an output of at most 128 rows and columns
/// together, or a channels-last image of more than 3 channels. Elsewhere
/// (its generic path) each output takes `floor(i / scale)`. The two differ
/// only for a factor given (`resize_by`) other than the lengths' ratio
/// (2.005 making 200 of 100).
fn nearest_shortcuts(x: &Tensor, size: [usize; 2]) -> bool {
    size[0] + size[1] <= 128 || (x.rank() == 4 && x.dims()[1] > 3 && x.is_channels_last())
}

/// The whole factors `[fh, fw]` of a nearest resize of `x` to `size`
/// whose source pixels are `i / f` on both axes (`m = f n`, the ratio
/// exact): `None` for any other, for empty axes or batches, for a rank the
/// broadcast view's two more axes would take past [`MAX_RANK`], and for an
/// output past 2^31 elements (its check walks each output index of both
/// axes, which must cost no more than the output: a size that cannot be
/// allocated is the general path's error, at once).
fn whole_factors(
    x: &Tensor,
    size: [usize; 2],
    scale: Option<[f64; 2]>,
    shortcuts: bool,
) -> Option<[usize; 2]> {
    let r = x.rank();
    if r + 2 > MAX_RANK {
        return None;
    }
    let outer: usize = x.dims()[..r - 2].iter().product();
    let elements = outer.checked_mul(size[0])?.checked_mul(size[1])?;
    // An empty batch has no output to bound the walk by.
    if elements == 0 || elements > i32::MAX as usize {
        return None;
    }
    let mut factors = [1; 2];
    for a in [0, 1] {
        let (n, m) = (x.dims()[r - 2 + a], size[a]);
        if n == 0 || m % n != 0 {
            return None;
        }
        let f = m / n;
        let ratio = single::source_ratio(n, m, scale.map(|s| s[a]), Resize::Nearest);
        let tap = |i| single::source_taps(i, n, m, ratio, Resize::Nearest, shortcuts).0;
        if (0..m).any(|i| tap(i) != i / f) {
            return None;
        }
        factors[a] = f;
    }
    Some(factors)
}

/// A nearest resize by whole factors: each pixel repeated `fh` x `fw`
/// times, one copy of a broadcast view `[.., h, fh, w, fw]` (which the
/// CPU copies along its rows, where gathering each axis took two passes
/// and an index read a pixel).
fn nearest_by_factors(op: &'static str, x: &Tensor, [fh, fw]: [usize; 2]) -> Result<Tensor> {
    let r = x.rank();
    let (h, w) = (x.dims()[r - 2], x.dims()[r - 1]);
    let mut spread = x.dims()[..r - 2].to_vec();
    spread.extend([h, fh, w, fw]);
    let mut out = x.dims()[..r - 2].to_vec();
    out.extend([h * fh, w * fw]);
    let spread = x.unsqueeze(-1)?.unsqueeze(-3)?.broadcast_to(spread)?;
    if r == 4 && x.dims()[1] > 1 && x.is_channels_last() {
        // A channels-last image into channels-last memory.
        let (n, c) = (x.dims()[0], x.dims()[1]);
        let dense = Shape::from([n, h * fh, w * fw, c]);
        let out = Tensor::empty_dense(dense, x.dtype(), x.device(), op)?.permute(&[0, 3, 1, 2])?;
        out.split_axis(op, 3, [w, fw])?
            .split_axis(op, 2, [h, fh])?
            .assign(&spread)?;
        return Ok(out);
    }
    spread.contiguous()?.reshape(out)
}

/// One axis of `x` (`n` long) resized to `m` for the op `op`; `scale` is
/// the caller's factor for this axis (`resize_by`), if any.
fn resize_axis(
    op: &'static str,
    x: &Tensor,
    axis: usize,
    [n, m]: [usize; 2],
    scale: Option<f64>,
    mode: Resize,
    shortcuts: bool,
) -> Result<Tensor> {
    let device = x.device();
    // i32 indices, i64 past them (a broadcast view makes such axes cheap).
    let index = |v: Vec<usize>| match i32::try_from(n) {
        Ok(_) => Tensor::from_vec(
            v.into_iter().map(|k| k as i32).collect::<Vec<_>>(),
            [m],
            device,
        ),
        Err(_) => Tensor::from_vec(
            v.into_iter().map(|k| k as i64).collect::<Vec<_>>(),
            [m],
            device,
        ),
    };
    // The output's extent comes from the caller: the host may refuse it.
    // f64 data's blends work in f64 (PyTorch's), all else in f32.
    let (lower, upper, weight) = if x.dtype() == DType::F64 && mode != Resize::Nearest {
        let ratio = double::source_ratio(n, m, scale, mode);
        let taps = (0..m).map(|i| double::source_taps(i, n, m, ratio, mode, shortcuts));
        columns(op, m, try_collect(op, m, taps)?, device, true)?
    } else {
        let ratio = single::source_ratio(n, m, scale, mode);
        let taps = (0..m).map(|i| single::source_taps(i, n, m, ratio, mode, shortcuts));
        columns(
            op,
            m,
            try_collect(op, m, taps)?,
            device,
            mode != Resize::Nearest,
        )?
    };
    let Some(weight) = weight else {
        return x.index_select(&index(lower)?, axis as isize);
    };
    let mut shape = vec![1usize; x.rank()];
    shape[axis] = m;
    let w1 = weight.reshape(shape)?.to_dtype(x.dtype())?;
    let w0 = w1.neg()?.add_scalar(1.0)?;
    let a = x.index_select(&index(lower)?, axis as isize)?;
    let b = x.index_select(&index(upper)?, axis as isize)?;
    a.mul(&w0)?.add(&b.mul(&w1)?)
}

/// One axis of `x` (`n` long) resized to `m` with antialiasing: each
/// output's window (`antialias_weights`) summed tap by tap or, with fewer
/// outputs than taps, window by window.
fn resize_axis_antialias(
    op: &'static str,
    x: &Tensor,
    axis: usize,
    [n, m]: [usize; 2],
    scale: Option<f64>,
) -> Result<Tensor> {
    // f64 data's windows in f64 (PyTorch's), all else in f32.
    if x.dtype() == DType::F64 {
        let ratio = double::source_ratio(n, m, scale, Resize::BilinearAntialias);
        let taps = double::antialias_taps(ratio);
        let window = |i| double::antialias_weights(i, n, ratio);
        return sum_windows(op, x, axis, [n, m], taps, window);
    }
    let ratio = single::source_ratio(n, m, scale, Resize::BilinearAntialias);
    let window = |i| single::antialias_weights(i, n, ratio);
    sum_windows(op, x, axis, [n, m], single::antialias_taps(ratio), window)
}

/// `x` along `axis` (`n` long) summed over each of `m` outputs' windows
/// (`window(i)`: its first input position, length and weights), at most
/// `taps` long. With no more taps than outputs, tap by tap: the first
/// tap's product, then each later one added where the output's window
/// reaches it (so a tap past the window adds nothing, not even `inf *
/// 0`), in PyTorch's order; with fewer outputs (a downscale by a factor
/// past about half the output's length), window by window
/// (`sum_each_window`): `min(taps, m)` steps of a few ops either way, where
/// taps alone made a 2^28-wide axis shrunk to one pixel 2^28 steps.
fn sum_windows<W, F>(
    op: &'static str,
    x: &Tensor,
    axis: usize,
    [n, m]: [usize; 2],
    taps: usize,
    window: impl Fn(usize) -> (usize, usize, F),
) -> Result<Tensor>
where
    W: Element + Default,
    F: Fn(usize) -> W,
{
    if taps > m {
        return sum_each_window(op, x, axis, [n, m], taps, window);
    }
    let windows = try_collect(
        op,
        m,
        (0..m).map(|i| {
            let (first, count, weight) = window(i);
            (first, (0..count).map(weight).collect::<Vec<W>>())
        }),
    )?;
    let device = x.device();
    let taps = windows.iter().map(|w| w.1.len()).max().unwrap_or(0).max(1);
    let mut shape = vec![1usize; x.rank()];
    shape[axis] = m;
    let column = |t: Tensor| t.reshape(shape.clone());
    let mut sum: Option<Tensor> = None;
    for j in 0..taps {
        let at = try_collect(op, m, windows.iter().map(|w| (w.0 + j).min(n - 1) as i64))?;
        let weight = try_collect(
            op,
            m,
            windows
                .iter()
                .map(|w| w.1.get(j).copied().unwrap_or_default()),
        )?;
        let weight = column(Tensor::from_vec(weight, [m], device)?)?.to_dtype(x.dtype())?;
        let term = x
            .index_select(&Tensor::from_vec(at, [m], device)?, axis as isize)?
            .mul(&weight)?;
        sum = Some(match sum {
            None => term,
            Some(sum) => {
                let reaches = try_collect(op, m, windows.iter().map(|w| j < w.1.len()))?;
                let reaches = column(Tensor::from_vec(reaches, [m], device)?)?;
                Tensor::where_cond(&reaches, &sum.add(&term)?, &sum)?
            }
        });
    }
    sum.ok_or_else(|| Error::internal(op, "an antialiased axis with no taps"))
}

/// [`sum_windows`] output by output: each window of `x` (a view) times its
/// weights, summed along `axis` from the first product on; an empty window
/// sums nothing (0, as PyTorch's; the taps' form takes its first tap times
/// 0, but it is never empty there with fewer outputs than taps). The
/// weights' room for the longest window is taken first, once: a window
/// longer than memory holds fails before its weights are worked out.
fn sum_each_window<W, F>(
    op: &'static str,
    x: &Tensor,
    axis: usize,
    [n, m]: [usize; 2],
    taps: usize,
    window: impl Fn(usize) -> (usize, usize, F),
) -> Result<Tensor>
where
    W: Element,
    F: Fn(usize) -> W,
{
    let mut weights = try_with_capacity::<W>(op, taps.min(n))?;
    let mut column = vec![1usize; x.rank()];
    let mut one = x.dims().to_vec();
    one[axis] = 1;
    let mut parts = try_with_capacity(op, m)?;
    for i in 0..m {
        let (first, count, weight) = window(i);
        if count == 0 {
            parts.push(Tensor::zeros(one.clone(), x.dtype(), x.device())?);
            continue;
        }
        column[axis] = count;
        weights.clear();
        weights.extend((0..count).map(weight));
        let weights = Tensor::from_slice(&weights, [count], x.device())?
            .reshape(column.clone())?
            .to_dtype(x.dtype())?;
        // A running sum's last: on the CPU in order, as tap by tap (the
        // roundings of PyTorch and of the GPU's one-pass kernel, which a
        // reduction's order would not give); a GPU's scan adds in a tree
        // (this path only takes its windows past the kernel's 64 taps),
        // an ulp or so apart.
        let products = x.narrow(axis as isize, first, count)?.mul(&weights)?;
        let sums = products.cumsum(axis as isize)?;
        parts.push(sums.narrow(axis as isize, count - 1, 1)?);
    }
    Tensor::concat(&parts.iter().collect::<Vec<_>>(), axis as isize)
}

/// An axis's taps as the lower and upper positions and, to `blend`, a
/// tensor of the upper one's weights (`[m]`, in the taps' precision).
fn columns<W: Element>(
    op: &'static str,
    m: usize,
    taps: Vec<(usize, usize, W)>,
    device: &crate::Device,
    blend: bool,
) -> Result<(Vec<usize>, Vec<usize>, Option<Tensor>)> {
    let lower = try_collect(op, m, taps.iter().map(|t| t.0))?;
    let upper = try_collect(op, m, taps.iter().map(|t| t.1))?;
    let weight = match blend {
        true => Some(Tensor::from_vec(
            try_collect(op, m, taps.iter().map(|t| t.2))?,
            [m],
            device,
        )?),
        false => None,
    };
    Ok((lower, upper, weight))
}
