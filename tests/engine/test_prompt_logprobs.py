"""vLLM's prompt_logprobs on SmolLM2: each prompt token's log-probability
given the tokens before it, with its most likely alternatives, exactly what
a decode of that prefix reports for its next token (prefill rows and decode
rows give the same bits); across the bounded chunks such a request's
prefill is cut into, past the prefix cache (every position is computed, the
cache still filled for others), through LLM.generate; refused by name
where it cannot apply."""

import pytest

from vllm_cpp import LLM, Engine, InvalidArgumentError, InvalidConfigurationError, SamplingParams

pytestmark = pytest.mark.timeout(300)

PROMPT = "The capital of France is Paris. The capital of Germany is"


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=1024) as eng:
        yield eng


def next_token_logprobs(engine, prefix_ids, token):
    """What decoding after ``prefix_ids`` reports: {token id: logprob} of
    ``token`` (made the one choice by allowed_token_ids: reported logprobs
    are the raw model's) and of the 20 most likely next tokens."""
    params = SamplingParams.greedy(max_tokens=1, logprobs=20, allowed_token_ids=[token])
    entry = engine.complete(prefix_ids, params).logprobs[0]
    found = {alt.token_id: alt.logprob for alt in entry.top_logprobs}
    found[entry.token_id] = entry.logprob
    return found


def test_entries_equal_what_decoding_reports(engine):
    ids = engine.tokenize(PROMPT)
    completion = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, prompt_logprobs=3))
    entries = completion.prompt_logprobs
    assert len(entries) == len(ids) and entries[0] is None
    assert [e.token_id for e in entries[1:]] == ids[1:]
    for k in range(1, len(ids)):
        expected = next_token_logprobs(engine, ids[:k], ids[k])
        assert entries[k].logprob == expected[ids[k]]
        assert len(entries[k].top_logprobs) == 3
        for alt in entries[k].top_logprobs:
            assert alt.logprob == expected[alt.token_id]
    # The output is what it is without them.
    assert completion.text == engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2)).text


def test_long_prompts_in_chunks_and_past_the_prefix_cache(engine):
    """A 700-token prompt: SmolLM2's 49,152-token rows make chunks of 341
    positions; the same prompt again finds its blocks cached but computes
    every position anyway, with the same entries; a plain request then
    reuses what the first one cached."""
    text = " ".join("word%d" % (i % 97) for i in range(330))
    ids = engine.tokenize(text)
    assert 650 < len(ids) < 1000
    params = SamplingParams.greedy(max_tokens=1, prompt_logprobs=0)
    first = engine.complete(text, params).prompt_logprobs
    hits = engine.stats()["prefix_cache_hits"]
    again = engine.complete(text, params).prompt_logprobs
    assert engine.stats()["prefix_cache_hits"] == hits
    assert len(first) == len(ids) and first == again
    for k in (340, 341, 342, 682, len(ids) - 1):
        assert first[k].logprob == next_token_logprobs(engine, ids[:k], ids[k])[ids[k]]
    engine.complete(text, SamplingParams.greedy(max_tokens=1))
    assert engine.stats()["prefix_cache_hits"] > hits
    # Two such prompts at once share one step's bound on rows; each gets what it gets alone.
    import asyncio

    other = " ".join("item%d" % (i % 89) for i in range(300))

    async def together():
        return await asyncio.gather(engine.acomplete(text, params), engine.acomplete(other, params))

    both = asyncio.run(together())
    assert both[0].prompt_logprobs == first
    assert both[1].prompt_logprobs == engine.complete(other, params).prompt_logprobs


def test_batched_with_other_requests(engine):
    """Requests with and without prompt_logprobs in one batch (prefill
    chunks, decodes, rows of several lengths): each gets what it gets alone."""
    import asyncio

    prompts = [PROMPT, "Once upon a time, in a small village,", "def add(a, b):\n    return", "1, 2, 3, 4,"]
    params = [SamplingParams.greedy(max_tokens=6, prompt_logprobs=k) if k is not None
              else SamplingParams.greedy(max_tokens=6) for k in (2, None, 0, None)]
    alone = [engine.complete(p, q) for p, q in zip(prompts, params)]

    async def together():
        return await asyncio.gather(*(engine.acomplete(p, q) for p, q in zip(prompts, params)))

    batched = asyncio.run(together())
    for a, b in zip(alone, batched):
        assert (a.text, a.prompt_logprobs) == (b.text, b.prompt_logprobs)
    assert batched[1].prompt_logprobs is None and len(batched[2].prompt_logprobs) == len(engine.tokenize(prompts[2]))


def test_read_while_the_request_runs(engine):
    """request_prompt_logprobs: there by the request's first event, the same
    entries as its finished completion's."""
    import asyncio

    from vllm_cpp.pull_requests import RequestEvents

    params = SamplingParams.greedy(max_tokens=8, ignore_eos=True, prompt_logprobs=2)

    async def go():
        events = RequestEvents(lambda consumer: engine.submit_pull(PROMPT, params, consumer))
        early = None
        async for event in events:
            if early is None and event.n_tokens:
                early = engine.request_prompt_logprobs(events.request)
        return early

    early = asyncio.run(go())
    assert early == engine.complete(PROMPT, params).prompt_logprobs and early[0] is None


def test_with_sampling_options_and_token_prompts(engine):
    ids = engine.tokenize(PROMPT)
    plain = engine.complete(ids, SamplingParams.greedy(max_tokens=1, prompt_logprobs=1)).prompt_logprobs
    # Prompt logprobs are the raw model's: temperature and penalties leave them be.
    other = engine.complete(ids, SamplingParams(temperature=1.5, seed=3, max_tokens=4, repetition_penalty=1.5,
                                                logprobs=2, prompt_logprobs=1))
    assert other.prompt_logprobs == plain and len(other.logprobs) == 4
    one = engine.complete(ids[:1], SamplingParams.greedy(max_tokens=1, prompt_logprobs=2))
    assert one.prompt_logprobs == (None,)


def test_refused_where_they_cannot_apply(engine):
    with pytest.raises(InvalidArgumentError, match="prompt_logprobs"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, prompt_logprobs=21))
    with pytest.raises(InvalidConfigurationError, match="prompt_logprobs"):
        SamplingParams(prompt_logprobs="all")
    with pytest.raises(InvalidArgumentError, match="prompt_logprobs"):
        engine.chat({"messages": [{"role": "user", "content": "Hi"}], "prompt_logprobs": 1})
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1)).completion_tokens == 1


def test_llm_generate_reports_them(smollm2_path):
    with LLM(model=smollm2_path, max_model_len=256) as llm:
        [output] = llm.generate([PROMPT], SamplingParams.greedy(max_tokens=2, prompt_logprobs=1))
    assert len(output.prompt_logprobs) == len(output.prompt_token_ids) and output.prompt_logprobs[0] is None
