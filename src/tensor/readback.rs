//! Reading elements back to the host.

use super::Tensor;
use crate::backend::cpu::Threads;
use crate::backend::{Place, Storage};
use crate::dtype::Element;
use crate::error::{Error, Result};

impl Tensor {
    /// The elements in row-major order, blocking until the device is done
    /// (native only; use [`Tensor::to_vec_async`] on wasm).
    ///
    /// # Errors
    /// `Error::DType` when `T` is not the tensor's dtype; GPU failures;
    /// `Error::TooLarge` for more bytes than one readback holds (1 GiB on
    /// wasm32, where the browser's mapping is copied too); `Error::Index` when an indexing op on this GPU met an out-of-range
    /// index since the last readback (see [`Tensor::take`]; an empty
    /// tensor's readback submits nothing and leaves that to the next);
    /// `Error::DeviceLost` on a lost GPU, empty tensors too.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        pollster::block_on(self.to_vec_async())
    }

    /// The elements in row-major order (every target).
    ///
    /// # Errors
    /// As [`Tensor::to_vec`].
    pub async fn to_vec_async<T: Element>(&self) -> Result<Vec<T>> {
        const OP: &str = "to_vec";
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                OP,
                format!("tensor has dtype {}, asked for {}", self.dtype(), T::DTYPE),
            ));
        }
        let dense = self.contiguous().map_err(|e| e.named(OP))?;
        dense
            .storage()
            .read::<T>(OP, dense.offset(), dense.numel())
            .await
    }

    /// The single element of a one-element tensor, blocking (native only).
    ///
    /// # Errors
    /// `Error::Shape` when the tensor does not hold exactly one element; as
    /// [`Tensor::to_vec`], naming `item`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn item<T: Element>(&self) -> Result<T> {
        pollster::block_on(self.item_async())
    }

    /// The single element of a one-element tensor (every target).
    ///
    /// # Errors
    /// As [`Tensor::item`].
    pub async fn item_async<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::shape(
                "item",
                format!(
                    "needs exactly one element, the tensor has shape {}",
                    self.shape()
                ),
            ));
        }
        let v = self
            .to_vec_async::<T>()
            .await
            .map_err(|e| e.named("item"))?;
        v.into_iter()
            .next()
            .ok_or_else(|| Error::shape("item", "no element"))
    }

    /// A row-major copy of the elements in host memory, whose ops run on
    /// `threads`.
    pub(crate) async fn host_storage(&self, threads: &Threads) -> Result<Storage> {
        const OP: &str = "to_device";
        macro_rules! read {
            ($t:ty) => {
                Storage::from_vec(Place::Host(threads), OP, self.to_vec_async::<$t>().await?)?
            };
        }
        Ok(match self.dtype() {
            crate::DType::F32 => read!(f32),
            crate::DType::F16 => read!(half::f16),
            crate::DType::BF16 => read!(half::bf16),
            crate::DType::F64 => read!(f64),
            crate::DType::I32 => read!(i32),
            crate::DType::I64 => read!(i64),
            crate::DType::U32 => read!(u32),
            crate::DType::U8 => read!(u8),
            crate::DType::Bool => read!(bool),
            // Interleaved pairs, as c64 storage holds them.
            crate::DType::C64 => {
                let pairs = self.row_major_pairs()?.to_vec_async::<f32>().await?;
                Storage::from_vec(Place::Host(threads), OP, pairs)?
            }
        })
    }
}
