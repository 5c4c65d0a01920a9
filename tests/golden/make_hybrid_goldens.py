"""Regenerate the Qwen3.5 hybrid goldens under tests/golden/tiny_hybrid/.

What this script does, per case of ``CASES`` (make_moe_goldens.py's steps,
reused by import: its randomisation, Hugging Face save with the tiny
tokenizer, llama.cpp's converter with the pre-tokenizer workaround, the
reload check and the llama.cpp run):

1. Builds a tiny Qwen3.5 text model with transformers from a config (torch
   seed 0, float32, eager attention): 4 layers alternating Gated DeltaNet
   linear attention and gated full attention (``layer_types``), hidden size
   64; full attention 4 query heads / 2 KV heads of 32 with partial rotary
   0.25 (8 rotated dims); linear attention 2 key heads and 4 value heads of
   16 (so llama.cpp's converter reorders the value heads from grouped to
   tiled order), conv kernel 4. ``qwen35moe`` adds 4 experts of width 32, 2
   routed, and a shared expert of width 64 behind its sigmoid gate. Every
   weight is overwritten with seeded normal values rounded to float16
   (make_moe_goldens._randomize: A_log and dt_bias are 1-d and get std 0.1
   around their initial values).
2. Saves it as a float16 Hugging Face directory (``tiny_hybrid/<case>.hf/``)
   and converts that with llama.cpp's own ``convert_hf_to_gguf.py --outtype
   f16`` into ``tiny_hybrid/<case>.gguf``.
3. Records 3 seeded prompts of random ids (12, 20, 30), transformers' 32
   greedy ids and gaps (a full forward per step: the chunked delta rule),
   transformers' float32 logits for every position of prompt 0 + its ids
   (``<case>_logits.npy``), llama.cpp's greedy ids/gaps on the GGUF and the
   largest difference of its logits from transformers' on that sequence.
4. The GGUF's own reference: llama.cpp's converter computes ssm_a =
   -exp(A_log) and the RMS norm weights' 1 + w in float16, so the file's
   decay factors and norm weights differ from the checkpoint's by float16
   rounding (logits up to about 0.015 apart on this model). transformers
   with A_log = log(float16 exp(A_log)) and w = float16(1 + w) - 1 is that model:
   ``gguf_ref_ids`` / ``gguf_ref_gaps`` per prompt and
   ``<case>_gguf_logits.npy``, against which the GGUF form is checked.

Run from the repository root with the reference venv::

    python tests/golden/make_hybrid_goldens.py [--only CASE ...] [--llama-cpp DIR]
"""

from __future__ import annotations

import copy
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import make_arch_goldens  # noqa: E402
import make_moe_goldens as moe  # noqa: E402

OUT = HERE / "tiny_hybrid"
TOKENIZER = moe.TOKENIZER

BASE = dict(vocab_size=make_arch_goldens.VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
            rms_norm_eps=1e-6, bos_token_id=TOKENIZER["bos_id"], eos_token_id=TOKENIZER["eos_id"],
            pad_token_id=None, tie_word_embeddings=False,
            layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
            linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_num_key_heads=2, linear_num_value_heads=4,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                 mrope_section=[2, 1, 1], mrope_interleaved=True))
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64)

#: case -> (transformers config class, its arguments)
CASES = {
    "qwen35": ("Qwen3_5TextConfig", dict(BASE)),
    "qwen35moe": ("Qwen3_5MoeTextConfig", dict(BASE, **MOE)),
}


def make_case(case, llama_cpp, seed=0):
    import torch

    config_class, kwargs = CASES[case]
    config, model = moe.tiny_model(config_class, kwargs, seed, expert_in_axis=-1)
    prompts = moe.seeded_prompts(seed)
    hf_dir = moe.fresh_hf_dir(model, OUT / f"{case}.hf")
    gguf_path = OUT / f"{case}.gguf"
    # --no-mtp: the tiny model has no multi-token-prediction head.
    moe.convert(hf_dir, gguf_path, llama_cpp, extra_args=["--no-mtp"])

    records = moe.reference_records(model, prompts)
    forced = prompts[0] + records[0]["ref_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    moe._check_reload(hf_dir, forced, logits)

    # The GGUF's own model: llama.cpp's converter computes ssm_a = -exp(A_log)
    # and the RMS norms' 1 + w in float16 (the checkpoint's type), so the
    # file's decay factors and norm weights are rounded to float16
    # (-7.4921875 for -7.490772); transformers with A_log and those norm
    # weights set to the file's values is the reference for the GGUF form.
    gguf_model = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in gguf_model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.exp(p.half()).float()))
            elif name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight"):
                p.copy_((p.half() + 1).float() - 1)
    for r in records:
        ids, gaps = make_arch_goldens._greedy(gguf_model, r["prompt_ids"])
        r.update(gguf_ref_ids=ids, gguf_ref_gaps=gaps)
    with torch.no_grad():
        gguf_logits = gguf_model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_gguf_logits.npy", gguf_logits)

    greedy, llama_logits = moe._llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    gguf_ref_err = float(np.abs(llama_logits - gguf_logits).max())
    moe.write_record(
        OUT, case, dict(config_class=config_class, config=kwargs, architecture=type(model).__name__),
        dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max()),
             llama_cpp_vs_gguf_ref_logits_max_err=gguf_ref_err,
             gguf_ref_vs_ref_logits_max_err=float(np.abs(gguf_logits - logits).max())),
        records, gguf_path, logits, converter="convert_hf_to_gguf.py --outtype f16 --no-mtp",
        after=dict(llama_cpp_vs_gguf_ref=moe._versus([dict(r, ref_ids=r["gguf_ref_ids"]) for r in records],
                                                     "llama_cpp_ids", "gguf_ref_gaps")),
        summary_suffix=f", vs the GGUF's reference {gguf_ref_err:.4f}")


if __name__ == "__main__":
    moe.main(CASES, make_case, OUT)
