//! Heat diffusion on the GPU in a browser page: a 256 x 256 grid steps
//! `u[1:-1, 1:-1] += 0.2 * laplacian(u)` with the four neighbours read as
//! shifted strided views of `u` (no copies) and the update written through a
//! view in place; every step's ops are recorded and submitted in batches,
//! and one async readback at the end paints the canvas.
//!
//! Build and serve (see README, "In the browser"):
//! `examples/web/build.sh` then `python3 -m http.server 8000 -d examples/web`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::Clamped;
use wasm_bindgen::prelude::*;
use webtensor::{DType, Device, DeviceKind, Tensor, s};

const SIDE: usize = 256;
const STEPS: usize = 300;

/// Runs the simulation and shows it; the page's `#status` element gets
/// `data-state="done"` or `"error"`.
#[wasm_bindgen]
pub async fn run() -> Result<(), JsValue> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let status = document.get_element_by_id("status").ok_or("no #status")?;
    match simulate().await {
        Ok(run) => {
            paint(&document, &run.grid)?;
            status.set_text_content(Some(&format!(
                "ok: {STEPS} steps on {SIDE} x {SIDE} in {:.1} ms on {}",
                run.millis, run.device
            )));
            status.set_attribute("data-state", "done")?;
            status.set_attribute("data-kind", &run.kind)?;
        }
        Err(e) => {
            status.set_text_content(Some(&format!("error: {e}")));
            status.set_attribute("data-state", "error")?;
        }
    }
    Ok(())
}

struct Run {
    grid: Vec<f32>,
    millis: f64,
    device: String,
    kind: String,
}

async fn simulate() -> webtensor::Result<Run> {
    let dev = Device::default_async().await?;
    let info = dev.info();
    let device = match info.kind {
        // Browsers may keep the adapter's name to themselves.
        DeviceKind::Gpu if info.name.is_empty() => {
            format!("a {} adapter ({})", info.device_type, info.backend)
        }
        DeviceKind::Gpu => format!("{} ({})", info.name, info.backend),
        DeviceKind::Cpu => format!(
            "the CPU ({})",
            info.fallback_reason.as_deref().unwrap_or("chosen")
        ),
    };
    let kind = format!("{:?}", info.kind);
    let mut u = Tensor::zeros([SIDE, SIDE], DType::F32, &dev)?;
    let mut next = Tensor::zeros([SIDE, SIDE], DType::F32, &dev)?;
    let heat = |t: &Tensor| -> webtensor::Result<()> {
        t.slice(s![100..156, 30..60])?.fill_(1.0)?;
        t.slice(s![40..60, 140..230])?.fill_(1.0)?;
        t.slice(s![190..200, 180..190])?.fill_(1.0)?;
        Ok(())
    };
    heat(&u)?;
    let clock = web_sys::window().and_then(|w| w.performance());
    let start = clock.as_ref().map_or(0.0, |p| p.now());
    for _ in 0..STEPS {
        let centre = u.slice(s![1..-1, 1..-1])?;
        let laplacian = u
            .slice(s![..-2, 1..-1])?
            .add(&u.slice(s![2.., 1..-1])?)?
            .add(&u.slice(s![1..-1, ..-2])?)?
            .add(&u.slice(s![1..-1, 2..])?)?
            .sub(&centre.mul_scalar(4.0)?)?;
        let inner = next.slice(s![1..-1, 1..-1])?;
        inner.assign(&centre)?;
        inner.add_(&laplacian.mul_scalar(0.2)?)?;
        heat(&next)?;
        std::mem::swap(&mut u, &mut next);
    }
    let grid = u.to_vec_async::<f32>().await?;
    let millis = clock.as_ref().map_or(0.0, |p| p.now()) - start;
    Ok(Run {
        grid,
        millis,
        device,
        kind,
    })
}

/// Paints `grid` (values in 0..=1) on the `#view` canvas with a
/// black-red-yellow-white ramp.
fn paint(document: &web_sys::Document, grid: &[f32]) -> Result<(), JsValue> {
    let canvas: web_sys::HtmlCanvasElement = document
        .get_element_by_id("view")
        .ok_or("no #view")?
        .dyn_into()?;
    let ctx: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into()?;
    let mut pixels = Vec::with_capacity(grid.len() * 4);
    for &v in grid {
        let t = v.clamp(0.0, 1.0).sqrt() * 3.0;
        let channel = |x: f32| (x.clamp(0.0, 1.0) * 255.0) as u8;
        pixels.extend_from_slice(&[channel(t), channel(t - 1.0), channel(t - 2.0), 255]);
    }
    let image = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        Clamped(&pixels),
        SIDE as u32,
        SIDE as u32,
    )?;
    ctx.put_image_data(&image, 0.0, 0.0)
}
