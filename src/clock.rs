//! The host's clock where the library runs: `std::time::Instant` natively,
//! `performance.now()` in a browser (where `Instant` panics). Browsers
//! coarsen `performance.now()` (Chromium to 100 µs, 5 µs in a
//! cross-origin-isolated page), so short spans read there are quantised.

use std::time::Duration;

/// A point in time on the host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp(
    #[cfg(not(target_arch = "wasm32"))] std::time::Instant,
    /// Milliseconds since the page's time origin.
    #[cfg(target_arch = "wasm32")]
    f64,
);

impl Stamp {
    /// Now.
    pub fn now() -> Stamp {
        #[cfg(not(target_arch = "wasm32"))]
        return Stamp(std::time::Instant::now());
        #[cfg(target_arch = "wasm32")]
        return Stamp(performance_now());
    }

    /// The time from `self` to `later` (zero if `later` is earlier).
    pub fn until(self, later: Stamp) -> Duration {
        #[cfg(not(target_arch = "wasm32"))]
        return later.0.saturating_duration_since(self.0);
        #[cfg(target_arch = "wasm32")]
        return Duration::from_secs_f64((later.0 - self.0).max(0.0) * 1e-3);
    }
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `performance.now()`: a page's and a worker's global alike.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// Resolves on a later turn of the page's event loop (a `setTimeout` of
/// 0): the tasks already queued, a device's lost promise among them, run
/// first.
#[cfg(target_arch = "wasm32")]
pub(crate) async fn next_task() {
    use wasm_bindgen_futures::js_sys::{Function, Promise};
    let mut later = |resolve: Function, _reject: Function| set_timeout(&resolve, 0);
    let _ = wasm_bindgen_futures::JsFuture::from(Promise::new(&mut later)).await;
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `setTimeout(handler, ms)`: a page's and a worker's global alike.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &wasm_bindgen_futures::js_sys::Function, ms: i32);
}
