//! Ops along one axis: cumulative sums and products (a scan kernel that
//! reads the input view through its strides) and softmax, log-softmax and
//! softmin (one kernel per call computing `exp(x - max)` over its sum, so the
//! exponentials never overflow; lines past `MAX_SOFTMAX_LINE` are composed
//! from a max, a shifted exp and a sum over the axis).

use super::binding_parts::for_each_part_across;
use crate::backend::{MAX_SOFTMAX_LINE, SCAN_PASS, ScanCall, SoftmaxCall, scan, softmax};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::normalize_axis;
use crate::op::ScanOp;
use crate::tensor::Tensor;

impl Tensor {
    /// Running sums along `axis` (NumPy's `cumsum`): element `i` is the sum
    /// of elements `0..=i`. The dtypes are those of [`Tensor::sum`]: bool
    /// counts into i32, u8 into u32, f16 accumulates in f32, integers wrap.
    ///
    /// A 0-d tensor is one line of one element (axis 0 or -1), as PyTorch
    /// takes it; the sum is 0-d.
    ///
    /// # Errors
    /// `Error::Axis` for an axis out of range; `Error::DType` for c64.
    pub fn cumsum(&self, axis: isize) -> Result<Tensor> {
        self.scan("cumsum", ScanOp::Sum, axis)
    }

    /// Running products along `axis` (NumPy's `cumprod`), with the dtypes
    /// of [`Tensor::cumsum`].
    ///
    /// # Errors
    /// As [`Tensor::cumsum`].
    pub fn cumprod(&self, axis: isize) -> Result<Tensor> {
        self.scan("cumprod", ScanOp::Prod, axis)
    }

    fn scan(&self, op_name: &'static str, op: ScanOp, axis: isize) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(op_name));
        }
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.scan(op_name, op, 0)) {
            return out;
        }
        let axis = normalize_axis(op_name, axis, self.rank())?;
        let t = self.widened()?;
        // f16 and bf16 accumulate in f32 within a pass of the GPU's scan; a
        // line of several passes or bindings would restart each from a
        // rounded output, so it runs in f32, rounded once at the end.
        let passes = self.dims()[axis] > SCAN_PASS || t.binding_cut().is_some();
        if t.dtype().is_half() && self.device().is_gpu() && passes {
            let wide = self
                .to_dtype(DType::F32)?
                .scan(op_name, op, axis as isize)?;
            return wide.to_dtype(self.dtype());
        }
        let out = Tensor::empty_dense(self.shape().clone(), t.dtype(), self.device(), op_name)?;
        // Both go to the kernels with the scanned axis last: free views.
        let last = self.rank() as isize - 1;
        let input = t.with_layout(t.layout().transpose(axis as isize, last)?);
        let dest = out.with_layout(out.layout().transpose(axis as isize, last)?);
        scan_in_parts(op, &input, &dest)?;
        Ok(out)
    }

    /// `exp(x) / sum(exp(x))` along `axis`, computed as `exp(x - max)` over
    /// its sum so that large inputs do not overflow. f16 is computed in f32
    /// and rounded once. A line holding +inf or only -inf gives NaN, as
    /// PyTorch. A 0-d tensor is one line of one element (axis 0 or -1), as
    /// PyTorch takes it.
    ///
    /// # Errors
    /// `Error::Axis`; `Error::DType` for a non-float tensor; on a GPU,
    /// `Error::TooLarge` and `Error::OutOfMemory` as [`Tensor::sum`]'s
    /// (a broadcast view of 2^47 elements and more).
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.softmax(0)) {
            return out;
        }
        super::as_op("softmax", || {
            let Some(axis) = self.softmax_axis("softmax", axis)? else {
                return self.contiguous_copy();
            };
            if let Some(out) = self.softmax_lines("softmax", axis, false, false)? {
                return Ok(out);
            }
            // Longer lines: one fresh tensor, updated in place from there on.
            let x = self.in_f32_or_wider()?;
            let e = x.sub(&x.max_keepdim(axis)?)?;
            e.exp_()?;
            e.div_(&e.sum_keepdim(axis)?)?;
            e.to_dtype(self.dtype())
        })
    }

    /// `log(softmax(x))` along `axis`, computed as `(x - max) -
    /// log(sum(exp(x - max)))`, finite wherever softmax underflows to 0.
    ///
    /// # Errors
    /// As [`Tensor::softmax`].
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.log_softmax(0)) {
            return out;
        }
        super::as_op("log_softmax", || {
            let Some(axis) = self.softmax_axis("log_softmax", axis)? else {
                return self.contiguous_copy();
            };
            if let Some(out) = self.softmax_lines("log_softmax", axis, true, false)? {
                return Ok(out);
            }
            let x = self.in_f32_or_wider()?;
            let shifted = x.sub(&x.max_keepdim(axis)?)?;
            let log_sum = shifted.exp()?.sum_keepdim(axis)?.log()?;
            shifted.sub_(&log_sum)?;
            shifted.to_dtype(self.dtype())
        })
    }

    /// PyTorch's `softmin`: [`Tensor::softmax`] of `-x` along `axis`, the
    /// largest weight on the smallest element; one kernel negating as it
    /// reads.
    ///
    /// # Errors
    /// As [`Tensor::softmax`], named `softmin`.
    pub fn softmin(&self, axis: isize) -> Result<Tensor> {
        if let Some(out) = super::on_scalar_line(self, axis, |t| t.softmin(0)) {
            return out;
        }
        super::as_op("softmin", || {
            let Some(axis) = self.softmax_axis("softmin", axis)? else {
                return self.contiguous_copy();
            };
            if let Some(out) = self.softmax_lines("softmin", axis, false, true)? {
                return Ok(out);
            }
            self.neg()?.softmax(axis)
        })
    }

    /// The softmax of every line along `axis` (a valid axis of a non-empty
    /// float tensor; of `-x` where `negate`) by one kernel: `None` for
    /// lines longer than one call takes or than half a storage binding,
    /// which the callers compose from reductions.
    fn softmax_lines(
        &self,
        op: &'static str,
        axis: isize,
        log: bool,
        negate: bool,
    ) -> Result<Option<Tensor>> {
        let length = self.dims()[axis as usize];
        if length > MAX_SOFTMAX_LINE {
            return Ok(None);
        }
        let out = Tensor::empty_dense(self.shape().clone(), self.dtype(), self.device(), op)?;
        let a = axis as usize;
        if !self.line_fits_binding(a) || !out.line_fits_binding(a) {
            return Ok(None);
        }
        // Both go to the kernel with the softmax axis last: free views. A
        // view over many storage bindings goes in parts across the lines.
        let last = self.rank() as isize - 1;
        let both = [self.clone(), out.clone()];
        for_each_part_across(&both, a, usize::MAX, &mut |part| {
            let [input, out] = part else {
                return Err(Error::internal(op, "a softmax part has two views"));
            };
            softmax(&SoftmaxCall {
                log,
                total: false,
                negate,
                input: input.kernel_ref(input.layout().transpose(axis, last)?)?,
                out: out.kernel_out(out.layout().transpose(axis, last)?)?,
            })
        })?;
        Ok(Some(out))
    }

    /// Checks a softmax's arguments: the resolved axis, or `None` for an
    /// empty tensor (whose result is an empty copy).
    fn softmax_axis(&self, op: &'static str, axis: isize) -> Result<Option<isize>> {
        let axis = normalize_axis(op, axis, self.rank())? as isize;
        if !self.dtype().is_float() {
            return Err(Error::dtype(
                op,
                format!(
                    "not defined for dtype {}; cast to a float dtype first",
                    self.dtype()
                ),
            ));
        }
        Ok((self.numel() > 0).then_some(axis))
    }

    /// This float tensor in the dtype a softmax computes in: f32 for f16
    /// and bf16.
    fn in_f32_or_wider(&self) -> Result<Tensor> {
        if self.dtype().is_half() {
            self.to_dtype(DType::F32)
        } else {
            Ok(self.clone())
        }
    }
}

/// Lines at least this long are scanned in blocks on a GPU (except f16 and
/// bf16).
const BLOCKED_SCAN_MIN: usize = 1 << 16;
/// Elements per block of a blocked scan.
const SCAN_BLOCK: usize = 4096;

/// Writes the running sums or products of each line of `input` (along its
/// last axis) into the same positions of `dest`.
///
/// A long line on a GPU is cut into blocks that scan side by side (one
/// workgroup each, where one line would take a single workgroup for all of
/// it): each block is scanned on its own, the blocks' totals are scanned
/// in turn (the same way, so any length works), and each block then
/// combines with the running total of the blocks before it. Integers give
/// the same values as a sequential scan (wrapping arithmetic is
/// associative); floats round in another order. f16 and bf16 keep the one-line
/// scan, whose running total stays in f32 within each slice.
///
/// # Errors
/// As [`scan`] and the in-place ops.
/// [`scan_lines`] over GPU views spanning more than one storage binding,
/// cut into parts that fit one (see `ops/binding_parts.rs`): parts across the
/// lines are scanned on their own; parts along the lines in order, each
/// then combined with the last value of the part before it.
fn scan_in_parts(op: ScanOp, input: &Tensor, dest: &Tensor) -> Result<()> {
    let Some(cut) = input.binding_cut().or_else(|| dest.binding_cut()) else {
        return scan_lines(op, input, dest);
    };
    let last = input.rank() - 1;
    let outs = dest.cut_parts(cut)?;
    for (k, (i, o)) in input.cut_parts(cut)?.iter().zip(&outs).enumerate() {
        scan_in_parts(op, i, o)?;
        if cut.axis == last && k > 0 {
            let before = &outs[k - 1];
            let carry = before.narrow(last as isize, before.dims()[last] - 1, 1)?;
            match op {
                ScanOp::Sum => o.add_(&carry)?,
                ScanOp::Prod => o.mul_(&carry)?,
            }
        }
    }
    Ok(())
}

fn scan_lines(op: ScanOp, input: &Tensor, dest: &Tensor) -> Result<()> {
    let length = input.dims().last().copied().unwrap_or(1);
    let blocked = input.device().is_gpu() && length >= BLOCKED_SCAN_MIN && !input.dtype().is_half();
    if !blocked {
        return scan(&ScanCall {
            op,
            input: input.kernel_ref(input.layout().clone())?,
            out: dest.kernel_out(dest.layout().clone())?,
        });
    }
    if input.rank() == crate::shape::MAX_RANK {
        // Blocks take an axis more than the lines: one entry of the first
        // axis at a time.
        let entry = |t: &Tensor, i: usize| t.narrow(0, i, 1)?.squeeze_axis(0);
        for i in 0..input.dims()[0] {
            scan_lines(op, &entry(input, i)?, &entry(dest, i)?)?;
        }
        return Ok(());
    }
    let blocks = length / SCAN_BLOCK;
    let main = blocks * SCAN_BLOCK;
    let tail = length - main;
    // 1. Every block on its own: [.., blocks, SCAN_BLOCK] views.
    let split = |t: &Tensor| -> Result<Tensor> {
        let line = t.narrow(-1, 0, main)?;
        line.split_axis("cumulative scan", line.rank() - 1, [blocks, SCAN_BLOCK])
    };
    let (blocks_in, blocks_out) = (split(input)?, split(dest)?);
    scan(&ScanCall {
        op,
        input: blocks_in.kernel_ref(blocks_in.layout().clone())?,
        out: blocks_out.kernel_out(blocks_out.layout().clone())?,
    })?;
    // 2. The running totals of the blocks: a scan of each block's last.
    let last = blocks_out.narrow(-1, SCAN_BLOCK - 1, 1)?;
    let totals = blocks_out.with_layout(last.layout().squeeze(Some(-1))?);
    let carry = Tensor::empty_dense(
        totals.shape().clone(),
        totals.dtype(),
        totals.device(),
        "cumulative scan",
    )?;
    scan_lines(op, &totals, &carry)?;
    // 3. Each block after the first, and the tail, with the total before it.
    let combine = |part: &Tensor, carry: &Tensor| match op {
        ScanOp::Sum => part.add_(carry),
        ScanOp::Prod => part.mul_(carry),
    };
    if blocks > 1 {
        let before = carry.narrow(-1, 0, blocks - 1)?.unsqueeze(-1)?;
        combine(&blocks_out.narrow(-2, 1, blocks - 1)?, &before)?;
    }
    if tail > 0 {
        let (tail_in, tail_out) = (input.narrow(-1, main, tail)?, dest.narrow(-1, main, tail)?);
        scan(&ScanCall {
            op,
            input: tail_in.kernel_ref(tail_in.layout().clone())?,
            out: tail_out.kernel_out(tail_out.layout().clone())?,
        })?;
        combine(&tail_out, &carry.narrow(-1, blocks - 1, 1)?)?;
    }
    Ok(())
}
