"""Regenerate the tiny-model goldens under tests/golden/tiny/ (tests/test_arch_goldens.py).

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds the model with transformers from a config (torch seed 0, float32,
   ``attn_implementation="eager"``), then overwrites every weight with seeded
   normal values scaled so activations stay O(1) (``_randomize``): norm
   weights spread by 0.1 around their initial value, matrices with std
   ``1/sqrt(fan_in)``, the embedding with std 0.2. Every weight is rounded to
   float16, so the F16 GGUF below holds exactly the weights transformers ran.
2. Saves it as a Hugging Face directory (``save_pretrained``, safetensors)
   with the tiny byte-level BPE vocabulary of tests/tiny_models.py as
   tokenizer.json, and converts that to ``tiny/<case>.gguf`` (F16 matrices,
   F32 vectors) with tests/hf_convert.py, the project's one table of
   Hugging Face <-> llama.cpp names.
3. Greedy: for each of ``N_PROMPTS`` seeded random prompts, ``N_NEW`` ids by
   argmax of transformers' last logits row (a full forward per step, no
   cache), with the top-1 minus top-2 gap at every step.
4. Teacher-forced: transformers' logits for every position of the first
   prompt + its greedy ids, float32 [positions, vocab].
5. Writes ``tiny/<case>.json`` (case, config, prompts with prompt_ids,
   ref_ids, ref_gaps) and ``tiny/<case>_logits.npy``.

The sliding-window cases use a window of 8, so the prompts (12-30 ids) and
the 32 generated ids run far past it; llama-yarn scales RoPE by YaRN
(factor 4 over an original context of 64); Gemma 2's soft-caps (5 on the scores,
10 on the logits) are small enough to change every score and logit.
query_pre_attn_scalar is the head dim (as the engine assumes, see
model_config.cpp).

How to regenerate
-----------------
From the repository root, with a Python that has torch (CPU), transformers,
numpy and gguf::

    python tests/golden/make_arch_goldens.py [--only CASE]

A few seconds per case.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent
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

#: case -> (transformers config class, its arguments)
CASES = {
    "gemma": ("GemmaConfig", dict(COMMON, num_hidden_layers=2, hidden_act="gelu_pytorch_tanh",
                                  hidden_activation="gelu_pytorch_tanh")),
    "gemma2": ("Gemma2Config", dict(COMMON, **GEMMA, num_hidden_layers=2, sliding_window=WINDOW,
                                    attn_logit_softcapping=5.0, final_logit_softcapping=10.0)),
    # Six layers: five sliding (local RoPE base 10000), the sixth global.
    "gemma3": ("Gemma3TextConfig", dict(COMMON, **GEMMA, num_hidden_layers=6, sliding_window=WINDOW,
                                        rope_theta=1000000.0, rope_local_base_freq=10000.0)),
    "mistral": ("MistralConfig", dict(COMMON, num_hidden_layers=2, sliding_window=WINDOW)),
    # Fused qkv_proj and gate_up_proj (GGUF attn_qkv, ffn_up), no RoPE scaling.
    "phi3": ("Phi3Config", dict(COMMON, num_hidden_layers=2, sliding_window=None)),
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


def _earlier_rope_layout(config_json):
    """transformers 5 writes the RoPE base and scaling inside
    ``rope_parameters`` (per layer type for Gemma 3); hf_convert.py (and the
    engine's HF loader) read the top-level ``rope_theta`` and
    ``rope_scaling`` of earlier versions, so the global layers' are copied
    there."""
    config = json.loads(config_json.read_text())
    rope = config.get("rope_parameters") or {}
    rope = rope.get("full_attention", rope)
    if "rope_theta" in rope:
        config["rope_theta"] = rope["rope_theta"]
    if rope.get("rope_type", "default") != "default":
        config["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    config_json.write_text(json.dumps(config))


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

    config_class, kwargs = CASES[case]
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
        _earlier_rope_layout(pathlib.Path(tmp) / "config.json")
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
    out = dict(case=case, config_class=config_class, config=kwargs, transformers=transformers.__version__,
               prompts=[dict(name=f"{case}-{i}", **r) for i, r in enumerate(records)])
    (OUT / f"{case}.json").write_text(json.dumps(out) + "\n")
    print(f"{case}: {(OUT / f'{case}.gguf').stat().st_size} bytes, logit std {logits.std():.2f}, "
          f"min gap {min(min(r['ref_gaps']) for r in records):.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(CASES))
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    for case in [args.only] if args.only else CASES:
        make_case(case)


if __name__ == "__main__":
    main()
