//! Conversions to and from `ndarray` arrays (the default `ndarray`
//! feature). An owned array moves onto the CPU device without a copy,
//! keeping its strides (negative ones too) and offset; views and GPU
//! destinations copy the elements in their logical order.

use crate::backend::Storage;
use crate::backend::cpu::{CpuData, CpuStorage};
use crate::device::Device;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;
use ndarray::{Array, ArrayBase, ArrayD, Data, Dimension, IxDyn};
use std::sync::Arc;

impl Tensor {
    /// An owned `ndarray` array as a tensor. On the CPU the array's buffer
    /// becomes the tensor's storage with the array's strides and offset
    /// (no copy, whatever its layout); on a GPU its elements are uploaded in
    /// row-major order.
    ///
    /// ```
    /// use ndarray::{Array2, s};
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
    /// let reversed = a.slice_move(s![.., ..;-1]); // negative stride, kept
    /// let t = Tensor::from_ndarray(reversed, &Device::cpu())?;
    /// assert_eq!(t.strides(), &[3, -1]);
    /// assert_eq!(t.to_vec::<f32>()?, vec![2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
    /// assert_eq!(t.to_ndarray::<f32>()?[[1, 0]], 5.0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` naming `from_ndarray` for more than 8 axes; device
    /// errors.
    pub fn from_ndarray<T: Element, D: Dimension>(
        array: Array<T, D>,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "from_ndarray";
        let shape = Shape::from(array.shape());
        shape.check(OP)?;
        let Some(threads) = device.host_threads() else {
            let data: Vec<T> = array.iter().copied().collect();
            return Tensor::from_vec(data, shape, device).map_err(|e| e.named(OP));
        };
        let strides = array.strides().iter().copied().collect();
        let (data, offset) = array.into_raw_vec_and_offset();
        let layout = Layout::from_parts(shape, strides, offset.unwrap_or(0));
        let storage = Storage::Cpu(CpuStorage::new(CpuData::from_vec(data), threads.clone()));
        Ok(Tensor::from_parts(
            Arc::new(storage),
            layout,
            T::DTYPE,
            device.clone(),
        ))
    }

    /// A copy of any `ndarray` array or view (its elements in logical
    /// order, so negative strides read as NumPy's do) on `device`.
    ///
    /// # Errors
    /// As [`Tensor::from_ndarray`].
    pub fn from_ndarray_view<T: Element, S: Data<Elem = T>, D: Dimension>(
        array: &ArrayBase<S, D>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = Shape::from(array.shape());
        shape.check("from_ndarray_view")?;
        Tensor::from_vec(array.iter().copied().collect(), shape, device)
            .map_err(|e| e.named("from_ndarray_view"))
    }

    /// The elements as an owned row-major `ndarray` array, blocking for a
    /// GPU tensor (native only; see [`Tensor::to_ndarray_async`]).
    ///
    /// # Errors
    /// `Error::DType` when `T` is not the tensor's dtype; readback errors.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        pollster::block_on(self.to_ndarray_async())
    }

    /// [`Tensor::to_ndarray`] on every target.
    ///
    /// # Errors
    /// As [`Tensor::to_ndarray`].
    pub async fn to_ndarray_async<T: Element>(&self) -> Result<ArrayD<T>> {
        let data = self
            .to_vec_async::<T>()
            .await
            .map_err(|e| e.named("to_ndarray"))?;
        Array::from_shape_vec(IxDyn(self.dims()), data)
            .map_err(|e| Error::internal("to_ndarray", e.to_string()))
    }
}
