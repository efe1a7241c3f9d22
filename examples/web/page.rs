//! The page's elements: the canvas, the status line, the notice, the
//! button that loses the GPU.

use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::Clamped;
use wasm_bindgen::prelude::*;
use webtensor::{ColorMap, DeviceInfo};

/// The elements the example writes to.
pub struct Page {
    pub canvas: web_sys::HtmlCanvasElement,
    status: web_sys::Element,
    notice: web_sys::Element,
    clock: Option<web_sys::Performance>,
    /// Set by the "Lose the GPU" button until the frame loop takes it.
    lose: Rc<Cell<bool>>,
    /// `?lose-at=N` in the page's address.
    lose_at: Option<usize>,
}

impl Page {
    /// Finds `#view`, `#status` and `#notice`.
    pub fn find() -> Result<Self, JsValue> {
        let window = web_sys::window().ok_or("no window")?;
        let document = window.document().ok_or("no document")?;
        let get = |id: &str| {
            document
                .get_element_by_id(id)
                .ok_or_else(|| JsValue::from_str(&format!("no #{id}")))
        };
        let lose = Rc::new(Cell::new(false));
        let button: web_sys::HtmlElement = get("lose")?.dyn_into()?;
        let flag = lose.clone();
        let click = Closure::<dyn FnMut()>::new(move || flag.set(true));
        button.set_onclick(Some(click.as_ref().unchecked_ref()));
        // The button lives as long as the page.
        click.forget();
        let lose_at = window.location().search().ok().and_then(|query| {
            query
                .trim_start_matches('?')
                .split('&')
                .find_map(|pair| pair.strip_prefix("lose-at=")?.parse().ok())
        });
        Ok(Self {
            canvas: get("view")?.dyn_into()?,
            status: get("status")?,
            notice: get("notice")?,
            clock: window.performance(),
            lose,
            lose_at,
        })
    }

    /// Milliseconds since the page opened.
    pub fn now(&self) -> f64 {
        self.clock.as_ref().map_or(0.0, |p| p.now())
    }

    /// Says which device kind computes ("Gpu" or "Cpu").
    pub fn set_kind(&self, kind: &str) {
        let _ = self.status.set_attribute("data-kind", kind);
    }

    /// Shows a notice above the canvas.
    pub fn notice(&self, text: &str) {
        self.notice.set_text_content(Some(text));
        let _ = self.notice.remove_attribute("hidden");
    }

    /// Shows how far the run is.
    pub fn progress(&self, step: usize, steps: usize, frames: usize, millis: f64) {
        self.status.set_text_content(Some(&format!(
            "running: step {step} of {steps} ({:.1} ms a step)",
            millis / step.max(1) as f64
        )));
        let _ = self
            .status
            .set_attribute("data-frames", &frames.to_string());
    }

    /// The frame at which `?lose-at=N` loses the device.
    pub fn lose_at(&self) -> Option<usize> {
        self.lose_at
    }

    /// True once after each press of the "Lose the GPU" button.
    pub fn take_lose_request(&self) -> bool {
        self.lose.take()
    }

    /// Says the page recovered from a lost device (`count` so far), lost at
    /// step `lost_at`, resumed from the checkpoint at step `resumed`.
    pub fn recovered(&self, count: usize, lost_at: usize, resumed: usize) {
        self.notice(&format!(
            "The GPU device was lost at step {lost_at}: the page opened a new one and \
             resumed from the checkpoint at step {resumed}."
        ));
        let _ = self
            .status
            .set_attribute("data-recovered", &count.to_string());
    }

    /// Marks the run done with `summary`.
    pub fn finish(&self, summary: &str) -> Result<(), JsValue> {
        self.status.set_text_content(Some(summary));
        self.status.set_attribute("data-state", "done")
    }

    /// Marks the run failed with `error`.
    pub fn fail(&self, error: &str) -> Result<(), JsValue> {
        self.status
            .set_text_content(Some(&format!("error: {error}")));
        self.status.set_attribute("data-state", "error")
    }

    /// A copy of the canvas in its place, without a context: a canvas
    /// that gave WebGPU one has no 2D context.
    pub fn fresh_canvas(&self) -> Result<web_sys::HtmlCanvasElement, JsValue> {
        let fresh: web_sys::HtmlCanvasElement = self.canvas.clone_node()?.dyn_into()?;
        self.canvas.replace_with_with_node_1(&fresh)?;
        Ok(fresh)
    }
}

/// Paints a `side x side` grid on `canvas` through a 2D context (the CPU
/// path), coloured as `map` colours it on the GPU.
pub fn paint(canvas: &web_sys::HtmlCanvasElement, grid: &[f32], side: usize, map: ColorMap) {
    let ColorMap::Heat { min, max } = map else {
        return;
    };
    let Ok(Some(ctx)) = canvas.get_context("2d") else {
        return;
    };
    let Ok(ctx) = ctx.dyn_into::<web_sys::CanvasRenderingContext2d>() else {
        return;
    };
    let mut pixels = Vec::with_capacity(grid.len() * 4);
    for &v in grid {
        let t = ((v - min) / (max - min)).clamp(0.0, 1.0) * 3.0;
        let channel = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
        pixels.extend_from_slice(&[channel(t), channel(t - 1.0), channel(t - 2.0), 255]);
    }
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    if let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        Clamped(&pixels),
        side as u32,
        side as u32,
    ) {
        let _ = ctx.put_image_data(&image, 0.0, 0.0);
        // Stretch the grid over the canvas.
        let _ = ctx.draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
            canvas,
            0.0,
            0.0,
            side as f64,
            side as f64,
            0.0,
            0.0,
            w,
            h,
        );
    }
}

/// The adapter's name, or its type and backend where the browser keeps the
/// name to itself.
pub fn adapter_name(info: &DeviceInfo) -> String {
    if info.name.is_empty() {
        format!("a {} adapter ({})", info.device_type, info.backend)
    } else {
        format!("{} ({})", info.name, info.backend)
    }
}

/// Resolves at the browser's next animation frame, after it has had the
/// chance to show what was drawn.
pub async fn next_animation_frame() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.request_animation_frame(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
