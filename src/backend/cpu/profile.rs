//! Profiling on the CPU device: ops run as they are called, so a profile
//! is each op's host time, noted on the thread that opened it (a
//! thread-local log: the CPU device keeps no state of its own).

use super::storage::CpuStorage;
use crate::clock::Stamp;
use crate::error::{Error, Result};
use crate::profile::{Profile, ProfiledOp};
use crate::profile_region::{self, Frame, ProfileOpen};
use std::cell::RefCell;
use std::sync::Arc;

/// What the profile's operation is called in errors.
const OP: &str = "Device::profile";

/// The open profile's start, its ops, and the end of the last op or
/// readback.
struct Log {
    started: Stamp,
    mark: Stamp,
    ops: Vec<ProfiledOp>,
    /// Per op, the region it ran in.
    frames: Vec<Option<Arc<Frame>>>,
    _open: ProfileOpen,
}

thread_local! {
    static LOG: RefCell<Option<Log>> = const { RefCell::new(None) };
}

/// Closes the thread's profile whatever `profile_ops`' closure did.
struct Open;

impl Drop for Open {
    fn drop(&mut self) {
        LOG.with(|log| log.borrow_mut().take());
    }
}

/// Runs `ops` under a profile of this thread's CPU ops.
///
/// # Errors
/// `Error::Argument` when the thread has a profile open already; what `ops`
/// returned.
pub(crate) fn profile_ops(ops: impl FnOnce() -> Result<()>) -> Result<Profile> {
    let now = Stamp::now();
    LOG.with(|log| {
        let mut log = log.borrow_mut();
        if log.is_some() {
            return Err(Error::argument(
                OP,
                "this thread's CPU ops are being profiled already",
            ));
        }
        *log = Some(Log {
            started: now,
            mark: now,
            ops: Vec::new(),
            frames: Vec::new(),
            _open: ProfileOpen::new(),
        });
        Ok(())
    })?;
    let open = Open;
    ops()?;
    let log = LOG.with(|log| log.borrow_mut().take());
    drop(open);
    let log = log.ok_or_else(|| Error::internal(OP, "the profile was closed"))?;
    Ok(Profile::new(
        log.ops,
        &log.frames,
        Vec::new(),
        Vec::new(),
        // To the end of the last op or readback, as on a GPU.
        log.started.until(log.mark),
        Some("the CPU device runs ops on the host: their time is the host's"),
    ))
}

/// Runs the CPU op `name` writing `storage`, on the threads of its device,
/// noting its host time when a profile is open.
pub(crate) fn profiled<R>(name: &'static str, storage: &CpuStorage, op: impl FnOnce() -> R) -> R {
    let result = storage.threads().enter(op);
    LOG.with(|log| {
        if let Some(log) = log.borrow_mut().as_mut() {
            let now = Stamp::now();
            log.ops.push(ProfiledOp {
                name,
                host: log.mark.until(now),
                kernels: 0..0,
                region: None,
            });
            log.frames.push(profile_region::current());
            log.mark = now;
        }
    });
    result
}

/// Starts the next op's host time now, when a profile is open (after a
/// readback, whose time no op should carry).
pub(crate) fn mark() {
    LOG.with(|log| {
        if let Some(log) = log.borrow_mut().as_mut() {
            log.mark = Stamp::now();
        }
    });
}
