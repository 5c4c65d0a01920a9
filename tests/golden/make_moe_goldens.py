"""Regenerate the mixture-of-experts goldens under tests/golden/tiny_moe/.

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds a tiny model with transformers from a config (torch seed 0,
   float32, ``attn_implementation="eager"``; 2 layers, hidden size 64, 8
   or 4 experts of width 32, 2 routed per token) and overwrites every weight with
   seeded normal values (``_randomize``: the dense goldens' scales, plus
   expert banks scaled by their own fan-in, biases and attention sinks),
   every value rounded to float16.
2. Saves it as a Hugging Face directory: ``save_pretrained`` of the model cast
   to float16 (exact: the values are float16 already), which writes the
   experts as the published checkpoints store them (transformers 5 fuses them
   in memory only): one tensor per expert for qwen3moe, qwen2moe, olmoe
   (``mlp.experts.E.{gate,up,down}_proj``) and mixtral
   (``block_sparse_moe.experts.E.w1/w2/w3``), fused banks for granitemoe
   (``block_sparse_moe.input_linear`` [E, 2I, H], gate rows first, and
   ``output_linear`` [E, H, I]) and gpt-oss (``mlp.experts.gate_up_proj``
   [E, H, 2I] with gate and up interleaved column by column, ``down_proj``
   [E, I, H], their ``_bias`` [E, 2I] / [E, H]; the published gpt-oss stores
   the two banks as MXFP4 ``_blocks``/``_scales``, which transformers does not
   write). The tokenizer is the tiny byte-level BPE vocabulary of
   tests/support/tiny_models.py (tokenizer.json; tokenizer_config.json names
   PreTrainedTokenizerFast, else transformers picks GPT-NeoX's class for
   OLMoE, which adds a 301st token and the converter refuses the vocabulary).
   That directory is committed as ``tiny_moe/<case>.hf/``; loading it back
   into transformers gives the recorded logits (``_check_reload``).
3. Converts that directory to ``tiny_moe/<case>.gguf`` with **llama.cpp's own
   converter** (``convert_hf_to_gguf.py --outtype f16`` from the llama.cpp tree
   in the llama-cpp-python sdist, run with that tree's gguf-py). The converter
   names the BPE pre-tokenizer by hashing the tokenization of a test string;
   the tiny vocabulary is no published tokenizer, so its hash is in no table
   and the converter raises NotImplementedError. ``_CONVERT`` therefore runs
   the converter's own ``main()`` with one change: ``get_vocab_base_pre``
   returns "default" (GPT-2's byte-level split, which is what the tiny
   tokenizer.json does). Every tensor and every other metadata key is the
   converter's. The goldens do not depend on the tokenizer (prompts are ids).
4. For gpt-oss also quantizes that GGUF with llama.cpp's quantizer to
   MXFP4_MOE (tests/support/llama_quantize.py): experts in MXFP4, the other
   matrices in Q8_0 -> ``tiny_moe/gpt-oss-mxfp4.gguf``.
5. Records, per case: 3 seeded prompts of random ids (12, 20, 30 ids);
   transformers' 32 greedy ids and top-1 minus top-2 gaps (a full forward per
   step: make_arch_goldens._greedy); transformers' float32 logits for every
   position of prompt 0 + its greedy ids; llama.cpp's greedy ids and gaps on
   the GGUF (llama-cpp-python, prompt in one batch then one id at a time,
   argmax: make_gemma3_golden.greedy), and on the MXFP4 GGUF for gpt-oss;
   the largest difference between llama.cpp's logits and transformers' on
   prompt 0 + its ids (``llama_cpp_logits_max_err``: 0.0007-0.0054 on the
   F16 files; llama.cpp rounds activations to float16 for F16 matrices), and
   ``min_router_margin``: the smallest gap between the k-th and (k+1)-th
   router logit over layers and positions of that run (0.0014-0.011: a
   logit error that size could send a token to another expert).
6. gpt-oss only: GGUF has no key for YaRN's ``truncate`` and llama.cpp always
   truncates (rounds the correction range to whole dimensions), while the
   published config (and this case) says ``truncate: false``. On this model
   that moves llama.cpp's logits by up to 1.15 from transformers'. So the
   case also records transformers with ``truncate: true`` on the same weights
   (``truncated_ref_ids``/``_gaps``, ``gpt-oss_truncated_logits.npy``): it
   equals llama.cpp (same greedy ids on all prompts, logits within 0.0075),
   and llama.cpp's own logits on the F16 and MXFP4 files
   (``gpt-oss_llama_cpp_logits.npy``, ``gpt-oss-mxfp4_llama_cpp_logits.npy``).
   For the MXFP4 file, a float reference as well: transformers (truncated
   YaRN) on the weights that file holds (``_dequantized_gpt_oss_state``:
   every MXFP4 and Q8_0 matrix through ``gguf.quants.dequantize``), per prompt
   ``mxfp4_ref_ids`` / ``_gaps`` and ``gpt-oss-mxfp4_logits.npy``. llama.cpp
   on that file stays within 0.05-0.21 of it at all positions but two
   (1.6 and 1.4 at positions 22-23, where a token probably goes to another
   expert: llama.cpp rounds activations to 8 bits for MXFP4 and Q8_0
   matrices); its greedy ids first differ at gaps 0.06-0.17
   (``llama_cpp_mxfp4_vs_mxfp4_ref``, ``llama_cpp_vs_mxfp4_logits_max_err``).
7. gpt-oss only: the published chat template goes into the directory as
   ``chat_template.jinja`` before conversion (so the GGUF carries it as
   ``tokenizer.chat_template``, as published gpt-oss GGUFs do). Its text is
   llama.cpp's ``models/templates/openai-gpt-oss-120b.jinja``, the
   chat_template of Hugging Face openai/gpt-oss-120b (gpt-oss-20b publishes the
   same text). ``CHATS`` are rendered by transformers' ``apply_chat_template``
   (text, not ids) with that directory's tokenizer into ``gpt-oss_chat.json``;
   ``strftime_now`` is pinned to ``CHAT_DATE`` (the template writes the date).

Files per case (``tiny_moe/``): ``<case>.gguf``, ``<case>.config.json`` (the
config.json transformers saved, as saved), ``<case>.hf/`` (config.json,
model.safetensors in float16, tokenizer.json, tokenizer_config.json,
generation_config.json), ``<case>.json`` and ``<case>_logits.npy``; gpt-oss
also ``gpt-oss-mxfp4.gguf``, the three logits files of step 6 and
``gpt-oss_chat.json`` (step 7).
tests/golden/README.md lists the JSON keys and what the converter wrote.

What each case exercises (transformers' behaviour is the reference):

* qwen3moe: softmax router, top-2, norm_topk_prob true (the two weights
  renormalised to sum 1), q/k RMS norms per head, head_dim 32 (4 x 32 != 64).
* qwen2moe: softmax router without renormalisation, a shared expert (width
  64) added through its sigmoid gate, q/k/v biases.
* mixtral: softmax router, top-2 renormalised (Mixtral always does), sliding
  window none, head_dim 32.
* olmoe: softmax router, no renormalisation, q/k RMS norms over the whole
  q and k projections (64 each), not per head; no GQA and rms_norm_eps 1e-5,
  as llama.cpp reads OLMoE (it sizes attn_k_norm by the embedding and its
  converter writes eps 1e-5 whatever the config says).
* granitemoe: softmax over the top-2 router logits, embedding multiplier 4,
  residual multiplier 0.5, attention multiplier 0.3 (in place of
  1/sqrt(head_dim)), logits divided by logits_scaling 2.
* gpt-oss: attention sinks, layers alternating sliding window 8 / full,
  biases on q/k/v/o, the router and the experts, the router's softmax over
  its top-2 logits, the clamped SwiGLU (limit 7, alpha 1.702; llama.cpp fixes
  both; the expert gate/up weights have std 3 so that the clamp bites: about
  1% of gate and 2% of up values pass 7, and without the clamp the logits
  move by up to 2.3), YaRN (factor 4 over an original context of 64, so it
  matters at these lengths; truncate false as in the published config, see
  step 6). llama.cpp makes even layers sliding and odd ones full whatever
  ``layer_types`` says; this case's [sliding, full] is the published pattern.

How to regenerate
-----------------
From the repository root, with the reference venv (torch CPU, transformers,
safetensors, numpy, gguf, llama-cpp-python and its sdist's llama.cpp tree;
made with Python 3.11.7, torch 2.13.0+cpu, transformers 5.25.0, numpy 2.4.6,
safetensors 0.8.0, llama-cpp-python 0.3.36 (``llama_cpp.__version__``) and
the converter ``vendor/llama.cpp/convert_hf_to_gguf.py`` of its sdist, with
that tree's gguf-py 0.19.0)::

    python tests/golden/make_moe_goldens.py [--only CASE ...] [--llama-cpp DIR]

``--llama-cpp`` (or ``$LLAMA_CPP_DIR``) is the llama.cpp source tree holding
convert_hf_to_gguf.py; by default the sdist's ``vendor/llama.cpp`` beside the
Python running this. About 30 s per case on 2 cores; the output is
deterministic (a rerun leaves every file byte-identical).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import greedy_rule  # noqa: E402
import hf_convert  # noqa: E402
import make_arch_goldens  # noqa: E402
import make_gemma3_golden  # noqa: E402

OUT = HERE / "tiny_moe"
N_NEW = make_arch_goldens.N_NEW
TOKENIZER = make_arch_goldens._TOKENIZER

BASE = dict(vocab_size=make_arch_goldens.VOCAB, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=256, rms_norm_eps=1e-6, bos_token_id=TOKENIZER["bos_id"],
            eos_token_id=TOKENIZER["eos_id"], pad_token_id=None, num_hidden_layers=2)
EXPERTS = dict(num_experts_per_tok=2)
WINDOW = 8

#: qwen3moe and gpt-oss have 8 experts, the others 4 (so that the files
#: stay near 4 MB in all).
#: case -> (transformers config class, its arguments, options); options:
#: ``expert_in_axis`` (the axis of a fused expert bank that is the input
#: dimension in transformers' in-memory layout), ``expert_scale`` (extra
#: factor on the gate/up banks), ``mxfp4`` (also quantize to MXFP4_MOE),
#: ``truncated_yarn`` (also the truncate-true reference, step 6),
#: ``chat_template`` (the template's path in the llama.cpp tree, step 7).
CASES = {
    "qwen3moe": ("Qwen3MoeConfig", dict(BASE, **EXPERTS, head_dim=32, num_experts=8, moe_intermediate_size=32,
                                        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]), {}),
    "qwen2moe": ("Qwen2MoeConfig", dict(BASE, **EXPERTS, num_experts=4, moe_intermediate_size=32,
                                        shared_expert_intermediate_size=64, norm_topk_prob=False,
                                        decoder_sparse_step=1, mlp_only_layers=[], qkv_bias=True), {}),
    "mixtral": ("MixtralConfig", dict(BASE, **EXPERTS, head_dim=32, num_local_experts=4, intermediate_size=32,
                                      sliding_window=None), {}),
    # As OLMoE-1B-7B: no GQA (llama.cpp sizes attn_k_norm by the embedding,
    # 64, where transformers sizes it by the k projection) and rms_norm_eps
    # 1e-5 (llama.cpp's converter writes 1e-5 whatever the config says).
    "olmoe": ("OlmoeConfig", dict(BASE, **EXPERTS, num_experts=4, intermediate_size=32, norm_topk_prob=False,
                                  num_key_value_heads=4, rms_norm_eps=1e-5), {}),
    "granitemoe": ("GraniteMoeConfig", dict(BASE, **EXPERTS, num_local_experts=4, intermediate_size=32,
                                            embedding_multiplier=4.0, residual_multiplier=0.5,
                                            attention_multiplier=0.3, logits_scaling=2.0), {}),
    "gpt-oss": ("GptOssConfig", dict(BASE, **EXPERTS, head_dim=32, num_local_experts=8, intermediate_size=32,
                                     sliding_window=WINDOW, layer_types=["sliding_attention", "full_attention"],
                                     rope_parameters=dict(rope_type="yarn", factor=4.0, rope_theta=150000.0,
                                                          original_max_position_embeddings=64, beta_fast=32.0,
                                                          beta_slow=1.0, truncate=False)),
                dict(expert_in_axis=1, expert_scale=3.0, mxfp4=True, truncated_yarn=True,
                     chat_template="models/templates/openai-gpt-oss-120b.jinja")),
}


def llama_cpp_dir(explicit=None) -> pathlib.Path:
    """The llama.cpp source tree with convert_hf_to_gguf.py."""
    if explicit or os.environ.get("LLAMA_CPP_DIR"):
        return pathlib.Path(explicit or os.environ["LLAMA_CPP_DIR"])
    return pathlib.Path(sys.prefix) / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"


# The converter's main() with one change: the tiny vocabulary's pre-tokenizer
# hash is in no table, so it is named "default" (see the module docstring).
_CONVERT = """
import sys
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[1:]
import convert_hf_to_gguf
from conversion.base import TextModel
TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
convert_hf_to_gguf.main()
"""


def convert(hf_dir, out, llama_cpp, outtype="f16", extra_args=(), patch=""):
    """Runs _CONVERT; `patch`: Python run in the converter's process before its main()
    (bench/make_sized_hf_ggufs.py's one extra key)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(llama_cpp / "gguf-py"), str(llama_cpp)]))
    script = _CONVERT.replace("convert_hf_to_gguf.main()", patch + "convert_hf_to_gguf.main()")
    done = subprocess.run([sys.executable, "-c", script, str(hf_dir), "--outfile", str(out), "--outtype", outtype,
                           *extra_args],
                          env=env, cwd=llama_cpp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py failed on {hf_dir}:\n{done.stderr[-3000:]}")


def _randomize(model, seed, expert_in_axis=-1, expert_scale=1.0):
    """make_arch_goldens._randomize's scales for the dense parts; expert banks
    (3-d) by their own fan-in; biases (1-d, or 2-d per expert) std 0.1 around
    their initial value (norm weights are biases of 1 here); sinks std 1."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("sinks"):
                p.copy_(torch.randn(p.shape, generator=g))
            elif p.ndim == 1 or name.endswith("_bias"):
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            elif p.ndim == 3:
                fan_in = p.shape[expert_in_axis]
                scale = expert_scale if "gate_up" in name or "input_linear" in name else 1.0
                p.copy_(torch.randn(p.shape, generator=g) * scale / np.sqrt(fan_in))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[1]))
            p.copy_(p.half().float())


def _save_hf(model, directory):
    """The model as a float16 Hugging Face directory with the tiny tokenizer."""
    import copy

    import torch

    copy.deepcopy(model).to(torch.float16).save_pretrained(directory, safe_serialization=True)
    save_tokenizer(directory)


def save_tokenizer(directory):
    """The tiny tokenizer's tokenizer.json and tokenizer_config.json into `directory`."""
    doc = hf_convert.tokenizer_json(TOKENIZER["tokens"], TOKENIZER["types"], TOKENIZER["merges"], "default")
    (directory / "tokenizer.json").write_text(json.dumps(doc))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", add_bos_token=False,
             tokenizer_class="PreTrainedTokenizerFast")))


def _truncated_yarn_reference(model, records, forced, prefix="truncated_ref", state=None):
    """transformers with YaRN's ``truncate`` true (the correction range rounded
    to whole dimensions): what the GGUF says as llama.cpp reads it, since GGUF
    has no key for truncate. On ``model``'s weights, or on ``state`` (a state
    dict) when given. Adds ``<prefix>_ids`` / ``<prefix>_gaps`` (greedy) to
    each record; returns the logits for every position of ``forced``."""
    import copy

    import torch
    import transformers

    config = copy.deepcopy(model.config)
    config.rope_parameters = dict(config.rope_parameters, truncate=True)
    truncated = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    truncated.load_state_dict(state if state is not None else model.state_dict())
    for record in records:
        ids, gaps = make_arch_goldens._greedy(truncated, record["prompt_ids"])
        record.update({f"{prefix}_ids": ids, f"{prefix}_gaps": gaps})
    with torch.no_grad():
        return truncated(torch.tensor([forced])).logits[0].numpy().astype(np.float32)


#: gpt-oss GGUF matrix -> its transformers parameter (N: the layer).
_GPT_OSS_MATRICES = {"token_embd": "model.embed_tokens.weight", "output": "lm_head.weight",
                     "blk.N.attn_q": "model.layers.N.self_attn.q_proj.weight",
                     "blk.N.attn_k": "model.layers.N.self_attn.k_proj.weight",
                     "blk.N.attn_v": "model.layers.N.self_attn.v_proj.weight",
                     "blk.N.attn_output": "model.layers.N.self_attn.o_proj.weight"}


def _dequantized_gpt_oss_state(model, gguf_path):
    """``model``'s state dict with every quantized matrix of the gpt-oss GGUF
    replaced by its dequantized values (gguf.quants.dequantize): the weights
    the file holds, in transformers' layout (gate and up interleaved into
    gate_up_proj [E, H, 2I], down_proj [E, I, H])."""
    import gguf
    import torch

    state = {k: v.clone() for k, v in model.state_dict().items()}
    reader = gguf.GGUFReader(gguf_path)
    for t in reader.tensors:
        if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            continue
        values = torch.from_numpy(np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type)))
        stem = t.name.removesuffix(".weight")
        layer = stem.split(".")[1] if stem.startswith("blk.") else None
        generic = stem.replace(f"blk.{layer}.", "blk.N.") if layer is not None else stem
        experts = f"model.layers.{layer}.mlp.experts."
        if generic in _GPT_OSS_MATRICES:
            state[_GPT_OSS_MATRICES[generic].replace(".N.", f".{layer}.")] = values
        elif generic == "blk.N.ffn_gate_exps":
            state[experts + "gate_up_proj"][..., ::2] = values.transpose(1, 2)
        elif generic == "blk.N.ffn_up_exps":
            state[experts + "gate_up_proj"][..., 1::2] = values.transpose(1, 2)
        elif generic == "blk.N.ffn_down_exps":
            state[experts + "down_proj"] = values.transpose(1, 2).contiguous()
        else:
            raise KeyError(f"{gguf_path}: no transformers parameter for quantized {t.name}")
    return state


#: The date strftime_now gives while the chat goldens are rendered (the
#: gpt-oss template writes "Current date: ..." into every system message).
CHAT_DATE = (2026, 1, 2)
_WEATHER_TOOL = dict(type="function", function=dict(
    name="get_weather", description="Current weather in a city.",
    parameters=dict(type="object", properties=dict(city=dict(type="string", description="City name"),
                                                   unit=dict(type="string", enum=["celsius", "fahrenheit"])),
                    required=["city"])))
#: name -> (messages, apply_chat_template keyword arguments)
CHATS = {
    "user": ([dict(role="user", content="Hello!")], dict(add_generation_prompt=True)),
    "system-multi-turn": ([dict(role="system", content="Answer in one word."),
                           dict(role="user", content="Capital of France?"),
                           dict(role="assistant", content="Paris."),
                           dict(role="user", content="And of Italy?")], dict(add_generation_prompt=True)),
    "thinking-in-history": ([dict(role="user", content="2+2?"),
                             dict(role="assistant", thinking="Simple sum.", content="4"),
                             dict(role="user", content="3+3?")], dict(add_generation_prompt=True)),
    "last-assistant-thinking": ([dict(role="user", content="2+2?"),
                                 dict(role="assistant", thinking="Simple sum.", content="4")],
                                dict(add_generation_prompt=False)),
    "reasoning-high-identity": ([dict(role="user", content="Hi")],
                                dict(add_generation_prompt=True, reasoning_effort="high",
                                     model_identity="You are a tiny test model.")),
    "builtin-python": ([dict(role="user", content="Compute 7*6.")],
                       dict(add_generation_prompt=True, builtin_tools=["python"])),
    "tools": ([dict(role="user", content="Weather in Paris?"),
               dict(role="assistant", thinking="Need the tool.", tool_calls=[dict(
                   type="function", function=dict(name="get_weather", arguments=dict(city="Paris")))]),
               dict(role="tool", content="{\"temp\": 21}"),
               ], dict(add_generation_prompt=True, tools=[_WEATHER_TOOL])),
    "channel-tag-in-content": ([dict(role="user", content="Hi"),
                                dict(role="assistant", content="<|channel|>final<|message|>Hi")],
                               dict(add_generation_prompt=True)),
}


def render_chats(tokenizer, chats):
    """transformers' apply_chat_template (text) of each of ``chats`` (name ->
    (messages, keyword arguments)) as a record; a conversation the template
    refuses records the error message."""
    renders = []
    for name, (messages, kwargs) in chats.items():
        entry = dict(name=name, messages=messages, **kwargs)
        try:
            entry["text"] = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
        except Exception as e:  # the template's raise_exception
            entry["error"] = str(e)
        renders.append(entry)
    return renders


def _render_chats(case, hf_dir, template_source):
    """transformers' apply_chat_template (text) of ``CHATS`` with the
    tokenizer of ``hf_dir`` carrying the published template; a conversation
    the template refuses records the error message."""
    import datetime

    import transformers
    from transformers.utils import chat_template_utils

    class _FixedDate(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(*CHAT_DATE)

    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    real, chat_template_utils.datetime = chat_template_utils.datetime, _FixedDate
    try:
        renders = render_chats(tokenizer, CHATS)
    finally:
        chat_template_utils.datetime = real
    doc = dict(case=case, template=f"{case}.hf/chat_template.jinja",
               template_source=f"llama.cpp {template_source} (the chat_template of Hugging Face "
                               "openai/gpt-oss-120b; gpt-oss-20b publishes the same text)",
               date="%04d-%02d-%02d" % CHAT_DATE, transformers=transformers.__version__, chats=renders)
    (OUT / f"{case}_chat.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def _check_reload(hf_dir, ids, logits):
    """The committed directory, loaded back by transformers in float32, gives
    the logits recorded (so it holds exactly the model that ran)."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        again = model(torch.tensor([ids])).logits[0].numpy()
    err = float(np.abs(again - logits).max())
    if err > 1e-5:
        raise AssertionError(f"{hf_dir}: reloaded logits differ by {err}")


def _llama_cpp_run(gguf_path, prompts, forced):
    """llama.cpp's greedy (ids, gaps) per prompt, and its logits for every
    position of ``forced`` in one batch."""
    import llama_cpp

    llm = llama_cpp.Llama(str(gguf_path), n_ctx=256, n_batch=256, n_threads=2, logits_all=True, verbose=False)
    out = [make_gemma3_golden.greedy(llm, p, N_NEW) for p in prompts]
    llm.reset()
    llm.eval(forced)
    logits = np.array(llm.scores[:len(forced)], dtype=np.float32)
    llm.close()
    return out, logits


def _versus(records, ids_key, gaps_key="ref_gaps"):
    """Where llama.cpp's greedy ids first differ from transformers', and the
    transformers gap there (None: identical)."""
    out = []
    for r in records:
        diff = greedy_rule.first_difference(r[ids_key], r["ref_ids"])
        out.append(None if diff is None else dict(step=diff, ref_gap=r[gaps_key][diff]))
    return out


def tiny_model(config_class, kwargs, seed, **randomize):
    """Step 1: (config, model) from transformers' ``config_class`` with
    ``kwargs``, weights by ``_randomize(model, seed, **randomize)``."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    _randomize(model, seed, **randomize)
    return config, model


def seeded_prompts(seed):
    """The seeded prompts of random ids (PROMPT_LENGTHS long, below the end-of-text id)."""
    rng = np.random.default_rng(seed)
    return [[int(i) for i in rng.integers(0, TOKENIZER["eos_id"], n)] for n in make_arch_goldens.PROMPT_LENGTHS]


def fresh_hf_dir(model, directory):
    """Step 2: ``directory`` emptied and written by ``_save_hf``."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    _save_hf(model, directory)
    return directory


def reference_records(model, prompts):
    """Per prompt: its ids and transformers' greedy ids and gaps."""
    records = []
    for prompt in prompts:
        ref_ids, gaps = make_arch_goldens._greedy(model, prompt)
        records.append(dict(prompt_ids=prompt, ref_ids=ref_ids, ref_gaps=gaps))
    return records


def seeded_prompts_and_hf_dir(model, case, seed, out=OUT):
    """The case's seeded prompts and its Hugging Face directory ``out/<case>.hf``
    made afresh (make_mla_goldens.py's steps 1-2)."""
    return seeded_prompts(seed), fresh_hf_dir(model, out / f"{case}.hf")


def make_case(case, llama_cpp, seed=0):
    import torch

    import llama_quantize

    config_class, kwargs, options = CASES[case]
    config, model = tiny_model(config_class, kwargs, seed, expert_in_axis=options.get("expert_in_axis", -1),
                               expert_scale=options.get("expert_scale", 1.0))
    prompts = seeded_prompts(seed)
    hf_dir = fresh_hf_dir(model, OUT / f"{case}.hf")
    shutil.copy(hf_dir / "config.json", OUT / f"{case}.config.json")
    if options.get("chat_template"):
        shutil.copy(llama_cpp / options["chat_template"], hf_dir / "chat_template.jinja")
    gguf_path = OUT / f"{case}.gguf"
    convert(hf_dir, gguf_path, llama_cpp)

    records = reference_records(model, prompts)
    with torch.no_grad():
        forced = prompts[0] + records[0]["ref_ids"]
        run = model(torch.tensor([forced]), output_router_logits=True)
        logits = run.logits[0].numpy().astype(np.float32)
    # How close the router comes to a different choice of experts: the
    # smallest gap between the k-th and (k+1)-th router logit, over layers
    # and positions (a logit error that size can route a token elsewhere).
    k = kwargs["num_experts_per_tok"]
    ranked = [torch.sort(layer.float(), dim=-1, descending=True).values for layer in run.router_logits]
    router_margin = min(float((r[:, k - 1] - r[:, k]).min()) for r in ranked)
    np.save(OUT / f"{case}_logits.npy", logits)
    _check_reload(hf_dir, forced, logits)

    greedy, llama_logits = _llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    extra = dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max()))
    if options.get("truncated_yarn"):
        truncated_logits = _truncated_yarn_reference(model, records, forced)
        np.save(OUT / f"{case}_truncated_logits.npy", truncated_logits)
        np.save(OUT / f"{case}_llama_cpp_logits.npy", llama_logits)
        extra["llama_cpp_vs_truncated_logits_max_err"] = float(np.abs(llama_logits - truncated_logits).max())
    if options.get("mxfp4"):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["VLLM_CPP_TEST_CACHE"] = cache  # never a stale cached quantization
            made = llama_quantize.quantized(gguf_path, "MXFP4_MOE")
            shutil.copy(made, OUT / f"{case}-mxfp4.gguf")
        greedy, mxfp4_logits = _llama_cpp_run(OUT / f"{case}-mxfp4.gguf", prompts, forced)
        for r, (ids, gaps) in zip(records, greedy):
            r.update(llama_cpp_mxfp4_ids=ids, llama_cpp_mxfp4_gaps=gaps)
        np.save(OUT / f"{case}-mxfp4_llama_cpp_logits.npy", mxfp4_logits)
        extra["mxfp4_gguf"] = f"{case}-mxfp4.gguf"
        state = _dequantized_gpt_oss_state(model, OUT / f"{case}-mxfp4.gguf")
        mxfp4_ref_logits = _truncated_yarn_reference(model, records, forced, "mxfp4_ref", state)
        np.save(OUT / f"{case}-mxfp4_logits.npy", mxfp4_ref_logits)
        extra["llama_cpp_vs_mxfp4_logits_max_err"] = float(np.abs(mxfp4_logits - mxfp4_ref_logits).max())

    after = {}
    if options.get("truncated_yarn"):
        after["llama_cpp_vs_truncated_ref"] = _versus(
            [dict(r, ref_ids=r["truncated_ref_ids"]) for r in records], "llama_cpp_ids", "truncated_ref_gaps")
    if options.get("mxfp4"):
        after["llama_cpp_mxfp4_vs_mxfp4_ref"] = _versus(
            [dict(r, ref_ids=r["mxfp4_ref_ids"]) for r in records], "llama_cpp_mxfp4_ids", "mxfp4_ref_gaps")
    if options.get("chat_template"):
        _render_chats(case, hf_dir, options["chat_template"])
    write_record(OUT, case, dict(config_class=config_class, config=kwargs, architecture=config.architectures[0]
                                 if config.architectures else type(model).__name__),
                 dict(min_router_margin=router_margin, **extra), records, gguf_path, logits, after=after)


def write_record(out_dir, case, model_fields, results, records, gguf_path, logits, after=None,
                 converter="convert_hf_to_gguf.py --outtype f16", summary_suffix=""):
    """Writes ``out_dir/{case}.json`` (every golden script's record, in this
    key order: case, ``model_fields``, the versions and the converter,
    ``results``, the prompts' records, llama.cpp's ids against the
    reference, ``after``) and prints the case's summary line."""
    import llama_cpp as llama_cpp_module
    import transformers

    out = dict(case=case, **model_fields, transformers=transformers.__version__,
               llama_cpp=llama_cpp_module.__version__, converter=converter, **results,
               prompts=[dict(name=f"{case}-{i}", **r) for i, r in enumerate(records)])
    out["llama_cpp_vs_ref"] = _versus(records, "llama_cpp_ids")
    out.update(after or {})
    (out_dir / f"{case}.json").write_text(json.dumps(out) + "\n")
    print(f"{case}: gguf {gguf_path.stat().st_size} bytes, logit std {logits.std():.2f}, "
          f"min gap {min(min(r['ref_gaps']) for r in records):.4f}, llama.cpp vs transformers "
          f"{out['llama_cpp_vs_ref']}, logits max err {out['llama_cpp_logits_max_err']:.4f}{summary_suffix}")
    return out

def main(cases=None, make=None, out=None):
    """The command line: ``make(case, llama_cpp)`` for the chosen ``cases``
    into ``out`` (by default this script's own)."""
    cases, make, out = cases or CASES, make or make_case, out or OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(cases), action="append", help="a case to make (repeatable)")
    ap.add_argument("--llama-cpp", help="llama.cpp source tree with convert_hf_to_gguf.py")
    args = ap.parse_args()
    llama_cpp = llama_cpp_dir(args.llama_cpp)
    out.mkdir(exist_ok=True)
    for case in args.only or cases:
        make(case, llama_cpp)


if __name__ == "__main__":
    main()
