//! Whether a GPU device is lost, and who wants to hear of it.
//!
//! wgpu reports a loss through the device's lost callback: natively when
//! a poll finds the device gone (a driver reset, `wgpu::Device::destroy`,
//! a failed submit), in a browser when the `GPUDevice.lost` promise
//! resolves. The context sets that callback to [`Lost::mark`]; from then on
//! every op, upload, readback, sync and interop call on the device checks
//! [`Lost::check`] first, one atomic load, and fails with
//! `Error::DeviceLost` at once. A failure met before the callback fired
//! (a readback whose map failed as the device went) is explained by
//! `GpuContext::explain`, which lets a pending callback fire first.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A function the application gave `Device::on_lost`.
pub(crate) type Listener = Arc<dyn Fn(&str) + Send + Sync>;

/// One device's loss: not yet, or why.
#[derive(Default)]
pub(crate) struct Lost {
    /// Set once, after `reason`: a reader that sees it finds the reason.
    flag: AtomicBool,
    reason: OnceLock<String>,
    listeners: Mutex<Vec<Listener>>,
}

impl Lost {
    /// Marks the device lost for `reason` (the first reason is kept) and
    /// calls the listeners, once, on this thread, holding no lock.
    pub fn mark(&self, reason: String) {
        if self.reason.set(reason).is_err() {
            return;
        }
        self.flag.store(true, Ordering::Release);
        let listeners = std::mem::take(&mut *self.lock());
        let reason = self.reason();
        for listener in &listeners {
            listener(reason);
        }
    }

    /// [`Lost::mark`] without telling the listeners, who are let go: the
    /// device was replaced on purpose (`Device::recover_with` of a working
    /// one), which is no loss to announce.
    pub fn mark_retired(&self, reason: String) {
        if self.reason.set(reason).is_err() {
            return;
        }
        self.flag.store(true, Ordering::Release);
        drop(std::mem::take(&mut *self.lock()));
    }

    /// wgpu's lost callback, as [`Lost::mark`] takes it: the reason and
    /// wgpu's message (empty after `destroy`).
    pub fn mark_from_wgpu(&self, reason: wgpu::DeviceLostReason, message: &str) {
        let reason = match (reason, message.trim()) {
            (wgpu::DeviceLostReason::Destroyed, "") => "the device was destroyed".to_string(),
            (wgpu::DeviceLostReason::Destroyed, m) => format!("the device was destroyed: {m}"),
            (wgpu::DeviceLostReason::Unknown, "") => "the driver lost the device".to_string(),
            (wgpu::DeviceLostReason::Unknown, m) => m.to_string(),
        };
        self.mark(reason);
    }

    /// True once the device is lost.
    #[inline]
    pub fn is_lost(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Why the device was lost (empty while it is not).
    pub fn reason(&self) -> &str {
        self.reason.get().map_or("", String::as_str)
    }

    /// `Ok` while the device is not lost.
    ///
    /// # Errors
    /// `Error::DeviceLost` naming `op` once it is.
    #[inline]
    pub fn check(&self, op: &'static str) -> Result<()> {
        if self.is_lost() {
            return Err(self.error(op));
        }
        Ok(())
    }

    /// The error of `op` on this lost device.
    #[cold]
    pub fn error(&self, op: &'static str) -> Error {
        Error::DeviceLost {
            op,
            reason: self.reason().to_string(),
        }
    }

    /// Calls `listener` when the device is lost: now, when it already is.
    pub fn listen(&self, listener: Listener) {
        let mut listeners = self.lock();
        if !self.is_lost() {
            listeners.push(listener);
            return;
        }
        drop(listeners);
        listener(self.reason());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_loss_is_marked_once_and_heard_once_by_every_listener() {
        let lost = Lost::default();
        assert!(lost.check("add").is_ok());
        let heard = Arc::new(AtomicUsize::new(0));
        let h = heard.clone();
        lost.listen(Arc::new(move |r: &str| {
            assert_eq!(r, "the device was destroyed");
            h.fetch_add(1, Ordering::Relaxed);
        }));
        lost.mark_from_wgpu(wgpu::DeviceLostReason::Destroyed, "");
        lost.mark("a second reason".into());
        assert_eq!(heard.load(Ordering::Relaxed), 1);
        assert_eq!(
            lost.check("add"),
            Err(Error::DeviceLost {
                op: "add",
                reason: "the device was destroyed".into()
            })
        );
        // A listener that comes late hears at once.
        let h = heard.clone();
        lost.listen(Arc::new(move |_: &str| {
            h.fetch_add(1, Ordering::Relaxed);
        }));
        assert_eq!(heard.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_listener_may_use_the_device_it_hears_of() {
        let lost = Arc::new(Lost::default());
        let inner = lost.clone();
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        lost.listen(Arc::new(move |_: &str| {
            // No lock of the device is held: this neither deadlocks nor
            // finds the device usable.
            *s.lock().unwrap() = Some(inner.check("sync").is_err());
            inner.listen(Arc::new(|_: &str| {}));
        }));
        lost.mark_from_wgpu(wgpu::DeviceLostReason::Unknown, "VK_ERROR_DEVICE_LOST");
        assert_eq!(*seen.lock().unwrap(), Some(true));
        assert_eq!(lost.reason(), "VK_ERROR_DEVICE_LOST");
    }
}
