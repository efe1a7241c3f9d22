//! `layer_norm` and `rms_norm` over a tensor's trailing axes, and
//! `group_norm` over groups of channels, as PyTorch's functional forms. A
//! GPU runs each as one kernel (`backend::gpu::norm`: a workgroup per line
//! of the flattened trailing axes or (sample, group) pair, statistics in
//! f32), or two for few long lines split over workgroups (statistics of
//! chunks, then the lines combined and applied); the CPU, and a GPU for
//! lines over its limits, compose them from a
//! mean, a centred mean of squares and elementwise ops, in the same order
//! of roundings.

use crate::backend::{MAX_SOFTMAX_LINE, NormCall, norm};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, check_devices};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Which normalisation, and its arguments.
struct Norm<'a> {
    op: &'static str,
    rms: bool,
    /// The trailing axes normalised over (layer and RMS), or the channels
    /// (group): the shape of the weight and bias.
    shape: &'a [usize],
    /// A group normalisation's groups.
    groups: Option<usize>,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
    eps: f64,
}

/// The lines a normalisation runs over, and how its weight and bias map
/// onto them.
struct Lines {
    /// The input viewed as lines along its last axis.
    lines: Tensor,
    length: usize,
    /// `NormCall::channels`: `(groups, span)` for a group normalisation.
    channels: Option<(usize, usize)>,
}

impl Tensor {
    /// PyTorch's `layer_norm(x, normalized_shape, weight, bias, eps)`: over
    /// the trailing axes, which must be `normalized_shape`, `(x - mean) /
    /// sqrt(var + eps)` with the biased variance (the mean squared
    /// deviation), times `weight` and plus `bias` (each of shape
    /// `normalized_shape`) where given. f16 and bf16 compute in f32 and
    /// round once; PyTorch's usual `eps` is `1e-5`.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::cpu())?;
    /// let y = x.layer_norm(&[2], None, None, 0.0)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![-1.0, 1.0, -1.0, 1.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `layer_norm` for an empty `normalized_shape`,
    /// trailing axes other than it, or a weight or bias of another shape;
    /// `Error::DType` for a tensor, weight or bias that is not f32, f16,
    /// bf16 or f64; `Error::DeviceMismatch`.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        self.normalized(&Norm {
            op: "layer_norm",
            rms: false,
            shape: normalized_shape,
            groups: None,
            weight,
            bias,
            eps,
        })
        .map_err(|e| e.named("layer_norm"))
    }

    /// PyTorch's `rms_norm(x, normalized_shape, weight, eps)`: over the
    /// trailing axes, which must be `normalized_shape`,
    /// `x / sqrt(mean(x^2) + eps)`, times `weight` (of shape
    /// `normalized_shape`) where given.
    /// `eps` defaults, as PyTorch's, to the machine epsilon of the dtype
    /// it computes in: f32's (`2^-23`) for f32, f16 and bf16, f64's for
    /// f64. f16 and bf16 compute in f32 and round once.
    ///
    /// # Errors
    /// As [`Tensor::layer_norm`], naming `rms_norm`.
    pub fn rms_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Result<Tensor> {
        let machine = match self.dtype() {
            DType::F64 => f64::EPSILON,
            _ => f32::EPSILON as f64,
        };
        self.normalized(&Norm {
            op: "rms_norm",
            rms: true,
            shape: normalized_shape,
            groups: None,
            weight,
            bias: None,
            eps: eps.unwrap_or(machine),
        })
        .map_err(|e| e.named("rms_norm"))
    }

    /// PyTorch's `group_norm(x, num_groups, weight, bias, eps)`: `x` of
    /// shape `(N, C, *)` has its `C` channels split into `num_groups`
    /// groups of consecutive channels, and each (sample, group) pair is
    /// normalised over its channels and trailing axes as
    /// [`Tensor::layer_norm`] normalises a line; then channel `c` is
    /// multiplied by `weight[c]` and `bias[c]` added (each of shape `(C,)`)
    /// where given. f16 and bf16 compute in f32 and round once; PyTorch's
    /// usual `eps` is `1e-5`.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let x = Tensor::from_slice(&[1.0f32, 3.0, 10.0, 30.0], [1, 4], &Device::cpu())?;
    /// let y = x.group_norm(2, None, None, 0.0)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![-1.0, 1.0, -1.0, 1.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `group_norm` for a tensor of rank below 2, a
    /// channel count `num_groups` (0 included) does not divide, or a weight
    /// or bias of a shape other than `(C,)` (a tensor with no elements,
    /// no channels or no pixels included, normalises to an empty tensor, as
    /// in PyTorch); `Error::DType` and
    /// `Error::DeviceMismatch` as [`Tensor::layer_norm`].
    pub fn group_norm(
        &self,
        num_groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let op = "group_norm";
        if self.rank() < 2 {
            return Err(Error::shape(
                op,
                format!("takes a tensor of shape (N, C, *), got {}", self.shape()),
            ));
        }
        // No channels (which any count of groups divides) or no pixels
        // are an empty output, as PyTorch's.
        let channels = self.dims()[1];
        if num_groups == 0 || !channels.is_multiple_of(num_groups) {
            return Err(Error::shape(
                op,
                format!("{num_groups} groups do not divide the {channels} channels"),
            ));
        }
        self.normalized(&Norm {
            op,
            rms: false,
            shape: &self.dims()[1..2],
            groups: Some(num_groups),
            weight,
            bias,
            eps,
        })
        .map_err(|e| e.named(op))
    }

    fn normalized(&self, n: &Norm) -> Result<Tensor> {
        let op = n.op;
        let _region = crate::profile_region::op(op);
        super::check_float(op, self.dtype())?;
        let r = self.rank();
        let k = n.shape.len();
        let trailing = k > 0 && k <= r && self.dims()[r - k..] == *n.shape;
        if n.groups.is_none() && !trailing {
            return Err(Error::shape(
                op,
                format!(
                    "normalized_shape {:?} must be the trailing axes of the input, of shape {}",
                    n.shape,
                    self.shape()
                ),
            ));
        }
        for (what, t) in [("weight", n.weight), ("bias", n.bias)] {
            let Some(t) = t else { continue };
            check_devices(op, self, &[Arg::Tensor(t)])?;
            if t.dims() != n.shape {
                return Err(Error::shape(
                    op,
                    format!(
                        "the {what} must have shape {:?}, got {}",
                        n.shape,
                        t.shape()
                    ),
                ));
            }
            if !super::is_float(t.dtype()) {
                return Err(Error::dtype(op, format!("a {what} of dtype {}", t.dtype())));
            }
        }
        if self.numel() == 0 {
            return self.contiguous_copy();
        }
        let lines = self.lines_of(n)?;
        let out = match lines.lines.normalized_in_one_pass(n, &lines)? {
            Some(out) => out,
            None => lines.lines.normalized_composed(n, &lines)?,
        };
        out.reshape(self.shape().clone())
    }

    /// This tensor (not empty) as the lines `n` normalises.
    fn lines_of(&self, n: &Norm) -> Result<Lines> {
        let dims = self.dims();
        let (lead, length, channels) = match n.groups {
            // (N, C, *) as (N, groups, C / groups x the trailing extents).
            Some(groups) => {
                let span: usize = dims[2..].iter().product();
                let length = dims[1] / groups * span;
                (vec![dims[0], groups], length, Some((groups, span)))
            }
            None => {
                let lead = dims[..self.rank() - n.shape.len()].to_vec();
                (lead, n.shape.iter().product(), None)
            }
        };
        let mut shape = lead;
        shape.push(length);
        Ok(Lines {
            lines: self.reshape(Shape::from(shape))?,
            length,
            channels,
        })
    }

    /// On a GPU, the normalisation of these lines (the last axis) in one
    /// pass over them (one kernel, or two for a split; see the module):
    /// `None` where the op layer composes it instead (the CPU, f64,
    /// lines longer than the kernel walks, views over one binding).
    fn normalized_in_one_pass(&self, n: &Norm, lines: &Lines) -> Result<Option<Tensor>> {
        let length = lines.length;
        let kernel_dtype = matches!(self.dtype(), DType::F32 | DType::F16 | DType::BF16);
        let last = self.rank() - 1;
        if !self.device().is_gpu()
            || !kernel_dtype
            || length > MAX_SOFTMAX_LINE
            || self.binding_cut().is_some()
        {
            return Ok(None);
        }
        let out = Tensor::empty_dense(self.shape().clone(), self.dtype(), self.device(), n.op)?;
        if out.binding_cut().is_some() || !self.line_fits_binding(last) {
            return Ok(None);
        }
        let entries: usize = n.shape.iter().product();
        let affine = |t: Option<&Tensor>| -> Result<Option<Tensor>> {
            t.map(|t| t.to_dtype(DType::F32)?.contiguous()?.reshape([entries]))
                .transpose()
        };
        let (weight, bias) = (affine(n.weight)?, affine(n.bias)?);
        let weight = match &weight {
            Some(t) => Some(t.kernel_ref(t.layout().clone())?),
            None => None,
        };
        let bias = match &bias {
            Some(t) => Some(t.kernel_ref(t.layout().clone())?),
            None => None,
        };
        norm(&NormCall {
            rms: n.rms,
            eps: n.eps as f32,
            input: self.kernel_ref(self.layout().clone())?,
            weight,
            bias,
            channels: lines.channels,
            out: out.kernel_out(out.layout().clone())?,
        })?;
        Ok(Some(out))
    }

    /// The normalisation of these lines (the last axis) composed of
    /// reductions and elementwise ops, in f32 for f16 and bf16.
    fn normalized_composed(&self, n: &Norm, lines: &Lines) -> Result<Tensor> {
        let compute = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let x = self.to_dtype(compute)?;
        let (centred, spread) = if n.rms {
            let squares = x.square()?.mean_keepdim(-1)?;
            (x, squares)
        } else {
            // Centred twice: the deviations from a mean summed inexactly
            // (integers over a large offset) are off by that mean's error,
            // which their own mean, summed from small values, corrects.
            let first = x.sub(&x.mean_keepdim(-1)?)?;
            let centred = first.sub(&first.mean_keepdim(-1)?)?;
            let spread = centred.square()?.mean_keepdim(-1)?;
            (centred, spread)
        };
        let scale = spread.add_scalar(n.eps)?.sqrt()?.recip()?;
        let mut y = centred.mul(&scale)?;
        // The weight and bias over the line's elements, or (a group
        // normalisation's) over (sample, channel, the channel's span).
        let (y_shape, affine_shape) = match lines.channels {
            Some((groups, span)) => {
                let channels = lines.length / span * groups;
                let samples = y.numel() / (channels * span);
                (vec![samples, channels, span], vec![channels, 1])
            }
            None => (y.dims().to_vec(), vec![lines.length]),
        };
        y = y.reshape(y_shape)?;
        let affine = |t: &Tensor| t.to_dtype(compute)?.reshape(affine_shape.clone());
        if let Some(w) = n.weight {
            y = y.mul(&affine(w)?)?;
        }
        if let Some(b) = n.bias {
            y = y.add(&affine(b)?)?;
        }
        y.to_dtype(self.dtype())
    }
}
