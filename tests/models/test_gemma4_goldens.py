"""Gemma 4's text decoder on tiny random models (no torch here).

The models and goldens are committed under tests/golden/tiny_gemma4/ by
tests/golden/make_gemma4_goldens.py (its docstring has what each case
exercises): per case ``<case>.hf/`` (the Hugging Face directory transformers
saved, with the published Gemma 4 chat template), ``<case>.gguf`` (that
directory converted by llama.cpp's own convert_hf_to_gguf.py),
``<case>.json`` (3 prompts of random ids with transformers' 32 greedy ids and
top-2 gaps, and llama.cpp's on the GGUF) and ``<case>_logits.npy``
(transformers' float32 logits for every position of prompt 0 + its greedy
ids). Cases: gemma4-e (E2B/E4B shape: per-layer embeddings, KV-sharing
layers, double-wide MLP, soft-capped logits), gemma4-dense (31B shape: K=V
full layers with fewer KV heads).

Both forms run through model_probe with the float32 KV cache, as
test_arch_goldens.py: teacher-forced logits within its FLOAT_MAX (1e-3) /
FLOAT_MEAN (1e-4) of transformers' (the weights are the same float16 values
on both sides), and greedy ids (prefill chunks 7 and 64) equal
transformers' under the near-tie rule (greedy_rule.py); the GGUF form's
greedy ids equal llama.cpp's under the peer rule. The KV cache holds K/V for
the layers that store them only (stats()); a request's ids are the same
alone and among 8 concurrent requests; bad files are refused at load naming
the file and the key or tensor, and the process goes on loading good models;
the chat template renders as transformers renders it; the gemma4 GGUF
tokenizer and the HF tokenizer.json tokenize as transformers does.
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from greedy_rule import PEER_GAP_THRESHOLD, greedy_failures
from native_build import build_native_tests  # noqa: F401 (conftest builds it before the tests run)
from probe_fixtures import float32_kv_cache, model_probe_path  # noqa: F401 (float32_kv_cache: autouse)

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_arch_goldens import LOGITS_CHUNK, _logits, _rewritten  # noqa: E402
from test_moe_goldens import (GREEDY_CHUNKS, _drop_safetensors_tensor, _greedy,  # noqa: E402
                              assert_greedy_matches_llama_cpp, assert_matches_transformers)

TINY = GOLDEN_DIR / "tiny_gemma4"
CASES = [c for c in ("gemma4-e", "gemma4-dense") if (TINY / f"{c}.gguf").is_file()]
FORMS = {"gguf": lambda case: TINY / f"{case}.gguf", "hf": lambda case: TINY / f"{case}.hf"}


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY / f"{case}.json").read_text())


def test_goldens_present():
    if not CASES:
        pytest.skip("no Gemma 4 goldens under tests/golden/tiny_gemma4 (make_gemma4_goldens.py writes them)")
    assert all((TINY / f"{case}{suffix}").is_file() for case in CASES
               for suffix in (".json", "_logits.npy", ".hf/config.json", ".hf/chat_template.jinja"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", CASES)
def test_tiny_gemma4_matches_transformers(probe, tmp_path, case, form, record_property):
    model = FORMS[form](case)
    want = np.load(TINY / f"{case}_logits.npy")[LOGITS_CHUNK - 1:]
    assert_matches_transformers(probe, model, _golden(case), want, tmp_path / "logits.bin", f"{case} ({form})",
                                record_property)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    """The GGUF form's greedy ids against llama.cpp's on the same file, under
    the peer rule."""
    prompts = [dict(p, ref_ids=p["llama_cpp_ids"], ref_gaps=p["llama_cpp_gaps"]) for p in _golden(case)["prompts"]]
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(prompts, _greedy(probe, TINY / f"{case}.gguf", prompts, chunk), PEER_GAP_THRESHOLD)
        assert not failures, (f"chunk {chunk}", failures)


def _layer_kv_floats(case):
    """Per layer: (floats of one token's K in that layer if it stores its own
    KV, else 0; the same had it stored; whether it slides), from the
    golden's config."""
    config = _golden(case)["config"]
    shared = config.get("num_kv_shared_layers", 0)
    n = config["num_hidden_layers"]
    out = []
    for i, kind in enumerate(config["layer_types"]):
        sliding = kind == "sliding_attention"
        heads = config["num_key_value_heads"] if sliding or not config.get("attention_k_eq_v") else \
            config["num_global_key_value_heads"]
        floats = heads * (config["head_dim"] if sliding else config["global_head_dim"])
        out.append((0 if i >= n - shared else floats, floats, sliding))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_kv_cache_holds_only_storing_layers(case):
    """stats(): each KV cache group's bytes are its blocks times what its
    storing layers keep per token (K and V, each layer's own heads and head
    size, float32): a KV-sharing layer adds nothing, so with sharing layers
    the cache is smaller than if every layer stored; the total is the
    groups' sum. Generation runs over the shared caches."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    block_size = 16
    layers = _layer_kv_floats(case)
    with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=128, block_size=block_size) as engine:
        out = engine.complete([5, 6, 7, 8], vllm_cpp.SamplingParams.greedy(max_tokens=40, ignore_eos=True))
        assert out.completion_tokens == 40
        stats = engine.stats()
    groups = stats["kv_cache_groups"]
    assert stats["kv_cache_bytes"] == sum(g["bytes"] for g in groups)
    for g in groups:
        sliding = g["sliding_window"] > 0
        stored = sum(f for f, _, s in layers if s == sliding)
        if_all_stored = sum(f for _, f, s in layers if s == sliding)
        per_block = block_size * 2 * 4  # K and V, float32
        assert g["bytes"] == g["blocks_total"] * per_block * stored, (g, layers)
        if stored < if_all_stored:
            assert g["bytes"] < g["blocks_total"] * per_block * if_all_stored


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", CASES)
def test_batch_invariance(case):
    """Each of 8 requests of different lengths generates the same ids alone
    and all 8 submitted at once (prefill and decode tokens mixed, sharing
    layers reading caches other requests write beside them)."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    rng = np.random.default_rng(5)
    vocab = len(np.load(TINY / f"{case}_logits.npy")[0])
    prompts = [[int(t) for t in rng.integers(4, vocab, size=n)] for n in (3, 5, 8, 11, 13, 17, 21, 29)]
    n_new = 48
    params = vllm_cpp.SamplingParams.greedy(max_tokens=n_new, ignore_eos=True)
    with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=128) as engine:
        alone = [list(engine.complete(p, params).token_ids) for p in prompts]
        requests = [engine.submit(p, params, lambda *event: None) for p in prompts]
        together = []
        for r in requests:
            assert r.wait() is vllm_cpp.RequestOutcome.COMPLETED
            together.append(r.token_ids(0, n_new))
            r.close()
    assert together == alone


def _load_refused(path, message):
    vllm_cpp = pytest.importorskip("vllm_cpp")
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)) as refused:
        vllm_cpp.Engine.load(str(path))
    assert str(path) in str(refused.value)
    # The process is alive and loads a good model afterwards.
    with vllm_cpp.Engine.load(str(TINY / f"{CASES[0]}.gguf"), max_model_len=64) as engine:
        assert engine.complete([5, 6, 7], vllm_cpp.SamplingParams.greedy(max_tokens=2, ignore_eos=True)).completion_tokens == 2


BAD_GGUF = {
    "shared-all-layers": (dict(set_values={"gemma4.attention.shared_kv_layers": 6}),
                          "gemma4.attention.shared_kv_layers 6 is not below the layer count 6"),
    "sliding-head-wider": (dict(set_values={"gemma4.attention.key_length_swa": 1024,
                                            "gemma4.attention.value_length_swa": 1024}),
                           "unsupported sliding-layer head or RoPE dimension"),
    "swa-value-length": (dict(set_values={"gemma4.attention.value_length_swa": 64}),
                         "gemma4.attention.value_length_swa differs from gemma4.attention.key_length_swa"),
    "experts": (dict(set_values={"gemma4.expert_count": 4, "gemma4.expert_used_count": 2}),
                "Gemma 4's mixture-of-experts layers (gemma4.expert_count: the 26B-A4B model) are not supported"),
    "per-layer-table-missing": (dict(drop_tensor="per_layer_token_embd.weight"),
                                "tensor 'per_layer_token_embd.weight' is missing"),
    "per-layer-width": (dict(set_values={"gemma4.embedding_length_per_layer_input": 8}),
                        "tensor 'per_layer_token_embd.weight' has shape [96, 307], expected [48, 307]"),
    "storing-layer-keys-missing": (dict(drop_tensor="blk.2.attn_k.weight"), "tensor 'blk.2.attn_k.weight' is missing"),
    "layer-scale-wrong": (dict(drop_tensor="blk.1.layer_output_scale.weight",
                               add_tensors={"blk.1.layer_output_scale.weight": np.ones(2)}),
                          "tensor 'blk.1.layer_output_scale.weight' has 2 elements, expected 1"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_gemma4_gguf_refused_at_load(probe, tmp_path, bad):
    if "gemma4-e" not in CASES:
        pytest.skip("no gemma4-e golden")
    edits, message = BAD_GGUF[bad]
    path = _rewritten(TINY / "gemma4-e.gguf", tmp_path / f"{bad}.gguf", **edits)
    r = subprocess.run([probe, str(path), "greedy", "1", "8"], input="5 6 7\n", text=True, capture_output=True,
                       timeout=30)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    _load_refused(path, message)


BAD_CONFIG = {
    "moe": ({"enable_moe_block": True}, "config.json 'enable_moe_block' is true, which is not supported for Gemma 4"),
    "bidirectional": ({"use_bidirectional_attention": "all"},
                      "config.json 'use_bidirectional_attention' is \"all\", which is not supported"),
    "layer-types-short": ({"layer_types": ["sliding_attention", "full_attention"]},
                          "config.json 'layer_types' is not a list of num_hidden_layers layer types"),
    "rope-type": ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 1.0},
                                       "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
                  "config.json rope_parameters 'full_attention' 'rope_type' is 'yarn'"),
    "per-layer-vocab": ({"vocab_size_per_layer_input": 100},
                        "config.json 'vocab_size_per_layer_input' differs from 'vocab_size'"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_CONFIG))
def test_bad_gemma4_config_json_refused_at_load(tmp_path, bad):
    if "gemma4-e" not in CASES:
        pytest.skip("no gemma4-e golden")
    changes, message = BAD_CONFIG[bad]
    target = tmp_path / "gemma4-e.hf"
    shutil.copytree(TINY / "gemma4-e.hf", target)
    config = json.loads((target / "config.json").read_text())
    config.update(changes)
    (target / "config.json").write_text(json.dumps(config))
    _load_refused(target, message)


@pytest.mark.timeout(60)
def test_hf_per_layer_projection_missing_refused(tmp_path):
    if "gemma4-e" not in CASES:
        pytest.skip("no gemma4-e golden")
    target = tmp_path / "gemma4-e.hf"
    shutil.copytree(TINY / "gemma4-e.hf", target)
    _drop_safetensors_tensor(target / "model.safetensors", "model.layers.3.per_layer_projection.weight")
    _load_refused(target, "tensor 'blk.3.proj.weight' is missing")


def _conditional_generation_dir(source, target):
    """``source`` (a Gemma4ForCausalLM directory) as the multimodal
    checkpoints lay it out: Gemma4ForConditionalGeneration, the text settings
    under text_config, the tensors under model.language_model., plus a
    vision tower's tensor that the text decoder must not read."""
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps(dict(
        architectures=["Gemma4ForConditionalGeneration"], model_type="gemma4",
        text_config=dict(config, model_type="gemma4_text"), vision_config=dict(hidden_size=32),
        tie_word_embeddings=True)))
    path = target / "model.safetensors"
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    renamed = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
               for k, v in header.items()}
    extra = np.zeros(4, dtype=np.float16).tobytes()
    renamed["model.vision_tower.patch.weight"] = dict(dtype="F16", shape=[4], data_offsets=[len(body), len(body) + 8])
    text = json.dumps(renamed).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + body + extra)
    return target


@pytest.mark.timeout(120)
def test_conditional_generation_loads_its_text_decoder(probe, tmp_path):
    """A Gemma4ForConditionalGeneration directory: its text decoder is loaded
    (the vision tower's tensors are not read) and generates transformers'
    ids."""
    if "gemma4-e" not in CASES:
        pytest.skip("no gemma4-e golden")
    model = _conditional_generation_dir(TINY / "gemma4-e.hf", tmp_path / "gemma4-e-mm.hf")
    prompts = _golden("gemma4-e")["prompts"]
    assert not greedy_failures(prompts, _greedy(probe, model, prompts, 64), 2e-3)


def test_chat_template_renders_as_transformers():
    """The published Gemma 4 chat template (system turn, multi-turn,
    thinking, tools), rendered by the engine's renderer over the recorded
    conversations, equals transformers' text."""
    from native_build import build_native_tests as build
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "unit"))
    from test_chat_templates import engine_render

    chat = json.loads((TINY / "gemma4-e_chat.json").read_text())
    template = str(TINY / "gemma4-e.hf" / "chat_template.jinja")
    cases = []
    for c in chat["chats"]:
        kwargs = {k: c[k] for k in ("enable_thinking",) if k in c}
        cases.append(dict(template=template, bos="<bos>", eos="<eos>", messages=c["messages"], tools=c.get("tools"),
                          add_generation_prompt=bool(c.get("add_generation_prompt")), kwargs=kwargs or None))
    got = engine_render(build(), cases)
    for c, result in zip(chat["chats"], got):
        assert "error" not in c
        assert result["ok"], (c["name"], result)
        assert result["text"] == c["text"], c["name"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_tokenizer_matches_transformers(form):
    """The gemma4 GGUF vocabulary (tokenizer.ggml.model "gemma4") and the HF
    tokenizer.json give transformers' ids (recorded in the golden)."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    golden = _golden("gemma4-e")
    with vllm_cpp.Engine.load(str(FORMS[form]("gemma4-e")), max_model_len=64) as engine:
        for text, ids in golden["tokenized"]:
            assert engine.tokenize(text, add_special_tokens=True) == ids, text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_chat_requests_tokenize_as_transformers_renders(form):
    """The engine's own chat path on both forms (the GGUF carries the
    template as the converter stored it; chat_template_kwargs passed
    through): a request's prompt ids are the tokens of transformers'
    rendering, for the conversations that ask for a generation prompt (the
    chat path always does) and have no tools."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    chat = json.loads((TINY / "gemma4-e_chat.json").read_text())
    checked = 0
    with vllm_cpp.Engine.load(str(FORMS[form]("gemma4-e")), max_model_len=256) as engine:
        for c in chat["chats"]:
            if c.get("tools") or not c.get("add_generation_prompt"):
                continue
            request = {"messages": c["messages"]}
            if "enable_thinking" in c:
                request["chat_template_kwargs"] = {"enable_thinking": c["enable_thinking"]}
            assert engine.tokenize_chat(request) == engine.tokenize(c["text"], add_special_tokens=False), c["name"]
            checked += 1
    assert checked == 3


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case, ftype", [(case, ftype) for case in CASES for ftype in ("Q8_0", "Q4_K_M")])
def test_quantized_matches_llama_cpp(probe, case, ftype):
    """The GGUF quantized by llama.cpp's own quantizer (its mix of types:
    the per-layer embedding table and the projections quantized where their
    widths allow) generates llama.cpp's greedy ids on that file under the
    peer near-tie rule."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (llama_cpp) to quantize and run")
    from llama_quantize import quantized

    path = quantized(TINY / f"{case}.gguf", ftype)
    assert_greedy_matches_llama_cpp(probe, llama_cpp, path, _golden(case)["prompts"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_prefix_cache_hits_give_the_same_ids(case):
    """Requests sharing a 40-token prefix: with prefix caching (the default)
    the later ones reuse the cached blocks, which hold only the storing
    layers' K/V (the sharing layers read them there), and generate the
    same ids as with prefix caching off."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    rng = np.random.default_rng(7)
    vocab = len(np.load(TINY / f"{case}_logits.npy")[0])
    prefix = [int(t) for t in rng.integers(4, vocab, size=40)]
    prompts = [prefix + [int(t) for t in rng.integers(4, vocab, size=n)] for n in (3, 9, 1)]
    params = vllm_cpp.SamplingParams.greedy(max_tokens=24, ignore_eos=True)
    runs = {}
    for toggle in (vllm_cpp.Toggle.OFF, vllm_cpp.Toggle.ON):
        with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=128, prefix_caching=toggle) as engine:
            runs[toggle] = [list(engine.complete(p, params).token_ids) for p in prompts]
            hits = engine.stats()["prefix_cache_hits"]
        if toggle is vllm_cpp.Toggle.ON:
            assert hits > 0
    assert runs[vllm_cpp.Toggle.ON] == runs[vllm_cpp.Toggle.OFF]
