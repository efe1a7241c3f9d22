//! Uploads written since the queue's last submit. wgpu keeps each
//! `write_buffer`'s staging copy (and a buffer dropped since) until the
//! queue's next submit: a run of uploads with no op between them (a model
//! loading, or uploads over and over) would hold them all. Past
//! [`UPLOAD_WINDOW`] bytes or [`UPLOAD_WRITES`] writes since the last, an
//! empty submit lets them go. The ops still to be submitted read no buffer
//! written so: the pool hands an upload none they use, or the upload
//! flushes them first (see `storage.rs`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes uploaded with no submit after which one is made.
const UPLOAD_WINDOW: u64 = 64 << 20;

/// Writes uploaded with no submit after which one is made.
const UPLOAD_WRITES: u64 = 1024;

/// A device's uploads since its last submit (the scheduler's, a graph
/// run's, an interop copy's, or one made for them; an application's own
/// submits to its queue are not counted).
#[derive(Default)]
pub(crate) struct UploadWindow {
    /// Bytes and writes since.
    since: Mutex<(u64, u64)>,
    /// The empty submits made and the interop copies', for `Device::stats`.
    submits: AtomicU64,
}

impl UploadWindow {
    /// Counts an upload of `bytes` just written to `queue`, and submits
    /// nothing to it past the window (not where `lost`). Takes no lock of
    /// the scheduler's: an upload may come from code that holds it.
    pub fn note(&self, queue: &wgpu::Queue, lost: bool, bytes: u64) {
        let full = {
            let mut since = self.since.lock().unwrap_or_else(|e| e.into_inner());
            since.0 += bytes;
            since.1 += 1;
            let full = since.0 >= UPLOAD_WINDOW || since.1 >= UPLOAD_WRITES;
            if full {
                *since = (0, 0);
            }
            full
        };
        if full && !lost {
            queue.submit([]);
            self.submits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Notes a submit, which took every upload before it along.
    pub fn submitted(&self) {
        *self.since.lock().unwrap_or_else(|e| e.into_inner()) = (0, 0);
    }

    /// Notes a submit of webtensor's own outside the scheduler (an interop
    /// copy or buffer check), counted among the device's submits.
    pub fn submitted_outside(&self) {
        self.submitted();
        self.submits.fetch_add(1, Ordering::Relaxed);
    }

    /// The empty submits made so far, and those [`UploadWindow::submitted_outside`] noted.
    pub fn submits(&self) -> u64 {
        self.submits.load(Ordering::Relaxed)
    }
}
