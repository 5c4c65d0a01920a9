"""Qwen3.5 hybrids (qwen35, qwen35moe) on tiny random models (no torch here).

The models and goldens are committed under tests/golden/tiny_hybrid/ by
tests/golden/make_hybrid_goldens.py (its docstring has the shapes: 4 layers,
Gated DeltaNet linear attention and gated full attention alternating, 2 key
heads and 4 value heads in the linear layers so the GGUF's value heads are
reordered by llama.cpp's converter): per case ``<case>.hf/`` (transformers'
directory), ``<case>.gguf`` (llama.cpp's convert_hf_to_gguf.py of it),
``<case>.json`` (3 prompts, transformers' and llama.cpp's 32 greedy ids and
gaps) and ``<case>_logits.npy`` (transformers' float32 logits for every
position of prompt 0 + its greedy ids); the GGUF form is checked against
``gguf_ref_*`` / ``<case>_gguf_logits.npy``, transformers on the values the
file holds (llama.cpp's converter rounds -exp(A_log) and the norms' 1 + w to
float16).

Shown here, on both forms through model_probe with the float32 KV cache
(test_arch_goldens.py's rules):

* teacher-forced logits within FLOAT_MAX / FLOAT_MEAN of transformers' (the
  first LOGITS_CHUNK ids one chunked-prefill step, then one decode step per
  id: the recurrent delta rule), and greedy ids equal transformers' under
  the near-tie rule with prefill chunks of 1, 5, 7 and 64;
* chunked prefill: a 150-id sequence's logits at every position, its
  prefill cut into chunks of 1 (the recurrent form throughout), 5, 37, 64 and
  150 (one step; the chunked form over three of its 64-token chunks), agree
  within 1e-4 (the state carried from chunk to chunk);
* the GGUF form's greedy ids equal llama.cpp's under the peer rule.

Through the engine: each of 8 mixed requests gets the same ids alone and
batched; preemption (a KV budget too small for all 8) resumes with the same
ids; prefix caching is off for these models (stats) and asking for it,
speculative decoding or KV transfer is refused by name; a run that would
serve a stale state from a shared prefix (the same prompt head twice, then
another tail) gives what a fresh engine gives; the recurrent-state group is
in stats() with its bytes. Bad files (a layer pattern that does not match the
tensors, a missing state tensor or key, a bad layer_types) are refused at
load naming the file and the problem, and the process goes on.
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
import test_moe_goldens  # noqa: E402
from test_arch_goldens import LOGITS_CHUNK, _logits, _rewritten, assert_logits_close  # noqa: E402
from test_moe_goldens import _greedy  # noqa: E402

TINY = GOLDEN_DIR / "tiny_hybrid"
SUPPORTED = ("qwen35", "qwen35moe")
CASES = [c for c in SUPPORTED if (TINY / f"{c}.gguf").is_file()]
GREEDY_CHUNKS = (1, 5, 7, 64)
FORMS = {"gguf": lambda case: TINY / f"{case}.gguf", "hf": lambda case: TINY / f"{case}.hf"}
CHUNKED_PREFILL_SIZES = (1, 5, 37, 64, 150)


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY / f"{case}.json").read_text())


def _reference(case, form):
    """(transformers' logits, prompts whose ref_ids/ref_gaps are the
    reference) for ``form``: the GGUF's is transformers on the file's
    float16-rounded decay factors and norm weights (make_hybrid_goldens.py, step 4)."""
    golden = _golden(case)["prompts"]
    if form == "hf":
        return np.load(TINY / f"{case}_logits.npy"), golden
    prompts = [dict(p, ref_ids=p["gguf_ref_ids"], ref_gaps=p["gguf_ref_gaps"]) for p in golden]
    return np.load(TINY / f"{case}_gguf_logits.npy"), prompts


def test_goldens_present():
    assert CASES == list(SUPPORTED)
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json"):
            assert (TINY / name).is_file(), name


@pytest.mark.timeout(180)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", CASES)
def test_tiny_hybrid_matches_transformers(probe, tmp_path, case, form, record_property):
    model = FORMS[form](case)
    logits, prompts = _reference(case, form)
    first = prompts[0]
    got = _logits(probe, model, first["prompt_ids"] + first["ref_ids"], tmp_path / "logits.bin", [])
    err = assert_logits_close(got, logits[LOGITS_CHUNK - 1:], f"{case} ({form})", record_property)
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(prompts, _greedy(probe, model, prompts, chunk), 2 * float(err.max()) + 1e-4)
        assert not failures, (f"chunk {chunk}", failures)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", CASES)
def test_chunked_prefill_equals_one_shot(probe, tmp_path, case):
    """Every position's logits of a 150-id run, prefilled in chunks of 1 to
    150 ids: the delta rule's chunked and recurrent forms and the conv and
    delta-rule states carried between chunks give the same logits."""
    vocab = np.load(TINY / f"{case}_logits.npy").shape[1]
    ids = [int(t) for t in np.random.default_rng(7).integers(0, vocab - 1, 150)]
    runs = {}
    for chunk in CHUNKED_PREFILL_SIZES:
        out = tmp_path / f"{chunk}.bin"
        subprocess.run([probe, str(TINY / f"{case}.gguf"), "prefill_logits", str(out), str(chunk)],
                       input=" ".join(map(str, ids)) + "\n", text=True, check=True, timeout=60, capture_output=True)
        runs[chunk] = np.fromfile(out, dtype=np.float32).reshape(len(ids), vocab)
    one_shot = runs[150]
    for chunk, logits in runs.items():
        err = float(np.abs(logits - one_shot).max())
        print(f"\n{case}: chunks of {chunk}: max {err:.2e} from one-shot")
        assert err <= 1e-4, (chunk, err)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    prompts = [dict(p, ref_ids=p["llama_cpp_ids"], ref_gaps=p["llama_cpp_gaps"]) for p in _golden(case)["prompts"]]
    for chunk in (7, 64):
        failures = greedy_failures(prompts, _greedy(probe, TINY / f"{case}.gguf", prompts, chunk), PEER_GAP_THRESHOLD)
        assert not failures, (f"chunk {chunk}", failures)


def _prompts(case, seed=5):
    vocab = np.load(TINY / f"{case}_logits.npy").shape[1]
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(0, vocab - 1, size=n)] for n in (3, 5, 8, 11, 13, 17, 21, 29)]


def _batched(vllm_cpp, engine, prompts, params, n_new):
    requests = [engine.submit(p, params, lambda *event: None) for p in prompts]
    out = []
    for r in requests:
        assert r.wait() is vllm_cpp.RequestOutcome.COMPLETED
        out.append(r.token_ids(0, n_new))
        r.close()
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", CASES)
def test_batch_invariance_and_preemption(case):
    """Each of 8 requests (different lengths: prefill and decode mix, each
    with its own state slot) gets the same ids alone and all 8 at once; and
    again on an engine whose KV blocks force preemptions, which resume by
    recomputing from the prompt with a fresh state."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    prompts, n_new = _prompts(case), 48
    params = vllm_cpp.SamplingParams.greedy(max_tokens=n_new, ignore_eos=True)
    with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=128) as engine:
        alone = [list(engine.complete(p, params).token_ids) for p in prompts]
        steps_before = engine.stats()["model_steps"]
        together = _batched(vllm_cpp, engine, prompts, params, n_new)
        stats = engine.stats()
        assert stats["model_steps"] - steps_before < len(prompts) * n_new  # they shared steps
        assert stats["preemptions"] == 0
    assert together == alone
    # 8 requests of up to 77 tokens need ~28 blocks of 16; 10 force preemptions.
    with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=128, num_blocks=10, block_size=16,
                              max_num_seqs=8) as engine:
        squeezed = _batched(vllm_cpp, engine, prompts, params, n_new)
        stats = engine.stats()
        assert stats["preemptions"] > 0
        assert stats["running_requests"] == 0 and all(g["blocks_used"] == 0 for g in stats["kv_cache_groups"])
    assert squeezed == alone


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_recurrent_state_group_in_stats(case):
    vllm_cpp = pytest.importorskip("vllm_cpp")
    config = json.loads((TINY / f"{case}.hf/config.json").read_text())
    linear = config["layer_types"].count("linear_attention")
    channels = (2 * config["linear_num_key_heads"] + config["linear_num_value_heads"]) * config["linear_key_head_dim"]
    state_floats = (config["linear_conv_kernel_dim"] - 1) * channels + \
        config["linear_num_value_heads"] * config["linear_key_head_dim"] * config["linear_value_head_dim"]
    with vllm_cpp.Engine.load(str(TINY / f"{case}.gguf"), max_model_len=64, max_num_seqs=3) as engine:
        stats = engine.stats()
        groups = {g["kind"]: g for g in stats["kv_cache_groups"]}
        assert set(groups) == {"full_attention", "recurrent_state"}
        states = groups["recurrent_state"]
        assert states["num_layers"] == linear and states["blocks_total"] == 3
        assert states["bytes"] == 3 * linear * state_floats * 4
        # The linear layers keep no K/V: the cache is the full layers' K/V and the states.
        assert stats["kv_cache_bytes"] == groups["full_attention"]["bytes"] + states["bytes"]
        assert stats["prefix_caching"] is False
        request = engine.submit([1, 2, 3, 4], vllm_cpp.SamplingParams.greedy(max_tokens=40, ignore_eos=True),
                                lambda *event: None)
        request.wait()
        request.close()
        assert {g["kind"]: g["blocks_used"] for g in engine.stats()["kv_cache_groups"]}["recurrent_state"] == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_shared_prefixes_never_serve_a_stale_state(case):
    """The same 40-id head under three tails, one after another on one
    engine (where a prefix cache would hit), gives each what a fresh engine
    gives it: no state of an earlier request leaks into a later one."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    rng = np.random.default_rng(11)
    head = [int(t) for t in rng.integers(0, 290, 40)]
    prompts = [head + [int(t) for t in rng.integers(0, 290, n)] for n in (1, 9, 20)] + [head]
    params = vllm_cpp.SamplingParams.greedy(max_tokens=16, ignore_eos=True)
    path = str(TINY / f"{case}.gguf")
    fresh = []
    for p in prompts:
        with vllm_cpp.Engine.load(path, max_model_len=128) as engine:
            fresh.append(list(engine.complete(p, params).token_ids))
    with vllm_cpp.Engine.load(path, max_model_len=128) as engine:
        shared = [list(engine.complete(p, params).token_ids) for p in prompts]
        assert engine.stats()["prefix_cache_hits"] == 0
    assert shared == fresh


REFUSED_OPTIONS = {
    "prefix-caching": (dict(prefix_caching=1), "enable_prefix_caching: not supported for {arch} models"),
    "speculative": (dict(speculative_config={"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}),
                    "speculative_config: not supported for {arch} models"),
    "kv-transfer": (dict(kv_transfer_config={"kv_connector": "SharedStorageConnector", "kv_role": "kv_producer",
                                             "kv_connector_extra_config": {"shared_storage_path": "{tmp}"}}),
                    "kv_transfer_config: not supported for {arch} models"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("option", sorted(REFUSED_OPTIONS))
def test_unsupported_options_refused_by_name(tmp_path, option):
    vllm_cpp = pytest.importorskip("vllm_cpp")
    options, message = REFUSED_OPTIONS[option]
    options = json.loads(json.dumps(options).replace("{tmp}", str(tmp_path)))
    with pytest.raises(vllm_cpp.VllmError, match=re.escape(message.format(arch="qwen35"))):
        vllm_cpp.Engine.load(str(TINY / "qwen35.gguf"), max_model_len=64, **options)
    with vllm_cpp.Engine.load(str(TINY / "qwen35.gguf"), max_model_len=64) as engine:
        assert engine.complete([1, 2, 3], vllm_cpp.SamplingParams.greedy(max_tokens=2, ignore_eos=True)).completion_tokens == 2


BAD_GGUF = {
    "pattern-not-tensors": (dict(set_values={"qwen35.attention.recurrent_layers": None,
                                             "qwen35.full_attention_interval": 4}),
                            "tensor 'blk.1.attn_qkv.weight' (a linear-attention layer by the metadata's layer "
                            "pattern, attention.recurrent_layers) is missing"),
    "pattern-not-tensors-full": (dict(set_values={"qwen35.attention.recurrent_layers": None,
                                                  "qwen35.full_attention_interval": 1}),
                                 "the layer pattern has no linear-attention layer"),
    "state-tensor-missing": (dict(drop_tensor="blk.2.ssm_a"),
                             "tensor 'blk.2.ssm_a' (a linear-attention layer by the metadata's layer pattern, "
                             "attention.recurrent_layers) is missing"),
    "conv-tensor-wrong-size": (dict(drop_tensor="blk.0.ssm_conv1d.weight",
                                    add_tensors={"blk.0.ssm_conv1d.weight": np.zeros((128, 3))}),
                               "tensor 'blk.0.ssm_conv1d.weight' has 384 elements, expected 512"),
    "conv-kernel-missing": (dict(set_values={"qwen35.ssm.conv_kernel": None}),
                            "qwen35.ssm.conv_kernel is missing (the linear-attention layers' shape)"),
    "value-heads-not-multiple": (dict(set_values={"qwen35.ssm.time_step_rank": 3}),
                                 "qwen35.ssm.time_step_rank 3 (value heads) is not a multiple of qwen35.ssm.group_count 2"),
}


def _load_refused(path, message):
    test_moe_goldens._load_refused(path, message, good=TINY / "qwen35.gguf")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_hybrid_gguf_refused_at_load(probe, tmp_path, bad):
    edits, message = BAD_GGUF[bad]
    test_moe_goldens.check_gguf_refused(probe, _rewritten(TINY / "qwen35.gguf", tmp_path / f"{bad}.gguf", **edits),
                                        message, good=TINY / "qwen35.gguf")


BAD_CONFIG = {
    "layer-type-unknown": ({"layer_types": ["linear_attention", "full_attention", "sliding_attention", "full_attention"]},
                           "config.json 'layer_types'[2] is \"sliding_attention\" (expected \"linear_attention\" or "
                           "\"full_attention\")"),
    "layer-types-not-tensors": ({"layer_types": ["full_attention", "linear_attention", "linear_attention",
                                                 "full_attention"]},
                                "tensor 'blk.0.attn_q.weight' (a full-attention layer by the metadata's layer "
                                "pattern, attention.recurrent_layers) is missing"),
    "value-head-dim": ({"linear_value_head_dim": 0}, "config.json 'linear_value_head_dim' is not a positive integer"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_CONFIG))
def test_bad_hybrid_config_json_refused_at_load(tmp_path, bad):
    changes, message = BAD_CONFIG[bad]
    target = tmp_path / "qwen35.hf"
    shutil.copytree(TINY / "qwen35.hf", target)
    config = json.loads((target / "config.json").read_text())
    config.update(changes)
    (target / "config.json").write_text(json.dumps(config))
    _load_refused(target, message)
