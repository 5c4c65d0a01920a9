"""Mixture-of-experts architectures on tiny random models (no torch here).

The models and goldens are committed under tests/golden/tiny_moe/ by
tests/golden/make_moe_goldens.py (its docstring has what each case
exercises): per case ``<case>.hf/`` (the Hugging Face directory transformers
saved, one tensor per expert), ``<case>.gguf`` (that directory converted by
llama.cpp's own convert_hf_to_gguf.py, stacked 3-D expert tensors),
``<case>.json`` (3 prompts of random ids with transformers' 32 greedy ids and
top-2 gaps, and llama.cpp's greedy ids and gaps on the GGUF) and
``<case>_logits.npy`` (transformers' float32 logits for every position of
prompt 0 + its greedy ids). Cases: qwen3moe, qwen2moe, mixtral, olmoe,
granitemoe, gpt-oss.

gpt-oss's published config says YaRN ``truncate: false``, which transformers
honours and llama.cpp ignores (GGUF has no key for it; llama.cpp always
rounds the correction range): its HF form is checked against transformers'
``ref_*`` / ``gpt-oss_logits.npy``, its GGUF form against transformers with
truncation (``truncated_ref_*`` / ``gpt-oss_truncated_logits.npy``), both
within the same tolerance. Its MXFP4_MOE file (llama.cpp's quantizer:
experts MXFP4, attention and output Q8_0) is checked against transformers on
that file's dequantized weights (``mxfp4_ref_*``) under the near-tie rule and
against llama.cpp's greedy ids on it under the peer rule; its chat template
renders as transformers rendered it (``gpt-oss_chat.json``).

Both forms run through model_probe with the float32 KV cache, as
test_arch_goldens.py: teacher-forced logits within its FLOAT_MAX / FLOAT_MEAN of
transformers' (the weights are the same float16 values on both sides), and
greedy ids (prefill chunks 7 and 64) equal transformers' under the near-tie
rule (greedy_rule.py). The GGUF form's greedy ids also equal llama.cpp's
under the peer rule (both sides round), and so do those of the GGUF
quantized to Q8_0 and Q4_0 by llama.cpp's quantizer (skipped without
llama-cpp-python). Batch invariance: a request's ids
are the same alone and among 8 concurrent requests. Bad input (the expert
keys, tensors and config.json options) is refused at load naming the file,
key or tensor, and the process goes on loading good models.
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
from test_arch_goldens import LOGITS_CHUNK, _logits, _rewritten, assert_logits_close, assert_probe_refuses  # noqa: E402

TINY_MOE = GOLDEN_DIR / "tiny_moe"
SUPPORTED = ("qwen3moe", "qwen2moe", "mixtral", "olmoe", "granitemoe", "gpt-oss")
CASES = [c for c in SUPPORTED if (TINY_MOE / f"{c}.gguf").is_file()]
GREEDY_CHUNKS = (7, 64)
FORMS = {"gguf": lambda case: TINY_MOE / f"{case}.gguf", "hf": lambda case: TINY_MOE / f"{case}.hf"}


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY_MOE / f"{case}.json").read_text())


def _reference(case, form):
    """(transformers' logits, prompts whose ref_ids/ref_gaps are the
    reference) for ``form`` of ``case``: gpt-oss's GGUF means truncated YaRN."""
    golden = _golden(case)
    if case != "gpt-oss" or form == "hf":
        return np.load(TINY_MOE / f"{case}_logits.npy"), golden["prompts"]
    prompts = [dict(p, ref_ids=p["truncated_ref_ids"], ref_gaps=p["truncated_ref_gaps"]) for p in golden["prompts"]]
    return np.load(TINY_MOE / "gpt-oss_truncated_logits.npy"), prompts


def _greedy(probe, model, prompts, chunk):
    stdin = "".join(" ".join(map(str, p["prompt_ids"])) + "\n" for p in prompts)
    out = subprocess.run([probe, str(model), "greedy", str(len(prompts[0]["ref_ids"])), str(chunk)], input=stdin,
                         text=True, check=True, timeout=60, capture_output=True)
    return [[int(t) for t in line.split()] for line in out.stdout.strip().split("\n")]


def assert_matches_transformers(probe, model, golden, want, scratch, name, record_property):
    """``model``'s teacher-forced logits over prompt 0 and its reference ids
    against transformers' (``want``), then every prompt's greedy ids at each
    of GREEDY_CHUNKS under the near-tie rule (the golden tests of the other
    families call it too)."""
    first = golden["prompts"][0]
    got = _logits(probe, model, first["prompt_ids"] + first["ref_ids"], scratch, [])
    err = assert_logits_close(got, want, name, record_property)
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(golden["prompts"], _greedy(probe, model, golden["prompts"], chunk),
                                   2 * float(err.max()) + 1e-4)
        assert not failures, (f"chunk {chunk}", failures)


def test_goldens_present():
    if not CASES:
        pytest.skip("no MoE goldens under tests/golden/tiny_moe (make_moe_goldens.py writes them)")
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json"):
            assert (TINY_MOE / name).is_file(), name


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", CASES)
def test_tiny_moe_matches_transformers(probe, tmp_path, case, form, record_property):
    logits, prompts = _reference(case, form)
    first = _golden(case)["prompts"][0]  # every logits file is on prompt 0 + its ref_ids
    check_matches_transformers(probe, FORMS[form](case), logits, prompts, first, tmp_path, f"{case} ({form})",
                               record_property)


def check_matches_transformers(probe, model, logits, prompts, first, tmp_path, label, record_property):
    """Teacher-forced logits of ``first``'s prompt + ids within the float
    tolerance of ``logits``, and greedy ids (each of GREEDY_CHUNKS) equal the
    prompts' ref_ids under the near-tie rule at twice the logits' error."""
    got = _logits(probe, model, first["prompt_ids"] + first["ref_ids"], tmp_path / "logits.bin", [])
    err = assert_logits_close(got, logits[LOGITS_CHUNK - 1:], label, record_property)
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(prompts, _greedy(probe, model, prompts, chunk), 2 * float(err.max()) + 1e-4)
        assert not failures, (f"chunk {chunk}", failures)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    """The GGUF form's greedy ids against llama.cpp's on the same file (its
    converter's reading of the format against ours), under the peer rule."""
    check_matches_llama_cpp(probe, TINY_MOE / f"{case}.gguf", _golden(case)["prompts"])


def check_matches_llama_cpp(probe, gguf_path, prompts):
    """Greedy ids on ``gguf_path`` equal the prompts' llama_cpp_ids under the peer rule."""
    prompts = [dict(p, ref_ids=p["llama_cpp_ids"], ref_gaps=p["llama_cpp_gaps"]) for p in prompts]
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(prompts, _greedy(probe, gguf_path, prompts, chunk), PEER_GAP_THRESHOLD)
        assert not failures, (f"chunk {chunk}", failures)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", CASES[:1] + [c for c in CASES if c in ("qwen2moe", "gpt-oss")])
def test_batch_invariance_with_moe_layers(case):
    """Each of 8 requests (prompts of different lengths, so prefill and
    decode tokens mix and every expert meets other batches) generates the
    same ids alone and all 8 submitted at once. How the 8 share steps
    depends on timing; they must share some (fewer steps than one after
    another), and whatever the sharing, the ids must not change."""
    check_batch_invariance(TINY_MOE / f"{case}.gguf", len(np.load(TINY_MOE / f"{case}_logits.npy")[0]))


def check_batch_invariance(path, vocab):
    """The body of test_batch_invariance_with_moe_layers on model ``path``."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    rng = np.random.default_rng(5)
    prompts = [[int(t) for t in rng.integers(0, vocab, size=n)] for n in (3, 5, 8, 11, 13, 17, 21, 29)]
    n_new = 64
    params = vllm_cpp.SamplingParams.greedy(max_tokens=n_new, ignore_eos=True)
    with vllm_cpp.Engine.load(str(path), max_model_len=128) as engine:
        alone = [list(engine.complete(p, params).token_ids) for p in prompts]
        steps_before = engine.stats()["model_steps"]
        requests = [engine.submit(p, params, lambda *event: None) for p in prompts]
        together = []
        for r in requests:
            assert r.wait() is vllm_cpp.RequestOutcome.COMPLETED
            together.append(r.token_ids(0, n_new))
            r.close()
        steps = engine.stats()["model_steps"] - steps_before
    print(f"\n{path.name}: 8 requests of {n_new} ids in {steps} steps")
    assert steps < len(prompts) * n_new  # they shared steps
    assert together == alone


QUANTIZED = [(case, ftype) for case in SUPPORTED for ftype in ("Q8_0", "Q4_0")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case, ftype", QUANTIZED)
def test_quantized_experts_match_llama_cpp(probe, case, ftype):
    """Expert tensors in a quantized type are sliced and read as llama.cpp
    reads them: the GGUF quantized by llama.cpp's own quantizer (every
    tensor in the type where it fits; the tiny model's 64 columns take the
    32-element block types) generates llama.cpp's greedy ids on that file
    under the peer near-tie rule."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (llama_cpp) to quantize and run")
    if case not in CASES:
        pytest.skip(f"no {case} golden")
    from llama_quantize import quantized

    assert_greedy_matches_llama_cpp(probe, llama_cpp, quantized(TINY_MOE / f"{case}.gguf", ftype, pure=True),
                                    _golden(case)["prompts"])


def assert_greedy_matches_llama_cpp(probe, llama_cpp, path, prompts):
    """The engine's greedy ids on GGUF ``path`` (prefill chunks
    GREEDY_CHUNKS) equal llama.cpp's on it under the peer near-tie rule."""
    from make_reference_golden import llamacpp_greedy

    llm = llama_cpp.Llama(str(path), n_ctx=256, n_threads=2, verbose=False)
    try:
        theirs = []
        for p in prompts:
            ids, gaps = llamacpp_greedy(llm, p["prompt_ids"], len(p["ref_ids"]))
            theirs.append(dict(p, ref_ids=ids, ref_gaps=gaps))
    finally:
        llm.close()
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(theirs, _greedy(probe, path, theirs, chunk), PEER_GAP_THRESHOLD)
        assert not failures, (f"chunk {chunk}", failures)


def _gguf_bad(case, **edits):
    return case, edits


BAD_GGUF = {
    "used-above-count": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_used_count": 9}),
                         "qwen3moe.expert_used_count 9 is not between 1 and qwen3moe.expert_count 8"),
    "count-not-tensors": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_count": 4}),
                          "tensor 'blk.0.ffn_gate_inp.weight' has shape [64, 8], expected [64, 4]"),
    "expert-length-not-tensors": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_feed_forward_length": 48}),
                                  "tensor 'blk.0.ffn_gate_exps.weight' has shape [64, 32, 8], expected [64, 48, 8]"),
    "expert-tensor-wrong-shape": (_gguf_bad("qwen3moe", drop_tensor="blk.1.ffn_down_exps.weight",
                                            add_tensors={"blk.1.ffn_down_exps.weight": np.zeros((8, 32, 64))}),
                                  "tensor 'blk.1.ffn_down_exps.weight' has shape [64, 32, 8], expected [32, 64, 8]"),
    "router-missing": (_gguf_bad("qwen3moe", drop_tensor="blk.1.ffn_gate_inp.weight"),
                       "tensor 'blk.1.ffn_gate_inp.weight' (the router of a model with 8 experts) is missing"),
    "experts-missing": (_gguf_bad("qwen3moe", drop_tensor="blk.0.ffn_up_exps.weight"),
                        "tensor 'blk.0.ffn_up_exps.weight' is missing (and so are the per-expert tensors)"),
    "gating-unsupported": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_gating_func": 4}),
                           "qwen3moe.expert_gating_func 4 is not supported (supported: 1 softmax, 2 sigmoid, 3 softmax "
                           "of the picked)"),
    "grouped-routing": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_group_count": 2}),
                        "qwen3moe.expert_group_count 2 is not supported"),
    "several-shared-experts": (_gguf_bad("qwen2moe", set_values={"qwen2moe.expert_shared_count": 2}),
                               "qwen2moe.expert_shared_count 2 is not supported (several shared experts are "
                               "implemented for deepseek2 only)"),
    "used-without-count": (_gguf_bad("qwen3moe", set_values={"qwen3moe.expert_count": None}),
                           "qwen3moe.expert_used_count is 2 without an qwen3moe.expert_count"),
    "gpt-oss-sinks-missing": (_gguf_bad("gpt-oss", drop_tensor="blk.0.attn_sinks.weight"),
                              "tensor 'blk.0.attn_sinks.weight' is missing"),
    "gpt-oss-expert-bias-wrong-shape": (_gguf_bad("gpt-oss", drop_tensor="blk.1.ffn_up_exps.bias",
                                                  add_tensors={"blk.1.ffn_up_exps.bias": np.zeros((8, 16))}),
                                        "tensor 'blk.1.ffn_up_exps.bias' has shape [16, 8], expected [32, 8]"),
    "gpt-oss-down-bias-wrong-shape": (_gguf_bad("gpt-oss", drop_tensor="blk.0.ffn_down_exps.bias",
                                                add_tensors={"blk.0.ffn_down_exps.bias": np.zeros((4, 64))}),
                                      "tensor 'blk.0.ffn_down_exps.bias' has shape [64, 4], expected [64, 8]"),
    "gpt-oss-router-bias-missing": (_gguf_bad("gpt-oss", drop_tensor="blk.1.ffn_gate_inp.bias"),
                                    "tensor 'blk.1.ffn_gate_inp.bias' is missing"),
}


def _load_refused(path, message, good=TINY_MOE / "qwen3moe.gguf"):
    vllm_cpp = pytest.importorskip("vllm_cpp")
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)) as refused:
        vllm_cpp.Engine.load(str(path))
    assert str(path) in str(refused.value)
    # The process is alive and loads a good model afterwards.
    with vllm_cpp.Engine.load(str(good), max_model_len=64) as engine:
        assert engine.complete([1, 2, 3], vllm_cpp.SamplingParams.greedy(max_tokens=2, ignore_eos=True)).completion_tokens == 2


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_moe_gguf_refused_at_load(probe, tmp_path, bad):
    (case, edits), message = BAD_GGUF[bad]
    if case not in CASES:
        pytest.skip(f"no {case} golden")
    path = _rewritten(TINY_MOE / f"{case}.gguf", tmp_path / f"{bad}.gguf", **edits)
    assert_probe_refuses(probe, path, message)
    _load_refused(path, message)


def check_gguf_refused(probe, path, message, good=TINY_MOE / "qwen3moe.gguf"):
    """model_probe and the engine both refuse ``path`` with ``message``; a
    good model loads afterwards (test_mla_goldens.py's refusals too)."""
    assert_probe_refuses(probe, path, message)
    _load_refused(path, message, good)


BAD_CONFIG = {
    "sparse-step": ("qwen3moe", {"decoder_sparse_step": 2},
                    "config.json 'decoder_sparse_step' is 2, which is not supported (only 1)"),
    "dense-layers": ("qwen3moe", {"mlp_only_layers": [1]},
                     "config.json 'mlp_only_layers' is [1], which is not supported (only unset)"),
    "sliding-window": ("qwen2moe", {"use_sliding_window": True, "sliding_window": 8},
                       "config.json 'use_sliding_window' is true, which is not supported (only unset)"),
    "used-above-count": ("qwen3moe", {"num_experts_per_tok": 12},
                         "qwen3moe.expert_used_count 12 is not between 1 and qwen3moe.expert_count 8"),
    "norm-not-bool": ("qwen3moe", {"norm_topk_prob": 1}, "config.json 'norm_topk_prob' is not a boolean"),
    "gpt-oss-swiglu-limit": ("gpt-oss", {"swiglu_limit": 5.0},
                             "config.json 'swiglu_limit' is 5.0, which is not supported (only 7.0)"),
    "gpt-oss-mxfp4-checkpoint": ("gpt-oss", {"quantization_config": {"quant_method": "mxfp4"}},
                                 "config.json 'quantization_config' {\"quant_method\":\"mxfp4\"} is not supported"),
    "gpt-oss-layer-types": ("gpt-oss", {"layer_types": ["full_attention", "sliding_attention"]},
                            "config.json 'layer_types'[0] is \"full_attention\", but gpt-oss's layers alternate"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_CONFIG))
def test_bad_moe_config_json_refused_at_load(tmp_path, bad):
    case, changes, message = BAD_CONFIG[bad]
    if case not in CASES:
        pytest.skip(f"no {case} golden")
    _load_refused(edited_hf_copy(TINY_MOE / f"{case}.hf", tmp_path / f"{case}.hf", changes), message)


def edited_hf_copy(source, target, changes):
    """A copy of Hugging Face directory ``source`` at ``target`` whose
    config.json has ``changes`` applied."""
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config.update(changes)
    (target / "config.json").write_text(json.dumps(config))
    return target


def check_config_refused(hf_dir, tmp_path, changes, message, good=TINY_MOE / "qwen3moe.gguf"):
    """A copy of ``hf_dir`` whose config.json has ``changes`` is refused with ``message``."""
    _load_refused(edited_hf_copy(hf_dir, tmp_path / hf_dir.name, changes), message, good)


@pytest.mark.timeout(60)
def test_hf_expert_missing_refused(tmp_path):
    """A checkpoint with one expert's tensor missing names it."""
    if "qwen3moe" not in CASES:
        pytest.skip("no qwen3moe golden")
    gguf = pytest.importorskip("gguf")  # noqa: F841 (the safetensors writer below is numpy-only)
    target = tmp_path / "qwen3moe.hf"
    shutil.copytree(TINY_MOE / "qwen3moe.hf", target)
    _drop_safetensors_tensor(target / "model.safetensors", "model.layers.1.mlp.experts.5.up_proj.weight")
    _load_refused(target, "tensor 'blk.1.ffn_up.5.weight' is missing")


def _drop_safetensors_tensor(path, name):
    """Rewrites a safetensors file without tensor ``name`` (header and data
    offsets recomputed; the format is a length, a JSON header, the bytes)."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out, kept = bytearray(), {}
    for key, info in header.items():
        if key == "__metadata__":
            kept[key] = info
            continue
        if key == name:
            continue
        begin, end = info["data_offsets"]
        kept[key] = dict(info, data_offsets=[len(out), len(out) + end - begin])
        out += body[begin:end]
    text = json.dumps(kept).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + bytes(out))


@pytest.mark.timeout(60)
def test_hf_gpt_oss_expert_bias_missing_refused(tmp_path):
    """A gpt-oss checkpoint without one layer's gate/up bias bank is refused
    naming the tensor the loader makes of it."""
    if "gpt-oss" not in CASES:
        pytest.skip("no gpt-oss golden")
    target = tmp_path / "gpt-oss.hf"
    shutil.copytree(TINY_MOE / "gpt-oss.hf", target)
    _drop_safetensors_tensor(target / "model.safetensors", "model.layers.1.mlp.experts.gate_up_proj_bias")
    _load_refused(target, "tensor 'blk.1.ffn_gate_exps.bias' is missing")


MXFP4 = TINY_MOE / "gpt-oss-mxfp4.gguf"


@pytest.mark.timeout(120)
def test_gpt_oss_mxfp4_matches_llama_cpp_and_float_reference(probe, tmp_path, record_property):
    """gpt-oss quantized by llama.cpp's quantizer (MXFP4 experts, Q8_0
    attention and output): greedy ids equal llama.cpp's on the file under the
    peer rule, and transformers' on the file's dequantized weights under the
    near-tie rule (8-bit activations on both engines: the gaps where
    llama.cpp itself departs from that reference are 0.06-0.17)."""
    if not MXFP4.is_file():
        pytest.skip("no gpt-oss MXFP4 golden")
    golden = _golden("gpt-oss")
    to_llama = [dict(p, ref_ids=p["llama_cpp_mxfp4_ids"], ref_gaps=p["llama_cpp_mxfp4_gaps"]) for p in golden["prompts"]]
    to_float = [dict(p, ref_ids=p["mxfp4_ref_ids"], ref_gaps=p["mxfp4_ref_gaps"]) for p in golden["prompts"]]
    for chunk in GREEDY_CHUNKS:
        ours = _greedy(probe, MXFP4, golden["prompts"], chunk)
        assert not greedy_failures(to_llama, ours, PEER_GAP_THRESHOLD), ("llama.cpp", chunk, greedy_failures(
            to_llama, ours, PEER_GAP_THRESHOLD))
        assert not greedy_failures(to_float, ours), ("float reference", chunk, greedy_failures(to_float, ours))
    # Teacher-forced logits: recorded against the float reference, and no
    # further from it than llama.cpp's own on the same file.
    first = golden["prompts"][0]
    got = _logits(probe, MXFP4, first["prompt_ids"] + first["ref_ids"], tmp_path / "logits.bin", [])
    want = np.load(TINY_MOE / "gpt-oss-mxfp4_logits.npy")[LOGITS_CHUNK - 1:]
    llama = np.load(TINY_MOE / "gpt-oss-mxfp4_llama_cpp_logits.npy")[LOGITS_CHUNK - 1:]
    err = np.abs(got.reshape(want.shape) - want)
    llama_err = np.abs(llama - want)
    record_property("max_error", float(err.max()))
    print(f"\ngpt-oss mxfp4: max {err.max():.3f} mean {err.mean():.4f}; llama.cpp max {llama_err.max():.3f} "
          f"mean {llama_err.mean():.4f}")
    assert err.mean() <= llama_err.mean() * 1.5 and err.max() <= llama_err.max() * 1.5


def test_gpt_oss_chat_template_renders_as_transformers():
    """The published gpt-oss template (harmony format: tools, reasoning
    effort, thinking, builtin tools), rendered by the engine's renderer over
    transformers' 8 conversations, equals transformers' text; the
    conversation the template refuses raises its message. The template
    writes today's date (strftime_now), which stands in for the pinned one."""
    import datetime

    from native_build import build_native_tests as build
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "unit"))
    from test_chat_templates import engine_error_text, engine_render

    chat = json.loads((TINY_MOE / "gpt-oss_chat.json").read_text())
    template = str(TINY_MOE / "gpt-oss.hf" / "chat_template.jinja")
    cases = []
    for c in chat["chats"]:
        kwargs = {k: c[k] for k in ("reasoning_effort", "model_identity", "builtin_tools") if k in c}
        cases.append(dict(template=template, messages=c["messages"], tools=c.get("tools"),
                          add_generation_prompt=bool(c.get("add_generation_prompt")), kwargs=kwargs or None))
    today = datetime.datetime.now().strftime("%Y-%m-%d")
    got = engine_render(build(), cases)
    for c, result in zip(chat["chats"], got):
        if "error" in c:
            assert not result["ok"], (c["name"], result)
            assert c["error"] in engine_error_text(result["error"]), (c["name"], result["error"])
            continue
        assert result["ok"], (c["name"], result)
        text = result["text"].replace(f"Current date: {today}", f"Current date: {chat['date']}")
        assert text == c["text"], c["name"]


@pytest.mark.timeout(120)
def test_gpt_oss_chat_requests_tokenize_as_transformers_renders():
    """The engine's own chat path on gpt-oss's GGUF (its template as the
    converter stored it, chat_template_kwargs passed through): a request's
    prompt ids are the tokens of transformers' rendering (today's date in
    place of the pinned one), for the conversations that fit the tiny
    model's 256-token context. (A request with tools is refused until a
    harmony tool parser exists: issue 42.)"""
    import datetime

    vllm_cpp = pytest.importorskip("vllm_cpp")
    chat = json.loads((TINY_MOE / "gpt-oss_chat.json").read_text())
    today = datetime.datetime.now().strftime("%Y-%m-%d")
    checked = 0
    with vllm_cpp.Engine.load(str(TINY_MOE / "gpt-oss.gguf"), max_model_len=256) as engine:
        for c in chat["chats"]:
            if "error" in c or c.get("tools"):
                continue
            want = engine.tokenize(c["text"].replace(f"Current date: {chat['date']}", f"Current date: {today}"),
                                   add_special_tokens=False)
            if len(want) >= 256:
                continue
            request = {"messages": c["messages"]}
            kwargs = {k: c[k] for k in ("reasoning_effort", "model_identity", "builtin_tools") if k in c}
            if kwargs:
                request["chat_template_kwargs"] = kwargs
            assert engine.tokenize_chat(request) == want, c["name"]
            checked += 1
    assert checked >= 2
