//! The tokenizer `examples/generate.rs` builds from a GGUF file's own
//! vocabulary (`examples/common/gguf_tokenizer.rs`) against the tokenizers
//! the vocabularies came from (`tests/data/make_tokenizer_cases.py`):
//! SentencePiece's ids for a Llama-kind vocabulary of scored pieces, and
//! Hugging Face's for a byte-level BPE with merges, over text with leading
//! and trailing spaces, digits, accents, CJK, emoji, bytes the vocabulary
//! lacks, tabs and new lines, and a special token; decoding gives the text
//! back. The byte-level vocabulary under each pre-tokenizer family the
//! module builds (and none) against llama.cpp's own ids
//! (`tests/data/make_pretokenizer_cases.py`), and the tokens llama.cpp
//! treats apart (unknown, unused, user-defined, an EOS added) against its
//! ids too (`tests/data/make_tokenizer_llama_cpp_cases.py`).

#[path = "../examples/common/gguf_tokenizer.rs"]
mod gguf_tokenizer;

use webtensor::io::{Gguf, GgufValue, GgufWriter};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn tokenizer(kind: &str) -> gguf_tokenizer::GgufTokenizer {
    let file = Gguf::from_bytes(data(&format!("tiny_tokenizer_{kind}.gguf"))).unwrap();
    gguf_tokenizer::from_gguf(&file).unwrap()
}

/// The text of a hex string of UTF-8 bytes (`-` for none).
fn text_of(hex: &str) -> String {
    let hex = if hex == "-" { "" } else { hex };
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn a_gguf_vocabulary_tokenizes_as_the_tokenizer_it_came_from() {
    let spm = tokenizer("spm");
    let bpe = tokenizer("bpe");
    assert_eq!(
        (spm.bos, spm.eos, spm.pre.as_deref()),
        (Some(1), Some(2), None)
    );
    assert_eq!((bpe.bos, bpe.pre.as_deref()), (None, Some("gpt2")));
    let cases = String::from_utf8(data("tokenizer_cases.txt")).unwrap();
    let mut counts = [0, 0];
    for line in cases.lines() {
        let mut parts = line.split(' ');
        let (kind, text) = (parts.next().unwrap(), text_of(parts.next().unwrap()));
        let want: Vec<u32> = parts.map(|p| p.parse().unwrap()).collect();
        let (tok, count) = match kind {
            "spm" => (&spm, &mut counts[0]),
            _ => (&bpe, &mut counts[1]),
        };
        *count += 1;
        let got = tok.tokenizer.encode(text.as_str(), false).unwrap();
        assert_eq!(got.get_ids(), &want[..], "{kind} {text:?}");
        // The BOS the file asks for, then the same ids.
        let with_bos = tok.encode(&text).unwrap();
        assert_eq!(
            with_bos[..],
            [tok.bos.into_iter().collect(), want.clone()].concat()
        );
        // Decoding gives the text back (the special token left out).
        let back = tok.decode(&want).unwrap();
        assert_eq!(back, text.replace("<|endoftext|>", ""), "{kind} {text:?}");
    }
    assert_eq!(counts, [13, 14]);
}

#[test]
fn a_file_without_a_known_vocabulary_is_an_error() {
    let file = Gguf::from_bytes(data("tiny_llama.gguf")).unwrap();
    let e = gguf_tokenizer::from_gguf(&file).err().unwrap();
    assert!(e.to_string().contains("tokenizer.ggml.model"), "{e}");
}

/// tiny_tokenizer_bpe.gguf with `tokenizer.ggml.pre` set to `pre` (none
/// for `None`).
fn bpe_with_pre(pre: Option<&str>) -> Gguf {
    let base = Gguf::from_bytes(data("tiny_tokenizer_bpe.gguf")).unwrap();
    let mut w = GgufWriter::new();
    for (key, value) in base.metadata() {
        if key != "tokenizer.ggml.pre" {
            w.add_metadata(key, value.clone()).unwrap();
        }
    }
    if let Some(pre) = pre {
        w.add_metadata("tokenizer.ggml.pre", GgufValue::String(pre.into()))
            .unwrap();
    }
    Gguf::from_bytes(w.to_bytes().unwrap()).unwrap()
}

#[test]
fn each_pre_tokenizer_family_splits_as_llama_cpp_does() {
    // llama.cpp's ids (make_pretokenizer_cases.py) for texts whose pieces
    // differ between the families: digit runs, case of contractions,
    // punctuation, tabs, carriage returns, trailing spaces.
    let cases = String::from_utf8(data("pretokenizer_cases.txt")).unwrap();
    let mut seen = std::collections::BTreeMap::new();
    for line in cases.lines() {
        let mut parts = line.split(' ');
        let (pre, text) = (parts.next().unwrap(), text_of(parts.next().unwrap()));
        let want: Vec<u32> = parts.map(|p| p.parse().unwrap()).collect();
        let pre = (pre != "-").then_some(pre);
        let tok = gguf_tokenizer::from_gguf(&bpe_with_pre(pre)).unwrap();
        let got = tok.tokenizer.encode(text.as_str(), false).unwrap();
        assert_eq!(got.get_ids(), &want[..], "{pre:?} {text:?}");
        *seen.entry(tok.pre.unwrap()).or_insert(0) += 1;
    }
    let families: Vec<_> = seen.keys().map(String::as_str).collect();
    assert_eq!(
        families,
        ["dbrx", "default", "gpt2", "llama3", "qwen2", "smollm"]
    );
}

#[test]
fn pre_tokenizer_names_map_as_llama_cpps_and_unknown_ones_are_refused() {
    use gguf_tokenizer::pre_tokenizer;
    for (name, family, bos) in [
        (None, "default", false),
        (Some(""), "default", false),
        (Some("llama-bpe"), "llama3", true),
        (Some("llama3"), "llama3", true),
        (Some("smaug-bpe"), "dbrx", false),
        (Some("deepseek-r1-qwen"), "qwen2", false),
        (Some("starcoder"), "smollm", false),
        (Some("olmo"), "gpt2", false),
    ] {
        let pre = pre_tokenizer(name).unwrap();
        assert_eq!((pre.family, pre.add_bos), (family, bos), "{name:?}");
        assert_eq!(pre.ignore_merges, family == "llama3");
    }
    // llama.cpp gives these other expressions (or does not know them):
    // refused, never split as another family would.
    for name in ["tekken", "deepseek-llm", "gpt2", "qwen35", "viking"] {
        let e = pre_tokenizer(Some(name)).err().unwrap();
        assert!(e.to_string().contains(&format!("{name:?}")), "{e}");
        let file = bpe_with_pre(Some(name));
        assert!(gguf_tokenizer::from_gguf(&file).is_err(), "{name}");
    }
}

#[test]
fn a_generation_ends_where_llama_cpp_ends_one() {
    // llama_vocab_is_eog: the file's end of sequence and end of turn, and
    // a token named `<|im_end|>` (which Qwen2's instruct models end their
    // answers with while their EOS is `<|endoftext|>`).
    let base = Gguf::from_bytes(data("tiny_tokenizer_spm.gguf")).unwrap();
    let mut w = GgufWriter::new();
    for (key, value) in base.metadata() {
        let value = match (key.as_str(), value) {
            ("tokenizer.ggml.tokens", GgufValue::Array { item, items }) => {
                let mut items = items.clone();
                items[10] = GgufValue::String("<|im_end|>".into());
                GgufValue::Array { item: *item, items }
            }
            _ => value.clone(),
        };
        w.add_metadata(key, value).unwrap();
    }
    w.add_metadata("tokenizer.ggml.eot_token_id", GgufValue::U32(7))
        .unwrap();
    let file = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    let tok = gguf_tokenizer::from_gguf(&file).unwrap();
    assert_eq!(tok.eos, Some(2));
    let ends: Vec<u32> = (0..12).filter(|&i| tok.is_end(i)).collect();
    assert_eq!(ends, [2, 7, 10]);
    // The file as it is ends at its EOS alone.
    let plain = tokenizer("spm");
    assert_eq!(
        (0..12).filter(|&i| plain.is_end(i)).collect::<Vec<_>>(),
        [2]
    );
}

/// A SentencePiece vocabulary of `pieces` after `<unk>`, `<s>` and `</s>`
/// (scores 0, all normal), with `meta` besides.
fn spm_vocabulary(pieces: &[String], meta: &[(&str, GgufValue)]) -> Gguf {
    use webtensor::io::GgufValueType;
    let mut tokens: Vec<String> = ["<unk>", "<s>", "</s>"].map(String::from).to_vec();
    tokens.extend_from_slice(pieces);
    let n = tokens.len();
    let array = |item, items| GgufValue::Array { item, items };
    let mut w = GgufWriter::new();
    let strings = tokens.into_iter().map(GgufValue::String).collect();
    let types = (0..n).map(|i| GgufValue::I32([2, 3, 3].get(i).copied().unwrap_or(1)));
    for (key, value) in [
        ("tokenizer.ggml.model", GgufValue::String("llama".into())),
        (
            "tokenizer.ggml.tokens",
            array(GgufValueType::String, strings),
        ),
        (
            "tokenizer.ggml.scores",
            array(GgufValueType::F32, vec![GgufValue::F32(0.0); n]),
        ),
        (
            "tokenizer.ggml.token_type",
            array(GgufValueType::I32, types.collect()),
        ),
    ] {
        w.add_metadata(key, value).unwrap();
    }
    for (key, value) in meta {
        w.add_metadata(key, value.clone()).unwrap();
    }
    Gguf::from_bytes(w.to_bytes().unwrap()).unwrap()
}

/// A crafted vocabulary is refused before its merges are built: pieces
/// "a", "aa", ... give as many merges as pieces squared (5,000 of them,
/// about 12 million merges and 40 GB of their strings), and a piece of
/// megabytes hashes its every split.
#[test]
fn a_crafted_sentencepiece_vocabulary_is_refused_not_built() {
    let runs: Vec<String> = (1..=1000).map(|n| "a".repeat(n)).collect();
    let e = gguf_tokenizer::from_gguf(&spm_vocabulary(&runs, &[]))
        .err()
        .expect("1,000 runs of a");
    assert!(e.to_string().contains("merges"), "{e}");
    let long = ["b".to_string(), "b".repeat(4096)];
    let e = gguf_tokenizer::from_gguf(&spm_vocabulary(&long, &[]))
        .err()
        .expect("a piece of 4 KiB");
    assert!(e.to_string().contains("4096 bytes"), "{e}");
    // A few short runs are a vocabulary.
    let tok = gguf_tokenizer::from_gguf(&spm_vocabulary(&runs[..8], &[])).unwrap();
    assert_eq!(tok.tokenizer.get_vocab_size(false), 11);
}

/// Special-token ids past the vocabulary are ignored, as llama.cpp
/// ignores them (a BOS of id 100,000 reached the embedding's lookup), and
/// ids a file does not name are llama.cpp's defaults: BOS 1 and EOS 2 for
/// SentencePiece (a Llama file without them got no BOS at all).
#[test]
fn special_token_ids_past_the_vocabulary_are_ignored() {
    let pieces = ["a".to_string(), "b".to_string()];
    let meta = [
        ("tokenizer.ggml.bos_token_id", GgufValue::U32(100_000)),
        ("tokenizer.ggml.eos_token_id", GgufValue::U32(5)),
        ("tokenizer.ggml.eot_token_id", GgufValue::U32(2)),
    ];
    let tok = gguf_tokenizer::from_gguf(&spm_vocabulary(&pieces, &meta)).unwrap();
    assert_eq!((tok.bos, tok.eos), (Some(1), Some(2)));
    assert_eq!((0..8).filter(|&i| tok.is_end(i)).collect::<Vec<_>>(), [2]);
    assert_eq!(tok.encode("ab").unwrap()[0], 1);
    let none = gguf_tokenizer::from_gguf(&spm_vocabulary(&pieces, &[])).unwrap();
    assert_eq!((none.bos, none.eos), (Some(1), Some(2)));
    let eos = [("tokenizer.ggml.eos_token_id", GgufValue::U32(4))];
    let tok = gguf_tokenizer::from_gguf(&spm_vocabulary(&pieces, &eos)).unwrap();
    assert_eq!((0..8).filter(|&i| tok.is_end(i)).collect::<Vec<_>>(), [4]);
    // No BOS where the file asks for none.
    let off = [("tokenizer.ggml.add_bos_token", GgufValue::Bool(false))];
    let tok = gguf_tokenizer::from_gguf(&spm_vocabulary(&pieces, &off)).unwrap();
    assert_eq!((tok.bos, tok.eos), (None, Some(2)));
}

/// A byte-level vocabulary without special-token ids takes llama.cpp's
/// default for both, 11.
#[test]
fn a_byte_level_vocabulary_without_special_ids_takes_llama_cpps_default() {
    let base = Gguf::from_bytes(data("tiny_tokenizer_bpe.gguf")).unwrap();
    let mut w = GgufWriter::new();
    for (key, value) in base.metadata() {
        if !key.ends_with("_token_id") && !key.ends_with("add_bos_token") {
            w.add_metadata(key, value.clone()).unwrap();
        }
    }
    w.add_metadata("tokenizer.ggml.add_bos_token", GgufValue::Bool(true))
        .unwrap();
    let file = Gguf::from_bytes(w.to_bytes().unwrap()).unwrap();
    let tok = gguf_tokenizer::from_gguf(&file).unwrap();
    assert_eq!((tok.bos, tok.eos), (Some(11), Some(11)));
    assert_eq!(tok.encode("hi").unwrap()[0], 11);
}

/// Where llama.cpp is the reference (tests/data/make_tokenizer_llama_cpp_cases.py):
/// the unknown token matched whole in the text, merges through pieces
/// typed unused, an EOS after the text where the file asks for one, and a
/// byte-level vocabulary's user-defined tokens matched whole and decoded
/// as their own text (`naïve` decoded through the byte-level alphabet was
/// `na\u{fffd}ve`).
#[test]
fn tokens_llama_cpp_treats_apart_tokenize_as_llama_cpps() {
    let cases = String::from_utf8(data("tokenizer_llama_cpp_cases.txt")).unwrap();
    let mut files = std::collections::HashMap::new();
    let mut count = 0;
    for line in cases.lines() {
        let p: Vec<&str> = line.split(' ').collect();
        let [file, text, add, ids, decoded] = p[..] else {
            panic!("{line}");
        };
        let tok = files.entry(file).or_insert_with(|| {
            gguf_tokenizer::from_gguf(&Gguf::from_bytes(data(file)).unwrap()).unwrap()
        });
        let text = text_of(text);
        let want: Vec<u32> = match ids {
            "-" => vec![],
            ids => ids.split(',').map(|i| i.parse().unwrap()).collect(),
        };
        let got = match add {
            "1" => tok.encode(&text).unwrap(),
            _ => tok
                .tokenizer
                .encode(text.as_str(), false)
                .unwrap()
                .get_ids()
                .to_vec(),
        };
        assert_eq!(got, want, "{file} {text:?}");
        // llama.cpp's text of a SentencePiece sequence (as
        // llama-cpp-python's `detokenize` gives it) keeps the space its
        // first piece starts with unless the sequence starts with the BOS
        // token; Hugging Face's drops it. A byte-level one is comparable
        // whole. (An unused token in the middle decoded to its text.)
        let llama_cpp = text_of(decoded);
        let want_text = match file.contains("spm") && want.first() != tok.bos.as_ref() {
            true => llama_cpp.strip_prefix(' ').unwrap_or(&llama_cpp),
            false => &llama_cpp,
        };
        assert_eq!(tok.decode(&want).unwrap(), want_text, "{file} {text:?}");
        // Piece by piece, as a generation prints, it is llama.cpp's text
        // (llama-cpp-python drops one space after a BOS token).
        let mut stream = gguf_tokenizer::TextStream::default();
        let pieces: String = want.iter().map(|&id| stream.push(&tok.piece(id))).collect();
        let pieces = match tok.bos.is_some() && want.first() == tok.bos.as_ref() {
            true => pieces.strip_prefix(' ').unwrap_or(&pieces),
            false => &pieces,
        };
        assert_eq!(pieces, llama_cpp, "{file} {text:?}");
        count += 1;
    }
    assert_eq!(count, 11);
}

/// Metadata llama.cpp refuses is an error, not a default: token types or
/// scores not one number a token, a special id that is not an id, a flag
/// that is not a bool, a token listed twice, a model name that is not a
/// string.
#[test]
fn malformed_tokenizer_metadata_is_an_error() {
    use webtensor::io::GgufValueType;
    let base = Gguf::from_bytes(data("tiny_tokenizer_spm.gguf")).unwrap();
    let n = match base.get("tokenizer.ggml.tokens") {
        Some(GgufValue::Array { items, .. }) => items.len(),
        other => panic!("{other:?}"),
    };
    let with = |key: &str, value: GgufValue| {
        let mut w = GgufWriter::new();
        for (k, v) in base.metadata() {
            w.add_metadata(k, if k == key { value.clone() } else { v.clone() })
                .unwrap();
        }
        if base.get(key).is_none() {
            w.add_metadata(key, value).unwrap();
        }
        gguf_tokenizer::from_gguf(&Gguf::from_bytes(w.to_bytes().unwrap()).unwrap())
    };
    let array = |item, items| GgufValue::Array { item, items };
    let mut tokens: Vec<GgufValue> = match base.get("tokenizer.ggml.tokens") {
        Some(GgufValue::Array { items, .. }) => items.clone(),
        _ => unreachable!(),
    };
    tokens[300] = tokens[200].clone();
    let cases = [
        (
            "tokenizer.ggml.token_type",
            array(GgufValueType::I32, vec![GgufValue::I32(1); n - 1]),
            "one a token",
        ),
        (
            "tokenizer.ggml.token_type",
            array(
                GgufValueType::String,
                vec![GgufValue::String("1".into()); n],
            ),
            "non-number",
        ),
        (
            "tokenizer.ggml.scores",
            array(GgufValueType::F32, vec![GgufValue::F32(0.0); n - 1]),
            "one a token",
        ),
        (
            "tokenizer.ggml.bos_token_id",
            GgufValue::String("1".into()),
            "not a token id",
        ),
        (
            "tokenizer.ggml.eos_token_id",
            GgufValue::I32(-5),
            "not a token id",
        ),
        (
            "tokenizer.ggml.add_bos_token",
            GgufValue::U8(0),
            "not a bool",
        ),
        (
            "tokenizer.ggml.add_eos_token",
            GgufValue::I32(1),
            "not a bool",
        ),
        (
            "tokenizer.ggml.tokens",
            array(GgufValueType::String, tokens),
            "listed twice",
        ),
        ("tokenizer.ggml.model", GgufValue::U32(7), "not a string"),
    ];
    for (key, value, want) in cases {
        let e = with(key, value)
            .err()
            .unwrap_or_else(|| panic!("{key}: accepted"));
        assert!(e.to_string().contains(want), "{key}: {e}");
    }
    // The same keys, well formed, are a tokenizer; so are longer scores
    // and types (llama.cpp reads the first of each) and several empty
    // tokens (llama.cpp names each `[EMPTY_i]`).
    assert!(with("tokenizer.ggml.add_eos_token", GgufValue::Bool(false)).is_ok());
    let longer = array(GgufValueType::I32, vec![GgufValue::I32(1); n + 3]);
    assert!(with("tokenizer.ggml.token_type", longer).is_ok());
    let mut empties: Vec<GgufValue> = match base.get("tokenizer.ggml.tokens") {
        Some(GgufValue::Array { items, .. }) => items.clone(),
        _ => unreachable!(),
    };
    empties[300] = GgufValue::String(String::new());
    empties[301] = GgufValue::String(String::new());
    let tok = with(
        "tokenizer.ggml.tokens",
        array(GgufValueType::String, empties),
    )
    .unwrap();
    assert_eq!(tok.tokenizer.get_vocab_size(false), n);
}

/// A generation printed token by token: a character made of byte tokens
/// shows once complete, and a stray byte after it shows as U+FFFD without
/// taking the character back (decoding the whole text again made the
/// group of three bytes three U+FFFD, under the text already printed, and
/// printing stopped for good). User-defined SentencePiece pieces keep
/// their `▁`, and an empty control token is `[EMPTY_i]` in the text too.
#[test]
fn pieces_print_as_they_complete_characters() {
    let tok = tokenizer("spm_unused");
    // `<0x00>` is token 9; `ab` (7) is unused.
    let byte = |b: u32| 9 + b;
    let ids = [4, byte(0xc3), byte(0xa9), byte(0xff), 3, 4, 7, 5];
    let mut stream = gguf_tokenizer::TextStream::default();
    let shown: Vec<String> = ids.iter().map(|&id| stream.push(&tok.piece(id))).collect();
    assert_eq!(shown, ["a", "", "é", "\u{fffd}", " ", "a", "", "b"]);
    // A generation that stops inside a character shows its start at the
    // end (it printed nothing of it), as Python's `errors='replace'`.
    assert_eq!(stream.push(&tok.piece(byte(0xe6))), "");
    assert_eq!(stream.push(&tok.piece(byte(0x97))), "");
    assert_eq!(stream.finish(), "\u{fffd}");
    assert_eq!(stream.finish(), "");
    assert_eq!(tok.decode(&[4, 7, 5]).unwrap(), "ab");

    // tiny_tokenizer_spm.gguf with a user-defined `x▁y` and an empty
    // control token after its 400 pieces.
    let spm = Gguf::from_bytes(data("tiny_tokenizer_spm.gguf")).unwrap();
    let n = spm
        .get("tokenizer.ggml.tokens")
        .and_then(GgufValue::as_array)
        .unwrap()
        .len();
    let extended = |v: &GgufValue, more: [GgufValue; 2]| match v {
        GgufValue::Array { item, items } => GgufValue::Array {
            item: *item,
            items: items.iter().cloned().chain(more).collect(),
        },
        other => panic!("{other:?}"),
    };
    let mut w = GgufWriter::new();
    for (key, value) in spm.metadata() {
        let value = match key.as_str() {
            "tokenizer.ggml.tokens" => extended(
                value,
                [
                    GgufValue::String("x▁y".into()),
                    GgufValue::String("".into()),
                ],
            ),
            "tokenizer.ggml.token_type" => extended(value, [GgufValue::I32(4), GgufValue::I32(3)]),
            "tokenizer.ggml.scores" => extended(value, [GgufValue::F32(0.0), GgufValue::F32(0.0)]),
            _ => value.clone(),
        };
        w.add_metadata(key, value).unwrap();
    }
    let tok = gguf_tokenizer::from_gguf(&Gguf::from_bytes(w.to_bytes().unwrap()).unwrap()).unwrap();
    let (user, empty) = (n as u32, n as u32 + 1);
    assert_eq!(tok.decode(&[user]).unwrap(), "x▁y");
    assert_eq!(tok.piece(user), "x▁y".as_bytes());
    let e = tok
        .tokenizer
        .encode(format!("[EMPTY_{empty}]x▁y").as_str(), false)
        .unwrap();
    assert_eq!(e.get_ids(), [empty, user]);
    assert_eq!(tok.decode(&[empty, user]).unwrap(), "x▁y");
}
