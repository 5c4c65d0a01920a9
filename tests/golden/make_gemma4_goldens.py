"""Regenerate the Gemma 4 text-decoder goldens under tests/golden/tiny_gemma4/.

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds a tiny ``Gemma4ForCausalLM`` with transformers from a
   ``Gemma4TextConfig`` (torch seed 0, float32, ``attn_implementation="eager"``)
   and overwrites every weight with seeded normal values
   (make_moe_goldens._randomize: norm weights 1 +- 0.1, matrices std
   1/sqrt(fan_in), embeddings std 0.2), plus each layer's ``layer_scalar``
   buffer (saved in the checkpoint) drawn from [0.5, 1.5]; every value
   rounded to float16.
2. Saves it as a Hugging Face directory (float16 safetensors) with a tiny
   SentencePiece-style vocabulary (``_vocabulary``: Gemma's <pad>/<eos>/<bos>/
   <unk> at 0-3, the 256 <0xNN> byte tokens, letters and a few "▁" words) as
   the tokenizer.json Gemma ships (hf_convert.gemma_tokenizer_json: BPE with
   byte fallback, spaces as U+2581), and the published Gemma 4 chat template
   (llama.cpp's models/templates/google-gemma-4-31B-it.jinja, the chat_template
   of Hugging Face google/gemma-4-31B-it) as chat_template.jinja. Committed as
   ``tiny_gemma4/<case>.hf/``; reloading it gives the recorded logits.
3. Converts that directory to ``tiny_gemma4/<case>.gguf`` with **llama.cpp's
   own converter** (make_moe_goldens.convert: ``convert_hf_to_gguf.py
   --outtype f16``). Gemma 4's converter writes its own vocabulary
   (tokenizer.ggml.model "gemma4") and never asks for a pre-tokenizer hash, so
   the converter runs unchanged here.
4. Records per case: 3 seeded prompts of random ids (12, 20, 30 ids, none of
   them special); transformers' 32 greedy ids and top-1 minus top-2 gaps (a
   full forward per step, no cache: make_arch_goldens._greedy); transformers'
   float32 logits for every position of prompt 0 + its greedy ids
   (``<case>_logits.npy``); llama.cpp's greedy ids and gaps on the GGUF and
   the largest difference between its logits and transformers' on prompt 0 +
   its ids (make_moe_goldens._llama_cpp_run).
5. For the case with ``chat`` set: ``CHATS`` rendered by transformers'
   apply_chat_template (text) with that directory's tokenizer into
   ``<case>_chat.json``, and transformers' ids for ``TOKENIZE_TEXTS`` (BOS
   added) as ``tokenized`` in ``<case>.json``.

What each case exercises (transformers' behaviour is the reference):

* gemma4-e: the E2B/E4B shape. Six layers [sliding, sliding, full] x 2,
  window 8; sliding layers have 2 KV heads of 32 and rotate all 32 dims with
  base 10000, full layers have 2 KV heads of 512 (``global_head_dim``, as the
  published models: past the 256 of every other architecture) and
  "proportional" RoPE (base 1e6, a quarter of the pairs rotate, frequencies
  over the whole head); per-layer token embeddings of 16 per layer, their
  projection from the embedding and their gate in every layer; the last
  3 layers share KV (``num_kv_shared_layers``): layers 3 and 4 attend over
  layer 1's K/V, layer 5 over layer 2's, and store none; the double-wide MLP
  (256, not 128) on those shared layers; q/k norms, the weightless v norm,
  attention scale 1, sandwich norms, final logit soft-cap 10.
* gemma4-dense: the 31B shape without per-layer embeddings or KV sharing:
  ``attention_k_eq_v`` (full layers have no v_proj: V is the k projection
  before its norm), full layers with 1 KV head of 64
  (``num_global_key_value_heads``) against 2 of 32 on sliding layers, no
  soft-cap.

How to regenerate
-----------------
From the repository root, with the reference venv of make_moe_goldens.py
(torch CPU, transformers 5.25.0, safetensors, numpy, gguf, llama-cpp-python
0.3.36 and its sdist's llama.cpp tree)::

    python tests/golden/make_gemma4_goldens.py [--only CASE ...] [--llama-cpp DIR]

About 20 s per case on 2 cores; a rerun leaves every file byte-identical.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE))
import hf_convert  # noqa: E402
import make_arch_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_gemma4"
N_NEW = make_arch_goldens.N_NEW
WINDOW = 8
CHAT_TEMPLATE = "models/templates/google-gemma-4-31B-it.jinja"

PAD, EOS, BOS, UNK = 0, 1, 2, 3
_WORDS = ["▁t", "he", "▁the", "▁a", "in", "er", "on", "▁of", "▁and", "▁to", "▁is", "ing", "at", "en", "or", "▁w",
          "▁s", "an", "▁c", "it"]


def _vocabulary():
    """(tokens, llama.cpp token types): Gemma's four specials, the byte
    tokens, "▁", a-z and _WORDS (each the join of two earlier tokens)."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + ["<0x%02X>" % b for b in range(256)]
    types = [3, 3, 3, 2] + [6] * 256
    for t in ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + _WORDS:
        tokens.append(t)
        types.append(1)
    return tokens, types


TOKENS, TYPES = _vocabulary()
VOCAB = len(TOKENS)

BASE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32, global_head_dim=64, sliding_window=WINDOW, max_position_embeddings=256, rms_norm_eps=1e-6,
            pad_token_id=PAD, eos_token_id=EOS, bos_token_id=BOS, num_hidden_layers=6,
            layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
            rope_parameters=dict(sliding_attention=dict(rope_type="default", rope_theta=10000.0),
                                 full_attention=dict(rope_type="proportional", partial_rotary_factor=0.25,
                                                     rope_theta=1000000.0)))

#: case -> (Gemma4TextConfig arguments, options); options: ``chat`` (record
#: the chat template's renders).
CASES = {
    "gemma4-e": (dict(BASE, global_head_dim=512, hidden_size_per_layer_input=16, vocab_size_per_layer_input=VOCAB, num_kv_shared_layers=3,
                      use_double_wide_mlp=True, final_logit_softcapping=10.0), dict(chat=True)),
    "gemma4-dense": (dict(BASE, hidden_size_per_layer_input=0, num_kv_shared_layers=0, attention_k_eq_v=True,
                          num_global_key_value_heads=1, final_logit_softcapping=None), {}),
}

#: Texts whose transformers tokenization (tokenizer.json, BOS added) the
#: gemma4-e golden records as ``tokenized`` (the gemma4 GGUF vocabulary
#: must give the same ids).
TOKENIZE_TEXTS = ["the cat is on\n\nthe mat", "Hello, w\u00f6rld!  x\n", "<bos>hi<eos> and", "a\n\n\nb",
                  "  leading spaces", ""]

#: name -> (messages, apply_chat_template keyword arguments)
_WEATHER_TOOL = make_moe_goldens._WEATHER_TOOL
CHATS = {
    "user": ([dict(role="user", content="Hello!")], dict(add_generation_prompt=True)),
    "system-multi-turn": ([dict(role="system", content="Answer in one word."),
                           dict(role="user", content="Capital of France?"),
                           dict(role="assistant", content="Paris."),
                           dict(role="user", content="And of Italy?")], dict(add_generation_prompt=True)),
    "no-generation-prompt": ([dict(role="user", content="Hi"), dict(role="assistant", content="Hello.")],
                             dict(add_generation_prompt=False)),
    "thinking": ([dict(role="user", content="2+2?")], dict(add_generation_prompt=True, enable_thinking=True)),
    "tools": ([dict(role="user", content="Weather in Paris?"),
               dict(role="assistant", tool_calls=[dict(
                   type="function", function=dict(name="get_weather", arguments=dict(city="Paris")))]),
               dict(role="tool", name="get_weather", content="{\"temp\": 21}")],
              dict(add_generation_prompt=True, tools=[_WEATHER_TOOL])),
}


def _save_hf(model, directory, llama_cpp):
    import copy

    import torch

    copy.deepcopy(model).to(torch.float16).save_pretrained(directory, safe_serialization=True)
    doc = hf_convert.gemma_tokenizer_json(TOKENS, TYPES, BOS)
    (directory / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>", add_bos_token=True,
             add_eos_token=False, tokenizer_class="PreTrainedTokenizerFast")))
    shutil.copy(llama_cpp / CHAT_TEMPLATE, directory / "chat_template.jinja")


def _randomize(model, seed):
    import torch

    make_moe_goldens._randomize(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_((0.5 + torch.rand(b.shape, generator=g)).half().float())


def _render_chats(case, hf_dir):
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    renders = make_moe_goldens.render_chats(tokenizer, CHATS)
    doc = dict(case=case, template=f"{case}.hf/chat_template.jinja",
               template_source=f"llama.cpp {CHAT_TEMPLATE} (the chat_template of Hugging Face google/gemma-4-31B-it)",
               transformers=transformers.__version__, chats=renders)
    (OUT / f"{case}_chat.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def make_case(case, llama_cpp, seed=0):
    import torch
    import transformers

    kwargs, options = CASES[case]
    torch.manual_seed(seed)
    config = transformers.Gemma4TextConfig(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.Gemma4ForCausalLM(config).to(torch.float32).eval()
    _randomize(model, seed)

    rng = np.random.default_rng(seed)
    prompts = [[int(i) for i in rng.integers(UNK + 1, VOCAB, n)] for n in make_arch_goldens.PROMPT_LENGTHS]
    hf_dir = OUT / f"{case}.hf"
    shutil.rmtree(hf_dir, ignore_errors=True)
    hf_dir.mkdir(parents=True)
    _save_hf(model, hf_dir, llama_cpp)
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)

    records = []
    for prompt in prompts:
        ref_ids, gaps = make_arch_goldens._greedy(model, prompt)
        records.append(dict(prompt_ids=prompt, ref_ids=ref_ids, ref_gaps=gaps))
    with torch.no_grad():
        forced = prompts[0] + records[0]["ref_ids"]
        logits = model(torch.tensor([forced])).logits[0].numpy().astype(np.float32)
    np.save(OUT / f"{case}_logits.npy", logits)
    make_moe_goldens._check_reload(hf_dir, forced, logits)

    greedy, llama_logits = make_moe_goldens._llama_cpp_run(gguf_path, prompts, forced)
    for r, (ids, gaps) in zip(records, greedy):
        r.update(llama_cpp_ids=ids, llama_cpp_gaps=gaps)
    after = {}
    if options.get("chat"):
        tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
        after["tokenized"] = [[t, tokenizer(t)["input_ids"]] for t in TOKENIZE_TEXTS]
        _render_chats(case, hf_dir)
    make_moe_goldens.write_record(
        OUT, case, dict(config_class="Gemma4TextConfig", config=kwargs, architecture="Gemma4ForCausalLM"),
        dict(llama_cpp_logits_max_err=float(np.abs(llama_logits - logits).max()),
             kv_sharing_modes=config.kv_sharing_modes), records, gguf_path, logits, after=after)


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
