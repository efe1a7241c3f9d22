//! A GGUF file's own vocabulary as a Hugging Face tokenizer (the
//! `tokenizers` crate), built from the metadata llama.cpp's converters
//! write, as Hugging Face's converters build the same models:
//!
//! - `tokenizer.ggml.model = "llama"` (Llama 2, TinyLlama, Mistral): a
//!   SentencePiece BPE vocabulary with scores. Merges are every split of a
//!   piece into two pieces, ranked by the merged piece's score (what
//!   SentencePiece merges first), with byte fallback (`<0x0A>`), a `▁`
//!   prefix and spaces as `▁`.
//! - `tokenizer.ggml.model = "gpt2"` (Qwen2, SmolLM, Llama 3): byte-level
//!   BPE with the file's merges, split first by the pre-tokenizer
//!   `tokenizer.ggml.pre` names (its regular expressions, as llama.cpp's;
//!   llama.cpp's "default" where it names none). A name whose expressions
//!   are not built here is refused.
//!
//! Control tokens (`<s>`, `<|im_start|>`) and the unknown token are
//! special: matched whole in the text and left out of decoded text, as
//! llama.cpp matches them. User-defined tokens are matched whole too and
//! decode to their own text; unused ones decode to nothing.
//!
//! One difference from llama.cpp is left: where two SentencePiece merges
//! have the same score, llama.cpp merges the leftmost pair first, and
//! Hugging Face's BPE the merge listed first (here, the lower id). Real
//! vocabularies score their pieces apart; a file converted without its
//! `tokenizer.model` (every score -1000) tokenizes otherwise than
//! llama.cpp.

// Shared by examples/generate.rs, examples/web and tests, each using a
// part of it.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use tokenizers::decoders::DecoderWrapper;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::normalizers::{NormalizerWrapper, Prepend, Replace, Sequence as NormSequence};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};
use webtensor::io::{Gguf, GgufValue};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// GGUF's token types (`tokenizer.ggml.token_type`).
const NORMAL: i64 = 1;
const UNKNOWN: i64 = 2;
const CONTROL: i64 = 3;
const USER_DEFINED: i64 = 4;
const UNUSED: i64 = 5;

/// GPT-2's pre-tokenizer: contractions, letters, digits, other symbols,
/// each with one leading space, and runs of spaces. (llama.cpp's has no
/// last `\s+`: the whitespace it would match is a piece of its own
/// there too, as text no expression matches.)
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// llama.cpp's expressions where a file names no pre-tokenizer (its
/// "default"): punctuation runs, GPT-2's, digit runs, three digits.
const DEFAULT: [&str; 4] = [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"];
/// Llama 3's: case-blind contractions, up to three digits a piece.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's: as Llama 3's, one digit a piece.
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Tokens llama.cpp takes as ending a generation by their text
/// (`llama_vocab::impl::load`), whatever ids the file names.
const ENDING_TEXTS: [&str; 9] = [
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|end_of_text|>",
];

/// A file's tokenizer and the ids a generation needs.
pub struct GgufTokenizer {
    pub tokenizer: Tokenizer,
    /// The token a sequence starts with, where the file asks for one.
    pub bos: Option<u32>,
    /// The end-of-sequence token.
    pub eos: Option<u32>,
    /// Whether a sequence ends with the EOS token
    /// (`tokenizer.ggml.add_eos_token`).
    pub add_eos: bool,
    /// Tokens whose text is their own, not the decoder's: user-defined
    /// ones (in a byte-level vocabulary not byte-level characters, in a
    /// SentencePiece one `▁` kept), and unused ones, which decode to
    /// nothing, as llama.cpp's `token_to_piece` gives them.
    own_text: HashMap<u32, String>,
    /// Control and unknown tokens: left out of decoded text.
    silent: HashSet<u32>,
    /// A SentencePiece vocabulary (else byte-level).
    sentencepiece: bool,
    /// Whether decoded text loses its first space (a SentencePiece
    /// vocabulary's `add_space_prefix`, as Hugging Face's `Strip`).
    strip_space: bool,
    /// Every token that ends a generation, as llama.cpp's
    /// `llama_vocab_is_eog` has them: the ends of sequence, turn and
    /// message the file names, and tokens it takes as ending one by their
    /// text (`<|im_end|>`, `<|eot_id|>` ...): an instruct model ends its
    /// answer with one of these, often not its EOS.
    pub ends: Vec<u32>,
    /// The family of the pre-tokenizer of a byte-level vocabulary
    /// (`llama3`, `qwen2`, `smollm`, `gpt2`, `dbrx` or `default`), for the
    /// caller to report.
    pub pre: Option<String>,
}

impl GgufTokenizer {
    /// The ids of `text`, after the BOS token where the file adds one
    /// and before the EOS token where it adds that.
    ///
    /// # Errors
    /// The tokenizer's.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let ids = self.tokenizer.encode(text, false)?.get_ids().to_vec();
        let eos = self.eos.filter(|_| self.add_eos);
        Ok(self.bos.into_iter().chain(ids).chain(eos).collect())
    }

    /// True when `id` ends a generation (see [`GgufTokenizer::ends`]).
    pub fn is_end(&self, id: u32) -> bool {
        self.ends.contains(&id)
    }

    /// The text of `ids`, special tokens left out.
    ///
    /// # Errors
    /// The tokenizer's.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        // Runs of other tokens through the decoder, tokens of their own
        // text as they are.
        let mut text = String::new();
        let own = |id: &u32| self.own_text.contains_key(id);
        for run in ids.chunk_by(|a, b| !own(a) && !own(b)) {
            match self.own_text.get(&run[0]) {
                Some(own) => text.push_str(own),
                None => text.push_str(&self.tokenizer.decode(run, true)?),
            }
        }
        if self.strip_space && text.starts_with(' ') {
            text.remove(0);
        }
        Ok(text)
    }

    /// The bytes token `id` adds to a text, as llama.cpp's
    /// `token_to_piece` gives them (special tokens left out): a byte
    /// token's byte, a character's bytes through a byte-level alphabet, a
    /// piece's text with `▁` as a space. A character may take several
    /// tokens: [`TextStream`] shows text as it is completed.
    pub fn piece(&self, id: u32) -> Vec<u8> {
        if let Some(own) = self.own_text.get(&id) {
            return own.as_bytes().to_vec();
        }
        let text = match self.tokenizer.id_to_token(id) {
            Some(text) if !self.silent.contains(&id) => text,
            _ => return Vec::new(),
        };
        match self.sentencepiece {
            true => match byte_token(&text) {
                Some(byte) => vec![byte],
                None => text.replace('▁', " ").into_bytes(),
            },
            false => text.chars().filter_map(byte_level_byte).collect(),
        }
    }
}

/// Text made of tokens' bytes as they come ([`GgufTokenizer::piece`]): a
/// character whose bytes are split across tokens shows once its last byte
/// comes, and bytes that can begin no character show as U+FFFD each run
/// of them (as a terminal shows llama.cpp's); [`TextStream::finish`]
/// shows the start of a character the text ended inside as one.
#[derive(Debug, Default)]
pub struct TextStream {
    pending: Vec<u8>,
}

impl TextStream {
    /// The text `piece` completes.
    pub fn push(&mut self, piece: &[u8]) -> String {
        self.pending.extend_from_slice(piece);
        let mut text = String::new();
        loop {
            let (valid, bad) = match std::str::from_utf8(&self.pending) {
                Ok(_) => (self.pending.len(), None),
                Err(e) => (e.valid_up_to(), e.error_len()),
            };
            text.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
            match bad {
                Some(n) => {
                    text.push('\u{fffd}');
                    self.pending.drain(..valid + n);
                }
                // Valid, or the start of a character still to come.
                None => {
                    self.pending.drain(..valid);
                    return text;
                }
            }
        }
    }

    /// The text of the bytes held back at the end: the start of a
    /// character no byte completed, as U+FFFD (empty if none).
    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// The byte of a SentencePiece byte token (`<0x0A>`).
fn byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2).then(|| u8::from_str_radix(hex, 16).ok())?
}

/// The byte GPT-2's byte-level alphabet spells `c` with: printable bytes
/// as themselves, the others in order as U+0100 and up.
fn byte_level_byte(c: char) -> Option<u8> {
    let printable = |b: u32| matches!(b, 0x21..=0x7e | 0xa1..=0xac | 0xae..=0xff);
    match c as u32 {
        b if printable(b) => u8::try_from(b).ok(),
        b if b >= 0x100 => (0u32..256)
            .filter(|&x| !printable(x))
            .nth((b - 0x100) as usize)
            .and_then(|x| u8::try_from(x).ok()),
        _ => None,
    }
}

fn strings<'a>(f: &'a Gguf, key: &str) -> Result<Vec<&'a str>> {
    let items = f
        .get(key)
        .and_then(GgufValue::as_array)
        .ok_or_else(|| format!("the file has no {key}"))?;
    items
        .iter()
        .map(|v| {
            v.as_str()
                .ok_or_else(|| format!("{key} holds a non-string").into())
        })
        .collect()
}

/// The first `n` numbers at `key` (`None` where the file has none), one
/// a token: llama.cpp refuses fewer, and other types.
fn numbers(f: &Gguf, key: &str, n: usize) -> Result<Option<Vec<f64>>> {
    let Some(value) = f.get(key) else {
        return Ok(None);
    };
    let items = value
        .as_array()
        .filter(|items| items.len() >= n)
        .ok_or_else(|| format!("{key} must be an array of {n} numbers, one a token"))?;
    let numbers = items[..n]
        .iter()
        .map(GgufValue::as_f64)
        .collect::<Option<Vec<_>>>();
    Ok(Some(
        numbers.ok_or_else(|| format!("{key} holds a non-number"))?,
    ))
}

/// The token id at `key`, if it is one of the `n` tokens (llama.cpp
/// ignores one past them too).
///
/// # Errors
/// A value that is not a token id (a string, a negative number), which
/// llama.cpp refuses.
fn id(f: &Gguf, key: &str, n: usize) -> Result<Option<u32>> {
    let Some(value) = f.get(key) else {
        return Ok(None);
    };
    let id = value
        .as_u64()
        .ok_or_else(|| format!("{key} is {value:?}, not a token id"))?;
    Ok(u32::try_from(id).ok().filter(|&v| (v as usize) < n))
}

/// The flag at `key`, where the file sets one.
///
/// # Errors
/// A value that is not a bool, which llama.cpp refuses.
fn flag(f: &Gguf, key: &str) -> Result<Option<bool>> {
    match f.get(key) {
        None => Ok(None),
        Some(GgufValue::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!("{key} is {other:?}, not a bool").into()),
    }
}

/// The tokenizer the metadata of `f` describes.
///
/// # Errors
/// A model other than `llama` and `gpt2`, or metadata missing or of the
/// wrong type.
pub fn from_gguf(f: &Gguf) -> Result<GgufTokenizer> {
    let model = f
        .get("tokenizer.ggml.model")
        .ok_or("the file has no tokenizer.ggml.model")?
        .as_str()
        .ok_or("tokenizer.ggml.model is not a string")?;
    let tokens = strings(f, "tokenizer.ggml.tokens")?;
    let types: Vec<i64> = match numbers(f, "tokenizer.ggml.token_type", tokens.len())? {
        Some(t) => t.into_iter().map(|v| v as i64).collect(),
        None => vec![NORMAL; tokens.len()],
    };
    // llama.cpp names an empty token `[EMPTY_i]`, so that several are not
    // one (in the text it matches and decodes too).
    let names: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| match t.is_empty() {
            true => format!("[EMPTY_{i}]"),
            false => t.to_string(),
        })
        .collect();
    let mut vocab = Vocab::with_capacity(tokens.len());
    for (i, (t, name)) in tokens.iter().zip(&names).enumerate() {
        if let Some(first) = vocab.insert(name.clone(), i as u32) {
            // llama.cpp stops on such a vocabulary; one of the two ids
            // would decode to nothing.
            return Err(format!("token {t:?} is listed twice (ids {first} and {i})").into());
        }
    }
    // llama.cpp's ids where the file names none (or one past its
    // vocabulary): BOS 1 and EOS 2 for SentencePiece, 11 for both in a
    // byte-level BPE.
    let (bos_default, eos_default) = if model == "llama" { (1, 2) } else { (11, 11) };
    let special = |key: &str, default: u32| -> Result<Option<u32>> {
        let named = id(f, &format!("tokenizer.ggml.{key}_token_id"), tokens.len())?;
        Ok(named.or((default < tokens.len() as u32).then_some(default)))
    };
    let (mut tokenizer, pre, add_bos_default, strip_space) = match model {
        "llama" => {
            let (t, prefix) = sentencepiece(f, &tokens, &types, vocab)?;
            (t, None, true, prefix)
        }
        "gpt2" => {
            let (t, pre) = byte_level(f, vocab)?;
            (t, Some(pre.family.to_string()), pre.add_bos, false)
        }
        other => return Err(format!("tokenizer model {other:?} is not supported").into()),
    };
    // llama.cpp matches control, unknown and user-defined tokens whole
    // in the text.
    let added: Vec<AddedToken> = names
        .iter()
        .zip(&types)
        .filter(|(_, t)| matches!(**t, CONTROL | UNKNOWN | USER_DEFINED))
        .map(|(s, t)| AddedToken::from(s.clone(), *t != USER_DEFINED).normalized(false))
        .collect();
    tokenizer.add_special_tokens(&added);
    let mut own_text = HashMap::new();
    let mut silent = HashSet::new();
    for (i, (name, &t)) in names.iter().zip(&types).enumerate() {
        match t {
            USER_DEFINED => drop(own_text.insert(i as u32, name.clone())),
            UNUSED => drop(own_text.insert(i as u32, String::new())),
            CONTROL | UNKNOWN => drop(silent.insert(i as u32)),
            _ => {}
        }
    }
    let add_bos = flag(f, "tokenizer.ggml.add_bos_token")?.unwrap_or(add_bos_default);
    let add_eos = flag(f, "tokenizer.ggml.add_eos_token")?.unwrap_or(false);
    let eos = special("eos", eos_default)?;
    let mut ends = Vec::new();
    for k in ["eot", "eom"] {
        ends.extend(id(
            f,
            &format!("tokenizer.ggml.{k}_token_id"),
            tokens.len(),
        )?);
    }
    ends.extend(eos);
    ends.extend((0..tokens.len() as u32).filter(|&i| ENDING_TEXTS.contains(&tokens[i as usize])));
    Ok(GgufTokenizer {
        tokenizer,
        bos: special("bos", bos_default)?.filter(|_| add_bos),
        eos,
        add_eos,
        own_text,
        silent,
        sentencepiece: model == "llama",
        strip_space,
        ends,
        pre,
    })
}

/// The longest SentencePiece piece taken, in bytes (Llama's, Mistral's
/// and Gemma's are under 100).
const LONGEST_PIECE: usize = 1024;

/// Merges a SentencePiece vocabulary may give per piece (Llama 2's
/// 32,000 pieces give about 61,000).
const MERGES_A_PIECE: usize = 64;

/// A SentencePiece BPE vocabulary as Hugging Face's Llama tokenizer (its
/// decoder's `Strip` of the first space left to [`GgufTokenizer::decode`],
/// which decodes in runs), and whether the file adds a space prefix.
fn sentencepiece(
    f: &Gguf,
    tokens: &[&str],
    types: &[i64],
    vocab: Vocab,
) -> Result<(Tokenizer, bool)> {
    let scores = numbers(f, "tokenizer.ggml.scores", tokens.len())?
        .ok_or("a llama vocabulary needs tokenizer.ggml.scores, one per token")?;
    // Pieces that text can be made of: control, unknown and byte pieces
    // never come out of a merge (unused ones do, as in llama.cpp).
    let mergeable: HashMap<&str, u32> = tokens
        .iter()
        .zip(types)
        .enumerate()
        .filter(|(_, (_, t))| matches!(**t, NORMAL | USER_DEFINED | UNUSED))
        .map(|(i, (s, _))| (*s, i as u32))
        .collect();
    // Every split of a piece into two pieces, the piece's score first
    // (then its id, then the parts' ids), as Hugging Face's converter
    // orders them.
    // A crafted vocabulary ("a", "aa", ... of thousands of characters)
    // would give merges as many as its pieces squared, each hashing long
    // parts: real ones give a few a piece, of pieces of a few characters.
    let most = MERGES_A_PIECE * tokens.len();
    let mut merges: Vec<(f64, u32, u32, u32, &str, &str)> = Vec::new();
    for (piece, &merged) in &mergeable {
        if piece.len() > LONGEST_PIECE {
            return Err(format!("a vocabulary piece of {} bytes", piece.len()).into());
        }
        for (at, _) in piece.char_indices().skip(1) {
            let (l, r) = piece.split_at(at);
            if let (Some(&li), Some(&ri)) = (mergeable.get(l), mergeable.get(r)) {
                merges.push((scores[merged as usize], merged, li, ri, l, r));
            }
        }
        if merges.len() > most {
            return Err(format!(
                "a vocabulary of {} pieces with over {most} merges",
                tokens.len()
            )
            .into());
        }
    }
    merges.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let merges = merges
        .into_iter()
        .map(|m| (m.4.to_string(), m.5.to_string()))
        .collect();
    let unk = types.iter().position(|&t| t == UNKNOWN);
    let mut bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(unk) = unk {
        bpe = bpe.unk_token(tokens[unk].to_string());
    }
    let mut tokenizer = Tokenizer::new(bpe.build()?);
    let prefix = flag(f, "tokenizer.ggml.add_space_prefix")?.unwrap_or(true);
    let mut normalizers = Vec::new();
    if prefix {
        normalizers.push(NormalizerWrapper::Prepend(Prepend::new("▁".into())));
    }
    normalizers.push(NormalizerWrapper::Replace(Replace::new(" ", "▁")?));
    tokenizer.with_normalizer(Some(NormSequence::new(normalizers)));
    let decoders = vec![
        DecoderWrapper::Replace(Replace::new("▁", " ")?),
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
    ];
    tokenizer.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok((tokenizer, prefix))
}

/// How llama.cpp pre-tokenizes a byte-level vocabulary whose
/// `tokenizer.ggml.pre` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreTokenizer {
    /// The family (llama.cpp's pre-tokenizer type) of the name.
    pub family: &'static str,
    /// Its regular expressions, each splitting the pieces of the last.
    pub patterns: &'static [&'static str],
    /// A piece that is a token is taken whole, before any merge.
    pub ignore_merges: bool,
    /// Sequences start with the BOS token unless the file says otherwise.
    pub add_bos: bool,
}

/// What llama.cpp does for the pre-tokenizer `name` (`None`: the file
/// names none), for the names whose expressions this module builds.
///
/// # Errors
/// A name llama.cpp gives other expressions (or does not know): its
/// tokens would differ from llama.cpp's, so it is refused, not replaced.
pub fn pre_tokenizer(name: Option<&str>) -> Result<PreTokenizer> {
    let pre = |family, patterns, ignore_merges, add_bos| PreTokenizer {
        family,
        patterns,
        ignore_merges,
        add_bos,
    };
    Ok(match name.unwrap_or("default") {
        // llama.cpp takes an empty name as none.
        "default" | "" => pre("default", &DEFAULT, false, false),
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" => pre("llama3", &[LLAMA3], true, true),
        "dbrx" | "smaug-bpe" => pre("dbrx", &[LLAMA3], false, false),
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" | "stablelm2" | "hunyuan"
        | "solar-open" => pre("qwen2", &[QWEN2], false, false),
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b"
        | "mellum2" => pre("smollm", &[r"\p{N}", GPT2], false, false),
        "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es" | "jina-v2-de"
        | "a.x-4.0" | "mellum" | "modern-bert" | "mpt" | "olmo" | "jais" | "trillion"
        | "granite-docling" | "exaone4" => pre("gpt2", &[GPT2], false, false),
        other => {
            return Err(format!(
                "pre-tokenizer {other:?} is not supported: its expressions are not built here"
            )
            .into());
        }
    })
}

/// A byte-level BPE vocabulary with the file's merges, split first by its
/// pre-tokenizer's expressions; also that pre-tokenizer.
fn byte_level(f: &Gguf, vocab: Vocab) -> Result<(Tokenizer, PreTokenizer)> {
    let merges = strings(f, "tokenizer.ggml.merges")?
        .into_iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| format!("merge {m:?} is not two tokens").into())
        })
        .collect::<Result<Vec<_>>>()?;
    let named = match f.get("tokenizer.ggml.pre") {
        None => None,
        Some(v) => Some(v.as_str().ok_or("tokenizer.ggml.pre is not a string")?),
    };
    let pre = pre_tokenizer(named)?;
    // Llama 3's vocabulary takes a whole piece that is a token as it is,
    // before any merge (its tokenizer.json's `ignore_merges`, llama.cpp's).
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(pre.ignore_merges)
        .build()?;
    let mut steps = Vec::new();
    for p in pre.patterns {
        let split = Split::new(
            SplitPattern::Regex(p.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )?;
        steps.push(PreTokenizerWrapper::Split(split));
    }
    steps.push(PreTokenizerWrapper::ByteLevel(ByteLevel::new(
        false, false, false,
    )));
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(PreSequence::new(steps)));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
    Ok((tokenizer, pre))
}
