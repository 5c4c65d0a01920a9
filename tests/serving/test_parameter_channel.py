"""One parameter channel: every sampling field is checked by the engine's one
parser of them (sample/sampling_fields.h), so the same bad value gets the
same error wherever it comes in: a 400 with the same message and ``param``
on /v1/chat/completions and /v1/completions, and the same
INVALID_ARGUMENT message through the C ABI (a chat request through
``vllm_chat``, a completion through the options JSON of
``vllm_request_submit_pull_with_options`` and, for the fields it has,
through ``vllm_sampling_params``). After every refusal the engine and the
server still answer."""

import json

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server  # noqa: E402
from vllm_cpp import Engine, InvalidArgumentError, SamplingParams  # noqa: E402
from vllm_cpp._ffi import ffi, last_error, lib  # noqa: E402

pytestmark = pytest.mark.timeout(300)

HI = [{"role": "user", "content": "Hi"}]

# (fields of the body, the one message, the param it names). Each body also
# has max_tokens 2 unless it names max_tokens itself.
CASES = [
    ({"temperature": -1}, "'temperature' must be >= 0 (got -1)", "temperature"),
    ({"temperature": "hot"}, "'temperature' must be a number (got string)", "temperature"),
    ({"top_p": 1.5}, "'top_p' must be in (0, 1] (got 1.5)", "top_p"),
    ({"top_p": 0}, "'top_p' must be in (0, 1] (got 0)", "top_p"),
    ({"top_k": -2}, "'top_k' must be -1, 0 (all tokens) or between 1 and 2147483647 (got -2)", "top_k"),
    ({"top_k": 2 ** 40}, "'top_k' must be -1, 0 (all tokens) or between 1 and 2147483647 (got 1099511627776)",
     "top_k"),
    ({"min_p": 1.5}, "'min_p' must be in [0, 1] (got 1.5)", "min_p"),
    ({"presence_penalty": 3}, "'presence_penalty' must be in [-2, 2] (got 3)", "presence_penalty"),
    ({"frequency_penalty": -2.5}, "'frequency_penalty' must be in [-2, 2] (got -2.5)", "frequency_penalty"),
    ({"repetition_penalty": 0}, "'repetition_penalty' must be > 0 (got 0)", "repetition_penalty"),
    ({"max_tokens": -5}, "'max_tokens' must be between 1 and 2147483647 (got -5)", "max_tokens"),
    ({"min_tokens": -1}, "'min_tokens' must be between 0 and 2147483647 (got -1)", "min_tokens"),
    ({"min_tokens": 5}, "'min_tokens' (5) must not exceed max_tokens (2)", "min_tokens"),
    ({"seed": "x"}, "'seed' must be an integer (got string)", "seed"),
    ({"ignore_eos": "yes"}, "'ignore_eos' must be a boolean (got string)", "ignore_eos"),
    ({"stop": 5}, "'stop' must be a string or an array of strings (got int)", "stop"),
    ({"stop": [""]}, "'stop' strings must not be empty", "stop"),
    ({"stop": ["a\u0000b"]}, "'stop' strings must not contain NUL", "stop"),
    ({"stop_token_ids": [-1]}, "'stop_token_ids[0]' must be a token id (got -1)", "stop_token_ids"),
    ({"stop_token_ids": [10 ** 9]}, "'stop_token_ids' token id 1000000000 is outside the vocabulary (49152 tokens)",
     "stop_token_ids"),
    ({"include_stop_str_in_output": "yes"}, "'include_stop_str_in_output' must be a boolean (got string)",
     "include_stop_str_in_output"),
    ({"skip_special_tokens": 0}, "'skip_special_tokens' must be a boolean (got int)", "skip_special_tokens"),
    ({"truncate_prompt_tokens": 0}, "'truncate_prompt_tokens' must be a positive number of tokens (got 0)",
     "truncate_prompt_tokens"),
    ({"truncate_prompt_tokens": -1},
     "'truncate_prompt_tokens' -1 (the model's length) is not supported: give the number of tokens to keep",
     "truncate_prompt_tokens"),
    ({"bad_words": [" "]}, "'bad_words[0]' must not be empty or blank", "bad_words"),
    ({"logit_bias": {"3": 200}}, "'logit_bias[\"3\"]' must be in [-100, 100] (got 200)", "logit_bias"),
    ({"logit_bias": {"x": 1}}, "'logit_bias' keys must be token ids (got 'x')", "logit_bias"),
    ({"allowed_token_ids": []}, "'allowed_token_ids' must not be empty", "allowed_token_ids"),
]
IDS = ["%s=%s" % next(iter(fields.items())) for fields, _, _ in CASES]

#: Protocol fields outside the engine's parser (each protocol reads them
#: itself: chat in the engine, completions in server/protocol.py until the
#: protocol room parses both) that both endpoints refuse alike.
PROTOCOL_CASES = [
    ({"n": 0}, "'n' must be between 1 and 128 (got 0)", "n"),
    ({"n": 1.5}, "'n' must be an integer (got float)", "n"),
    ({"priority": 1.5}, "'priority' must be an integer (got float)", "priority"),
    ({"n": "2"}, "'n' must be an integer (got string)", "n"),
    ({"n": 129}, "'n' is 129, more than this server allows (16; set by --max-n)", "n"),
    ({"stream": "yes"}, "'stream' must be a boolean (got string)", "stream"),
    ({"stream_options": 3}, "'stream_options' must be an object (got int)", "stream_options"),
    ({"stream_options": {"include_usage": "x"}, "stream": True}, "'include_usage' must be a boolean (got string)",
     "include_usage"),
    ({"stream_options": {"bogus": 1}, "stream": True}, "unrecognized request argument: 'bogus'", "bogus"),
    ({"response_format": 3}, "'response_format' must be an object (got int)", "response_format"),
    ({"response_format": {"type": "xml"}},
     "'response_format.type' must be 'text', 'json_object' or 'json_schema' (got 'xml')", "response_format"),
    ({"response_format": {"type": "json_schema"}}, "'response_format.json_schema' is required", "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}},
     "'response_format.json_schema.schema' must be an object (got int)", "response_format"),
    ({"guided_regex": 3}, "'guided_regex' must be a string (got int)", "guided_regex"),
    ({"guided_choice": "a"}, "'guided_choice' must be an array (got string)", "guided_choice"),
    ({"guided_json": 3}, "'guided_json' must be a JSON schema (an object or its JSON text) (got int)", "guided_json"),
    ({"structured_outputs": 3}, "'structured_outputs' must be an object (got int)", "structured_outputs"),
    ({"structured_outputs": {"json_object": 3}}, "'structured_outputs.json_object' must be a boolean (got int)",
     "structured_outputs"),
    ({"return_token_ids": "x"}, "'return_token_ids' must be a boolean (got string)", "return_token_ids"),
    ({"return_tokens_as_token_ids": "x"}, "'return_tokens_as_token_ids' must be a boolean (got string)",
     "return_tokens_as_token_ids"),
    ({"user": 3}, "'user' must be a string (got int)", "user"),
    ({"model": 3}, "'model' must be a string", "model"),
    ({"no_such_field": 1}, "unrecognized request argument: 'no_such_field'", "no_such_field"),
]
PROTOCOL_IDS = ["%s=%s" % next(iter(fields.items())) for fields, _, _ in PROTOCOL_CASES]

#: The struct's own fields: the same refusal through vllm_sampling_params.
STRUCT_FIELDS = {"temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
                 "repetition_penalty", "min_tokens", "stop"}


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256) as eng:
        yield eng


@pytest.fixture(scope="module")
def http(engine):
    with running_server(engine, max_model_len=256) as url:
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client


def body_with(fields):
    return dict({"max_tokens": 2}, **fields)


def assert_refused(response, message, param):
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["message"], error["param"], error["type"]) == (message, param, "invalid_request_error"), error


def submit_with_options_refusal(engine, options):
    """The INVALID_ARGUMENT message of a completion submitted through
    vllm_request_submit_pull_with_options with `options` as its options
    JSON ("" when it was accepted, then cancelled and freed)."""
    options_b = json.dumps(options).encode()
    params = ffi.new("vllm_sampling_params*")
    params[0] = lib.vllm_sampling_params_default()
    params.max_tokens = 2
    poller = ffi.new("vllm_poller**")
    request = ffi.new("vllm_request**")
    with engine._use() as h:
        assert lib.vllm_poller_create(h, poller) == lib.VLLM_OK, last_error()
        try:
            status = lib.vllm_request_submit_pull_with_options(h, poller[0], 1, b"Hello", ffi.NULL, 0, params, 0, -1,
                                                               options_b, request)
            message = last_error()
            if status == lib.VLLM_OK:
                lib.vllm_request_free(request[0])
                return ""
            assert status == lib.VLLM_ERR_INVALID_ARGUMENT, (status, message)
            return message
        finally:
            lib.vllm_poller_free(poller[0])


def test_enough_fields():
    assert len({next(iter(fields)) for fields, _, _ in CASES + PROTOCOL_CASES}) >= 20


@pytest.mark.parametrize("fields, message, param", CASES + PROTOCOL_CASES, ids=IDS + PROTOCOL_IDS)
def test_both_endpoints_refuse_alike(http, fields, message, param):
    assert_refused(http.post("/v1/chat/completions", json=dict(body_with(fields), messages=HI)), message, param)
    assert_refused(http.post("/v1/completions", json=dict(body_with(fields), prompt="Hello")), message, param)


@pytest.mark.parametrize("fields, message, param", CASES, ids=IDS)
def test_the_c_abi_refuses_alike(engine, fields, message, param):
    with pytest.raises(InvalidArgumentError) as chat:
        engine.chat_json(json.dumps(dict(body_with(fields), messages=HI)))
    assert str(chat.value) == message
    with pytest.raises(InvalidArgumentError) as completion:
        engine.completions_json(json.dumps(dict(body_with(fields), prompt="Hello")))
    assert str(completion.value) == message
    assert submit_with_options_refusal(engine, body_with(fields)) == message


#: The protocol rows the engine answers (the others are the HTTP layer's:
#: the server's --max-n, unknown fields, user, the stream flags it frames
#: its answer by; chat_json / completions_json set "stream" themselves).
ENGINE_PROTOCOL_CASES = [(case, name) for case, name in zip(PROTOCOL_CASES, PROTOCOL_IDS)
                         if "--max-n" not in case[1] and "unrecognized" not in case[1]
                         and case[2] not in ("user", "include_usage", "stream")]


@pytest.mark.parametrize("fields, message, param", [case for case, _ in ENGINE_PROTOCOL_CASES],
                         ids=[name for _, name in ENGINE_PROTOCOL_CASES])
def test_the_c_abi_protocol_entry_points_refuse_alike(engine, fields, message, param):
    """vllm_chat_submit_pull and vllm_completion_submit_pull read the fields
    they share with one parser: the same refusal, word for word."""
    refusals = []
    for run, body in ((engine.chat_json, dict(body_with(fields), messages=HI)),
                      (engine.completions_json, dict(body_with(fields), prompt="Hello"))):
        with pytest.raises(InvalidArgumentError) as refused:
            run(json.dumps(body))
        refusals.append(str(refused.value))
    assert refusals[0] == refusals[1] and refusals[0].startswith(message.split(" (got")[0]), refusals


def test_both_endpoints_accept_alike(http):
    """Values one endpoint took and the other refused before the protocol
    room: a json_schema response_format without a schema (any object) or
    with a boolean one."""
    for fields in ({"response_format": {"type": "json_schema", "json_schema": {"name": "any"}}},
                   {"response_format": {"type": "json_schema", "json_schema": {"name": "any", "schema": True}}}):
        for path, extra in (("/v1/chat/completions", {"messages": HI}), ("/v1/completions", {"prompt": "Hello"})):
            response = http.post(path, json=dict(body_with(fields), max_tokens=4, **extra))
            assert response.status_code == 200, (path, response.text)


#: The rows whose value the struct can carry (a number, or the empty stop
#: string); SamplingParams refuses a negative min_tokens and a NUL itself
#: (refusals tests/unit/test_api_surface.py pins).
STRUCT_CASES = [((fields, message, param), name) for (fields, message, param), name in zip(CASES, IDS)
                if next(iter(fields)) in STRUCT_FIELDS
                and name not in ("temperature=hot", "top_k=1099511627776", "stop=5", "min_tokens=-1")
                and "NUL" not in message]


@pytest.mark.parametrize("fields, message, param", [case for case, _ in STRUCT_CASES],
                         ids=[name for _, name in STRUCT_CASES])
def test_the_struct_refuses_alike(engine, fields, message, param):
    with pytest.raises(InvalidArgumentError) as refused:
        engine.complete("Hello", SamplingParams(**body_with(fields)))
    assert str(refused.value) == message


def test_temperature_above_2_is_accepted_everywhere(http, engine):
    """vLLM's rule: any temperature >= 0 (completions refused above 2)."""
    for path, extra in (("/v1/chat/completions", {"messages": HI}), ("/v1/completions", {"prompt": "Hello"})):
        response = http.post(path, json=dict(body_with({"temperature": 3.5, "seed": 1}), **extra))
        assert response.status_code == 200, response.text
    assert engine.complete("Hello", SamplingParams(temperature=3.5, max_tokens=2, seed=1)).completion_tokens >= 1
    assert submit_with_options_refusal(engine, {"temperature": 3.5}) == ""


def test_options_json_sets_the_struct_fields(engine):
    """A key of the options JSON replaces the struct's value: greedy through
    the options JSON is the struct's greedy."""
    greedy = engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=6))
    through_options = engine.complete("The capital of France is",
                                      SamplingParams(request_fields={"temperature": 0, "max_tokens": 6}))
    assert through_options.text == greedy.text and through_options.completion_tokens == greedy.completion_tokens


def test_still_serving_after_refusals(http, engine):
    response = http.post("/v1/completions", json={"model": MODEL_NAME, "prompt": "Hello", "max_tokens": 2})
    assert response.status_code == 200, response.text
    response = http.post("/v1/chat/completions", json={"model": MODEL_NAME, "messages": HI, "max_tokens": 2})
    assert response.status_code == 200, response.text


def streamed_choice_order(http, path, body):
    """The choice index of each streamed chunk that carries content (text,
    or a chat delta's content), in the order the client got them; and each
    choice's finish position and whether a role chunk of every choice came
    before any content (chat; True for completions, which have none)."""
    order, finishes, roles_first, seen_content = [], {}, True, False
    with http.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            for choice in chunk["choices"]:
                delta = choice.get("delta", {})
                if delta.get("role") and seen_content:
                    roles_first = False
                if choice.get("text") or delta.get("content"):
                    seen_content = True
                    order.append(choice["index"])
                if choice["finish_reason"] is not None:
                    finishes[choice["index"]] = len(order)
    return order, finishes, roles_first


def test_both_endpoints_interleave_streamed_choices(http):
    """vLLM's order on both endpoints: each choice's chunks as they are
    generated, the choices interleaved (not all of choice 0, then choice 1);
    chat sends every choice's role chunk first."""
    fields = {"n": 2, "max_tokens": 12, "ignore_eos": True, "temperature": 0, "stream": True}
    for path, extra in (("/v1/chat/completions", {"messages": HI}), ("/v1/completions", {"prompt": "Hello"})):
        order, finishes, roles_first = streamed_choice_order(http, path, dict(fields, **extra))
        assert sorted(set(order)) == [0, 1], (path, order)
        # Choice 1's first content comes before choice 0's last: interleaved.
        assert order.index(1) < len(order) - 1 - order[::-1].index(0), (path, order)
        assert order.index(1) <= 2, (path, order)  # not held back behind choice 0
        assert roles_first, path
        assert set(finishes) == {0, 1}, (path, finishes)


def streamed_texts(http, path, body):
    """Each choice's streamed text (chat: its content), by index."""
    texts = {}
    with http.stream("POST", path, json=dict(body, stream=True)) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[len("data: "):])["choices"]:
                    text = choice.get("text") or choice.get("delta", {}).get("content") or ""
                    texts[choice["index"]] = texts.get(choice["index"], "") + text
    return [texts[i] for i in sorted(texts)]


def test_both_endpoints_fan_n_out_alike(http, engine):
    """One rule for n on both endpoints (vLLM's): choice i of a seeded request
    samples with seed + i. A completion of the chat prompt's ids then gives
    the chat choices' texts, choice by choice, whole or streamed."""
    ids = engine.tokenize_chat({"messages": HI})
    fields = {"n": 3, "seed": 5, "temperature": 1.0, "max_tokens": 10}
    chat = http.post("/v1/chat/completions", json=dict(fields, messages=HI)).json()
    completion = http.post("/v1/completions", json=dict(fields, prompt=ids)).json()
    texts = [c["message"]["content"] for c in chat["choices"]]
    assert [c["text"] for c in completion["choices"]] == texts
    assert len(set(texts)) > 1  # the choices differ: each has its own seed
    assert streamed_texts(http, "/v1/chat/completions", dict(fields, messages=HI)) == texts
    assert streamed_texts(http, "/v1/completions", dict(fields, prompt=ids)) == texts
