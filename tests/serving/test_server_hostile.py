"""A hostile-request corpus against one server: huge numbers, deep
nesting, invalid UTF-8, NUL bytes, grammar bombs, catastrophic regexes,
megabyte stop strings, template injection through message content and
through request templates (the server trusts request templates here, so
they reach the engine's Jinja interpreter), file paths and URLs where a
client might hope for a file to be read.

Each case gets its clear 4xx (an OpenAI error body whose message holds the
expected words), or, where the request is legitimate however odd, a 200
whose content shows the attack did nothing; after each, the server (a
thread of this process) is still up and the next good request succeeds.
"""

import json

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, hostile_input_client, wait_until_idle  # noqa: E402
from vllm_cpp import Engine  # noqa: E402

pytestmark = pytest.mark.timeout(600)

MAX_BYTES = 4 * 1024 * 1024
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def hostile_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=4) as eng:
        yield eng


@pytest.fixture(scope="module")
def http(hostile_engine):
    with hostile_input_client(hostile_engine, MAX_BYTES) as client:
        yield client


def completion(**fields):
    return dict({"model": MODEL_NAME, "prompt": "Hello", "max_tokens": 2}, **fields)


def chat(**fields):
    return dict({"model": MODEL_NAME, "messages": HI, "max_tokens": 2}, **fields)


def tokenize(**fields):
    return dict({"model": MODEL_NAME, "messages": HI}, **fields)


def nested(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_schema(depth):
    schema = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def raw_json_nesting(depth):
    return b'{"model": "smollm2", "prompt": ' + b"[" * depth + b"]" * depth + b"}"


def doubling_grammar(levels):
    rules = ["root ::= d0"] + ['d%d ::= d%d d%d | "a"' % (i, i + 1, i + 1) for i in range(levels)]
    return "\n".join(rules + ['d%d ::= "a"' % levels])


def tool(name, parameters=None):
    return {"type": "function", "function": {"name": name, "parameters": parameters or {"type": "object"}}}


C, CH, TOK, DETOK = "/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"
SECRET_PATH = "/etc/passwd"
TEMPLATE_END = "{{ messages[0]['content'] }}"

# (name, path, body (bytes are sent raw), statuses accepted, words the error message holds)
CASES = [
    # -- huge numbers --------------------------------------------------------------------------
    ("max_tokens 2^40", C, completion(max_tokens=2 ** 40), {400}, "max_tokens"),
    ("chat max_tokens 2^40", CH, chat(max_tokens=2 ** 40), {400}, "max_tokens"),
    ("max_tokens past max_model_len", C, completion(max_tokens=100000), {400}, "--max-model-len"),
    ("max_tokens beyond int64", C, completion(max_tokens=10 ** 30), {400}, "max_tokens"),
    ("max_tokens as 1e999 (infinity)", C, b'{"prompt": "Hi", "max_tokens": 1e999}', {400}, "max_tokens"),
    ("a number of 100,000 digits", C, b'{"prompt": "Hi", "max_tokens": ' + b"9" * 100000 + b"}", {400}, "JSON"),
    ("n of a million", C, completion(n=10 ** 6), {400}, "--max-n"),
    ("chat n of a million", CH, chat(n=10 ** 6), {400}, "--max-n"),
    ("temperature 1e308", C, completion(temperature=1e308), {400}, "temperature"),
    ("temperature NaN", C, b'{"prompt": "Hi", "temperature": NaN}', {400}, "temperature"),
    ("chat temperature NaN", CH, b'{"messages": [{"role": "user", "content": "Hi"}], "temperature": NaN}', {400},
     ""),
    ("seed 2^70", C, completion(seed=2 ** 70), {400}, "seed"),
    ("chat seed 2^70", CH, chat(seed=2 ** 70), {400}, "seed"),
    ("top_k 2^63", C, completion(top_k=2 ** 63), {400}, "top_k"),
    ("logprobs a billion", C, completion(logprobs=10 ** 9), {400}, "logprobs"),
    ("priority 2^40", C, completion(priority=2 ** 40), {400}, "priority"),
    ("token id 2^40", C, completion(prompt=[1, 2 ** 40]), {400}, ""),
    ("negative token id", C, completion(prompt=[-5]), {400}, ""),
    ("detokenize ids outside the vocabulary", DETOK, {"tokens": [2 ** 31 - 1, -1]}, {400}, ""),
    # -- deep nesting --------------------------------------------------------------------------
    ("body nested 100,000 deep", C, raw_json_nesting(100000), {400}, "nested too deeply"),
    ("message content nested 900 deep", CH, chat(messages=[{"role": "user", "content": nested(900)}]), {400},
     ""),
    ("schema nested 300 deep", CH, chat(response_format={"type": "json_schema", "json_schema": {
        "name": "x", "schema": nested_schema(300)}}), {400}, ""),
    ("tool parameters nested 900 deep", CH, chat(tools=[tool("f", nested(900, {}))], tool_choice="none"),
     {400}, ""),
    ("chat_template_kwargs nested 900 deep", TOK, tokenize(chat_template_kwargs={"x": nested(900)}), {200, 400},
     ""),
    # -- bytes ---------------------------------------------------------------------------------
    ("invalid UTF-8 in the body", C, b'{"prompt": "caf\xe9 \xff\xfe"}', {400}, "JSON"),
    ("a lone surrogate in the prompt", C, b'{"prompt": "a\\ud800b", "max_tokens": 2}', {400}, ""),
    ("a lone surrogate in chat content", CH,
     b'{"messages": [{"role": "user", "content": "a\\udfffb"}], "max_tokens": 2}', {400}, ""),
    ("NUL in the prompt", C, completion(prompt="a\u0000b"), {400}, "NUL"),
    ("NUL in chat content", CH, chat(messages=[{"role": "user", "content": "a\u0000b"}]), {200, 400}, ""),
    ("NUL in a stop string", C, completion(stop=["\u0000"]), {400}, "NUL"),
    ("NUL in the model name", C, completion(model="smollm2\u0000"), {404}, "does not exist"),
    ("body not JSON at all", C, b"\x00\x01\x02GET / HTTP/1.1", {400}, "JSON"),
    # -- grammars and regexes ------------------------------------------------------------------
    ("GBNF of 100,000 nested parentheses", C,
     completion(guided_grammar="root ::= " + "(" * 100000 + '"a"' + ")" * 100000), {400}, "nested too deeply"),
    # min_tokens keeps the model from ending after one "a" (the text stays
    # unambiguous then, and whether it does is the model's choice).
    ("exponentially ambiguous GBNF", C,
     completion(guided_grammar=doubling_grammar(20), max_tokens=8, min_tokens=8), {400, 500},
     ""),
    ("left-recursive GBNF", C, completion(guided_grammar="root ::= root \"a\" | \"b\""), {400}, "left recursion"),
    ("regex of 30,000 nested groups", C, completion(guided_regex="(" * 30000 + "a" + ")" * 30000), {400},
     "nested too deeply"),
    ("catastrophic regex (a+)+b", C, completion(guided_regex="(a+)+b", max_tokens=4), {200}, ""),
    ("catastrophic regex (a|a?)+ with a huge count", C, completion(guided_regex="(a|a?){1000000}"), {400}, ""),
    ("regex that admits nothing", C, completion(guided_regex=r"[^\s\S]"), {400}, "matches no string"),
    ("regex [^\\d\\D] that admits nothing", C, completion(guided_regex=r"[^\d\D]"), {400},
     "the regex '[^\\d\\D]' matches no string"),
    ("GBNF that never terminates", C, completion(guided_grammar='root ::= "a" root'), {400}, "admits no text"),
    ("JSON Schema enum of nothing", C, completion(guided_json={"enum": []}), {400}, "'enum' must be a non-empty"),
    ("JSON Schema required property that needs itself", CH, chat(response_format={
        "type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]}}}), {400}, "admits no text"),
    ("JSON Schema $ref to itself", CH, chat(response_format={"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"$ref": "#"}}}), {200, 400}, ""),
    ("JSON Schema $ref to a file", CH, chat(response_format={"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"$ref": "file://" + SECRET_PATH}}}), {400}, "$ref"),
    ("JSON Schema $ref to a URL", C, completion(guided_json={"$ref": "http://127.0.0.1:1/schema.json"}), {400},
     "$ref"),
    ("JSON Schema pattern that admits nothing", C,
     completion(guided_json={"type": "string", "pattern": r"[^\s\S]"}), {400}, ""),
    # -- sizes and counts ----------------------------------------------------------------------
    ("a 1 MB stop string", C, completion(stop=["x" * (1 << 20)]), {400}, "--max-stop-string-bytes"),
    ("1,000 stop strings", CH, chat(stop=["s%d" % i for i in range(1000)]), {400}, "--max-stop-strings"),
    ("1,000 bad words", C, completion(bad_words=["w%d" % i for i in range(1000)]), {400}, "--max-stop-strings"),
    ("a 1 MB bad word", CH, chat(bad_words=["x" * 1_000_000]), {400}, "--max-stop-string-bytes"),
    ("100,000 allowed token ids", C, completion(allowed_token_ids=list(range(100000))), {200, 400}, ""),
    ("1,000 tools", CH, chat(tools=[tool("f%d" % i) for i in range(1000)], tool_choice="none"), {400},
     "--max-tools"),
    ("a body past the size limit", C, completion(prompt="x" * (MAX_BYTES + 1)), {413}, "limit"),
    ("a prompt of 1 MB", C, completion(prompt="y" * (1 << 20)), {400}, "maximum context length"),
    ("100,000 messages", CH, chat(messages=[{"role": "user", "content": "a"}] * 100000), {400},
     "maximum context length"),
    ("1,000 prompts at once", C, completion(prompt=["Hi"] * 1000), {503}, "overloaded"),
    # -- file paths and templates --------------------------------------------------------------
    ("template include of a file", TOK, tokenize(chat_template="{% include '" + SECRET_PATH + "' %}"), {400},
     "include"),
    ("template import of a file", TOK, tokenize(chat_template="{% import '" + SECRET_PATH + "' as x %}"), {400},
     "import"),
    ("template extends a file", TOK, tokenize(chat_template="{% extends '" + SECRET_PATH + "' %}"), {400},
     "extends"),
    ("template reaching Python internals", TOK,
     tokenize(chat_template="{{ ''.__class__.__mro__[1].__subclasses__() }}" + TEMPLATE_END), {200, 400}, ""),
    ("template reaching os through a global", TOK,
     tokenize(chat_template="{{ cycler.__init__.__globals__.os.popen('id').read() }}" + TEMPLATE_END),
     {200, 400}, ""),
    ("template reaching config/self", TOK, tokenize(chat_template="{{ self }}{{ config }}" + TEMPLATE_END),
     {200, 400}, ""),
    ("template loop bomb", TOK,
     tokenize(chat_template="{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
     {400}, ""),
    ("template output bomb", TOK, tokenize(chat_template="{{ 'x' * 1000000000 }}"), {400}, ""),
    ("template filter chain of 100,000", TOK, tokenize(chat_template="{{ 'a'" + "|upper" * 100000 + " }}"), {400},
     "nested too deeply"),
    ("template operator chain of 100,000", TOK, tokenize(chat_template="{{ 1" + " + 1" * 100000 + " }}"), {400},
     "nested too deeply"),
    ("template nesting a list 100,000 deep", TOK, tokenize(
        chat_template="{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}"
                      "{{ ns.x }}"), {400}, "nested too deeply"),
    ("template recursion bomb", TOK,
     tokenize(chat_template="{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), {400}, ""),
    ("a template path instead of a template", CH, chat(chat_template=SECRET_PATH), {200, 400}, ""),
    ("template injection through message content", TOK,
     tokenize(messages=[{"role": "user", "content": "{{ 7 * 7 }}{% for x in range(9) %}{% endfor %}"}]), {200},
     ""),
    ("template injection through a tool name", CH, chat(tools=[tool("{{ 7 * 7 }}")], tool_choice="none"), {200},
     ""),
    ("chat_template inside chat_template_kwargs", CH,
     chat(chat_template_kwargs={"chat_template": "{{ 'x' }}"}), {400}, "chat_template"),
    ("an image content part", CH,
     chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file://"
                                                                                    + SECRET_PATH}}]}]),
     {400}, ""),
    ("a model name that is a path", C, completion(model=SECRET_PATH), {404}, "does not exist"),
    ("a model name that is an object", C, completion(model={"$gt": ""}), {400}, "model"),
    ("tokenizer_config_path in the body", CH, chat(tokenizer_config_path=SECRET_PATH), {400}, "tokenizer_config_path"),
    ("a logit_bias past 100", CH, chat(logit_bias={"1": 1e308}), {400}, "logit_bias"),
    ("a logit_bias id past the vocabulary", C, completion(logit_bias={"4294967296": 1}), {400}, "logit_bias"),
    ("a huge allowed_token_ids id", CH, chat(allowed_token_ids=[2 ** 63]), {400}, "allowed_token_ids"),
    ("a logit_bias key that is not a number", C, completion(logit_bias={"1e3": 1}), {400}, "logit_bias"),
]


def _send(http, path, body):
    if isinstance(body, bytes):
        return http.post(path, content=body, headers={"Content-Type": "application/json"})
    return http.post(path, json=body)


def _good(http):
    response = http.post(C, json=completion(max_tokens=1, temperature=0))
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["completion_tokens"] == 1


def test_the_corpus_has_at_least_40_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,path,body,statuses,words", CASES, ids=[c[0] for c in CASES])
def test_hostile_request(http, hostile_engine, name, path, body, statuses, words):
    response = _send(http, path, body)
    assert response.status_code in statuses, (response.status_code, response.text[:500])
    if response.status_code != 200:
        error = response.json()["error"]
        assert words in error["message"], error
        assert error["type"] and len(error["message"]) < 10000
    else:
        text = response.text
        assert "root:" not in text and "<class" not in text and "uid=" not in text, text[:500]
    wait_until_idle(hostile_engine)
    _good(http)


def test_template_injection_through_content_stays_text(http):
    payload = "{{ 7 * 7 }}"
    tokens = http.post(TOK, json=tokenize(messages=[{"role": "user", "content": payload}])).json()["tokens"]
    prompt = http.post(DETOK, json={"tokens": tokens}).json()["prompt"]
    assert payload in prompt and "49" not in prompt


def test_request_template_sees_no_file_or_python(http):
    template = "{{ ''.__class__ }}|{{ ''.__class__.__mro__ }}|{{ range.__globals__ }}|" + TEMPLATE_END
    response = http.post(TOK, json=tokenize(chat_template=template))
    if response.status_code == 200:
        prompt = http.post(DETOK, json={"tokens": response.json()["tokens"]}).json()["prompt"]
        assert "class" not in prompt and "module" not in prompt, prompt
    else:
        assert response.status_code == 400


def test_limits_are_flags_with_stated_defaults():
    from vllm_cpp.cli.main import build_parser
    from vllm_cpp.server.limits import RequestLimits

    args = build_parser().parse_args(["serve", "m.gguf"])
    defaults = RequestLimits()
    assert (args.max_n, args.max_tokens_limit, args.max_stop_strings, args.max_stop_string_bytes, args.max_tools) \
        == (defaults.max_n, defaults.max_tokens, defaults.max_stop_strings, defaults.max_stop_string_bytes,
            defaults.max_tools)
    assert args.host == "127.0.0.1"  # localhost unless told otherwise


def test_api_key_comparison_is_constant_time():
    # hmac.compare_digest: time independent of where the first difference is.
    import inspect

    from vllm_cpp.server import api_server

    assert "hmac.compare_digest" in inspect.getsource(api_server._Middleware._authorized)


def test_a_stream_after_the_corpus(http):
    with http.stream("POST", C, json=completion(stream=True, max_tokens=4, temperature=0)) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    json.loads(lines[0][6:])
