//! The window, its surface and device, and the frame loop.

use crate::blit::Blit;
use crate::gray_scott::GrayScott;
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtensor::{ColorMap, Device, GpuOptions, wgpu};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

type AnyResult<T> = Result<T, Box<dyn Error>>;

/// The command line.
struct Args {
    frames: Option<usize>,
    steps: usize,
    side: usize,
    hold: Duration,
}

impl Args {
    fn parse() -> AnyResult<Self> {
        let mut args = Args {
            frames: None,
            steps: 8,
            side: 256,
            hold: Duration::ZERO,
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
                "--frames" => args.frames = Some(number as usize),
                "--steps" => args.steps = number as usize,
                "--side" if number >= 8 => args.side = number as usize,
                "--side" => return Err("--side must be at least 8".into()),
                "--hold-ms" => args.hold = Duration::from_millis(number),
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
    device: wgpu::Device,
    queue: wgpu::Queue,
    blit: Blit,
    sim: GrayScott,
    device_name: String,
    frames: usize,
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
        let side = args.side as u32;
        let window = Arc::new(
            event_loop.create_window(
                Window::default_attributes()
                    .with_title("webtensor: Gray-Scott")
                    .with_inner_size(PhysicalSize::new(side.max(512), side.max(512))),
            )?,
        );
        let surface = instance.create_surface(window.clone())?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            compatible_surface: Some(&surface),
            force_fallback_adapter: false,
            apply_limit_buckets: false,
        }))?;
        // The application opens the device; webtensor works inside it (f16
        // native when the device has SHADER_F16).
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("desktop example"),
                required_features: adapter.features() & wgpu::Features::SHADER_F16,
                required_limits: adapter.limits(),
                ..Default::default()
            }))?;
        let info = adapter.get_info();
        let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default());
        let size = window.inner_size();
        let config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or("the adapter cannot present to this window")?;
        surface.configure(&device, &config);
        let blit = Blit::new(&device, config.format, side, side);
        let sim = GrayScott::new(args.side, &dev)?;
        Ok(Self {
            window,
            surface,
            config,
            device,
            queue,
            blit,
            sim,
            device_name: format!("{} ({:?})", info.name, info.backend),
            frames: 0,
            started: Instant::now(),
            hold_until: None,
        })
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width > 0 && size.height > 0 {
            self.config.width = size.width;
            self.config.height = size.height;
            self.surface.configure(&self.device, &self.config);
        }
    }

    /// Steps the simulation (until `--frames` are done), writes its field
    /// into the texture and presents it.
    fn frame(&mut self, args: &Args) -> AnyResult<()> {
        let computing = self.hold_until.is_none();
        if computing {
            self.sim.step_captured(args.steps)?;
            // Submits the steps and the copy into the texture; the render
            // pass below is submitted after them on the same queue.
            self.sim
                .v()
                .write_to_texture(self.blit.texture(), ColorMap::Heat { min: 0.0, max: 0.4 })?;
        }
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(frame)
            | wgpu::CurrentSurfaceTexture::Suboptimal(frame) => frame,
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.device, &self.config);
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                return Err("the surface raised a validation error".into());
            }
        };
        self.blit.present(&self.device, &self.queue, frame);
        if !computing {
            return Ok(());
        }
        self.frames += 1;
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
            WindowEvent::RedrawRequested => {
                if let Err(e) = scene.frame(&self.args) {
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
