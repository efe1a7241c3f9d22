"""Vocabularies where llama.cpp's tokenizer is the reference, and its ids,
for tests/tokenizer.rs (`pip install gguf numpy llama-cpp-python`, which
builds llama.cpp from source; 0.3.36 was used):

    python3 tests/data/make_tokenizer_llama_cpp_cases.py

Written beside this script (tokenizer metadata only):
- tiny_tokenizer_spm_unused.gguf: a SentencePiece vocabulary whose piece
  `ab` is typed UNUSED (5) and `abc` NORMAL: llama.cpp merges through
  unused pieces.
- tiny_tokenizer_spm_eos.gguf: tiny_tokenizer_spm.gguf asking for an EOS
  after each sequence (`tokenizer.ggml.add_eos_token`).
- tiny_tokenizer_bpe_user.gguf: tiny_tokenizer_bpe.gguf with user-defined
  tokens (4) as llama.cpp's converter stores them, in their own text
  (`naïve` is Latin-1, which byte-level characters also spell).

tokenizer_llama_cpp_cases.txt holds one case a line: the file, the text's
UTF-8 bytes in hex, 1 where llama.cpp adds the file's BOS/EOS (else 0),
llama.cpp's ids (comma-separated, special tokens parsed in the text), and
the UTF-8 bytes in hex of llama.cpp's text of those ids (special tokens
left out).
"""

import pathlib
import tempfile

import gguf
import llama_cpp
from gguf import GGUFValueType as VT

HERE = pathlib.Path(__file__).parent


def read(path):
    fields = gguf.GGUFReader(path).fields
    return {k: f.contents() for k, f in fields.items() if not k.startswith("GGUF.")}


def write(path, kv, with_model=False):
    """A GGUF of metadata `kv`; with a tiny Llama's hyperparameters where
    llama.cpp is to load it (it reads them even for a vocabulary)."""
    w = gguf.GGUFWriter(path, "llama")
    if with_model:
        w.add_block_count(1)
        w.add_context_length(64)
        w.add_embedding_length(32)
        w.add_feed_forward_length(64)
        w.add_head_count(2)
        w.add_head_count_kv(2)
        w.add_layer_norm_rms_eps(1e-5)
    for k, v in kv.items():
        if k == "general.architecture":
            continue
        if k == "tokenizer.ggml.scores":
            w.add_key_value(k, v, VT.ARRAY, sub_type=VT.FLOAT32)
        elif k == "tokenizer.ggml.token_type":
            w.add_key_value(k, v, VT.ARRAY, sub_type=VT.INT32)
        elif isinstance(v, bool):
            w.add_bool(k, v)
        elif isinstance(v, int):
            w.add_uint32(k, v)
        elif isinstance(v, str):
            w.add_string(k, v)
        elif isinstance(v, list):
            w.add_array(k, v)
        else:
            raise TypeError((k, type(v)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


spm = read(HERE / "tiny_tokenizer_spm.gguf")
bpe = read(HERE / "tiny_tokenizer_bpe.gguf")
unused = ["<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "abc"]
byte_tokens = ["<0x%02X>" % i for i in range(256)]
user = [" café ", "\n\n", "naïve", "<think>"]
files = {
    "tiny_tokenizer_spm.gguf": spm,
    "tiny_tokenizer_spm_unused.gguf": {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": unused + byte_tokens,
        "tokenizer.ggml.scores": [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
        + [0.0] * 256,
        "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 5, 1] + [6] * 256,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
    },
    "tiny_tokenizer_spm_eos.gguf": {**spm, "tokenizer.ggml.add_eos_token": True},
    "tiny_tokenizer_bpe_user.gguf": {
        **bpe,
        "tokenizer.ggml.tokens": list(bpe["tokenizer.ggml.tokens"]) + user,
        "tokenizer.ggml.token_type": list(bpe["tokenizer.ggml.token_type"]) + [4] * len(user),
    },
}
CASES = [
    # The unknown token is special: matched whole in the text.
    ("tiny_tokenizer_spm.gguf", "<unk>", 0),
    ("tiny_tokenizer_spm.gguf", "a <unk> b", 0),
    ("tiny_tokenizer_spm.gguf", "<unk><s>x</s>", 0),
    # Merges through an unused piece.
    ("tiny_tokenizer_spm_unused.gguf", "abc", 0),
    ("tiny_tokenizer_spm_unused.gguf", "aabbcc", 0),
    ("tiny_tokenizer_spm_unused.gguf", "ab abc", 1),
    # The EOS after the text.
    ("tiny_tokenizer_spm_eos.gguf", "hello", 1),
    ("tiny_tokenizer_spm_eos.gguf", "", 1),
    # User-defined tokens matched whole, decoded as their own text.
    ("tiny_tokenizer_bpe_user.gguf", "a naïve café \n\nnaïve<think>x", 0),
    ("tiny_tokenizer_bpe_user.gguf", "naïve", 0),
    ("tiny_tokenizer_bpe_user.gguf", "<think>naïve café déjà vu", 0),
]

lines = []
with tempfile.TemporaryDirectory() as tmp:
    models = {}
    for name, kv in files.items():
        if name != "tiny_tokenizer_spm.gguf":
            write(HERE / name, kv)
        write(pathlib.Path(tmp) / name, kv, with_model=True)
        models[name] = llama_cpp.Llama(
            model_path=str(pathlib.Path(tmp) / name), vocab_only=True, verbose=False
        )
    for name, text, add in CASES:
        m = models[name]
        ids = m.tokenize(text.encode(), add_bos=bool(add), special=True)
        decoded = m.detokenize(ids)
        lines.append(
            f"{name} {text.encode().hex() or '-'} {add} "
            f"{','.join(map(str, ids)) or '-'} {decoded.hex() or '-'}"
        )
(HERE / "tokenizer_llama_cpp_cases.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
