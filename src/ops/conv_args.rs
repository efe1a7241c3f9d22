//! [`Conv`]: the arguments of a convolution, as PyTorch's keywords.

use super::Activation;
use super::windows::{Pair, per_axis, span};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The zeros before and after each spatial axis.
pub(super) type Pads = [(usize, usize); 2];

/// How a convolution pads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvPadding {
    /// Zeros before and after each spatial axis, this many.
    Zeros(Pair),
    /// Zeros so the output is as large as the input (stride 1 only;
    /// PyTorch's `"same"`: an odd total puts the extra zero after).
    Same,
}

/// The arguments of a convolution, PyTorch's defaults unless set: stride
/// 1, no padding, dilation 1, one group, no bias. One value sets both
/// spatial axes (`stride(2)`), a pair each (`stride([2, 1])`); a 1-D
/// convolution uses the second.
///
/// ```
/// use webtensor::{Conv, DType, Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let image = Tensor::ones([1, 1, 5, 5], DType::F32, &dev)?;
/// let blur = Tensor::full([1, 1, 3, 3], 1.0 / 9.0, DType::F32, &dev)?;
/// let out = image.conv2d(&blur, &Conv::new().padding(1))?;
/// assert_eq!(out.dims(), [1, 1, 5, 5]);
/// assert!((out.to_vec::<f32>()?[0] - 4.0 / 9.0).abs() < 1e-6); // a corner sees 4 of 9
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Conv<'a> {
    pub(super) stride: Pair,
    pub(super) padding: ConvPadding,
    pub(super) dilation: Pair,
    pub(super) groups: usize,
    pub(super) output_padding: Pair,
    pub(super) bias: Option<&'a Tensor>,
    pub(super) residual: Option<&'a Tensor>,
    /// Whether the residual's storage is the call's to write: set by
    /// [`Tensor::add_conv2d`] alone, which owns it.
    pub(super) residual_owned: bool,
    pub(super) activation: Option<Activation>,
}

impl Default for Conv<'_> {
    fn default() -> Self {
        Conv::new()
    }
}

impl<'a> Conv<'a> {
    /// Stride 1, no padding, dilation 1, one group, no bias.
    pub fn new() -> Conv<'a> {
        Conv {
            stride: Pair([1, 1]),
            padding: ConvPadding::Zeros(Pair([0, 0])),
            dilation: Pair([1, 1]),
            groups: 1,
            output_padding: Pair([0, 0]),
            bias: None,
            residual: None,
            residual_owned: false,
            activation: None,
        }
    }

    /// Output positions this many input positions apart.
    pub fn stride(mut self, stride: impl Into<Pair>) -> Conv<'a> {
        self.stride = stride.into();
        self
    }

    /// Zeros added before and after each spatial axis (for a transposed
    /// convolution: removed from each side of its output, as PyTorch's).
    pub fn padding(mut self, padding: impl Into<Pair>) -> Conv<'a> {
        self.padding = ConvPadding::Zeros(padding.into());
        self
    }

    /// PyTorch's `padding="same"`.
    pub fn same(mut self) -> Conv<'a> {
        self.padding = ConvPadding::Same;
        self
    }

    /// Kernel taps this many input positions apart.
    pub fn dilation(mut self, dilation: impl Into<Pair>) -> Conv<'a> {
        self.dilation = dilation.into();
        self
    }

    /// Input and output channels split into this many groups, each group's
    /// outputs computed from its inputs alone (channels = groups is a
    /// depthwise convolution).
    pub fn groups(mut self, groups: usize) -> Conv<'a> {
        self.groups = groups;
        self
    }

    /// A transposed convolution's extra output rows and columns at the
    /// end (less than the stride or the dilation).
    pub fn output_padding(mut self, output_padding: impl Into<Pair>) -> Conv<'a> {
        self.output_padding = output_padding.into();
        self
    }

    /// Added to each output channel: a 1-D tensor of one value per channel.
    pub fn bias(mut self, bias: &'a Tensor) -> Conv<'a> {
        self.bias = Some(bias);
        self
    }

    /// Added to the output after the bias and before the activation: a
    /// tensor that broadcasts to the output's shape, with no more axes
    /// than it (so at most 3 for an unbatched input's) (cuDNN's `z`, ONNX
    /// Runtime's fused Conv + Add: a residual block's skip connection, an
    /// FPN's upsampled coarser level), to the sums in f32 for f16 and bf16
    /// operands, which are rounded once after it and the activation (as
    /// the bias is, and as cuDNN's fused convolution adds its `z`; the
    /// `add` after an f16 convolution rounds twice), else in the output's
    /// dtype: bit for bit the `add` after the convolution. On the CPU a
    /// dense convolution's channels-last f32
    /// output (`Tensor::to_channels_last`) takes an f32 residual of its
    /// shape and memory order as each sum is stored, in registers, with no
    /// pass of its own; any other is added in place after, one pass over
    /// the output (on a 2-core Zen 5 VM, the planes' kernels adding it as
    /// they stored each sum ran a detector 2-3 ms slower: their planes
    /// read a tile's rows at a time stalled where one pass streams them).
    /// [`Tensor::add_conv2d`] takes the residual by value, and writes the
    /// output into its storage where it can.
    pub fn residual(mut self, residual: &'a Tensor) -> Conv<'a> {
        self.residual = Some(residual);
        self
    }

    /// Applied to each output after the bias: the convolution followed by
    /// [`Tensor::activate`]. The CPU's kernels apply it as they store each
    /// sum (no pass of its own; after a [`Conv::residual`] the kernel does
    /// not add, a pass after it), to the f32 sum before its one rounding,
    /// so an f16 or bf16 result can differ from the two calls' in its last
    /// bits; a GPU adds the bias to the rounded convolution and runs the
    /// activation after it, rounding each (a few ulps of the values added
    /// apart from the CPU's).
    pub fn activation(mut self, activation: Activation) -> Conv<'a> {
        self.activation = Some(activation);
        self
    }

    /// The padding before and after each axis for a kernel of `k` taps,
    /// and the elements it spans along each (`dilation (k - 1) + 1`).
    ///
    /// # Errors
    /// `Error::Argument` naming `op` for a span past `MAX_EXTENT`.
    pub(super) fn pads(&self, op: &'static str, k: [usize; 2]) -> Result<(Pads, [usize; 2])> {
        let extent = [
            span(op, 2, k[0], self.dilation.0[0])?,
            span(op, 3, k[1], self.dilation.0[1])?,
        ];
        let pads = match self.padding {
            ConvPadding::Zeros(Pair(p)) => [(p[0], p[0]), (p[1], p[1])],
            ConvPadding::Same => std::array::from_fn(|a| {
                let total = extent[a] - 1;
                (total / 2, total - total / 2)
            }),
        };
        Ok((pads, extent))
    }

    /// Checks what does not depend on the tensors.
    pub(super) fn check(&self, op: &'static str) -> Result<()> {
        if self.stride.0.contains(&0) || self.dilation.0.contains(&0) || self.groups == 0 {
            return Err(Error::argument(
                op,
                format!(
                    "stride {}, dilation {} and groups {} must be at least 1",
                    per_axis(op, self.stride.0),
                    per_axis(op, self.dilation.0),
                    self.groups
                ),
            ));
        }
        if self.padding == ConvPadding::Same && self.stride.0 != [1, 1] {
            return Err(Error::argument(
                op,
                format!(
                    "padding \"same\" needs stride 1, got {}",
                    per_axis(op, self.stride.0)
                ),
            ));
        }
        Ok(())
    }
}
