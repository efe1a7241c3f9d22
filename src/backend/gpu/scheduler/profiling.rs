//! The scheduler's side of profiles (see `profile_log.rs`): a profile
//! opened after what is pending is submitted, and closed after what the
//! profiled code left pending is.

use super::Scheduler;
use crate::backend::gpu::profile_log::{self, ProfileLog};
use crate::backend::gpu::target::Target;
use crate::error::{Error, Result};

impl Scheduler {
    /// Opens a profile (see `profile_log.rs`): what is pending is submitted
    /// first, outside it.
    ///
    /// # Errors
    /// `Error::Argument` while a step is being captured or a profile is
    /// open; as [`Scheduler::flush`].
    pub fn begin_profile(&mut self, ctx: &Target<'_>) -> Result<()> {
        let busy = if self.capture.is_some() {
            Some(crate::backend::gpu::profile::CAPTURING)
        } else if self.profile.is_some() {
            Some("the device is being profiled already")
        } else {
            None
        };
        if let Some(why) = busy {
            return Err(Error::argument(profile_log::OP, why));
        }
        if self.has_pending() {
            // Work recorded before the profile that fails poisons its own
            // outputs (as in `end_profile`); the profile goes on.
            if let Err(e @ Error::DeviceLost { .. }) = self.flush(ctx, |_| {}) {
                return Err(e);
            }
        }
        self.profile = Some(ProfileLog::new(ctx.facts.timestamps));
        Ok(())
    }

    /// Submits what is pending, inside the open profile, and closes it.
    ///
    /// # Errors
    /// `Error::Internal` when no profile is open. A failed submit is not an
    /// error here: it poisons its outputs, and the profile shows its ops
    /// without kernels.
    pub fn end_profile(&mut self, ctx: &Target<'_>) -> Result<ProfileLog> {
        if self.profile.is_none() {
            return Err(Error::internal(profile_log::OP, "no profile is open"));
        }
        if let Some(profile) = &mut self.profile {
            profile.close();
        }
        if self.has_pending() {
            let _poisoned = self.flush(ctx, |_| {});
        }
        self.profile
            .take()
            .ok_or_else(|| Error::internal(profile_log::OP, "no profile is open"))
    }

    /// Starts the profile's next op's host time now, if one is open (after
    /// a wait for the GPU).
    pub fn profile_mark(&mut self) {
        if let Some(profile) = &mut self.profile {
            profile.mark();
        }
    }
}
