"""Random-weight GGUF files of real Llama model shapes, for speed at real sizes.

Speed depends on the shapes and the tensor types, not on what the weights
say, so a file of a real model's shape filled with random numbers (fixed
seed) measures what that model would: bench_sizes.py runs vllm-cpp and
llama.cpp on these files. The text they generate is garbage; that is fine.

For each --shapes entry this writes `<shape>-random-f16.gguf` with the
`gguf` package (F16 matrices drawn from N(0, 0.02), F32 norms of ones;
llama architecture metadata), then quantizes it with llama.cpp's own
quantizer (llama-cpp-python's `llama_model_quantize`) to each --types
entry (`<shape>-random-q4_k_m.gguf`, `...-q8_0.gguf`). Files are cached
outside the repository, in --dir (default ~/.cache/vllm-cpp-bench/); a file
that exists is skipped (each is written under a temporary name and renamed
when complete, so a stopped run leaves none half-written).

Shapes (from the models' Hugging Face config.json files):

| shape | hidden | layers | heads | KV heads | head dim | intermediate | vocab | tied |
|---|---|---|---|---|---|---|---|---|
| llama-3.2-1b | 2048 | 16 | 32 | 8 | 64 | 8192 | 128256 | yes |
| llama-3.2-3b | 3072 | 28 | 24 | 8 | 128 | 8192 | 128256 | yes |
| llama-3.1-8b | 4096 | 32 | 32 | 8 | 128 | 14336 | 128256 | no |

All three: rope theta 500000, RMS norm epsilon 1e-5, context 131072. The
llama3 rope scaling (a `rope_freqs.weight` tensor) is left out: it changes
no cost. The tokenizer is SmolLM2's byte-level BPE (the bundled GGUF's
tokens, types and merges) padded with plain tokens `[synthetic_N]` up to
the shape's 128,256 ids, so the vocabulary (the embedding and the output
matrix) has the real size and both engines load it; the benchmarks feed
fixed token ids, not text.

Sizes and times on the 2-core AVX-512 development machine (2026-12-07,
shared with a CI run): llama-3.2-1b: F16 2.48 GB written in about 100 s;
Q4_K_M 0.80 GB quantized in about 75 s, Q8_0 1.32 GB in 13 s. The 3B
shape is about 2.6x that (F16 6.4 GB), the 8B about 6.5x (F16 16 GB).
Both vllm-cpp and llama.cpp load these files and generate from them (the
F16 by vllm-cpp and llama.cpp's quantizer; the quantized ones by both, in
bench_sizes.py); neither needed any metadata beyond the above.

Usage:  python bench/make_sized_ggufs.py [--shapes llama-3.2-1b,...] [--types q4_k_m,q8_0] [--dir DIR]
Needs:  pip install gguf numpy llama-cpp-python
"""

import argparse
import ctypes
import os
import pathlib
import sys
import time

import numpy as np

SEED = 40
INIT_STD = 0.02

SHAPES = {
    "llama-3.2-1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, intermediate=8192,
                         vocab=128256, tied=True),
    "llama-3.2-3b": dict(hidden=3072, layers=28, heads=24, kv_heads=8, head_dim=128, intermediate=8192,
                         vocab=128256, tied=True),
    "llama-3.1-8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                         vocab=128256, tied=False),
}
ROPE_THETA = 500000.0
RMS_EPS = 1e-5
CONTEXT = 131072

QUANT_TYPES = {"q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M", "q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0"}


def default_dir():
    return pathlib.Path.home() / ".cache" / "vllm-cpp-bench"


def sized_path(directory, shape, kind):
    """Where make_sized_ggufs.py puts `shape` in `kind` (f16, q4_k_m, q8_0)."""
    return pathlib.Path(directory) / f"{shape}-random-{kind}.gguf"


def tensor_shapes(cfg):
    """(name, numpy shape, is a norm) of every tensor, in the order llama.cpp's converter writes them."""
    h, kv = cfg["hidden"], cfg["kv_heads"] * cfg["head_dim"]
    q = cfg["heads"] * cfg["head_dim"]
    yield "token_embd.weight", (cfg["vocab"], h), False
    for i in range(cfg["layers"]):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (h,), True
        yield b + "attn_q.weight", (q, h), False
        yield b + "attn_k.weight", (kv, h), False
        yield b + "attn_v.weight", (kv, h), False
        yield b + "attn_output.weight", (h, q), False
        yield b + "ffn_norm.weight", (h,), True
        yield b + "ffn_gate.weight", (cfg["intermediate"], h), False
        yield b + "ffn_up.weight", (cfg["intermediate"], h), False
        yield b + "ffn_down.weight", (h, cfg["intermediate"]), False
    yield "output_norm.weight", (h,), True
    if not cfg["tied"]:
        yield "output.weight", (cfg["vocab"], h), False


def tokenizer_fields(vocab_size):
    """The tokenizer.ggml.* metadata: SmolLM2's byte-level BPE vocabulary (tokens, types, merges)
    padded with plain tokens to vocab_size ids, and its special ids."""
    import gguf
    from vllm_cpp.models import smollm2_path

    fields = gguf.GGUFReader(smollm2_path()).fields
    tokens = list(fields["tokenizer.ggml.tokens"].contents())
    types = [int(t) for t in fields["tokenizer.ggml.token_type"].contents()]
    extra = vocab_size - len(tokens)
    return {"model": "gpt2", "pre": "smollm",
            "tokens": tokens + [f"[synthetic_{i}]" for i in range(extra)],
            "token_type": types + [int(gguf.TokenType.NORMAL)] * extra,
            "merges": list(fields["tokenizer.ggml.merges"].contents()),
            "bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0, "add_bos_token": False}


def random_f16(rng, shape, rows_per_chunk=8192):
    """N(0, INIT_STD) in float16, drawn a block of rows at a time (bounded float32 scratch)."""
    out = np.empty(shape, dtype=np.float16)
    for start in range(0, shape[0], rows_per_chunk):
        rows = out[start:start + rows_per_chunk]
        rows[...] = rng.standard_normal(rows.shape, dtype=np.float32) * INIT_STD
    return out


def write_f16(shape, path):
    import gguf

    cfg = SHAPES[shape]
    tmp = path.with_suffix(".partial")
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name(f"random-weight {shape} shape")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    hyper = {"context_length": CONTEXT, "embedding_length": cfg["hidden"], "block_count": cfg["layers"],
             "feed_forward_length": cfg["intermediate"], "attention.head_count": cfg["heads"],
             "attention.head_count_kv": cfg["kv_heads"], "rope.dimension_count": cfg["head_dim"],
             "attention.key_length": cfg["head_dim"], "attention.value_length": cfg["head_dim"],
             "rope.freq_base": ROPE_THETA, "attention.layer_norm_rms_epsilon": RMS_EPS, "vocab_size": cfg["vocab"]}
    fields = {"llama." + key: value for key, value in hyper.items()}
    fields.update({"tokenizer.ggml." + key: value for key, value in tokenizer_fields(cfg["vocab"]).items()})
    for key, value in fields.items():
        add = (writer.add_array if isinstance(value, list) else writer.add_string if isinstance(value, str)
               else writer.add_bool if isinstance(value, bool) else writer.add_float32 if isinstance(value, float)
               else writer.add_uint32)
        add(key, value)

    specs = list(tensor_shapes(cfg))
    for name, dims, is_norm in specs:
        dtype = np.float32 if is_norm else np.float16
        writer.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(SEED)
    for name, dims, is_norm in specs:
        writer.write_tensor_data(np.ones(dims, np.float32) if is_norm else random_f16(rng, dims))
    writer.close()
    tmp.rename(path)


def quantize(source, path, kind, threads):
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, QUANT_TYPES[kind])
    params.nthread = threads
    tmp = path.with_suffix(".partial")
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), ctypes.byref(params))
    if status != 0:
        raise SystemExit(f"llama.cpp's quantizer failed ({status}) on {source} -> {kind}")
    tmp.rename(path)


def make(shape, kinds, directory, threads, log=print):
    """Writes (or finds) shape's F16 file and its quantized forms; returns {kind: path}."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"f16": sized_path(directory, shape, "f16")}
    if not paths["f16"].exists():
        start = time.perf_counter()
        write_f16(shape, paths["f16"])
        log(f"wrote {paths['f16']} ({paths['f16'].stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    for kind in kinds:
        paths[kind] = sized_path(directory, shape, kind)
        if paths[kind].exists():
            continue
        start = time.perf_counter()
        quantize(paths["f16"], paths[kind], kind, threads)
        log(f"wrote {paths[kind]} ({paths[kind].stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="llama-3.2-1b", help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--types", default="q4_k_m,q8_0", help=f"comma-separated, of: {', '.join(QUANT_TYPES)}")
    parser.add_argument("--dir", type=pathlib.Path, default=default_dir(), help="cache folder (outside the repo)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="quantizer threads")
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    kinds = [k for k in args.types.split(",") if k]
    for name in shapes:
        if name not in SHAPES:
            parser.error(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
    for kind in kinds:
        if kind not in QUANT_TYPES:
            parser.error(f"unknown type {kind!r}; known: {', '.join(QUANT_TYPES)}")
    for name in shapes:
        for kind, path in make(name, kinds, args.dir, args.threads).items():
            print(f"{name} {kind}: {path}")


if __name__ == "__main__":
    sys.exit(main())
