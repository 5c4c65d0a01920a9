"""Random-weight GGUF files of real model shapes (Llama, Qwen3 MoE), for speed at real sizes.

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

The mixture-of-experts shape (architecture `qwen3moe`, as llama.cpp's
converter writes Qwen3-30B-A3B):

| shape | hidden | layers | heads | KV heads | head dim | experts (used) | expert intermediate | vocab | tied |
|---|---|---|---|---|---|---|---|---|---|
| qwen3-30b-a3b | 2048 | 48 | 32 | 4 | 128 | 128 (8) | 768 | 151936 | no |

with q/k norms, rope theta 1000000, RMS norm epsilon 1e-6, context 40960.
All 48 layers take 61 GB in F16 (about 18 GB in Q4_K_M), more than this
machine's disk and memory hold beside the rest, so --layers N writes the
shape's first N layers (default 12; the file is named `-L<N>`): every
layer is the same shape, so per-layer figures scale to 48. Its expert
tensors (96% of the weights) are slices of one 16 M-value random pool at
shifting offsets rather than fresh draws (drawing 7 billion normals would
take most of the time; the engines read as many bytes either way). The
router (`ffn_gate_inp`) is F32, as llama.cpp's quantizer leaves it.

Sizes and times on the 2-core AVX-512 development machine (2026-12-07,
shared with a CI run): llama-3.2-1b: F16 2.48 GB written in about 100 s;
Q4_K_M 0.80 GB quantized in about 75 s, Q8_0 1.32 GB in 13 s. The 3B
shape is about 2.6x that (F16 6.4 GB), the 8B about 6.5x (F16 16 GB).
Both vllm-cpp and llama.cpp load these files and generate from them (the
F16 by vllm-cpp and llama.cpp's quantizer; the quantized ones by both, in
bench_sizes.py); neither needed any metadata beyond the above.

Usage:  python bench/make_sized_ggufs.py [--shapes llama-3.2-1b,...] [--types q4_k_m,q8_0] [--layers N] [--drop-f16] [--dir DIR]
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
    "qwen3-30b-a3b": dict(arch="qwen3moe", hidden=2048, layers=48, heads=32, kv_heads=4, head_dim=128,
                          intermediate=6144, experts=128, experts_used=8, expert_intermediate=768,
                          vocab=151936, tied=False, rope_theta=1000000.0, rms_eps=1e-6, context=40960,
                          default_layers=12),
}
ROPE_THETA = 500000.0
RMS_EPS = 1e-5
CONTEXT = 131072
EXPERT_POOL_VALUES = 1 << 24

QUANT_TYPES = {"q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M", "q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0"}


def default_dir():
    return pathlib.Path.home() / ".cache" / "vllm-cpp-bench"


def shape_config(shape, layers=None):
    """SHAPES[shape] with its architecture defaults filled in and `layers` of its layers
    (None: the shape's default_layers, else all of them)."""
    cfg = dict(arch="llama", rope_theta=ROPE_THETA, rms_eps=RMS_EPS, context=CONTEXT, experts=0)
    cfg.update(SHAPES[shape])
    total = cfg["layers"]
    cfg["layers"] = layers or cfg.get("default_layers", total)
    if not 0 < cfg["layers"] <= total:
        raise SystemExit(f"{shape} has {total} layers; --layers {cfg['layers']} is out of range")
    cfg["partial"] = cfg["layers"] < total
    return cfg


def sized_path(directory, shape, kind, layers=None):
    """Where make_sized_ggufs.py puts `shape` in `kind` (f16, q4_k_m, q8_0); a file of fewer
    layers than the shape has is named -L<layers>."""
    cfg = shape_config(shape, layers)
    suffix = f"-L{cfg['layers']}" if cfg["partial"] else ""
    return pathlib.Path(directory) / f"{shape}{suffix}-random-{kind}.gguf"


def tensor_shapes(cfg):
    """(name, numpy shape, kind) of every tensor, in the order llama.cpp's converter writes them;
    kind: "norm" (F32 ones), "router" (F32 random), "expert" (F16 from the pool) or "matrix" (F16)."""
    h, kv = cfg["hidden"], cfg["kv_heads"] * cfg["head_dim"]
    q = cfg["heads"] * cfg["head_dim"]
    yield "token_embd.weight", (cfg["vocab"], h), "matrix"
    for i in range(cfg["layers"]):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (h,), "norm"
        yield b + "attn_q.weight", (q, h), "matrix"
        yield b + "attn_k.weight", (kv, h), "matrix"
        yield b + "attn_v.weight", (kv, h), "matrix"
        yield b + "attn_output.weight", (h, q), "matrix"
        if cfg["experts"]:
            yield b + "attn_q_norm.weight", (cfg["head_dim"],), "norm"
            yield b + "attn_k_norm.weight", (cfg["head_dim"],), "norm"
        yield b + "ffn_norm.weight", (h,), "norm"
        if cfg["experts"]:
            n, f = cfg["experts"], cfg["expert_intermediate"]
            yield b + "ffn_gate_inp.weight", (n, h), "router"
            yield b + "ffn_gate_exps.weight", (n, f, h), "expert"
            yield b + "ffn_up_exps.weight", (n, f, h), "expert"
            yield b + "ffn_down_exps.weight", (n, h, f), "expert"
        else:
            yield b + "ffn_gate.weight", (cfg["intermediate"], h), "matrix"
            yield b + "ffn_up.weight", (cfg["intermediate"], h), "matrix"
            yield b + "ffn_down.weight", (h, cfg["intermediate"]), "matrix"
    yield "output_norm.weight", (h,), "norm"
    if not cfg["tied"]:
        yield "output.weight", (cfg["vocab"], h), "matrix"


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


def pooled_f16(pool, shape, start):
    """`shape` filled from `pool` (float16) from offset `start` on, wrapping around."""
    n = int(np.prod(shape))
    idx = (start + np.arange(n, dtype=np.int64)) % pool.size if n > pool.size - start else None
    flat = pool[idx] if idx is not None else pool[start:start + n]
    return flat.reshape(shape)


def write_f16(shape, path, layers=None):
    import gguf

    cfg = shape_config(shape, layers)
    arch = cfg["arch"]
    tmp = path.with_suffix(".partial")
    writer = gguf.GGUFWriter(tmp, arch)
    writer.add_name(f"random-weight {shape} shape" + (f", {cfg['layers']} layers" if cfg["partial"] else ""))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    hyper = {"context_length": cfg["context"], "embedding_length": cfg["hidden"], "block_count": cfg["layers"],
             "feed_forward_length": cfg["intermediate"], "attention.head_count": cfg["heads"],
             "attention.head_count_kv": cfg["kv_heads"], "rope.dimension_count": cfg["head_dim"],
             "attention.key_length": cfg["head_dim"], "attention.value_length": cfg["head_dim"],
             "rope.freq_base": cfg["rope_theta"], "attention.layer_norm_rms_epsilon": cfg["rms_eps"],
             "vocab_size": cfg["vocab"]}
    if cfg["experts"]:
        hyper.update({"expert_count": cfg["experts"], "expert_used_count": cfg["experts_used"],
                      "expert_feed_forward_length": cfg["expert_intermediate"]})
    fields = {f"{arch}." + key: value for key, value in hyper.items()}
    fields.update({"tokenizer.ggml." + key: value for key, value in tokenizer_fields(cfg["vocab"]).items()})
    for key, value in fields.items():
        add = (writer.add_array if isinstance(value, list) else writer.add_string if isinstance(value, str)
               else writer.add_bool if isinstance(value, bool) else writer.add_float32 if isinstance(value, float)
               else writer.add_uint32)
        add(key, value)

    specs = list(tensor_shapes(cfg))
    for name, dims, kind in specs:
        dtype = np.float32 if kind in ("norm", "router") else np.float16
        writer.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(SEED)
    pool = random_f16(rng, (EXPERT_POOL_VALUES,)) if cfg["experts"] else None
    for name, dims, kind in specs:
        if kind == "norm":
            data = np.ones(dims, np.float32)
        elif kind == "router":
            data = random_f16(rng, dims).astype(np.float32)
        elif kind == "expert":
            # One expert at a time (bounded scratch), each from its own offset in the pool.
            data = np.stack([pooled_f16(pool, dims[1:], int(rng.integers(pool.size))) for _ in range(dims[0])])
        else:
            data = random_f16(rng, dims)
        writer.write_tensor_data(data)
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


def make(shape, kinds, directory, threads, log=print, layers=None, keep_f16=True):
    """Writes (or finds) shape's F16 file and its quantized forms; returns {kind: path}.
    keep_f16=False deletes the F16 file once every quantized form exists."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"f16": sized_path(directory, shape, "f16", layers)}
    wanted = [sized_path(directory, shape, kind, layers) for kind in kinds]
    if not paths["f16"].exists() and not (wanted and all(p.exists() for p in wanted) and not keep_f16):
        start = time.perf_counter()
        write_f16(shape, paths["f16"], layers)
        log(f"wrote {paths['f16']} ({paths['f16'].stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    for kind in kinds:
        paths[kind] = sized_path(directory, shape, kind, layers)
        if paths[kind].exists():
            continue
        start = time.perf_counter()
        quantize(paths["f16"], paths[kind], kind, threads)
        log(f"wrote {paths[kind]} ({paths[kind].stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    if not keep_f16 and paths["f16"].exists():
        paths["f16"].unlink()
        log(f"removed {paths['f16']} (--drop-f16)")
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="llama-3.2-1b", help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--types", default="q4_k_m,q8_0", help=f"comma-separated, of: {', '.join(QUANT_TYPES)}")
    parser.add_argument("--dir", type=pathlib.Path, default=default_dir(), help="cache folder (outside the repo)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="quantizer threads")
    parser.add_argument("--layers", type=int, default=None,
                        help="write only the first N layers (default: qwen3-30b-a3b 12, the others all)")
    parser.add_argument("--drop-f16", action="store_true", help="delete the F16 file once quantized")
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
        for kind, path in make(name, kinds, args.dir, args.threads, layers=args.layers,
                               keep_f16=not args.drop_f16).items():
            print(f"{name} {kind}: {path}")


if __name__ == "__main__":
    sys.exit(main())
