//! A tiny Llama-architecture model read from a GGUF file gguf-py wrote
//! (`tests/data/make_tiny_llama.py`: f32, f16 and Q8_0 weights), run
//! forward on every device by the model `examples/generate.rs` runs
//! (`examples/common/llama.rs`), from webtensor's ops (embedding rows, RMS
//! norms, products, rotary embeddings, grouped-query attention over a KV
//! cache written in place through views, SwiGLU), against NumPy's forward
//! pass: the prompt's logits within f32 rounding, and the greedy
//! continuation token for token; with the weights dequantized on loading,
//! and with the quantized ones kept as their blocks (`QTensor`,
//! `qmatmul`). A second model (`make_tiny_llama_quant.py`) has a weight of
//! every quantized type the products take; a third is laid out as Qwen2's
//! (`make_tiny_qwen2.py`), a fourth carries a vocabulary, for a whole
//! generation from text (`make_tokenizer_cases.py`), and two more scale
//! their rotary frequencies (`make_tiny_llama_scaled.py`: Llama 3.1's
//! `rope_freqs`, and linear). A decoding step written with
//! its token and position in tensors (caches written by `scatter_`, rotary
//! tables by `Rope::at`, a mask over the whole cache) is captured once and
//! replayed for each token.

mod common;
#[path = "../examples/common/gguf_tokenizer.rs"]
mod gguf_tokenizer;
#[path = "../examples/common/llama.rs"]
mod llama;

use llama::{Decoder, Logits, Model};
use webtensor::io::{Gguf, GgufValue, GgufWriter};
use webtensor::{DType, Device, Tensor, io};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

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

/// The model in `gguf` against NumPy's logits and greedy tokens in
/// `reference`, on every device, its quantized weights dequantized on
/// loading and kept as blocks.
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
        let model = Model::load(&file, dev, 32, blocks).unwrap();
        let kind = if blocks { "blocks" } else { "dequantized" };
        let logits = model.forward(&prompt, 0, Logits::Every).unwrap();
        let vocab = want_logits.len() / prompt.len();
        assert_eq!(
            (model.vocab, logits.dims()),
            (vocab, &[prompt.len(), vocab][..])
        );
        let got = logits.to_vec::<f32>().unwrap();
        for (i, (g, w)) in got.iter().zip(&want_logits).enumerate() {
            assert!(
                (g - w).abs() <= 2e-4 * (1.0 + w.abs()),
                "{gguf} on {dev} ({kind}): logit {i}: {g} vs NumPy's {w}"
            );
        }
        // The prompt in two passes, the second of several tokens after the
        // first's cache (a chat's next turn): its rows are NumPy's rows of
        // the whole prompt, the mask offset by the tokens before.
        let split = prompt.len() / 2;
        model.forward(&prompt[..split], 0, Logits::Last).unwrap();
        let rest = model
            .forward(&prompt[split..], split, Logits::Every)
            .unwrap();
        let got = rest.to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want_logits.len() - split * vocab);
        for (i, (g, w)) in got.iter().zip(&want_logits[split * vocab..]).enumerate() {
            assert!(
                (g - w).abs() <= 2e-4 * (1.0 + w.abs()),
                "{gguf} on {dev} ({kind}): logit {i} after {split} tokens: {g} vs NumPy's {w}"
            );
        }
        // The last position's logits alone (a prompt's pass in
        // examples/generate.rs), the caches written again as before.
        // A product of one row may sum in another order than one of many.
        let last = model.forward(&prompt, 0, Logits::Last).unwrap();
        let rows = logits.dims()[0];
        let want = logits
            .narrow(0, rows - 1, 1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let got = last.to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{gguf} on {dev} ({kind}): the last row alone: {g} vs {w}"
            );
        }
        // Decoding one token a step over the KV cache: each step's logits
        // NumPy's row of the whole sequence at that position (a token
        // alone can match with the cache stale or the rotation at 0: one
        // of the models repeats one token). tiny_llama_vocab_reference.npz
        // (make_tokenizer_cases.py, which needs sentencepiece and
        // llama-cpp-python) has its greedy tokens only.
        let decode = reference.get("decode_logits").map(|t| {
            assert_eq!(t.dims(), [greedy.len() - 1, vocab]);
            t.to_vec::<f32>().unwrap()
        });
        let mut next = last_token(&logits);
        let mut tokens = vec![next];
        for step in 1..greedy.len() {
            let at = prompt.len() + step - 1;
            let logits = model.forward(&[next], at, Logits::Every).unwrap();
            if let Some(decode) = &decode {
                let want = &decode[(step - 1) * vocab..step * vocab];
                let got = logits.to_vec::<f32>().unwrap();
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert!(
                        (g - w).abs() <= 2e-4 * (1.0 + w.abs()),
                        "{gguf} on {dev} ({kind}): step {step}, logit {i}: {g} vs NumPy's {w}"
                    );
                }
            }
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
fn a_tiny_qwen2_gives_numpys_logits_and_greedy_tokens() {
    // Qwen2's layout (make_tiny_qwen2.py): NeoX rotation, biases on q, k
    // and v, the embeddings read back as the output matrix, and heads of
    // 24 over a width of 64 (`key_length`).
    matches_numpy("tiny_qwen2.gguf", "tiny_qwen2_reference.npz");
}

#[test]
fn a_tiny_llama31_with_scaled_rotary_frequencies_gives_numpys_logits() {
    // Llama 3.1's "llama3" scaling as llama.cpp's converter stores it (a
    // rope_freqs tensor of divisors, make_tiny_llama_scaled.py), each of
    // its three bands among the head's frequencies.
    matches_numpy("tiny_llama31.gguf", "tiny_llama31_reference.npz");
}

#[test]
fn a_tiny_llama_with_linear_rotary_scaling_gives_numpys_logits() {
    // rope.scaling.type "linear", factor 4.
    matches_numpy("tiny_llama_linear.gguf", "tiny_llama_linear_reference.npz");
}

#[test]
fn a_rotary_scaling_not_built_is_refused_before_any_weight_is_read() {
    // Metadata alone, asking for YaRN: loading stops before the weights.
    let mut w = GgufWriter::new();
    for (key, value) in [
        ("general.architecture", GgufValue::String("llama".into())),
        ("llama.block_count", GgufValue::U32(1)),
        ("llama.embedding_length", GgufValue::U32(32)),
        ("llama.attention.head_count", GgufValue::U32(2)),
        ("llama.rope.scaling.type", GgufValue::String("yarn".into())),
        ("llama.rope.scaling.factor", GgufValue::F32(4.0)),
    ] {
        w.add_metadata(key, value).unwrap();
    }
    let file = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    match Model::load(&file, &Device::cpu(), 32, true) {
        Err(e) => assert!(e.to_string().contains("\"yarn\" is not supported"), "{e}"),
        Ok(_) => panic!("a YaRN scaling loaded"),
    }
}

/// A llama file of `meta` (over a header of 2 heads of 4 features, one
/// block) and `tensors` (f32 zeros of these shapes), read back.
fn header_file(meta: &[(&str, GgufValue)], tensors: &[(&str, &[usize])]) -> Gguf {
    let cpu = Device::cpu();
    let mut w = GgufWriter::new();
    let base = [
        ("general.architecture", GgufValue::String("llama".into())),
        ("llama.block_count", GgufValue::U32(1)),
        ("llama.embedding_length", GgufValue::U32(8)),
        ("llama.attention.head_count", GgufValue::U32(2)),
        (
            "llama.attention.layer_norm_rms_epsilon",
            GgufValue::F32(1e-5),
        ),
    ];
    for (key, value) in base
        .iter()
        .filter(|(k, _)| !meta.iter().any(|(m, _)| m == k))
    {
        w.add_metadata(key, value.clone()).unwrap();
    }
    for (key, value) in meta {
        w.add_metadata(key, value.clone()).unwrap();
    }
    for (name, shape) in tensors {
        let t = Tensor::zeros(shape.to_vec(), DType::F32, &cpu).unwrap();
        w.add_tensor(name, &t).unwrap();
    }
    Gguf::from_bytes(w.to_bytes().unwrap()).unwrap()
}

/// What loading `file` refuses with.
fn refused(file: &Gguf) -> String {
    match Model::load(file, &Device::cpu(), 32, true) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a malformed model loaded"),
    }
}

/// The embedding table and final norm of the header above.
const TABLE: [(&str, &[usize]); 2] = [
    ("token_embd.weight", &[16, 8]),
    ("output_norm.weight", &[8]),
];

#[test]
fn a_block_count_no_file_holds_is_an_error_not_an_allocation() {
    // u32::MAX layers reserved terabytes (an abort); u64::MAX panicked.
    for count in [GgufValue::U32(u32::MAX), GgufValue::U64(u64::MAX)] {
        let file = header_file(&[("llama.block_count", count)], &TABLE);
        let e = refused(&file);
        assert!(e.contains("blk.0."), "{e}");
    }
}

/// Weights of other shapes than the header's, and header values of the
/// wrong type, are errors naming them, at load: a 1-D or 0-D embedding
/// table panicked (at the first step, or in the load), a block's caches
/// were sized from the header's head counts before any weight was
/// compared with them, and a rotary base written as a string was read as
/// missing (10,000, where a Llama 3 file means 500,000).
#[test]
fn weights_and_metadata_unlike_the_header_are_refused_at_load() {
    let norm = ("output_norm.weight", &[8usize][..]);
    for (table, what) in [
        (&[16usize][..], "[16]"),
        (&[][..], "[]"),
        (&[16, 4][..], "[16, 4]"),
    ] {
        let e = refused(&header_file(&[], &[("token_embd.weight", table), norm]));
        assert!(e.contains("token_embd.weight") && e.contains(what), "{e}");
    }
    let e = refused(&header_file(
        &[],
        &[TABLE[0], TABLE[1], ("output.weight", &[15, 8])],
    ));
    assert!(e.contains("output.weight"), "{e}");
    // A million heads of 4 over a block of 2 heads' weights: refused at
    // its first weight, before any cache of the header's size.
    let mut tensors = TABLE.to_vec();
    tensors.push(("blk.0.attn_norm.weight", &[8]));
    tensors.push(("blk.0.attn_q.weight", &[8, 8]));
    let e = refused(&header_file(
        &[
            ("llama.attention.head_count", GgufValue::U32(1 << 20)),
            ("llama.attention.key_length", GgufValue::U32(4)),
        ],
        &tensors,
    ));
    assert!(e.contains("blk.0.attn_q.weight"), "{e}");
    // Heads whose rows overflow are refused, not wrapped.
    let e = refused(&header_file(
        &[
            ("llama.attention.head_count", GgufValue::U64(1 << 40)),
            ("llama.attention.key_length", GgufValue::U64(1 << 40)),
        ],
        &TABLE,
    ));
    assert!(e.contains("heads of 1099511627776 features"), "{e}");
    let e = refused(&header_file(
        &[("llama.attention.head_count", GgufValue::U32(3))],
        &TABLE,
    ));
    assert!(e.contains("3 heads of 8 features"), "{e}");
    for key in ["llama.rope.freq_base", "llama.attention.head_count_kv"] {
        let file = header_file(&[(key, GgufValue::String("500000".into()))], &TABLE);
        let e = refused(&file);
        assert!(e.contains(key) && e.contains("not a number"), "{e}");
    }
    // Counts that are no whole numbers (llama.cpp's type check refuses
    // them) are named with their values, not truncated to 4 or 0 heads.
    for (key, value, shown) in [
        ("llama.attention.head_count", GgufValue::F32(4.5), "4.5"),
        ("llama.attention.head_count_kv", GgufValue::F32(-4.0), "-4"),
        ("llama.block_count", GgufValue::F64(2.5), "2.5"),
        (
            "llama.embedding_length",
            GgufValue::F32(f32::INFINITY),
            "inf",
        ),
    ] {
        let e = refused(&header_file(&[(key, value)], &TABLE));
        assert!(e.contains(&format!("{key} is {shown}, not a count")), "{e}");
    }
}

/// Biases unlike their weights' rows, an output bias in a llama file
/// (llama.cpp refuses both), an attention factor that is not finite, and
/// tokens outside the vocabulary are errors: a bias of one
/// element was broadcast over every row, one of another length failed
/// only at the first pass, and a token of -1 read the table's last row.
#[test]
fn biases_attention_factors_and_tokens_llama_cpp_refuses_are_errors() {
    let block: [(&str, &[usize]); 9] = [
        ("blk.0.attn_norm.weight", &[8]),
        ("blk.0.attn_q.weight", &[8, 8]),
        ("blk.0.attn_k.weight", &[8, 8]),
        ("blk.0.attn_v.weight", &[8, 8]),
        ("blk.0.attn_output.weight", &[8, 8]),
        ("blk.0.ffn_norm.weight", &[8]),
        ("blk.0.ffn_up.weight", &[12, 8]),
        ("blk.0.ffn_gate.weight", &[12, 8]),
        ("blk.0.ffn_down.weight", &[8, 12]),
    ];
    let with = |meta: &[(&str, GgufValue)], extra: &[(&str, &[usize])]| {
        let tensors: Vec<(&str, &[usize])> =
            TABLE.iter().chain(&block).chain(extra).copied().collect();
        header_file(meta, &tensors)
    };
    let model = Model::load(&with(&[], &[]), &Device::cpu(), 32, true).unwrap();
    for (bias, shape) in [
        ("blk.0.attn_q.bias", &[1usize][..]),
        ("blk.0.attn_k.bias", &[5][..]),
        ("blk.0.ffn_down.bias", &[12][..]),
    ] {
        let e = refused(&with(&[], &[(bias, shape)]));
        assert!(e.contains(bias) && e.contains(&format!("{shape:?}")), "{e}");
    }
    let e = refused(&with(&[], &[("output.bias", &[16])]));
    assert!(e.contains("output.bias in a llama file"), "{e}");
    for factor in [f32::INFINITY, f32::NAN] {
        let meta = [("llama.rope.scaling.attn_factor", GgufValue::F32(factor))];
        let e = refused(&with(&meta, &[]));
        assert!(e.contains("llama.rope.scaling.attn_factor is"), "{e}");
    }
    for tokens in [&[-1][..], &[3, 16][..]] {
        let e = model.forward(tokens, 0, Logits::Every).unwrap_err();
        assert!(e.to_string().contains("Model::forward"), "{e}");
    }
    let mut decoder = Decoder::new(std::rc::Rc::new(model)).unwrap();
    for token in [16, 1 << 31] {
        let e = decoder.step(token, 0).unwrap_err().to_string();
        assert!(
            e.contains("Decoder::step") && e.contains("vocabulary"),
            "{e}"
        );
    }
}

/// A file of metadata `meta` (keys under `arch.`) and an optional
/// `rope_freqs` of `factors`, read back.
fn scaling_file(arch: &str, meta: &[(&str, GgufValue)], factors: Option<Vec<f32>>) -> Gguf {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", GgufValue::String(arch.into()))
        .unwrap();
    for (key, value) in meta {
        w.add_metadata(&format!("{arch}.{key}"), value.clone())
            .unwrap();
    }
    if let Some(f) = factors {
        let n = f.len();
        let t = Tensor::from_vec(f, [n], &Device::cpu()).unwrap();
        w.add_tensor("rope_freqs.weight", &t).unwrap();
    }
    Gguf::from_bytes(w.to_bytes().unwrap()).unwrap()
}

#[test]
fn rotary_scaling_keys_are_read_as_llama_cpp_reads_them() {
    use webtensor::RopeScaling;
    let text = |s: &str| GgufValue::String(s.into());
    let ff: Vec<f32> = (0..8).map(|i| 1.0 + i as f32).collect();
    let scaling = |arch: &str, meta: &[(&str, GgufValue)], factors: Option<Vec<f32>>| {
        llama::rope_scaling(&scaling_file(arch, meta, factors), arch, 16, 10000.0)
            .map_err(|e| e.to_string())
    };
    let linear = |factor| Ok(RopeScaling::Linear { factor });
    for (meta, factors, want) in [
        (vec![], None, Ok(RopeScaling::None)),
        // A type "none" scales nothing, whatever the factor.
        (
            vec![
                ("rope.scaling.type", text("none")),
                ("rope.scaling.factor", GgufValue::F32(4.0)),
            ],
            None,
            Ok(RopeScaling::None),
        ),
        // No type is linear, as in llama.cpp; the older key too.
        (
            vec![("rope.scaling.factor", GgufValue::F32(4.0))],
            None,
            linear(4.0),
        ),
        (
            vec![("rope.scale_linear", GgufValue::F32(2.0))],
            None,
            linear(2.0),
        ),
        (
            vec![
                ("rope.scaling.type", text("linear")),
                ("rope.scaling.factor", GgufValue::F32(0.0)),
            ],
            None,
            Ok(RopeScaling::None),
        ),
        (
            vec![],
            Some(ff.clone()),
            Ok(RopeScaling::Factors(ff.clone())),
        ),
        // Both: divided by each.
        (
            vec![
                ("rope.scaling.type", text("linear")),
                ("rope.scaling.factor", GgufValue::F32(2.0)),
            ],
            Some(ff.clone()),
            Ok(RopeScaling::Factors(ff.iter().map(|v| v * 2.0).collect())),
        ),
    ] {
        assert_eq!(scaling("llama", &meta, factors), want, "{meta:?}");
    }
    for (arch, meta, factors, what) in [
        (
            "llama",
            vec![("rope.scaling.type", text("yarn"))],
            None,
            "\"yarn\"",
        ),
        (
            "llama",
            vec![("rope.scaling.type", GgufValue::U32(1))],
            None,
            "not a string",
        ),
        (
            "llama",
            vec![("rope.scaling.factor", text("4"))],
            None,
            "not a number",
        ),
        (
            "llama",
            vec![("rope.scaling.factor", GgufValue::F32(-4.0))],
            None,
            "llama.rope.scaling.factor: ",
        ),
        ("llama", vec![], Some(vec![1.0; 7]), "take 8 f32 divisors"),
        (
            "llama",
            vec![],
            Some(vec![1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]),
            "factor 3",
        ),
        ("qwen2", vec![], Some(ff.clone()), "in a qwen2 file"),
    ] {
        match scaling(arch, &meta, factors) {
            Err(e) => assert!(e.contains(what), "{what}: {e}"),
            Ok(s) => panic!("{meta:?} gave {s:?}"),
        }
    }
}

#[test]
fn a_text_prompt_tokenized_by_the_files_vocabulary_gives_numpys_tokens() {
    // The whole of examples/generate.rs's path: a tiny Llama carrying a
    // SentencePiece vocabulary (make_tokenizer_cases.py), its prompt's text
    // tokenized from the file (BOS first) as SentencePiece does, then
    // NumPy's logits and greedy continuation on every device.
    let file = Gguf::from_bytes(data("tiny_llama_vocab.gguf")).unwrap();
    let tok = gguf_tokenizer::from_gguf(&file).unwrap();
    let ids = tok.encode("Once upon a time").unwrap();
    let reference = reference("tiny_llama_vocab_reference.npz");
    let prompt = reference["prompt"].to_vec::<i32>().unwrap();
    assert_eq!(ids.iter().map(|&i| i as i32).collect::<Vec<_>>(), prompt);
    assert_eq!(
        (tok.bos, tok.eos, tok.pre.as_deref()),
        (Some(1), Some(2), None)
    );
    assert_eq!(tok.decode(&ids).unwrap(), "Once upon a time");
    matches_numpy("tiny_llama_vocab.gguf", "tiny_llama_vocab_reference.npz");
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
            Model::load(&file, dev, 32, true).unwrap(),
            std::rc::Rc::new(Model::load(&file, dev, 32, true).unwrap()),
        );
        let logits = eager.forward(&prompt, 0, Logits::Every).unwrap();
        model.forward(&prompt, 0, Logits::Every).unwrap();
        // The examples' decoder: its first step captured, the others
        // replayed.
        let mut decoder = Decoder::new(model).unwrap();
        let first = last_token(&logits);
        let (mut next, mut tokens) = (first, vec![first]);
        for step in 1..greedy.len() {
            let at = prompt.len() + step - 1;
            let out = decoder.step(next as u32, at).unwrap();
            let want = eager
                .forward(&[next], at, Logits::Every)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
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
        // A position past the caches of 32 is refused before the step
        // runs (a GPU's replay read the rope tables' zeros there).
        match decoder.step(next as u32, 32) {
            Err(webtensor::Error::Argument { op, msg }) => {
                assert_eq!(op, "Decoder::step");
                assert!(msg.contains("position 32"), "{msg}");
            }
            other => panic!("{:?}", other.err()),
        }
        decoder.step(next as u32, 31).unwrap();
    }
}
