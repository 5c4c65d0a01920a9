"""Tool-call arguments streamed piece by piece (vLLM's way for hermes: the
call's id and name first, then argument fragments), through the ``openai``
client's streaming accumulation helper. SmolLM2 is made to write hermes
markup by a regex constraint (vLLM's ``structured_outputs``) beside
``tool_choice: auto``, so the hermes parser reads real generated text. The
accumulated call equals the blocking answer's, and the server answers the
next request after a malformed block."""

import json

import pytest

openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install openai)")

from chat_tools import WEATHER_TOOL  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
#: The hermes markup of one get_weather call, the city and days the model's own choice.
HERMES_CALL = (r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome|Oslo)", '
               r'"days": [1-7]\}\}\n</tool_call>')


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


def ask(client, **extra):
    return client.chat.completions.create(
        model=MODEL_NAME, messages=MESSAGES, tools=[WEATHER_TOOL], max_tokens=60, temperature=0,
        extra_body={"structured_outputs": {"regex": HERMES_CALL}}, **extra)


def test_arguments_arrive_in_pieces_and_add_up(client):
    blocking = ask(client).choices[0]
    assert blocking.finish_reason == "tool_calls"
    [call] = blocking.message.tool_calls
    assert call.function.name == "get_weather"
    arguments = json.loads(call.function.arguments)
    assert set(arguments) == {"city", "days"}

    deltas = []
    for chunk in ask(client, stream=True):
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            deltas.extend(chunk.choices[0].delta.tool_calls)
    assert len(deltas) > 2, deltas
    first, rest = deltas[0], deltas[1:]
    # The first delta names the call (with the arguments' first piece: '{"city": ').
    assert first.id and first.function.name == "get_weather" and first.function.arguments == '{"city": '
    assert all(d.index == 0 and d.id is None and d.function.name is None for d in rest)
    assert first.function.arguments + "".join(d.function.arguments for d in rest) == call.function.arguments


def test_the_clients_accumulation_helper_rebuilds_the_call(client):
    blocking = ask(client).choices[0].message.tool_calls[0]
    with client.chat.completions.stream(
            model=MODEL_NAME, messages=MESSAGES, tools=[WEATHER_TOOL], max_tokens=60, temperature=0,
            extra_body={"structured_outputs": {"regex": HERMES_CALL}}) as stream:
        argument_events = [event for event in stream if event.type == "tool_calls.function.arguments.delta"]
        final = stream.get_final_completion()
    assert len(argument_events) > 1
    [call] = final.choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == (blocking.function.name, blocking.function.arguments)
    assert json.loads(argument_events[-1].arguments) == json.loads(call.function.arguments)


def test_a_block_broken_after_its_first_key_stays_a_call(client):
    broken = r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris", oops\}\}\n</tool_call>'
    message = client.chat.completions.create(
        model=MODEL_NAME, messages=MESSAGES, tools=[WEATHER_TOOL], max_tokens=60, temperature=0,
        extra_body={"structured_outputs": {"regex": broken}}).choices[0].message
    [call] = message.tool_calls
    assert call.function.arguments == '{"city": "Paris", '
    assert ask(client).choices[0].finish_reason == "tool_calls"
