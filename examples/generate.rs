//! Runs a GGUF language model: loads a Llama-architecture file (Llama,
//! scaled rotary frequencies included, TinyLlama, Mistral, SmolLM,
//! Qwen2), tokenizes the prompt with the file's own vocabulary, and
//! generates, printing tokens as they come and the speed of the prompt's
//! pass and of the decoding steps.
//!
//! ```text
//! cargo run --release --example generate -- MODEL.gguf "Once upon a time" \
//!     [--tokens 64] [--cpu] [--dequantize] [--context N] \
//!     [--temperature T] [--top-k K] [--top-p P] [--seed S]
//! ```
//!
//! - Quantized weights stay as their blocks (`QTensor`, `qmatmul`):
//!   Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to Q6_K, and IQ4_NL (which
//!   llama.cpp's Q2_K and Q3_K files hold for rows that are not whole
//!   blocks of 256, as in models 896 or 576 wide). `--dequantize` makes
//!   them f32 on loading instead.
//! - The model runs on the GPU when there is one, else (or with `--cpu`)
//!   on the CPU device.
//! - Greedy by default. `--temperature` (with `--top-k`, `--top-p`) draws
//!   on the device with a seeded draw (`Tensor::sample`), in Hugging
//!   Face's order (the temperature first, then top-k and top-p; llama.cpp
//!   cuts at top-k and top-p before its temperature, and by default at
//!   top-k 40, top-p 0.95 and min-p 0.05). `--top-k 0` keeps every
//!   token, as both read it.
//! - Generation stops after `--tokens`, or at a token that ends one as
//!   llama.cpp's `llama_vocab_is_eog` says (the file's ends of sequence,
//!   turn and message, and `<|im_end|>`, `<|eot_id|>` and the like).
//! - The caches hold the prompt and the new tokens, at most the file's
//!   context length; `--context` sets it.
//! - The prompt runs as one pass; a decoding step, its token and position
//!   held in tensors, is captured once (`Device::capture`) and replayed
//!   for each later token.

#[path = "common/gguf_tokenizer.rs"]
mod gguf_tokenizer;
#[path = "common/llama.rs"]
mod llama;

use std::io::Write;
use std::time::Instant;
use webtensor::io::{Gguf, GgufValue};
use webtensor::{Device, Sampling, Tensor};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Options {
    path: String,
    prompt: String,
    tokens: usize,
    cpu: bool,
    dequantize: bool,
    context: Option<usize>,
    sampling: Sampling,
    seed: u64,
}

fn options() -> Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut free = Vec::new();
    let (mut tokens, mut cpu, mut dequantize, mut context, mut seed) = (64, false, false, None, 0);
    let (mut temperature, mut top_k, mut top_p) = (0.0f64, None, None);
    while let Some(a) = args.next() {
        // The option's value, parsed, an error naming both.
        fn parsed<T: std::str::FromStr>(name: &str, v: Option<String>) -> Result<T>
        where
            T::Err: std::fmt::Display,
        {
            let v = v.ok_or_else(|| format!("{name} needs a value"))?;
            v.parse().map_err(|e| format!("{name} {v:?}: {e}").into())
        }
        let mut value = || args.next();
        match a.as_str() {
            "--tokens" => tokens = parsed(&a, value())?,
            "--context" => context = Some(parsed(&a, value())?),
            "--temperature" => temperature = parsed(&a, value())?,
            "--top-k" => top_k = Some(parsed(&a, value())?),
            "--top-p" => top_p = Some(parsed(&a, value())?),
            "--seed" => seed = parsed(&a, value())?,
            "--cpu" => cpu = true,
            "--dequantize" => dequantize = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}").into()),
            _ => free.push(a),
        }
    }
    let [path, prompt] = <[String; 2]>::try_from(free).map_err(|_| {
        "usage: generate MODEL.gguf \"prompt\" [--tokens N] [--cpu] [--dequantize] \
         [--context N] [--temperature T] [--top-k K] [--top-p P] [--seed S]"
    })?;
    // Checked before the model loads (the sampler checks them at the
    // first token, after the prompt's pass).
    if !(temperature.is_finite() && temperature >= 0.0) {
        return Err(format!("--temperature {temperature} is not a number >= 0").into());
    }
    if top_p.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
        return Err(format!("--top-p {} is not in [0, 1]", top_p.unwrap_or_default()).into());
    }
    let mut sampling = Sampling::new(temperature);
    // 0 keeps every token, as llama.cpp's and Hugging Face's top-k 0.
    if let Some(k) = top_k.filter(|&k| k > 0) {
        sampling = sampling.top_k(k);
    }
    if let Some(p) = top_p {
        sampling = sampling.top_p(p);
    }
    Ok(Options {
        path,
        prompt,
        tokens,
        cpu,
        dequantize,
        context,
        sampling,
        seed,
    })
}

/// The next token from the last row of `logits`.
fn next_token(logits: &Tensor, o: &Options, step: u64) -> Result<u32> {
    let rows = logits.dims()[0];
    let last = logits.narrow(0, rows - 1, 1)?;
    // Mixed (SplitMix64's finaliser), so that seed s at step k + 1 draws
    // no number seed s + 1 drew at step k.
    let mut z = o.seed ^ step.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let token = last.sample(&o.sampling, z ^ (z >> 31))?;
    Ok(token.to_vec::<i32>()?[0] as u32)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("generate: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let o = options()?;
    let dev = if o.cpu {
        Device::cpu()
    } else {
        Device::gpu().unwrap_or_else(|e| {
            eprintln!("no GPU ({e}); running on the CPU");
            Device::cpu()
        })
    };
    let file = Gguf::load(&o.path)?;
    let tok = gguf_tokenizer::from_gguf(&file)?;
    let prompt = tok.encode(&o.prompt)?;
    if prompt.is_empty() {
        return Err("the prompt has no tokens".into());
    }
    let arch = file.get("general.architecture").and_then(GgufValue::as_str);
    let trained = arch
        .and_then(|a| file.get(&format!("{a}.context_length")))
        .and_then(GgufValue::as_u64)
        .map(|c| usize::try_from(c).unwrap_or(usize::MAX));
    let wanted = prompt.len().saturating_add(o.tokens);
    let context = o
        .context
        .unwrap_or(trained.map_or(wanted, |t| wanted.min(t)));
    if prompt.len() > context {
        return Err(format!(
            "{} prompt tokens do not fit a context of {context}",
            prompt.len()
        )
        .into());
    }
    let start = Instant::now();
    let model = llama::Model::load(&file, &dev, context, !o.dequantize)?;
    dev.sync()?;
    eprintln!(
        "{} ({} heads, {} key/value heads of {}, vocabulary {}) on {dev}: loaded in {:.2} s",
        arch.unwrap_or("?"),
        model.heads,
        model.kv_heads,
        model.head_dim,
        model.vocab,
        start.elapsed().as_secs_f64()
    );
    let ids: Vec<i32> = prompt.iter().map(|&t| t as i32).collect();
    let start = Instant::now();
    let logits = model.forward(&ids, 0, llama::Logits::Last)?;
    let mut next = next_token(&logits, &o, 0)?;
    let prefill = start.elapsed().as_secs_f64();
    print!("{}", o.prompt);
    // Each new token's bytes, shown as they complete characters (a
    // character may take several byte tokens), as llama.cpp prints them.
    let mut stream = gguf_tokenizer::TextStream::default();
    // A decoding step with its token and position in tensors, captured
    // once (its first run) and replayed for every later token.
    let mut decoder = llama::Decoder::new(std::rc::Rc::new(model))?;
    let mut generated: Vec<u32> = Vec::new();
    let start = Instant::now();
    let mut steps = 0;
    let mut full = false;
    while generated.len() < o.tokens && !tok.is_end(next) {
        generated.push(next);
        print!("{}", stream.push(&tok.piece(next)));
        std::io::stdout().flush()?;
        let at = prompt.len() + generated.len() - 1;
        if generated.len() == o.tokens {
            break;
        }
        if at >= context {
            full = true;
            break;
        }
        let logits = decoder.step(next, at)?;
        next = next_token(logits, &o, generated.len() as u64)?;
        steps += 1;
    }
    let decode = start.elapsed().as_secs_f64();
    println!("{}", stream.finish());
    if full {
        eprintln!("(stopped: the context of {context} positions is full; --context sets it)");
    }
    eprintln!(
        "prompt: {} tokens in {:.3} s ({:.1} tokens/s); decoding: {} steps in {:.3} s ({:.1} tokens/s)",
        prompt.len(),
        prefill,
        prompt.len() as f64 / prefill,
        steps,
        decode,
        steps as f64 / decode.max(1e-9)
    );
    Ok(())
}
