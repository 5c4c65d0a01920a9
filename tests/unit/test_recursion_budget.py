"""Every recursive entry point of the engine, driven past its limit.

Each walk over untrusted input (JSON, GBNF, regexes, JSON Schema and its
$ref resolution, the Jinja parser and evaluator, tool parameters) holds the
engine's one recursion guard (util/recursion_budget.h), which refuses past
the walk's fixed cap or before the stack of the thread it runs on runs
short: INVALID_ARGUMENT "... nested too deeply (limit N levels ...)". Here
each entry point gets inputs nested 10^3, 10^4, 10^5 and 10^6 deep, through
the C ABI (the Python Engine), on a thread with a 256 KiB stack, and over
HTTP (a 400; inputs past the server's body limit only through the C ABI);
after each the engine (and the server) answers a good request.

Walks no request reaches directly (the pythonic tool-call reader reads the
model's output, tokenizer.json is the model's, JSON writing and comparison
see values the engine built) are driven by the C++ test_recursion_budget
(tests/unit/test_native.py), which also uses 128 KiB threads.

Issue 37, bug 5: a response_format schema whose $defs chain was 20,000
$refs deep crashed `vllm-cpp serve` with SIGSEGV.
"""

import functools
import json
import threading

import pytest

from vllm_cpp import Engine, InvalidArgumentError, SamplingParams, StructuredOutput

pytestmark = pytest.mark.timeout(300)

DEPTHS = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)
MAX_BYTES = 4 * 1024 * 1024  # the test server's body limit
HI = [{"role": "user", "content": "Hi"}]
SMALL_STACK = 256 * 1024


# -- inputs ---------------------------------------------------------------------------------------
def groups(depth, inner):
    return "(" * depth + inner + ")" * depth


@functools.lru_cache(maxsize=4)  # the 10^6 chain (35 MB) takes a second to build
def ref_chain_schema(depth):
    """$defs 0 -> 1 -> ... -> <depth>: the schema of bug 5 (shallow JSON, a deep walk)."""
    defs = ",".join('"%d":{"$ref":"#/$defs/%d"}' % (i, i + 1) for i in range(depth))
    return '{"$defs":{%s,"%d":{"type":"string"}},"$ref":"#/$defs/0"}' % (defs, depth)


def nested_items_schema(depth):
    return '{"items":' * depth + "{}" + "}" * depth


def json_nesting(depth):
    return "[" * depth + "]" * depth


def completion_body(**fields):
    return json.dumps(dict({"model": "smollm2", "prompt": "Hi", "max_tokens": 2}, **fields))


def tokenize_body(raw_fields):
    """A chat request (as /tokenize takes it) as JSON text; `raw_fields` is
    spliced in verbatim (values too deep for Python's own json module)."""
    return '{"model": "smollm2", "messages": %s, %s}' % (json.dumps(HI), raw_fields)


def chat_body(raw_fields):
    return tokenize_body('"max_tokens": 2, ' + raw_fields)


def response_format(schema_text):
    return '"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": %s}}' % schema_text


def tool_with_parameters(parameters_text):
    return ('"tools": [{"type": "function", "function": {"name": "f", "parameters": %s}}], '
            '"tool_choice": "required"' % parameters_text)


def template(source):
    return '"chat_template": %s' % json.dumps(source)


# The entry points: name -> (kind, builder of the request for a depth). Kinds:
# "completion" runs Engine.complete with the structured output the builder
# returns (HTTP: /v1/completions with the guided field); "chat" and
# "tokenize" send the chat request text the builder returns through
# Engine.chat_json / Engine.tokenize_chat (HTTP: /v1/chat/completions, /tokenize).
ENTRY_POINTS = {
    # structured output on completions: the constraint compilers
    "regex groups": ("completion", lambda d: ("regex", groups(d, "a"))),
    "GBNF groups": ("completion", lambda d: ("grammar", "root ::= " + groups(d, '"a"'))),
    "JSON schema $ref chain": ("completion", lambda d: ("json_schema", ref_chain_schema(d))),
    "JSON schema nesting (its JSON)": ("completion", lambda d: ("json_schema", nested_items_schema(d))),
    "JSON schema pattern groups": ("completion", lambda d: (
        "json_schema", json.dumps({"type": "string", "pattern": groups(d, "a")}))),
    # chat: the request's JSON, response_format, tools, the chat template
    "chat request JSON (message content)": ("chat", lambda d: (
        '{"model": "smollm2", "max_tokens": 2, "messages": [{"role": "user", "content": %s}]}' % json_nesting(d))),
    "chat response_format $ref chain": ("chat", lambda d: chat_body(response_format(ref_chain_schema(d)))),
    "chat tool parameters nesting": ("chat", lambda d: chat_body(tool_with_parameters(nested_items_schema(d)))),
    "chat tool parameters $ref chain": ("chat", lambda d: chat_body(tool_with_parameters(ref_chain_schema(d)))),
    "chat template blocks (parser)": ("tokenize", lambda d: tokenize_body(
        template("{%if 1%}" * d + "x" + "{%endif%}" * d))),
    "chat template parentheses (parser)": ("tokenize", lambda d: tokenize_body(template("{{" + groups(d, "1") + "}}"))),
    "chat template filter chain (expression height)": ("tokenize", lambda d: tokenize_body(
        template("{{ 'a'" + "|upper" * d + " }}"))),
    "chat template macro recursion (evaluator)": ("tokenize", lambda d: tokenize_body(template(
        "{%% macro f(n) %%}{%% if n > 0 %%}{{ f(n - 1) }}{%% endif %%}{%% endmacro %%}{{ f(%d) }}" % d))),
    # loops of at most 1,000 (the sandbox bounds a range), d + 1 levels in all
    "chat template value nesting (evaluator)": ("tokenize", lambda d: tokenize_body(template(
        "{%% set ns = namespace(x=1) %%}{%% for i in range(%d) %%}{%% for j in range(1000) %%}"
        "{%% set ns.x = [ns.x] %%}{%% endfor %%}{%% endfor %%}{{ ns.x }}" % (d // 1000 + 1)))),
    "chat_template_kwargs nesting": ("tokenize", lambda d: tokenize_body('"chat_template_kwargs": {"x": %s}'
                                                                     % json_nesting(d))),
}

# What an engine refusal says: the walk is named with its limit.
ENGINE_WORDS = ("nested too deeply", "limit")


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=4) as eng:
        yield eng


def run_c_abi(engine, name, depth):
    """The entry point through the C ABI; returns the InvalidArgumentError's message."""
    kind, build = ENTRY_POINTS[name]
    request = build(depth)
    with pytest.raises(InvalidArgumentError) as info:
        if kind == "completion":
            engine.complete("Hi", SamplingParams.greedy(max_tokens=2, structured_output=StructuredOutput(*request)))
        elif kind == "chat":
            engine.chat_json(request)
        else:
            engine.tokenize_chat(request)
    return str(info.value)


def assert_names_the_limit(message, where):
    assert all(word in message for word in ENGINE_WORDS), "%s: %s" % (where, message[:500])


def on_small_stack(fn):
    """Runs fn on a thread with a SMALL_STACK stack (as some Python hosts'
    worker threads have) and waits for it."""
    previous = threading.stack_size(SMALL_STACK)
    try:
        thread = threading.Thread(target=fn, name="small-stack")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()


def assert_usable(engine):
    assert engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_every_kind_of_walk_is_listed():
    """Each walk the guard protects has an entry point here (the C++ test,
    test_recursion_budget.cpp, drives the walks themselves)."""
    names = " ".join(ENTRY_POINTS)
    for walk in ("regex", "GBNF", "$ref", "JSON schema", "request JSON", "tool parameters", "template blocks",
                 "parentheses", "filter chain", "macro", "value nesting", "kwargs"):
        assert walk in names, walk


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_c_abi_refuses_every_depth(engine, name):
    for depth in DEPTHS:
        assert_names_the_limit(run_c_abi(engine, name, depth), "%s at %d" % (name, depth))
    assert_usable(engine)


def test_c_abi_on_a_small_stack_thread(engine):
    """The same entry points from a thread with a 256 KiB stack (as Python
    worker threads may have): the walks that run on the calling thread
    (the template's, the request's JSON) stop where its stack runs short,
    refused like the rest, with no crash."""
    failures = []

    def drive():
        for name in ENTRY_POINTS:
            # 10^6 differs from 10^5 only in the input's size (the walk is
            # refused at the same level): test_c_abi_refuses_every_depth has it.
            for depth in DEPTHS[:3]:
                try:
                    assert_names_the_limit(run_c_abi(engine, name, depth), "%s at %d" % (name, depth))
                except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                    failures.append(str(exc)[:500])
        # Shallow requests still work on that stack.
        engine.tokenize_chat({"messages": HI})
        engine.complete("Hi", SamplingParams.greedy(max_tokens=2, structured_output=StructuredOutput(
            "json_schema", ref_chain_schema(20))))

    on_small_stack(drive)
    assert not failures, failures
    assert_usable(engine)


def test_the_limit_follows_the_calling_threads_stack(engine):
    """A chain of 999 filters is within the parser's cap: the main thread
    renders it, a 256 KiB thread's stack does not hold its evaluation and
    the guard says so, instead of overflowing."""
    request = {"messages": HI, "chat_template": "{{ 'a'" + "|upper" * 999 + " }}"}
    assert engine.tokenize_chat(request)
    outcome = []

    def render():
        try:
            engine.tokenize_chat(request)
            outcome.append("rendered")
        except InvalidArgumentError as exc:
            outcome.append(str(exc))

    on_small_stack(render)
    assert "nested too deeply" in outcome[0] and "256 KiB stack allows" in outcome[0], outcome
    assert_usable(engine)


def test_issue_37_ref_chain_of_20000_is_refused_and_5000_too(engine):
    """The reported request (a 20,000-deep $defs chain, ~738 KB): refused
    with the limit, not a crash."""
    for depth in (5000, 20000):
        message = run_c_abi(engine, "chat response_format $ref chain", depth)
        assert_names_the_limit(message, str(depth))
        assert "JSON schema" in message and "$ref" in message, message
    assert_usable(engine)


# -- over HTTP ------------------------------------------------------------------------------------
GUIDED_FIELD = {"regex": "guided_regex", "grammar": "guided_grammar", "json_schema": "guided_json"}


@pytest.fixture(scope="module")
def http(engine):
    for module in ("httpx", "starlette", "uvicorn"):  # only the HTTP tests need the server's dependencies
        pytest.importorskip(module)
    from server_harness import hostile_input_client

    with hostile_input_client(engine, MAX_BYTES) as client:
        yield client


def http_request(name, depth):
    """(path, body bytes) of the entry point over HTTP."""
    kind, build = ENTRY_POINTS[name]
    request = build(depth)
    if kind == "completion":
        constraint_kind, value = request
        field = GUIDED_FIELD[constraint_kind]
        if constraint_kind == "json_schema":
            body = completion_body()[:-1] + ', "%s": %s}' % (field, value)  # the schema as JSON, verbatim
        else:
            body = completion_body(**{field: value})
        return "/v1/completions", body.encode()
    return ("/v1/chat/completions" if kind == "chat" else "/tokenize"), request.encode()


def good_request(http):
    response = http.post("/v1/completions", json={"model": "smollm2", "prompt": "Hi", "max_tokens": 1})
    assert response.status_code == 200, response.text[:500]


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_http_refuses_every_depth_with_a_400(http, name):
    sent = 0
    for depth in DEPTHS:
        path, body = http_request(name, depth)
        if len(body) > MAX_BYTES:
            continue  # past the body limit (a 413): test_c_abi_refuses_every_depth covers this depth
        sent += 1
        response = http.post(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, (name, depth, response.status_code, response.text[:500])
        message = response.json()["error"]["message"]
        # Python's own JSON parser refuses the deepest bodies first, naming its limit too.
        assert "nested too deeply" in message and "limit" in message, (name, depth, message[:500])
        good_request(http)
    assert sent >= 2, name  # at least 10^3 and 10^4 fit every entry point
