//! The tokenizer `examples/generate.rs` builds from a GGUF file's own
//! vocabulary (`examples/common/gguf_tokenizer.rs`) against the tokenizers
//! the vocabularies came from (`tests/data/make_tokenizer_cases.py`):
//! SentencePiece's ids for a Llama-kind vocabulary of scored pieces, and
//! Hugging Face's for a byte-level BPE with merges, over text with leading
//! and trailing spaces, digits, accents, CJK, emoji, bytes the vocabulary
//! lacks, tabs and new lines, and a special token; decoding gives the text
//! back.

#[path = "../examples/common/gguf_tokenizer.rs"]
mod gguf_tokenizer;

use webtensor::io::Gguf;

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
