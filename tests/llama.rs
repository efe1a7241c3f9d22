//! A tiny Llama-architecture model read from a GGUF file gguf-py wrote
//! (`tests/data/make_tiny_llama.py`: f32, f16 and Q8_0 weights), run
//! forward on every device from webtensor's ops (embedding rows, RMS
//! norms, products, rotary embeddings, grouped-query attention over a KV
//! cache written in place through views, SwiGLU), against NumPy's forward
//! pass: the prompt's logits within f32 rounding, and the greedy
//! continuation token for token; with the weights dequantized on loading,
//! and with the quantized ones kept as their blocks (`QTensor`,
//! `qmatmul`). A second model (`make_tiny_llama_quant.py`) has a weight of
//! every quantized type the products take. A decoding step written with
//! its token and position in tensors (caches written by `scatter_`, rotary
//! tables by `Rope::at`, a mask over the whole cache) is captured once and
//! replayed for each token.

mod common;

use webtensor::io::{Gguf, GgufValue};
use webtensor::{Attention, DType, Device, QTensor, Rope, RopeStyle, Tensor, io};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A product's weight, stored (out, in): values, or quantized blocks.
enum Weight {
    Plain(Tensor),
    Blocks(QTensor),
}

struct Block {
    attn_norm: Tensor,
    q: Weight,
    k: Weight,
    v: Weight,
    out: Weight,
    ffn_norm: Tensor,
    gate: Weight,
    up: Weight,
    down: Weight,
    /// The keys and values of every position so far, (kv_heads, context,
    /// head_dim), written in place.
    cache_k: Tensor,
    cache_v: Tensor,
}

struct Model {
    dim: usize,
    heads: usize,
    kv_heads: usize,
    eps: f64,
    embd: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    output: Weight,
    rope: Rope,
}

fn number(f: &Gguf, key: &str) -> f64 {
    f.get(key)
        .and_then(GgufValue::as_f64)
        .unwrap_or_else(|| panic!("{key}"))
}

impl Model {
    /// The model on `dev`, its quantized weights kept as blocks where
    /// `blocks`, else dequantized.
    fn load(f: &Gguf, dev: &Device, context: usize, blocks: bool) -> Model {
        assert_eq!(
            f.get("general.architecture").and_then(GgufValue::as_str),
            Some("llama")
        );
        let w = |name: &str| f.dequantize(name, DType::F32, dev).unwrap();
        let weight = |name: &str| {
            let info = f.tensors().iter().find(|t| t.name == name).unwrap();
            if blocks && info.ggml_type.is_quantized() {
                Weight::Blocks(f.qtensor(name, dev).unwrap())
            } else {
                Weight::Plain(w(name))
            }
        };
        let dim = number(f, "llama.embedding_length") as usize;
        let heads = number(f, "llama.attention.head_count") as usize;
        let kv_heads = number(f, "llama.attention.head_count_kv") as usize;
        let head = dim / heads;
        let cache = || Tensor::zeros([kv_heads, context, head], DType::F32, dev).unwrap();
        let blocks = (0..number(f, "llama.block_count") as usize)
            .map(|i| {
                let b = |part: &str| w(&format!("blk.{i}.{part}.weight"));
                let p = |part: &str| weight(&format!("blk.{i}.{part}.weight"));
                Block {
                    attn_norm: b("attn_norm"),
                    q: p("attn_q"),
                    k: p("attn_k"),
                    v: p("attn_v"),
                    out: p("attn_output"),
                    ffn_norm: b("ffn_norm"),
                    gate: p("ffn_gate"),
                    up: p("ffn_up"),
                    down: p("ffn_down"),
                    cache_k: cache(),
                    cache_v: cache(),
                }
            })
            .collect();
        let theta = number(f, "llama.rope.freq_base");
        Model {
            dim,
            heads,
            kv_heads,
            eps: number(f, "llama.attention.layer_norm_rms_epsilon"),
            embd: w("token_embd.weight"),
            blocks,
            norm: w("output_norm.weight"),
            output: weight("output.weight"),
            // ggml's normal mode: the interleaved pairs.
            rope: Rope::new(0, context, head, theta, RopeStyle::Interleaved, dev).unwrap(),
        }
    }

    /// `x (seq, features) @ w^T` for a weight stored (out, in).
    fn linear(x: &Tensor, w: &Weight) -> Tensor {
        match w {
            Weight::Plain(w) => x.matmul(&w.t()).unwrap(),
            Weight::Blocks(w) => x.qmatmul(w).unwrap(),
        }
    }

    /// Heads of `x (seq, heads * head)`: `(heads, seq, head)`, a view.
    fn split(&self, x: &Tensor, heads: usize) -> Tensor {
        let seq = x.dims()[0];
        x.reshape([seq, heads, self.dim / self.heads])
            .unwrap()
            .transpose(0, 1)
            .unwrap()
    }

    /// The logits `(seq, vocab)` of `tokens` at positions `start..`, the
    /// keys and values of earlier positions read from the caches.
    fn forward(&self, tokens: &[i32], start: usize) -> Tensor {
        let dev = self.embd.device();
        let seq = tokens.len();
        let ids = Tensor::from_slice(tokens, [seq], dev).unwrap();
        let rope = self.rope.positions(start, seq).unwrap();
        // Causal within the new positions, every cached one before them.
        let attention = if seq > 1 {
            let keys = start + seq;
            let rows = Tensor::arange(start as i32, keys as i32, 1, dev)
                .unwrap()
                .reshape([seq, 1])
                .unwrap();
            let cols = Tensor::arange(0i32, keys as i32, 1, dev).unwrap();
            Attention::new().mask(&cols.le(&rows).unwrap())
        } else {
            Attention::new()
        };
        let write = |cache: &Tensor, new: &Tensor| {
            cache.narrow(1, start, seq).unwrap().assign(new).unwrap();
        };
        self.layers(&ids, &rope, &attention, start + seq, &write)
    }

    /// A decoding step with every position on the device: the logits `(1,
    /// vocab)` of the token in `token` (i32 `[1]`) at the position in `pos`
    /// (i32 `[1]`), its key and value scattered into the caches there, its
    /// rotary tables gathered there, attending the whole cache through a
    /// mask of the positions up to it. Nothing in it depends on a host
    /// value, so that a capture of it serves every step.
    /// `positions` is `arange(context)` (i32), made before a capture: a
    /// tensor made from host values inside the step would be an upload.
    fn step(&self, token: &Tensor, pos: &Tensor, positions: &Tensor) -> Tensor {
        let context = self.blocks[0].cache_k.dims()[1];
        let rope = self.rope.at(pos).unwrap();
        let attention = Attention::new().mask(&positions.le(pos).unwrap());
        let write = |cache: &Tensor, new: &Tensor| {
            let index = pos
                .to_dtype(DType::I64)
                .unwrap()
                .reshape([1, 1, 1])
                .unwrap()
                .broadcast_to(new.dims())
                .unwrap();
            cache.scatter_(&index, new, 1).unwrap();
        };
        self.layers(token, &rope, &attention, context, &write)
    }

    /// The blocks over the embeddings of `ids`: each writes its new keys
    /// and values into its caches with `write`, then attends the caches'
    /// first `keys` positions.
    fn layers(
        &self,
        ids: &Tensor,
        rope: &Rope,
        attention: &Attention,
        keys: usize,
        write: &dyn Fn(&Tensor, &Tensor),
    ) -> Tensor {
        let seq = ids.dims()[0];
        let mut x = self.embd.index_select(ids, 0).unwrap();
        for b in &self.blocks {
            let h = x
                .rms_norm(&[self.dim], Some(&b.attn_norm), Some(self.eps))
                .unwrap();
            let q = self
                .split(&Self::linear(&h, &b.q), self.heads)
                .rope(rope)
                .unwrap();
            let k = self
                .split(&Self::linear(&h, &b.k), self.kv_heads)
                .rope(rope)
                .unwrap();
            let v = self.split(&Self::linear(&h, &b.v), self.kv_heads);
            write(&b.cache_k, &k);
            write(&b.cache_v, &v);
            let cached_k = b.cache_k.narrow(1, 0, keys).unwrap();
            let cached_v = b.cache_v.narrow(1, 0, keys).unwrap();
            let att = q.sdpa(&cached_k, &cached_v, attention).unwrap();
            let att = att
                .transpose(0, 1)
                .unwrap()
                .reshape([seq, self.dim])
                .unwrap();
            x = x.add(&Self::linear(&att, &b.out)).unwrap();
            let h = x
                .rms_norm(&[self.dim], Some(&b.ffn_norm), Some(self.eps))
                .unwrap();
            let gated = Self::linear(&h, &b.gate)
                .silu()
                .unwrap()
                .mul(&Self::linear(&h, &b.up))
                .unwrap();
            x = x.add(&Self::linear(&gated, &b.down)).unwrap();
        }
        let x = x
            .rms_norm(&[self.dim], Some(&self.norm), Some(self.eps))
            .unwrap();
        Self::linear(&x, &self.output)
    }
}

/// The model in `gguf` against NumPy's logits and greedy tokens in
/// `reference`, on every device, its quantized weights dequantized on
/// loading and kept as blocks.
/// The greedy token after the last row of `logits` (its argmax).
fn last_token(logits: &Tensor) -> i32 {
    let rows = logits.dims()[0];
    let last = logits.narrow(0, rows - 1, 1).unwrap();
    last.argmax(-1).unwrap().to_vec::<i32>().unwrap()[0]
}

/// The arrays of the NumPy reference `name` (`tests/data`), by name.
fn reference(name: &str) -> std::collections::HashMap<String, Tensor> {
    io::from_npz_bytes(&data(name), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn matches_numpy(gguf: &str, reference_name: &str) {
    let file = Gguf::from_bytes(data(gguf)).unwrap();
    let reference = reference(reference_name);
    let prompt = reference["prompt"].to_vec::<i32>().unwrap();
    let want_logits = reference["logits"].to_vec::<f32>().unwrap();
    let greedy = reference["greedy"].to_vec::<i32>().unwrap();
    let quantized = file.tensors().iter().filter(|t| t.ggml_type.is_quantized());
    assert!(quantized.count() > 0, "{gguf} has no quantized weights");
    for (dev, blocks) in common::devices()
        .into_iter()
        .flat_map(|d| [(d.clone(), false), (d, true)])
    {
        let dev = &dev;
        let model = Model::load(&file, dev, 32, blocks);
        let kind = if blocks { "blocks" } else { "dequantized" };
        let logits = model.forward(&prompt, 0);
        assert_eq!(logits.dims(), &[prompt.len(), 50]);
        let got = logits.to_vec::<f32>().unwrap();
        for (i, (g, w)) in got.iter().zip(&want_logits).enumerate() {
            assert!(
                (g - w).abs() <= 2e-4 * (1.0 + w.abs()),
                "{gguf} on {dev} ({kind}): logit {i}: {g} vs NumPy's {w}"
            );
        }
        // Decoding one token a step over the KV cache.
        let mut next = last_token(&logits);
        let mut tokens = vec![next];
        for step in 1..greedy.len() {
            let at = prompt.len() + step - 1;
            let logits = model.forward(&[next], at);
            next = logits.argmax(-1).unwrap().to_vec::<i32>().unwrap()[0];
            tokens.push(next);
        }
        assert_eq!(
            tokens, greedy,
            "{gguf} on {dev} ({kind}): greedy continuation"
        );
    }
}

#[test]
fn a_tiny_gguf_llama_gives_numpys_logits_and_greedy_tokens() {
    matches_numpy("tiny_llama.gguf", "tiny_llama_reference.npz");
}

#[test]
fn a_tiny_llama_of_every_quantized_type_gives_numpys_logits() {
    // Q4_0 to Q8_0 and Q2_K to Q6_K weights (make_tiny_llama_quant.py).
    matches_numpy("tiny_llama_quant.gguf", "tiny_llama_quant_reference.npz");
}

#[test]
fn a_captured_decoding_step_replays_numpys_greedy_tokens() {
    // Issue 49: a decoding step captured once (`Device::capture`) and run
    // again for each token, its token and position written into tensors
    // between runs, gives the eager step's logits and NumPy's greedy
    // continuation, on every device (the CPU runs the closure again).
    let file = Gguf::from_bytes(data("tiny_llama.gguf")).unwrap();
    let reference = reference("tiny_llama_reference.npz");
    let prompt = reference["prompt"].to_vec::<i32>().unwrap();
    let greedy = reference["greedy"].to_vec::<i32>().unwrap();
    // Devices of its own: ops other tests record on a shared device while
    // the step is captured would become part of it (and fail there).
    for dev in common::own_devices() {
        let dev = &dev;
        let (eager, model) = (
            Model::load(&file, dev, 32, true),
            std::rc::Rc::new(Model::load(&file, dev, 32, true)),
        );
        let logits = eager.forward(&prompt, 0);
        model.forward(&prompt, 0);
        let first = last_token(&logits);
        let token = Tensor::from_slice(&[first], [1], dev).unwrap();
        let pos = Tensor::from_slice(&[prompt.len() as i32], [1], dev).unwrap();
        let out = Tensor::zeros([1, 50], DType::F32, dev).unwrap();
        let positions = Tensor::arange(0i32, 32, 1, dev).unwrap();
        let (t, p, o, m) = (token.clone(), pos.clone(), out.clone(), model.clone());
        let mut graph = dev
            .capture(move || o.assign(&m.step(&t, &p, &positions)))
            .unwrap();
        let (mut next, mut tokens) = (first, vec![first]);
        for step in 1..greedy.len() {
            let at = prompt.len() + step - 1;
            if step > 1 {
                token
                    .assign(&Tensor::from_slice(&[next], [1], dev).unwrap())
                    .unwrap();
                pos.assign(&Tensor::from_slice(&[at as i32], [1], dev).unwrap())
                    .unwrap();
                graph.run().unwrap();
            }
            let want = eager.forward(&[next], at).to_vec::<f32>().unwrap();
            let got = out.to_vec::<f32>().unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "step {step} on {dev}: logit {i}: {g}, eager {w}"
                );
            }
            next = out.argmax(-1).unwrap().to_vec::<i32>().unwrap()[0];
            tokens.push(next);
        }
        assert_eq!(tokens, greedy, "captured greedy continuation on {dev}");
    }
}
