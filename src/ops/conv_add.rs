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
    /// Where this is its storage's last handle (no clone or view of it is
    /// left) and is laid out as the convolution's output, on the CPU, the
    /// output is written into its storage, each sum added to the value it
    /// replaces: no fresh output to allocate and fill (ONNX Runtime's fused
    /// Conv and Add writing into the Add's input; on a 2-core Zen 5 VM a
    /// MobileNetV3 detector's pass ran 27.3 -> 26.6 ms with its residual
    /// blocks and FPN merges so). Laid out so means: a dense channels-last
    /// f32 tensor of the output's `[n, o, ho, wo]` shape, as a convolution
    /// of a channels-last image gives, on the input's threads, for a
    /// channels-last input, a dense convolution (not a depthwise one) of
    /// more than one output channel computed in f32 (f32 operands, or f16
    /// and bf16 ones with a bias). Otherwise the output is fresh, as
    /// `conv2d`'s.
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
    /// storage to it (1x1 and 3x3, groups, stride 2, 40 channels); one
    /// with a clone left, row-major, of a row-major input, or on other
    /// threads than the input's does not.
    #[test]
    fn the_last_handle_of_a_fitting_residual_becomes_the_output() {
        let dev = Device::cpu();
        // (input [n, c, h, w], out channels, kernel, stride, groups).
        let cases = [
            ([1usize, 8, 5, 7], 8usize, 3usize, 1usize, 1usize),
            ([2, 16, 4, 9], 24, 1, 1, 1),
            ([1, 12, 6, 9], 36, 3, 1, 3),
            ([1, 6, 9, 11], 40, 3, 2, 1),
        ];
        let dt = DType::F32;
        for (xd, o, k, stride, groups) in cases {
            let x = Tensor::ones(xd, dt, &dev)
                .unwrap()
                .to_channels_last()
                .unwrap();
            let w = Tensor::full([o, xd[1] / groups, k, k], 0.5, dt, &dev).unwrap();
            let b = Tensor::full([o], 0.25, DType::F32, &dev).unwrap();
            let conv = Conv::new()
                .padding(k / 2)
                .stride(stride)
                .groups(groups)
                .bias(&b);
            let r = x.conv2d(&w, &conv).unwrap();
            let at = cell(&r);
            let y = r.add_conv2d(&x, &w, &conv).unwrap();
            assert_eq!(cell(&y), at, "{xd:?}: the residual's storage is the output");
            let kept = y.clone();
            let z = y.add_conv2d(&x, &w, &conv).unwrap();
            assert_ne!(cell(&z), at, "{xd:?}: a clone left, a fresh output");
            drop(kept);
            let planes = z.contiguous().unwrap();
            let at = cell(&planes);
            let z = planes.add_conv2d(&x, &w, &conv).unwrap();
            assert_ne!(cell(&z), at, "{xd:?}: a row-major residual, a fresh output");
            let at = cell(&z);
            let xp = x.contiguous().unwrap();
            let z = z.add_conv2d(&xp, &w, &conv).unwrap();
            assert_ne!(cell(&z), at, "{xd:?}: a row-major input, a fresh output");
            let one = Device::cpu_with_threads(1).unwrap();
            let elsewhere = z.to_device(&one).unwrap().to_channels_last().unwrap();
            let at = cell(&elsewhere);
            let z = elsewhere.add_conv2d(&x, &w, &conv).unwrap();
            assert_ne!(cell(&z), at, "{xd:?}: other threads, a fresh output");
        }
    }
}
