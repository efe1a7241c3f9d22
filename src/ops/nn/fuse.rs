//! `fuse_conv_bn_weights`: an inference batch norm folded into the
//! convolution before it, as PyTorch's `torch.nn.utils.fusion` and
//! onnxruntime's graph optimiser do, so that a conv-bn-activation layer
//! is one convolution (`Conv::bias` and `Conv::activation`).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// PyTorch's `fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv,
    /// bn_eps, bn_w, bn_b)`: this convolution weight `(C, ...)` and its
    /// bias (none: 0) with the batch norm after it folded in, as a new
    /// weight and bias: with `s = bn_weight / sqrt(running_var + eps)` per
    /// output channel (`bn_weight` none: 1, `bn_bias` none: 0), the weight
    /// is `w s` and the bias `(b - running_mean) s + bn_bias`. `conv2d` by
    /// them is `batch_norm` of `conv2d` by the originals, within rounding.
    /// Computed in f32 (f64 for f64), the weight returned in its dtype and
    /// the bias in the conv bias's (else the weight's, as PyTorch's).
    ///
    /// ```
    /// use webtensor::{Conv, Device, Tensor};
    /// let dev = Device::cpu();
    /// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [1, 1, 2, 2], &dev)?;
    /// let w = Tensor::from_slice(&[2.0f32, -1.0], [2, 1, 1, 1], &dev)?;
    /// let mean = Tensor::from_slice(&[1.0f32, 0.0], [2], &dev)?;
    /// let var = Tensor::from_slice(&[4.0f32, 1.0], [2], &dev)?;
    /// let (fw, fb) = w.fuse_conv_bn_weights(None, &mean, &var, 0.0, None, None)?;
    /// let fused = x.conv2d(&fw, &Conv::new().bias(&fb))?;
    /// let apart = x.conv2d(&w, &Conv::new())?.batch_norm(&mean, &var, None, None, 0.0)?;
    /// assert_eq!(fused.to_vec::<f32>()?, apart.to_vec::<f32>()?);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `fuse_conv_bn_weights` for a weight of rank
    /// below 2 or a bias, statistic or batch-norm parameter of a shape
    /// other than `(C,)`; `Error::DType` for a tensor that is not f32,
    /// f16, bf16 or f64; `Error::DeviceMismatch`.
    #[allow(clippy::too_many_arguments)]
    pub fn fuse_conv_bn_weights(
        &self,
        conv_bias: Option<&Tensor>,
        running_mean: &Tensor,
        running_var: &Tensor,
        eps: f64,
        bn_weight: Option<&Tensor>,
        bn_bias: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let bn = (running_mean, running_var, eps, bn_weight, bn_bias);
        self.fold_bn("fuse_conv_bn_weights", 0, conv_bias, bn)
    }

    /// [`Tensor::fuse_conv_bn_weights`] for a transposed convolution's
    /// weight `(C_in, C, ...)` of one group, whose output channels are its
    /// axis 1 (PyTorch's `fuse_conv_bn_weights(..., transpose=True)`):
    /// `conv_transpose2d` by the new weight and bias is `batch_norm` of
    /// `conv_transpose2d` by the originals, within rounding.
    ///
    /// # Errors
    /// As [`Tensor::fuse_conv_bn_weights`], naming
    /// `fuse_conv_transpose_bn_weights`, the channels `C` axis 1's.
    #[allow(clippy::too_many_arguments)]
    pub fn fuse_conv_transpose_bn_weights(
        &self,
        conv_bias: Option<&Tensor>,
        running_mean: &Tensor,
        running_var: &Tensor,
        eps: f64,
        bn_weight: Option<&Tensor>,
        bn_bias: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let bn = (running_mean, running_var, eps, bn_weight, bn_bias);
        self.fold_bn("fuse_conv_transpose_bn_weights", 1, conv_bias, bn)
    }

    /// The fold of both: this weight's output channels are its axis
    /// `axis`.
    #[allow(clippy::type_complexity)]
    fn fold_bn(
        &self,
        op: &'static str,
        axis: usize,
        conv_bias: Option<&Tensor>,
        (running_mean, running_var, eps, bn_weight, bn_bias): (
            &Tensor,
            &Tensor,
            f64,
            Option<&Tensor>,
            Option<&Tensor>,
        ),
    ) -> Result<(Tensor, Tensor)> {
        super::check_float(op, self.dtype())?;
        if self.rank() < 2 {
            return Err(Error::shape(
                op,
                format!(
                    "takes a convolution weight (C, C_in, ...), got {}",
                    self.shape()
                ),
            ));
        }
        let channels = self.dims()[axis];
        let params = [
            ("conv bias", conv_bias),
            ("running_mean", Some(running_mean)),
            ("running_var", Some(running_var)),
            ("batch norm weight", bn_weight),
            ("batch norm bias", bn_bias),
        ];
        super::check_per_channel(op, self, channels, &params)?;
        let compute = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let f = |t: &Tensor| t.to_dtype(compute);
        let mut scale = f(running_var)?.add_scalar(eps)?.rsqrt()?;
        if let Some(g) = bn_weight {
            scale = f(g)?.mul(&scale)?;
        }
        let mut per_channel = vec![1isize; self.rank()];
        per_channel[axis] = -1;
        let weight = f(self)?
            .mul(&scale.reshape(per_channel.as_slice())?)?
            .to_dtype(self.dtype())?;
        let shifted = match conv_bias {
            Some(b) => f(b)?.sub(&f(running_mean)?)?,
            None => f(running_mean)?.neg()?,
        };
        let mut bias = shifted.mul(&scale)?;
        if let Some(beta) = bn_bias {
            bias = bias.add(&f(beta)?)?;
        }
        let bias_dtype = conv_bias.map_or(self.dtype(), Tensor::dtype);
        Ok((weight, bias.to_dtype(bias_dtype)?))
    }
}
