"""Regenerate the LoRA goldens under tests/golden/tiny_lora/.

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds a tiny base model with transformers (make_moe_goldens.tiny_model:
   torch seed 0, float32, eager attention, 2 layers, hidden size 64, weights
   seeded and rounded to float16) and saves it as a Hugging Face directory
   ``<case>.hf/`` (make_moe_goldens.fresh_hf_dir: float16 safetensors and the
   tiny tokenizer), then converts that directory to ``<case>.gguf`` with
   llama.cpp's own ``convert_hf_to_gguf.py --outtype f16``
   (make_moe_goldens.convert; for llama the converter permutes the q/k rows;
   for phi3 with the GPT-2 vocabulary writer, ``CONVERTER_PATCH``).
2. Wraps the base model with the ``peft`` package's ``get_peft_model`` and a
   ``LoraConfig`` (the case's rank, alpha, target modules, rsLoRA) and
   overwrites every lora_A with N(0, 1/sqrt(in)) and every lora_B with
   N(0, 1/sqrt(rank)) values (seeded; PEFT's own init leaves B zero, which
   would test nothing), rounded to the case's adapter dtype; saves it with
   ``save_pretrained`` as ``<case>.lora/`` (adapter_config.json and
   adapter_model.safetensors in that dtype: F32, BF16 or F16).
3. Records, per case: 3 seeded prompts of random ids (12, 20, 30 ids);
   transformers' (PEFT model's, float32, adapter applied unmerged) 32 greedy
   ids and top-1 minus top-2 gaps; the base model's greedy ids alone
   (``base_ids``: the adapter must change them); the PEFT model's float32
   logits for every position of prompt 0 + its greedy ids
   (``<case>_logits.npy``).
4. Converts the adapter with **llama.cpp's own** ``convert_lora_to_gguf.py
   --outtype f32 --base <case>.hf`` to ``<case>-lora.gguf`` (general.type
   adapter, adapter.lora.alpha; q/k rows permuted for llama as its base's)
   and records llama.cpp's greedy ids and gaps on ``<case>.gguf`` with that
   adapter (llama-cpp-python's ``lora_path``; prompt in one batch, then one
   id at a time) as ``llama_cpp_lora_ids`` / ``llama_cpp_lora_gaps`` per
   prompt (``lora_gguf_step``; it reads what steps 1-3 wrote).

What each case exercises:

* llama: q/k/v/o and gate/up/down, r 8, alpha 16, F32 adapter; on the GGUF
  base the adapter's q/k B rows must be permuted as the converter permuted
  the base's rows.
* qwen3: q/k/v/o and down only (the others stay base), r 4, alpha 8 with
  rsLoRA (scale alpha / sqrt(r)), BF16 adapter; q/k norms per head.
* qwen3moe (mixture of experts, 8 experts, top 2): q/k/v/o and every
  expert through PEFT's ``target_parameters`` on transformers 5.x's fused
  banks ``mlp.experts.gate_up_proj`` / ``down_proj`` (A [r * experts, in],
  B [out, r * experts], expert e's column k at k * experts + e), r 4,
  alpha 8, F32 adapter. llama.cpp's convert_lora_to_gguf.py refuses that
  adapter (its reason is kept as ``lora_converter_refused``), so the case
  has no LoRA GGUF.
* qwen35 (Qwen3.5's hybrid, make_hybrid_goldens.py's tiny model): q/k/v/o
  on the gated full-attention layers (q_proj's rows hold each head's query
  and gate), gate/up/down on every layer, r 4, alpha 8, F32; checked on
  the HF base (``forms``: its GGUF rounds A_log and the norms); llama.cpp's
  LoRA converter refuses the tiny model (no multi-token-prediction layers).
* qwen35moe: the same attention, the shared expert's gate/up/down and the
  routed experts (target_parameters); HF base only, and the LoRA converter
  refuses it as qwen35's (before it reaches the experts).
* phi3: its fused qkv_proj and gate_up_proj (the adapter's B rows split
  over the projections our model runs) and o_proj/down_proj, r 8, alpha 32,
  F16 adapter.

How to regenerate
-----------------
From the repository root, with the reference venv of make_moe_goldens.py
plus peft 0.22.0::

    python tests/golden/make_lora_goldens.py [--only CASE ...] [--llama-cpp DIR]

About 15 s per case on 2 cores; deterministic.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_arch_goldens  # noqa: E402
import make_hybrid_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_lora"
BASE = dict(make_moe_goldens.BASE, intermediate_size=96)

#: case -> (transformers config class, its arguments, LoRA options); the
#: options: r, lora_alpha, target_modules, use_rslora, dtype (the adapter's).
CASES = {
    "llama": ("LlamaConfig", dict(BASE, head_dim=16),
              dict(r=8, lora_alpha=16, use_rslora=False, dtype="float32",
                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])),
    "qwen3": ("Qwen3Config", dict(BASE, head_dim=32),
              dict(r=4, lora_alpha=8, use_rslora=True, dtype="bfloat16",
                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "down_proj"])),
    "phi3": ("Phi3Config", dict(BASE, pad_token_id=None, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0),
             dict(r=8, lora_alpha=32, use_rslora=False, dtype="float16",
                  target_modules=["qkv_proj", "o_proj", "gate_up_proj", "down_proj"])),
    # transformers 5.x fuses each layer's experts into two banks
    # (mlp.experts.gate_up_proj [experts, 2 ffn, dim], down_proj [experts,
    # dim, ffn]): PEFT adapts them with target_parameters (its ParamWrapper).
    "qwen3moe": ("Qwen3MoeConfig", make_moe_goldens.CASES["qwen3moe"][1],
                 dict(r=4, lora_alpha=8, use_rslora=False, dtype="float32",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                      target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"])),
    # Qwen3.5's hybrid (make_hybrid_goldens.py's tiny model): q/k/v/o on its
    # gated full-attention layers, gate/up/down on every layer's MLP (the
    # linear-attention projections are not targets).
    "qwen35": ("Qwen3_5TextConfig", make_hybrid_goldens.CASES["qwen35"][1],
               dict(r=4, lora_alpha=8, use_rslora=False, dtype="float32",
                    target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])),
    # ... and its mixture of experts: gate/up/down are the shared expert's,
    # the routed experts come through target_parameters.
    "qwen35moe": ("Qwen3_5MoeTextConfig", make_hybrid_goldens.CASES["qwen35moe"][1],
                  dict(r=4, lora_alpha=8, use_rslora=False, dtype="float32",
                       target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
                       target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"])),
}

#: Extra converter arguments per case (the tiny hybrids have no
#: multi-token-prediction head).
CONVERTER_ARGS = {"qwen35": ["--no-mtp"], "qwen35moe": ["--no-mtp"]}

#: Cases llama.cpp's convert_lora_to_gguf.py refuses (its last error line
#: is kept as ``lora_converter_refused``; the case has no LoRA GGUF): it maps
#: module names to the base's tensors, and PEFT's expert-bank wrappers
#: (mlp.experts.base_layer) are none of them ("Unprocessed experts"); for
#: Qwen3.5 it asserts the base has multi-token-prediction layers, which the
#: tiny hybrids have not (their base GGUF is converted with --no-mtp, an
#: option the LoRA converter lacks).
CONVERTER_REFUSES = {"qwen3moe", "qwen35", "qwen35moe"}

#: The base forms the adapter is checked on against transformers (default
#: both): the hybrids' GGUF rounds A_log and the norms to float16
#: (make_hybrid_goldens.py step 4), another model than the checkpoint, so
#: their GGUF form is checked against llama.cpp with the converted adapter.
FORMS = {"qwen35": ["hf"], "qwen35moe": ["hf"]}

#: Phi-3's converter reads a SentencePiece tokenizer.model, which the tiny
#: tokenizer has not: it writes the GPT-2 vocabulary instead (as
#: make_family_goldens.py does for glm4); tensors and hyperparameters stay the converter's.
CONVERTER_PATCH = {"phi3": "from conversion.phi import Phi3MiniModel\n"
                           "Phi3MiniModel.set_vocab = lambda self: self._set_vocab_gpt2()\n"}


def _adapter(model, options, seed):
    """Step 2: the PEFT model over ``model`` with seeded A and B, rounded to the adapter dtype."""
    import peft
    import torch

    config = peft.LoraConfig(r=options["r"], lora_alpha=options["lora_alpha"], use_rslora=options["use_rslora"],
                             target_modules=options["target_modules"], lora_dropout=0.0, bias="none",
                             target_parameters=options.get("target_parameters"))
    wrapped = peft.get_peft_model(model, config).eval()
    dtype = getattr(torch, options["dtype"])
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in wrapped.named_parameters():
            if "lora_A" in name:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[1]))
            elif "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[1]))
            else:
                continue
            p.copy_(p.to(dtype).float())
    return wrapped


def _save_adapter(wrapped, directory, dtype):
    import copy

    import torch

    shutil.rmtree(directory, ignore_errors=True)
    saved = copy.deepcopy(wrapped)
    for name, p in saved.named_parameters():
        if "lora_" in name:
            p.data = p.data.to(getattr(torch, dtype))
    saved.save_pretrained(directory, safe_serialization=True)
    (directory / "README.md").unlink(missing_ok=True)  # PEFT's model card template
    # PEFT writes the base model's path (empty for a model made from a config).
    config = json.loads((directory / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = f"tiny_lora/{directory.stem}.hf"
    (directory / "adapter_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def make_case(case, llama_cpp, seed=0):
    import peft
    import torch
    import transformers

    config_class, kwargs, options = CASES[case]
    config, model = make_moe_goldens.tiny_model(config_class, kwargs, seed)
    prompts, hf_dir = make_moe_goldens.seeded_prompts_and_hf_dir(model, case, seed, out=OUT)
    make_moe_goldens.convert(hf_dir, OUT / f"{case}.gguf", llama_cpp, patch=CONVERTER_PATCH.get(case, ""),
                             extra_args=CONVERTER_ARGS.get(case, ()))
    base_ids = [make_arch_goldens._greedy(model, p)[0] for p in prompts]

    wrapped = _adapter(model, options, seed)
    _save_adapter(wrapped, OUT / f"{case}.lora", options["dtype"])
    records = make_moe_goldens.reference_records(wrapped, prompts)
    for r, ids in zip(records, base_ids):
        r["base_ids"] = ids
    forced = prompts[0] + records[0]["ref_ids"]
    with torch.no_grad():
        logits = wrapped(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    out = dict(case=case, config_class=config_class, config=kwargs, lora=options, forms=FORMS.get(case, ["hf", "gguf"]),
               transformers=transformers.__version__, peft=peft.__version__,
               converter="convert_hf_to_gguf.py --outtype f16",
               prompts=[dict(name=f"{case}-{i}", **r) for i, r in enumerate(records)])
    (OUT / f"{case}.json").write_text(json.dumps(out) + "\n")
    lora_gguf_step(case, llama_cpp)
    changed = sum(r["ref_ids"] != r["base_ids"] for r in records)
    print(f"{case}: adapter changes {changed}/3 greedy runs, min gap "
          f"{min(min(r['ref_gaps']) for r in records):.4f}, logit std {logits.std():.2f}")


def lora_gguf_step(case, llama_cpp):
    """Step 4: ``<case>-lora.gguf`` and llama.cpp's greedy ids with it into ``<case>.json``."""
    import os
    import subprocess

    import llama_cpp as llama_cpp_module

    out = OUT / f"{case}-lora.gguf"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(llama_cpp / "gguf-py"), str(llama_cpp)]))
    done = subprocess.run([sys.executable, str(llama_cpp / "convert_lora_to_gguf.py"), str(OUT / f"{case}.lora"),
                           "--base", str(OUT / f"{case}.hf"), "--outfile", str(out), "--outtype", "f32"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    golden = json.loads((OUT / f"{case}.json").read_text())
    if done.returncode != 0 and case in CONVERTER_REFUSES:
        golden["lora_converter_refused"] = done.stderr.strip().splitlines()[-1][-300:]
        (OUT / f"{case}.json").write_text(json.dumps(golden) + "\n")
        out.unlink(missing_ok=True)
        return
    if done.returncode != 0:
        raise RuntimeError(f"convert_lora_to_gguf.py failed on {case}:\n{done.stderr[-3000:]}")
    llm = llama_cpp_module.Llama(str(OUT / f"{case}.gguf"), lora_path=str(out), n_ctx=256, n_batch=256,
                                 n_threads=2, logits_all=True, verbose=False)
    for p in golden["prompts"]:
        p["llama_cpp_lora_ids"], p["llama_cpp_lora_gaps"] = make_moe_goldens.make_gemma3_golden.greedy(
            llm, p["prompt_ids"], make_moe_goldens.N_NEW)
    llm.close()
    golden["llama_cpp"] = llama_cpp_module.__version__
    golden["lora_converter"] = "convert_lora_to_gguf.py --outtype f32"
    (OUT / f"{case}.json").write_text(json.dumps(golden) + "\n")


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
