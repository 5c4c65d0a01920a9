"""Speculative decoding (issue 12).

The components without a model run as the engine's native test program
test_spec_decode: the speculative_config parser and its refusals, the n-gram
and suffix proposers, and the rejection sampler's output distribution
against the sampling distribution (chi-square over 60,000 draws per case at
a fixed significance). End to end, on SmolLM2: greedy output is identical
with speculation on and off for each proposer, alone, in a batch of 8 mixed
prompts, with structured output, stop strings, min/max tokens, penalties,
logprobs, logit_bias, allowed_token_ids, stop_token_ids and bad_words; seeded samples are identical too (verification draws as the
ordinary sampler does); bad configs are refused at load, naming the field;
stats count drafts and accepted tokens.

The draft model ("draft_model"): SmolLM2 Q4_0 (llama.cpp's quantizer where
llama-cpp-python is installed, else the bundled Q4_1) drafts for SmolLM2 F16
(made from the bundled GGUF by our own converter, tests/support/hf_convert.py, so
this runs without llama-cpp-python). Greedy output is identical as for the
other proposers; sampled drafts come from the draft's own distribution q, so
seeded samples differ from those without speculation and the distribution
is compared instead: token histograms at two positions over a few thousand
samples with and without speculation, by a chi-square test of homogeneity
at a fixed significance (the rule itself is tested exactly in
test_spec_decode). With a reduced drafting vocabulary (draft_vocab_size:
the draft proposes only ids below it) greedy output is still identical and
the sampled distribution still the target's, even where the target's likely
token lies outside the draft's vocabulary. Drafts that stop after a token
the draft gave less than draft_confidence_threshold (the default 0.5) and
drafts run to their length (0) both keep the output; at 1 every draft is
one token. Preemption, aborts and finished requests give the
draft's KV blocks back; a draft with another vocabulary (Gemma 3) is
refused at load.
"""

import asyncio
import math
from collections import Counter

import pytest

import hf_convert

from native_build import build_native_tests, run_program
from vllm_cpp import Engine, InvalidArgumentError, SamplingParams, StructuredOutput

PASSAGE = (
    "The lighthouse keeper climbed the spiral stairs every evening at six. He wound the clockwork, trimmed the "
    "wick and polished the great lens until it shone. Ships passing the northern reef relied on its beam, and "
    "the keeper had never once let it go dark in thirty years of service."
)
GROUNDED = f"Copy the passage exactly.\nPassage: {PASSAGE}\nCopy:"
PROMPTS = [
    GROUNDED,
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\n"
    "# The same function, rewritten with a loop:\ndef fibonacci(n):",
    "List the days of the week: Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday. Again: Monday,",
    "The capital of France is",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,",
    "Q: What is the color of the sky on a clear day?\nA:",
    f"Summarize in one sentence: {PASSAGE}\nSummary:",
]

# Speculation in every batch size (the dynamic switch's batch rule would turn
# it off for a batch of 8), so the batched tests verify drafts too.
CONFIGS = {
    "ngram": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 4,
              "disable_by_batch_size": 0},
    "suffix": {"method": "suffix", "num_speculative_tokens": 8, "disable_by_batch_size": 0},
}
DRAFT_K = 4
# A reduced drafting vocabulary that leaves out " blue" (id 4461), which the
# sampling test's prompt makes the target's likely token at every third position.
DRAFT_VOCAB = 4096
# Every method; the draft model's target is SmolLM2 F16, the others' the bundled GGUF.
METHODS = list(CONFIGS) + ["draft_model"]


def draft_config(draft_path, **extra):
    return {"method": "draft_model", "model": str(draft_path), "num_speculative_tokens": DRAFT_K,
            "disable_by_batch_size": 0, **extra}


@pytest.fixture(scope="module")
def f16_target(smollm2_path):
    """SmolLM2 F16 from the bundled GGUF, by our own converter (cached)."""
    return hf_convert.cached(hf_convert.cached(smollm2_path, "to-hf", "f16"), "to-gguf", "f16")


@pytest.fixture(scope="module")
def q4_0_draft(smollm2_path):
    """SmolLM2 Q4_0 made by llama.cpp's quantizer (cached), or the bundled
    Q4_1 where llama-cpp-python is absent (CI): a 4-bit draft either way."""
    try:
        import llama_quantize
        return str(llama_quantize.quantized(smollm2_path, "Q4_0"))
    except ImportError:
        return smollm2_path


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.mark.timeout(600)
def test_native_spec_decode_components(build):
    run_program(build, "test_spec_decode")


@pytest.fixture(scope="module")
def engines(smollm2_path, f16_target, q4_0_draft):
    """The reference engines without speculation and one per proposer."""
    loaded = {"off": Engine.load(smollm2_path, max_model_len=1024),
              "f16_off": Engine.load(f16_target, max_model_len=1024)}
    for name, config in CONFIGS.items():
        loaded[name] = Engine.load(smollm2_path, max_model_len=1024, speculative_config=config)
    loaded["draft_model"] = Engine.load(f16_target, max_model_len=1024, speculative_config=draft_config(q4_0_draft))
    # Drafts run to their length here (threshold 0); the engine above stops
    # them at the default confidence threshold: both paths are verified.
    loaded["draft_vocab"] = Engine.load(f16_target, max_model_len=1024,
                                        speculative_config=draft_config(q4_0_draft, draft_vocab_size=DRAFT_VOCAB,
                                                                        draft_confidence_threshold=0))
    yield loaded
    for engine in loaded.values():
        engine.close()


def reference(engines, method):
    """The engine without speculation that `method`'s engine must match."""
    return engines["f16_off" if method == "draft_model" else "off"]


def run_all(engine, prompts, params):
    """Every prompt submitted at once (one batch), results in order."""
    async def go():
        return await asyncio.gather(*(engine.acomplete(p, params) for p in prompts))
    return asyncio.run(go())


def spec_counts(engine):
    return engine.stats()["spec_decode"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", METHODS)
def test_greedy_alone_identical(engines, method):
    before = spec_counts(engines[method])["num_accepted_tokens"]
    for prompt in PROMPTS[:4]:
        params = SamplingParams.greedy(max_tokens=48)
        want = reference(engines, method).complete(prompt, params)
        got = engines[method].complete(prompt, params)
        assert got == want, prompt
    stats = spec_counts(engines[method])
    assert stats["method"] == method
    # The grounded prompts are copied: speculation must have paid somewhere.
    assert stats["num_accepted_tokens"] > before


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", METHODS)
def test_greedy_batch_of_8_identical(engines, method):
    params = SamplingParams.greedy(max_tokens=40)
    want = run_all(reference(engines, method), PROMPTS, params)
    got = run_all(engines[method], PROMPTS, params)
    assert [(c.text, c.token_ids, c.finish_reason) for c in got] == \
        [(c.text, c.token_ids, c.finish_reason) for c in want]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", METHODS)
def test_greedy_with_sampling_parameters_identical(engines, method):
    """Stop strings (kept in the output or not), stop token ids, min/max
    tokens, penalties, logprobs, logit_bias, allowed_token_ids and bad_words
    apply at every verified position exactly as without speculation (the biases send the copy elsewhere mid-passage, where a
    draft copying on is rejected; the allowed ids are the passage's own, so
    copying drafts stay possible)."""
    tokenize = engines["off"].tokenize
    keeper, lens = (tokenize(w, add_special_tokens=False)[0] for w in (" keeper", " lens"))
    passage_ids = sorted(set(tokenize(PASSAGE + " Monday, Tuesday", add_special_tokens=False)))
    cases = [
        SamplingParams.greedy(max_tokens=40, logit_bias={keeper: -100, lens: 3.0}),
        SamplingParams.greedy(max_tokens=40, allowed_token_ids=passage_ids),
        SamplingParams.greedy(max_tokens=60, stop_token_ids=[lens], stop=("thirty",),
                              include_stop_str_in_output=True),
        SamplingParams.greedy(max_tokens=40, bad_words=["keeper", "great lens"]),
        SamplingParams.greedy(max_tokens=60, stop=("thirty",)),
        SamplingParams.greedy(max_tokens=60, stop=("six.", "lens")),
        SamplingParams.greedy(max_tokens=7),
        SamplingParams.greedy(max_tokens=30, min_tokens=20),
        SamplingParams.greedy(max_tokens=30, repetition_penalty=1.3, frequency_penalty=0.2),
        SamplingParams.greedy(max_tokens=30, logprobs=3),
    ]
    for params in cases:
        want = run_all(reference(engines, method), [GROUNDED, PROMPTS[3]], params)
        got = run_all(engines[method], [GROUNDED, PROMPTS[3]], params)
        for g, w in zip(got, want):
            assert (g.text, g.token_ids, g.finish_reason) == (w.text, w.token_ids, w.finish_reason), params
            if params.logprobs is not None:
                assert len(g.logprobs) == len(w.logprobs) == len(g.token_ids)
                for a, b in zip(g.logprobs, w.logprobs):
                    assert a.token == b.token and math.isclose(a.logprob, b.logprob, abs_tol=1e-5)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", METHODS)
def test_greedy_structured_output_identical(engines, method):
    """The grammar advances over accepted tokens only; a draft it forbids is rejected."""
    schema = {"type": "object", "properties": {"keeper": {"type": "string", "maxLength": 40},
                                               "years": {"type": "integer"}},
              "required": ["keeper", "years"]}
    prompt = f"{PASSAGE}\nAs JSON with keys keeper and years:"
    cases = [StructuredOutput.json_schema(schema), StructuredOutput.regex(r"(Monday|Tuesday|Friday)(, [A-Z][a-z]+){3}"),
             StructuredOutput.choice(["lighthouse keeper", "ship captain"])]
    for constraint in cases:
        params = SamplingParams.greedy(max_tokens=60, structured_output=constraint)
        prompts = [prompt, PROMPTS[3], GROUNDED]
        want = run_all(reference(engines, method), prompts, params)
        got = run_all(engines[method], prompts, params)
        assert [(c.text, c.finish_reason) for c in got] == [(c.text, c.finish_reason) for c in want], constraint


@pytest.mark.timeout(600)
@pytest.mark.parametrize("method", list(CONFIGS))
def test_seeded_sampling_identical(engines, method):
    """Verification makes the ordinary draw with the request's own generator
    and accepts a draft iff the draw equals it (the standard rule for a
    point-mass proposer, see rejection_sampler.h), so every seeded sample is
    token for token the one without speculation; the distribution itself is
    tested by chi-square in test_spec_decode. The prompt repeats a list, so
    drafts are proposed and both accepted and rejected."""
    prompt = "red green blue red green blue red green blue red green blue red"
    before = spec_counts(engines[method])
    params = [SamplingParams(temperature=1.0, top_k=6, max_tokens=8, ignore_eos=True, seed=s) for s in range(200)]

    def samples(engine):
        async def go():
            return await asyncio.gather(*(engine.acomplete(prompt, p) for p in params))
        return [c.token_ids for c in asyncio.run(go())]

    assert samples(engines[method]) == samples(engines["off"])
    after = spec_counts(engines[method])
    drafted = after["num_draft_tokens"] - before["num_draft_tokens"]
    accepted = after["num_accepted_tokens"] - before["num_accepted_tokens"]
    assert 0 < accepted < drafted


@pytest.mark.parametrize("method", METHODS)
def test_prompt_logprobs_beside_verification(engines, method):
    """prompt_logprobs rows in the same steps as drafts being verified: the
    entries and the output are those without speculation."""
    params = [SamplingParams.greedy(max_tokens=24, prompt_logprobs=1), SamplingParams.greedy(max_tokens=24)]
    prompts = [PROMPTS[3], GROUNDED]

    def run(engine):
        async def go():
            return await asyncio.gather(*(engine.acomplete(p, q) for p, q in zip(prompts, params)))
        return [(c.text, c.prompt_logprobs) for c in asyncio.run(go())]

    assert run(engines[method]) == run(reference(engines, method))


def test_seeded_sampling_repeats(engines):
    params = SamplingParams(temperature=0.9, max_tokens=24, seed=7)
    for method in METHODS:
        assert engines[method].complete(GROUNDED, params) == engines[method].complete(GROUNDED, params)


def test_stats_shape(engines):
    assert engines["off"].stats()["spec_decode"] is None
    for method in METHODS:
        # A grounded prompt, so the proposers draft (the test is not left to
        # the ones before it).
        engines[method].complete(GROUNDED, SamplingParams.greedy(max_tokens=24))
        stats = spec_counts(engines[method])
        per_pos = stats["num_accepted_tokens_per_pos"]
        assert len(per_pos) == CONFIGS.get(method, {"num_speculative_tokens": DRAFT_K})["num_speculative_tokens"]
        assert sum(per_pos) == stats["num_accepted_tokens"] <= stats["num_draft_tokens"]
        assert all(a >= b for a, b in zip(per_pos, per_pos[1:]))
        assert stats["num_drafts"] >= per_pos[0]
        # What the dynamic switch measured: a lone decode's forward and a
        # draft token.
        assert stats["forward_ms"]["1"]["1"] > 0 and stats["draft_token_ms"] > 0


BAD_CONFIGS = [
    ('{"method": "ngram", "num_speculative_tokens": ', "not valid JSON"),
    ({"method": "medusa", "num_speculative_tokens": 2}, "'method'"),
    ({"method": "ngram", "num_speculative_tokens": 0}, "'num_speculative_tokens'"),
    ({"method": "ngram", "num_speculative_tokens": -1}, "'num_speculative_tokens'"),
    ({"method": "ngram", "num_speculative_tokens": 10**6}, "'num_speculative_tokens'"),
    ({"method": "ngram"}, "'num_speculative_tokens' is required"),
    ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2},
     "'prompt_lookup_min'"),
    ({"method": "draft_model", "model": "/does/not/exist.gguf", "num_speculative_tokens": 3}, "does not exist"),
    ({"method": "suffix", "suffix_decoding_min_token_prob": 2}, "'suffix_decoding_min_token_prob'"),
    ({"method": "ngram", "num_speculative_tokens": 3, "bogus": 1}, "'bogus'"),
]


@pytest.mark.parametrize("config, words", BAD_CONFIGS, ids=[w for _, w in BAD_CONFIGS])
def test_bad_configs_refused_at_load(smollm2_path, engines, config, words):
    with pytest.raises(InvalidArgumentError) as info:
        Engine.load(smollm2_path, max_model_len=256, speculative_config=config)
    assert words in str(info.value) and "speculative_config" in str(info.value)
    # Nothing leaked into the engines that are running.
    assert engines["ngram"].complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).completion_tokens


def test_server_metrics(engines):
    """/metrics carries vLLM's spec_decode counters from Engine.stats()."""
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    parser = pytest.importorskip("prometheus_client.parser")
    from server_harness import running_server

    def samples(url):
        out = {}
        for family in parser.text_string_to_metric_families(httpx.get(url + "/metrics").text):
            for sample in family.samples:
                out[(sample.name, sample.labels.get("position"))] = sample.value
        return out

    with running_server(engines["ngram"], max_model_len=1024) as url:
        before = samples(url)
        body = {"model": "smollm2", "prompt": GROUNDED, "max_tokens": 40, "temperature": 0}
        assert httpx.post(url + "/v1/completions", json=body, timeout=120).status_code == 200
        after = samples(url)
    stats = spec_counts(engines["ngram"])
    assert after[("vllm:spec_decode_num_accepted_tokens_total", None)] == stats["num_accepted_tokens"]
    assert after[("vllm:spec_decode_num_draft_tokens_total", None)] > before[("vllm:spec_decode_num_draft_tokens_total", None)]
    assert after[("vllm:spec_decode_num_drafts_total", None)] == stats["num_drafts"]
    per_pos = [after[("vllm:spec_decode_num_accepted_tokens_per_pos_total", str(i))] for i in range(4)]
    assert per_pos == stats["num_accepted_tokens_per_pos"]


@pytest.mark.timeout(600)
def test_greedy_identical_with_sliding_window_layers(gemma3_gguf):
    """Gemma 3 (five sliding-window layers in six, window 512): a prompt past
    the window, so blocks leave the sliding group while drafts are verified."""
    prompt = "Copy the text exactly.\n" + " ".join([PASSAGE] * 9) + "\nCopy: " + PASSAGE[:200]
    params = SamplingParams.greedy(max_tokens=48)
    with Engine.load(gemma3_gguf, max_model_len=2048) as off:
        want = off.complete(prompt, params)
    with Engine.load(gemma3_gguf, max_model_len=2048, speculative_config=CONFIGS["ngram"]) as on:
        assert on.complete(prompt, params) == want
        assert spec_counts(on)["num_accepted_tokens"] > 0


# --- the draft model -----------------------------------------------------------

def chi_square_homogeneity(a: Counter, b: Counter):
    """Chi-square statistic that two samples of tokens come from one
    distribution, and the upper 0.1% point for its degrees of freedom
    (Wilson-Hilferty); categories expected fewer than 5 times in either
    sample are merged."""
    na, nb = sum(a.values()), sum(b.values())
    n = na + nb
    common, rare_a, rare_b = [], 0, 0
    for token in set(a) | set(b):
        total = a[token] + b[token]
        if min(total * na, total * nb) / n < 5:
            rare_a, rare_b = rare_a + a[token], rare_b + b[token]
        else:
            common.append((a[token], b[token]))
    if rare_a + rare_b:
        common.append((rare_a, rare_b))
    stat = 0.0
    for oa, ob in common:
        total = oa + ob
        ea, eb = total * na / n, total * nb / n
        stat += (oa - ea) ** 2 / ea + (ob - eb) ** 2 / eb
    dof = len(common) - 1
    z, h = 3.090, 2.0 / (9.0 * dof)
    return stat, dof * (1.0 - h + z * math.sqrt(h)) ** 3


SAMPLING_PROMPT = "red green blue red green blue red green blue red green blue red"


def seeded_samples(engine, first_seed, n=1200):
    params = [SamplingParams(temperature=1.0, top_k=6, max_tokens=5, ignore_eos=True, seed=first_seed + s)
              for s in range(n)]

    async def go():
        return await asyncio.gather(*(engine.acomplete(SAMPLING_PROMPT, p) for p in params))
    return [c.token_ids for c in asyncio.run(go())]


@pytest.fixture(scope="module")
def samples_without_speculation(engines):
    return seeded_samples(engines["f16_off"], 10**6)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("method", ["draft_model", "draft_vocab"])
def test_draft_model_sampling_distribution(engines, samples_without_speculation, method):
    """Seeded samples with the draft model differ from those without (the
    draft draws from its own q with the request's generator), but the
    distribution must not: the 2nd and 5th tokens' histograms over 1,200
    samples each way agree by a chi-square test of homogeneity at 0.1%.
    The 2nd token is mostly " blue", outside the reduced drafting
    vocabulary: there the target's residual must supply it."""
    before = spec_counts(engines[method])
    on = seeded_samples(engines[method], 0)
    off = samples_without_speculation
    after = spec_counts(engines[method])
    drafted = after["num_draft_tokens"] - before["num_draft_tokens"]
    accepted = after["num_accepted_tokens"] - before["num_accepted_tokens"]
    assert 0 < accepted < drafted  # both branches of the rule ran
    for position in (1, 4):
        stat, critical = chi_square_homogeneity(Counter(t[position] for t in on), Counter(t[position] for t in off))
        assert stat < critical, (position, stat, critical)


@pytest.mark.timeout(300)
def test_draft_vocabulary_greedy_identical(engines):
    """Drafts from the first DRAFT_VOCAB ids only: every token the target
    picks above them is a rejected draft, and the output is still the one
    without speculation."""
    params = SamplingParams.greedy(max_tokens=40)
    before = spec_counts(engines["draft_vocab"])
    want = run_all(engines["f16_off"], PROMPTS, params)
    got = run_all(engines["draft_vocab"], PROMPTS, params)
    assert [(c.text, c.token_ids, c.finish_reason) for c in got] == \
        [(c.text, c.token_ids, c.finish_reason) for c in want]
    assert any(t >= DRAFT_VOCAB for c in want for t in c.token_ids)
    after = spec_counts(engines["draft_vocab"])
    assert 0 < after["num_accepted_tokens"] - before["num_accepted_tokens"] < \
        after["num_draft_tokens"] - before["num_draft_tokens"]


@pytest.mark.timeout(300)
def test_draft_confidence_threshold_ends_drafts(engines, f16_target, q4_0_draft):
    """At threshold 1 every draft ends after its first token (the draft
    never gives a token probability above 1), and the output is still the
    one without speculation; the default threshold (0.5) is the
    draft_model engine's in every other test here."""
    params = SamplingParams.greedy(max_tokens=40)
    want = run_all(engines["f16_off"], PROMPTS, params)
    config = draft_config(q4_0_draft, draft_confidence_threshold=1.0)
    with Engine.load(f16_target, max_model_len=1024, speculative_config=config) as on:
        got = run_all(on, PROMPTS, params)
        stats = spec_counts(on)
    assert [c.token_ids for c in got] == [c.token_ids for c in want]
    assert stats["num_drafts"] > 0
    assert stats["num_draft_tokens"] == stats["num_drafts"]


@pytest.mark.timeout(600)
def test_draft_model_preemption_and_aborts_free_its_kv(f16_target, q4_0_draft):
    """A KV cache too small for the batch preempts requests: the output is
    still the one without speculation, and once every request has finished
    or been cancelled the draft's blocks are all free again."""
    prompts = PROMPTS[1:]
    params = SamplingParams.greedy(max_tokens=48)
    options = dict(max_model_len=128, num_blocks=12, block_size=16, max_num_seqs=8)
    with Engine.load(f16_target, **options) as off:
        want = run_all(off, prompts, params)
    with Engine.load(f16_target, speculative_config=draft_config(q4_0_draft), **options) as on:
        got = run_all(on, prompts, params)
        assert [c.token_ids for c in got] == [c.token_ids for c in want]
        stats = on.stats()
        assert stats["preemptions"] > 0
        spec = stats["spec_decode"]
        assert spec["num_accepted_tokens"] > 0
        assert spec["draft_kv_blocks_free"] == spec["draft_kv_blocks_total"] > 12
        # A cancelled stream gives its draft blocks back too.
        stream = on.stream(PROMPTS[1], SamplingParams.greedy(max_tokens=100, ignore_eos=True))
        for i, _ in enumerate(stream):
            if i == 10:
                break
        stream.close()
        assert on.complete(PROMPTS[4], SamplingParams.greedy(max_tokens=4)).completion_tokens
        spec = on.stats()["spec_decode"]
        assert spec["draft_kv_blocks_free"] == spec["draft_kv_blocks_total"]


@pytest.mark.timeout(300)
def test_draft_model_from_a_hugging_face_directory(engines, f16_target, smollm2_path):
    """The draft may be a Hugging Face directory (here SmolLM2 bf16)."""
    draft_dir = hf_convert.cached(smollm2_path, "to-hf", "bf16")
    params = SamplingParams.greedy(max_tokens=32)
    with Engine.load(f16_target, max_model_len=512, speculative_config=draft_config(draft_dir)) as on:
        assert on.complete(PROMPTS[1], params) == engines["f16_off"].complete(PROMPTS[1], params)
        assert spec_counts(on)["num_accepted_tokens"] > 0


def test_draft_model_with_another_vocabulary_refused(smollm2_path, gemma3_gguf, engines):
    with pytest.raises(InvalidArgumentError) as info:
        Engine.load(smollm2_path, max_model_len=256, speculative_config=draft_config(gemma3_gguf))
    message = str(info.value)
    assert "speculative_config: 'model'" in message and str(gemma3_gguf) in message and "vocabulary" in message
    assert engines["draft_model"].complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).completion_tokens


@pytest.mark.parametrize("config, words", [
    ({"method": "draft_model", "model": "/no/such/draft.gguf", "num_speculative_tokens": 2}, "does not exist"),
    ({"method": "draft_model", "num_speculative_tokens": 2}, "'model' is required"),
    ({"method": "draft_model", "model": "."}, "'num_speculative_tokens' is required with method 'draft_model'"),
    ({"method": "draft_model", "model": ".", "num_speculative_tokens": 2, "draft_vocab_size": "all"},
     "'draft_vocab_size' must be an integer"),
    ({"method": "ngram", "num_speculative_tokens": 2, "draft_vocab_size": 1024},
     "'draft_vocab_size' applies to method 'draft_model' only"),
    ({"method": "draft_model", "model": ".", "num_speculative_tokens": 2, "draft_confidence_threshold": 2},
     "'draft_confidence_threshold' must be a number from 0.0 to 1.0"),
    ({"method": "suffix", "draft_confidence_threshold": 0.5},
     "'draft_confidence_threshold' applies to method 'draft_model' only"),
])
def test_draft_model_bad_configs_refused(smollm2_path, config, words):
    with pytest.raises(InvalidArgumentError, match=words):
        Engine.load(smollm2_path, max_model_len=256, speculative_config=config)


def test_draft_model_not_a_model_refused(smollm2_path, tmp_path):
    bogus = tmp_path / "draft.gguf"
    bogus.write_bytes(b"not a gguf file")
    with pytest.raises(Exception) as info:
        Engine.load(smollm2_path, max_model_len=256, speculative_config=draft_config(bogus))
    assert str(bogus) in str(info.value)
