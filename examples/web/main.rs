//! Gray-Scott reaction-diffusion in a browser page, drawn while it runs
//! straight from the GPU: the page opens its own WebGPU device and canvas
//! surface, webtensor computes on that device (`Device::from_wgpu`), and
//! every few steps the field is written into the page's texture
//! (`Tensor::write_to_texture`) and drawn onto the canvas by the page's
//! render pass. Nothing is read back. Without WebGPU the page falls back to
//! webtensor's CPU device and paints through a 2D canvas.
//!
//! The page's `#status` shows the progress and ends with
//! `data-state="done"` (or `"error"`); `data-frames` counts the frames
//! drawn. `#notice` says so when the adapter is a software one.
//!
//! Build and serve (see README, "In the browser"):
//! `examples/web/build.sh` then `python3 -m http.server 8000 -d examples/web`.
#![cfg(target_arch = "wasm32")]

#[path = "../common/blit.rs"]
mod blit;
#[path = "../common/gray_scott.rs"]
mod gray_scott;
mod page;

use blit::Blit;
use gray_scott::GrayScott;
use page::Page;
use std::sync::{Arc, Mutex};
use wasm_bindgen::prelude::*;
use webtensor::{ColorMap, Device, GpuOptions, wgpu};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The grid's side.
const SIDE: usize = 192;
/// Steps in all (fewer where the adapter or the fallback runs on the CPU),
/// and steps between two frames drawn.
const STEPS: usize = 1500;
const SOFTWARE_STEPS: usize = 300;
const STEPS_PER_FRAME: usize = 20;
/// The colour map's range for `v`.
const HEAT: ColorMap = ColorMap::Heat { min: 0.0, max: 0.4 };

/// Runs the simulation and shows it.
#[wasm_bindgen]
pub async fn run() -> Result<(), JsValue> {
    let page = Page::find()?;
    let outcome = match Gpu::open(&page).await {
        Some(gpu) => {
            page.set_kind("Gpu");
            run_on_gpu(&page, gpu).await
        }
        None => {
            page.set_kind("Cpu");
            run_on_cpu(&page).await
        }
    };
    match outcome {
        Ok(summary) => page.finish(&summary),
        Err(e) => page.fail(&e.to_string()),
    }
}

/// The page's WebGPU device and canvas surface, and webtensor's device on
/// the same wgpu device.
struct Gpu {
    dev: Device,
    /// Why the device was lost, or its first uncaptured error.
    trouble: Arc<Mutex<Option<String>>>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    surface: wgpu::Surface<'static>,
    format: wgpu::TextureFormat,
}

impl Gpu {
    /// `None` where the browser has no WebGPU or gives no adapter.
    async fn open(page: &Page) -> Option<Gpu> {
        if !wgpu::util::is_browser_webgpu_supported().await {
            return None;
        }
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::BROWSER_WEBGPU,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(page.canvas.clone()))
            .ok()?;
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                compatible_surface: Some(&surface),
                force_fallback_adapter: false,
                apply_limit_buckets: false,
            })
            .await
            .ok()?;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("web example"),
                required_features: adapter.features() & wgpu::Features::SHADER_F16,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .ok()?;
        let config = surface.get_default_config(
            &adapter,
            page.canvas.width().max(1),
            page.canvas.height().max(1),
        )?;
        // The page owns the device, so it hears of its errors and its loss
        // (a browser only logs them).
        let trouble: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = trouble.clone();
        device.on_uncaptured_error(Arc::new(move |e| {
            slot.lock().unwrap().get_or_insert(e.to_string());
        }));
        let slot = trouble.clone();
        device.set_device_lost_callback(move |_, message| {
            slot.lock()
                .unwrap()
                .get_or_insert(format!("the browser lost the WebGPU device: {message}"));
        });
        surface.configure(&device, &config);
        let dev = Device::from_wgpu(
            &adapter.get_info(),
            device.clone(),
            queue.clone(),
            GpuOptions::default(),
        );
        Some(Gpu {
            dev,
            trouble,
            device,
            queue,
            surface,
            format: config.format,
        })
    }

    /// The device's loss or first error, as an `Err`.
    fn check(&self) -> AnyResult<()> {
        match self.trouble.lock().unwrap().clone() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Draws the blit's texture onto the canvas.
    fn present(&self, blit: &Blit) -> AnyResult<()> {
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(frame)
            | wgpu::CurrentSurfaceTexture::Suboptimal(frame) => frame,
            other => {
                return Err(format!("the canvas gave no texture to draw into ({other:?})").into());
            }
        };
        blit.present(&self.device, &self.queue, frame);
        Ok(())
    }
}

async fn run_on_gpu(page: &Page, gpu: Gpu) -> AnyResult<String> {
    let info = gpu.dev.info();
    let steps = if info.is_software() {
        page.notice(&format!(
            "This page runs on a software WebGPU adapter ({}): the GPU work runs \
             on the CPU, much slower than on a graphics card, so the run is cut to \
             {SOFTWARE_STEPS} steps.",
            page::adapter_name(&info)
        ));
        SOFTWARE_STEPS
    } else {
        STEPS
    };
    let blit = Blit::new(&gpu.device, gpu.format, SIDE as u32, SIDE as u32);
    let mut sim = GrayScott::new(SIDE, &gpu.dev)?;
    let start = page.now();
    let mut frames = 0;
    while sim.steps < steps {
        sim.step_captured(STEPS_PER_FRAME.min(steps - sim.steps))?;
        sim.v().write_to_texture(blit.texture(), HEAT)?;
        gpu.present(&blit)?;
        // Wait for the GPU (so the progress is true), then let the browser
        // show the frame.
        gpu.dev.sync_async().await?;
        gpu.check()?;
        frames += 1;
        page.progress(sim.steps, steps, frames, page.now() - start);
        page::next_animation_frame().await;
    }
    Ok(format!(
        "ok: {steps} steps on {SIDE} x {SIDE} in {:.0} ms, {frames} frames drawn from \
         the GPU on {}",
        page.now() - start,
        page::adapter_name(&info)
    ))
}

/// Without WebGPU: webtensor's CPU device, painted through a 2D canvas.
async fn run_on_cpu(page: &Page) -> AnyResult<String> {
    let dev = Device::default_async().await?;
    let info = dev.info();
    page.notice(&format!(
        "No WebGPU here ({}): this page computes on the CPU, {SOFTWARE_STEPS} steps.",
        info.fallback_reason.as_deref().unwrap_or("chosen")
    ));
    let mut sim = GrayScott::new(SIDE, &dev)?;
    let start = page.now();
    let mut frames = 0;
    while sim.steps < SOFTWARE_STEPS {
        sim.step_captured(STEPS_PER_FRAME.min(SOFTWARE_STEPS - sim.steps))?;
        page.paint(&sim.v().to_vec_async::<f32>().await?, SIDE, HEAT);
        frames += 1;
        page.progress(sim.steps, SOFTWARE_STEPS, frames, page.now() - start);
        page::next_animation_frame().await;
    }
    Ok(format!(
        "ok: {SOFTWARE_STEPS} steps on {SIDE} x {SIDE} in {:.0} ms on the CPU",
        page.now() - start
    ))
}
