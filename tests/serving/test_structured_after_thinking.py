"""Structured output after thinking and ``thinking_token_budget`` (vLLM's
rule), against a server on SmolLM2 with the qwen3 reasoning parser: SmolLM2's
output is read as thinking from its first token, and it never closes the
think section itself, so the budget's forced ``</think>`` is what ends it.
The grammar then applies to what follows: over a corpus of schemas, every
answer's content validates with ``jsonschema`` (chat completions, streamed
and not, Responses' ``text.format``, Messages' forced tool), while the
reasoning is the unconstrained output's own first tokens. Concurrent
requests give what each gives alone; bad budgets are refused naming the
field, and the server answers the next request."""

import concurrent.futures
import json

import pytest

openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install openai)")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (pip install jsonschema)")

from server_harness import MODEL_NAME, running_server  # noqa: E402

pytestmark = pytest.mark.timeout(600)

MAX_MODEL_LEN = 512
BUDGET = 6
ASK = [{"role": "user", "content": "Describe Paris in a few words."}]
GREEDY = {"temperature": 0, "max_tokens": 120}

SCHEMAS = [
    {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}}, "required": ["city"],
     "additionalProperties": False},
    {"type": "object", "properties": {"population": {"type": "integer", "minimum": 0, "maximum": 99999999}},
     "required": ["population"], "additionalProperties": False},
    {"type": "object", "properties": {"capital": {"type": "boolean"}}, "required": ["capital"],
     "additionalProperties": False},
    {"type": "object", "properties": {"size": {"enum": ["small", "medium", "large"]}}, "required": ["size"],
     "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                               "minItems": 1, "maxItems": 3}},
     "required": ["tags"], "additionalProperties": False},
    {"type": "object", "properties": {"where": {"type": "object", "properties": {
        "country": {"type": "string", "maxLength": 12}}, "required": ["country"], "additionalProperties": False}},
     "required": ["where"], "additionalProperties": False},
    {"type": "object", "properties": {"rating": {"type": "number", "minimum": 0, "maximum": 5}},
     "required": ["rating"], "additionalProperties": False},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                      "founded": {"type": "integer", "minimum": 0, "maximum": 3000}},
     "required": ["name", "founded"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 4},
    {"type": "object", "properties": {"river": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 8}]}},
     "required": ["river"], "additionalProperties": False},
]


def schema_format(schema, name="answer"):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, reasoning_parser="qwen3") as engine:
        with running_server(engine, max_model_len=MAX_MODEL_LEN) as url:
            yield url


def ask(client, **extra):
    body = dict(GREEDY)
    body.update(extra.pop("extra_body", {}))
    return client.chat.completions.create(model=MODEL_NAME, messages=ASK, extra_body=body, **extra)


def reasoning_of(message):
    return (message.model_extra or {}).get("reasoning_content") or ""


@pytest.fixture(scope="module")
def free_reasoning(client):
    """The unconstrained, unbudgeted output: all of it thinking."""
    message = ask(client).choices[0].message
    assert message.content is None and reasoning_of(message)
    return reasoning_of(message)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_content_after_reasoning_validates(client, free_reasoning, index):
    schema = SCHEMAS[index]
    response = ask(client, response_format=schema_format(schema), extra_body={"thinking_token_budget": BUDGET})
    message = response.choices[0].message
    # The reasoning is the free output's own start: the grammar never touched it.
    assert reasoning_of(message) and free_reasoning.startswith(reasoning_of(message).rstrip())
    jsonschema.validate(json.loads(message.content), schema)
    assert response.choices[0].finish_reason == "stop"

    # Streaming gives the same reasoning and content.
    stream = ask(client, response_format=schema_format(schema), stream=True,
                 extra_body={"thinking_token_budget": BUDGET})
    reasoning, content = "", ""
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
            content += delta.content or ""
    assert (reasoning, content) == (reasoning_of(message), message.content)


def test_budget_alone_ends_the_reasoning(client, free_reasoning):
    message = ask(client, extra_body={"thinking_token_budget": BUDGET}).choices[0].message
    assert free_reasoning.startswith(reasoning_of(message).rstrip()) and len(reasoning_of(message)) < len(free_reasoning)
    assert message.content  # the answer after the forced </think>
    zero = ask(client, response_format={"type": "json_object"}, extra_body={"thinking_token_budget": 0})
    assert not reasoning_of(zero.choices[0].message)
    assert isinstance(json.loads(zero.choices[0].message.content), dict)


def test_thinking_off_constrains_from_the_first_token(client):
    schema = SCHEMAS[0]
    message = ask(client, response_format=schema_format(schema),
                  extra_body={"chat_template_kwargs": {"enable_thinking": False}}).choices[0].message
    assert not reasoning_of(message)
    jsonschema.validate(json.loads(message.content), schema)


def test_responses_text_format_after_reasoning(client):
    schema = SCHEMAS[7]
    response = client.responses.create(
        model=MODEL_NAME, input="Describe Paris in a few words.", max_output_tokens=120, temperature=0,
        text={"format": {"type": "json_schema", "name": "city", "schema": schema}},
        extra_body={"thinking_token_budget": BUDGET})
    assert [item.type for item in response.output] == ["reasoning", "message"]
    jsonschema.validate(json.loads(response.output_text), schema)


def test_messages_forced_tool_after_thinking(base_url):
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)
    schema = SCHEMAS[3]
    tool = {"name": "describe", "description": "Describe a city.", "input_schema": schema}
    message = client.messages.create(
        model=MODEL_NAME, max_tokens=120, messages=ASK, tools=[tool],
        tool_choice={"type": "tool", "name": "describe"},
        thinking={"type": "enabled", "budget_tokens": BUDGET}, extra_body={"temperature": 0})
    assert [block.type for block in message.content] == ["thinking", "tool_use"]
    jsonschema.validate(message.content[1].input, schema)


def test_concurrent_requests_equal_each_alone(client):
    bodies = [dict(response_format=schema_format(SCHEMAS[i]), extra_body={"thinking_token_budget": BUDGET + i})
              for i in range(4)]

    def run(kwargs):
        message = ask(client, **kwargs).choices[0].message
        return reasoning_of(message), message.content

    alone = [run(kwargs) for kwargs in bodies]
    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        together = list(pool.map(run, bodies))
    assert together == alone


@pytest.mark.parametrize("budget, needle", [(-1, "thinking_token_budget"), ("8", "thinking_token_budget"),
                                            (1.5, "thinking_token_budget")])
def test_bad_budgets_are_refused(client, budget, needle):
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, extra_body={"thinking_token_budget": budget})
    assert needle in str(info.value)
    assert ask(client, extra_body={"max_tokens": 2}).choices[0].finish_reason == "length"


def test_budget_without_a_reasoning_parser_is_refused(smollm2_path):
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=256, reasoning_parser="none") as engine:
        with running_server(engine, max_model_len=256) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
            with pytest.raises(openai.BadRequestError, match="thinking_token_budget.*reasoning parser"):
                ask(client, response_format=schema_format(SCHEMAS[0]), extra_body={"thinking_token_budget": 4})
            messages = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
            with pytest.raises(anthropic.BadRequestError, match="budget_tokens"):
                messages.messages.create(model=MODEL_NAME, max_tokens=8, messages=ASK,
                                         thinking={"type": "enabled", "budget_tokens": 4})
            # A schema alone constrains from the first token there, and the server still answers.
            content = ask(client, response_format=schema_format(SCHEMAS[0])).choices[0].message.content
            jsonschema.validate(json.loads(content), SCHEMAS[0])
