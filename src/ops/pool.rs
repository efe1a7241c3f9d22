//! Pooling over the last two axes, as PyTorch's: `max_pool2d` and
//! `avg_pool2d` (kernel, stride, padding, dilation for max, ceil mode,
//! whether padding counts in an average) are one kernel on a GPU
//! (`backend::gpu::pooling`); windows of many taps that tile the input (a
//! global pooling) are a reduction over a split view on either device;
//! the CPU, and a GPU for views over more than one storage binding or
//! windows past its kernel's loop budget, fold one strided view of the
//! (padded) input per tap that reaches the input with `maximum` or `add`,
//! in the same order; `adaptive_avg_pool2d` is the same kernel on a GPU
//! (each output's bin found in the kernel, its elements added in
//! PyTorch's row-major order) for bins of up to [`TILE_TAPS`] elements,
//! and elsewhere sums each axis's bins (one reduction over a split view
//! where the bins are of one length, over the bins taken whole otherwise);
//! either way the sums are divided by the bins' heights and then their
//! widths, as PyTorch does.

use super::PadMode;
use super::windows::{Pair, compute_dtype, outputs, padded_len, span, window};
use crate::backend::cpu::try_collect;
use crate::backend::{PoolCall, WINDOW_TAPS, pool as pool_kernel};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{MAX_RANK, Shape};
use crate::tensor::Tensor;

/// The arguments of a pooling, PyTorch's defaults unless set: the stride
/// is the kernel's size, no padding, dilation 1, floor mode, padding
/// counted in averages.
///
/// ```
/// use webtensor::{Device, Pool, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let x = Tensor::arange(0.0f32, 16.0, 1.0, &Device::cpu())?.reshape([1, 1, 4, 4])?;
/// assert_eq!(x.max_pool2d(&Pool::new(2))?.to_vec::<f32>()?, vec![5.0, 7.0, 13.0, 15.0]);
/// assert_eq!(x.avg_pool2d(&Pool::new(2))?.to_vec::<f32>()?, vec![2.5, 4.5, 10.5, 12.5]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    kernel: Pair,
    stride: Option<Pair>,
    padding: Pair,
    dilation: Pair,
    ceil_mode: bool,
    count_include_pad: bool,
}

impl Pool {
    /// A window of `kernel` elements per axis, moving by as many.
    pub fn new(kernel: impl Into<Pair>) -> Pool {
        Pool {
            kernel: kernel.into(),
            stride: None,
            padding: Pair([0, 0]),
            dilation: Pair([1, 1]),
            ceil_mode: false,
            count_include_pad: true,
        }
    }

    /// Windows this many elements apart.
    pub fn stride(mut self, stride: impl Into<Pair>) -> Pool {
        self.stride = Some(stride.into());
        self
    }

    /// Implicit padding on both sides of each axis (at most half the
    /// kernel): `-inf` for a maximum, zeros for an average.
    pub fn padding(mut self, padding: impl Into<Pair>) -> Pool {
        self.padding = padding.into();
        self
    }

    /// Taps this many elements apart (a maximum only, as PyTorch's).
    pub fn dilation(mut self, dilation: impl Into<Pair>) -> Pool {
        self.dilation = dilation.into();
        self
    }

    /// A last window that would run past the end counts when it starts
    /// inside the input or its leading padding (PyTorch's `ceil_mode`).
    pub fn ceil_mode(mut self, ceil: bool) -> Pool {
        self.ceil_mode = ceil;
        self
    }

    /// Whether an average divides by the padding it covers too (true, the
    /// default) or only by the input elements.
    pub fn count_include_pad(mut self, count: bool) -> Pool {
        self.count_include_pad = count;
        self
    }
}

/// Most taps a window pools by its one kernel (or the CPU's fold) where the
/// windows tile the input; more pool as a reduction (`pool_tiles`).
const TILE_TAPS: usize = 256;

/// A pooling worked out for one input: per axis the taps, stride,
/// padding, dilation, outputs and the input's extent.
struct Plan {
    k: [usize; 2],
    s: [usize; 2],
    p: [usize; 2],
    d: [usize; 2],
    out: [usize; 2],
    size: [usize; 2],
}

/// What the composed form folds: per axis the taps that reach the input at
/// some output (the others read only padding, which changes no window: a
/// kernel far longer than its input costs nothing more), and the padding
/// before and after the input that they read.
struct Reach {
    taps: [Vec<usize>; 2],
    pads: [(usize, usize); 2],
}

impl Plan {
    fn reach(&self) -> Reach {
        let (k, s, p, d, out, size) = (self.k, self.s, self.p, self.d, self.out, self.size);
        let taps = [0, 1].map(|a| reaching(k[a], s[a], p[a], d[a], out[a], size[a]));
        // The padding the reaching taps read: from the first's first window
        // to the last's last.
        let pads = [0, 1].map(|a| match (taps[a].first(), taps[a].last()) {
            (Some(&first), Some(&last)) => {
                let end = last * d[a] + (out[a] - 1) * s[a] + 1;
                (
                    p[a] - (first * d[a]).min(p[a]),
                    end.saturating_sub(p[a] + size[a]),
                )
            }
            _ => (0, 0),
        });
        Reach { taps, pads }
    }

    /// Where tap `i` of axis `a` reads output 0 in the input `reach` pads.
    fn start(&self, reach: &Reach, a: usize, i: usize) -> usize {
        i * self.d[a] + reach.pads[a].0 - self.p[a]
    }
}

/// The taps of `k` (`d` apart) that reach an input of `size` (after `p` of
/// padding) at some of `out` windows `s` apart, in order.
fn reaching(k: usize, s: usize, p: usize, d: usize, out: usize, size: usize) -> Vec<usize> {
    // Window o's taps inside the input: i d in [p - o s, p + size - o s).
    let mut spans: Vec<(usize, usize)> = (0..out)
        .map_while(|o| {
            let at = o.checked_mul(s).filter(|&v| v < p + size)?;
            let lo = (p.saturating_sub(at)).div_ceil(d);
            Some((lo, (p + size - at).div_ceil(d).min(k)))
        })
        .filter(|(lo, hi)| lo < hi)
        .collect();
    spans.sort_unstable();
    let mut taps: Vec<usize> = Vec::new();
    for (lo, hi) in spans {
        let from = taps.last().map_or(lo, |&t| lo.max(t + 1));
        taps.extend(from..hi);
    }
    taps
}

impl Pool {
    fn plan(&self, op: &'static str, x: &Tensor) -> Result<Plan> {
        if x.rank() < 3 {
            return Err(Error::shape(
                op,
                format!(
                    "needs [.., channels, height, width], got shape {}",
                    x.shape()
                ),
            ));
        }
        let (k, p, d) = (self.kernel.0, self.padding.0, self.dilation.0);
        let s = self.stride.map_or(k, |s| s.0);
        if k.contains(&0) || s.contains(&0) || d.contains(&0) {
            return Err(Error::argument(
                op,
                format!("kernel {k:?}, stride {s:?} and dilation {d:?} must be at least 1"),
            ));
        }
        if (0..2).any(|a| p[a] > k[a] / 2) {
            return Err(Error::argument(
                op,
                format!("padding {p:?} must be at most half the kernel {k:?}"),
            ));
        }
        let r = x.rank();
        let size = [x.dims()[r - 2], x.dims()[r - 1]];
        if size.contains(&0) || x.dims()[r - 3] == 0 {
            // As PyTorch: padding would otherwise make windows of nothing
            // (and PyTorch refuses no channels too; only a batch may be
            // empty).
            return Err(Error::shape(
                op,
                format!("an empty channel or spatial axis, shape {}", x.shape()),
            ));
        }
        let mut out = [0; 2];
        for a in 0..2 {
            let extent = span(op, r - 2 + a, k[a], d[a])?;
            let padded = padded_len(op, r - 2 + a, size[a], (p[a], p[a]))?;
            let ceil = self.ceil_mode.then_some(p[a]);
            out[a] = outputs(padded, extent, s[a], ceil).ok_or_else(|| {
                Error::shape(
                    op,
                    format!(
                        "a window of {extent} is larger than the padded input of {padded} along axis {}",
                        r - 2 + a
                    ),
                )
            })?;
        }
        Ok(Plan {
            k,
            s,
            p,
            d,
            out,
            size,
        })
    }
}

impl Tensor {
    /// The maximum of each window over the last two axes (PyTorch's
    /// `max_pool2d` on `[.., channels, height, width]`); NaN propagates.
    ///
    /// # Errors
    /// `Error::Shape` naming `max_pool2d` for fewer than 3 axes, no
    /// channels, an empty plane or a window larger than the padded input; `Error::Argument` for sizes of 0,
    /// padding over half the kernel, or a padded extent or a window's
    /// reach past 2^31 - 1; `Error::DType` for non-float tensors.
    pub fn max_pool2d(&self, pool: &Pool) -> Result<Tensor> {
        self.max_pool2d_parts(pool)
            .map_err(|e| e.named("max_pool2d"))
    }

    /// [`Tensor::max_pool2d`], whose composed parts' errors name their own ops.
    fn max_pool2d_parts(&self, pool: &Pool) -> Result<Tensor> {
        const OP: &str = "max_pool2d";
        let _region = crate::profile_region::op(OP);
        compute_dtype(OP, self.dtype())?;
        let plan = pool.plan(OP, self)?;
        if let Some(out) = self.pool_tiles(OP, &plan)? {
            return Ok(out);
        }
        if let Some(out) = self.pool_in_one_pass(OP, pool, &plan)? {
            return Ok(out);
        }
        if self.numel() == 0 {
            let mut dims = self.dims().to_vec();
            dims[self.rank() - 2..].copy_from_slice(&plan.out);
            return Tensor::zeros(dims, self.dtype(), self.device());
        }
        let reach = plan.reach();
        let x = self.padded(&reach, f64::NEG_INFINITY)?;
        let mut out: Option<Tensor> = None;
        for &i in &reach.taps[0] {
            for &j in &reach.taps[1] {
                let at = [plan.start(&reach, 0, i), plan.start(&reach, 1, j)];
                let tap = window(&x, at, plan.out, plan.s);
                out = Some(match out {
                    None => tap.contiguous_copy()?,
                    Some(acc) => {
                        acc.maximum_(&tap)?;
                        acc
                    }
                });
            }
        }
        // No tap reaches the input (dilated past it): every window is
        // padding.
        match out {
            Some(out) => Ok(out),
            None => {
                let mut dims = self.dims().to_vec();
                dims[self.rank() - 2..].copy_from_slice(&plan.out);
                Tensor::full(dims, f64::NEG_INFINITY, self.dtype(), self.device())
            }
        }
    }

    /// The mean of each window over the last two axes (PyTorch's
    /// `avg_pool2d`), computed in f32 for f16: each window's taps added in
    /// row-major order, as PyTorch's, then divided once, for windows of up
    /// to 256 taps. Larger windows that tile the input (a global pooling)
    /// are a reduction over the taps, whose order rounds differently, by
    /// an ulp or so (and can differ where partial sums overflow).
    ///
    /// # Errors
    /// As [`Tensor::max_pool2d`], naming `avg_pool2d`; a dilation other
    /// than 1 is an `Error::Argument`.
    pub fn avg_pool2d(&self, pool: &Pool) -> Result<Tensor> {
        self.avg_pool2d_parts(pool)
            .map_err(|e| e.named("avg_pool2d"))
    }

    /// [`Tensor::avg_pool2d`], whose composed parts' errors name their own ops.
    fn avg_pool2d_parts(&self, pool: &Pool) -> Result<Tensor> {
        const OP: &str = "avg_pool2d";
        let _region = crate::profile_region::op(OP);
        let compute = compute_dtype(OP, self.dtype())?;
        if pool.dilation.0 != [1, 1] {
            return Err(Error::argument(OP, "an average pooling has no dilation"));
        }
        let plan = pool.plan(OP, self)?;
        if let Some(out) = self.pool_tiles(OP, &plan)? {
            return Ok(out);
        }
        if let Some(out) = self.pool_in_one_pass(OP, pool, &plan)? {
            return Ok(out);
        }
        let r = self.rank();
        let mut dims = self.dims().to_vec();
        dims[r - 2..].copy_from_slice(&plan.out);
        if dims.contains(&0) {
            // No output: nothing to sum or divide (a table of the
            // windows' divisors would still be out_h x out_w).
            return Tensor::zeros(dims, self.dtype(), self.device());
        }
        let reach = plan.reach();
        let x = self.to_dtype(compute)?.padded(&reach, 0.0)?;
        let out = Tensor::zeros(dims, compute, self.device())?;
        for &i in &reach.taps[0] {
            for &j in &reach.taps[1] {
                let at = [plan.start(&reach, 0, i), plan.start(&reach, 1, j)];
                out.add_(&window(&x, at, plan.out, plan.s))?;
            }
        }
        // What each output divides by: the window's elements inside the
        // padded input (or, without counting padding, inside the input).
        let size = plan.size;
        let counts = |a: usize| -> Vec<f64> {
            let (lo, hi) = if pool.count_include_pad {
                (0, size[a] + 2 * plan.p[a])
            } else {
                (plan.p[a], plan.p[a] + size[a])
            };
            (0..plan.out[a])
                .map(|o| {
                    let start = o * plan.s[a];
                    let end = start + plan.k[a];
                    end.min(hi).saturating_sub(start.max(lo)) as f64
                })
                .collect()
        };
        let (rows, cols) = (counts(0), counts(1));
        let products = rows.iter().flat_map(|h| cols.iter().map(move |w| h * w));
        let n = rows.len() * cols.len();
        // In the compute type: an f32 count is inexact past 2^24.
        let divisors = match compute {
            DType::F64 => {
                let divisors = try_collect(OP, n, products)?;
                Tensor::from_slice(&divisors, plan.out, self.device())?
            }
            _ => {
                let divisors = try_collect(OP, n, products.map(|v| v as f32))?;
                Tensor::from_slice(&divisors, plan.out, self.device())?
            }
        };
        out.div_(&divisors)?;
        out.to_dtype(self.dtype())
    }

    /// The mean over `size` bins per axis of the last two (PyTorch's
    /// `adaptive_avg_pool2d`): output `i` averages input elements
    /// `floor(i n / size)` to `ceil((i + 1) n / size)`, so bins of several
    /// sizes cover any input. Each bin is summed whole (in f32 for f16 and
    /// bf16), then divided by its height and then by its width (one bin,
    /// `[1, 1]`, by its size: the mean), as PyTorch does, so a non-finite
    /// input stays in its own bins. On a GPU, f32, f16 and bf16 bins of up
    /// to 256 elements are one kernel that adds each bin's elements in
    /// PyTorch's row-major order. Elsewhere (the CPU, f64, larger bins,
    /// which reductions sum faster) the sum runs along the rows first, then
    /// along the columns of those sums: the two orders round differently
    /// (by an ulp or so), and a bin whose partial sums pass the type's
    /// range with both signs can be NaN or finite where PyTorch's is
    /// infinite, or the other way.
    ///
    /// # Errors
    /// `Error::Shape` naming `adaptive_avg_pool2d` for fewer than 2 axes,
    /// an empty spatial axis (its bins would average nothing, as PyTorch
    /// refuses) or an output size of 0; `Error::DType` for non-float
    /// tensors.
    pub fn adaptive_avg_pool2d(&self, size: impl Into<Pair>) -> Result<Tensor> {
        self.adaptive_avg_pool2d_parts(size)
            .map_err(|e| e.named("adaptive_avg_pool2d"))
    }

    /// [`Tensor::adaptive_avg_pool2d`], whose composed parts' errors name their own ops.
    fn adaptive_avg_pool2d_parts(&self, size: impl Into<Pair>) -> Result<Tensor> {
        const OP: &str = "adaptive_avg_pool2d";
        let _region = crate::profile_region::op(OP);
        let compute = compute_dtype(OP, self.dtype())?;
        let size = size.into().0;
        let r = self.rank();
        if r < 2 {
            return Err(Error::shape(
                OP,
                format!("needs 2 spatial axes, got shape {}", self.shape()),
            ));
        }
        for (a, &bins) in size.iter().enumerate() {
            let (axis, n) = (r - 2 + a, self.dims()[r - 2 + a]);
            if n == 0 || bins == 0 {
                return Err(Error::shape(
                    OP,
                    format!(
                        "axis {axis} of {n} elements cannot be averaged into {bins} bins (shape {})",
                        self.shape()
                    ),
                ));
            }
        }
        let mut dims = self.dims().to_vec();
        dims[r - 2..].copy_from_slice(&size);
        // Before the first axis's bins: an output past the limits made
        // 2^31 bins (32 GB) and a 16 GB sum before failing at the second.
        let out_shape = Shape::from(dims);
        out_shape.check(OP)?;
        if self.dims()[r - 2..] == size {
            // Each bin one element: its sum from +0 as PyTorch's (so -0.0
            // is +0.0), never this tensor's storage, which the caller may
            // write through the result.
            return self.add_scalar(0.0);
        }
        if size == [1, 1] {
            // PyTorch's one bin is the mean: the sum divided by its count.
            let x = self.to_dtype(compute)?;
            return x.mean_keepdim([-2isize, -1])?.to_dtype(self.dtype());
        }
        if let Some(out) = self.adaptive_in_one_pass([size[0], size[1]], &out_shape)? {
            return Ok(out);
        }
        let mut x = self.to_dtype(compute)?;
        if r == MAX_RANK {
            // Each axis's bins take an axis more: the leading ones as one.
            let lead = self.dims()[..r - 2].iter().product::<usize>();
            x = x.reshape([lead, self.dims()[r - 2], self.dims()[r - 1]])?;
        }
        let rank = x.rank();
        // PyTorch's order: each window summed whole, then divided by its
        // height and then by its width (so a sum that overflows is inf,
        // as PyTorch's, and no quotient is rounded before the sum).
        let mut counts = Vec::with_capacity(2);
        for (a, &m) in size.iter().enumerate() {
            let (sum, count) = adaptive_sum_axis(&x, rank - 2 + a, m)?;
            x = sum;
            counts.extend(count);
        }
        for lengths in &counts {
            x = lengths.divide(&x)?;
        }
        x.reshape(&out_shape)?.to_dtype(self.dtype())
    }

    /// `op` (`max_pool2d` or `avg_pool2d`) by `plan` as a reduction over
    /// the taps' axes of a split view, where the windows are more than
    /// [`TILE_TAPS`] taps that tile the input (the stride the kernel, no
    /// padding or dilation, no partial window: a global pooling, say):
    /// one kernel's thread would loop over them all, past lavapipe's loop
    /// budget (see `kernel/loop_budget.rs`), and the CPU's fold is an op a
    /// tap. `None` for other windows.
    fn pool_tiles(&self, op: &'static str, plan: &Plan) -> Result<Option<Tensor>> {
        let r = self.rank();
        let tiles = plan.s == plan.k
            && plan.d == [1, 1]
            && plan.p == [0, 0]
            && (0..2).all(|a| plan.out[a] * plan.k[a] <= plan.size[a]);
        if !tiles || plan.k[0] * plan.k[1] <= TILE_TAPS || r + 2 > MAX_RANK {
            return Ok(None);
        }
        let ([oh, ow], [kh, kw]) = (plan.out, plan.k);
        let x = self.narrow(-2, 0, oh * kh)?.narrow(-1, 0, ow * kw)?;
        let x = x
            .split_axis(op, r - 1, [ow, kw])?
            .split_axis(op, r - 2, [oh, kh])?;
        let taps = [-3isize, -1];
        let out = match op {
            "avg_pool2d" => x.mean(taps),
            _ => x.max(taps),
        };
        out.map(Some).map_err(|e| e.named(op))
    }

    /// On a GPU, `op` (`max_pool2d` or `avg_pool2d`) by `plan` as one
    /// kernel, which reads each window's taps in the order the composed
    /// form folds them: `None` where the op layer composes it instead (the
    /// CPU, f64, views over more than one storage binding, windows of more
    /// taps than the kernel's loop budget).
    fn pool_in_one_pass(
        &self,
        op: &'static str,
        pool: &Pool,
        plan: &Plan,
    ) -> Result<Option<Tensor>> {
        let float = matches!(self.dtype(), DType::F32 | DType::F16 | DType::BF16);
        // Past the kernel's loop budget the taps are composed.
        let taps = plan.k[0].saturating_mul(plan.k[1]);
        let gpu = self.device().is_gpu() && taps <= WINDOW_TAPS;
        if !gpu || !float || self.binding_cut().is_some() {
            return Ok(None);
        }
        let r = self.rank();
        let mut dims = self.dims().to_vec();
        dims[r - 2..].copy_from_slice(&plan.out);
        let out = Tensor::empty_dense(Shape::from(dims), self.dtype(), self.device(), op)?;
        if out.numel() == 0 {
            return Ok(Some(out));
        }
        if out.binding_cut().is_some() {
            return Ok(None);
        }
        pool_kernel(&PoolCall {
            average: op == "avg_pool2d",
            kernel: plan.k,
            stride: plan.s,
            pad: plan.p,
            dilation: plan.d,
            count_include_pad: pool.count_include_pad,
            adaptive: false,
            input: self.kernel_ref(self.layout().clone())?,
            out: out.kernel_out(out.layout().clone())?,
        })?;
        Ok(Some(out))
    }

    /// On a GPU, `adaptive_avg_pool2d` into `size` bins (`out` the
    /// output's shape) as one kernel, which finds each output's bin from
    /// its position and adds the bin's elements in PyTorch's row-major
    /// order: `None` where the op layer composes it instead (the CPU, f64,
    /// views over more than one storage binding, bins that may hold more
    /// than [`TILE_TAPS`] elements, or an axis whose bin bounds pass the
    /// kernel's 32-bit products).
    fn adaptive_in_one_pass(&self, size: [usize; 2], out: &Shape) -> Result<Option<Tensor>> {
        const OP: &str = "adaptive_avg_pool2d";
        let float = matches!(self.dtype(), DType::F32 | DType::F16 | DType::BF16);
        if !self.device().is_gpu() || !float || self.binding_cut().is_some() {
            return Ok(None);
        }
        let r = self.rank();
        let mut longest = [0usize; 2];
        for a in 0..2 {
            let (n, m) = (self.dims()[r - 2 + a], size[a]);
            // `bin` in pooling.wgsl: (o + 1) n + m - 1 < m (n + 1) in u32.
            let fits = (m as u64)
                .checked_mul(n as u64 + 1)
                .is_some_and(|p| p <= 1 << 32);
            if !fits {
                return Ok(None);
            }
            // A bin spans at most ceil(n / m) + 1 elements (n / m where
            // the bins tile the axis).
            longest[a] = if n.is_multiple_of(m) {
                n / m
            } else {
                n.div_ceil(m) + 1
            };
        }
        // Larger bins are summed faster by reductions (as avg_pool2d's
        // tiling windows are).
        if longest[0].saturating_mul(longest[1]) > TILE_TAPS {
            return Ok(None);
        }
        let out = Tensor::empty_dense(out.clone(), self.dtype(), self.device(), OP)?;
        if out.numel() == 0 {
            return Ok(Some(out));
        }
        if out.binding_cut().is_some() {
            return Ok(None);
        }
        pool_kernel(&PoolCall {
            average: true,
            kernel: longest,
            stride: [1, 1],
            pad: [0, 0],
            dilation: [1, 1],
            count_include_pad: false,
            adaptive: true,
            input: self.kernel_ref(self.layout().clone())?,
            out: out.kernel_out(out.layout().clone())?,
        })?;
        Ok(Some(out))
    }

    /// This tensor with `reach`'s padding of `value` around its last two
    /// axes.
    fn padded(&self, reach: &Reach, value: f64) -> Result<Tensor> {
        let widths = reach.pads;
        if widths.iter().all(|&(a, b)| a + b == 0) {
            return Ok(self.clone());
        }
        self.pad(&widths, PadMode::Constant(value.into()))
    }
}

/// Axis `axis` of `x` (`n` long, `n` and `m` at least 1, `x` below the
/// maximum rank) summed into `m` bins, bin `i` spanning
/// `floor(i n / m)..ceil((i + 1) n / m)`, with the bins' lengths along
/// that axis (broadcasting against the sums; `None` where every bin is one
/// element). Bins of one length are a view of the axis split in two,
/// summed; bins of two lengths are taken whole, `m` by the longest's
/// length, the shorter ones reading a zero past the axis's end, and
/// summed: a few ops whatever the bins (a gather and an add a tap made
/// 667k dispatches of a million-long axis in 3 bins). The taken bins hold
/// at most `n + 2m` elements a row: they overlap by one at most. Either
/// way no element is scaled before it is summed, so an infinity or NaN
/// reaches only its own bins.
fn adaptive_sum_axis(x: &Tensor, axis: usize, m: usize) -> Result<(Tensor, Option<BinLengths>)> {
    const OP: &str = "adaptive_avg_pool2d";
    let n = x.dims()[axis];
    if n == m {
        return Ok((x.clone(), None));
    }
    if n.is_multiple_of(m) {
        let k = n / m;
        let l = x.layout();
        let (mut dims, mut strides) = (l.dims().to_vec(), l.strides().to_vec());
        let step = strides[axis];
        dims.splice(axis..=axis, [m, k]);
        strides.splice(axis..=axis, [step * k as isize, step]);
        let bins = x.with_layout(Layout::from_parts(dims.into(), strides.into(), l.offset()));
        return Ok((bins.sum(axis as isize + 1)?, Some(BinLengths::One(k))));
    }
    // In u128, so `i * n` cannot wrap.
    let bin = |i: usize| {
        let (i, n, m) = (i as u128, n as u128, m as u128);
        ((i * n / m) as usize, ((i + 1) * n).div_ceil(m) as usize)
    };
    let bins = try_collect(OP, m, (0..m).map(bin))?;
    let longest = bins.iter().map(|&(s, e)| e - s).max().unwrap_or(0);
    let mut widths = vec![(0, 0); x.rank() - axis];
    widths[0] = (0, 1);
    let padded = x.pad(&widths, PadMode::Constant(0.into()))?;
    let device = x.device();
    let taps = bins
        .iter()
        .flat_map(|&(s, e)| (s..s + longest).map(move |t| if t < e { t } else { n } as i64));
    let index = Tensor::from_vec(try_collect(OP, m * longest, taps)?, [m, longest], device)?;
    // From +0 as PyTorch's sums: a bin of -0.0 is +0.0.
    let sum = padded
        .take(&index, axis as isize)?
        .sum(axis as isize + 1)?
        .add_scalar(0.0)?;
    let mut shape = vec![1usize; x.rank()];
    shape[axis] = m;
    let widths = bins.iter().map(|&(s, e)| e - s);
    // In the compute type: an f32 count is inexact past 2^24.
    let counts = match x.dtype() {
        DType::F64 => {
            Tensor::from_vec(try_collect(OP, m, widths.map(|w| w as f64))?, shape, device)?
        }
        _ => Tensor::from_vec(try_collect(OP, m, widths.map(|w| w as f32))?, shape, device)?
            .to_dtype(x.dtype())?,
    };
    Ok((sum, Some(BinLengths::Each(counts))))
}

/// The lengths of an axis's bins in `adaptive_avg_pool2d`: one for all,
/// or one a bin (a tensor broadcasting against the sums).
enum BinLengths {
    One(usize),
    Each(Tensor),
}

impl BinLengths {
    /// `sum` divided by these lengths.
    fn divide(&self, sum: &Tensor) -> Result<Tensor> {
        match self {
            Self::One(k) => sum.div_scalar(*k as f64),
            Self::Each(lengths) => sum.div(lengths),
        }
    }
}
