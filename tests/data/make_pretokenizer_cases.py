"""llama.cpp's own token ids for the byte-level vocabulary of
tiny_tokenizer_bpe.gguf under each pre-tokenizer family webtensor's GGUF
tokenizer builds (examples/common/gguf_tokenizer.rs), for
tests/tokenizer.rs (`pip install gguf numpy llama-cpp-python`; the last
builds llama.cpp from source, a few minutes):

    python3 tests/data/make_pretokenizer_cases.py

For each `tokenizer.ggml.pre` below (one name of each family llama.cpp
gives its own expressions, and none: llama.cpp's "default"), the
vocabulary is written into a vocabulary-only Llama file with that name,
loaded by llama.cpp (llama-cpp-python, `vocab_only`), and each text
tokenized without a BOS, special tokens parsed. pretokenizer_cases.txt
holds a line a case: the name (`-` for none), the text's UTF-8 bytes in
hex, and llama.cpp's ids.
"""

import pathlib
import tempfile

import gguf
import llama_cpp

HERE = pathlib.Path(__file__).parent

PRES = [None, "gpt-2", "llama-bpe", "dbrx", "qwen2", "smollm"]

TEXTS = [
    "Hello world",
    " leading space",
    "  two leading, two trailing  ",
    "numbers 12345 and 3.14159 and 2024 or 7",
    "naïve café résumé",
    "日本語のテキスト",
    "emoji 🙂🚀 and a rare one: 🦀",
    "tabs\tand\nnewlines\n\n  indented",
    "don't I'll we're they've I'M DON'T",
    "def f(x):\n    return x * 2\n",
    "UPPER lower MiXeD",
    "unseen: ξ ψ ω ∑ ∫",
    " ,hello (world) [x] {y} a+b=c <tag> ~tilde| $5 ^2",
    "a\tb \t c\r\nd\n \n e",
    "ends with spaces   ",
    "before<|endoftext|>after",
    "2024 20242024 365365 3.14159 1234567890",
    "THE 'S IT'S WE'RE THEY'VE I'LL SHE'D",
    "the,quick;brown:fox... said--\"yes\"!? (2024)",
    "x  =  [1, 2, 3]\n\n\treturn x\r\n",
]


def vocabulary():
    """The tokens, token types and merges of tiny_tokenizer_bpe.gguf."""
    r = gguf.GGUFReader(HERE / "tiny_tokenizer_bpe.gguf")

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode() for i in f.data]

    types = r.fields["tokenizer.ggml.token_type"]
    return (
        strings("tokenizer.ggml.tokens"),
        [int(types.parts[i][0]) for i in types.data],
        strings("tokenizer.ggml.merges"),
    )


def vocab_file(path, pre, tokens, types, merges):
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    eot = tokens.index("<|endoftext|>")
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    tokens, types, merges = vocabulary()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for pre in PRES:
            path = f"{tmp}/vocab.gguf"
            vocab_file(path, pre, tokens, types, merges)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            for text in TEXTS:
                ids = llm.tokenize(text.encode(), add_bos=False, special=True)
                lines.append(f"{pre or '-'} {text.encode().hex()} {' '.join(map(str, ids))}")
            del llm
    (HERE / "pretokenizer_cases.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
