"""The memory of a mixture-of-experts model's lazily prepared experts
(engine: model/expert_preparation.*), as engine stats report it.

Each expert is copied into the kernels' layout the first time a token
routes to it; ``stats()["prepared_experts"]`` shows how many experts of all
layers are prepared, the copies' bytes, and ``max_bytes``: the most they can
take (every expert routed), the experts' bytes in the file, whose pages are
released as they are copied. On the tiny Qwen3-MoE GGUF (F16 experts, all
the same size) the bytes grow with the experts routed and never pass the
bound; a dense model reports no such field.
"""

import pathlib

import pytest

from vllm_cpp import Engine, SamplingParams

MOE_GGUF = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_moe" / "qwen3moe.gguf"
PROMPTS = [[11, 201, 57, 30, 42], [7, 7, 9, 150, 88, 1, 5], [250, 260, 270]]  # the vocabulary has 300 ids


@pytest.fixture(scope="module")
def moe_engine():
    with Engine.load(str(MOE_GGUF), max_model_len=128) as engine:
        yield engine


def prepared(engine):
    experts = engine.stats().get("prepared_experts")
    if experts is None:
        pytest.skip(f"the {engine.stats()['isa']} kernels read these experts in the file's rows: nothing is prepared")
    return experts


def test_prepared_expert_bytes_grow_with_routing_within_their_bound(moe_engine):
    before = prepared(moe_engine)
    assert before["experts"] == 0 and before["bytes"] == 0  # nothing routed yet
    per_expert = before["max_bytes"] // before["experts_total"]
    assert per_expert * before["experts_total"] == before["max_bytes"] and per_expert > 0
    seen = 0
    for ids in PROMPTS:
        moe_engine.complete(ids, SamplingParams.greedy(max_tokens=8, ignore_eos=True))
        now = prepared(moe_engine)
        assert 0 < now["experts"] <= now["experts_total"] and now["experts"] >= seen
        assert now["bytes"] == now["experts"] * per_expert <= now["max_bytes"]
        seen = now["experts"]


def test_dense_model_reports_no_prepared_experts(engine):
    assert "prepared_experts" not in engine.stats()
