//! Profiling a closure's ops on a GPU (see `profile_log.rs` for what is
//! measured, `crate::profile` for what users get).

use super::context::GpuContext;
use super::profile_log::{OP, ProfileLog};
use crate::error::{Error, Result};
use crate::profile::Profile;

/// Why a profile is refused inside a capture.
pub(crate) const CAPTURING: &str = "a step is being captured on this device";

/// Closes a profile that `profile_ops` did not close (its closure
/// panicked): the device records as before.
struct Profiling<'a> {
    ctx: &'a GpuContext,
    ended: bool,
}

impl Drop for Profiling<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.ctx.scheduler().end_profile(&self.ctx.target());
        }
    }
}

/// Runs `ops` under a profile of `ctx`, then submits what they left
/// pending and waits for the GPU's timestamps.
///
/// # Errors
/// `Error::Argument` while a step is being captured or a profile is open
/// on the device; what `ops` returned, as they returned it (the profile is
/// closed then); `Error::DeviceLost` when the device is lost before or
/// during the profile, or while its timestamps are read back.
pub(crate) fn profile_ops(ctx: &GpuContext, ops: impl FnOnce() -> Result<()>) -> Result<Profile> {
    ctx.check_lost(OP)?;
    let log = record(ctx, ops)?;
    // Only the profile's own readbacks are explained here: an error of
    // `ops` was explained by the op that raised it.
    ctx.explain(OP, finish(ctx, log))
}

/// The log of `ops`, run under a profile.
fn record(ctx: &GpuContext, ops: impl FnOnce() -> Result<()>) -> Result<ProfileLog> {
    // Refused inside a capture before anything is flushed: a flush there
    // would fail the capture (`begin_profile` says why again under its
    // lock, should a capture begin meanwhile).
    if ctx.scheduler().is_capturing() {
        return Err(Error::argument(OP, CAPTURING));
    }
    // Work recorded before the profile that fails poisons its own outputs
    // (as in `end_profile`) and the profile goes on, unless the failure was
    // the device's loss, which this flush explains (wgpu may not have told
    // of it yet).
    if let Err(e @ Error::DeviceLost { .. }) = ctx.flush() {
        return Err(e.named(OP));
    }
    // Another thread's self-check or autotuning would show in the
    // profile: it begins once they are done.
    super::own_work::scheduler_after_own_work(ctx).begin_profile(&ctx.target())?;
    let mut profiling = Profiling { ctx, ended: false };
    // The scheduler is not locked while the ops record.
    let result = ops();
    profiling.ended = true;
    let log = ctx.scheduler().end_profile(&ctx.target())?;
    result?;
    Ok(log)
}

#[cfg(not(target_arch = "wasm32"))]
fn finish(ctx: &GpuContext, log: ProfileLog) -> Result<Profile> {
    let period = ctx.queue.get_timestamp_period();
    // A failed map may be the loss before its callback fired: explained
    // here, so that the log keeps only other failures as untimed kernels.
    log.finish(period, |buffer| {
        let read = pollster::block_on(super::storage::map_and_read(
            ctx,
            OP,
            buffer,
            buffer.size(),
            <[u8]>::to_vec,
        ));
        ctx.explain(OP, read)
    })
}

/// In a browser no timestamps are written (nothing to wait for).
#[cfg(target_arch = "wasm32")]
fn finish(_: &GpuContext, log: ProfileLog) -> Result<Profile> {
    log.finish(1.0, |_| {
        Err(crate::error::Error::internal(OP, "timestamps in a browser"))
    })
}
