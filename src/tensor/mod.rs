//! [`Tensor`]: a cheap handle to shared storage plus a layout and a dtype.

pub(crate) mod captured_writes;
mod create;
mod display;
mod like;
mod readback;
mod views;

pub(crate) use create::{alloc, alloc_beside};

use crate::backend::recycle::Shared;
use crate::backend::{Storage, StorageRef, TensorRef};
use crate::device::Device;
use crate::dtype::{DType, KernelType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use std::sync::Arc;

/// An n-dimensional array on a [`Device`].
///
/// Cloning a tensor clones the handle, not the data: views and clones share
/// storage, and in-place ops (`add_`, `fill_`, `assign` ...) are seen through
/// every handle that overlaps the written elements.
///
/// ```
/// use webtensor::{s, Device, Tensor};
/// let dev = Device::cpu();
/// let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &dev)?;
/// let col = t.slice(s![.., 1])?;          // a view: no copy
/// col.add_scalar_(10.0)?;                  // writes through to `t`
/// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 12.0, 3.0, 4.0, 15.0, 6.0]);
/// # Ok::<(), webtensor::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    /// Its last handle parks the cell for reuse (see `backend/recycle.rs`).
    storage: Shared<Storage>,
    layout: Layout,
    dtype: DType,
    device: Device,
}

impl Tensor {
    pub(crate) fn from_parts(
        storage: Arc<Storage>,
        layout: Layout,
        dtype: DType,
        device: Device,
    ) -> Tensor {
        Tensor {
            storage: Shared::new(storage),
            layout,
            dtype,
            device,
        }
    }

    /// A handle over the same storage with another layout.
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            device: self.device.clone(),
        }
    }

    /// The kernel's view of this tensor, with `layout` in place of its own.
    ///
    /// # Errors
    /// `Error::Internal` for a c64 tensor: complex ops reach kernels only
    /// through f32 views (`ops/complex.rs`), and every other op refuses c64
    /// with `Error::DType` before it gets here.
    pub(crate) fn kernel_ref(&self, layout: Layout) -> Result<TensorRef<'_>> {
        let dtype = KernelType::of(self.dtype)
            .ok_or_else(|| Error::internal("kernel", "c64 reaches kernels only as f32 views"))?;
        Ok(TensorRef {
            storage: self.storage(),
            layout,
            dtype,
        })
    }

    /// [`Tensor::kernel_ref`] of an op's destination: the write is noted
    /// (a host copy kept for a recovery goes stale, see
    /// `backend/kept.rs`). Every op that writes a tensor it did not make
    /// takes its destination from here.
    ///
    /// # Errors
    /// As [`Tensor::kernel_ref`].
    pub(crate) fn kernel_out(&self, layout: Layout) -> Result<TensorRef<'_>> {
        self.note_write();
        self.kernel_ref(layout)
    }

    /// Notes that the storage is about to be written (see
    /// [`Tensor::kernel_out`]).
    #[inline(always)]
    pub(crate) fn note_write(&self) {
        if let Storage::Gpu(s) = &**self.storage {
            if let Some(kept) = s.kept() {
                kept.written();
            }
            captured_writes::note(self);
        }
    }

    /// The storage ops read and write: the tensor's own, or once a
    /// recovery restored its lost device's data elsewhere, that storage
    /// (see `backend/kept.rs`).
    #[inline(always)]
    pub(crate) fn storage(&self) -> StorageRef<'_> {
        if self.is_kept() {
            return self.kept_storage();
        }
        StorageRef::own(&self.storage)
    }

    /// [`Tensor::storage`] of a storage kept for a recovery: the restored
    /// one once its own device is lost and a recovery restored it.
    #[inline(never)]
    fn kept_storage(&self) -> StorageRef<'_> {
        if let Storage::Gpu(s) = &**self.storage
            && s.ctx.is_lost()
            && let Some(restored) = s.kept().and_then(|k| k.restored())
        {
            return StorageRef::held(restored);
        }
        StorageRef::own(&self.storage)
    }

    /// The storage the tensor was made on (the one a recovery's restored
    /// storage stands in for).
    pub(crate) fn own_storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        self.layout.shape()
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        self.layout.dims()
    }

    /// Strides in elements, signed (negative for reversed axes, 0 for
    /// broadcast ones).
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Storage position of the first element, in elements.
    pub fn offset(&self) -> usize {
        self.layout.offset()
    }

    /// The full layout (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device holding the storage.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// True when the elements are row-major with no gaps.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// True when this tensor's data went with a lost GPU: every call on it
    /// fails with `Error::DeviceLost`, for good, even once its device
    /// handle is recovered ([`Device::recover`]), unless a recovery brings
    /// its data back (a host copy or a checkpoint, see [`crate::Persist`]):
    /// it is then false again. False on the CPU.
    pub fn is_lost(&self) -> bool {
        match &**self.storage() {
            Storage::Gpu(s) => s.ctx.is_lost(),
            Storage::Cpu(_) => false,
        }
    }

    /// True when this handle is its storage's only one (no other tensor,
    /// view or weak handle) and its view covers all of it: nobody else
    /// can read the storage, so an op that takes the tensor by value may
    /// write its result there.
    pub(crate) fn owns_all_of_storage(&self) -> bool {
        Arc::strong_count(&self.storage) == 1
            && Arc::weak_count(&self.storage) == 0
            && self.layout.offset() == 0
            && self.layout.numel() == self.storage.len()
    }

    /// True when both are CPU tensors whose storages run on the same
    /// threads (a kernel runs on its output storage's).
    pub(crate) fn on_threads_of(&self, other: &Tensor) -> bool {
        match (&**self.storage(), &**other.storage()) {
            (Storage::Cpu(a), Storage::Cpu(b)) => a.threads().same(b.threads()),
            _ => false,
        }
    }

    /// True when both handles use the same storage (one is a view of the
    /// other, or both are views of a third).
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        // After a recovery a tensor reads its restored storage, which a
        // tensor wrapping that storage's buffer holds as its own.
        Arc::ptr_eq(&self.storage, &other.storage)
            || ((self.is_kept() || other.is_kept())
                && Arc::ptr_eq(&self.storage(), &other.storage()))
    }

    /// True when the storage keeps its data for a recovery (see
    /// `backend/kept.rs`).
    #[inline(always)]
    fn is_kept(&self) -> bool {
        matches!(&**self.storage, Storage::Gpu(s) if s.kept().is_some())
    }
}
