//! Convolutions, NCHW as PyTorch's: `conv1d`, `conv2d` and
//! `conv_transpose2d` with stride, padding (`same` too), dilation, groups
//! and bias, f32, f16 (computed and accumulated in f32) and f64 on the CPU.
//!
//! No im2col tensor is made. On a GPU a depthwise convolution (one input
//! channel per group) is one pass, its bias included
//! (`backend/gpu/conv/depthwise.rs`), and another is one implicit matrix
//! product (`backend/gpu/conv/`: the matmul's tiled kernel reading patch
//! elements from the input where they lie), but for outputs of a few
//! pixels. Otherwise each tap `(i, j)` of the kernel
//! reads the (padded) input through a strided view (`windows::window`) and
//! adds its share to the output in place:
//! - as a batched matrix product over the batch and output rows, the tap's
//!   `[out channels, in channels]` weights times the view's `[in channels,
//!   width]` rows, on the matmul kernels (any strides, read in place);
//! - for depthwise convolutions (one input channel per group) and few input
//!   channels, as a broadcast multiply-add per tap and channel, in the
//!   order the GPU's depthwise kernel adds them.
//!
//! A transposed convolution adds each tap's product into a strided view of
//! its output instead.
//!
//! On the CPU an f32, f16 or bf16 input whose channels lie side by side
//! in each pixel (channels-last memory, [`Tensor::to_channels_last`], and
//! its crops) gives a channels-last output from kernels of its own
//! (`backend/cpu/conv_nhwc.rs`, `depthwise_nhwc.rs`), bit for bit the NCHW
//! kernels' values; a GPU's outputs are row-major.

use super::conv_args::{Conv, ConvPadding};
use super::conv_disjoint::disjoint_transpose;
use super::conv_transpose_phases::{Transposed, on_kernel};
use super::windows::{
    MAX_EXTENT, Pair, batched, compute_dtype, dims_shown, kernel_axes, outputs, padded_len,
    per_axis, shape_shown, window,
};
use super::{Activation, PadMode};
use crate::backend::{ConvCall, ConvResidual, DepthwiseCall};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{Shape, mul_extents};
use crate::tensor::Tensor;

/// Input channels per group at most this many take the multiply-add path
/// (one op per tap and channel) instead of products.
const FEW_CHANNELS: usize = 4;

/// Output pixels per image from which a GPU convolution runs as one
/// implicit-GEMM kernel (a tile's columns are pixels).
const IMPLICIT_MIN_PIXELS: usize = 16;

impl Tensor {
    /// The 2-D convolution (cross-correlation, as in every deep-learning
    /// library) of this `[batch, in_channels, height, width]` input (or
    /// one without the batch axis) with `weight` `[out_channels,
    /// in_channels / groups, kh, kw]` (PyTorch's `conv2d`). The CPU's
    /// kernels, but the depthwise one, sum with fused multiply-adds, so a product past f32's range
    /// beside an infinite one of the other sign gives that infinity there,
    /// where a sum of rounded products (a GPU's, NumPy's) gives NaN.
    ///
    /// # Errors
    /// `Error::Shape` naming `conv2d` for ranks or channels that do not
    /// match, groups that do not divide the channels, or a kernel larger
    /// than the padded input; `Error::Argument` for a stride, dilation or
    /// group count of 0, `same` with a stride, or a padded extent or a
    /// kernel's reach past 2^31 - 1 (the kernels' index width), or an
    /// output padding (a transposed convolution's); `Error::DType` for an
    /// input or a weight that is not a float (floats of two dtypes promote:
    /// an f16 input under f32 weights gives f32, where PyTorch refuses);
    /// `Error::DeviceMismatch`.
    pub fn conv2d(&self, weight: &Tensor, conv: &Conv) -> Result<Tensor> {
        let _region = crate::profile_region::op("conv2d");
        convolve("conv2d", self, weight, conv)
    }

    /// The transposed 2-D convolution (the gradient of `conv2d` with
    /// respect to its input; PyTorch's `conv_transpose2d`) of this `[batch,
    /// in_channels, height, width]` input with `weight` `[in_channels,
    /// out_channels / groups, kh, kw]`: output rows `(h - 1) stride - 2
    /// padding + dilation (kh - 1) + output_padding + 1`. On a GPU an
    /// infinite or NaN weight also makes NaN the outputs its taps reach
    /// from past the input's edge (the kernel multiplies the edge's zeros
    /// by it, as a convolution multiplies its padding: PyTorch's dense and
    /// f64 ones do, its oneDNN f32 depthwise one does not); the CPU, as
    /// PyTorch's, adds only the input's own pixels there.
    ///
    /// # Errors
    /// As [`Tensor::conv2d`], naming `conv_transpose2d`; `Error::Argument`
    /// for `same` padding or an output padding not below the stride or
    /// dilation.
    pub fn conv_transpose2d(&self, weight: &Tensor, conv: &Conv) -> Result<Tensor> {
        let _region = crate::profile_region::op("conv_transpose2d");
        transpose_convolve("conv_transpose2d", self, weight, conv)
    }
}

/// Checks a convolution's operands: (input batched, whether to drop the
/// batch axis, compute dtype).
fn operands(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
) -> Result<(Tensor, bool, DType)> {
    conv.check(op)?;
    let (x, unbatched) = batched(op, x, 4, "[batch, channels, height, width]")?;
    unbatched_residual(op, conv, unbatched, 3)?;
    super::check_devices(op, &x, &[super::Arg::Tensor(weight)])?;
    if weight.rank() != 4 || weight.dims()[2] == 0 || weight.dims()[3] == 0 {
        return Err(Error::shape(
            op,
            format!(
                "the weight must be [out, in / groups, {}] with at least one tap, got shape {}",
                kernel_axes(op),
                shape_shown(op, weight)
            ),
        ));
    }
    // Each operand a float (an integer weight is the caller's slip, not a
    // promotion, as PyTorch refuses it); floats of two dtypes promote.
    for t in [&x, weight] {
        compute_dtype(op, t.dtype())?;
    }
    let compute = compute_dtype(op, Tensor::result_type(&x, weight)?)?;
    for t in [conv.bias, conv.residual].into_iter().flatten() {
        super::check_devices(op, &x, &[super::Arg::Tensor(t)])?;
        compute_dtype(op, t.dtype())?;
    }
    Ok((x, unbatched, compute))
}

/// Refuses a residual of more axes than an unbatched input's output
/// (`rank`): the result would keep its leading ones, as the convolution
/// followed by its `add` does, where the batch axis is dropped.
///
/// # Errors
/// `Error::Shape` naming `op` and the residual's shape.
pub(super) fn unbatched_residual(
    op: &'static str,
    conv: &Conv,
    unbatched: bool,
    rank: usize,
) -> Result<()> {
    match conv.residual {
        Some(r) if unbatched && r.rank() > rank => Err(Error::shape(
            op,
            format!(
                "a residual of shape {} has more axes than the unbatched input's output ({rank})",
                r.shape()
            ),
        )),
        _ => Ok(()),
    }
}

/// The result in the operands' dtype, with the bias and the residual
/// added, the activation applied and an unbatched input's batch dropped.
///
/// # Errors
/// `Error::Shape` naming `op` for a bias or a residual of a shape that
/// does not fit.
pub(super) fn finish(
    op: &'static str,
    out: Tensor,
    conv: &Conv,
    dtype: DType,
    unbatched: bool,
) -> Result<Tensor> {
    if let Some(bias) = checked_bias(op, conv, out.dims()[1])? {
        let o = out.dims()[1];
        // In the output's dtype: an f16 output takes an f32 bias too.
        let bias = bias.to_dtype(out.dtype())?;
        out.add_(&bias.reshape([1, o as isize, 1, 1])?)?;
    }
    if let Some(residual) = conv.residual {
        check_residual(op, residual, out.shape())?;
        out.add_(&residual.to_dtype(out.dtype())?)?;
    }
    let out = match conv.activation {
        Some(act) => out.activate(act)?,
        None => out,
    };
    let out = out.to_dtype(dtype)?;
    if unbatched {
        out.squeeze_axis(0)
    } else {
        Ok(out)
    }
}

/// Checks the bias and the residual against the (batched) output's `dims`
/// before any work is done.
///
/// # Errors
/// As [`finish`].
fn check_extras(op: &'static str, conv: &Conv, dims: [usize; 4]) -> Result<()> {
    checked_bias(op, conv, dims[1])?;
    match conv.residual {
        Some(residual) => check_residual(op, residual, &Shape::from(dims)),
        None => Ok(()),
    }
}

/// Checks that `residual` broadcasts to the output's shape `out`.
///
/// # Errors
/// `Error::Shape` naming `op` where it does not.
fn check_residual(op: &'static str, residual: &Tensor, out: &Shape) -> Result<()> {
    let fits = crate::shape::broadcast_shapes(out, residual.shape()).is_ok_and(|s| s == *out);
    if fits {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "a residual of shape {} does not broadcast to the output's {}",
            shape_shown(op, residual),
            dims_shown(op, out.dims())
        ),
    ))
}

/// The convolution's bias, checked to hold one value per output channel.
///
/// # Errors
/// `Error::Shape` naming `op` for another shape.
pub(super) fn checked_bias<'a>(
    op: &'static str,
    conv: &Conv<'a>,
    o: usize,
) -> Result<Option<&'a Tensor>> {
    match conv.bias {
        Some(bias) if bias.rank() != 1 || bias.dims()[0] != o => Err(Error::shape(
            op,
            format!(
                "the bias must be [{o}] (one per output channel), got shape {}",
                bias.shape()
            ),
        )),
        bias => Ok(bias),
    }
}

pub(super) fn convolve(
    op: &'static str,
    input: &Tensor,
    weight: &Tensor,
    conv: &Conv,
) -> Result<Tensor> {
    let (x, unbatched, compute) = operands(op, input, weight, conv)?;
    let dtype = Tensor::result_type(&x, weight)?;
    let [n, c, h, w] = dims4(&x);
    let [o, cg, kh, kw] = dims4(weight);
    let g = conv.groups;
    if conv.output_padding.0 != [0, 0] {
        return Err(Error::argument(
            op,
            format!(
                "output padding {} is a transposed convolution's",
                per_axis(op, conv.output_padding.0)
            ),
        ));
    }
    for (what, count) in [("input", c), ("output", o)] {
        if !count.is_multiple_of(g) {
            return Err(Error::shape(
                op,
                format!("{what} channels {count} do not divide into {g} groups"),
            ));
        }
    }
    if c / g != cg {
        return Err(Error::shape(
            op,
            format!(
                "input channels {c} and output channels {o} in {g} groups need a weight of \
                 [{o}, {}, {}], got shape {}",
                c / g.max(1),
                kernel_axes(op),
                shape_shown(op, weight)
            ),
        ));
    }
    if (h == 0 || w == 0) && n * c != 0 {
        // As PyTorch: padding would otherwise make outputs of nothing.
        return Err(Error::shape(
            op,
            format!(
                "an input of {} elements has no output (only an empty batch or no channels may have none)",
                per_axis(op, [h, w])
            ),
        ));
    }
    // Checked, as every index the kernels form fits in i32.
    let (pads, extent) = conv.pads(op, [kh, kw])?;
    let (s, d) = (conv.stride.0, conv.dilation.0);
    let padded = [
        padded_len(op, 2, h, pads[0])?,
        padded_len(op, 3, w, pads[1])?,
    ];
    let (Some(ho), Some(wo)) = (
        outputs(padded[0], extent[0], s[0], None),
        outputs(padded[1], extent[1], s[1], None),
    ) else {
        return Err(Error::shape(
            op,
            format!(
                "a kernel spanning {} is larger than the padded input {} (input {}, padding {})",
                per_axis(op, extent),
                per_axis(op, padded),
                per_axis(op, [h, w]),
                per_axis(op, pads)
            ),
        ));
    };
    // A depthwise convolution is one kernel on either device; the others
    // are one implicit-GEMM kernel on a GPU (but for outputs of a few
    // pixels, whose tiles would be mostly empty) and products over patches
    // on the CPU.
    check_extras(op, conv, [n, o, ho, wo])?;
    let geometry = Geometry {
        kernel: [kh, kw],
        out: [n, o, ho, wo],
        pad: [pads[0].0, pads[1].0],
    };
    if cg == 1
        && g > 1
        && let Some((out, activated)) = depthwise_kernel(op, &x, weight, conv, &geometry)?
    {
        let rest = Conv {
            bias: None,
            activation: conv.activation.filter(|_| !activated),
            ..conv.clone()
        };
        return finish(op, out, &rest, dtype, unbatched);
    }
    if !(cg == 1 && g > 1)
        && (ho * wo >= IMPLICIT_MIN_PIXELS || !x.device().is_gpu())
        && let Some(Gemm { out, on_cpu, added }) = implicit_gemm(op, &x, weight, conv, &geometry)?
    {
        // The CPU's kernel added the bias and applied a one-op activation
        // where there is no residual to add after it.
        let late = conv.residual.is_some() && !added;
        let rest = Conv {
            bias: conv.bias.filter(|_| !on_cpu),
            residual: conv.residual.filter(|_| !added),
            activation: conv
                .activation
                .filter(|a| !on_cpu || a.unary().is_none() || late),
            ..conv.clone()
        };
        return finish(op, out, &rest, dtype, unbatched);
    }
    let x = x.to_dtype(compute)?;
    let weight = weight.to_dtype(compute)?;
    let x = if pads.iter().any(|&(a, b)| a + b > 0) {
        x.pad(&pads, PadMode::Constant(0.into()))?
    } else {
        x
    };
    let out = Tensor::zeros([n, o, ho, wo], compute, x.device())?;
    // Outputs as [batch, rows, channels, columns]: what a tap's product is.
    let acc = out.permute(&[0, 2, 1, 3])?;
    let (og, oc) = (o / g, [ho, wo]);
    for i in 0..kh {
        for j in 0..kw {
            let taps = window(&x, [i * d[0], j * d[1]], oc, s);
            if cg == 1 {
                // One input channel per group: output channel k reads input
                // channel k / og. acc [n, ho, g, og, wo] += x [n, ho, g, 1, wo] * w [g, og].
                let acc5 = acc.split_axis(op, 2, [g, og])?;
                let xs = taps.permute(&[0, 2, 1, 3])?.unsqueeze(3)?;
                let wk = tap_weights(&weight, i, j)?.reshape([g as isize, og as isize, 1])?;
                acc5.add_(&xs.mul(&wk)?)?;
            } else if g == 1 && cg <= FEW_CHANNELS {
                let xs = taps.permute(&[0, 2, 1, 3])?;
                let wk = tap_weights(&weight, i, j)?;
                for ch in 0..cg {
                    let column = wk.narrow(1, ch, 1)?.reshape([o as isize, 1])?;
                    acc.add_(&xs.narrow(2, ch, 1)?.mul(&column)?)?;
                }
            } else {
                for gi in 0..g {
                    let xs = taps.narrow(1, gi * cg, cg)?.permute(&[0, 2, 1, 3])?;
                    let wk = tap_weights(&weight.narrow(0, gi * og, og)?, i, j)?;
                    acc.narrow(2, gi * og, og)?.add_(&wk.matmul(&xs)?)?;
                }
            }
        }
    }
    finish(op, out, conv, dtype, unbatched)
}

/// A transposed convolution of a 4-D input (`conv_transpose2d`, and
/// `conv_transpose1d` with a height of one), errors naming `op`.
pub(super) fn transpose_convolve(
    name: &'static str,
    input: &Tensor,
    weight: &Tensor,
    conv: &Conv,
) -> Result<Tensor> {
    // Before the operands' checks, which would refuse `same` with a
    // stride as though it took one without.
    let ConvPadding::Zeros(Pair(p)) = conv.padding else {
        return Err(Error::argument(
            name,
            "padding \"same\" is not defined for a transposed convolution",
        ));
    };
    let (x, unbatched, compute) = operands(name, input, weight, conv)?;
    let dtype = Tensor::result_type(&x, weight)?;
    let [n, c, h, w] = dims4(&x);
    let [ci, og, kh, kw] = dims4(weight);
    let g = conv.groups;
    if !c.is_multiple_of(g) {
        return Err(Error::shape(
            name,
            format!("input channels {c} do not divide into {g} groups"),
        ));
    }
    if ci != c {
        return Err(Error::shape(
            name,
            format!(
                "input channels {c} in {g} groups need a weight of [{c}, out / {g}, {}], got shape {}",
                kernel_axes(name),
                shape_shown(name, weight)
            ),
        ));
    }
    // The output's channels (zero input channels divide into any number
    // of groups: the product wrapped to 0).
    let o = mul_extents(name, og, g)?;
    let (s, d, op) = (conv.stride.0, conv.dilation.0, conv.output_padding.0);
    if (0..2).any(|a| op[a] >= s[a].max(d[a])) {
        return Err(Error::argument(
            name,
            format!(
                "output padding {} must be below the stride {} or the dilation {}",
                per_axis(name, op),
                per_axis(name, s),
                per_axis(name, d)
            ),
        ));
    }
    if h == 0 || w == 0 {
        // An empty batch has PyTorch's output shape, from the formula in
        // signed arithmetic, where that is not negative.
        let (_, extent) = conv.pads(name, [kh, kw])?;
        let rows = [0, 1].map(|a| {
            ([h, w][a] as i128 - 1) * s[a] as i128 - 2 * p[a] as i128
                + extent[a] as i128
                + op[a] as i128
        });
        if n == 0 && rows.iter().all(|&r| (0..=MAX_EXTENT as i128).contains(&r)) {
            let dims = [0, o, rows[0] as usize, rows[1] as usize];
            let out = Tensor::zeros(dims, compute, x.device())?;
            return finish(name, out, conv, dtype, unbatched);
        }
        return Err(Error::shape(
            name,
            format!(
                "an input of {} elements has no output",
                per_axis(name, [h, w])
            ),
        ));
    }
    // The whole output before `padding` is cropped from each side, checked
    // (its indices fit in i32 as the input's do).
    let (_, extent) = conv.pads(name, [kh, kw])?;
    let full = [0, 1].map(|a| {
        [h, w][a]
            .checked_sub(1)
            .and_then(|v| v.checked_mul(s[a]))
            .and_then(|v| v.checked_add(extent[a]))
            .and_then(|v| v.checked_add(op[a]))
            .filter(|&v| v <= MAX_EXTENT)
    });
    let [Some(full_h), Some(full_w)] = full else {
        return Err(Error::argument(
            name,
            format!(
                "stride {} and dilation {} make the output of a {} input longer than \
                 {MAX_EXTENT} along an axis",
                per_axis(name, s),
                per_axis(name, d),
                per_axis(name, [h, w])
            ),
        ));
    };
    let full = [full_h, full_w];
    if (0..2).any(|a| p[a].checked_mul(2).is_none_or(|t| t >= full[a])) {
        return Err(Error::shape(
            name,
            format!(
                "padding {} leaves no output of the {} a {} input gives",
                per_axis(name, p),
                per_axis(name, full),
                per_axis(name, [h, w])
            ),
        ));
    }
    let cg = c / g;
    let size = [full[0] - 2 * p[0], full[1] - 2 * p[1]];
    check_extras(name, conv, [n, o, size[0], size[1]])?;
    // On a GPU, one kernel over the output's phases.
    let geometry = Transposed {
        kernel: [kh, kw],
        stride: s,
        dilation: d,
        pad: p,
        out: [n, o, size[0], size[1]],
    };
    if let Some(out) = on_kernel(name, &x, weight, conv, &geometry)? {
        return finish(name, out, conv, dtype, unbatched);
    }
    if s == [kh, kw] && d == [1, 1] && p == [0, 0] && op == [0, 0] {
        return disjoint_transpose(name, &x, weight, conv, unbatched);
    }
    let x = x.to_dtype(compute)?;
    let weight = weight.to_dtype(compute)?;
    if x.device().is_cpu() && compute == DType::F32 {
        // One product per image and group and a scatter of its columns.
        let out = Tensor::zeros([n, o, size[0], size[1]], compute, x.device())?;
        let weight = weight.contiguous()?;
        crate::backend::conv_transpose(&ConvCall {
            input: x.kernel_ref(x.layout().clone())?,
            weight: weight.kernel_ref(weight.layout().clone())?,
            out: out.kernel_out(out.layout().clone())?,
            kernel: [kh, kw],
            stride: s,
            pad: p,
            dilation: d,
            groups: g,
            bias: None,
            activation: None,
            residual: None,
        })?;
        return finish(name, out, conv, dtype, unbatched);
    }
    let whole = Tensor::zeros([n, o, full[0], full[1]], compute, x.device())?;
    for i in 0..kh {
        for j in 0..kw {
            // Input (y, x) times tap (i, j) lands on (y s + i d, x s + j d).
            let target = window(&whole, [i * d[0], j * d[1]], [h, w], s).permute(&[0, 2, 1, 3])?;
            for gi in 0..g {
                let xs = x.narrow(1, gi * cg, cg)?.permute(&[0, 2, 1, 3])?;
                let wk = tap_weights(&weight.narrow(0, gi * cg, cg)?, i, j)?.t();
                target.narrow(2, gi * og, og)?.add_(&wk.matmul(&xs)?)?;
            }
        }
    }
    let out = whole
        .narrow(2, p[0], size[0])?
        .narrow(3, p[1], size[1])?
        .contiguous()?;
    finish(name, out, conv, dtype, unbatched)
}

/// What the implicit-GEMM kernel needs besides its operands: the kernel's
/// extents, the output's, and the zeros before each spatial axis.
struct Geometry {
    kernel: [usize; 2],
    out: [usize; 4],
    pad: [usize; 2],
}

/// Whether a GPU's kernel cuts a product over `k` patch rows of `x` into
/// slices, each after the first adding to the output, which then holds
/// the partial sums.
pub(super) fn sliced(x: &Tensor, k: usize) -> bool {
    x.device().is_gpu() && k > crate::backend::K_SLICE
}

/// The convolution of `x` by `weight` on the GPU's implicit-GEMM kernel
/// or the CPU's packed products over patches, in f32, f16 or bf16
/// (accumulating in f32; f32 with a bias), as a [`Gemm`]: `None` where
/// the kernel does not take it (other dtypes, operands over one storage
/// binding, a kernel its self-check dropped), which the caller composes
/// from products instead.
fn implicit_gemm(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
    geometry: &Geometry,
) -> Result<Option<Gemm>> {
    let dtype = match Tensor::result_type(x, weight)? {
        // A bias and a residual are added to the f32 result before its one
        // rounding (an f16 result plus an f16 bias rounds twice); a GPU's
        // slices of k past the first add to an f32 output too.
        DType::F16 | DType::BF16
            if conv.bias.is_some()
                || conv.residual.is_some()
                || sliced(x, weight.dims()[1..].iter().product()) =>
        {
            DType::F32
        }
        d @ (DType::F16 | DType::BF16 | DType::F32) => d,
        _ => return Ok(None),
    };
    let input = x;
    let x = x.to_dtype(dtype)?;
    // The CPU's kernels read the weight through its strides and keep its
    // packed panels with its storage: a channels-last or flipped weight is
    // not copied (and packed again) for each call. The GPU's read it dense.
    let on_cpu = x.device().is_cpu();
    let weight = dense_off_cpu(weight.to_dtype(dtype)?)?;
    // The CPU's kernel adds the bias and applies the activation.
    let bias = match checked_bias(op, conv, geometry.out[1])? {
        Some(b) if on_cpu => Some(b.to_dtype(DType::F32)?.contiguous()?),
        _ => None,
    };
    // A residual handed over (`Tensor::add_conv2d`) whose storage is what
    // the channels-last f32 kernels would write, dense, is the output:
    // each sum is added to the value it replaces (ONNX Runtime's Conv +
    // Add into the Add's input; no fresh output to allocate and fill).
    // The input's channels side by side in each pixel, as a fresh output
    // is then channels-last (`fresh_output`); and the residual's storage
    // on the input's threads, which the kernel runs on and the output
    // keeps.
    let donated = conv.residual.filter(|r| {
        conv.residual_owned
            && on_cpu
            && dtype == DType::F32
            && r.dtype() == DType::F32
            && r.dims() == geometry.out
            && input.layout().has_channels_innermost()
            && crate::backend::cpu::channels_last_out(r.layout(), x.layout())
            && r.owns_all_of_storage()
            && r.on_threads_of(input)
    });
    let out = match donated {
        Some(r) => r.clone(),
        None => fresh_output(op, input, geometry.out, dtype)?,
    };
    if [&x, &weight, &out]
        .iter()
        .any(|t| t.binding_cut().is_some())
    {
        return Ok(None);
    }
    // The CPU's channels-last f32 kernels add a residual of the output's
    // dims and memory order as they store each sum, before the activation
    // (in registers; the planes' kernels adding it a tile's rows at a time
    // ran the detector 2-3 ms slower than one pass after them); any other
    // is the caller's to add, and the activation after it. A residual
    // handed over is the output's values: added by the kernel.
    let residual = donated.or(conv.residual.filter(|r| {
        on_cpu
            && crate::backend::cpu::channels_last_out(out.layout(), x.layout())
            && dtype == DType::F32
            && r.dtype() == DType::F32
            && r.dims() == out.dims()
            && r.strides() == out.strides()
            && r.binding_cut().is_none()
    }));
    let late = conv.residual.is_some() && residual.is_none();
    let recorded = crate::backend::conv(&ConvCall {
        input: x.kernel_ref(x.layout().clone())?,
        weight: weight.kernel_ref(weight.layout().clone())?,
        out: out.kernel_out(out.layout().clone())?,
        kernel: geometry.kernel,
        stride: conv.stride.0,
        pad: geometry.pad,
        dilation: conv.dilation.0,
        groups: conv.groups,
        bias: match &bias {
            Some(b) => Some(b.kernel_ref(b.layout().clone())?),
            None => None,
        },
        activation: conv
            .activation
            .and_then(Activation::unary)
            .filter(|_| on_cpu && !late),
        residual: match (donated, residual) {
            (Some(_), _) => Some(ConvResidual::InOutput),
            (None, Some(r)) => Some(ConvResidual::Tensor(r.kernel_ref(r.layout().clone())?)),
            (None, None) => None,
        },
    })?;
    Ok(recorded.then_some(Gemm {
        out,
        on_cpu,
        added: residual.is_some(),
    }))
}

/// The implicit-GEMM kernel's output, whether it ran on the CPU (whose
/// kernel adds the bias and applies a one-op activation as it stores each
/// sum), and whether it added the call's residual.
struct Gemm {
    out: Tensor,
    on_cpu: bool,
    added: bool,
}

/// The depthwise convolution of `x` by `weight` (one input channel per
/// group) on the device's one-pass kernel, its bias added before the one
/// rounding, and whether it applied the activation (the CPU's kernel
/// applies a one-op activation as it stores, where no residual is to be
/// added first): `None` where the kernel does not take it (dtypes other
/// than f32, f16 and bf16, operands over one storage binding), which the
/// caller composes instead.
fn depthwise_kernel(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    conv: &Conv,
    geometry: &Geometry,
) -> Result<Option<(Tensor, bool)>> {
    // A residual is added to the f32 sums before their one rounding.
    let dtype = match Tensor::result_type(x, weight)? {
        DType::F16 | DType::BF16 if conv.residual.is_some() => DType::F32,
        d => d,
    };
    // Past the loop budget a GPU thread's taps are composed.
    let taps = geometry.kernel[0].saturating_mul(geometry.kernel[1]);
    let looped = x.device().is_gpu() && taps > crate::backend::WINDOW_TAPS;
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) || looped {
        return Ok(None);
    }
    let bias = match checked_bias(op, conv, geometry.out[1])? {
        Some(b) => Some(b.to_dtype(DType::F32)?.contiguous()?),
        None => None,
    };
    let input = x;
    let x = x.to_dtype(dtype)?;
    let weight = dense_off_cpu(weight.to_dtype(dtype)?)?;
    let out = fresh_output(op, input, geometry.out, dtype)?;
    if [&x, &weight, &out]
        .iter()
        .any(|t| t.binding_cut().is_some())
    {
        return Ok(None);
    }
    // A residual (added after the kernel) keeps the activation waiting.
    let activation = conv
        .activation
        .and_then(Activation::unary)
        .filter(|_| x.device().is_cpu() && conv.residual.is_none());
    crate::backend::depthwise(&DepthwiseCall {
        input: x.kernel_ref(x.layout().clone())?,
        weight: weight.kernel_ref(weight.layout().clone())?,
        bias: match &bias {
            Some(b) => Some(b.kernel_ref(b.layout().clone())?),
            None => None,
        },
        out: out.kernel_out(out.layout().clone())?,
        kernel: geometry.kernel,
        stride: conv.stride.0,
        pad: geometry.pad,
        dilation: conv.dilation.0,
        activation,
    })?;
    Ok(Some((out, activation.is_some())))
}

/// `weight` as it is on the CPU, whose kernels read a weight through its
/// strides; dense elsewhere.
fn dense_off_cpu(weight: Tensor) -> Result<Tensor> {
    if weight.device().is_cpu() {
        Ok(weight)
    } else {
        weight.contiguous()
    }
}

/// A convolution kernel's fresh `[n, o, ho, wo]` output of `dtype`:
/// channels-last on the CPU where the input's channels lie side by side
/// in each pixel (channels-last memory, its crops, channel slices and
/// flips: the CPU's kernels then read and write whole pixels), row-major
/// otherwise.
fn fresh_output(op: &'static str, input: &Tensor, out: [usize; 4], dtype: DType) -> Result<Tensor> {
    let dev = input.device();
    if dev.is_cpu() && input.layout().has_channels_innermost() {
        let [n, o, ho, wo] = out;
        return Tensor::empty_dense(Shape::from([n, ho, wo, o]), dtype, dev, op)?
            .permute(&[0, 3, 1, 2]);
    }
    Tensor::empty_dense(Shape::from(out.to_vec()), dtype, dev, op)
}

/// The four extents of a rank-4 tensor.
pub(super) fn dims4(t: &Tensor) -> [usize; 4] {
    let d = t.dims();
    [d[0], d[1], d[2], d[3]]
}

/// The `[out, in]` weights of tap `(i, j)` of a `[out, in, kh, kw]` kernel
/// (a view).
fn tap_weights(weight: &Tensor, i: usize, j: usize) -> Result<Tensor> {
    weight
        .narrow(2, i, 1)?
        .narrow(3, j, 1)?
        .squeeze_axis(3)?
        .squeeze_axis(2)
}
