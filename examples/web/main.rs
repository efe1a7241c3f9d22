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
//! The page survives a lost GPU: it checkpoints the fields every few
//! frames (`Tensor::checkpoint_async`), and when the device is lost (the
//! page's "Lose the GPU" button, or `?lose-at=N` at frame N, destroys it
//! as a browser taking it back would) it opens a new adapter and device,
//! rebinds webtensor to them (`Device::recover_with`) and resumes from the
//! checkpoint; `data-recovered` counts the recoveries.
//!
//! Below it, the page runs a GGUF language model the visitor picks
//! (`generate.rs`, the model and tokenizer of `examples/generate.rs`).
//!
//! Build and serve (see README, "In the browser"):
//! `examples/web/build.sh` then `python3 -m http.server 8000 -d examples/web`.
#![cfg(target_arch = "wasm32")]

#[path = "../common/blit.rs"]
mod blit;
mod generate;
#[path = "../common/gguf_tokenizer.rs"]
mod gguf_tokenizer;
#[path = "../common/gray_scott.rs"]
mod gray_scott;
#[path = "../common/llama.rs"]
mod llama;
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
/// Frames between two checkpoints of the simulation (a lost device resumes
/// from the last).
const CHECKPOINT_EVERY: usize = 5;
/// Losses in a row, with no frame drawn between them, after which the page
/// gives up (a device lost again as soon as it is opened).
const LOSSES_IN_A_ROW: usize = 5;
/// The colour map's range for `v`.
const HEAT: ColorMap = ColorMap::Heat { min: 0.0, max: 0.4 };

/// Runs the simulation and shows it.
#[wasm_bindgen]
pub async fn run() -> Result<(), JsValue> {
    let page = Page::find()?;
    let outcome = match Gpu::open(&page).await {
        Ok(gpu) => {
            page.set_kind("Gpu");
            run_on_gpu(&page, gpu).await
        }
        Err(reason) => {
            page.set_kind("Cpu");
            run_on_cpu(&page, &reason).await
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
    /// The device's first uncaptured error.
    trouble: Arc<Mutex<Option<String>>>,
    instance: wgpu::Instance,
    device: wgpu::Device,
    queue: wgpu::Queue,
    surface: wgpu::Surface<'static>,
    format: wgpu::TextureFormat,
}

impl Gpu {
    /// Why not, where the browser has no WebGPU, gives no adapter or
    /// device, or webtensor refuses the device.
    async fn open(page: &Page) -> Result<Gpu, String> {
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err("the browser has no WebGPU".into());
        }
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::BROWSER_WEBGPU,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let opened = Opened::new(&instance, page).await?;
        let trouble: Arc<Mutex<Option<String>>> = Arc::default();
        watch(&opened.device, &trouble);
        let dev = Device::from_wgpu(
            &opened.info,
            opened.device.clone(),
            opened.queue.clone(),
            GpuOptions::default(),
        )
        .map_err(|e| format!("webtensor cannot use the device: {e}"))?;
        Ok(Gpu {
            dev,
            trouble,
            instance,
            device: opened.device,
            queue: opened.queue,
            surface: opened.surface,
            format: opened.format,
        })
    }

    /// After a lost device: a new adapter and device for the canvas (a
    /// browser's adapter gives one device), webtensor rebound to them
    /// (`Device::recover_with`: the checkpointed fields come back).
    async fn reopen(&mut self, page: &Page) -> AnyResult<()> {
        let opened = Opened::new(&self.instance, page)
            .await
            .map_err(|e| format!("no WebGPU device after the loss: {e}"))?;
        *self.trouble.lock().unwrap() = None;
        watch(&opened.device, &self.trouble);
        self.dev
            .recover_with(&opened.info, opened.device.clone(), opened.queue.clone())?;
        self.device = opened.device;
        self.queue = opened.queue;
        self.surface = opened.surface;
        self.format = opened.format;
        Ok(())
    }

    /// The device's first uncaptured error, as an `Err`.
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

/// An adapter's device for the page's canvas, the canvas configured for it.
struct Opened {
    info: wgpu::AdapterInfo,
    device: wgpu::Device,
    queue: wgpu::Queue,
    surface: wgpu::Surface<'static>,
    format: wgpu::TextureFormat,
}

impl Opened {
    /// Why not, where the browser gives no adapter or device for the
    /// canvas.
    async fn new(instance: &wgpu::Instance, page: &Page) -> Result<Opened, String> {
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(page.canvas.clone()))
            .map_err(|e| format!("the canvas has no WebGPU context: {e}"))?;
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                compatible_surface: Some(&surface),
                force_fallback_adapter: false,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| format!("no adapter: {e}"))?;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("web example"),
                required_features: adapter.features() & wgpu::Features::SHADER_F16,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("no device: {e}"))?;
        let config = surface
            .get_default_config(
                &adapter,
                page.canvas.width().max(1),
                page.canvas.height().max(1),
            )
            .ok_or("the adapter cannot draw on the canvas")?;
        surface.configure(&device, &config);
        Ok(Opened {
            info: adapter.get_info(),
            device,
            queue,
            surface,
            format: config.format,
        })
    }
}

/// Keeps the first error `device` raises outside webtensor's calls in
/// `trouble` (a browser only logs them), for the frame loop to report.
/// Its loss webtensor hears of (the device's lost callback is
/// webtensor's, see `Device::from_wgpu`).
fn watch(device: &wgpu::Device, trouble: &Arc<Mutex<Option<String>>>) {
    let slot = trouble.clone();
    device.on_uncaptured_error(Arc::new(move |e| {
        slot.lock().unwrap().get_or_insert(e.to_string());
    }));
}

/// True when `e` is the loss of the GPU device: webtensor's error, or
/// another (the canvas's) once webtensor knows the device is lost.
fn is_loss(e: &(dyn std::error::Error + 'static), dev: &Device) -> bool {
    dev.is_lost() || matches!(e.downcast_ref(), Some(webtensor::Error::DeviceLost { .. }))
}

/// Steps the simulation on the GPU, drawing it, until it is done; after a
/// lost device, resumes on a new one from the last checkpoint.
async fn run_on_gpu(page: &Page, mut gpu: Gpu) -> AnyResult<String> {
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
    let mut blit = Blit::new(&gpu.device, gpu.format, SIDE as u32, SIDE as u32);
    let mut sim = GrayScott::new(SIDE, &gpu.dev)?;
    // Before any loss (the button works while the device opens): a device
    // lost at frame 0 resumes from here, where with no checkpoint the
    // fields would stay lost.
    sim.checkpoint_async().await?;
    let start = page.now();
    let (mut frames, mut recoveries, mut losses_in_a_row) = (0, 0, 0);
    // `?lose-at=N` loses the device at frame N; the page's button at once.
    let mut lose_at = page.lose_at();
    while sim.steps < steps {
        let checkpoint = frames > 0 && frames % CHECKPOINT_EVERY == 0;
        if page.take_lose_request() || lose_at == Some(frames) {
            lose_at = None;
            // As a browser taking the device back would.
            gpu.device.destroy();
        }
        let drawn = async {
            if checkpoint {
                sim.checkpoint_async().await?;
            }
            sim.step_captured(STEPS_PER_FRAME.min(steps - sim.steps))?;
            sim.v().write_to_texture(blit.texture(), HEAT)?;
            gpu.present(&blit)?;
            // Wait for the GPU (so the progress is true), then let the
            // browser show the frame.
            gpu.dev.sync_async().await?;
            gpu.check()
        }
        .await;
        match drawn {
            Err(e) if is_loss(e.as_ref(), &gpu.dev) => {
                losses_in_a_row += 1;
                if losses_in_a_row >= LOSSES_IN_A_ROW {
                    return Err(format!(
                        "the GPU device was lost {losses_in_a_row} times in a row, each \
                         before a frame was drawn ({e})"
                    )
                    .into());
                }
                let lost_at = sim.steps;
                gpu.reopen(page).await?;
                blit = Blit::new(&gpu.device, gpu.format, SIDE as u32, SIDE as u32);
                sim.resume();
                recoveries += 1;
                page.recovered(recoveries, lost_at, sim.steps);
                continue;
            }
            other => other?,
        }
        frames += 1;
        losses_in_a_row = 0;
        page.progress(sim.steps, steps, frames, page.now() - start);
        page::next_animation_frame().await;
    }
    let recovered = match recoveries {
        0 => String::new(),
        n => format!(", after {n} lost device(s) resumed from their checkpoints"),
    };
    Ok(format!(
        "ok: {steps} steps on {SIDE} x {SIDE} in {:.0} ms, {frames} frames drawn from \
         the GPU on {}{recovered}",
        page.now() - start,
        page::adapter_name(&info)
    ))
}

/// Without a WebGPU device (`reason` says why): webtensor's CPU device,
/// painted through a 2D canvas.
async fn run_on_cpu(page: &Page, reason: &str) -> AnyResult<String> {
    let dev = Device::cpu();
    page.notice(&format!(
        "No WebGPU device here ({reason}): this page computes on the CPU, {SOFTWARE_STEPS} steps."
    ));
    // A canvas that gave WebGPU a context has no 2D one.
    let canvas = page
        .fresh_canvas()
        .map_err(|e| format!("no canvas to paint on: {e:?}"))?;
    let mut sim = GrayScott::new(SIDE, &dev)?;
    let start = page.now();
    let mut frames = 0;
    while sim.steps < SOFTWARE_STEPS {
        sim.step_captured(STEPS_PER_FRAME.min(SOFTWARE_STEPS - sim.steps))?;
        page::paint(&canvas, &sim.v().to_vec_async::<f32>().await?, SIDE, HEAT);
        frames += 1;
        page.progress(sim.steps, SOFTWARE_STEPS, frames, page.now() - start);
        page::next_animation_frame().await;
    }
    Ok(format!(
        "ok: {SOFTWARE_STEPS} steps on {SIDE} x {SIDE} in {:.0} ms on the CPU",
        page.now() - start
    ))
}
