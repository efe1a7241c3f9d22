//! [`Tensor::add_conv2d`]: a convolution added into its residual, taken
//! by value, whose storage becomes the output where it can (a residual
//! block's skip connection).

use super::conv::convolve;
use super::conv_args::Conv;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// This tensor plus the 2-D convolution of `input` by `weight`, before
    /// `conv`'s activation: `input.conv2d(weight, &conv.residual(&self))`,
    /// bit for bit, but taking this tensor by value (as PyTorch's `addmm`
    /// takes the matrix a product is added to).
    ///
    /// Where this is its storage's last handle (no clone or view of
    /// it is left) and is laid out as the convolution's output
    /// (on the CPU, a dense channels-last f32 tensor of the output's shape,
    /// as a convolution of a channels-last image gives), the output is
    /// written into its storage, each sum added to the value it replaces:
    /// no fresh output to allocate and fill (ONNX Runtime's Conv + Add
    /// writing into the Add's input; on a 2-core Zen 5 VM a MobileNetV3
    /// detector's residual blocks ran 0.5-0.7 ms of its 27 faster). Otherwise
    /// the output is fresh, as `conv2d`'s.
    ///
    /// ```
    /// use webtensor::{Conv, DType, Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::cpu();
    /// let x = Tensor::ones([1, 8, 6, 6], DType::F32, &dev)?.to_channels_last()?;
    /// let w = Tensor::full([8, 8, 3, 3], 0.5, DType::F32, &dev)?;
    /// let h = x.conv2d(&w, &Conv::new().padding(1))?; // channels-last as x
    /// let y = h.add_conv2d(&x, &w, &Conv::new().padding(1))?; // into h's memory
    /// // A corner sums 4 taps of 8 channels: 16 in h, and 16 more.
    /// assert_eq!(y.to_vec::<f32>()?[0], 32.0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::conv2d`] with a residual, naming `add_conv2d`;
    /// `Error::Argument` for a `conv` that has a residual of its own.
    pub fn add_conv2d(self, input: &Tensor, weight: &Tensor, conv: &Conv) -> Result<Tensor> {
        const OP: &str = "add_conv2d";
        let _region = crate::profile_region::op(OP);
        if conv.residual.is_some() {
            return Err(Error::argument(
                OP,
                "the convolution is added to the tensor the call takes: its `Conv` must have \
                 no residual",
            ));
        }
        let conv = Conv {
            residual: Some(&self),
            residual_owned: true,
            ..conv.clone()
        };
        convolve(OP, input, weight, &conv)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Conv, DType, Device, Tensor};

    /// The storage cell a tensor's handle holds, as an address.
    fn cell(t: &Tensor) -> usize {
        std::sync::Arc::as_ptr(&*t.storage()) as usize
    }

    /// The last handle of a residual laid out as the output gives its
    /// storage to it; one with a clone left, or row-major, does not.
    #[test]
    fn the_last_handle_of_a_fitting_residual_becomes_the_output() {
        let dev = Device::cpu();
        let x = Tensor::ones([1, 8, 5, 7], DType::F32, &dev)
            .unwrap()
            .to_channels_last()
            .unwrap();
        let w = Tensor::full([8, 8, 3, 3], 0.5, DType::F32, &dev).unwrap();
        let conv = Conv::new().padding(1);
        let r = x.conv2d(&w, &conv).unwrap();
        let at = cell(&r);
        let y = r.add_conv2d(&x, &w, &conv).unwrap();
        assert_eq!(cell(&y), at, "the residual's storage is the output");
        let kept = y.clone();
        let z = y.add_conv2d(&x, &w, &conv).unwrap();
        assert_ne!(cell(&z), at, "a clone left: a fresh output");
        let planes = x.contiguous().unwrap().conv2d(&w, &conv).unwrap();
        let at = cell(&planes);
        let z = planes.add_conv2d(&x, &w, &conv).unwrap();
        assert_ne!(cell(&z), at, "a row-major residual: a fresh output");
        drop(kept);
    }
}
