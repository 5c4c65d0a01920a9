"""Anthropic's Messages API (``/v1/messages``, ``/v1/messages/count_tokens``)
against a tool-calling server on SmolLM2 (hermes parser, auto tool choice),
spoken by the ``anthropic`` SDK (sync and async) as its users write it: a
message, a tool round trip with tool_use / tool_result, streaming with the
SDK's event types, count_tokens, each answer validated by the SDK's own
types; then bad requests answered in Anthropic's error shape with the right
status, the server answering the next good request after each. The same
server has an API key, sent as ``x-api-key`` by the SDK."""

import json

import pytest

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
httpx = pytest.importorskip("httpx")

from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.timeout(300)

API_KEY = "test-key"
MAX_MODEL_LEN = 512
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
                     "required": ["city"]},
}
ASK = [{"role": "user", "content": "What is the capital of France?"}]
#: The SDK has no sampling arguments of its own any more: they go as extra body fields.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def server(smollm2_path):
    """(engine, base URL)."""
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, tool_parser="hermes") as engine:
        with running_server(engine, max_model_len=MAX_MODEL_LEN, enable_auto_tool_choice=True, api_key=API_KEY,
                            max_request_bytes=64 * 1024) as url:
            yield engine, url


@pytest.fixture(scope="module")
def base_url(server):
    return server[1]


@pytest.fixture(scope="module")
def client(base_url):
    return anthropic.Anthropic(base_url=base_url, api_key=API_KEY, max_retries=0)


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=120, headers={"x-api-key": API_KEY,
                                                               "anthropic-version": "2023-06-01"}) as c:
        yield c


def test_message_create(client):
    message = client.messages.create(model=MODEL_NAME, max_tokens=12, messages=ASK, extra_body=GREEDY,
                                     system="You are terse.", metadata={"user_id": "u1"})
    assert isinstance(message, anthropic.types.Message)
    assert message.type == "message" and message.role == "assistant" and message.model == MODEL_NAME
    assert message.id.startswith("msg_")
    assert [block.type for block in message.content] == ["text"] and message.content[0].text
    assert message.stop_reason in ("end_turn", "max_tokens") and message.stop_sequence is None
    assert 0 < message.usage.output_tokens <= 12 and message.usage.input_tokens > 0
    # The same prompt through chat: the one road gives the same answer.
    chat = httpx.post(str(client.base_url).rstrip("/") + "/v1/chat/completions", timeout=120,
                      headers={"Authorization": "Bearer " + API_KEY},
                      json={"model": MODEL_NAME, "max_tokens": 12, "temperature": 0,
                            "messages": [{"role": "system", "content": "You are terse."}] + ASK}).json()
    assert chat["choices"][0]["message"]["content"] == message.content[0].text
    assert chat["usage"]["prompt_tokens"] == message.usage.input_tokens


def test_max_tokens_and_stop_sequence(client):
    long = client.messages.create(model=MODEL_NAME, max_tokens=3, messages=ASK, extra_body=GREEDY)
    assert long.stop_reason == "max_tokens" and long.usage.output_tokens == 3
    free = client.messages.create(model=MODEL_NAME, max_tokens=24, messages=ASK, extra_body=GREEDY)
    words = free.content[0].text.split()
    assert len(words) >= 3, free.content[0].text
    stop = words[2]
    stopped = client.messages.create(model=MODEL_NAME, max_tokens=24, messages=ASK, extra_body=GREEDY,
                                     stop_sequences=["never-said", stop])
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == stop
    assert stop not in stopped.content[0].text and free.content[0].text.startswith(stopped.content[0].text)


def test_tool_round_trip(client):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.messages.create(model=MODEL_NAME, max_tokens=40, messages=messages, tools=[WEATHER_TOOL],
                                   tool_choice={"type": "tool", "name": "get_weather"}, extra_body=GREEDY)
    assert first.stop_reason == "tool_use"
    uses = [block for block in first.content if block.type == "tool_use"]
    assert len(uses) == 1 and isinstance(uses[0], anthropic.types.ToolUseBlock)
    assert uses[0].name == "get_weather" and uses[0].input["city"] in ("Paris", "Rome")
    messages.append({"role": "assistant", "content": first.content})  # the SDK's blocks, sent back as they came
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": uses[0].id, "content": [{"type": "text", "text": "Sunny, 24 C"}]}]})
    second = client.messages.create(model=MODEL_NAME, max_tokens=24, messages=messages, tools=[WEATHER_TOOL],
                                    tool_choice={"type": "none"}, extra_body=GREEDY)
    assert second.stop_reason in ("end_turn", "max_tokens")
    assert [block.type for block in second.content] == ["text"]
    # "any" forces some call; "auto" (hermes) is accepted.
    forced = client.messages.create(model=MODEL_NAME, max_tokens=40, messages=messages[:1], tools=[WEATHER_TOOL],
                                    tool_choice={"type": "any"}, extra_body=GREEDY)
    assert forced.stop_reason == "tool_use" and forced.content[-1].type == "tool_use"
    auto = client.messages.create(model=MODEL_NAME, max_tokens=16, messages=messages[:1], tools=[WEATHER_TOOL],
                                  extra_body=GREEDY)
    assert auto.stop_reason in ("end_turn", "max_tokens", "tool_use")


def test_streaming_text_matches_blocking(client):
    blocking = client.messages.create(model=MODEL_NAME, max_tokens=16, messages=ASK, extra_body=GREEDY)
    with client.messages.stream(model=MODEL_NAME, max_tokens=16, messages=ASK, extra_body=GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_message()
    types = [event.type for event in events]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    for name in ("content_block_start", "content_block_delta", "content_block_stop", "message_delta"):
        assert name in types, types
    deltas = [event for event in events if event.type == "content_block_delta"]
    assert all(event.delta.type == "text_delta" for event in deltas)
    assert isinstance(final, anthropic.types.Message)
    assert final.content[0].text == blocking.content[0].text
    assert final.stop_reason == blocking.stop_reason
    assert final.usage.output_tokens == blocking.usage.output_tokens
    assert final.usage.input_tokens == blocking.usage.input_tokens


def test_raw_stream_pings_after_message_start(http):
    """Anthropic's streams carry a ping event early; ours after message_start."""
    body = {"model": MODEL_NAME, "max_tokens": 4, "messages": ASK, "stream": True, "temperature": 0}
    with http.stream("POST", "/v1/messages", json=body) as response:
        names = [line[len("event: "):] for line in response.iter_lines() if line.startswith("event: ")]
    assert names[:2] == ["message_start", "ping"] and names.count("ping") == 1 and names[-1] == "message_stop"


def test_streaming_tool_use(client):
    with client.messages.stream(model=MODEL_NAME, max_tokens=40, tools=[WEATHER_TOOL], extra_body=GREEDY,
                                tool_choice={"type": "tool", "name": "get_weather"},
                                messages=[{"role": "user", "content": "Weather in Rome?"}]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    json_deltas = [e.delta.partial_json for e in events if e.type == "content_block_delta"
                   and e.delta.type == "input_json_delta"]
    assert json_deltas and final.stop_reason == "tool_use"
    use = [block for block in final.content if block.type == "tool_use"][0]
    assert use.name == "get_weather" and json.loads("".join(json_deltas)) == use.input


def test_leaving_a_stream_cancels_it(server, client):
    engine, _ = server
    with client.messages.stream(model=MODEL_NAME, max_tokens=400, messages=ASK,
                                extra_body={"temperature": 1.0, "top_k": 0}) as stream:
        for event in stream:
            if event.type == "content_block_delta":
                break
    stats = wait_until_idle(engine)
    assert stats["running_requests"] == 0 and stats["waiting_requests"] == 0
    assert client.messages.create(model=MODEL_NAME, max_tokens=2, messages=ASK).type == "message"


def test_count_tokens(client):
    counted = client.messages.count_tokens(model=MODEL_NAME, messages=ASK, system="You are terse.")
    assert isinstance(counted, anthropic.types.MessageTokensCount)
    message = client.messages.create(model=MODEL_NAME, max_tokens=1, messages=ASK, system="You are terse.")
    assert counted.input_tokens == message.usage.input_tokens > 0
    with_tools = client.messages.count_tokens(model=MODEL_NAME, messages=ASK, tools=[WEATHER_TOOL],
                                              tool_choice={"type": "any"})
    assert with_tools.input_tokens > counted.input_tokens - 10  # the tools are rendered into the prompt


def test_api_key_is_required(base_url):
    bad = anthropic.Anthropic(base_url=base_url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as info:
        bad.messages.create(model=MODEL_NAME, max_tokens=2, messages=ASK)
    assert info.value.status_code == 401 and info.value.body["error"]["type"] == "authentication_error"


TEXT = {"type": "text", "text": "hi"}
GOOD = {"model": MODEL_NAME, "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}


def _with(**fields):
    body = dict(GOOD)
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}


BAD_REQUESTS = [
    ("missing max_tokens", _with(max_tokens=None), 400, "max_tokens"),
    ("max_tokens a string", _with(max_tokens="2"), 400, "max_tokens"),
    ("max_tokens zero", _with(max_tokens=0), 400, "max_tokens"),
    ("messages missing", _with(messages=None), 400, "messages"),
    ("messages not a list", _with(messages="Hi"), 400, "messages"),
    ("messages empty", _with(messages=[]), 400, "messages"),
    ("unknown role", _with(messages=[{"role": "system", "content": "Hi"}]), 400, "role"),
    ("content a number", _with(messages=[{"role": "user", "content": 3}]), 400, "content"),
    ("unknown block type", _with(messages=[{"role": "user", "content": [{"type": "video", "url": "x"}]}]), 400,
     "video"),
    ("image block", _with(messages=[{"role": "user", "content": [
        TEXT, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]), 400,
     "image"),
    ("document block", _with(messages=[{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]}]), 400,
     "document"),
    ("tool_result without tool_use", _with(messages=[{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"}]}]), 400, "toolu_nope"),
    ("tool_use in a user turn", _with(messages=[{"role": "user", "content": [
        {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]}]), 400, "tool_use"),
    ("tool_use input not an object", _with(messages=[
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "x"}]},
        {"role": "user", "content": "go on"}]), 400, "input"),
    ("server tool", _with(tools=[{"type": "web_search_20250305", "name": "web_search"}]), 400, "server tool"),
    ("tool without input_schema", _with(tools=[{"name": "f"}], tool_choice={"type": "any"}), 400, "input_schema"),
    ("unknown tool_choice type", _with(tools=[WEATHER_TOOL], tool_choice={"type": "some"}), 400, "tool_choice"),
    ("tool_choice names a missing tool", _with(tools=[WEATHER_TOOL], tool_choice={"type": "tool", "name": "nope"}),
     400, "nope"),
    ("temperature a string", _with(temperature="hot"), 400, "temperature"),
    ("top_k negative", _with(top_k=-5), 400, "top_k"),
    ("stop_sequences not strings", _with(stop_sequences=[1]), 400, "stop_sequences"),
    ("system a number", _with(system=5), 400, "system"),
    ("thinking of an unknown type", _with(thinking={"type": "sometimes"}), 400, "thinking"),
    ("unknown field", _with(frobnicate=True), 400, "frobnicate"),
    ("another model", _with(model="claude-opus"), 404, "claude-opus"),
    ("prompt past the context", _with(messages=[{"role": "user", "content": "word " * 600}]), 400, "context"),
    ("max_tokens past the context", _with(max_tokens=100000), 400, "max_tokens"),
    ("body over the size limit", _with(messages=[{"role": "user", "content": "x" * 70000}]), 413, None),
]


@pytest.mark.parametrize("name, body, status, needle", BAD_REQUESTS, ids=[case[0] for case in BAD_REQUESTS])
def test_bad_request_is_refused_in_anthropics_shape(http, name, body, status, needle):
    response = http.post("/v1/messages", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["type"] == "error" and set(error["error"]) == {"type", "message"}
    expected_type = {400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large"}[status]
    assert error["error"]["type"] == expected_type
    if needle is not None:
        assert needle in error["error"]["message"], error["error"]["message"]
    good = http.post("/v1/messages", json=GOOD)
    assert good.status_code == 200 and good.json()["type"] == "message"


def test_bad_json_and_count_tokens_refusals(http):
    response = http.get("/v1/messages")
    assert response.status_code == 405 and response.json()["error"]["type"] == "invalid_request_error"

    response = http.post("/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
    response = http.post("/v1/messages/count_tokens", json={"model": MODEL_NAME, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {}}]}]})
    assert response.status_code == 400 and "image" in response.json()["error"]["message"]
    response = http.post("/v1/messages/count_tokens", json={"model": MODEL_NAME, "messages": ASK, "max_tokens": 3})
    assert response.status_code == 400 and "max_tokens" in response.json()["error"]["message"]
    assert http.post("/v1/messages/count_tokens", json={"model": MODEL_NAME, "messages": ASK}).json()[
        "input_tokens"] > 0


def test_sdk_raises_its_error_types(client):
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model=MODEL_NAME, max_tokens=4, messages=[{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "x"}]}])
    assert info.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="claude-3-haiku", max_tokens=4, messages=ASK)
    assert client.messages.create(model=MODEL_NAME, max_tokens=2, messages=ASK).type == "message"


def test_thinking_blocks_through_the_reasoning_parser(smollm2_path):
    """Under the qwen3 reasoning parser, SmolLM2's output (it never closes
    a think section) is all thinking: a thinking block, streamed as
    thinking_delta; with thinking disabled it is text."""
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=256, reasoning_parser="qwen3") as engine:
        with running_server(engine, max_model_len=256) as url:
            client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
            thinking = {"type": "enabled", "budget_tokens": 1024}
            message = client.messages.create(model=MODEL_NAME, max_tokens=8, messages=ASK, thinking=thinking,
                                             extra_body=GREEDY)
            assert [block.type for block in message.content] == ["thinking"]
            assert isinstance(message.content[0], anthropic.types.ThinkingBlock) and message.content[0].thinking
            with client.messages.stream(model=MODEL_NAME, max_tokens=8, messages=ASK, thinking=thinking,
                                        extra_body=GREEDY) as stream:
                events = list(stream)
                final = stream.get_final_message()
            assert {e.delta.type for e in events if e.type == "content_block_delta"} == {"thinking_delta"}
            assert final.content[0].thinking == message.content[0].thinking
            # A thinking block sent back in an assistant turn is accepted (read as reasoning_content).
            followed = client.messages.create(model=MODEL_NAME, max_tokens=4, extra_body=GREEDY,
                                              thinking={"type": "disabled"}, messages=ASK + [
                                                  {"role": "assistant", "content": message.content},
                                                  {"role": "user", "content": "And of Italy?"}])
            assert [block.type for block in followed.content] == ["text"]


def test_async_client_plain_and_streamed(base_url):
    import asyncio

    async def ask():
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key=API_KEY, max_retries=0) as aclient:
            request = dict(model=MODEL_NAME, max_tokens=8, messages=ASK, extra_body=GREEDY)
            blocking = await aclient.messages.create(**request)
            async with aclient.messages.stream(**request) as stream:
                streamed = "".join([text async for text in stream.text_stream])
            return blocking.content[0].text, streamed

    blocking, streamed = asyncio.run(ask())
    assert blocking and streamed == blocking
