//! Copies, casts, fills and moves between devices.

use super::Arg;
use crate::backend::{Input, Storage};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::ElementwiseOp;
use crate::scalar::{Scalar, TypedScalar};
use crate::shape::Shape;
use crate::tensor::Tensor;
use smallvec::smallvec;
use std::sync::Arc;

impl Tensor {
    /// Sets every element of this tensor (a view of any layout) to `value`.
    ///
    /// # Errors
    /// `Error::DType` when `value` is not representable in the dtype,
    /// `Error::OverlappingWrite` for a broadcast view.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<()> {
        if self.dtype().is_complex() {
            return self.complex_fill_(value.into());
        }
        let value = TypedScalar::new("fill_", value.into(), self.dtype())?;
        if let Some(wide) = self.wide_scalar(&value)? {
            return self.assign(&wide).map_err(|e| e.named("fill_"));
        }
        self.launch_into(
            "fill_",
            ElementwiseOp::Fill,
            smallvec![Input::Scalar(value)],
        )
    }

    /// Writes `src` into this tensor (a view of any layout), broadcasting
    /// `src` to this shape and casting it to this dtype as
    /// [`Tensor::to_dtype`] does (NumPy's `dst[...] = src`: leading axes of
    /// one past this rank are dropped; a float out of an integer dtype's
    /// range saturates, where NumPy's cast is undefined: on x86 its i32
    /// and i64 take the minimum and its u8 and u32 wrap).
    /// Overlapping source and destination are read as if the source were
    /// copied first, NumPy's rule (NumPy 2.4 itself breaks it for `y[::2]
    /// = y[:4]`, a 1-D copy of unlike steps it makes unbuffered, reading
    /// values it already wrote).
    ///
    /// # Errors
    /// `Error::Shape` when `src` does not broadcast to this shape,
    /// `Error::DeviceMismatch`, `Error::OverlappingWrite`.
    pub fn assign(&self, src: &Tensor) -> Result<()> {
        let extra = src.rank().saturating_sub(self.rank());
        if src.dims()[..extra].iter().all(|&d| d == 1) && extra > 0 {
            return self.assign(&src.squeeze_axis(0)?);
        }
        if self.dtype().is_complex() || src.dtype().is_complex() {
            return self.complex_assign(src);
        }
        self.launch_into_args("assign", ElementwiseOp::Cast, &[Arg::Tensor(src)])
    }

    /// Alias of [`Tensor::assign`] (PyTorch's `copy_`).
    ///
    /// # Errors
    /// As [`Tensor::assign`].
    pub fn copy_from(&self, src: &Tensor) -> Result<()> {
        self.assign(src).map_err(|e| e.named("copy_from"))
    }

    /// A row-major tensor with the same elements: this handle when already
    /// contiguous, else a copy.
    ///
    /// # Errors
    /// Device errors from the copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.contiguous_copy()
    }

    /// The same elements in channels-last memory (PyTorch's
    /// `contiguous(memory_format=torch.channels_last)`): a rank-4 `[n, c,
    /// h, w]` tensor whose storage is dense `[n, h, w, c]`, each pixel's
    /// channels side by side, viewed with the same shape. This handle when
    /// already so laid out ([`Tensor::is_channels_last`]), else a copy.
    /// On the CPU an f32, f16 or bf16 convolution of such an input writes
    /// its output channels-last too (and elementwise ops, nearest
    /// upsampling by whole factors, `concat` and transposed convolutions
    /// whose stride is their kernel keep their inputs' memory order), so
    /// a network of those converted once at its input stays
    /// channels-last; the values are the same either way.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let x = Tensor::arange(0.0f32, 24.0, 1.0, &Device::cpu())?.reshape([1, 2, 3, 4])?;
    /// let y = x.to_channels_last()?;
    /// assert!(y.is_channels_last() && !x.is_channels_last());
    /// assert_eq!(y.strides(), &[24, 1, 8, 2]);
    /// assert_eq!(y.to_vec::<f32>()?, x.to_vec::<f32>()?);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `to_channels_last` for a rank other than 4;
    /// device errors from the copy.
    pub fn to_channels_last(&self) -> Result<Tensor> {
        const OP: &str = "to_channels_last";
        let &[n, c, h, w] = self.dims() else {
            return Err(Error::shape(
                OP,
                format!(
                    "channels-last memory is for [batch, channels, height, width] tensors, got shape {}",
                    self.shape()
                ),
            ));
        };
        if self.is_channels_last() {
            return Ok(self.clone());
        }
        let out = Tensor::empty_dense(Shape::from([n, h, w, c]), self.dtype(), self.device(), OP)?
            .permute(&[0, 3, 1, 2])?;
        out.assign(self)?;
        Ok(out)
    }

    /// True for a rank-4 `[n, c, h, w]` tensor of at least one element
    /// whose memory is dense channels-last `[n, h, w, c]`
    /// ([`Tensor::to_channels_last`]; extents of 1 may have any stride, so
    /// a tensor of one channel, or of one pixel an image, is both
    /// channels-last and row-major).
    pub fn is_channels_last(&self) -> bool {
        self.layout().is_channels_last()
    }

    /// A row-major copy, always new storage.
    pub(crate) fn contiguous_copy(&self) -> Result<Tensor> {
        if self.dtype().is_complex() && Tensor::pairs_fit(self.rank()) {
            return Ok(self.pairs().contiguous_copy()?.complex_of_pairs());
        }
        let out = Tensor::empty_dense(
            self.shape().clone(),
            self.dtype(),
            self.device(),
            "contiguous",
        )?;
        if self.dtype().is_complex() {
            // At the rank limit: through the real and imaginary views.
            out.complex_assign(self)?;
        } else {
            out.launch_into(
                "contiguous",
                ElementwiseOp::Cast,
                smallvec![Input::Tensor(self.kernel_ref(self.layout().clone())?)],
            )?;
        }
        Ok(out)
    }

    /// The elements converted to `dtype` with Rust `as` semantics (floats to
    /// integers truncate and saturate, NaN becomes 0; integers wrap; non-zero
    /// is `true`). The same handle when the dtype already matches.
    /// Integers reach f16 and bf16 through f32, as in PyTorch: one past
    /// 2^24 can round twice (i32 1077936129 is bf16 1073741824, where
    /// `ml_dtypes` rounds once to 1082130432). A NaN stays a NaN of its
    /// sign; its payload's top bits are kept on the CPU and in bf16 and
    /// packed f16, while a GPU storing f16 natively writes its own quiet NaN
    /// (WGSL's conversion to f16 decides NaN bits, and naga has no bitcast
    /// from a word to two f16s).
    ///
    /// ```
    /// use webtensor::{DType, Device, Tensor};
    /// let i = Tensor::from_slice(&[1077936129i32, -7], [2], &Device::cpu())?;
    /// let b = i.to_dtype(DType::BF16)?.to_dtype(DType::F32)?;
    /// assert_eq!(b.to_vec::<f32>()?, [1073741824.0, -7.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `UnsupportedDType` for f64 on the GPU; `Error::DType` for c64 to a
    /// real dtype (take `real`, `imag` or `abs` first).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        if dtype.is_complex() {
            // A real tensor as c64 with zero imaginary parts.
            let out = Tensor::empty_dense(self.shape().clone(), dtype, self.device(), "to_dtype")?;
            out.real()?.assign(self)?;
            out.imag()?.fill_(0.0)?;
            return Ok(out);
        }
        Tensor::launch_new(
            self,
            "to_dtype",
            ElementwiseOp::Cast,
            dtype,
            &[Arg::Tensor(self)],
        )
    }

    /// A copy on `device` (this handle when it is already there; a CPU
    /// tensor is copied onto a CPU device of other threads, see
    /// [`Device::cpu_with_threads`]). The copy is contiguous.
    ///
    /// # Errors
    /// `UnsupportedDType` for f64 to the GPU; device limits; GPU failures.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        pollster::block_on(self.to_device_async(device))
    }

    /// [`Tensor::to_device`] for every target.
    ///
    /// # Errors
    /// As [`Tensor::to_device`].
    pub async fn to_device_async(&self, device: &Device) -> Result<Tensor> {
        let moved = self.moved_to(device).await;
        moved.map_err(|e| e.named("to_device"))
    }

    /// [`Tensor::to_device_async`], whose parts' errors name their own ops.
    async fn moved_to(&self, device: &Device) -> Result<Tensor> {
        let target = device.host_threads();
        if device == self.device() && target.as_ref().is_none_or(|t| self.device().runs_on(t)) {
            // Not a lost tensor, which no call may hand back as if it held
            // data (its handle may be a recovered one, or the CPU now).
            if let Storage::Gpu(s) = &**self.storage() {
                s.ctx.check_lost("to_device")?;
            }
            return Ok(self.clone());
        }
        device.check_holds("to_device", self.dtype())?;
        if self.dtype().is_complex() {
            // The pair view moves as f32 and comes back row-major.
            let pairs = Box::pin(self.row_major_pairs()?.moved_to(device)).await?;
            return pairs.complex_of_pairs().reshape(self.shape().clone());
        }
        let cpu = Tensor::from_parts(
            Arc::new(
                self.host_storage(target.as_ref().unwrap_or(&Default::default()))
                    .await?,
            ),
            Layout::contiguous(self.shape().clone()),
            self.dtype(),
            if target.is_some() {
                device.clone()
            } else {
                Device::cpu()
            },
        );
        if device.is_cpu() {
            return Ok(cpu);
        }
        macro_rules! upload {
            ($t:ty) => {
                Tensor::from_vec(
                    cpu.to_vec_async::<$t>().await?,
                    self.shape().clone(),
                    device,
                )
            };
        }
        match self.dtype() {
            DType::F32 => upload!(f32),
            DType::F16 => upload!(half::f16),
            DType::BF16 => upload!(half::bf16),
            DType::F64 => upload!(f64),
            DType::I32 => upload!(i32),
            DType::I64 => upload!(i64),
            DType::U32 => upload!(u32),
            DType::U8 => upload!(u8),
            DType::Bool => upload!(bool),
            DType::C64 => Err(crate::ops::complex::not_for_complex("to_device")),
        }
    }
}
