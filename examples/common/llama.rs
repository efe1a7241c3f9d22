//! A Llama-architecture language model read from a GGUF file (the layout
//! llama.cpp's converters write for Llama, TinyLlama, Mistral, SmolLM and
//! Qwen2), run forward from webtensor's ops: embedding rows, RMS norms,
//! products (quantized weights kept as their blocks, `qmatmul`, or
//! dequantized on loading), rotary embeddings, grouped-query attention
//! (`sdpa`) over a KV cache written in place through views, and a SwiGLU
//! feed-forward. `examples/generate.rs` runs it; `tests/llama.rs` checks
//! it against NumPy's forward pass.

// Shared by examples/generate.rs, examples/web and tests, each using a
// part of it.
#![allow(dead_code)]

use std::rc::Rc;
use webtensor::GgmlType;
use webtensor::io::{Gguf, GgufValue};
use webtensor::{Attention, DType, Device, Graph, QTensor, Rope, RopeScaling, RopeStyle, Tensor};

type LoadResult<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A product's weight, stored (out, in): values, or quantized blocks.
pub enum Weight {
    Plain(Tensor),
    Blocks(QTensor),
}

impl Weight {
    /// `x (seq, in) @ w^T`.
    fn apply(&self, x: &Tensor) -> webtensor::Result<Tensor> {
        match self {
            Weight::Plain(w) => x.matmul(&w.t()),
            Weight::Blocks(w) => x.qmatmul(w),
        }
    }
}

/// A product and its bias (Qwen2's attention has them).
pub struct Linear {
    weight: Weight,
    bias: Option<Tensor>,
}

impl Linear {
    fn apply(&self, x: &Tensor) -> webtensor::Result<Tensor> {
        let y = self.weight.apply(x)?;
        match &self.bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }
}

pub struct Block {
    attn_norm: Tensor,
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
    ffn_norm: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
    /// The keys and values of every position so far, (kv_heads, context,
    /// head_dim), written in place.
    cache_k: Tensor,
    cache_v: Tensor,
}

pub struct Model {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Positions the caches hold.
    pub context: usize,
    pub vocab: usize,
    eps: f64,
    embd: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    output: Linear,
    rope: Rope,
    /// The scores' scale where the file's `rope.scaling.attn_factor` is
    /// not 1 (llama.cpp multiplies the rotary tables by it, so q and k
    /// grow by it and each score by its square); `None`: 1 / sqrt(head).
    scale: Option<f64>,
}

/// Which positions' logits a pass computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    Every,
    /// The last position's only: a prompt's pass projects one row onto
    /// the vocabulary.
    Last,
}

/// The number at `key`.
fn number(f: &Gguf, key: &str) -> LoadResult<f64> {
    optional_number(f, key)?.ok_or_else(|| format!("the file has no number at {key}").into())
}

/// The number at `key`, `None` where the file has none.
///
/// # Errors
/// A value of another type (a string, an array): never read as missing.
fn optional_number(f: &Gguf, key: &str) -> LoadResult<Option<f64>> {
    match f.get(key) {
        None => Ok(None),
        Some(v) => match (v.as_f64(), v) {
            (Some(n), _) => Ok(Some(n)),
            // llama.cpp takes some counts one a layer (head counts of
            // models whose layers differ), which this model does not run.
            (None, GgufValue::Array { .. }) => {
                Err(format!("{key} is an array (one a layer), not a number").into())
            }
            (None, _) => Err(format!("{key} is not a number").into()),
        },
    }
}

/// The count at `key`.
fn count(f: &Gguf, key: &str) -> LoadResult<usize> {
    optional_count(f, key)?.ok_or_else(|| format!("the file has no number at {key}").into())
}

/// The count at `key` (a whole number, not negative; past `usize`, the
/// largest, which no file's tensors hold), `None` where the file has none.
///
/// # Errors
/// As [`optional_number`], and a number that is no count (4.5, -4),
/// named with its value.
fn optional_count(f: &Gguf, key: &str) -> LoadResult<Option<usize>> {
    match optional_number(f, key)? {
        None => Ok(None),
        Some(n) if n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as usize)),
        Some(n) => Err(format!("{key} is {n}, not a count").into()),
    }
}

/// Checks that the file's tensor `name` is `want` (NumPy's order).
///
/// # Errors
/// A tensor missing or of another shape, named.
fn check_shape(f: &Gguf, name: &str, want: &[usize]) -> LoadResult<()> {
    let info = f.tensors().iter().find(|t| t.name == name);
    let info = info.ok_or_else(|| format!("the file has no tensor {name}"))?;
    if info.shape != want {
        return Err(format!("{name} is {:?}; the header asks for {want:?}", info.shape).into());
    }
    Ok(())
}

/// The scaling of the rotary frequencies `f` (a file of architecture
/// `arch`, heads of `head_dim`, base `theta`) asks for, as llama.cpp reads
/// it: the `rope_freqs` tensor's divisors (Llama 3.1's conversion; a llama
/// file's alone), and a linear factor (`rope.scaling.type` "linear" or
/// absent, with `rope.scaling.factor` or the older `rope.scale_linear`; 0
/// and a type "none" scale nothing). YaRN, LongRoPE and the rest are
/// refused rather than run with the wrong frequencies, and so are values
/// the frequencies cannot take, named as the file holds them.
///
/// # Errors
/// As above, and keys of the wrong type.
pub fn rope_scaling(f: &Gguf, arch: &str, head_dim: usize, theta: f64) -> LoadResult<RopeScaling> {
    let key = |k: &str| format!("{arch}.{k}");
    let kind = match f.get(&key("rope.scaling.type")) {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| format!("{} is {v:?}, not a string", key("rope.scaling.type")))?,
        ),
    };
    let mut factor = None;
    for k in ["rope.scaling.factor", "rope.scale_linear"].map(key) {
        if let Some(v) = f.get(&k) {
            factor = Some((
                k.clone(),
                v.as_f64().ok_or(format!("{k} is {v:?}, not a number"))?,
            ));
            break;
        }
    }
    let linear = match (kind, &factor) {
        (Some("linear") | None, Some((_, v))) if *v != 0.0 => factor.clone(),
        (Some("linear" | "none") | None, _) => None,
        (Some(other), _) => {
            return Err(format!("rotary scaling {other:?} is not supported").into());
        }
    };
    let check = |scaling: RopeScaling, what: &str| -> LoadResult<RopeScaling> {
        match scaling.frequencies(head_dim, theta) {
            Ok(_) => Ok(scaling),
            Err(e) => Err(format!("{what}: {e}").into()),
        }
    };
    let name = "rope_freqs.weight";
    let Some(info) = f.tensors().iter().find(|t| t.name == name) else {
        return match linear {
            None => Ok(RopeScaling::None),
            Some((k, factor)) => check(RopeScaling::Linear { factor }, &k),
        };
    };
    if arch != "llama" {
        return Err(format!("{name} in a {arch} file (llama.cpp reads it for llama)").into());
    }
    if info.ggml_type != GgmlType::F32 || info.shape.iter().product::<usize>() != head_dim / 2 {
        return Err(format!(
            "{name} is {:?} {:?}; heads of {head_dim} take {} f32 divisors",
            info.ggml_type,
            info.shape,
            head_dim / 2
        )
        .into());
    }
    // Read from the file's bytes: no readback, which a wasm page could
    // not wait for.
    let factors: Vec<f32> = f
        .tensor_bytes(name)?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let what = match &linear {
        None => name.to_string(),
        Some((k, _)) => format!("{name} with {k}"),
    };
    // Both: each frequency divided by its factor and by the linear one.
    let times = linear.map_or(1.0, |(_, v)| v as f32);
    check(
        RopeScaling::Factors(factors.iter().map(|&d| d * times).collect()),
        &what,
    )
}

impl Model {
    /// The model in `f` on `dev` with caches of `context` positions, its
    /// quantized weights kept as blocks where `blocks`, else dequantized.
    ///
    /// # Errors
    /// An architecture other than `llama` and `qwen2`, metadata or tensors
    /// missing, and webtensor's errors.
    pub fn load(f: &Gguf, dev: &Device, context: usize, blocks: bool) -> LoadResult<Model> {
        let arch = f
            .get("general.architecture")
            .and_then(GgufValue::as_str)
            .ok_or("the file has no general.architecture")?;
        // ggml's normal rotation (interleaved pairs) for Llama, whose
        // converter permutes q and k for it; NeoX's halves for Qwen2.
        let style = match arch {
            "llama" => RopeStyle::Interleaved,
            "qwen2" => RopeStyle::HalfSplit,
            other => return Err(format!("architecture {other:?} is not supported").into()),
        };
        let key = |k: &str| format!("{arch}.{k}");
        let has = |name: &str| f.tensors().iter().any(|t| t.name == name);
        let plain = |name: &str| f.dequantize(name, DType::F32, dev);
        let weight = |name: &str| -> LoadResult<Weight> {
            let info = f.tensors().iter().find(|t| t.name == name);
            let info = info.ok_or_else(|| format!("the file has no tensor {name}"))?;
            Ok(if blocks && info.ggml_type.is_quantized() {
                Weight::Blocks(f.qtensor(name, dev)?)
            } else {
                Weight::Plain(plain(name)?)
            })
        };
        let linear = |name: &str| -> LoadResult<Linear> {
            let (bias, weight_name) = (format!("{name}.bias"), format!("{name}.weight"));
            let weight = weight(&weight_name)?;
            let bias = match has(&bias) {
                true => {
                    // One a row of the weight (NumPy's order: its first
                    // extent), as llama.cpp checks it.
                    let info = f.tensors().iter().find(|t| t.name == weight_name);
                    let rows = info.and_then(|t| t.shape.first().copied()).unwrap_or(0);
                    check_shape(f, &bias, &[rows])?;
                    Some(plain(&bias)?)
                }
                false => None,
            };
            Ok(Linear { weight, bias })
        };
        let heads = count(f, &key("attention.head_count"))?;
        let kv_heads = optional_count(f, &key("attention.head_count_kv"))?.unwrap_or(heads);
        let dim = count(f, &key("embedding_length"))?;
        if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(format!("{heads} heads and {kv_heads} key/value heads").into());
        }
        let head_dim = match optional_count(f, &key("attention.key_length"))? {
            Some(n) => n,
            None if dim.is_multiple_of(heads) => dim / heads,
            None => return Err(format!("{heads} heads of {dim} features").into()),
        };
        if head_dim == 0 {
            return Err("heads of 0 features".into());
        }
        if let Some(rotary) = optional_count(f, &key("rope.dimension_count"))?
            && rotary != head_dim
        {
            return Err(format!("a rotation of {rotary} of {head_dim} features").into());
        }
        // Before any weight is read: a scaling not built is refused at once.
        let theta = optional_number(f, &key("rope.freq_base"))?.unwrap_or(10_000.0);
        let scaling = rope_scaling(f, arch, head_dim, theta)?;
        let eps = number(f, &key("attention.layer_norm_rms_epsilon"))?;
        let attn_factor = optional_number(f, &key("rope.scaling.attn_factor"))?.unwrap_or(1.0);
        if !attn_factor.is_finite() {
            return Err(format!("{} is {attn_factor}", key("rope.scaling.attn_factor")).into());
        }
        let scale =
            (attn_factor != 1.0).then(|| attn_factor * attn_factor / (head_dim as f64).sqrt());
        // llama.cpp's llama reads no output bias (it refuses a file with
        // one); Qwen2's adds one, with or without an output matrix.
        if arch == "llama" && has("output.bias") {
            return Err("output.bias in a llama file (llama.cpp refuses it)".into());
        }
        // The table first: its rows are the vocabulary, its width the
        // header's, and the output's rows must be as many.
        let embd = plain("token_embd.weight")?;
        let vocab = match embd.dims() {
            &[rows, width] if width == dim && rows > 0 => rows,
            other => {
                return Err(
                    format!("token_embd.weight is {other:?}; [vocab, {dim}] wanted").into(),
                );
            }
        };
        if has("output.weight") {
            check_shape(f, "output.weight", &[vocab, dim])?;
        }
        check_shape(f, "output_norm.weight", &[dim])?;
        let cache = || Tensor::zeros([kv_heads, context, head_dim], DType::F32, dev);
        // Not reserved from the header's count: each layer must have its
        // tensors, so a count no file holds fails at its first missing one.
        let layers = count(f, &key("block_count"))?;
        let mut all = Vec::new();
        let rows = |heads: usize| {
            heads
                .checked_mul(head_dim)
                .ok_or_else(|| format!("{heads} heads of {head_dim} features"))
        };
        let (q_rows, kv_rows) = (rows(heads)?, rows(kv_heads)?);
        for i in 0..layers {
            let name = |part: &str| format!("blk.{i}.{part}");
            // Before its caches are made from the header's numbers.
            // ffn_up's rows, checked before ffn_gate's and ffn_down's.
            let up = f.tensors().iter().find(|t| t.name == name("ffn_up.weight"));
            let ffn = up.and_then(|t| t.shape.first().copied()).unwrap_or(0);
            for (part, shape) in [
                ("attn_norm.weight", vec![dim]),
                ("attn_q.weight", vec![q_rows, dim]),
                ("attn_k.weight", vec![kv_rows, dim]),
                ("attn_v.weight", vec![kv_rows, dim]),
                ("attn_output.weight", vec![dim, q_rows]),
                ("ffn_norm.weight", vec![dim]),
                ("ffn_up.weight", vec![ffn, dim]),
                ("ffn_gate.weight", vec![ffn, dim]),
                ("ffn_down.weight", vec![dim, ffn]),
            ] {
                check_shape(f, &name(part), &shape)?;
            }
            all.push(Block {
                attn_norm: plain(&name("attn_norm.weight"))?,
                q: linear(&name("attn_q"))?,
                k: linear(&name("attn_k"))?,
                v: linear(&name("attn_v"))?,
                out: linear(&name("attn_output"))?,
                ffn_norm: plain(&name("ffn_norm.weight"))?,
                gate: linear(&name("ffn_gate"))?,
                up: linear(&name("ffn_up"))?,
                down: linear(&name("ffn_down"))?,
                cache_k: cache()?,
                cache_v: cache()?,
            });
        }
        // A model without an output matrix reads its embeddings back (as
        // blocks where they are kept, else the table already loaded).
        let output = match has("output.weight") {
            true => linear("output")?,
            false => Linear {
                weight: match weight("token_embd.weight")? {
                    Weight::Blocks(b) => Weight::Blocks(b),
                    Weight::Plain(_) => Weight::Plain(embd.clone()),
                },
                bias: match has("output.bias") {
                    true => {
                        check_shape(f, "output.bias", &[vocab])?;
                        Some(plain("output.bias")?)
                    }
                    false => None,
                },
            },
        };
        Ok(Model {
            heads,
            kv_heads,
            head_dim,
            context,
            vocab,
            eps,
            embd,
            blocks: all,
            norm: plain("output_norm.weight")?,
            output,
            rope: Rope::scaled(0, context, head_dim, theta, &scaling, style, dev)?,
            scale,
        })
    }

    /// Attention with this model's scale.
    fn attention(&self) -> Attention {
        match self.scale {
            Some(scale) => Attention::new().scale(scale),
            None => Attention::new(),
        }
    }

    /// Heads of `x (seq, heads * head_dim)`: `(heads, seq, head_dim)`, a
    /// view.
    fn split(&self, x: &Tensor, heads: usize) -> webtensor::Result<Tensor> {
        let seq = x.dims()[0];
        x.reshape([seq, heads, self.head_dim])?.transpose(0, 1)
    }

    /// The logits of `tokens` at positions `start..` (`(seq, vocab)`, or
    /// `(1, vocab)` for [`Logits::Last`]), the keys and values of earlier
    /// positions read from the caches.
    ///
    /// # Errors
    /// `Error::Argument` naming `Model::forward` for a token outside the
    /// vocabulary; positions past the caches', and webtensor's errors.
    pub fn forward(
        &self,
        tokens: &[i32],
        start: usize,
        logits: Logits,
    ) -> webtensor::Result<Tensor> {
        let last = logits == Logits::Last;
        let dev = self.embd.device();
        let seq = tokens.len();
        // A negative id would index the table from its end.
        if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t as usize >= self.vocab) {
            return Err(webtensor::Error::Argument {
                op: "Model::forward",
                msg: format!(
                    "token {bad} is not one of the {} in the vocabulary",
                    self.vocab
                ),
            });
        }
        let ids = Tensor::from_slice(tokens, [seq], dev)?;
        let rope = self.rope.positions(start, seq)?;
        // Causal within the new positions, every cached one before them.
        let attention = if seq > 1 {
            let keys = start + seq;
            let rows = Tensor::arange(start as i32, keys as i32, 1, dev)?.reshape([seq, 1])?;
            let cols = Tensor::arange(0i32, keys as i32, 1, dev)?;
            self.attention().mask(&cols.le(&rows)?)
        } else {
            self.attention()
        };
        let write = |cache: &Tensor, new: &Tensor| cache.narrow(1, start, seq)?.assign(new);
        self.layers(&ids, &rope, &attention, start + seq, &write, last)
    }

    /// A decoding step with every position on the device: the logits `(1,
    /// vocab)` of the token in `token` (i32 `[1]`) at the position in `pos`
    /// (i32 `[1]`), its key and value scattered into the caches there, its
    /// rotary tables gathered there, attending the whole cache through a
    /// mask of the positions up to it. Nothing in it depends on a host
    /// value, so that a capture of it serves every step.
    /// `positions` is `arange(context)` (i32), made before a capture: a
    /// tensor made from host values inside the step would be an upload.
    ///
    /// # Errors
    /// webtensor's.
    pub fn step(
        &self,
        token: &Tensor,
        pos: &Tensor,
        positions: &Tensor,
    ) -> webtensor::Result<Tensor> {
        let rope = self.rope.at(pos)?;
        let attention = self.attention().mask(&positions.le(pos)?);
        let write = |cache: &Tensor, new: &Tensor| {
            let index = pos
                .to_dtype(DType::I64)?
                .reshape([1, 1, 1])?
                .broadcast_to(new.dims())?;
            cache.scatter_(&index, new, 1)
        };
        self.layers(token, &rope, &attention, self.context, &write, false)
    }

    /// The blocks over the embeddings of `ids`: each writes its new keys
    /// and values into its caches with `write`, then attends the caches'
    /// first `keys` positions; the logits of every position, or of the
    /// `last` only.
    fn layers(
        &self,
        ids: &Tensor,
        rope: &Rope,
        attention: &Attention,
        keys: usize,
        write: &dyn Fn(&Tensor, &Tensor) -> webtensor::Result<()>,
        last: bool,
    ) -> webtensor::Result<Tensor> {
        let seq = ids.dims()[0];
        let dim = self.embd.dims()[1];
        let mut x = self.embd.index_select(ids, 0)?;
        for b in &self.blocks {
            let h = x.rms_norm(&[dim], Some(&b.attn_norm), Some(self.eps))?;
            let q = self.split(&b.q.apply(&h)?, self.heads)?.rope(rope)?;
            let k = self.split(&b.k.apply(&h)?, self.kv_heads)?.rope(rope)?;
            let v = self.split(&b.v.apply(&h)?, self.kv_heads)?;
            write(&b.cache_k, &k)?;
            write(&b.cache_v, &v)?;
            let cached_k = b.cache_k.narrow(1, 0, keys)?;
            let cached_v = b.cache_v.narrow(1, 0, keys)?;
            let att = q.sdpa(&cached_k, &cached_v, attention)?;
            let att = att
                .transpose(0, 1)?
                .reshape([seq, self.heads * self.head_dim])?;
            x = x.add(&b.out.apply(&att)?)?;
            let h = x.rms_norm(&[dim], Some(&b.ffn_norm), Some(self.eps))?;
            let gated = b.gate.apply(&h)?.silu()?.mul(&b.up.apply(&h)?)?;
            x = x.add(&b.down.apply(&gated)?)?;
        }
        if last {
            x = x.narrow(0, seq - 1, 1)?;
        }
        let x = x.rms_norm(&[dim], Some(&self.norm), Some(self.eps))?;
        self.output.apply(&x)
    }
}

/// Decoding steps of `model` with the token and its position held in
/// tensors: the first step is captured (`Device::capture`, which also runs
/// it), each later one writes the token and position and replays it.
pub struct Decoder {
    model: Rc<Model>,
    token: Tensor,
    pos: Tensor,
    positions: Tensor,
    logits: Tensor,
    graph: Option<Graph>,
}

impl Decoder {
    /// # Errors
    /// webtensor's.
    pub fn new(model: Rc<Model>) -> webtensor::Result<Decoder> {
        let dev = model.embd.device().clone();
        Ok(Decoder {
            token: Tensor::zeros([1], DType::I32, &dev)?,
            pos: Tensor::zeros([1], DType::I32, &dev)?,
            positions: Tensor::arange(0i32, model.context as i32, 1, &dev)?,
            logits: Tensor::zeros([1, model.vocab], DType::F32, &dev)?,
            graph: None,
            model,
        })
    }

    /// The logits `(1, vocab)` after `token` at position `at` (its key and
    /// value written into the caches there; `at` below the model's
    /// `context`).
    ///
    /// # Errors
    /// `Error::Argument` naming `Decoder::step` for a token outside the
    /// vocabulary or a position past the caches (checked here: a GPU's replayed step would read the rope
    /// tables' zeros there and skip the cache's write, its index error
    /// coming only with the next readback); webtensor's.
    pub fn step(&mut self, token: u32, at: usize) -> webtensor::Result<&Tensor> {
        if token as usize >= self.model.vocab {
            return Err(webtensor::Error::Argument {
                op: "Decoder::step",
                msg: format!(
                    "token {token} is not one of the {} in the vocabulary",
                    self.model.vocab
                ),
            });
        }
        if at >= self.model.context {
            return Err(webtensor::Error::Argument {
                op: "Decoder::step",
                msg: format!(
                    "position {at} is past the key/value caches of {} positions",
                    self.model.context
                ),
            });
        }
        let dev = self.logits.device().clone();
        self.token
            .assign(&Tensor::from_slice(&[token as i32], [1], &dev)?)?;
        self.pos
            .assign(&Tensor::from_slice(&[at as i32], [1], &dev)?)?;
        match &mut self.graph {
            Some(graph) => graph.run()?,
            None => {
                let (t, p, o, m) = (
                    self.token.clone(),
                    self.pos.clone(),
                    self.logits.clone(),
                    self.model.clone(),
                );
                let positions = self.positions.clone();
                let step = move || o.assign(&m.step(&t, &p, &positions)?);
                self.graph = Some(dev.capture(step)?);
            }
        }
        Ok(&self.logits)
    }
}
