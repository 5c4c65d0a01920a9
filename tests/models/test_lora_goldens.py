"""LoRA adapters against transformers + peft on tiny random models (no torch here).

tests/golden/make_lora_goldens.py (its docstring has what each case
exercises) commits per case ``<case>.hf/`` (the base model), ``<case>.gguf``
(that directory converted by llama.cpp's convert_hf_to_gguf.py),
``<case>.lora/`` (a PEFT adapter saved by the ``peft`` package, non-zero B),
``<case>.json`` (3 prompts of random ids with the PEFT model's 32 greedy ids
and top-2 gaps, and the base model's greedy ids) and ``<case>_logits.npy``
(the PEFT model's float32 logits at every position of prompt 0 + its ids).
Cases: llama (every projection, F32 adapter, q/k rows permuted on the GGUF
base), qwen3 (rsLoRA, BF16 adapter, some projections), phi3 (fused qkv and
gate_up modules, F16 adapter), qwen3moe (attention and every expert through
PEFT's target_parameters), qwen35 (Qwen3.5's hybrid: its gated
full-attention layers and every MLP; HF base only) and qwen35moe (its
attention, shared expert and routed experts; HF base only). ``<case>-lora.gguf``: the adapter converted
by llama.cpp's convert_lora_to_gguf.py, with llama.cpp's greedy ids on the
GGUF base with it (``llama_cpp_lora_ids``; llama and qwen3).

Both base forms run through the Python engine with the float32 KV cache and
the adapter registered (enable_lora): the teacher-forced log-probabilities
of prompt 0 + its ids (prompt_logprobs: each position's token and its 20
most likely alternatives) within ``LOGPROB_MAX`` of log_softmax of
transformers' logits (the weights are the same float16 values on both
sides; the adapter's product runs in float32 beside the base matmul), and
every prompt's greedy ids equal transformers' under the near-tie rule
(greedy_rule.py); the base model's ids (no adapter, same engine) stay the
base model's.
"""

import json
import pathlib

import numpy as np
import pytest

from greedy_rule import greedy_failures

vllm_cpp = pytest.importorskip("vllm_cpp")

TINY_LORA = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_lora"
CASES = [c for c in ("llama", "qwen3", "phi3", "qwen3moe", "qwen35", "qwen35moe") if (TINY_LORA / f"{c}.json").is_file()]
FORMS = ("hf", "gguf")
#: Largest log-probability difference allowed (test_arch_goldens' FLOAT_MAX
#: for logits; a log-probability adds the log-sum-exp's own rounding).
LOGPROB_MAX = 2e-3


def _golden(case):
    return json.loads((TINY_LORA / f"{case}.json").read_text())


def _engine(case, form):
    return vllm_cpp.Engine.load(str(TINY_LORA / f"{case}.{form}"), enable_lora=True, kv_cache_dtype="float32",
                                max_model_len=128)


def _lora(case):
    return vllm_cpp.LoRARequest(case, 1, str(TINY_LORA / f"{case}.lora"))


def test_goldens_present():
    if not CASES:
        pytest.skip("no LoRA goldens under tests/golden/tiny_lora (make_lora_goldens.py writes them)")
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json", f"{case}.gguf",
                     f"{case}.lora/adapter_config.json", f"{case}.lora/adapter_model.safetensors"):
            assert (TINY_LORA / name).is_file(), name


def _log_softmax(rows):
    rows = rows.astype(np.float64)
    top = rows.max(axis=-1, keepdims=True)
    return rows - top - np.log(np.exp(rows - top).sum(axis=-1, keepdims=True))


def _case_forms():
    """(case, form) pairs: each case's recorded ``forms`` (the hybrids' GGUF
    is another model than their checkpoint, so HF only), else both."""
    return [(c, f) for c in CASES for f in _golden(c).get("forms", FORMS)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case, form", _case_forms())
def test_adapter_matches_transformers(case, form):
    golden = _golden(case)
    want = _log_softmax(np.load(TINY_LORA / f"{case}_logits.npy"))
    greedy = vllm_cpp.SamplingParams.greedy(max_tokens=len(golden["prompts"][0]["ref_ids"]), ignore_eos=True)
    with _engine(case, form) as engine:
        first = golden["prompts"][0]
        forced = first["prompt_ids"] + first["ref_ids"]
        scored = engine.complete(forced, vllm_cpp.SamplingParams.greedy(max_tokens=1, prompt_logprobs=20),
                                 lora_request=_lora(case))
        err = 0.0
        for position, entry in enumerate(scored.prompt_logprobs[1:], start=1):
            row = want[position - 1]  # the logits before token `position`
            for alt in (entry,) + tuple(entry.top_logprobs):
                err = max(err, abs(alt.logprob - row[alt.token_id]))
        assert err <= LOGPROB_MAX, f"{case} ({form}): teacher-forced log-probabilities differ by {err:.3g}"
        print(f"\n{case} ({form}): max log-probability error {err:.2e}")
        ours = [list(engine.complete(p["prompt_ids"], greedy, lora_request=_lora(case)).token_ids)
                for p in golden["prompts"]]
        failures = greedy_failures(golden["prompts"], ours, 2 * err + 1e-4)
        assert not failures, failures
        # The same engine without the adapter: the base model's ids.
        base = [list(engine.complete(p["prompt_ids"], greedy).token_ids) for p in golden["prompts"]]
        assert base == [p["base_ids"] for p in golden["prompts"]]
        assert ours != base
        assert engine.stats()["lora"]["registered"] == 1


#: Cases with llama.cpp's LoRA GGUF and llama.cpp's ids with it (phi3's tiny
#: GGUF does not load in llama.cpp, so it has none).
GGUF_LORA_CASES = [c for c in CASES if "llama_cpp_lora_ids" in _golden(c)["prompts"][0]]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", GGUF_LORA_CASES)
def test_llama_cpp_lora_gguf_matches_llama_cpp(case):
    """llama.cpp's convert_lora_to_gguf.py output on the GGUF base: greedy ids
    equal llama.cpp's with the same adapter (peer rule: both round), and for
    llama (no rsLoRA) transformers' too. The converter drops use_rslora
    (llama.cpp scales by alpha / r), so qwen3's file means another scale than
    its PEFT directory: llama.cpp is its reference."""
    from greedy_rule import PEER_GAP_THRESHOLD

    golden = _golden(case)
    greedy = vllm_cpp.SamplingParams.greedy(max_tokens=len(golden["prompts"][0]["ref_ids"]), ignore_eos=True)
    lora = vllm_cpp.LoRARequest(f"{case}-gguf", 2, str(TINY_LORA / f"{case}-lora.gguf"))
    with _engine(case, "gguf") as engine:
        ours = [list(engine.complete(p["prompt_ids"], greedy, lora_request=lora).token_ids) for p in golden["prompts"]]
    peers = [dict(p, ref_ids=p["llama_cpp_lora_ids"], ref_gaps=p["llama_cpp_lora_gaps"]) for p in golden["prompts"]]
    assert not greedy_failures(peers, ours, PEER_GAP_THRESHOLD)
    assert all(o != p["base_ids"] for o, p in zip(ours, golden["prompts"]))  # the adapter ran
    if not golden["lora"]["use_rslora"]:
        assert not greedy_failures(golden["prompts"], ours, PEER_GAP_THRESHOLD)
