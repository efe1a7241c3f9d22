//! What a GPU handle's tensors keep in host memory for a recovery
//! ([`Device::recover`]): [`Persist`], [`Device::set_persist`],
//! [`Tensor::checkpoint`] (see `backend/kept.rs`).

use super::{Device, On};
use crate::backend::Storage;
use crate::backend::cpu::CpuData;
use crate::backend::gpu::GpuContext;
use crate::backend::kept::Kept;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

/// What a GPU tensor keeps in host memory, so that a recovery
/// ([`Device::recover`]) brings its data back.
///
/// | tensor | after a recovery |
/// |---|---|
/// | made from host data under [`Persist::HostCopy`], never written since | restored from its host copy, bit for bit |
/// | checkpointed ([`Tensor::checkpoint`]) | restored from its last checkpoint, bit for bit, whatever was written since |
/// | any other | lost: every call on it fails with `Error::DeviceLost`, for good |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persist {
    /// Nothing: the tensor goes with its GPU (the default, which costs no
    /// memory).
    #[default]
    Nothing,
    /// A host copy of the elements, valid until the tensor (or a view of
    /// its storage) is next written: an op writing it, a captured step
    /// that does, or [`Tensor::gpu_buffer`] handing its buffer out. Costs
    /// the tensor's size in host memory.
    HostCopy,
}

impl Device {
    /// Sets what the tensors this GPU handle makes from host data from now
    /// on keep for a recovery ([`Tensor::from_slice`], [`Tensor::from_vec`],
    /// [`Tensor::to_device`] from the CPU, the file loaders ...): a host
    /// copy under [`Persist::HostCopy`] (model weights, say), nothing by
    /// default. It carries over to the devices a recovery opens. No effect
    /// on the CPU.
    pub fn set_persist(&self, persist: Persist) {
        self.with(|on| {
            if let On::Gpu(ctx) = on {
                ctx.set_host_copies(persist == Persist::HostCopy);
            }
        });
    }

    /// What tensors made from host data keep ([`Device::set_persist`];
    /// `Nothing` on the CPU).
    pub fn persist(&self) -> Persist {
        self.with(|on| match on {
            On::Gpu(ctx) if ctx.host_copies() => Persist::HostCopy,
            _ => Persist::Nothing,
        })
    }
}

impl Tensor {
    /// Copies this tensor's storage to host memory now (blocking; native
    /// only): a recovery ([`Device::recover`]) restores it from there, bit
    /// for bit, whatever was written since, and every view of the storage
    /// with it. A later checkpoint replaces it. Nothing to do on the CPU,
    /// where nothing is lost.
    ///
    /// ```
    /// use webtensor::{DType, Device, Tensor};
    /// let dev = Device::default_device()?;
    /// let state = Tensor::zeros([64, 64], DType::F32, &dev)?;
    /// for step in 0..10 {
    ///     state.add_scalar_(1.0)?;
    ///     if step % 5 == 4 {
    ///         state.checkpoint()?; // a recovery resumes from here
    ///     }
    /// }
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::DeviceLost` when the tensor's device is lost (a checkpoint is
    /// taken before the loss); readback failures.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn checkpoint(&self) -> Result<()> {
        pollster::block_on(self.checkpoint_async())
    }

    /// [`Tensor::checkpoint`] without blocking (every target).
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`].
    pub async fn checkpoint_async(&self) -> Result<()> {
        keep_copies("checkpoint", &[self], false).await
    }

    /// Sets what this tensor's storage keeps for a recovery (blocking;
    /// native only): [`Persist::HostCopy`] copies it to host memory now, a
    /// copy valid until the storage is next written; [`Persist::Nothing`]
    /// lets go of any copy or checkpoint. Nothing to do on the CPU.
    ///
    /// A copy taken while another thread writes the tensor may miss that
    /// write and still count as valid: take it when no write to the tensor
    /// is in flight.
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`]; `Error::Argument` for `HostCopy` of a
    /// tensor whose buffer the application may write
    /// ([`Tensor::gpu_buffer`], [`Tensor::from_gpu_buffer`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn set_persist(&self, persist: Persist) -> Result<()> {
        pollster::block_on(self.set_persist_async(persist))
    }

    /// [`Tensor::set_persist`] without blocking (every target).
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`]; `Error::Argument` for `HostCopy` of a
    /// tensor whose buffer the application may write (`Tensor::gpu_buffer`,
    /// `Tensor::from_gpu_buffer`).
    pub async fn set_persist_async(&self, persist: Persist) -> Result<()> {
        match persist {
            Persist::HostCopy => keep_copies("Tensor::set_persist", &[self], true).await,
            Persist::Nothing => {
                if let Storage::Gpu(own) = &**self.own_storage()
                    && let Some(kept) = own.kept()
                {
                    kept.drop_copy();
                }
                Ok(())
            }
        }
    }

    /// [`Tensor::checkpoint`] of several tensors at once (blocking; native
    /// only): a recovery restores all of them as of this call, or, when the
    /// device is lost before every copy is taken, none of this call's
    /// copies (each keeps its previous checkpoint). For state held in
    /// several tensors that must come back from one moment. The copies are
    /// read one after another: ops another thread (or, in a browser,
    /// another task, while this one awaits) records on them meanwhile can
    /// land between two copies, so take it where nothing else writes them.
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`]; `Error::DeviceLost` when a recovery came
    /// before the copies were kept; `Error::Argument` for tensors of
    /// different GPU handles.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn checkpoint_all(tensors: &[&Tensor]) -> Result<()> {
        pollster::block_on(Self::checkpoint_all_async(tensors))
    }

    /// [`Tensor::checkpoint_all`] without blocking (every target).
    ///
    /// # Errors
    /// As [`Tensor::checkpoint_all`].
    pub async fn checkpoint_all_async(tensors: &[&Tensor]) -> Result<()> {
        keep_copies("checkpoint_all", tensors, false).await
    }
}

/// What [`keep_copies`] read of one tensor, to keep.
struct Taken {
    kept: Arc<Kept>,
    /// The copy's [`Kept::restores`] and [`Kept::writes`] before the read.
    restores: u64,
    unwritten: Option<u64>,
    data: CpuData,
    ctx: Arc<GpuContext>,
}

/// Reads the storage each of `tensors` reads now and keeps it as the host
/// copy of the storage the tensor was made on (the one its handles hold):
/// until its next write (`stale_on_write`), or for good (a checkpoint). All
/// the copies are kept, or none: they are kept together while no recovery
/// restores, and not when one came since they were read.
async fn keep_copies(op: &'static str, tensors: &[&Tensor], stale_on_write: bool) -> Result<()> {
    let mut handle = None;
    let mut taken = Vec::with_capacity(tensors.len());
    for t in tensors {
        let Storage::Gpu(own) = &**t.own_storage() else {
            continue;
        };
        let now = t.storage();
        let Storage::Gpu(at) = &**now else {
            // Restored to the CPU after its GPU was lost: nothing to keep.
            continue;
        };
        at.ctx.check_lost(op)?;
        if stale_on_write && at.app_may_write() {
            return Err(Error::argument(
                op,
                "the application may write this tensor's buffer (Tensor::gpu_buffer, \
                 Tensor::from_gpu_buffer) without webtensor seeing it, so no copy of it \
                 stays valid until its next write: checkpoint it instead",
            ));
        }
        let this = t.device().gpu_handle();
        match (&handle, this) {
            (None, Some(h)) => handle = Some(h.clone()),
            (Some(h), Some(this)) if !Arc::ptr_eq(h, this) => {
                return Err(Error::argument(
                    op,
                    "the tensors are on different GPU devices; checkpoint each device's apart",
                ));
            }
            _ => {}
        }
        // Known to the device it is read from, the one the handle is now,
        // whose recovery restores it; kept before the counts are read, and
        // they before the data: a write met meanwhile makes the copy
        // stale, never wrongly valid.
        let kept = own.keep(&at.ctx).clone();
        let (restores, unwritten) = (kept.restores(), stale_on_write.then(|| kept.writes()));
        let Some(data) = now.read_all(op).await? else {
            continue;
        };
        taken.push(Taken {
            kept,
            restores,
            unwritten,
            data,
            ctx: at.ctx.clone(),
        });
    }
    let _held = handle.as_ref().map(|h| h.hold_replacements());
    // A recovery that came meanwhile restored copies from before these,
    // read from the lost device: none of these is kept.
    if let Some(t) = taken.iter().find(|t| t.kept.restores() != t.restores) {
        return Err(t.ctx.lost_error(op));
    }
    for t in taken {
        t.kept.set_copy(t.data, t.unwritten);
    }
    Ok(())
}
