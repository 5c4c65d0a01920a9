"""Regenerate the multi-head latent attention goldens under tests/golden/tiny_mla/.

DeepSeek-V2's attention (``deepseek2`` in GGUF, ``DeepseekV2ForCausalLM`` in
transformers) on tiny random models, made as make_moe_goldens.py makes its
cases and with its helpers (imported): transformers builds the model from a
config (torch seed 0, float32, eager attention), ``make_moe_goldens._randomize``
overwrites every weight with seeded normal values rounded to float16, the model
is saved as a float16 Hugging Face directory with the tiny tokenizer
(``<case>.hf/``), converted by **llama.cpp's own converter**
(``convert_hf_to_gguf.py --outtype f16`` with the tokenizer-hash workaround of
make_moe_goldens: ``get_vocab_base_pre`` returns "default") to
``<case>.gguf``, and per case are recorded: 3 seeded prompts of random ids
(12, 20, 30), transformers' 32 greedy ids and top-2 gaps, transformers'
float32 logits for every position of prompt 0 + its greedy ids
(``<case>_logits.npy``), llama.cpp's greedy ids and gaps on the GGUF
(llama-cpp-python), and the largest difference between llama.cpp's logits and
transformers' (``llama_cpp_logits_max_err``).

The converter splits ``kv_b_proj`` into ``attn_k_b`` (per head [kv_lora_rank,
qk_nope], the transpose of kv_b's key rows: what absorbs q_nope into latent
space) and ``attn_v_b`` (per head [v_head_dim, kv_lora_rank]), and writes
key_length = kv_lora_rank + qk_rope_head_dim and value_length = kv_lora_rank
(the cache's one latent "head") beside key_length_mla / value_length_mla.

Cases:

* ``deepseek2-lite``: as DeepSeek-V2-Lite: no q_lora_rank (one q projection),
  kv_lora_rank 32, qk_nope_head_dim 16, qk_rope_head_dim 16, v_head_dim 24 (so
  key and value widths differ), 4 heads, 4 routed experts of width 32 (top 2,
  softmax, no renormalisation, routed_scaling_factor 1.5), 2 shared experts
  (one MLP of width 64), first_k_dense_replace 1 (layer 0 a dense MLP of width
  96). 26 layers: llama.cpp reads a deepseek2 GGUF without
  attention.q_lora_rank only when its block count is Lite's (26 or 27).
* ``deepseek2``: as the full DeepSeek-V2: q_lora_rank 48 (q_a_proj, its RMS
  norm, q_b_proj), 2 layers, routed_scaling_factor 2, and YaRN as DeepSeek-V2's config gives it: factor 4 over an original context
  of 64, mscale = mscale_all_dim = 0.707 (transformers: cos/sin scaled by
  mscale(factor, mscale) / mscale(factor, mscale_all_dim) = 1, the softmax scale
  by mscale(factor, mscale_all_dim)^2; llama.cpp: the same through
  rope.scaling.yarn_log_multiplier = 0.1 * mscale_all_dim).

``norm_topk_prob`` is false in both, as in DeepSeek-V2's and V2-Lite's
configs: transformers' DeepseekV2 never renormalises the picked weights,
whatever the key says, while llama.cpp's converter writes expert_weights_norm
when it is true (and llama.cpp then renormalises): with it true the two differ
by 0.8 in the logits of this model. The engine refuses ``norm_topk_prob: true``
in a DeepseekV2 config.json by name.

* ``deepseek2-groups``: the full form with DeepSeek-V2's group-limited
  routing (``topk_method: group_limited_greedy``): 8 experts in 4 groups of
  2, each group scored by its best expert, the experts of the best 2 groups
  eligible, top 3 (with 3 picks the greedy choice can span 3 groups, so
  the groups matter). llama.cpp's converter writes n_group / topk_group as
  expert_group_count / expert_group_used_count, which llama.cpp runs with
  DeepSeek-V3's rule (a group scored by its best two experts): its greedy
  ids part from transformers' (logits up to 1.3 apart), so this case's HF
  form is compared with transformers and its GGUF with llama.cpp.

How to regenerate (the reference venv of make_moe_goldens.py)::

    python tests/golden/make_mla_goldens.py [--only CASE ...] [--llama-cpp DIR]
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import make_arch_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_mla"
TOKENIZER = make_moe_goldens.TOKENIZER

MLA = dict(vocab_size=make_arch_goldens.VOCAB, hidden_size=64, num_attention_heads=4, max_position_embeddings=256,
           rms_norm_eps=1e-6, bos_token_id=TOKENIZER["bos_id"], eos_token_id=TOKENIZER["eos_id"], pad_token_id=None,
           kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=24, intermediate_size=96,
           moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=2, num_experts_per_tok=2,
           first_k_dense_replace=1, topk_method="greedy", tie_word_embeddings=False)

CASES = {
    "deepseek2-lite": dict(MLA, num_hidden_layers=26, q_lora_rank=None, routed_scaling_factor=1.5,
                           norm_topk_prob=False),
    "deepseek2": dict(MLA, num_hidden_layers=2, q_lora_rank=48, routed_scaling_factor=2.0, norm_topk_prob=False,
                      rope_parameters=dict(rope_type="yarn", factor=4.0, rope_theta=10000.0,
                                           original_max_position_embeddings=64, beta_fast=32.0, beta_slow=1.0,
                                           mscale=0.707, mscale_all_dim=0.707)),
    "deepseek2-groups": dict(MLA, num_hidden_layers=2, q_lora_rank=48, routed_scaling_factor=2.0,
                             norm_topk_prob=False, n_routed_experts=8, num_experts_per_tok=3,
                             topk_method="group_limited_greedy", n_group=4, topk_group=2),
}


def make_case(case, llama_cpp, seed=0):
    import torch
    import transformers

    kwargs = CASES[case]
    torch.manual_seed(seed)
    config = transformers.DeepseekV2Config(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    make_moe_goldens._randomize(model, seed)

    prompts, hf_dir = make_moe_goldens.seeded_prompts_and_hf_dir(model, case, seed, OUT)
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)

    records = []
    for prompt in prompts:
        ref_ids, gaps = make_arch_goldens._greedy(model, prompt)
        records.append(dict(prompt_ids=prompt, ref_ids=ref_ids, ref_gaps=gaps))
    forced = prompts[0] + records[0]["ref_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    make_moe_goldens._check_reload(hf_dir, forced, logits)

    greedy, llama_logits = make_moe_goldens._llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    make_moe_goldens.write_record(
        OUT, case, dict(config_class="DeepseekV2Config", config=kwargs,
                        architecture=config.architectures[0] if config.architectures else type(model).__name__),
        dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max())), records, gguf_path, logits)


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
