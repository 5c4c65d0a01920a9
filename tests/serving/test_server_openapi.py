"""``/openapi.json`` and ``/docs``: the document lists every route the app
serves and every field each body accepts, from schema.py's tables; the
completion readers refuse what the table's bounds exclude; and, since the
engine validates chat bodies, every chat field is driven through the
server: a value of the wrong type (and one past each bound) is refused
naming the field, and a valid value is accepted, so the table and the
engine cannot drift apart."""

import pytest

httpx = pytest.importorskip("httpx")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server  # noqa: E402
from chat_tools import WEATHER_TOOL  # noqa: E402
from vllm_cpp import Engine  # noqa: E402
from vllm_cpp.server import schema  # noqa: E402
from vllm_cpp.server.api_server import ServerConfig, build_app  # noqa: E402
from vllm_cpp.server.limits import RequestLimits  # noqa: E402
from vllm_cpp.server.protocol import (  # noqa: E402
    CHAT_FIELDS as READ_CHAT_FIELDS, COMPLETION_FIELDS as READ_COMPLETION_FIELDS, IGNORED_CHAT_FIELDS,
    IGNORED_COMPLETION_FIELDS)

#: What each body accepts: the fields the server reads and the OpenAI fields it accepts and ignores.
CHAT_FIELDS = READ_CHAT_FIELDS + tuple(IGNORED_CHAT_FIELDS)
COMPLETION_FIELDS = READ_COMPLETION_FIELDS + tuple(IGNORED_COMPLETION_FIELDS)

pytestmark = pytest.mark.timeout(300)

HI = [{"role": "user", "content": "Hi"}]

#: A valid value of every chat field (each sent with HI and max_tokens 1).
CHAT_EXAMPLES = {
    "model": MODEL_NAME, "messages": HI, "max_tokens": 1, "max_completion_tokens": 1, "temperature": 0.5,
    "top_p": 0.9, "n": 2, "stream": False, "stream_options": {"include_usage": True}, "logprobs": True,
    "top_logprobs": 0, "stop": ["\n"], "presence_penalty": 0.5, "frequency_penalty": 0.5, "seed": 7,
    "response_format": {"type": "json_object"}, "tools": [WEATHER_TOOL], "tool_choice": "none", "user": "u1",
    "parallel_tool_calls": False, "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1, "min_tokens": 1,
    "ignore_eos": True, "priority": 1, "chat_template_kwargs": {"x": 1}, "add_generation_prompt": True,
    "continue_final_message": False, "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    "return_token_ids": True, "logit_bias": {"5": 1.0}, "allowed_token_ids": [5, 6], "stop_token_ids": [2],
    "include_stop_str_in_output": True, "skip_special_tokens": False, "guided_json": {"type": "object"},
    "guided_regex": "a+", "guided_choice": ["yes", "no"], "guided_grammar": 'root ::= "a"',
    "structured_outputs": {"regex": "a+"}, "truncate_prompt_tokens": 5, "bad_words": ["foo"],
    "return_tokens_as_token_ids": True,
    "functions": [WEATHER_TOOL["function"]], "function_call": "none",
    # OpenAI's fields the server accepts and ignores, each with a value of OpenAI's type.
    "store": True, "metadata": {"k": "v"}, "service_tier": "auto", "prompt_cache_key": "k",
    "safety_identifier": "s", "modalities": ["text"], "prediction": {"type": "content", "content": "x"},
    "verbosity": "medium", "reasoning_effort": "low",
    # Needs a reasoning parser: tool_engine has one.
    "thinking_token_budget": 16,
}

#: Candidate wrong values: a field gets the first its schema refuses.
WRONG_VALUES = ["x", 7, 1.5, True, [1], {"k": 1}]


@pytest.fixture(scope="module")
def tool_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, tool_parser="hermes", reasoning_parser="deepseek_r1") as eng:
        yield eng


@pytest.fixture(scope="module")
def http(tool_engine):
    # Every chat field's valid example must be accepted: request templates
    # trusted, auto tool choice on, the per-request bounds at the engine's.
    with running_server(tool_engine, max_model_len=512, enable_auto_tool_choice=True,
                        trust_request_chat_template=True, limits=RequestLimits(max_n=128)) as url:
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client


def test_every_accepted_field_is_defined():
    assert set(COMPLETION_FIELDS) <= set(schema.COMPLETION), set(COMPLETION_FIELDS) - set(schema.COMPLETION)
    assert set(CHAT_FIELDS) <= set(schema.CHAT), set(CHAT_FIELDS) - set(schema.CHAT)
    assert set(CHAT_FIELDS) <= set(CHAT_EXAMPLES), set(CHAT_FIELDS) - set(CHAT_EXAMPLES)


def test_document_lists_every_route(http, tool_engine):
    document = http.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    served = set()
    for route in build_app(tool_engine, ServerConfig(model_name=MODEL_NAME)).routes:
        path = route.path.replace("{model_id:path}", "{model_id}")
        served |= {(method.lower(), path) for method in route.methods if method != "HEAD"}
    documented = {(method, path) for path, operations in document["paths"].items() for method in operations}
    assert documented == served
    completion = document["paths"]["/v1/completions"]["post"]["requestBody"]["content"]["application/json"]
    assert set(completion["schema"]["properties"]) == set(COMPLETION_FIELDS)
    assert completion["schema"]["required"] == ["prompt"]
    chat = document["paths"]["/v1/chat/completions"]["post"]["requestBody"]["content"]["application/json"]
    assert set(chat["schema"]["properties"]) == set(CHAT_FIELDS)
    # This server's bounds: --max-n (128 here) and the model's length for max_tokens.
    n = chat["schema"]["properties"]["n"]["anyOf"][0]
    assert (n["minimum"], n["maximum"]) == (1, 128)
    assert completion["schema"]["properties"]["max_tokens"]["anyOf"][0]["maximum"] == 512


def test_docs_page_links_the_document(http):
    page = http.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'href="/openapi.json"' in page.text and "/v1/chat/completions" in page.text


def _wrong_value(spec):
    for value in WRONG_VALUES:
        try:
            jsonschema.validate(value, spec.schema)
        except jsonschema.ValidationError:
            return value
    return None  # the field takes anything


def _out_of_bounds(spec):
    """Values just past each bound of a numeric field."""
    s, step = spec.schema, 1 if spec.schema.get("type") == "integer" else 0.5
    values = []
    if "minimum" in s:
        values.append(s["minimum"] - step)
    if "exclusiveMinimum" in s:
        values.append(s["exclusiveMinimum"])
    if "maximum" in s:
        values.append(s["maximum"] + step)
    return values


def _names(error, name):
    return error["param"] == name or "'%s" % name in error["message"]


@pytest.mark.parametrize("name", sorted(CHAT_FIELDS))
def test_chat_field_matches_the_engine(http, name):
    spec = schema.CHAT[name]
    base = {"messages": HI, "max_tokens": 1}
    example = CHAT_EXAMPLES[name]
    jsonschema.validate(example, spec.schema)  # the table takes the example...
    accepted = http.post("/v1/chat/completions", json=dict(base, **{name: example}))
    assert accepted.status_code == 200, accepted.text  # ...and so does the engine
    refused_values = _out_of_bounds(spec)
    wrong = _wrong_value(spec)
    if wrong is not None:
        refused_values.append(wrong)
    for value in refused_values:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, spec.schema)
        refused = http.post("/v1/chat/completions", json=dict(base, **{name: value}))
        assert refused.status_code == 400, (value, refused.text)
        assert _names(refused.json()["error"], name), (value, refused.text)


@pytest.mark.parametrize("name", sorted(n for n in COMPLETION_FIELDS if schema.COMPLETION[n].schema.get("type")
                                        in ("integer", "number", "boolean")))
def test_completion_readers_follow_the_table(http, name):
    """The engine's completions parser refuses what the table refuses."""
    spec = schema.COMPLETION[name]
    for value in _out_of_bounds(spec) + [_wrong_value(spec)]:
        refused = http.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 1, name: value})
        assert refused.status_code == 400 and _names(refused.json()["error"], name), (value, refused.text)


def test_completion_max_tokens_0_needs_echo(http):
    refused = http.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 0})
    error = refused.json()["error"]
    assert refused.status_code == 400 and error["param"] == "max_tokens" and "echo" in error["message"]
