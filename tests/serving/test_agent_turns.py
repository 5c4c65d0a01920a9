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
- documented OpenAI fields the server does not use, accepted and ignored
  (a wrong type still refused, unknown fields still refused), and the
  legacy ``functions`` / ``function_call`` read as tools and tool_choice;
- ``echo`` with ``max_tokens: 0`` on /v1/completions: the prompt and its
  logprobs, nothing generated, streamed and not, with n and several prompts;
- a prompt past max_model_len: OpenAI's ``context_length_exceeded`` with
  vLLM's wording, and ``ContextLengthExceededError`` from the engine.
"""

import json
import pathlib

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from fixture_dirs import CHAT_TEMPLATES_DIR  # noqa: E402 (tests/serving/conftest.py shadows conftest)
from server_harness import MODEL_NAME, running_server  # noqa: E402
from chat_tools import WEATHER_TOOL  # noqa: E402
from vllm_cpp import ContextLengthExceededError, Engine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 1024

#: The issue's reproduction: the second turn of every tool-using agent.
ISSUE_BODY = {"messages": [
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]}

FORCED = {"type": "function", "function": {"name": "get_weather"}}
LEGACY_FUNCTION = WEATHER_TOOL["function"]


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, tool_parser="hermes") as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(engine):
    with running_server(engine, max_model_len=MAX_MODEL_LEN, enable_auto_tool_choice=True,
                        trust_request_chat_template=True) as url:
        yield url


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
     "messages[0].content[0]: only data: URLs are decoded here (got 'x')"),
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


# ------------------------------------------- bug 2: fields clients send


#: Documented chat fields the server does not use, as the SDK sends them.
IGNORED = dict(store=True, metadata={"session": "s1", "agent": "triage"}, service_tier="auto",
               prompt_cache_key="conversation-1", safety_identifier="user-hash", modalities=["text"],
               prediction={"type": "content", "content": "Paris"}, verbosity="low", reasoning_effort="low")


def test_documented_fields_are_accepted_and_ignored(client, engine):
    response = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}],
                                              max_tokens=4, temperature=0, user="u1", **IGNORED)
    assert response.choices[0].finish_reason in ("length", "stop")
    # The engine's chat reads what it knows and ignores the rest (the C ABI's rule).
    assert engine.chat(short(messages=[{"role": "user", "content": "Hi"}], **IGNORED))["choices"]


def test_legacy_functions_count_against_the_tools_bound(http):
    response = http.post("/v1/chat/completions", json=short(messages=[{"role": "user", "content": "Hi"}],
                                                            functions=[LEGACY_FUNCTION] * 129))
    assert response.status_code == 400 and response.json()["error"]["param"] == "functions", response.text


@pytest.mark.parametrize("field,value,needle", [
    ("metadata", {"k": 1}, "'metadata' must be an object of strings"),
    ("store", "yes", "'store' must be a boolean"),
    ("modalities", ["text", "audio"], "'modalities' other than"),
    ("frobnicate", 1, "unrecognized request argument: 'frobnicate'"),
])
def test_ignored_fields_still_type_checked_and_unknown_refused(http, field, value, needle):
    response = http.post("/v1/chat/completions", json=short(messages=[{"role": "user", "content": "Hi"}],
                                                            **{field: value}))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert needle in error["message"] and error["param"] == field, error



def test_legacy_functions_over_http(client):
    """The deprecated function-calling fields, read as tools and
    tool_choice and answered in that API (message.function_call)."""
    response = client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Weather in Paris?"}], functions=[LEGACY_FUNCTION],
        function_call={"name": "get_weather"}, max_tokens=40, temperature=0)
    choice = response.choices[0]
    call = choice.message.function_call
    assert choice.message.tool_calls is None and choice.finish_reason == "function_call"
    assert call.name == "get_weather" and json.loads(call.arguments)["city"]
    streamed = {"name": "", "arguments": ""}
    finish = None
    for chunk in client.chat.completions.create(
            model=MODEL_NAME, messages=[{"role": "user", "content": "Weather in Paris?"}],
            functions=[LEGACY_FUNCTION], function_call={"name": "get_weather"}, max_tokens=40, temperature=0,
            stream=True):
        for c in chunk.choices:
            assert not c.delta.tool_calls
            if c.delta.function_call is not None:
                streamed["name"] += c.delta.function_call.name or ""
                streamed["arguments"] += c.delta.function_call.arguments or ""
            finish = c.finish_reason or finish
    assert streamed == {"name": call.name, "arguments": call.arguments} and finish == "function_call"
    # The legacy history an old client sends back: function_call, then a "function" message.
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": None, "function_call": call.model_dump()},
               {"role": "function", "name": "get_weather", "content": "sunny"}]
    again = client.chat.completions.create(model=MODEL_NAME, messages=history, functions=[LEGACY_FUNCTION],
                                           function_call="none", max_tokens=4, temperature=0)
    assert again.choices[0].message.function_call is None and again.choices[0].message.tool_calls is None


def test_legacy_functions_through_engine_chat(engine):
    response = engine.chat({"messages": [{"role": "user", "content": "Weather in Paris?"}],
                            "functions": [LEGACY_FUNCTION], "function_call": {"name": "get_weather"},
                            "max_tokens": 40, "temperature": 0})
    assert response["choices"][0]["message"]["function_call"]["name"] == "get_weather"
    with pytest.raises(ValueError, match="give 'tools' or the legacy 'functions', not both"):
        engine.chat({"messages": [{"role": "user", "content": "Hi"}], "functions": [LEGACY_FUNCTION],
                     "tools": [WEATHER_TOOL]})


# ------------------------------------------- bug 3: echo without generation

PROMPTS = ["The capital of France is", "One, two, three,"]


def test_echo_without_generation(client, engine):
    response = client.completions.create(model=MODEL_NAME, prompt=PROMPTS, echo=True, max_tokens=0, logprobs=2,
                                         n=2, temperature=0)
    assert len(response.choices) == 4
    for choice in response.choices:
        prompt = PROMPTS[choice.index // 2]
        ids = engine.tokenize(prompt)
        assert choice.text == prompt and choice.finish_reason == "length"
        assert len(choice.logprobs.tokens) == len(ids) and "".join(choice.logprobs.tokens) == prompt
        assert choice.logprobs.token_logprobs[0] is None
        assert all(lp is not None and lp <= 0 for lp in choice.logprobs.token_logprobs[1:])
    prompt_tokens = sum(len(engine.tokenize(p)) for p in PROMPTS)
    assert response.usage.completion_tokens == 0
    assert response.usage.prompt_tokens == response.usage.total_tokens == prompt_tokens


def test_echo_without_generation_streamed(client):
    blocking = client.completions.create(model=MODEL_NAME, prompt=PROMPTS, echo=True, max_tokens=0, logprobs=1)
    texts, logprobs, finishes, usage = {}, {}, {}, None
    for chunk in client.completions.create(model=MODEL_NAME, prompt=PROMPTS, echo=True, max_tokens=0, logprobs=1,
                                           stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            if choice.logprobs is not None:
                logprobs.setdefault(choice.index, []).extend(choice.logprobs.token_logprobs)
            if choice.finish_reason is not None:
                finishes[choice.index] = choice.finish_reason
    assert texts == {0: PROMPTS[0], 1: PROMPTS[1]} and finishes == {0: "length", 1: "length"}
    for choice in blocking.choices:
        assert logprobs[choice.index] == pytest.approx(choice.logprobs.token_logprobs, abs=1e-4)
    assert usage.completion_tokens == 0 and usage.prompt_tokens == blocking.usage.prompt_tokens


def test_echo_without_logprobs_and_zero_tokens_without_echo(http):
    plain = http.post("/v1/completions", json=short(prompt=PROMPTS[0], echo=True, max_tokens=0)).json()
    assert plain["choices"][0]["text"] == PROMPTS[0] and plain["choices"][0]["logprobs"] is None
    refused = http.post("/v1/completions", json=short(prompt=PROMPTS[0], max_tokens=0))
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "max_tokens", refused.text


# ------------------------------------------- bug 4: context overflow

LONG = "cat " * (MAX_MODEL_LEN + 200)
OVERFLOW = "This model's maximum context length is %d tokens. However, your request has " % MAX_MODEL_LEN


@pytest.mark.parametrize("stream", [False, True])
def test_context_overflow_is_openais_error_over_http(client, stream):
    with pytest.raises(openai.BadRequestError) as chat_error:
        client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": LONG}],
                                       max_tokens=4, stream=stream)
    with pytest.raises(openai.BadRequestError) as completion_error:
        client.completions.create(model=MODEL_NAME, prompt=LONG, max_tokens=4, stream=stream)
    for error, param in ((chat_error.value, "messages"), (completion_error.value, "prompt")):
        body = error.body
        assert error.code == "context_length_exceeded" and body["param"] == param, body
        assert body["type"] == "invalid_request_error"
        assert body["message"].startswith(OVERFLOW) and body["message"].endswith(
            " input tokens. Please reduce the length of the input messages."), body
    assert client.completions.create(model=MODEL_NAME, prompt="Hi", max_tokens=2).choices[0].text is not None


def test_context_overflow_through_the_engine(engine):
    with pytest.raises(ContextLengthExceededError) as chat_error:
        engine.chat({"messages": [{"role": "user", "content": LONG}], "max_tokens": 4})
    with pytest.raises(ContextLengthExceededError) as completion_error:
        engine.complete(LONG, SamplingParams.greedy(max_tokens=4))
    for error in (chat_error.value, completion_error.value):
        assert isinstance(error, ValueError) and str(error).startswith(OVERFLOW)
        assert error.max_model_len == MAX_MODEL_LEN and error.prompt_tokens > MAX_MODEL_LEN
    assert completion_error.value.prompt_tokens == len(engine.tokenize(LONG))
