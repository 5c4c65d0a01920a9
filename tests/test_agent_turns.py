"""What agent loops and OpenAI clients send, turned into tests (issue 37).

Each case runs through HTTP with the ``openai`` client (or raw bodies where
the client would reshape them) and, where the path exists, through the C
ABI's chat (``Engine.chat``):

- an agent's second turn: the assistant message that only called tools
  (``content`` null or absent, the SDK's other null fields), sent back as
  the SDK's own message object, its ``model_dump()`` and its
  ``model_dump(exclude_none=True)``; arguments as an object; a tool message
  without content; over the bundled SmolLM2 template and the fixture
  templates of other families that call tools;
"""

import json
import pathlib

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from conftest import CHAT_TEMPLATES_DIR  # noqa: E402
from server_harness import MODEL_NAME, running_server  # noqa: E402
from test_chat import WEATHER_TOOL  # noqa: E402
from vllm_cpp import Engine  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 1024

#: The issue's reproduction: the second turn of every tool-using agent.
ISSUE_BODY = {"messages": [
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]}

FORCED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, tool_parser="hermes") as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(engine):
    with running_server(engine, max_model_len=MAX_MODEL_LEN, enable_auto_tool_choice=True,
                        trust_request_chat_template=True) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url):
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=120) as c:
        yield c


def short(**extra):
    return dict({"model": MODEL_NAME, "max_tokens": 4, "temperature": 0}, **extra)


# ------------------------------------------------------------ bug 1: agent turns


def test_issue_reproduction_over_http(http):
    response = http.post("/v1/chat/completions", json=short(**ISSUE_BODY))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["role"] == "assistant"


def test_issue_reproduction_through_engine_chat(engine):
    response = engine.chat(short(**ISSUE_BODY))
    assert response["choices"][0]["finish_reason"] in ("length", "stop")


def sent_back(message, how):
    """The assistant message as an agent appends it to its history."""
    if how == "object":  # the SDK serialises its own pydantic object
        return message
    if how == "dump":  # every field, nulls included (content, refusal, audio, function_call)
        return message.model_dump()
    return message.model_dump(exclude_none=True)  # no content key at all


@pytest.mark.parametrize("how", ["object", "dump", "exclude_none"])
def test_openai_sdk_tool_round_trip_over_three_turns(client, how):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER_TOOL],
                                           tool_choice=FORCED, max_tokens=40, temperature=0)
    message = first.choices[0].message
    assert message.tool_calls and message.tool_calls[0].function.name == "get_weather"
    assert json.loads(message.tool_calls[0].function.arguments)["city"]
    messages.append(sent_back(message, how))
    messages.append({"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "sunny, 21 C"})
    second = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER_TOOL],
                                            max_tokens=8, temperature=0)
    messages.append(sent_back(second.choices[0].message, how))
    messages.append({"role": "user", "content": "And in Rome?"})
    third = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER_TOOL],
                                           tool_choice=FORCED, max_tokens=40, temperature=0)
    assert third.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_engine_chat_tool_round_trip_over_three_turns(engine):
    """The same loop on the C ABI's chat, its own response messages (content
    null beside tool_calls) appended as they come."""
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = engine.chat({"messages": messages, "tools": [WEATHER_TOOL], "tool_choice": FORCED,
                         "max_tokens": 40, "temperature": 0})
    message = first["choices"][0]["message"]
    assert message["content"] is None and message["tool_calls"]
    messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "sunny"}]
    second = engine.chat({"messages": messages, "tools": [WEATHER_TOOL], "max_tokens": 8, "temperature": 0})
    messages += [second["choices"][0]["message"], {"role": "user", "content": "And in Rome?"}]
    third = engine.chat({"messages": messages, "tools": [WEATHER_TOOL], "tool_choice": FORCED,
                         "max_tokens": 40, "temperature": 0})
    assert third["choices"][0]["message"]["tool_calls"]


#: Histories of the same class: arguments already an object (LangChain's
#: AIMessage.tool_calls), empty arguments, a tool message without content,
#: content parts of the kinds the SDKs write, names, the SDK's null fields.
ODD_BUT_VALID = {
    "arguments as an object": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
    "empty arguments, tool message without content": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c1", "content": None}],
    "text parts and names": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}], "name": None},
        {"role": "user", "content": ["Weather", {"type": "input_text", "text": "in Oslo?"}], "name": "ann"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}], "refusal": "No.", "audio": None,
         "function_call": None, "tool_calls": None, "annotations": []},
        {"role": "user", "content": "Please?"}],
}


@pytest.mark.parametrize("name", sorted(ODD_BUT_VALID))
def test_odd_but_valid_histories(http, engine, name):
    body = short(messages=ODD_BUT_VALID[name], tools=[WEATHER_TOOL])
    response = http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert engine.chat(body)["choices"][0]["finish_reason"] in ("length", "stop", "tool_calls")


@pytest.mark.parametrize("messages,needle", [
    ([{"role": "user", "content": ["a", None]}], "'messages[0].content[1]' must be an object (got null)"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}],
     "'messages[0].tool_calls[0].function.arguments' is not valid JSON"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
     "'messages[0].content[0].type' 'image_url' is not supported"),
])
def test_malformed_histories_are_named(http, engine, messages, needle):
    response = http.post("/v1/chat/completions", json=short(messages=messages))
    assert response.status_code == 400 and needle in response.json()["error"]["message"], response.text
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        engine.chat(short(messages=messages))


def tool_templates():
    """The fixture templates of families that call tools (they read tool_calls)."""
    found = sorted(pathlib.Path(CHAT_TEMPLATES_DIR).glob("*.jinja"))
    return [p for p in found if "tool_calls" in p.read_text(encoding="utf-8")]


#: A round trip with ids every family accepts (mistral's: 9 alphanumerics),
#: the assistant turn as the SDK dumps it and as exclude_none leaves it.
def template_round_trip(exclude_none):
    call = {"id": "abc123DEF", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    assistant = {"role": "assistant", "tool_calls": [call]}
    if not exclude_none:
        assistant.update(content=None, refusal=None, audio=None, function_call=None)
    return [{"role": "user", "content": "Weather in Paris?"}, assistant,
            {"role": "tool", "tool_call_id": "abc123DEF", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny in Paris."},
            {"role": "user", "content": "And tomorrow?"}]


@pytest.mark.skipif(not tool_templates(), reason="no chat template fixtures (../shared/fixtures/chat_templates)")
@pytest.mark.parametrize("exclude_none", [False, True], ids=["dump", "exclude_none"])
def test_tool_round_trip_over_other_families_templates(http, engine, exclude_none):
    templates = tool_templates()
    assert len(templates) >= 4, [t.name for t in templates]
    for template in templates:
        body = short(messages=template_round_trip(exclude_none), tools=[WEATHER_TOOL],
                     chat_template=template.read_text(encoding="utf-8"), max_tokens=1)
        response = http.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, (template.name, response.text)
        assert engine.chat(body)["usage"]["prompt_tokens"] == response.json()["usage"]["prompt_tokens"], template.name
