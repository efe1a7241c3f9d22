//! What a GPU handle's tensors keep in host memory for a recovery
//! ([`Device::recover`]): [`Persist`], [`Device::set_persist`],
//! [`Tensor::checkpoint`] (see `backend/kept.rs`).

use super::{Device, On};
use crate::backend::Storage;
use crate::error::Result;
use crate::tensor::Tensor;

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
        self.keep_copy("checkpoint", false).await
    }

    /// Sets what this tensor's storage keeps for a recovery (blocking;
    /// native only): [`Persist::HostCopy`] copies it to host memory now, a
    /// copy valid until the storage is next written; [`Persist::Nothing`]
    /// lets go of any copy or checkpoint. Nothing to do on the CPU.
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn set_persist(&self, persist: Persist) -> Result<()> {
        pollster::block_on(self.set_persist_async(persist))
    }

    /// [`Tensor::set_persist`] without blocking (every target).
    ///
    /// # Errors
    /// As [`Tensor::checkpoint`].
    pub async fn set_persist_async(&self, persist: Persist) -> Result<()> {
        match persist {
            Persist::HostCopy => self.keep_copy("Tensor::set_persist", true).await,
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

    /// Reads the storage the tensor reads now and keeps it as the host copy
    /// of the storage it was made on (the one its handles hold): until its
    /// next write (`stale_on_write`), or for good (a checkpoint).
    async fn keep_copy(&self, op: &'static str, stale_on_write: bool) -> Result<()> {
        let Storage::Gpu(own) = &**self.own_storage() else {
            return Ok(());
        };
        let now = self.storage();
        let Storage::Gpu(at) = &**now else {
            // Restored to the CPU after its GPU was lost: nothing to keep.
            return Ok(());
        };
        at.ctx.check_lost(op)?;
        // Known to the device it is read from, the one the handle is now,
        // whose recovery restores it; kept before the count of writes is
        // read, and that before the data: a write met meanwhile makes the
        // copy stale, never wrongly valid.
        let kept = own.keep(&at.ctx);
        let unwritten = stale_on_write.then(|| kept.writes());
        let Some(data) = now.read_all(op).await? else {
            return Ok(());
        };
        kept.set_copy(data, unwritten);
        Ok(())
    }
}
