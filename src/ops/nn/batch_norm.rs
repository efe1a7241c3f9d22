//! `batch_norm` in inference, as PyTorch's functional form with
//! `training=False`: each channel normalised by its running statistics.
//! On a GPU the op is one elementwise chain over the input's shape whose
//! per-channel operands are broadcast views (no per-channel tensor is
//! computed first), so with fusion on it runs as one kernel reading the
//! input once. The CPU computes each channel's scale and shift first and
//! then one pass, as PyTorch's CPU kernel. The two forms round
//! differently: by an ulp or so of `x * scale`, which is the result's own
//! size unless the mean is large beside the deviation; there the CPU's
//! form (as PyTorch's) loses the digits `x * scale + shift` cancels. An
//! infinite scale (a variance and `eps` of 0, an infinite weight) gives
//! NaN where the shift is `inf - inf` on the CPU, as on PyTorch's CPU, and
//! infinities of the deviation's sign on a GPU, as PyTorch's CUDA kernel.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// PyTorch's `batch_norm(x, running_mean, running_var, weight, bias,
    /// training=False, eps=eps)`: `x` of shape `(N, C, *)` has each channel
    /// `c` normalised by the given statistics, `(x - running_mean[c]) /
    /// sqrt(running_var[c] + eps)`, then multiplied by `weight[c]` and
    /// `bias[c]` added where given (every one of shape `(C,)`). The
    /// statistics are read, never updated (inference; training-mode batch
    /// statistics are `mean` and `var` over the other axes). f16 and bf16
    /// compute in f32 and round once; PyTorch's usual `eps` is `1e-5`.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// let dev = Device::cpu();
    /// let x = Tensor::from_slice(&[1.0f32, 7.0, 3.0, 9.0], [2, 2], &dev)?;
    /// let mean = Tensor::from_slice(&[2.0f32, 8.0], [2], &dev)?;
    /// let var = Tensor::from_slice(&[1.0f32, 4.0], [2], &dev)?;
    /// let y = x.batch_norm(&mean, &var, None, None, 0.0)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![-1.0, -0.5, 1.0, 0.5]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `batch_norm` for a tensor of rank below 2 or a
    /// statistic, weight or bias of a shape other than `(C,)`;
    /// `Error::DType` for a tensor or parameter that is not f32, f16, bf16
    /// or f64; `Error::DeviceMismatch`.
    pub fn batch_norm(
        &self,
        running_mean: &Tensor,
        running_var: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let op = "batch_norm";
        let _region = crate::profile_region::op(op);
        super::check_float(op, self.dtype())?;
        if self.rank() < 2 {
            return Err(Error::shape(
                op,
                format!("takes a tensor of shape (N, C, *), got {}", self.shape()),
            ));
        }
        let channels = self.dims()[1];
        let params = [
            ("running_mean", Some(running_mean)),
            ("running_var", Some(running_var)),
            ("weight", weight),
            ("bias", bias),
        ];
        super::check_per_channel(op, self, channels, &params)?;
        if self.numel() == 0 {
            // PyTorch's: an empty input (no batch, channel or position) is
            // an empty output.
            return Tensor::zeros(self.shape().clone(), self.dtype(), self.device());
        }
        let compute = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let stats = [running_mean, running_var];
        if self.device().is_cpu() {
            return self.batch_norm_on_host(stats, [weight, bias], eps, compute);
        }
        // A per-channel parameter broadcast over the input's shape: channel
        // c's value for every element of channel c, as a view.
        let mut channel_shape = vec![1; self.rank()];
        channel_shape[1] = channels;
        let per_channel = |t: &Tensor| {
            t.to_dtype(compute)?
                .reshape(channel_shape.clone())?
                .broadcast_to(self.shape().clone())
        };
        let inv_std = per_channel(running_var)?.add_scalar(eps)?.sqrt()?.recip()?;
        let mut y = self
            .to_dtype(compute)?
            .sub(&per_channel(running_mean)?)?
            .mul(&inv_std)?;
        if let Some(w) = weight {
            y = y.mul(&per_channel(w)?)?;
        }
        if let Some(b) = bias {
            y = y.add(&per_channel(b)?)?;
        }
        y.to_dtype(self.dtype())
    }

    /// [`Tensor::batch_norm`] on the CPU, as PyTorch's CPU kernel: each
    /// channel's scale `weight / sqrt(var + eps)` and shift `bias - mean *
    /// scale` first, then `x * scale + shift` in one pass (a depthwise 1x1
    /// convolution with a bias, for f32 of rank 2 to 4), or two passes.
    fn batch_norm_on_host(
        &self,
        [running_mean, running_var]: [&Tensor; 2],
        [weight, bias]: [Option<&Tensor>; 2],
        eps: f64,
        compute: DType,
    ) -> Result<Tensor> {
        let mut scale = running_var
            .to_dtype(compute)?
            .add_scalar(eps)?
            .sqrt()?
            .recip()?;
        if let Some(w) = weight {
            scale = scale.mul(&w.to_dtype(compute)?)?;
        }
        let moved = running_mean.to_dtype(compute)?.mul(&scale)?;
        let shift = match bias {
            Some(b) => b.to_dtype(compute)?.sub(&moved)?,
            None => moved.neg()?,
        };
        let channels = scale.numel();
        if self.dtype() == DType::F32 && (2..=4).contains(&self.rank()) {
            // (N, C, *) as (N, C, rows, columns), a view.
            let mut x = self.clone();
            while x.rank() < 4 {
                x = x.unsqueeze(2)?;
            }
            let taps = scale.reshape([channels, 1, 1, 1])?;
            let conv = crate::Conv::new().groups(channels).bias(&shift);
            return x.conv2d(&taps, &conv)?.reshape(self.shape().clone());
        }
        let mut channel_shape = vec![1; self.rank()];
        channel_shape[1] = channels;
        let scale = scale.reshape(channel_shape.clone())?;
        let shift = shift.reshape(channel_shape)?;
        self.to_dtype(compute)?
            .mul(&scale)?
            .add(&shift)?
            .to_dtype(self.dtype())
    }
}
