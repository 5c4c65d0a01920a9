"""Tool calls streamed in pieces beyond hermes (issue 42): the llama3_json
and qwen3_coder dialects, and the calls tool_choice forces (a named
function, "required"), each read from real generated text (SmolLM2 made to
write the dialect's markup by a regex constraint, as in
test_streamed_tool_arguments.py, or shown worked turns in it where the API
has no regex field; a forced call by the engine's own grammar).
Streamed, a call's first delta names it and its arguments follow in several
fragments that add up exactly to the blocking answer: in chat completions
(the openai client's deltas), Responses (function_call_arguments.delta) and
Messages (input_json_delta, through the anthropic SDK)."""

import json

import pytest

openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install openai)")

from server_harness import MODEL_NAME, running_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 512
MESSAGES = [{"role": "user", "content": "What is the weather in Paris for the next days?"}]
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]},
                                               "days": {"type": "integer", "minimum": 1, "maximum": 7}},
              "required": ["city", "days"], "additionalProperties": False}
CHAT_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                              "parameters": PARAMETERS}}
#: Each dialect's markup of one get_weather call, the city and days the model's own choice.
DIALECT_CALLS = {
    "llama3_json": r'\{"name": "get_weather", "parameters": \{"city": "(Paris|Rome|Oslo)", "days": [1-7]\}\}',
    "qwen3_coder": (r"<tool_call>\n<function=get_weather>\n<parameter=city>\n(Paris|Rome|Oslo)\n</parameter>\n"
                    r"<parameter=days>\n[1-7]\n</parameter>\n</function>\n</tool_call>"),
}


@pytest.fixture(scope="module", params=sorted(DIALECT_CALLS))
def dialect_server(request, smollm2_path):
    """(dialect, base URL) of a server with that tool-call parser and auto tool choice."""
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, tool_parser=request.param) as engine:
        with running_server(engine, max_model_len=MAX_MODEL_LEN, enable_auto_tool_choice=True) as url:
            yield request.param, url


def openai_client(url):
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


def chat(client, stream=False, **extra):
    return client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, tools=[CHAT_TOOL], max_tokens=60,
                                          temperature=0, stream=stream, **extra)


def streamed_deltas(stream):
    deltas = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            deltas.extend(chunk.choices[0].delta.tool_calls)
    return deltas


def check_pieces(deltas, call):
    """The first delta names the call; the rest are fragments of its arguments adding up to them."""
    assert len(deltas) > 2, deltas
    first, rest = deltas[0], deltas[1:]
    assert first.id and first.function.name == call.function.name
    assert all(d.index == 0 and d.id is None and d.function.name is None for d in rest)
    assert first.function.arguments + "".join(d.function.arguments for d in rest) == call.function.arguments


def test_dialect_calls_stream_in_pieces(dialect_server):
    dialect, url = dialect_server
    client = openai_client(url)
    constraint = {"extra_body": {"structured_outputs": {"regex": DIALECT_CALLS[dialect]}}}
    blocking = chat(client, **constraint).choices[0]
    assert blocking.finish_reason == "tool_calls", blocking
    [call] = blocking.message.tool_calls
    assert call.function.name == "get_weather" and set(json.loads(call.function.arguments)) == {"city", "days"}
    check_pieces(streamed_deltas(chat(client, stream=True, **constraint)), call)


@pytest.mark.parametrize("tool_choice", [{"type": "function", "function": {"name": "get_weather"}}, "required"])
def test_forced_chat_calls_stream_in_pieces(dialect_server, tool_choice):
    _, url = dialect_server
    client = openai_client(url)
    blocking = chat(client, tool_choice=tool_choice).choices[0]
    [call] = blocking.message.tool_calls
    assert set(json.loads(call.function.arguments)) == {"city", "days"}
    check_pieces(streamed_deltas(chat(client, stream=True, tool_choice=tool_choice)), call)


@pytest.mark.parametrize("tool_choice", [{"type": "function", "name": "get_weather"}, "required"])
def test_forced_responses_calls_stream_in_pieces(dialect_server, tool_choice):
    _, url = dialect_server
    client = openai_client(url)
    tool = {"type": "function", "name": "get_weather", "description": "The weather in a city.", "parameters": PARAMETERS}
    body = dict(model=MODEL_NAME, input=MESSAGES[0]["content"], tools=[tool], tool_choice=tool_choice,
                max_output_tokens=60, temperature=0)
    blocking = [item for item in client.responses.create(**body).output if item.type == "function_call"]
    assert len(blocking) == 1
    events = list(client.responses.create(stream=True, **body))
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) > 2, deltas
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and "".join(deltas) == done[0].arguments == blocking[0].arguments


@pytest.mark.parametrize("tool_choice", [{"type": "tool", "name": "get_weather"}, {"type": "any"}])
def test_forced_messages_calls_stream_in_pieces(dialect_server, tool_choice):
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
    _, url = dialect_server
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    tool = {"name": "get_weather", "description": "The weather in a city.", "input_schema": PARAMETERS}
    body = dict(model=MODEL_NAME, max_tokens=60, messages=MESSAGES, tools=[tool], tool_choice=tool_choice,
                extra_body={"temperature": 0})
    answer = client.messages.create(**body)
    blocking = [block for block in answer.content if block.type == "tool_use"][0]
    with client.messages.stream(**body) as stream:
        events = list(stream)
        final = stream.get_final_message()
    # The first call's pieces ("any" may go on to more calls until max_tokens).
    use = [block for block in final.content if block.type == "tool_use"][0]
    first_block = next(e.index for e in events if e.type == "content_block_start" and e.content_block.type == "tool_use")
    first_pieces = [e.delta.partial_json for e in events if e.type == "content_block_delta"
                    and e.index == first_block and e.delta.type == "input_json_delta"]
    assert len(first_pieces) > 2, first_pieces
    assert json.loads("".join(first_pieces)) == use.input == blocking.input
    assert final.stop_reason == answer.stop_reason
    # The same blocks ("any" cut by max_tokens inside a second call: that call's text is a text block,
    # which the stream sends where it came, after the call, and the blocking message before the calls).
    assert (sorted(json.dumps(without_id(block), sort_keys=True) for block in final.content)
            == sorted(json.dumps(without_id(block), sort_keys=True) for block in answer.content))


def without_id(block):
    return {key: value for key, value in block.model_dump().items() if key != "id"}


#: Each dialect's markup of a call, as its family's template renders one: shown in
#: worked turns, SmolLM2 answers the last question in it (greedy), with auto tool choice.
DIALECT_RENDER = {
    "llama3_json": lambda city, days: json.dumps({"name": "get_weather", "parameters": {"city": city, "days": days}}),
    "qwen3_coder": lambda city, days: (f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>\n"
                                       f"<parameter=days>\n{days}\n</parameter>\n</function>\n</tool_call>"),
}


def worked_turns(dialect):
    render = DIALECT_RENDER[dialect]
    return [{"role": "user", "content": "Weather in Paris for 2 days?"},
            {"role": "assistant", "content": render("Paris", 2)},
            {"role": "user", "content": "Weather in Rome for 5 days?"},
            {"role": "assistant", "content": render("Rome", 5)},
            {"role": "user", "content": "Weather in Oslo for 3 days?"}]


def test_dialect_calls_stream_in_pieces_in_responses(dialect_server):
    dialect, url = dialect_server
    client = openai_client(url)
    tool = {"type": "function", "name": "get_weather", "description": "The weather in a city.", "parameters": PARAMETERS}
    body = dict(model=MODEL_NAME, input=worked_turns(dialect), tools=[tool], max_output_tokens=60, temperature=0)
    blocking = [item for item in client.responses.create(**body).output if item.type == "function_call"]
    if len(blocking) != 1:
        pytest.skip("SmolLM2 did not answer in the %s markup here" % dialect)
    events = list(client.responses.create(stream=True, **body))
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) > 1, deltas
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and "".join(deltas) == done[0].arguments == blocking[0].arguments
    assert json.loads(blocking[0].arguments) == {"city": "Oslo", "days": 3}


def test_dialect_calls_stream_in_pieces_in_messages(dialect_server):
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
    dialect, url = dialect_server
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    tool = {"name": "get_weather", "description": "The weather in a city.", "input_schema": PARAMETERS}
    body = dict(model=MODEL_NAME, max_tokens=60, messages=worked_turns(dialect), tools=[tool],
                extra_body={"temperature": 0})
    answer = client.messages.create(**body)
    uses = [block for block in answer.content if block.type == "tool_use"]
    if len(uses) != 1:
        pytest.skip("SmolLM2 did not answer in the %s markup here" % dialect)
    with client.messages.stream(**body) as stream:
        events = list(stream)
        final = stream.get_final_message()
    pieces = [e.delta.partial_json for e in events
              if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(pieces) > 1, pieces
    [use] = [block for block in final.content if block.type == "tool_use"]
    assert json.loads("".join(pieces)) == use.input == uses[0].input == {"city": "Oslo", "days": 3}
    assert final.stop_reason == answer.stop_reason == "tool_use"
