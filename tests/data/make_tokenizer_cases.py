"""Two tokenizer-only GGUF files and the token ids their reference
tokenizers give, for tests/tokenizer.rs (`pip install gguf numpy
sentencepiece tokenizers`):

    python3 tests/data/make_tokenizer_cases.py

- tiny_tokenizer_spm.gguf: a SentencePiece BPE model (Llama's kind:
  pieces with scores, byte fallback, digits split, a dummy prefix, no
  whitespace folding) trained here on a fixed text, stored as llama.cpp's
  converter stores Llama's (`tokenizer.ggml.model = "llama"`, tokens,
  scores, token types). The reference ids are SentencePiece's own.
- tiny_tokenizer_bpe.gguf: a byte-level BPE (GPT-2's kind, which Qwen2
  and SmolLM use) trained here by Hugging Face's `tokenizers`, stored as
  `tokenizer.ggml.model = "gpt2"` with its merges and pre-tokenizer
  `gpt-2` (llama.cpp's name for GPT-2's expression). The reference ids
  are `tokenizers`' own.

tokenizer_cases.txt holds one case a line: the kind, the text's UTF-8
bytes in hex (`-` for none), and its ids (without a BOS).

tiny_llama_vocab.gguf is a tiny Llama (random weights, f32, f16, Q8_0 and
Q4_0 tensors) with the SentencePiece vocabulary, for a whole generation
from a text prompt: tiny_llama_vocab_reference.npz holds NumPy's forward
pass of the prompt's ids (SentencePiece's, after BOS) and its greedy
continuation (tiny_llama_forward.py), and tiny_llama_vocab.json the
prompt's text and those ids, for the web page's check
(scripts/check_web_page.py).
"""

import io
import json
import pathlib

import gguf
import numpy as np
import sentencepiece as spm
from gguf import GGMLQuantizationType as T
from tiny_llama_forward import RandomTensors, add_hparams, reference
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = pathlib.Path(__file__).parent

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Tokenizers split text into pieces; models read the pieces' ids.",
    "In 2024 there were 365 days, and 3.14159 is close to pi.",
    "She said: \"don't stop\" -- and we're sure it'll work, I'd say.",
    "naïve café, résumé, façade and jalapeño are borrowed words.",
    "日本語のテキストも少し含めます。東京と大阪。",
    "Emoji like 🙂 and 🚀 are made of several bytes each.",
    "Tabs\tand\nnew lines\n\nand   runs of   spaces matter too.",
    "def forward(self, x):\n    return self.linear(x) + 1\n",
    "A GGUF file keeps its vocabulary, scores and merges as metadata.",
]

CASES = [
    "",
    "Hello world",
    " leading space",
    "  two leading, two trailing  ",
    "numbers 12345 and 3.14159 and 2024",
    "naïve café résumé",
    "日本語のテキスト",
    "emoji 🙂🚀 and a rare one: 🦀",
    "tabs\tand\nnewlines\n\n  indented",
    "don't I'll we're they've",
    "def f(x):\n    return x * 2\n",
    "UPPER lower MiXeD",
    "unseen: ξ ψ ω ∑ ∫",
]


def text_lines():
    for i in range(40):
        for line in CORPUS:
            yield line if i % 2 == 0 else line.lower()


def spm_file(lines):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(text_lines())),
        model_writer=model,
        model_type="bpe",
        vocab_size=400,
        byte_fallback=True,
        split_digits=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        allow_whitespace_only_pieces=True,
        character_coverage=1.0,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(gguf.TokenType.UNKNOWN)
        elif sp.is_control(i):
            types.append(gguf.TokenType.CONTROL)
        elif sp.is_byte(i):
            types.append(gguf.TokenType.BYTE)
        elif sp.is_unused(i):
            types.append(gguf.TokenType.UNUSED)
        else:
            types.append(gguf.TokenType.NORMAL)
    w = gguf.GGUFWriter(HERE / "tiny_tokenizer_spm.gguf", "llama")
    add_vocabulary(w, tokens, scores, types)
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for text in CASES:
        lines.append(("spm", text, sp.encode(text)))
    tiny_model(tokens, scores, types, sp)


def add_vocabulary(w, tokens, scores, types):
    """The SentencePiece vocabulary as llama.cpp's converter stores it:
    pieces, scores, types, <unk> 0, <s> 1 (added), </s> 2."""
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)


def tiny_model(tokens, scores, types, sp):
    rng = np.random.default_rng(11)
    dims = dict(DIM=64, LAYERS=2, HEADS=4, KV_HEADS=2, EPS=1e-5, THETA=10000.0)
    dim, heads, kv_heads, ffn = 64, 4, 2, 96
    head = dim // heads
    w = gguf.GGUFWriter(HERE / "tiny_llama_vocab.gguf", "llama")
    add_hparams(w, dims["LAYERS"], dim, ffn, heads, kv_heads, dims["EPS"], dims["THETA"], len(tokens))
    add_vocabulary(w, tokens, scores, types)
    tensors = RandomTensors(w, rng)
    put = tensors.put

    def norm(name):
        tensors.norm(name, dim)

    put("token_embd.weight", (len(tokens), dim), "f16", scale=1.0)
    for i in range(dims["LAYERS"]):
        b = f"blk.{i}."
        norm(b + "attn_norm.weight")
        put(b + "attn_q.weight", (dim, dim), T.Q8_0)
        put(b + "attn_k.weight", (kv_heads * head, dim), T.Q8_0)
        put(b + "attn_v.weight", (kv_heads * head, dim), T.Q4_0)
        put(b + "attn_output.weight", (dim, dim), T.Q8_0)
        norm(b + "ffn_norm.weight")
        put(b + "ffn_gate.weight", (ffn, dim), T.Q4_0)
        put(b + "ffn_up.weight", (ffn, dim), T.Q8_0)
        put(b + "ffn_down.weight", (dim, ffn), T.Q8_0)
    norm("output_norm.weight")
    put("output.weight", (len(tokens), dim), T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    prompt = "Once upon a time"
    ids = [1] + sp.encode(prompt)
    reference(HERE / "tiny_llama_vocab_reference.npz", tensors.weights, dims, ids, 8)
    greedy = np.load(HERE / "tiny_llama_vocab_reference.npz")["greedy"].tolist()
    with open(HERE / "tiny_llama_vocab.json", "w") as f:
        json.dump({"prompt": prompt, "prompt_ids": ids, "greedy": greedy}, f)
        f.write("\n")


def bpe_file(lines):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(text_lines()), trainer)
    vocab = tok.get_vocab()
    tokens = [None] * len(vocab)
    for piece, i in vocab.items():
        tokens[i] = piece
    merges = json.loads(tok.to_str())["model"]["merges"]
    merges = [" ".join(m) if isinstance(m, list) else m for m in merges]
    eot = vocab["<|endoftext|>"]
    types = [gguf.TokenType.CONTROL if i == eot else gguf.TokenType.NORMAL for i in range(len(tokens))]
    w = gguf.GGUFWriter(HERE / "tiny_tokenizer_bpe.gguf", "qwen2")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for text in CASES + ["before<|endoftext|>after"]:
        lines.append(("bpe", text, tok.encode(text).ids))


def main():
    lines = []
    spm_file(lines)
    bpe_file(lines)
    with open(HERE / "tokenizer_cases.txt", "w") as f:
        for kind, text, ids in lines:
            line = f"{kind} {text.encode().hex() or '-'} {' '.join(map(str, ids))}"
            f.write(line.rstrip() + "\n")


if __name__ == "__main__":
    main()
