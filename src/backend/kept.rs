//! What brings a GPU storage's data back after its device is lost.
//!
//! A storage a tensor asked to keep (`Persist::HostCopy`,
//! `Tensor::checkpoint`) holds a [`Kept`]: a host copy of its elements, and
//! once a recovery rebuilt them on the handle's new device (or on the CPU
//! it went on on), that storage. Tensors go on holding the lost storage:
//! the op layer reads through it to the restored one (`Tensor::kernel_ref`),
//! so every view of it, and the application's handles, see the restored
//! data without being made anew. A storage never changes device itself.
//!
//! A host copy taken as the tensor was made from host data goes stale at
//! the tensor's first write (the op layer marks every destination, see
//! `Tensor::kernel_out`): a recovery then has nothing to restore, and the
//! tensor stays lost. A checkpoint is restored whatever was written since.

use super::Place;
use super::Storage;
use super::cpu::{CpuData, CpuStorage, with_cpu_data};
use super::gpu::GpuStorage;
use crate::error::Result;
use arc_swap::ArcSwapOption;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The host copy of a kept storage, and its restored storage.
#[derive(Default)]
pub(crate) struct Kept {
    copy: Mutex<Option<HostCopy>>,
    /// Recoveries that took the copy so far (under the copy's lock).
    restores: AtomicU64,
    /// Writes to the storage so far (each destination of an op counts).
    writes: AtomicU64,
    /// Set while the copy is one the next write makes stale (which then
    /// lets it go).
    fragile: AtomicBool,
    /// The storage a recovery rebuilt the copy into, once one did.
    restored: ArcSwapOption<Storage>,
}

/// The elements of a kept storage in host memory.
struct HostCopy {
    data: Arc<CpuData>,
    /// `Some(writes)`: valid while the storage's write count is this (a
    /// copy of the host data a tensor was made from); `None`: a checkpoint,
    /// restored whatever was written since.
    unwritten: Option<u64>,
}

impl Kept {
    /// Keeps `data` as the host copy: a checkpoint (`unwritten: None`),
    /// or a copy valid while [`Kept::writes`] stays `unwritten` (read it
    /// before the data: a write met meanwhile makes the copy stale, never
    /// wrongly valid).
    pub fn set_copy(&self, data: CpuData, unwritten: Option<u64>) {
        let mut copy = self.lock();
        self.fragile.store(unwritten.is_some(), Ordering::Release);
        *copy = Some(HostCopy {
            data: Arc::new(data),
            unwritten,
        });
    }

    /// Recoveries that took the copy so far.
    pub fn restores(&self) -> u64 {
        self.restores.load(Ordering::Acquire)
    }

    /// Writes to the storage so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Lets go of the host copy.
    pub fn drop_copy(&self) {
        let mut copy = self.lock();
        *copy = None;
        // No copy for a write to make stale: writes take no lock.
        self.fragile.store(false, Ordering::Release);
    }

    /// Notes a write to the storage (an op's destination); a copy it makes
    /// stale is let go.
    #[inline]
    pub fn written(&self) {
        self.writes.fetch_add(1, Ordering::AcqRel);
        if self.fragile.load(Ordering::Acquire) {
            self.let_go_if_stale();
        }
    }

    #[cold]
    fn let_go_if_stale(&self) {
        let mut copy = self.lock();
        let stale = copy
            .as_ref()
            .and_then(|c| c.unwritten)
            .is_some_and(|w| w != self.writes.load(Ordering::Acquire));
        if stale {
            *copy = None;
            self.fragile.store(false, Ordering::Release);
        }
    }

    /// The host copy, when one is kept and still holds the storage's data,
    /// taken for a recovery (counted in [`Kept::restores`]).
    fn take_for_restore(&self) -> Option<Arc<CpuData>> {
        let copy = self.lock();
        self.restores.fetch_add(1, Ordering::AcqRel);
        let copy = copy.as_ref()?;
        match copy.unwritten {
            Some(writes) if writes != self.writes.load(Ordering::Acquire) => None,
            _ => Some(copy.data.clone()),
        }
    }

    /// Rebuilds the host copy at `place` (the handle's new device) as the
    /// storage the kept one's tensors read from now on; false when there is
    /// no valid copy (the tensors stay lost).
    ///
    /// # Errors
    /// Those of the upload (the new device's memory cap, its loss).
    pub fn restore(&self, place: Place<'_>) -> Result<bool> {
        const OP: &str = "Device::recover";
        let Some(data) = self.take_for_restore() else {
            return Ok(false);
        };
        let storage = match place {
            Place::Gpu(ctx) => {
                // No upload into a lost device's (invalid) buffers.
                ctx.check_lost(OP)?;
                with_cpu_data!(&*data, v => Storage::Gpu(GpuStorage::upload(ctx, OP, v)?))
            }
            Place::Host(threads) => Storage::Cpu(CpuStorage::new(
                with_cpu_data!(&*data, v => CpuData::from_vec(v.to_vec())),
                threads.clone(),
            )),
        };
        self.restored.store(Some(Arc::new(storage)));
        Ok(true)
    }

    /// The storage a recovery restored the data to, if any.
    pub fn restored(&self) -> Option<Arc<Storage>> {
        self.restored.load_full()
    }

    fn lock(&self) -> MutexGuard<'_, Option<HostCopy>> {
        self.copy.lock().unwrap_or_else(|e| e.into_inner())
    }
}
