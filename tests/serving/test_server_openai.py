"""The API server through the official ``openai`` client, sync and async,
streaming and not; every response validated by the client's own types."""

import asyncio
import json

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
prometheus_parser = pytest.importorskip("prometheus_client.parser")

from openai.types import Completion as OpenAICompletion  # noqa: E402
from openai.types import Model  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

from server_harness import MODEL_NAME, running_server  # noqa: E402
from chat_tools import FEW_SHOT_TOOL_CALLS, WEATHER_TOOL  # noqa: E402
from vllm_cpp import Engine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.timeout(300)

HI = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server_engine(smollm2_path):
    # The hermes tool parser, so tool calls can be parsed.
    with Engine.load(smollm2_path, max_model_len=512, tool_parser="hermes") as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(server_engine):
    with running_server(server_engine, max_model_len=512, enable_auto_tool_choice=True) as url:
        yield url


@pytest.fixture()
def aclient(base_url):
    return openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)


def strict(model):
    """Re-validate a client object with pydantic (the client builds them
    leniently)."""
    return type(model).model_validate(model.model_dump(exclude_unset=True))


def strict_completion_chunk(chunk):
    """``strict`` for a streamed completion chunk: the client's Completion
    type has no unfinished choice (finish_reason null, which OpenAI's own
    API streams too), so those validate as if finished."""
    body = chunk.model_dump(exclude_unset=True)
    for choice in body["choices"]:
        if choice["finish_reason"] is None:
            choice["finish_reason"] = "length"
    return OpenAICompletion.model_validate(body)


def streamed_text(chunks, index=0):
    parts = []
    for chunk in chunks:
        for choice in chunk.choices:
            if choice.index == index:
                delta = getattr(choice, "delta", None)
                parts.append((delta.content if delta is not None else choice.text) or "")
    return "".join(parts)


def test_models_list(client):
    models = client.models.list()
    [card] = models.data
    assert isinstance(strict(card), Model)
    assert card.id == MODEL_NAME


def test_chat_blocking_and_streamed_agree(client):
    response = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=16, temperature=0)
    assert isinstance(strict(response), ChatCompletion)
    text = response.choices[0].message.content
    assert text and response.model == MODEL_NAME
    assert response.usage.completion_tokens <= 16

    stream = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=16, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    for chunk in chunks:
        assert isinstance(strict(chunk), ChatCompletionChunk)
    assert streamed_text(chunks) == text
    assert chunks[-1].usage.completion_tokens == response.usage.completion_tokens
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == response.choices[0].finish_reason


def test_completions_blocking_and_streamed_agree(client):
    response = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=12,
                                         temperature=0)
    assert isinstance(strict(response), OpenAICompletion)
    text = response.choices[0].text
    assert text
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=12,
                                            temperature=0, stream=True))
    for chunk in chunks:
        assert isinstance(strict_completion_chunk(chunk), OpenAICompletion)
    assert streamed_text(chunks) == text


def test_completions_token_prompts_and_batches(client, server_engine):
    ids = server_engine.tokenize("The capital of France is")
    by_text = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=6,
                                        temperature=0)
    batch = client.completions.create(model=MODEL_NAME, prompt=[ids, "Once upon a time"], max_tokens=6,
                                      temperature=0)
    assert isinstance(strict(batch), OpenAICompletion)
    assert [c.index for c in batch.choices] == [0, 1]
    assert batch.choices[0].text == by_text.choices[0].text
    assert batch.usage.prompt_tokens == len(ids) + len(server_engine.tokenize("Once upon a time"))


def test_n_choices(client):
    response = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=8, n=3, seed=7)
    assert isinstance(strict(response), ChatCompletion)
    assert [c.index for c in response.choices] == [0, 1, 2]
    completions = client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=8, n=2, seed=3)
    assert [c.index for c in completions.choices] == [0, 1]
    again = client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=8, n=2, seed=3)
    assert [c.text for c in again.choices] == [c.text for c in completions.choices]
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=8, n=2,
                                            seed=3, stream=True))
    assert [streamed_text(chunks, i) for i in (0, 1)] == [c.text for c in completions.choices]


def test_return_token_ids(client, server_engine):
    """vLLM's return_token_ids: chat answers with the prompt's ids and each
    choice's (the engine's, streamed too: test_chat); completions put both
    on every choice, streamed as vLLM streams them."""
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=6, temperature=0,
                                          extra_body={"return_token_ids": True})
    extra = chat.model_extra
    assert extra["prompt_token_ids"] == server_engine.tokenize_chat({"messages": HI})
    assert len(chat.choices[0].model_extra["token_ids"]) == chat.usage.completion_tokens
    prompts = ["Once upon a time", server_engine.tokenize("The capital of France is")]
    completion = client.completions.create(model=MODEL_NAME, prompt=prompts, max_tokens=5, temperature=0, n=2,
                                           extra_body={"return_token_ids": True})
    for i, choice in enumerate(completion.choices):
        prompt = prompts[i // 2]
        expected = prompt if isinstance(prompt, list) else server_engine.tokenize(prompt)
        assert choice.model_extra["prompt_token_ids"] == expected
        assert server_engine.detokenize(choice.model_extra["token_ids"]) == choice.text
    # Streamed: each choice's first chunk has its prompt's ids, every chunk
    # its tokens' ids; they add up to the blocking answer's (greedy).
    chunks = list(client.completions.create(model=MODEL_NAME, prompt=prompts, max_tokens=5, temperature=0, n=2,
                                            stream=True, extra_body={"return_token_ids": True}))
    for index, choice in enumerate(completion.choices):
        mine = [c.choices[0] for c in chunks if c.choices[0].index == index]
        assert mine[0].model_extra["prompt_token_ids"] == choice.model_extra["prompt_token_ids"]
        assert all("prompt_token_ids" not in c.model_extra for c in mine[1:])
        assert sum((c.model_extra["token_ids"] for c in mine), []) == choice.model_extra["token_ids"]
        assert "".join(c.text for c in mine) == choice.text
    # A stop string's tokens have ids but no text.
    stopped = list(client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=12,
                                             temperature=0, stop=["Paris"], stream=True,
                                             extra_body={"return_token_ids": True}))
    blocking = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=12,
                                         temperature=0, stop=["Paris"], extra_body={"return_token_ids": True})
    assert sum((c.choices[0].model_extra["token_ids"] for c in stopped), []) == \
        blocking.choices[0].model_extra["token_ids"]


def test_logit_bias_and_allowed_token_ids(client, server_engine):
    """OpenAI's logit_bias (through the client's own parameter) and vLLM's
    allowed_token_ids, stop_token_ids and include_stop_str_in_output, on
    chat and completions, blocking and streamed; a bias out of range is a
    400 naming it."""
    london = server_engine.tokenize(" London", add_special_tokens=False)[0]
    paris = server_engine.tokenize(" Paris", add_special_tokens=False)[0]
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=3, temperature=0,
                                          logit_bias={str(london): 100})
    assert chat.choices[0].message.content == " London London London"
    chunks = list(client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=3, temperature=0,
                                                 stream=True, extra_body={"allowed_token_ids": [paris]}))
    assert streamed_text(chunks) == " Paris Paris Paris"
    completion = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=3,
                                           temperature=0, logit_bias={str(london): 100})
    assert completion.choices[0].text == " London London London"
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=4,
                                            temperature=0.8, seed=1, stream=True,
                                            extra_body={"allowed_token_ids": [paris, london]}))
    assert streamed_text(chunks).replace(" London", "").replace(" Paris", "") == ""
    # vLLM's stop_token_ids and include_stop_str_in_output.
    stopped = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=8,
                                        temperature=0, extra_body={"stop_token_ids": [paris]})
    assert stopped.choices[0].text == " Paris" and stopped.choices[0].finish_reason == "stop"
    reply = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=12,
                                           temperature=0).choices[0].message.content
    stop = reply[3:7]
    kept = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=12, temperature=0,
                                          stop=[stop], extra_body={"include_stop_str_in_output": True})
    assert kept.choices[0].message.content == reply[:reply.index(stop) + len(stop)]
    assert kept.choices[0].finish_reason == "stop"
    banned = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=6,
                                       temperature=0, extra_body={"bad_words": ["Paris"]})
    assert "Paris" not in banned.choices[0].text
    truncated = client.completions.create(model=MODEL_NAME, prompt="Some noise first. The capital of France is",
                                          max_tokens=2, temperature=0, extra_body={"truncate_prompt_tokens": 5})
    assert truncated.usage.prompt_tokens == 5
    start = server_engine.tokenize("<|im_start|>", add_special_tokens=False)
    special = client.completions.create(model=MODEL_NAME, prompt="a", max_tokens=1, temperature=0,
                                        extra_body={"allowed_token_ids": start, "skip_special_tokens": False})
    assert special.choices[0].text == "<|im_start|>"
    for create in (client.chat.completions.create, client.completions.create):
        kwargs = {"messages": HI} if create == client.chat.completions.create else {"prompt": "a"}
        with pytest.raises(openai.BadRequestError, match="logit_bias"):
            create(model=MODEL_NAME, max_tokens=2, logit_bias={str(london): 101}, **kwargs)
        with pytest.raises(openai.BadRequestError, match="allowed_token_ids"):
            create(model=MODEL_NAME, max_tokens=2, extra_body={"allowed_token_ids": []}, **kwargs)


def test_vllm_structured_outputs(client):
    """vLLM's structured_outputs (and guided_*) through extra_body, on chat and completions."""
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=8, temperature=0,
                                          extra_body={"structured_outputs": {"choice": ["Paris", "Lyon"]}})
    assert chat.choices[0].message.content in ("Paris", "Lyon")
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=8, temperature=0,
                                          extra_body={"guided_regex": "[A-Z][a-z]+"})
    assert chat.choices[0].message.content.isalpha()
    completion = client.completions.create(model=MODEL_NAME, prompt="The answer is", max_tokens=8, temperature=0,
                                           extra_body={"structured_outputs": {"regex": "[0-9]{3}"}})
    assert completion.choices[0].text.isdigit() and len(completion.choices[0].text) == 3
    for create, kwargs in ((client.chat.completions.create, {"messages": HI}),
                           (client.completions.create, {"prompt": "a"})):
        with pytest.raises(openai.BadRequestError, match="at most one"):
            create(model=MODEL_NAME, max_tokens=2, extra_body={"guided_regex": "a",
                                                               "structured_outputs": {"choice": ["b"]}}, **kwargs)
        with pytest.raises(openai.BadRequestError, match="structural_tag"):
            create(model=MODEL_NAME, max_tokens=2, extra_body={"structured_outputs": {"structural_tag": "x"}},
                   **kwargs)


def test_echo(client, server_engine):
    """OpenAI's echo: the prompt before the completion; with logprobs the
    prompt's tokens lead the logprobs (the first one's null), as
    lm-evaluation-harness's loglikelihood requests read them."""
    prompt = "The capital of France is"
    ids = server_engine.tokenize(prompt)
    plain = client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=3, temperature=0)
    echoed = client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=3, temperature=0, echo=True)
    assert echoed.choices[0].text == prompt + plain.choices[0].text
    scored = client.completions.create(model=MODEL_NAME, prompt=[ids], max_tokens=1, temperature=0, echo=True,
                                       logprobs=1)
    logprobs = scored.choices[0].logprobs
    assert scored.choices[0].text.startswith(server_engine.detokenize(ids))
    assert len(logprobs.tokens) == len(ids) + 1 and logprobs.token_logprobs[0] is None
    assert logprobs.top_logprobs[0] is None and logprobs.text_offset[0] == 0
    expected = server_engine.complete(ids, SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1))
    assert logprobs.token_logprobs[1:len(ids)] == [e.logprob for e in expected.prompt_logprobs[1:]]
    assert "".join(logprobs.tokens) == scored.choices[0].text
    chunks = list(client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=3, temperature=0,
                                            echo=True, stream=True))
    assert chunks[0].choices[0].text == prompt and streamed_text(chunks) == echoed.choices[0].text
    # Streamed with logprobs: the prompt's chunk carries its logprobs, then each token's follow.
    chunks = list(client.completions.create(model=MODEL_NAME, prompt=[ids], max_tokens=1, temperature=0,
                                            echo=True, logprobs=1, stream=True))
    streamed = {"tokens": [], "token_logprobs": [], "text_offset": []}
    for c in chunks:
        if c.choices[0].logprobs is not None:
            for key in streamed:
                streamed[key] += getattr(c.choices[0].logprobs, key)
    assert streamed == {key: getattr(logprobs, key) for key in streamed}


def test_prompt_logprobs(client, server_engine):
    """vLLM's prompt_logprobs on completions: per prompt token null (the
    first) or {token id: {logprob, rank, decoded_token}}; streamed, with the
    choice's finish chunk."""
    ids = server_engine.tokenize("The capital of France is")
    expected = server_engine.complete(ids, SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=2))
    blocking = client.completions.create(model=MODEL_NAME, prompt=[ids], max_tokens=1, temperature=0,
                                         extra_body={"prompt_logprobs": 2})
    reported = blocking.choices[0].model_extra["prompt_logprobs"]
    assert len(reported) == len(ids) and reported[0] is None
    for position, entry in zip(reported[1:], expected.prompt_logprobs[1:]):
        own = position[str(entry.token_id)]
        assert own["logprob"] == entry.logprob and own["rank"] == entry.rank >= 1
        assert len(position) <= 3 and own["decoded_token"] == server_engine.detokenize([entry.token_id])
    chunks = list(client.completions.create(model=MODEL_NAME, prompt=[ids], max_tokens=1, temperature=0,
                                            stream=True, extra_body={"prompt_logprobs": 2}))
    finish = [c.choices[0] for c in chunks if c.choices[0].finish_reason is not None][0]
    assert finish.model_extra["prompt_logprobs"] == reported
    with pytest.raises(openai.BadRequestError, match="prompt_logprobs"):
        client.completions.create(model=MODEL_NAME, prompt="a", max_tokens=1, extra_body={"prompt_logprobs": 21})


def test_return_tokens_as_token_ids(client, server_engine):
    """vLLM's return_tokens_as_token_ids: logprobs name tokens "token_id:<id>", on chat and completions."""
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=3, temperature=0, logprobs=True,
                                          top_logprobs=2, extra_body={"return_tokens_as_token_ids": True,
                                                                      "return_token_ids": True})
    content = chat.choices[0].logprobs.content
    assert [c.token for c in content] == ["token_id:%d" % t for t in chat.choices[0].model_extra["token_ids"]]
    assert all(alt.token.startswith("token_id:") for c in content for alt in c.top_logprobs)
    completion = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=2,
                                           temperature=0, logprobs=1, echo=True,
                                           extra_body={"return_tokens_as_token_ids": True})
    ids = server_engine.tokenize("The capital of France is")
    assert completion.choices[0].logprobs.tokens[:len(ids)] == ["token_id:%d" % t for t in ids]


def test_logprobs(client):
    chat = client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=5, temperature=0,
                                          logprobs=True, top_logprobs=3)
    assert isinstance(strict(chat), ChatCompletion)
    content = chat.choices[0].logprobs.content
    assert len(content) == chat.usage.completion_tokens
    assert all(len(t.top_logprobs) == 3 and t.logprob <= 0 for t in content)

    completion = client.completions.create(model=MODEL_NAME, prompt="The capital of France is", max_tokens=5,
                                           temperature=0, logprobs=2)
    assert isinstance(strict(completion), OpenAICompletion)
    logprobs = completion.choices[0].logprobs
    assert "".join(logprobs.tokens) == completion.choices[0].text
    assert len(logprobs.token_logprobs) == 5 and all(lp <= 0 for lp in logprobs.token_logprobs)
    assert all(len(top) <= 2 for top in logprobs.top_logprobs)
    assert logprobs.text_offset[0] == 0
    # Greedy: the sampled token is the most likely one.
    for token, lp, top in zip(logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs):
        assert max(top.values()) == pytest.approx(lp)


def test_streamed_completion_logprobs_equal_the_blocking_ones(client):
    """Each streamed chunk carries its tokens' logprobs (tokens,
    token_logprobs, top_logprobs, text_offset continuing across chunks), and
    together they are the blocking response's (greedy)."""
    kwargs = dict(model=MODEL_NAME, prompt=["The capital of France is", "Once upon a time"], max_tokens=24,
                  temperature=0, logprobs=3)
    blocking = client.completions.create(**kwargs)
    assert isinstance(strict(blocking), OpenAICompletion)
    chunks = list(client.completions.create(**kwargs, stream=True))
    for chunk in chunks:
        assert isinstance(strict_completion_chunk(chunk), OpenAICompletion)
    for choice in blocking.choices:
        assert streamed_text(chunks, choice.index) == choice.text
        streamed = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        for chunk in chunks:
            for part in chunk.choices:
                if part.index == choice.index and part.logprobs is not None:
                    assert len(part.logprobs.tokens) >= 1
                    assert part.logprobs.text_offset[0] == len("".join(streamed["tokens"]))
                    for key in streamed:
                        streamed[key] += getattr(part.logprobs, key)
        expected = choice.logprobs
        assert streamed["tokens"] == expected.tokens
        assert streamed["token_logprobs"] == pytest.approx(expected.token_logprobs)
        assert streamed["text_offset"] == expected.text_offset
        assert [list(top) for top in streamed["top_logprobs"]] == [list(top) for top in expected.top_logprobs]
        assert len(expected.tokens) == 24


def test_streamed_chat_logprobs(client):
    """Streamed chat chunks carry their tokens' logprobs; together they are
    the blocking response's (greedy)."""
    kwargs = dict(model=MODEL_NAME, messages=HI, max_tokens=12, temperature=0, logprobs=True, top_logprobs=2)
    blocking = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True))
    streamed = []
    for chunk in chunks:
        assert isinstance(strict(chunk), ChatCompletionChunk)
        for choice in chunk.choices:
            if choice.logprobs is not None and choice.logprobs.content:
                streamed += choice.logprobs.content
    expected = blocking.choices[0].logprobs.content
    assert [t.token for t in streamed] == [t.token for t in expected]
    assert [t.logprob for t in streamed] == pytest.approx([t.logprob for t in expected])
    assert all(len(t.top_logprobs) == 2 for t in streamed)


def test_tools_with_a_parser(client):
    response = client.chat.completions.create(model=MODEL_NAME, messages=FEW_SHOT_TOOL_CALLS,
                                              tools=[WEATHER_TOOL], max_tokens=40, temperature=0)
    assert isinstance(strict(response), ChatCompletion)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "London"}


def test_response_format_json_schema(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
              "required": ["city"]}
    response = client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Name a city in JSON with the key city."}],
        max_tokens=40, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}})
    assert isinstance(strict(response), ChatCompletion)
    assert set(json.loads(response.choices[0].message.content)) == {"city"}

    completion = client.completions.create(
        model=MODEL_NAME, prompt="A city as JSON:", max_tokens=40, temperature=0,
        extra_body={"response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}})
    assert set(json.loads(completion.choices[0].text)) == {"city"}


def test_async_client(aclient):
    async def main():
        blocking = await aclient.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=10,
                                                         temperature=0)
        stream = await aclient.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=10,
                                                       temperature=0, stream=True)
        chunks = [chunk async for chunk in stream]
        completion = await aclient.completions.create(model=MODEL_NAME, prompt="Once upon a time",
                                                      max_tokens=8, temperature=0)
        streamed = [c async for c in await aclient.completions.create(
            model=MODEL_NAME, prompt="Once upon a time", max_tokens=8, temperature=0, stream=True)]
        await aclient.close()
        return blocking, chunks, completion, streamed

    blocking, chunks, completion, streamed = asyncio.run(main())
    assert isinstance(strict(blocking), ChatCompletion)
    assert all(isinstance(strict(c), ChatCompletionChunk) for c in chunks)
    assert streamed_text(chunks) == blocking.choices[0].message.content
    assert isinstance(strict(completion), OpenAICompletion)
    assert all(isinstance(strict_completion_chunk(c), OpenAICompletion) for c in streamed)
    assert streamed_text(streamed) == completion.choices[0].text


def test_tokenize_detokenize_health_version(base_url, server_engine):
    import httpx

    with httpx.Client(base_url=base_url) as http:
        tokens = http.post("/tokenize", json={"prompt": "Hello world"}).json()
        assert tokens["tokens"] == server_engine.tokenize("Hello world") and tokens["count"] == 2
        assert http.post("/detokenize", json={"tokens": tokens["tokens"]}).json() == {"prompt": "Hello world"}
        chat = {"messages": HI, "max_tokens": 1}
        rendered = http.post("/tokenize", json={"messages": HI}).json()
        usage = http.post("/v1/chat/completions", json=chat).json()["usage"]
        assert rendered["count"] == usage["prompt_tokens"] == len(server_engine.tokenize_chat(chat))
        assert http.get("/health").status_code == 200
        version = http.get("/version").json()
        assert version["version"] and version["engine"]


def _samples(text):
    out = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(samples, name, **labels):
    return sum(v for (n, l), v in samples.items() if n == name and all((k, labels[k]) in l for k in labels))


def test_metrics_parse_and_move(client, base_url):
    import httpx

    before = _samples(httpx.get(base_url + "/metrics").text)
    client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=6, temperature=0,
                              stream=True).close()
    list(client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=6, temperature=0,
                                   stream=True))
    client.chat.completions.create(model=MODEL_NAME, messages=HI, max_tokens=4, temperature=0)
    after = _samples(httpx.get(base_url + "/metrics").text)
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
        assert (name, (("model_name", MODEL_NAME),)) in after
    assert _value(after, "vllm:generation_tokens_total") > _value(before, "vllm:generation_tokens_total")
    assert _value(after, "vllm:prompt_tokens_total") > _value(before, "vllm:prompt_tokens_total")
    assert _value(after, "vllm:prefix_cache_queries_total") >= _value(before, "vllm:prefix_cache_queries_total")
    assert _value(after, "vllm:time_to_first_token_seconds_count") > _value(
        before, "vllm:time_to_first_token_seconds_count")
    assert _value(after, "vllm:inter_token_latency_seconds_count") > _value(
        before, "vllm:inter_token_latency_seconds_count")
    assert _value(after, "vllm:request_success_total") >= _value(before, "vllm:request_success_total") + 2
    assert _value(after, "vllm:http_requests_total", path="/v1/completions") >= 2
