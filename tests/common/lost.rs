//! Losing GPU devices on purpose, for the suites of a lost GPU and its
//! recovery: a watchdog bounding every wait, the loss itself, and the
//! checks of what lost calls return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use webtensor::{Device, Error};

/// How long a call on a lost device may take before a test calls it a
/// hang (lavapipe, a loaded CI machine).
pub const WATCHDOG: Duration = Duration::from_secs(120);

/// Runs `f` on a thread of its own and returns what it returns, failing
/// the test when it takes longer than [`WATCHDOG`].
pub fn within_watchdog<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{what}: no answer within {WATCHDOG:?} (a hang)"))
}

/// Waits (within the watchdog) until `count` reaches `n`, then checks that
/// it stays there: listeners hear of a loss on a thread of their own.
#[track_caller]
pub fn heard_within(count: &AtomicUsize, n: usize, what: &str) {
    let start = Instant::now();
    while count.load(Ordering::SeqCst) < n && start.elapsed() < WATCHDOG {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(count.load(Ordering::SeqCst), n, "{what}");
}

/// Destroys `dev`'s wgpu device, as a driver reset or a browser would take
/// it (webtensor hears of it at its next poll).
pub fn destroy(dev: &Device) {
    let (device, _) = dev.wgpu().expect("a GPU device");
    device.destroy();
}

/// [`destroy`], then syncs (within the watchdog) until webtensor knows the
/// device is lost (another thread's poll may take wgpu's callback first).
pub fn lose(dev: &Device) {
    destroy(dev);
    within_watchdog("the loss, seen by a sync", {
        let dev = dev.clone();
        move || {
            while !matches!(dev.sync(), Err(Error::DeviceLost { .. })) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    assert!(dev.is_lost());
}

/// Asserts that `result` is `Error::DeviceLost` for the destroyed device.
#[track_caller]
pub fn assert_lost<T: std::fmt::Debug>(result: webtensor::Result<T>, what: &str) {
    assert!(
        matches!(result, Err(Error::DeviceLost { ref reason, .. }) if reason.contains("destroyed")),
        "{what}: expected Error::DeviceLost, got {result:?}"
    );
}
