"""Regenerate the tiny-model goldens under tests/golden/tiny/ (tests/models/test_arch_goldens.py).

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds the model with transformers from a config (torch seed 0, float32,
   ``attn_implementation="eager"``), then overwrites every weight with seeded
   normal values scaled so activations stay O(1) (``_randomize``): norm
   weights spread by 0.1 around their initial value, matrices with std
   ``1/sqrt(fan_in)``, the embedding with std 0.2. Every weight is rounded to
   float16, so the F16 GGUF below holds exactly the weights transformers ran.
2. Saves it as a Hugging Face directory (``save_pretrained``, safetensors)
   with the tiny byte-level BPE vocabulary of tests/support/tiny_models.py as
   tokenizer.json, and converts that to ``tiny/<case>.gguf`` (F16 matrices,
   F32 vectors) with tests/support/hf_convert.py, the project's one table of
   Hugging Face <-> llama.cpp names.
3. Greedy: for each of ``N_PROMPTS`` seeded random prompts, ``N_NEW`` ids by
   argmax of transformers' last logits row (a full forward per step, no
   cache), with the top-1 minus top-2 gap at every step.
4. Teacher-forced: transformers' logits for every position of the first
   prompt + its greedy ids, float32 [positions, vocab].
5. Writes ``tiny/<case>.config.json`` (the config.json transformers saved,
   as it saved it: the test loads the model with it too) and
   ``tiny/<case>.json`` (case, config, prompts with prompt_ids,
   ref_ids, ref_gaps; ``max_model_len`` where the case needs the engine built
   for a given context) and ``tiny/<case>_logits.npy``.

The sliding-window cases use a window of 8, so the prompts (12-30 ids) and
the 32 generated ids run far past it; llama-yarn scales RoPE by YaRN
(factor 4 over an original context of 64; llama-yarn-attention with an
attention_factor of 1.5), llama3 by Llama 3.1's "llama3"
rule (factor 8 over an original context of 64, so the 16 pairs fall in all
three of its bands); Gemma 2's soft-caps (5 on the scores, 10 on the logits)
are small enough to change every score and logit. Gemma 2's
query_pre_attn_scalar is the head dim (32), Gemma 3's is dim / n_heads (16),
as in the 27B models, so the scores are scaled by 1/4 rather than 1/sqrt(32).

LongRoPE (Phi-3): transformers rotates every position of a forward with the
long factors when the sequence is longer than original_max_position_embeddings
and with the short ones otherwise; the engine picks one set for all
sequences by its max_model_len (ModelConfig::long_rope_factors). The two
cases are where both agree: phi3-longrope has an original context of 8, shorter than
every prompt, so every transformers forward and the engine (max_model_len
256) use the long factors; phi3-longrope-short has 64, longer than every
prompt plus its 32 ids, and is checked with max_model_len 64 (short factors).
Both have an attention factor above 1 (transformers' default from
max_position_embeddings / original).

How to regenerate
-----------------
From the repository root, with a Python that has torch (CPU), transformers,
numpy and gguf::

    python tests/golden/make_arch_goldens.py [--only CASE ...]

A few seconds per case.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent / "support"
sys.path.insert(0, str(TESTS))
import hf_convert  # noqa: E402
import tiny_models  # noqa: E402

OUT = HERE / "tiny"
N_PROMPTS = 3
PROMPT_LENGTHS = (12, 20, 30)
N_NEW = 32
WINDOW = 8

_TOKENIZER = tiny_models.tiny_tokenizer()
VOCAB = len(_TOKENIZER["tokens"])
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
              num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
              bos_token_id=_TOKENIZER["bos_id"], eos_token_id=_TOKENIZER["eos_id"], pad_token_id=None)
GEMMA = dict(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=32)
# Phi-3 checks its LongRoPE factors against hidden_size / num_attention_heads
# pairs, so these cases have 2 heads of 32.
PHI3_LONGROPE = dict(COMMON, num_hidden_layers=2, sliding_window=None, num_attention_heads=2,
                     num_key_value_heads=1, rope_scaling=dict(
                         rope_type="longrope",
                         short_factor=[round(1.0 + 0.05 * i, 3) for i in range(16)],
                         long_factor=[round(1.0 + i * i / 16.0, 3) for i in range(16)]))

#: case -> (transformers config class, its arguments[, options]); options:
#: max_model_len, the context the engine is built for in the tests.
CASES = {
    "gemma": ("GemmaConfig", dict(COMMON, num_hidden_layers=2, hidden_act="gelu_pytorch_tanh",
                                  hidden_activation="gelu_pytorch_tanh")),
    "gemma2": ("Gemma2Config", dict(COMMON, **GEMMA, num_hidden_layers=2, sliding_window=WINDOW,
                                    attn_logit_softcapping=5.0, final_logit_softcapping=10.0)),
    # Six layers: five sliding (local RoPE base 10000), the sixth global with
    # linear RoPE scaling x8 (as Gemma 3 4B-27B); query_pre_attn_scalar
    # dim / n_heads = 16, not the head dim 32.
    "gemma3": ("Gemma3TextConfig", dict(COMMON, **dict(GEMMA, query_pre_attn_scalar=16), num_hidden_layers=6,
                                        sliding_window=WINDOW, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                                        rope_scaling=dict(rope_type="linear", factor=8.0))),
    "mistral": ("MistralConfig", dict(COMMON, num_hidden_layers=2, sliding_window=WINDOW)),
    # Fused qkv_proj and gate_up_proj (GGUF attn_qkv, ffn_up), no RoPE scaling.
    "phi3": ("Phi3Config", dict(COMMON, num_hidden_layers=2, sliding_window=None)),
    "phi3-longrope": ("Phi3Config", dict(PHI3_LONGROPE, original_max_position_embeddings=8)),
    "phi3-longrope-short": ("Phi3Config", dict(PHI3_LONGROPE, original_max_position_embeddings=64),
                            dict(max_model_len=64)),
    "llama": ("LlamaConfig", dict(COMMON, num_hidden_layers=2)),
    "llama3": ("LlamaConfig", dict(COMMON, num_hidden_layers=2, rope_parameters=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, rope_theta=10000.0,
        original_max_position_embeddings=64))),
    # q/k/v biases.
    "qwen2": ("Qwen2Config", dict(COMMON, num_hidden_layers=2)),
    # q/k RMS norms over each head.
    "qwen3": ("Qwen3Config", dict(COMMON, num_hidden_layers=2)),
    # YaRN with transformers' attention_factor in place of its 1 + 0.1 ln(factor).
    "llama-yarn-attention": ("LlamaConfig", dict(COMMON, num_hidden_layers=2, rope_parameters=dict(
        rope_type="yarn", factor=4.0, rope_theta=10000.0, original_max_position_embeddings=64,
        attention_factor=1.5))),
    # YaRN x4 over an original context of 64 (the prompts and greedy ids reach 62).
    "llama-yarn": ("LlamaConfig", dict(COMMON, num_hidden_layers=2, max_position_embeddings=256,
                                       rope_parameters=dict(rope_type="yarn", factor=4.0, rope_theta=10000.0,
                                                            original_max_position_embeddings=64))),
}


def _randomize(model, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[1]))
            p.copy_(p.half().float())


def _greedy(model, prompt):
    import torch

    ids, gaps = list(prompt), []
    with torch.no_grad():
        for _ in range(N_NEW):
            row = model(torch.tensor([ids])).logits[0, -1].double().numpy()
            top2 = np.argsort(row)[-2:]
            ids.append(int(top2[1]))
            gaps.append(float(row[top2[1]] - row[top2[0]]))
    return ids[len(prompt):], gaps


def make_case(case, seed=0):
    import torch
    import transformers

    config_class, kwargs, *options = CASES[case]
    options = options[0] if options else {}
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    _randomize(model, seed)

    rng = np.random.default_rng(seed)
    eot = _TOKENIZER["eos_id"]
    prompts = [[int(i) for i in rng.integers(0, eot, n)] for n in PROMPT_LENGTHS[:N_PROMPTS]]
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        shutil.copy(pathlib.Path(tmp) / "config.json", OUT / f"{case}.config.json")
        doc = hf_convert.tokenizer_json(_TOKENIZER["tokens"], _TOKENIZER["types"], _TOKENIZER["merges"], "default")
        (pathlib.Path(tmp) / "tokenizer.json").write_text(json.dumps(doc))
        (pathlib.Path(tmp) / "tokenizer_config.json").write_text(json.dumps(
            dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", add_bos_token=False)))
        hf_convert.hf_to_gguf(tmp, str(OUT / f"{case}.gguf"), "f16")
    records = []
    for prompt in prompts:
        ref_ids, gaps = _greedy(model, prompt)
        records.append(dict(prompt_ids=prompt, ref_ids=ref_ids, ref_gaps=gaps))
    with torch.no_grad():
        forced = prompts[0] + records[0]["ref_ids"]
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    out = dict(case=case, config_class=config_class, config=kwargs, transformers=transformers.__version__, **options,
               prompts=[dict(name=f"{case}-{i}", **r) for i, r in enumerate(records)])
    (OUT / f"{case}.json").write_text(json.dumps(out) + "\n")
    print(f"{case}: {(OUT / f'{case}.gguf').stat().st_size} bytes, logit std {logits.std():.2f}, "
          f"min gap {min(min(r['ref_gaps']) for r in records):.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(CASES), action="append", help="a case to make (repeatable)")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    for case in args.only or CASES:
        make_case(case)


if __name__ == "__main__":
    main()
