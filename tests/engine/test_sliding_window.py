"""Sliding-window layers keep only the window's KV blocks.

A sliding-window layer's KV cache group (kv_cache_group.h) gives back the
blocks that left every future query's window, so a sequence holds about
window / block_size of them whatever its length. Checked on the tiny
models of tests/golden/tiny (gemma2: layer 0 of 2 sliding; gemma3: five
layers of six; mistral: every layer; window 8 each):

* greedy output with the window freed (blocks of 2 and 4 tokens, prefill
  chunks of 4 and 128 tokens, 120 prompt + 24 generated tokens) equals
  model_probe's, which keeps every block of every layer; the sliding pool
  is sized for one sequence's window and chunk, fewer blocks than the
  sequence's length needs, so the run itself shows blocks being given back
  mid-prompt and mid-decode;
* serving on tiny gemma3: batch invariance, batch invariance under
  preemption (every group's blocks come back), and prefix-cache hits
  longer than the window giving the output of no hit;
* an explicit num_blocks below one sequence's need is refused naming it (for
  a model whose only group is sliding: its window and chunk, not
  max_model_len), and the least that is enough serves a 200-token prompt.

Gemma 3 270M (window 512) is covered in test_gemma3.py.
"""

import pathlib
import re
import subprocess

import pytest

from native_build import build_native_tests  # noqa: F401 (conftest builds it before the tests run)
from probe_fixtures import model_probe_path

vllm_cpp = pytest.importorskip("vllm_cpp")
from vllm_cpp import Engine, RequestOutcome, SamplingParams, Toggle  # noqa: E402

pytestmark = pytest.mark.timeout(300)

TINY = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny"
WINDOW = 8
SLIDING_CASES = ["gemma2", "gemma3", "mistral"]


def letters(n, seed):
    """n upper-case letters: one token each in the tiny vocabulary (no merge applies)."""
    return "".join(chr(65 + (i * 7 + seed * 11 + i * i * seed) % 26) for i in range(n))


def greedy(n):
    return SamplingParams.greedy(max_tokens=n, ignore_eos=True)


def groups_by_kind(stats):
    return {g["kind"]: g for g in stats["kv_cache_groups"]}


def probe_greedy(case, ids, n):
    out = subprocess.run([model_probe_path(), str(TINY / f"{case}.gguf"), "greedy", str(n), "64"],
                         input=" ".join(map(str, ids)) + "\n", text=True, check=True, timeout=120,
                         capture_output=True)
    return [int(t) for t in out.stdout.split()]


@pytest.mark.parametrize("chunk", [4, 128])
@pytest.mark.parametrize("block_size", [2, 4])
@pytest.mark.parametrize("case", SLIDING_CASES)
def test_freed_window_gives_the_output_of_a_full_cache(case, block_size, chunk):
    ids = list(letters(120, 1).encode())
    want = probe_greedy(case, ids, 24)
    with Engine.load(str(TINY / f"{case}.gguf"), max_model_len=256, block_size=block_size,
                     max_num_batched_tokens=chunk, max_num_seqs=1) as eng:
        got = eng.complete(ids, greedy(24))
        stats = eng.stats()
    assert list(got.token_ids) == want
    sliding = groups_by_kind(stats)["sliding_window"]
    per_sequence = -(-(WINDOW - 1 + chunk) // block_size) + 1
    # Fewer blocks than the 144 tokens need: the run had to give blocks back.
    assert sliding["blocks_total"] == per_sequence < -(-144 // block_size)
    assert sliding["sliding_window"] == WINDOW and sliding["blocks_used"] == 0
    assert stats["kv_cache_bytes"] == sum(g["bytes"] for g in stats["kv_cache_groups"])
    assert stats["kv_cache_groups"][0]["kind"] == ("sliding_window" if case == "mistral" else "full_attention")


def test_models_without_sliding_layers_have_one_group():
    with Engine.load(str(TINY / "gemma.gguf"), max_model_len=256, num_blocks=64, block_size=4) as eng:
        stats = eng.stats()
    (group,) = stats["kv_cache_groups"]
    assert group["kind"] == "full_attention" and group["blocks_total"] == stats["kv_blocks_total"] == 64
    assert group["bytes"] == stats["kv_cache_bytes"]


PROMPTS = [letters(n, seed) for seed, n in enumerate([20, 45, 70, 90, 33, 60, 110, 15], start=2)]


@pytest.fixture(scope="module")
def gemma3_engine():
    with Engine.load(str(TINY / "gemma3.gguf"), max_model_len=256, block_size=4, max_num_seqs=8,
                     max_num_batched_tokens=64) as eng:
        yield eng


def run_batched(eng, prompts, n):
    """All prompts submitted at once; their texts (callbacks run on native threads)."""
    deltas = [[] for _ in prompts]
    reqs = [eng.submit(p, greedy(n), lambda event, out=out: out.append(event.delta)) for p, out in zip(prompts, deltas)]
    for r in reqs:
        assert r.wait() is RequestOutcome.COMPLETED
        r.close()
    return ["".join(d) for d in deltas]


def test_batch_invariance_with_sliding_groups(gemma3_engine):
    alone = [gemma3_engine.complete(p, greedy(32)).text for p in PROMPTS]
    assert run_batched(gemma3_engine, PROMPTS, 32) == alone
    for group in gemma3_engine.stats()["kv_cache_groups"]:
        assert group["blocks_used"] == 0


def test_batch_invariance_under_preemption_with_sliding_groups():
    # The full group holds one max_model_len sequence (64 blocks of 4); the
    # 8 requests need about twice that together.
    with Engine.load(str(TINY / "gemma3.gguf"), max_model_len=256, block_size=4, num_blocks=64, max_num_seqs=8,
                     max_num_batched_tokens=64) as eng:
        alone = [eng.complete(p, greedy(40)).text for p in PROMPTS]
        assert eng.stats()["preemptions"] == 0
        assert run_batched(eng, PROMPTS, 40) == alone
        stats = eng.stats()
    assert stats["preemptions"] > 0
    for group in stats["kv_cache_groups"]:
        assert group["blocks_used"] == 0


def test_prefix_cache_hit_longer_than_the_window(gemma3_engine):
    prompt = letters(150, 9)
    with Engine.load(str(TINY / "gemma3.gguf"), max_model_len=256, block_size=4,
                     prefix_caching=Toggle.OFF) as no_cache:
        want = no_cache.complete(prompt, greedy(24))
        want_longer = no_cache.complete(prompt + "QQ", greedy(24))
    first = gemma3_engine.complete(prompt, greedy(24))
    before = gemma3_engine.stats()
    second = gemma3_engine.complete(prompt, greedy(24))
    longer = gemma3_engine.complete(prompt + "QQ", greedy(24))
    after = gemma3_engine.stats()
    assert first == second == want and longer == want_longer
    # Both repeats hit every full block before their last token: far more than the window.
    hits = after["prefix_cache_hits"] - before["prefix_cache_hits"]
    assert hits == (149 // 4) * 4 + (151 // 4) * 4
    assert hits > 2 * WINDOW


@pytest.mark.parametrize("case, enough, message", [
    # Mistral's only group is sliding: with chunks of 16 one sequence needs
    # ceil((7 + 16) / 4) + 1 = 7 blocks, not max_model_len's 64.
    ("mistral", 7, "holds fewer tokens than one sequence's sliding window and chunk need (7 blocks)"),
    ("gemma3", 64, "holds fewer tokens than max_model_len 256"),
])
def test_too_few_blocks_are_refused_and_name_the_need(case, enough, message):
    options = dict(max_model_len=256, block_size=4, max_num_batched_tokens=16)
    with pytest.raises(vllm_cpp.InvalidArgumentError, match=re.escape(message)):
        Engine.load(str(TINY / f"{case}.gguf"), num_blocks=enough - 1, **options)
    # The refusal leaves nothing behind, and the least that is enough serves a long prompt.
    with Engine.load(str(TINY / f"{case}.gguf"), num_blocks=enough, **options) as eng:
        assert eng.complete(letters(200, 3), greedy(8)).completion_tokens == 8
        assert eng.stats()["kv_blocks_total"] == enough
