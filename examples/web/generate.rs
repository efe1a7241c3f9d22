//! The page's language model: a GGUF file the visitor picks (read by the
//! page's script into bytes), tokenized with its own vocabulary and run as
//! `examples/generate.rs` runs it (the same model and tokenizer modules):
//! the prompt in one pass, then a captured decoding step per greedy token,
//! each read back without blocking. `#generated` shows the text as it
//! comes; `#lm-status` ends with `data-state="done"` (or `"error"`), the
//! speed of both parts, and `data-ids`, the generated ids.

use super::{gguf_tokenizer, llama};
use wasm_bindgen::prelude::*;
use webtensor::io::{Gguf, GgufValue};
use webtensor::{Device, Tensor};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// `#generated` and `#lm-status`.
struct Outputs {
    text: web_sys::Element,
    status: web_sys::Element,
    clock: Option<web_sys::Performance>,
}

impl Outputs {
    fn find() -> Result<Self, JsValue> {
        let window = web_sys::window().ok_or("no window")?;
        let document = window.document().ok_or("no document")?;
        let get = |id: &str| {
            document
                .get_element_by_id(id)
                .ok_or_else(|| JsValue::from_str(&format!("no #{id}")))
        };
        Ok(Self {
            text: get("generated")?,
            status: get("lm-status")?,
            clock: window.performance(),
        })
    }

    /// Seconds since the page opened.
    fn now(&self) -> f64 {
        self.clock.as_ref().map_or(0.0, |p| p.now()) / 1000.0
    }

    fn state(&self, state: &str, text: &str) {
        let _ = self.status.set_attribute("data-state", state);
        self.status.set_text_content(Some(text));
    }
}

/// Generates up to `tokens` greedy tokens after `prompt` with the GGUF
/// model in `bytes`, on the GPU where the browser has WebGPU, else on the
/// CPU device.
#[wasm_bindgen]
pub async fn generate(bytes: Vec<u8>, prompt: String, tokens: usize) -> Result<(), JsValue> {
    let out = Outputs::find()?;
    out.state("running", "loading the model…");
    if let Err(e) = run(bytes, &prompt, tokens, &out).await {
        out.state("error", &format!("error: {e}"));
    }
    Ok(())
}

/// The greedy token after the last row of `logits`.
async fn greedy(logits: &Tensor) -> AnyResult<u32> {
    let rows = logits.dims()[0];
    let last = logits.narrow(0, rows - 1, 1)?.argmax(-1)?;
    Ok(last.to_vec_async::<i32>().await?[0] as u32)
}

async fn run(bytes: Vec<u8>, prompt: &str, tokens: usize, out: &Outputs) -> AnyResult<()> {
    let dev = match Device::gpu_async().await {
        Ok(dev) => dev,
        Err(_) => Device::cpu(),
    };
    let file = Gguf::from_bytes(bytes)?;
    let tok = gguf_tokenizer::from_gguf(&file).map_err(|e| e.to_string())?;
    let ids = tok.encode(prompt).map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Err("the prompt has no tokens".into());
    }
    let arch = file.get("general.architecture").and_then(GgufValue::as_str);
    let trained = arch
        .and_then(|a| file.get(&format!("{a}.context_length")))
        .and_then(GgufValue::as_u64)
        .map_or(usize::MAX, |c| usize::try_from(c).unwrap_or(usize::MAX));
    let context = ids.len().saturating_add(tokens).min(trained);
    if ids.len() > context {
        return Err(format!(
            "{} prompt tokens do not fit a context of {context}",
            ids.len()
        )
        .into());
    }
    let model = llama::Model::load(&file, &dev, context, true).map_err(|e| e.to_string())?;
    let pre = tok.pre.as_deref().map(|p| format!(", pre-tokenizer {p}"));
    let doing = format!("generating on {dev}{}…", pre.unwrap_or_default());
    out.state("running", &doing);
    out.text.set_text_content(Some(prompt));
    let start = out.now();
    let prompt_ids: Vec<i32> = ids.iter().map(|&t| t as i32).collect();
    let mut next = greedy(&model.forward(&prompt_ids, 0, llama::Logits::Last)?).await?;
    // Each new token's bytes, shown as they complete characters (a
    // character may take several byte tokens).
    let mut stream = gguf_tokenizer::TextStream::default();
    let mut shown = prompt.to_string();
    let prefill = out.now() - start;
    // The decoding step, its token and position in tensors, captured on
    // its first run and replayed for each later token.
    let mut decoder = llama::Decoder::new(std::rc::Rc::new(model))?;
    let mut generated: Vec<u32> = Vec::new();
    let start = out.now();
    let mut steps = 0;
    while generated.len() < tokens && !tok.is_end(next) {
        generated.push(next);
        shown.push_str(&stream.push(&tok.piece(next)));
        out.text.set_text_content(Some(&shown));
        let at = ids.len() + generated.len() - 1;
        if at >= context || generated.len() == tokens {
            break;
        }
        next = greedy(decoder.step(next, at)?).await?;
        steps += 1;
    }
    let decode = out.now() - start;
    shown.push_str(&stream.finish());
    out.text.set_text_content(Some(&shown));
    let list: Vec<String> = generated.iter().map(u32::to_string).collect();
    let _ = out.status.set_attribute("data-ids", &list.join(","));
    out.state(
        "done",
        &format!(
            "on {dev}: prompt {} tokens in {prefill:.3} s ({:.1} tokens/s); \
             decoding {steps} steps in {decode:.3} s ({:.1} tokens/s)",
            ids.len(),
            ids.len() as f64 / prefill.max(1e-9),
            steps as f64 / decode.max(1e-9)
        ),
    );
    Ok(())
}
