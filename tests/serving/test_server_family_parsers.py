"""The tool-call and reasoning parsers of today's model families through the
server and the official ``openai`` client: SmolLM2, shown two worked
examples in the family's own markup, answers a third in that markup (greedy),
and the server parses it, streamed and not, into the same tool calls and
reasoning, validated by the client's types. Qwen3-Coder's XML calls
(``qwen3_coder``, arguments typed by the tool's schema) and gpt-oss's harmony
channels (``openai`` with the ``openai_gptoss`` reasoning parser). Then the
gpt-oss tiny model: its template picks both parsers and ``reasoning_effort``
reaches its template."""

import json
import pathlib

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

from server_harness import MODEL_NAME, running_server  # noqa: E402
from vllm_cpp import Engine  # noqa: E402

pytestmark = pytest.mark.timeout(300)

TINY_MOE = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_moe"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}


def qwen3_coder_call(city, days):
    """A call as Qwen3-Coder's chat template renders it."""
    return (f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>\n"
            f"<parameter=days>\n{days}\n</parameter>\n</function>\n</tool_call>")


def harmony_call(city, days):
    """gpt-oss's analysis message, then its call on the commentary channel (harmony)."""
    return (f"<|channel|>analysis<|message|>The user wants the weather in {city}.<|end|>"
            "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
            + json.dumps({"city": city}) + "<|call|>")


def few_shot(render):
    return [{"role": "user", "content": "Weather in Paris for 2 days?"},
            {"role": "assistant", "content": render("Paris", 2)},
            {"role": "user", "content": "Weather in Rome for 5 days?"},
            {"role": "assistant", "content": render("Rome", 5)},
            {"role": "user", "content": "Weather in London for 3 days?"}]


@pytest.fixture(scope="module", params=["qwen3_coder", "openai"])
def family(request, smollm2_path):
    """(parser, messages, expected arguments, expected reasoning, client)."""
    if request.param == "qwen3_coder":
        options, render, arguments, reasoning = {}, qwen3_coder_call, {"city": "London", "days": 3}, None
    else:
        options, render, arguments, reasoning = ({"reasoning_parser": "openai_gptoss"}, harmony_call,
                                                 {"city": "London"}, "The user wants the weather in London.")
    with Engine.load(smollm2_path, max_model_len=1024, tool_parser=request.param, **options) as engine:
        with running_server(engine, max_model_len=1024, enable_auto_tool_choice=True) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
            yield request.param, few_shot(render), arguments, reasoning, client


def strict(model):
    return type(model).model_validate(model.model_dump(exclude_unset=True))


def test_blocking_and_streamed_calls_agree(family):
    parser, messages, arguments, reasoning, client = family
    response = client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER],
                                              max_tokens=80, temperature=0)
    assert isinstance(strict(response), ChatCompletion)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls", (parser, choice)
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.id.startswith("call_") and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == arguments
    assert (choice.message.model_extra or {}).get("reasoning_content") == reasoning

    chunks = list(client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=[WEATHER],
                                                 max_tokens=80, temperature=0, stream=True))
    assert all(isinstance(strict(c), ChatCompletionChunk) for c in chunks)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    streamed_calls = [t for d in deltas for t in (d.tool_calls or [])]
    # Accumulated by index as OpenAI's client does: qwen3_coder's arguments arrive in pieces.
    merged = []
    for t in streamed_calls:
        if merged and merged[-1][0] == t.index:
            merged[-1] = (t.index, merged[-1][1], merged[-1][2] + (t.function.arguments or ""))
        else:
            merged.append((t.index, t.function.name, t.function.arguments or ""))
    assert merged == [(0, "get_weather", call.function.arguments)]
    assert "".join(d.content or "" for d in deltas) == ""
    streamed_reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert streamed_reasoning == (reasoning or "")
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


def test_plain_answer_stays_content(family):
    """Without tools the markup parsers leave an ordinary answer alone, and the server answers the next request."""
    parser, _, _, _, client = family
    response = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Say hi."}],
                                              max_tokens=8, temperature=0)
    assert isinstance(strict(response), ChatCompletion)
    assert response.choices[0].message.content, parser


@pytest.fixture(scope="module")
def gpt_oss():
    path = TINY_MOE / "gpt-oss.gguf"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    # "auto": the parsers the template's markers call for (as unset does).
    with Engine.load(str(path), max_model_len=256, tool_parser="auto", reasoning_parser="auto") as engine:
        yield engine


def test_gpt_oss_template_picks_harmony_parsers(gpt_oss):
    """The parsers are detected from gpt-oss's template (tool_parser auto):
    whatever the tiny random model writes is parsed, never refused or
    crashed on, streamed or not; a request with tools gets past the tool
    parser check (refused before a harmony parser existed) and stops only at
    the tiny model's 256-token context, which its tool listing overflows."""
    from vllm_cpp.errors import ContextLengthExceededError

    request = {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "max_tokens": 12, "temperature": 0}
    reply = gpt_oss.chat(request)
    assert reply["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    assert list(gpt_oss.chat_stream(dict(request, stream=True)))
    with pytest.raises(ContextLengthExceededError):
        gpt_oss.chat(dict(request, tools=[WEATHER]))
    assert gpt_oss.chat(request)["choices"]


def test_reasoning_effort_reaches_the_gpt_oss_template(gpt_oss):
    messages = [{"role": "user", "content": "Hello!"}]
    high = gpt_oss.tokenize_chat({"messages": messages, "reasoning_effort": "high"})
    as_kwargs = gpt_oss.tokenize_chat({"messages": messages, "chat_template_kwargs": {"reasoning_effort": "high"}})
    medium = gpt_oss.tokenize_chat({"messages": messages})
    assert high == as_kwargs and high != medium
    assert "Reasoning: high" in gpt_oss.detokenize(high)
    # chat_template_kwargs wins over the field, as the more specific setting.
    both = gpt_oss.tokenize_chat({"messages": messages, "reasoning_effort": "low",
                                  "chat_template_kwargs": {"reasoning_effort": "high"}})
    assert both == high
    with pytest.raises(Exception, match="reasoning_effort"):
        gpt_oss.tokenize_chat({"messages": messages, "reasoning_effort": 3})


def test_markup_of_special_tokens_is_kept_for_these_parsers(smollm2_path):
    """Dialects whose markers are special tokens in their tokenizers keep
    special tokens in a request's text while they parse it (with tools), as
    vLLM's adjust_request does; other requests, and hermes, skip them as before.
    SmolLM2's <|im_start|> (id 1, a control token) stands in for them."""
    request = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "allowed_token_ids": [1],
               "temperature": 0}
    for parser, kept in (("qwen3_coder", "<|im_start|><|im_start|>"), ("hermes", "")):
        with Engine.load(smollm2_path, max_model_len=512, tool_parser=parser) as engine:
            with_tools = engine.chat(dict(request, tools=[WEATHER]))["choices"][0]["message"]["content"]
            without = engine.chat(request)["choices"][0]["message"]["content"]
            assert (with_tools or "", without or "") == (kept, ""), parser


def test_auto_without_markers_refuses_tools_clearly(smollm2_path):
    """SmolLM2's template shows no tool-call format: with "auto" a request
    with tools is refused naming the missing parser, and the next is served."""
    from vllm_cpp.errors import InvalidArgumentError

    request = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0}
    with Engine.load(smollm2_path, max_model_len=512, tool_parser="auto") as engine:
        with pytest.raises(InvalidArgumentError, match="needs a tool parser"):
            engine.chat(dict(request, tools=[WEATHER]))
        assert engine.chat(request)["choices"][0]["message"]["content"]
