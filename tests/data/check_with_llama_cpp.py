"""Checks the NumPy references of the tiny GGUF Llamas against llama.cpp
itself (`pip install gguf numpy llama-cpp-python`; the last builds
llama.cpp from source, a few minutes):

    python3 tests/data/check_with_llama_cpp.py

tests/llama.rs holds webtensor's model to NumPy's forward passes
(tiny_llama_forward.py); this runs the same files through llama.cpp
(each copied with a placeholder vocabulary where it has none, which
llama.cpp needs to load a model) and compares the prompt's logits: within a
tolerance (llama.cpp rounds the activations of quantized products to 8
bits; see MODELS), the same greedy token at every position. tiny_llama31.gguf's rotary
divisors (rope_freqs) and tiny_llama_linear.gguf's linear scaling and
attention factor (rope.scaling.attn_factor 1.5) are
so checked against llama.cpp's own reading of them; without its divisors
tiny_llama31 differs from its reference by about 0.25. tiny_qwen2.gguf's
heads (24 over a width of 64) are past what llama.cpp's qwen2 loads.
"""

import pathlib
import sys
import tempfile

import gguf
import llama_cpp
import numpy as np
from gguf import GGUFReader, GGUFValueType

HERE = pathlib.Path(__file__).parent
# Each model and how far llama.cpp's logits may be from NumPy's: llama.cpp
# runs quantized products on activations rounded to 8 bits (per 32 or 256
# values), which moves logits by about 1%, and tiny_llama_quant's 2- to
# 6-bit K types, with their 256-value blocks, by about 5%.
MODELS = {
    "tiny_llama": 0.05,
    "tiny_llama_quant": 0.3,
    "tiny_llama_vocab": 0.05,
    "tiny_llama31": 0.05,
    "tiny_llama_linear": 0.05,
}


def with_vocabulary(src, dst):
    """`src` copied to `dst`, with a placeholder SentencePiece vocabulary
    as long as its embeddings where it has none."""
    r = GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(dst, arch)
    scalar = {
        GGUFValueType.UINT32: w.add_uint32,
        GGUFValueType.INT32: w.add_int32,
        GGUFValueType.FLOAT32: w.add_float32,
        GGUFValueType.UINT64: w.add_uint64,
        GGUFValueType.BOOL: w.add_bool,
    }
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = f.types[0]
        if kind == GGUFValueType.STRING:
            w.add_string(name, bytes(f.parts[-1]).decode())
        elif kind == GGUFValueType.ARRAY:
            items = [f.parts[i] for i in f.data]
            if f.types[1] == GGUFValueType.STRING:
                w.add_array(name, [bytes(p).decode() for p in items])
            else:
                w.add_array(name, [p[0].item() for p in items])
        else:
            scalar[kind](name, f.parts[-1][0].item())
    if "tokenizer.ggml.model" not in r.fields:
        vocab = next(int(t.shape[1]) for t in r.tensors if t.name == "token_embd.weight")
        w.add_tokenizer_model("llama")
        w.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(vocab - 3)])
        w.add_token_scores([0.0] * vocab)
        w.add_token_types([2, 3, 3] + [1] * (vocab - 3))
    for t in r.tensors:
        data = np.array(t.data)
        if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor(t.name, data)
        else:
            w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, tolerance in MODELS.items():
            ref = np.load(HERE / f"{name}_reference.npz")
            prompt = [int(t) for t in ref["prompt"]]
            path = f"{tmp}/{name}.gguf"
            with_vocabulary(HERE / f"{name}.gguf", path)
            llm = llama_cpp.Llama(model_path=path, logits_all=True, verbose=False, n_ctx=64, n_threads=1)
            llm.eval(prompt)
            got = np.array(llm.scores[: len(prompt)])
            want = ref["logits"]
            diff = float(np.abs(got - want).max())
            same = bool((got.argmax(-1) == want.argmax(-1)).all())
            print(f"{name}: largest difference {diff:.3g} (logits up to {np.abs(want).max():.3g}), "
                  f"greedy tokens {'the same' if same else 'DIFFER'}")
            failed |= diff > tolerance or not same
            del llm
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
