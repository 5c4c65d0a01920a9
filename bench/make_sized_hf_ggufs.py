"""Random-weight GGUFs of real model shapes for the families whose tensor layout is
intricate (Qwen3.5's Gated DeltaNet hybrid, DeepSeek-V2's latent attention and
shared-expert MoE), made the way a user's file is made: transformers builds the
model from a config of the real dimensions (its own random initialisation, in
float16), saves it as a Hugging Face directory, and **llama.cpp's own converter**
(``convert_hf_to_gguf.py`` of the llama.cpp tree in the llama-cpp-python sdist)
writes the F16 GGUF, which llama.cpp's quantizer then turns into Q4_K_M / Q8_0
(``make_sized_ggufs.quantize``). Writing these with the ``gguf`` package by hand
(as make_sized_ggufs.py does for Llama and Qwen3-MoE) would repeat the
converter's tensor naming, splitting and metadata, and a mistake there would be
ours twice (in the writer and in the loader); this way llama.cpp names them.

Needs torch and transformers 5 (the reference environment, not the project's):

    python bench/make_sized_hf_ggufs.py [--shapes qwen3.5-9b,deepseek-v2-lite] [--types q4_k_m] [--layers N]

Shapes (``SHAPES``):

| shape | from | hidden | layers (default written) | attention | MLP | vocab |
|---|---|---|---|---|---|---|
| qwen3.5-9b | transformers' Qwen3_5TextConfig defaults | 4096 | 32 (8) | 3 Gated DeltaNet : 1 gated full (16 q / 4 kv heads of 256) | 12288 | 248320 |
| deepseek-v2-lite | DeepSeek-V2-Lite's config.json | 2048 | 27 (6) | MLA, 16 heads, kv_lora_rank 512, rope 64 | layer 0 dense 10944; 64 experts of 1408, 6 routed + 2 shared | 102400 |

Fewer layers than the model has keep the files and the float16 model in memory
small (the 8-layer Qwen3.5 shape is about 3.8 B parameters, 7.6 GB in float16
while transformers holds it); each layer is of the real width, so the per-layer
speed ratio is the real model's. The tokenizer is the tests' tiny byte-level BPE
(``tests/golden/make_moe_goldens.py``'s), padded by the converter to the real
vocabulary size: the output head has its real cost. Files go to
``~/.cache/vllm-cpp-bench`` (``--dir``), named like make_sized_ggufs.py's:
``<shape>-L<layers>-random-<type>.gguf``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "golden"))
import make_sized_ggufs  # noqa: E402

#: shape -> (transformers config class, its arguments, layers written by default).
SHAPES = {
    "qwen3.5-9b": ("Qwen3_5TextConfig", dict(), 8),
    "deepseek-v2-lite": ("DeepseekV2Config", dict(
        vocab_size=102400, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
        num_hidden_layers=27, num_attention_heads=16, num_key_value_heads=16, n_routed_experts=64,
        n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=None,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, head_dim=64, topk_method="greedy",
        n_group=1, topk_group=1, routed_scaling_factor=1.0, norm_topk_prob=False, rms_norm_eps=1e-6,
        max_position_embeddings=163840, tie_word_embeddings=False,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=40.0, original_max_position_embeddings=4096,
                             beta_fast=32.0, beta_slow=1.0, mscale=0.707, mscale_all_dim=0.707)), 6),
}


def shape_config(shape, layers=None):
    """The transformers config of `shape` with its first `layers` layers (None: the shape's default)."""
    import transformers

    class_name, arguments, default_layers = SHAPES[shape]
    config = getattr(transformers, class_name)(**arguments)
    total = config.num_hidden_layers
    n = layers or default_layers
    if not 0 < n <= total:
        raise SystemExit(f"{shape} has {total} layers; --layers {n} is out of range")
    config.num_hidden_layers = n
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:n]
    return config, n < total


def sized_path(directory, shape, kind, layers=None):
    _, default_layers = SHAPES[shape][1:]
    n = layers or default_layers
    return pathlib.Path(directory) / f"{shape}-L{n}-random-{kind}.gguf"


def write_f16(shape, path, layers=None):
    """transformers' random model of `shape` -> HF directory -> llama.cpp's converter -> F16 GGUF."""
    import make_moe_goldens
    import torch
    import transformers

    config, _ = shape_config(shape, layers)
    config.architectures = [config.__class__.__name__.replace("TextConfig", "ForCausalLM").replace("Config", "ForCausalLM")]
    torch.manual_seed(make_sized_ggufs.SEED)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float16)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        hf_dir = pathlib.Path(tmp) / "hf"
        model.save_pretrained(hf_dir, safe_serialization=True)  # float16 already: no copy
        make_moe_goldens.save_tokenizer(hf_dir)
        del model
        partial = path.with_suffix(".partial")
        # --no-mtp: transformers' Qwen3.5 has no multi-token-prediction layers (nor does this file).
        make_moe_goldens.convert(hf_dir, partial, make_moe_goldens.llama_cpp_dir(),
                                 extra_args=["--no-mtp"] if "qwen" in shape else [], patch=_DEEPSEEK_LITE_KEY)
        partial.rename(path)


# llama.cpp's deepseek2 loader knows DeepSeek-V2-Lite (no q_lora_rank) by its
# layer count (27 or 26) and otherwise requires the attention.q_lora_rank key,
# which the converter writes only when the config has a q_lora_rank; so a file
# of fewer layers gets the key with 0 (llama.cpp then loads attn_q, as for the
# Lite model). Every other key and every tensor is the converter's.
_DEEPSEEK_LITE_KEY = """
from conversion.deepseek import DeepseekV2Model
_set = DeepseekV2Model.set_gguf_parameters
def _with_q_lora_rank(self):
    _set(self)
    if self.hparams.get("q_lora_rank") is None:
        self.gguf_writer.add_q_lora_rank(0)
DeepseekV2Model.set_gguf_parameters = _with_q_lora_rank
"""


def make(shape, kinds, directory, threads, log=print, layers=None, keep_f16=False):
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"f16": sized_path(directory, shape, "f16", layers)}
    wanted = {kind: sized_path(directory, shape, kind, layers) for kind in kinds}
    if not paths["f16"].exists() and not all(p.exists() for p in wanted.values()):
        start = time.perf_counter()
        write_f16(shape, paths["f16"], layers)
        log(f"wrote {paths['f16']} ({paths['f16'].stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    for kind, path in wanted.items():
        paths[kind] = path
        if not path.exists():
            start = time.perf_counter()
            make_sized_ggufs.quantize(paths["f16"], path, kind, threads)
            log(f"wrote {path} ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - start:.0f} s")
    if not keep_f16 and paths["f16"].exists():
        paths["f16"].unlink()
        log(f"removed {paths['f16']}")
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--types", default="q4_k_m", help=f"of: {', '.join(make_sized_ggufs.QUANT_TYPES)}")
    parser.add_argument("--dir", type=pathlib.Path, default=make_sized_ggufs.default_dir())
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--layers", type=int, default=None, help="layers written (default: the shape's)")
    parser.add_argument("--keep-f16", action="store_true", help="keep the converter's F16 file")
    args = parser.parse_args()
    kinds = [k for k in args.types.split(",") if k]
    for kind in kinds:
        if kind not in make_sized_ggufs.QUANT_TYPES:
            parser.error(f"unknown type {kind!r}")
    for name in args.shapes.split(","):
        if name not in SHAPES:
            parser.error(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
        for kind, path in make(name, kinds, args.dir, args.threads, layers=args.layers,
                               keep_f16=args.keep_f16).items():
            print(f"{name} {kind}: {path}")


if __name__ == "__main__":
    sys.exit(main())
