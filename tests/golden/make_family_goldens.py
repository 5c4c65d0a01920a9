"""Regenerate the dense-family goldens under tests/golden/tiny_families/.

The dense families of issue 41 (smollm3, olmo2, granite, glm4) and
Phi-4-mini's configuration on the phi3 path, each as a tiny random model
made by transformers from a config, saved as a Hugging Face directory and
converted to GGUF by **llama.cpp's own converter**. The steps are those of
make_moe_goldens.py (whose steps this imports: ``tiny_model`` with its ``_randomize``,
``seeded_prompts``, ``fresh_hf_dir`` with its ``_save_hf``, ``convert`` with
its ``get_vocab_base_pre`` workaround, ``reference_records``,
``_check_reload``, ``_llama_cpp_run``, ``_versus``, ``main``):

1. transformers builds the model from ``CASES``' config (torch seed 0,
   float32, eager attention; hidden size 64, 2-4 layers); every weight is
   overwritten by seeded normal values rounded to float16
   (make_moe_goldens._randomize: norm weights 1 + N(0, 0.1), matrices
   1/sqrt(fan_in), embedding 0.2, biases N(0, 0.1)).
2. ``save_pretrained`` in float16 with the tiny byte-level BPE tokenizer ->
   ``tiny_families/<case>.hf/``; loading it back into transformers gives the
   recorded logits. phi4-mini's config.json is then replaced by the form
   microsoft/Phi-4-mini-instruct publishes (``PHI4_MINI_PUBLISHED``: top-level
   ``rope_scaling`` with ``type: longrope``, ``partial_rotary_factor``,
   ``tie_word_embeddings``, the keys transformers ignores such as
   ``full_attn_mod``), scaled down, and its tokenizer_config.json names
   GPT2Tokenizer as Phi-4-mini's does (llama.cpp's Phi-3 converter then
   writes a BPE vocabulary); the reload check runs on that config.json.
3. ``convert_hf_to_gguf.py --outtype f16`` -> ``tiny_families/<case>.gguf``.
   For glm4 the converter's GLM-4 ``set_vocab`` looks up GLM's chat tokens
   (``<|user|>``) to name eot/bos, which the tiny vocabulary does not have;
   that case runs the converter with its generic GPT-2 vocabulary writer
   (``_set_vocab_gpt2``) instead. Tensors and hyperparameters are the
   converter's own as for the others.
4. Records 3 seeded prompts (12, 20, 30 ids), transformers' 32 greedy ids and
   top-1 minus top-2 gaps (make_arch_goldens._greedy), its float32 logits
   for every position of prompt 0 + its ids (``<case>_logits.npy``),
   llama.cpp's greedy ids and gaps on the GGUF and the largest difference of
   its logits from transformers' (``llama_cpp_logits_max_err``).

What each case exercises (transformers' behaviour is the reference):

* smollm3: 4 layers, the 4th without RoPE (no_rope_layers [1, 1, 1, 0];
  llama.cpp fixes every 4th layer), GQA, tied embeddings (SmolLM3's default).
* olmo2: no pre-norms; RMS norms after attention and after the MLP; q and k
  RMS-normalised over the whole projection; RoPE over halves.
* granite: embedding multiplier 4, residual multiplier 0.5, attention
  multiplier 0.3 (in place of 1/sqrt(head_dim)), logits divided by 2.
* glm4: q/k/v biases, fused gate_up_proj, a norm after attention and after
  the MLP besides the two pre-norms, partial rotary 0.5 over adjacent pairs
  (transformers' interleaved rotation, which llama.cpp's GLM-4 runs unpermuted).
* phi4-mini: Phi-4-mini's shape (3 query heads per KV head), partial rotary
  0.75 (24 of 32 dims), LongRoPE short/long factors (12 each) with an
  original context of 8 (so transformers and the engine use the long
  factors for every prompt), tied embeddings.

How to regenerate
-----------------
From the repository root, with the reference venv of make_moe_goldens.py
(torch CPU, transformers 5.25, gguf, llama-cpp-python 0.3.36 and its sdist's
llama.cpp tree)::

    python tests/golden/make_family_goldens.py [--only CASE ...] [--llama-cpp DIR]

About 20 s per case on 2 cores; deterministic.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_moe_goldens as moe  # noqa: E402  (puts tests/support on sys.path)

OUT = moe.HERE / "tiny_families"
TOKENIZER = moe.TOKENIZER
BASE = dict(moe.BASE, intermediate_size=128)

#: Phi-4-mini-instruct's config.json keys, scaled down (hidden 3072 -> 64,
#: 24/8 heads -> 3/1 of 32... see CASES); the values here are the published ones
#: where they do not set a size.
PHI4_MINI_FACTORS = dict(short_factor=[round(1.0 + 0.05 * i, 3) for i in range(12)],
                         long_factor=[round(1.0 + i * i / 12.0, 3) for i in range(12)])
PHI4_MINI = dict(BASE, hidden_size=96, num_attention_heads=3, num_key_value_heads=1, num_hidden_layers=2,
                 partial_rotary_factor=0.75, original_max_position_embeddings=8, tie_word_embeddings=True,
                 sliding_window=262144, rope_scaling=dict(rope_type="longrope", **PHI4_MINI_FACTORS))


def phi4_mini_published(saved: dict) -> dict:
    """The config.json in the form microsoft/Phi-4-mini-instruct publishes
    (transformers 4.45's keys), with the tiny model's sizes."""
    return {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": saved["bos_token_id"], "embd_pdrop": 0.0, "eos_token_id": saved["eos_token_id"],
        "full_attn_mod": 1, "hidden_act": "silu", "hidden_size": saved["hidden_size"], "initializer_range": 0.02,
        "intermediate_size": saved["intermediate_size"], "interpolate_factor": 1, "lm_head_bias": False,
        "max_position_embeddings": saved["max_position_embeddings"], "mlp_bias": False, "model_type": "phi3",
        "num_attention_heads": saved["num_attention_heads"], "num_hidden_layers": saved["num_hidden_layers"],
        "num_key_value_heads": saved["num_key_value_heads"],
        "original_max_position_embeddings": saved["original_max_position_embeddings"],
        "pad_token_id": saved["eos_token_id"], "partial_rotary_factor": 0.75, "resid_pdrop": 0.0,
        "rms_norm_eps": saved["rms_norm_eps"], "rope_scaling": dict(type="longrope", **PHI4_MINI_FACTORS),
        "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True, "torch_dtype": "float16",
        "transformers_version": "4.45.0", "use_cache": True, "vocab_size": saved["vocab_size"],
    }


#: case -> (transformers config class, its arguments, options); options:
#: ``published_config`` (a function of the saved config.json giving the
#: config.json the directory gets instead), ``generic_vocab`` (the
#: converter class whose set_vocab is replaced by the GPT-2 writer, step 3).
CASES = {
    "smollm3": ("SmolLM3Config", dict(BASE, num_hidden_layers=4, head_dim=32, no_rope_layer_interval=4,
                                      tie_word_embeddings=True), {}),
    "olmo2": ("Olmo2Config", dict(BASE, num_key_value_heads=4, rms_norm_eps=1e-6), {}),
    "granite": ("GraniteConfig", dict(BASE, embedding_multiplier=4.0, residual_multiplier=0.5,
                                      attention_multiplier=0.3, logits_scaling=2.0), {}),
    "glm4": ("Glm4Config", dict(BASE, head_dim=32, attention_bias=True, partial_rotary_factor=0.5),
             dict(generic_vocab="conversion.glm.Glm4Model")),
    "phi4-mini": ("Phi3Config", PHI4_MINI, dict(published_config=phi4_mini_published)),
}


def _convert(hf_dir, gguf_path, llama_cpp, generic_vocab=None):
    """make_moe_goldens.convert, with ``generic_vocab``'s set_vocab replaced
    by the converter's GPT-2 vocabulary writer (step 3)."""
    if generic_vocab is None:
        return moe.convert(hf_dir, gguf_path, llama_cpp)
    module, cls = generic_vocab.rsplit(".", 1)
    patch = f"from {module} import {cls}\n{cls}.set_vocab = lambda self: self._set_vocab_gpt2()\n"
    original = moe._CONVERT
    moe._CONVERT = original.replace("convert_hf_to_gguf.main()", patch + "convert_hf_to_gguf.main()")
    try:
        moe.convert(hf_dir, gguf_path, llama_cpp)
    finally:
        moe._CONVERT = original


def make_case(case, llama_cpp, seed=0):
    import torch

    config_class, kwargs, options = CASES[case]
    _, model = moe.tiny_model(config_class, kwargs, seed)
    prompts = moe.seeded_prompts(seed)
    hf_dir = moe.fresh_hf_dir(model, OUT / f"{case}.hf")
    if options.get("published_config"):
        saved = json.loads((hf_dir / "config.json").read_text())
        (hf_dir / "config.json").write_text(json.dumps(options["published_config"](saved), indent=2) + "\n")
        # Phi-4-mini names GPT2Tokenizer (its converter then writes a BPE vocabulary).
        tokenizer_config = json.loads((hf_dir / "tokenizer_config.json").read_text())
        tokenizer_config["tokenizer_class"] = "GPT2Tokenizer"
        (hf_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    shutil.copy(hf_dir / "config.json", OUT / f"{case}.config.json")
    gguf_path = OUT / f"{case}.gguf"
    _convert(hf_dir, gguf_path, llama_cpp, options.get("generic_vocab"))

    records = moe.reference_records(model, prompts)
    forced = prompts[0] + records[0]["ref_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    moe._check_reload(hf_dir, forced, logits)

    greedy, llama_logits = moe._llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    moe.write_record(OUT, case, dict(config_class=config_class, config=kwargs, architecture=type(model).__name__),
                     dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max())), records, gguf_path,
                     logits)


if __name__ == "__main__":
    moe.main(CASES, make_case, OUT)
