"""The engine calls the server is built on, from Python: tokenize and
detokenize, token-id prompts, logprobs on completions, the non-blocking
chat call (natively cancellable) and cancel_all."""

import asyncio
import json

import pytest

from server_harness import wait_until_idle
from vllm_cpp import (
    InteriorNulError,
    InvalidArgumentError,
    InvalidConfigurationError,
    SamplingParams,
)

pytestmark = pytest.mark.timeout(300)

PROMPT = "The capital of France is"
GREEDY = SamplingParams.greedy(max_tokens=8)
HI = [{"role": "user", "content": "Hi"}]


def test_tokenize_detokenize(engine):
    ids = engine.tokenize(PROMPT)
    assert ids and all(isinstance(i, int) for i in ids)
    assert engine.detokenize(ids) == PROMPT
    assert engine.tokenize("") == []
    assert engine.detokenize([]) == ""
    im_end = engine.tokenize("<|im_end|>", add_special_tokens=False)
    assert len(im_end) == 1
    assert engine.detokenize(im_end) == "<|im_end|>"
    assert engine.detokenize(im_end, skip_special_tokens=True) == ""
    with pytest.raises(InvalidArgumentError, match="vocabulary"):
        engine.detokenize([10 ** 9])
    chat = {"messages": HI, "max_tokens": 1}
    rendered = engine.tokenize_chat(chat)
    assert len(rendered) == engine.chat(chat)["usage"]["prompt_tokens"]
    assert "<|im_start|>user\nHi<|im_end|>" in engine.detokenize(rendered)
    with pytest.raises(InvalidArgumentError, match="messages"):
        engine.tokenize_chat({"messages": []})
    with pytest.raises(InvalidConfigurationError, match="token_ids"):
        engine.detokenize("abc")
    with pytest.raises(InteriorNulError):
        engine.tokenize("a\0b")


def test_token_id_prompts(engine):
    ids = engine.tokenize(PROMPT)
    expected = engine.complete(PROMPT, GREEDY)
    by_ids = engine.complete(ids, GREEDY)
    assert by_ids.text == expected.text and by_ids.prompt_tokens == len(ids)
    assert len(by_ids.token_ids) == by_ids.completion_tokens
    assert engine.detokenize(by_ids.token_ids) == by_ids.text
    assert "".join(engine.stream(ids, GREEDY)) == expected.text
    events = []
    outcome = engine.complete_stream(ids, GREEDY, events.append)
    assert not outcome.stopped_by_callback and "".join(e.delta for e in events) == expected.text
    assert asyncio.run(engine.acomplete(ids, GREEDY)).text == expected.text
    with pytest.raises(InvalidArgumentError, match="empty"):
        engine.complete([], GREEDY)
    with pytest.raises(InvalidArgumentError, match="vocabulary"):
        engine.complete([1, 10 ** 9], GREEDY)
    with pytest.raises(InvalidConfigurationError, match=r"prompt\[1\]"):
        engine.complete([1, "x"], GREEDY)


def test_callback_errors_of_token_prompts_re_raise_unchanged(engine):
    class Boom(Exception):
        pass

    def callback(event):
        raise Boom("from the callback")

    with pytest.raises(Boom):
        engine.complete_stream(engine.tokenize(PROMPT), GREEDY, callback)
    assert engine.complete(PROMPT, GREEDY).text


def test_logprobs(engine):
    completion = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=6, logprobs=3))
    assert completion.text == engine.complete(PROMPT, SamplingParams.greedy(max_tokens=6)).text
    assert len(completion.logprobs) == completion.completion_tokens == len(completion.token_ids)
    for entry, token_id in zip(completion.logprobs, completion.token_ids):
        assert entry.token_id == token_id and entry.logprob <= 0
        assert len(entry.top_logprobs) == 3
        assert entry.top_logprobs[0].token_id == token_id  # greedy: the most likely one
    assert b"".join(e.token_bytes for e in completion.logprobs).decode() == completion.text
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, logprobs=0)).logprobs[0].top_logprobs == ()
    with pytest.raises(InvalidArgumentError, match="logprobs"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, logprobs=21))


def test_submit_chat(engine):
    events = []
    request = engine.submit_chat({"messages": HI, "max_tokens": 6, "temperature": 0}, events.append)
    request.wait()
    request.close()
    [event] = [e for e in events if e.delta]
    assert event.finished
    response = json.loads(event.delta)
    assert response == {**response, "object": "chat.completion"}
    assert response["choices"][0]["message"]["content"] == engine.chat(
        {"messages": HI, "max_tokens": 6, "temperature": 0})["choices"][0]["message"]["content"]

    chunks = []
    request = engine.submit_chat({"messages": HI, "max_tokens": 6, "temperature": 0, "stream": True},
                                 lambda e: chunks.append(e.delta) if e.delta else None)
    request.wait()
    request.close()
    assert all(json.loads(c)["object"] == "chat.completion.chunk" for c in chunks)

    with pytest.raises(InvalidArgumentError, match="messages"):
        engine.submit_chat({"messages": 3}, lambda e: None)
    with pytest.raises(InvalidConfigurationError, match="callback"):
        engine.submit_chat({"messages": HI}, None)


def test_achat_is_natively_cancellable(engine):
    long = {"messages": [{"role": "user", "content": "Tell a long story."}], "max_tokens": 200,
            "ignore_eos": True, "n": 2}

    async def cancel_blocking():
        task = asyncio.ensure_future(engine.achat(long))
        while engine.stats()["running_requests"] == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async def leave_stream():
        async for _chunk in engine.achat_stream(long):
            break

    for scenario in (cancel_blocking, leave_stream):
        aborted = engine.stats()["requests_aborted"]
        asyncio.run(scenario())
        stats = wait_until_idle(engine)
        assert stats["running_requests"] == 0 and stats["kv_blocks_used"] == 0
        assert stats["requests_aborted"] - aborted == 2

    assert asyncio.run(engine.achat({"messages": HI, "max_tokens": 4}))["object"] == "chat.completion"
    with pytest.raises(InvalidArgumentError, match="messages"):
        asyncio.run(engine.achat({"messages": []}))


def test_cancel_all(engine):
    requests = [engine.submit("Story %d:" % i, SamplingParams(max_tokens=200, ignore_eos=True), lambda e: None)
                for i in range(3)]
    requests.append(engine.submit_chat({"messages": HI, "max_tokens": 200, "ignore_eos": True}, lambda e: None))
    engine.cancel_all()
    for request in requests:
        request.wait()
        request.close()
    stats = wait_until_idle(engine)
    assert stats["running_requests"] == 0 and stats["kv_blocks_used"] == 0


def test_async_request_whose_sink_stops_it_ends(engine):
    # A failing logits processor makes the sink stop delivery without a
    # terminal event; the async adapters still end, with the error.
    from vllm_cpp import LogitsProcessorError

    def failing(ids, logits):
        raise RuntimeError("processor failed")

    params = SamplingParams(max_tokens=50, logits_processor=failing)
    with pytest.raises(LogitsProcessorError):
        asyncio.run(engine.acomplete(PROMPT, params))

    async def drain():
        return [d async for d in engine.astream(PROMPT, params)]

    with pytest.raises(LogitsProcessorError):
        asyncio.run(drain())
    assert wait_until_idle(engine)["running_requests"] == 0
