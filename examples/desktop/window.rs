//! The window, its surface and device, and the frame loop.

use crate::blit::Blit;
use crate::gray_scott::GrayScott;
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtensor::{ColorMap, Device, Error as TensorError, GpuOptions, wgpu};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::Key;
use winit::window::{Window, WindowId};

type AnyResult<T> = Result<T, Box<dyn Error>>;

/// The command line.
struct Args {
    frames: Option<usize>,
    steps: usize,
    side: usize,
    hold: Duration,
    /// The frame at which the example loses its device on purpose.
    lose_at: Option<usize>,
}

/// Frames between two checkpoints of the simulation.
const CHECKPOINT_EVERY: usize = 10;
/// Losses in a row, with no frame drawn between them, after which the
/// example gives up (a device lost again as soon as it is opened).
const LOSSES_IN_A_ROW: usize = 5;

impl Args {
    fn parse() -> AnyResult<Self> {
        let mut args = Args {
            frames: None,
            steps: 8,
            side: 256,
            hold: Duration::ZERO,
            lose_at: None,
        };
        let mut words = std::env::args().skip(1);
        while let Some(flag) = words.next() {
            let value = words
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?;
            let number: u64 = value
                .parse()
                .map_err(|_| format!("{flag} takes a whole number, not {value:?}"))?;
            match flag.as_str() {
                "--frames" if number >= 1 => args.frames = Some(number as usize),
                "--frames" => return Err("--frames must be at least 1".into()),
                "--steps" => args.steps = number as usize,
                "--side" if number >= 8 => args.side = number as usize,
                "--side" => return Err("--side must be at least 8".into()),
                "--hold-ms" => args.hold = Duration::from_millis(number),
                "--lose-at" => args.lose_at = Some(number as usize),
                _ => return Err(format!("unknown option {flag}").into()),
            }
        }
        Ok(args)
    }
}

/// Opens the window and runs frames until it closes or `--frames` are done.
pub fn run() -> AnyResult<()> {
    let args = Args::parse()?;
    let event_loop = EventLoop::new()?;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle_from_env(
        Box::new(event_loop.owned_display_handle()),
    ));
    let mut app = App {
        args,
        instance,
        scene: None,
        error: None,
    };
    event_loop.run_app(&mut app)?;
    match app.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct App {
    args: Args,
    instance: wgpu::Instance,
    scene: Option<Scene>,
    error: Option<Box<dyn Error>>,
}

/// Everything that lives with the window.
struct Scene {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// webtensor's handle on `device` (rebound to the next device after a
    /// loss, see [`Scene::recover`]).
    dev: Device,
    blit: Blit,
    sim: GrayScott,
    /// The device is to be lost at the next frame (the `L` key).
    lose_now: bool,
    /// Whether `--lose-at` has lost the device yet (once).
    lost_at_frame: bool,
    device_name: String,
    frames: usize,
    /// Devices lost since the last frame drawn.
    losses_in_a_row: usize,
    started: Instant,
    /// When the last frame was shown (`--frames`), and until when to hold it.
    hold_until: Option<Instant>,
}

impl Scene {
    fn new(
        event_loop: &ActiveEventLoop,
        instance: &wgpu::Instance,
        args: &Args,
    ) -> AnyResult<Self> {
        // The texture's side, checked against the device's limit below.
        let side = u32::try_from(args.side).unwrap_or(u32::MAX);
        let shown = side.clamp(512, 1024);
        let window = Arc::new(
            event_loop.create_window(
                Window::default_attributes()
                    .with_title("webtensor: Gray-Scott")
                    .with_inner_size(PhysicalSize::new(shown, shown)),
            )?,
        );
        let surface = instance.create_surface(window.clone())?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            compatible_surface: Some(&surface),
            force_fallback_adapter: false,
            apply_limit_buckets: false,
        }))?;
        let (device, queue) = open_device(&adapter)?;
        let largest = device.limits().max_texture_dimension_2d;
        if side > largest {
            return Err(format!(
                "--side {} is past the largest texture side of this device, {largest}",
                args.side
            )
            .into());
        }
        let info = adapter.get_info();
        let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())?;
        let size = window.inner_size();
        let config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or("the adapter cannot present to this window")?;
        surface.configure(&device, &config);
        let blit = Blit::new(&device, config.format, side, side);
        let mut sim = GrayScott::new(args.side, &dev)?;
        // Before any loss: a device lost at frame 0 resumes from here (with
        // no checkpoint, the fields would stay lost).
        sim.checkpoint()?;
        Ok(Self {
            window,
            surface,
            config,
            adapter,
            device,
            queue,
            dev,
            blit,
            sim,
            lose_now: false,
            lost_at_frame: false,
            device_name: format!("{} ({:?})", info.name, info.backend),
            frames: 0,
            losses_in_a_row: 0,
            started: Instant::now(),
            hold_until: None,
        })
    }

    /// Checkpoints now and then, steps the simulation and writes its field
    /// into the texture (submitted; the render pass is submitted after it
    /// on the same queue).
    fn compute(&mut self, args: &Args) -> webtensor::Result<()> {
        if self.frames > 0 && self.frames.is_multiple_of(CHECKPOINT_EVERY) {
            self.sim.checkpoint()?;
        }
        self.sim.step_captured(args.steps)?;
        self.sim
            .v()
            .write_to_texture(self.blit.texture(), ColorMap::Heat { min: 0.0, max: 0.4 })
    }

    /// Opens a new device on the adapter and carries on there: the surface
    /// and the blit are the application's to make again; webtensor's handle
    /// is rebound to the device (`Device::recover_with`), the fields come
    /// back from their last checkpoint, and the captured step is captured
    /// again by its next run.
    fn recover(&mut self, instance: &wgpu::Instance, reason: &str) -> AnyResult<()> {
        self.losses_in_a_row += 1;
        if self.losses_in_a_row >= LOSSES_IN_A_ROW {
            return Err(format!(
                "the device was lost {} times in a row, each before a frame was drawn ({reason})",
                self.losses_in_a_row
            )
            .into());
        }
        let (device, queue) = open_device(&self.adapter)?;
        // The lost device's swapchain goes with its surface.
        self.surface = instance.create_surface(self.window.clone())?;
        self.surface.configure(&device, &self.config);
        let (width, height) = (self.blit.texture().width(), self.blit.texture().height());
        self.blit = Blit::new(&device, self.config.format, width, height);
        self.dev
            .recover_with(&self.adapter.get_info(), device.clone(), queue.clone())?;
        (self.device, self.queue) = (device, queue);
        let lost_at = self.sim.steps;
        self.sim.resume();
        println!(
            "recovered: the device was lost at step {lost_at} ({reason}); resumed from the \
             checkpoint at step {} on a new device",
            self.sim.steps
        );
        Ok(())
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width > 0 && size.height > 0 {
            self.config.width = size.width;
            self.config.height = size.height;
            self.surface.configure(&self.device, &self.config);
        }
    }

    /// Steps the simulation (until `--frames` are done), writes its field
    /// into the texture and presents it; after a lost device, recovers.
    /// Nothing is computed while the window cannot show a frame (hidden,
    /// minimized), so the simulation and its checkpoints keep the pace of
    /// the frames drawn.
    fn frame(&mut self, instance: &wgpu::Instance, args: &Args) -> AnyResult<()> {
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(frame)
            | wgpu::CurrentSurfaceTexture::Suboptimal(frame) => frame,
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                // As after a resize, unless the device is gone.
                if let Err(TensorError::DeviceLost { reason, .. }) = self.dev.sync() {
                    return self.recover(instance, &reason);
                }
                self.surface.configure(&self.device, &self.config);
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                // A lost device fails its surface first: wgpu tells
                // webtensor of the loss at the next wait.
                if let Err(TensorError::DeviceLost { reason, .. }) = self.dev.sync() {
                    return self.recover(instance, &reason);
                }
                return Err("the surface raised a validation error".into());
            }
        };
        let computing = self.hold_until.is_none();
        if computing {
            let at_frame = !self.lost_at_frame && args.lose_at == Some(self.frames);
            if std::mem::take(&mut self.lose_now) || at_frame {
                self.lost_at_frame |= at_frame;
                // As a driver reset would take it.
                println!("losing the device at frame {}", self.frames);
                self.device.destroy();
            }
            match self.compute(args) {
                // The frame acquired goes unpresented with its device.
                Err(TensorError::DeviceLost { reason, .. }) => {
                    drop(frame);
                    return self.recover(instance, &reason);
                }
                other => other?,
            }
        }
        self.blit.present(&self.device, &self.queue, frame);
        if !computing {
            return Ok(());
        }
        self.frames += 1;
        self.losses_in_a_row = 0;
        let per_frame = self.started.elapsed().as_secs_f64() * 1e3 / self.frames as f64;
        self.window.set_title(&format!(
            "webtensor: Gray-Scott, step {} ({per_frame:.1} ms a frame)",
            self.sim.steps
        ));
        if Some(self.frames) == args.frames {
            println!(
                "ready: {} frames, {} steps of a {side} x {side} grid, {per_frame:.1} ms a frame on {}",
                self.frames,
                self.sim.steps,
                self.device_name,
                side = args.side,
            );
            self.hold_until = Some(Instant::now() + args.hold);
        }
        Ok(())
    }
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: Box<dyn Error>) {
        self.error = Some(e);
        event_loop.exit();
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.scene.is_none() {
            match Scene::new(event_loop, &self.instance, &self.args) {
                Ok(scene) => self.scene = Some(scene),
                Err(e) => self.fail(event_loop, e),
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let Some(scene) = self.scene.as_mut() else {
            return;
        };
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => scene.resize(size),
            WindowEvent::KeyboardInput { event, .. }
                if event.state == ElementState::Pressed
                    && matches!(&event.logical_key, Key::Character(c) if c.eq_ignore_ascii_case("l")) =>
            {
                scene.lose_now = true;
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = scene.frame(&self.instance, &self.args) {
                    self.fail(event_loop, e);
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        let Some(scene) = self.scene.as_ref() else {
            return;
        };
        match scene.hold_until {
            None => {
                event_loop.set_control_flow(ControlFlow::Poll);
                scene.window.request_redraw();
            }
            // Holding the last frame: the window shows it until the time
            // is up (an expose redraws it).
            Some(until) if Instant::now() < until => {
                event_loop.set_control_flow(ControlFlow::WaitUntil(until));
            }
            Some(_) => event_loop.exit(),
        }
    }
}

/// Opens a device on `adapter` for the window and webtensor: the
/// application's own (f16 native when the device has SHADER_F16).
fn open_device(adapter: &wgpu::Adapter) -> AnyResult<(wgpu::Device, wgpu::Queue)> {
    Ok(pollster::block_on(adapter.request_device(
        &wgpu::DeviceDescriptor {
            label: Some("desktop example"),
            required_features: adapter.features() & wgpu::Features::SHADER_F16,
            required_limits: adapter.limits(),
            ..Default::default()
        },
    ))?)
}
