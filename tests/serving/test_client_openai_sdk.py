"""The ``openai`` SDK as its users write it, against a tool-calling server
on SmolLM2: sync and async, a tool loop over three turns that sends the
SDK's own message objects back, ``chat.completions.parse`` with a pydantic
model, ``models.retrieve``."""

import asyncio
import json

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("pydantic")

from client_support import FORECASTS, City, get_weather  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": get_weather.__doc__,
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": sorted(FORECASTS)}},
                       "required": ["city"]},
    },
}
CALL_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


def test_sync_chat_plain_and_streamed(client):
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    completion = client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=12, temperature=0)
    text = completion.choices[0].message.content
    assert text and completion.usage.completion_tokens <= 12
    stream = client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=12, temperature=0,
                                            stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices) == text


def test_async_chat_plain_and_streamed(base_url):
    async def ask():
        async with openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0) as aclient:
            request = dict(model=MODEL_NAME, messages=[{"role": "user", "content": "Name a colour."}],
                           max_tokens=8, temperature=0)
            blocking, stream = await asyncio.gather(aclient.chat.completions.create(**request),
                                                    aclient.chat.completions.create(**request, stream=True))
            streamed = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
            return blocking.choices[0].message.content, streamed

    blocking, streamed = asyncio.run(ask())
    assert blocking and streamed == blocking


def test_tool_loop_over_three_turns_with_the_sdks_message_objects(client):
    """The loop of the SDK's function-calling guide: the assistant message
    object appended as returned (content None, tool_calls), then a tool
    message per call; two tool turns, then the answer."""
    messages = [{"role": "user", "content": "What is the weather in Paris and in Rome?"}]
    called = []
    for tool_choice in (CALL_WEATHER, CALL_WEATHER):
        completion = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER_TOOL],
                                                    tool_choice=tool_choice, max_tokens=24, temperature=0)
        message = completion.choices[0].message
        assert message.content is None and message.tool_calls
        messages.append(message)
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            called.append(arguments["city"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)})
    assert all(city in FORECASTS for city in called)

    # The third turn is the model's own choice (tool_choice "auto"): greedy
    # SmolLM2 answers (its template shows it no tools), so the loop ends.
    answer = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER_TOOL],
                                            max_tokens=16, temperature=0)
    assert answer.choices[0].finish_reason in ("stop", "length")
    assert answer.choices[0].message.tool_calls is None
    assert isinstance(answer.choices[0].message.content, str)


def test_parse_into_a_pydantic_model(client):
    completion = client.chat.completions.parse(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Which city is the capital of France?"}],
        response_format=City, max_tokens=48, temperature=0)
    city = completion.choices[0].message.parsed
    assert isinstance(city, City)
    assert City.model_validate_json(completion.choices[0].message.content) == city


def test_models_retrieve(client):
    model = client.models.retrieve(MODEL_NAME)
    assert model.id == MODEL_NAME and model.object == "model"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")
