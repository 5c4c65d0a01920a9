"""OpenAI's Responses API (``POST /v1/responses``, ``GET`` / ``DELETE
/v1/responses/{id}``) on SmolLM2 behind the tool-calling server (hermes
parser, auto tool choice), with the ``openai`` client and raw HTTP, every
answer validated by the client's own pydantic types:

- a text answer, streamed and not (the same greedy text; the event sequence
  numbered from 0, opened by response.created / response.in_progress, closed
  by response.completed);
- function tools over several turns, by ``previous_response_id`` and by
  replaying the items (function_call + function_call_output);
- ``text.format`` json_schema output that validates;
- the store: GET, DELETE, store false, its size and age bounds;
- bad requests with their status and OpenAI's error shape, the server then
  answering a good request;
- the OpenAI Agents SDK's Responses model class running an agent with two
  function tools to completion.
"""

import asyncio
import json

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from pydantic import TypeAdapter  # noqa: E402
from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402

from client_support import FORECASTS, get_weather  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402
from vllm_cpp.server.serving_responses import ResponseStore  # noqa: E402

pytestmark = pytest.mark.timeout(300)

WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
FORCED = {"type": "function", "name": "get_weather"}
EVENTS = TypeAdapter(ResponseStreamEvent)


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


def short(**extra):
    return dict({"model": MODEL_NAME, "max_output_tokens": 8, "temperature": 0}, **extra)


def create(http, **body):
    """POST /v1/responses; the response validated by the client's type."""
    reply = http.post("/v1/responses", json=short(**body))
    assert reply.status_code == 200, reply.text
    return Response.model_validate(reply.json())


def streamed_events(http, **body):
    """The SSE events of a streamed request, each validated by the client's type."""
    events = []
    with http.stream("POST", "/v1/responses", json=short(stream=True, **body)) as reply:
        assert reply.status_code == 200
        event_type = None
        for line in reply.iter_lines():
            if line.startswith("event: "):
                event_type = line[len("event: "):]
            elif line.startswith("data: "):
                event = json.loads(line[len("data: "):])
                assert event["type"] == event_type
                events.append(EVENTS.validate_python(event))
    return events


# ------------------------------------------------------------------ text


def test_text_answer_with_the_client(client):
    response = client.responses.create(model=MODEL_NAME, input="Say hello.", instructions="Be brief.",
                                       max_output_tokens=8, temperature=0)
    assert response.object == "response" and response.id.startswith("resp_")
    assert response.status in ("completed", "incomplete")
    assert [item.type for item in response.output] == ["message"]
    assert response.output_text
    assert response.usage.output_tokens <= 8
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert response.instructions == "Be brief."


def test_length_cut_is_incomplete(http):
    response = create(http, input="Count from one to one hundred in words.", max_output_tokens=3)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 3


def test_streamed_text_equals_blocking(http):
    body = dict(input="Name a colour.", max_output_tokens=12)
    blocking = create(http, **body)
    events = streamed_events(http, **body)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type in ("response.completed", "response.incomplete")
    kinds = [e.type for e in events]
    for kind in ("response.output_item.added", "response.content_part.added", "response.output_text.delta",
                 "response.output_text.done", "response.content_part.done", "response.output_item.done"):
        assert kind in kinds
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert deltas == final.output_text == blocking.output_text
    assert final.usage.output_tokens == blocking.usage.output_tokens
    assert final.id != blocking.id


def test_streamed_with_the_client(client):
    stream = client.responses.create(model=MODEL_NAME, input="Say hi.", max_output_tokens=6, temperature=0,
                                     stream=True)
    events = list(stream)
    assert events[0].type == "response.created" and events[-1].type in ("response.completed",
                                                                         "response.incomplete")
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == \
        events[-1].response.output_text


# ------------------------------------------------------------------ tools


def forced_call(http, **extra):
    response = create(http, input="What is the weather in Paris?", tools=[WEATHER], tool_choice=FORCED,
                      max_output_tokens=40, **extra)
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert isinstance(json.loads(calls[0].arguments)["city"], str)
    return response, calls[0]


def test_function_tool_turns_by_previous_response_id(http):
    first, call = forced_call(http)
    second = create(http, previous_response_id=first.id, tools=[WEATHER], max_output_tokens=16,
                    input=[{"type": "function_call_output", "call_id": call.call_id,
                            "output": get_weather(json.loads(call.arguments)["city"])}])
    assert second.previous_response_id == first.id
    assert second.output and second.usage.input_tokens > first.usage.input_tokens
    # A third turn continues the second (the whole chain is the conversation).
    third = create(http, previous_response_id=second.id, input="Thanks. And Rome?", tools=[WEATHER],
                   tool_choice=FORCED, max_output_tokens=40)
    assert third.output[0].type == "function_call"
    assert third.usage.input_tokens > second.usage.input_tokens


def test_function_tool_turns_by_replayed_items(http):
    _, call = forced_call(http, store=False)
    replayed = [{"role": "user", "content": "What is the weather in Paris?"},
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": call.call_id, "output": FORECASTS["Paris"]}]
    answer = create(http, input=replayed, tools=[WEATHER], tool_choice="none", max_output_tokens=16)
    assert [item.type for item in answer.output] == ["message"]


def test_streamed_function_call_events(http):
    events = streamed_events(http, input="Weather in London?", tools=[WEATHER], tool_choice=FORCED,
                             max_output_tokens=40)
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.delta" in kinds
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and done[0].name == "get_weather"
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert deltas == done[0].arguments and "city" in json.loads(deltas)
    final = events[-1].response
    assert final.output[-1].type == "function_call" and final.output[-1].arguments == deltas


# ------------------------------------------------------------------ structured output


def test_json_schema_text_format(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
              "required": ["city"], "additionalProperties": False}
    response = client.responses.create(model=MODEL_NAME, input="Name a city in France as JSON.",
                                       max_output_tokens=40, temperature=0,
                                       text={"format": {"type": "json_schema", "name": "city", "schema": schema,
                                                        "strict": True}})
    jsonschema.validate(json.loads(response.output_text), schema)
    assert response.text.format.type == "json_schema"


# ------------------------------------------------------------------ store


def test_retrieve_and_delete(client, http):
    response = client.responses.create(model=MODEL_NAME, input="Hi", max_output_tokens=4, temperature=0)
    fetched = Response.model_validate(http.get("/v1/responses/" + response.id).json())
    assert fetched.id == response.id and fetched.output_text == response.output_text
    assert client.responses.retrieve(response.id).id == response.id
    deleted = http.delete("/v1/responses/" + response.id)
    assert deleted.status_code == 200 and deleted.json() == {"id": response.id, "object": "response",
                                                             "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    assert http.delete("/v1/responses/" + response.id).status_code == 404


def test_store_false_is_not_kept(http):
    response = create(http, input="Hi", store=False, max_output_tokens=2)
    assert response.store is False
    missing = http.get("/v1/responses/" + response.id)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "response_not_found"


def test_store_bounds():
    now = [0.0]
    store = ResponseStore(max_entries=2, max_age_s=10, clock=lambda: now[0])
    for i in range(3):
        store.put({"id": "r%d" % i}, [])
    assert store.get("r0") is None and store.get("r1") and store.get("r2")  # the oldest went first
    now[0] = 11.0
    assert store.get("r1") is None and len(store) == 0  # too old
    assert ResponseStore(0, 10).get("x") is None


def test_store_byte_limit():
    """--responses-store-max-bytes: the oldest go until the rest fit; one
    larger than the whole limit is not kept; replacing or deleting frees its bytes."""
    item = {"id": "r0", "text": "x" * 100}
    size = len(json.dumps(item)) + len(json.dumps([]))
    store = ResponseStore(max_entries=100, max_age_s=10, max_bytes=2 * size + size // 2)
    for i in range(3):
        store.put(dict(item, id="r%d" % i), [])
    assert store.get("r0") is None and store.get("r1") and store.get("r2") and store.stored_bytes == 2 * size
    store.put({"id": "big", "text": "x" * (3 * size)}, [])
    assert store.get("big") is None and len(store) == 2
    assert store.delete("r1") and store.stored_bytes == size
    store.put(dict(item, id="r2"), [])
    assert len(store) == 1 and store.stored_bytes == size


# ------------------------------------------------------------------ bad requests

BAD_REQUESTS = [
    # (body, status, the field the message names)
    ({"input": 3}, 400, "input"),
    ({}, 400, "input"),
    ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, 400, "input[0].type"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, 400, "input[0].type"),
    ({"input": [{"role": "robot", "content": "hi"}]}, 400, "input[0].role"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]}, 400,
     "input[0].content[0].type"),
    ({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}, 400, "input[0].call_id"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{bad"}]}, 400,
     "input[0].arguments"),
    ({"input": "hi", "previous_response_id": "resp_missing"}, 404, "previous_response_id"),
    ({"input": "hi", "previous_response_id": 7}, 400, "previous_response_id"),
    ({"input": "hi", "tools": [{"type": "web_search"}]}, 400, "tools[0].type"),
    ({"input": "hi", "tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]}, 400, "tools[0].type"),
    ({"input": "hi", "tools": [{"type": "function"}]}, 400, "tools[0].name"),
    ({"input": "hi", "background": True}, 400, "background"),
    ({"input": "hi", "temperature": "hot"}, 400, "temperature"),
    ({"input": "hi", "max_output_tokens": 0}, 400, "max_output_tokens"),
    ({"input": "hi", "max_output_tokens": 100000}, 400, "max_output_tokens"),  # past --max-model-len
    ({"input": "hi", "stream": "yes"}, 400, "stream"),
    ({"input": "hi", "text": {"format": {"type": "xml"}}}, 400, "text.format.type"),
    ({"input": "hi", "text": {"format": {"type": "json_schema", "name": "x"}}}, 400, "text.format.schema"),
    ({"input": "hi", "tool_choice": "sometimes"}, 400, "tool_choice"),
    ({"input": "hi", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "nope"}}, 400, "tool_choice"),
    ({"input": "hi", "no_such_field": 1}, 400, "no_such_field"),
    ({"input": "hi", "conversation": "conv_1"}, 400, "conversation"),
    ({"input": "hi", "reasoning": {"effort": 3}}, 400, "reasoning.effort"),
    ({"input": "word " * 5000}, 400, "input"),  # past max_model_len
    ({"input": "hi", "model": "other-model"}, 404, "model"),
    ({"input": [{"type": "computer_call"}], "stream": True}, 400, "input[0].type"),  # refused before streaming
]


@pytest.mark.parametrize("body, status, field", BAD_REQUESTS, ids=[str(i) for i in range(len(BAD_REQUESTS))])
def test_bad_request_then_a_good_one(http, body, status, field):
    reply = http.post("/v1/responses", json=dict({"model": MODEL_NAME}, **body))
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert field in error["message"] or error["param"] == field.split("[")[0].split(".")[0], error
    create(http, input="Hi", max_output_tokens=2)


def test_not_found_routes(http):
    assert http.get("/v1/responses/resp_nothing").status_code == 404
    assert http.delete("/v1/responses/resp_nothing").json()["error"]["type"] == "not_found_error"


# ------------------------------------------------------------------ the translation itself


def chunk(**delta):
    return json.dumps({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})


def test_reasoning_message_and_calls_translate():
    """A reasoning model's stream (no such parser on SmolLM2, so the chat
    chunks are written here): reasoning, text, then two calls become three
    kinds of items, in order, the events valid and numbered; the blocking
    answer of the same output has the same items."""
    from vllm_cpp.responses_call import ResponsesCall

    outputs = [chunk(role="assistant", content=""), chunk(reasoning_content="Think"), chunk(reasoning_content="ing."),
               chunk(content="Calling."),
               chunk(tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                                  "function": {"name": "get_weather", "arguments": '{"city": '}}]),
               chunk(tool_calls=[{"index": 0, "function": {"arguments": '"Paris"}'}}]),
               chunk(tool_calls=[{"index": 1, "id": "call_b", "type": "function",
                                  "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]),
               json.dumps({"object": "chat.completion.chunk", "choices": [
                   {"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
               json.dumps({"object": "chat.completion.chunk", "choices": [],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 9}})]
    call = ResponsesCall(json.dumps({"model": MODEL_NAME, "input": "Weather?", "tools": [WEATHER], "stream": True}),
                         None, "resp_x", 1)
    events = [event for text in outputs for event in call.feed(text)]
    closing, response, conversation = call.finish()
    events = [EVENTS.validate_python(e) for e in events + closing]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "response.reasoning_text.delta" in [e.type for e in events]
    final = Response.model_validate(response)
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call", "function_call"]
    assert final.output[0].content[0].text == "Thinking." and final.output_text == "Calling."
    assert [json.loads(item.arguments)["city"] for item in final.output[2:]] == ["Paris", "Rome"]
    assert len({item.id for item in final.output}) == 4
    assert final.usage.total_tokens == 14
    assert conversation[0]["content"] == "Weather?" and conversation[1:] == response["output"]

    blocking = ResponsesCall(json.dumps({"model": MODEL_NAME, "input": "Weather?", "tools": [WEATHER]}), None,
                             "resp_x", 1)
    assert blocking.feed(json.dumps({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "reasoning_content": "Thinking.", "content": "Calling.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9}})) == []
    assert blocking.finish()[1]["output"] == response["output"]

    # Replayed, the conversation is the chat messages it was: reasoning on
    # the assistant turn that made the calls.
    again = ResponsesCall(json.dumps({"input": conversation + [
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny"}]}), None, "resp_y", 2)
    messages = json.loads(again.chat_request)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["reasoning_content"] == "Thinking." and len(messages[1]["tool_calls"]) == 2


# ------------------------------------------------------------------ the Agents SDK


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_agents_sdk_responses_model_with_two_tools(base_url, streamed):
    agents = pytest.importorskip(
        "agents", reason="openai-agents is not installed (the test extra installs it on Python 3.10+)")
    agents.set_tracing_disabled(True)
    calls = []

    @agents.function_tool
    def weather(city: str) -> str:
        """Get the current weather of a city."""
        calls.append(("weather", city))
        return get_weather(city)

    @agents.function_tool
    def population(city: str) -> str:
        """Get the population of a city."""
        calls.append(("population", city))
        return "about two million"

    async def run():
        async with openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0) as client:
            agent = agents.Agent(
                name="forecaster", instructions="Answer with the tools.", tools=[weather, population],
                model=agents.OpenAIResponsesModel(model=MODEL_NAME, openai_client=client),
                # The first turn must call a tool; the SDK then resets
                # tool_choice to auto so the agent can answer.
                model_settings=agents.ModelSettings(tool_choice="weather", temperature=0, max_tokens=24))
            if not streamed:
                return await agents.Runner.run(agent, "What is the weather in Paris?", max_turns=4)
            result = agents.Runner.run_streamed(agent, "What is the weather in Paris?", max_turns=4)
            async for _ in result.stream_events():
                pass
            assert result.is_complete
            return result

    result = asyncio.run(run())
    assert calls and calls[0][0] == "weather"
    kinds = [item.type for item in result.new_items]
    assert kinds[:2] == ["tool_call_item", "tool_call_output_item"]
    assert kinds[-1] == "message_output_item"
    assert isinstance(result.final_output, str)
