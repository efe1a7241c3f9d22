//! Coming back from a lost GPU: [`Device::recover`] opens a new device and
//! rebinds the handle to it (see `handle.rs`).

use super::handle::{CpuDevice, GpuHandle, Now};
use super::{Device, Inner};
use crate::backend::Place;
use crate::backend::cpu::Threads;
use crate::backend::gpu::GpuContext;
use crate::error::{Error, Result};
use std::sync::Arc;

const OP: &str = "Device::recover";

impl Device {
    /// Rebinds this handle, and every clone of it, to a new GPU device
    /// after its own was lost (blocking; native only): the adapter
    /// [`Device::gpu_with`] would open now with the handle's options (the
    /// same one when the driver offers it again), or, when none opens, the
    /// CPU ([`Device::is_cpu`] then says so for good, and
    /// [`Device::info`] why). Does nothing when the device is not lost,
    /// and on the CPU. Recoveries racing on threads may each open a device;
    /// the first installed stands.
    ///
    /// Tensors made from then on are on the new device. Those of the lost
    /// one stay lost: every call on them fails with `Error::DeviceLost`,
    /// naming the reason, and none of their data comes back. The settings
    /// changed on the handle (flush threshold, fusion, matmul tile, memory
    /// cap) carry over; kernels are built again, and autotuning and the
    /// kernels' self-checks run again, as each is first needed. Listeners
    /// given to [`Device::on_lost`] hear of the new device's loss too.
    /// [`Device::stats`] counts from zero, but for `recoveries`. Tensors
    /// that kept their data ([`Persist`], [`Tensor::checkpoint`]) come
    /// back: every view of them reads it again.
    ///
    /// [`Persist`]: crate::Persist
    /// [`Tensor::checkpoint`]: crate::Tensor::checkpoint
    ///
    /// ```no_run
    /// use webtensor::{Device, Error, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::gpu()?;
    /// let x = Tensor::ones([4], webtensor::DType::F32, &dev)?;
    /// match x.to_vec::<f32>() {
    ///     Err(Error::DeviceLost { reason, .. }) => {
    ///         eprintln!("GPU lost ({reason}), reopening");
    ///         dev.recover()?;
    ///     }
    ///     other => println!("{:?}", other?),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` for a device the application opened
    /// ([`Device::from_wgpu`]): webtensor cannot open it again; give a new
    /// one to [`Device::recover_with`], and for a `WEBTENSOR_*` setting of
    /// the environment set to a value it does not take (as
    /// [`Device::gpu`]; the handle stays lost, to recover again). The
    /// first failure to restore a kept tensor (`Error::OutOfMemory` under
    /// the memory cap, the new device's loss): that tensor stays lost, the
    /// others come back, and the handle is rebound all the same.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn recover(&self) -> Result<()> {
        pollster::block_on(self.recover_async())
    }

    /// [`Device::recover`] without blocking (the form for wasm, where a
    /// device is requested asynchronously).
    ///
    /// # Errors
    /// As [`Device::recover`].
    pub async fn recover_async(&self) -> Result<()> {
        let Some((handle, was, lost)) = self.lost_gpu() else {
            return Ok(());
        };
        if !handle.reopens {
            return Err(Error::argument(
                OP,
                "the device is the application's (Device::from_wgpu): open a new wgpu \
                 device and give it to Device::recover_with",
            ));
        }
        let options = &handle.options;
        let opened = if options.sabotage_recovery {
            Err(Error::NoAdapter {
                op: OP,
                reason: "GpuOptions::sabotage_recovery".into(),
            })
        } else {
            GpuContext::open(options).await
        };
        let next = match opened {
            Ok(ctx) => {
                ctx.carry_settings(&lost);
                Now::Gpu(Arc::new(ctx))
            }
            // A setting it does not take is the caller's to fix: the handle
            // stays lost, to recover once it is (never the CPU for good).
            Err(e @ Error::Argument { .. }) => return Err(e.named(OP)),
            Err(e) => Now::Cpu(CpuDevice {
                reason: Some(
                    format!(
                        "the GPU was lost ({}) and none could be opened again: {e}",
                        lost.lost_reason()
                    )
                    .into(),
                ),
                threads: Threads::default(),
            }),
        };
        // Another recovery that came first stands (this one's device goes).
        let next = Arc::new(next);
        install((OP, handle), &was, &lost, &next, "the device was lost").map(drop)
    }

    /// Rebinds this GPU handle, and every clone of it, to `device` and
    /// `queue`, the application's new wgpu device (after the loss of the
    /// one [`Device::from_wgpu`] was given, say), with the options the
    /// handle was opened with, as [`Device::recover`] does with a device
    /// it opens. The device it was is retired first even if it was not
    /// lost: its tensors then fail with `Error::DeviceLost` as on a lost
    /// device. `info` (from `adapter.get_info()`) names the new one.
    ///
    /// # Errors
    /// `Error::Argument` on the CPU, and for a handle that went on on the
    /// CPU when its GPU was lost (its tensors are host tensors now), and
    /// for a `WEBTENSOR_*` setting of the environment set to a value it
    /// does not take (as [`Device::from_wgpu`]; the handle is left as it
    /// was); as [`Device::recover`] for the tensors it restores.
    pub fn recover_with(
        &self,
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<()> {
        const OP: &str = "Device::recover_with";
        let refused = |what: &str| Err(Error::argument(OP, format!("the device is {what}")));
        let Inner::Gpu(handle) = &self.inner else {
            return refused("the CPU");
        };
        let ctx = Arc::new(GpuContext::from_wgpu(
            OP,
            info,
            device,
            queue,
            &handle.options,
        )?);
        let next = Arc::new(Now::Gpu(ctx.clone()));
        // The application's device replaces whatever the handle is, even
        // a device another recovery installed meanwhile.
        loop {
            let was = handle.now_full();
            let Now::Gpu(old) = &*was else {
                return refused("on the CPU since its GPU was lost");
            };
            ctx.carry_settings(old);
            if install(
                (OP, handle),
                &was,
                old,
                &next,
                "Device::recover_with replaced the device",
            )? {
                return Ok(());
            }
        }
    }

    /// Times this handle's GPU was replaced since it was opened (0 on the
    /// CPU).
    pub fn recoveries(&self) -> u64 {
        match &self.inner {
            Inner::Gpu(handle) => handle.generation(),
            Inner::Cpu(_) => 0,
        }
    }

    /// The handle, what it is now, and its device, when that is a lost GPU.
    fn lost_gpu(&self) -> Option<(&Arc<GpuHandle>, Arc<Now>, Arc<GpuContext>)> {
        let Inner::Gpu(handle) = &self.inner else {
            return None;
        };
        let was = handle.now_full();
        let Now::Gpu(ctx) = &*was else {
            return None;
        };
        let ctx = ctx.clone();
        ctx.is_lost().then_some((handle, was, ctx))
    }
}

/// Makes `next` what `handle` is in place of `was`, and restores there
/// the data the kept storages of `was`'s device `old` hold; `old` is
/// retired first (marked lost for `reason` when it was not, so that no op
/// mixes the two devices' buffers). The restoring ends before another
/// recovery may replace `next`. False when another recovery replaced `was`
/// first: the handle keeps that one's device.
///
/// # Errors
/// The first failure to restore a kept storage: that one lets go of its
/// copy and stays lost for good (but where `next` is lost too: then every
/// copy not restored waits for the recovery that replaces it); the others
/// are restored, and the handle is rebound all the same.
fn install(
    (op, handle): (&'static str, &Arc<GpuHandle>),
    was: &Arc<Now>,
    old: &GpuContext,
    next: &Arc<Now>,
    reason: &str,
) -> Result<bool> {
    old.retire(reason);
    if let Now::Gpu(ctx) = &**next {
        // A device lost before it was handed over is seen as lost now.
        ctx.poll_lost();
    }
    let mut failed = None;
    let replaced = handle.replace(was, next.clone(), |next| {
        for kept in old.kept_storages() {
            let restored = match next {
                Now::Gpu(ctx) => kept.restore(Place::Gpu(ctx)).inspect(|_| {
                    // A later recovery finds it on the new device.
                    ctx.register_kept(&kept);
                }),
                Now::Cpu(cpu) => {
                    // Nothing is lost on the CPU: the copy has done its work.
                    let restored = kept.restore(Place::Host(&cpu.threads));
                    kept.drop_copy();
                    restored
                }
            };
            if let Err(e) = restored {
                match next {
                    // The new device lost too: the copy waits for the
                    // recovery that replaces it.
                    Now::Gpu(ctx) if ctx.is_lost() || matches!(e, Error::DeviceLost { .. }) => {
                        ctx.register_kept(&kept);
                    }
                    _ => kept.drop_copy(),
                }
                failed.get_or_insert(e.named(op));
            }
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(replaced),
    }
}
