//! A desktop window whose picture webtensor computes on the window's own
//! GPU device: Gray-Scott reaction-diffusion stepped each frame, its field
//! written into the application's texture (`Tensor::write_to_texture`) and
//! drawn by the application's render pass. Nothing is read back to draw it
//! (the fields' checkpoints, below, copy them to host memory).
//!
//! ```sh
//! cargo run --release --example desktop
//! cargo run --example desktop -- --frames 40 --lose-at 15 --hold-ms 5000   # as CI runs it
//! ```
//!
//! Options: `--frames N` stops after N frames (default: when the window
//! closes), `--steps N` simulation steps per frame (default 8), `--side N`
//! grid side (default 256, at most the device's largest texture side),
//! `--hold-ms T` keeps showing the last frame for T ms before exiting (for
//! a screenshot), `--lose-at N` destroys the device at frame N (as a
//! driver reset would; the `L` key does it at once). After a loss the
//! example opens a new device, rebinds webtensor to it
//! (`Device::recover_with`) and resumes from the fields' last checkpoint
//! (at the start, then every 10 frames drawn), printing a line starting
//! `recovered:`; five losses in a row with no frame drawn between them end
//! it with an error. After the last
//! frame it prints a line starting `ready:`. `scripts/check_desktop.py` runs
//! it under Xvfb, losing the device once, and checks a screenshot of the
//! screen.
//!
//! The window is X11 (Wayland desktops run it through XWayland).

#[cfg(not(target_arch = "wasm32"))]
#[path = "../common/blit.rs"]
mod blit;
#[cfg(not(target_arch = "wasm32"))]
#[path = "../common/gray_scott.rs"]
mod gray_scott;
#[cfg(not(target_arch = "wasm32"))]
mod window;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    if let Err(e) = window::run() {
        eprintln!("desktop example: {e}");
        std::process::exit(1);
    }
}

/// A window needs a desktop; the browser has examples/web.
#[cfg(target_arch = "wasm32")]
fn main() {}
