"""Bad requests: each gets its status and an OpenAI error body
(``{"error": {"message", "type", "param", "code"}}``), never reaches the
engine as garbage, and the server answers the next good request."""

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402
from vllm_cpp import Engine  # noqa: E402

pytestmark = pytest.mark.timeout(300)

KEY = "sk-test-key"
AUTH = {"Authorization": "Bearer " + KEY}
MAX_BYTES = 64 * 1024
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def small_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256) as eng:
        yield eng


@pytest.fixture(scope="module")
def http(small_engine):
    with running_server(small_engine, api_key=KEY, max_request_bytes=MAX_BYTES, max_pending_requests=2,
                        max_model_len=256) as url:
        with httpx.Client(base_url=url, headers=AUTH, timeout=120) as client:
            yield client


def completion(**fields):
    return dict({"model": MODEL_NAME, "prompt": "Hello", "max_tokens": 2}, **fields)


def chat(**fields):
    return dict({"model": MODEL_NAME, "messages": HI, "max_tokens": 2}, **fields)


LONG_PROMPT = " cat" * 300

# (name, method, path, body (bytes are sent raw), headers, status, text in the message, param)
CASES = [
    ("invalid JSON", "POST", "/v1/completions", b'{"prompt": "x",', None, 400, "not valid JSON", None),
    ("body not an object", "POST", "/v1/chat/completions", b"[1, 2]", None, 400, "JSON object", None),
    ("wrong type", "POST", "/v1/completions", completion(temperature="hot"), None, 400, "temperature",
     "temperature"),
    ("unknown field", "POST", "/v1/completions", completion(frobnicate=1), None, 400, "frobnicate", "frobnicate"),
    ("unknown chat field", "POST", "/v1/chat/completions", chat(frobnicate=1), None, 400, "frobnicate",
     "frobnicate"),
    ("negative max_tokens", "POST", "/v1/completions", completion(max_tokens=-5), None, 400, "max_tokens",
     "max_tokens"),
    ("negative chat max_tokens", "POST", "/v1/chat/completions", chat(max_tokens=-5), None, 400, "max_tokens",
     None),
    ("n out of range", "POST", "/v1/completions", completion(n=0), None, 400, "'n'", "n"),
    ("missing prompt", "POST", "/v1/completions", {"model": MODEL_NAME}, None, 400, "prompt", "prompt"),
    ("messages of the wrong type", "POST", "/v1/chat/completions", chat(messages="hi"), None, 400, "messages",
     None),
    ("top_logprobs without logprobs", "POST", "/v1/chat/completions", chat(top_logprobs=2), None, 400,
     "top_logprobs", None),
    ("oversized body", "POST", "/v1/completions", completion(prompt="x" * (MAX_BYTES + 1)), None, 413, "limit",
     None),
    ("missing API key", "POST", "/v1/completions", completion(), {"Authorization": ""}, 401, "API key", None),
    ("wrong API key", "GET", "/v1/models", None, {"Authorization": "Bearer sk-wrong"}, 401, "API key", None),
    ("unknown model", "POST", "/v1/completions", completion(model="gpt-9"), None, 404, "gpt-9", "model"),
    ("unknown chat model", "POST", "/v1/chat/completions", chat(model="gpt-9"), None, 404, "gpt-9", "model"),
    ("unknown route", "GET", "/v1/nothing-here", None, None, 404, "/v1/nothing-here", None),
    ("wrong method", "GET", "/v1/completions", None, None, 405, "GET", None),
    ("prompt longer than max_model_len", "POST", "/v1/completions", completion(prompt=LONG_PROMPT), None, 400,
     "maximum context length is 256 tokens", "prompt"),
    ("chat prompt longer than max_model_len", "POST", "/v1/chat/completions",
     chat(messages=[{"role": "user", "content": LONG_PROMPT}]), None, 400, "maximum context length is 256 tokens",
     "messages"),
    ("token id outside the vocabulary", "POST", "/v1/completions", completion(prompt=[1, 10 ** 9]), None, 400,
     "vocabulary", None),
    ("schema the grammar engine refuses", "POST", "/v1/chat/completions",
     chat(response_format={"type": "json_schema",
                           "json_schema": {"name": "x", "schema": {"type": "object", "not": {}}}}),
     None, 400, "not", None),
    ("regex the grammar engine refuses", "POST", "/v1/completions", completion(guided_regex="[a-z"), None, 400,
     "regex", None),
    ("logprobs out of range", "POST", "/v1/completions", completion(logprobs=50), None, 400, "logprobs",
     "logprobs"),
    ("tools without auto tool choice", "POST", "/v1/chat/completions",
     chat(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
     None, 400, "enable-auto-tool-choice", "tool_choice"),
    ("suffix is not supported", "POST", "/v1/completions", completion(suffix="x"), None, 400, "suffix", "suffix"),
    ("detokenize bad tokens", "POST", "/detokenize", {"tokens": ["a"]}, None, 400, "tokens", "tokens"),
    ("detokenize an id outside the vocabulary", "POST", "/detokenize", {"tokens": [10 ** 9]}, None, 400,
     "vocabulary", None),
    ("tokenize both prompt and messages", "POST", "/tokenize", {"prompt": "a", "messages": HI}, None, 400,
     "exactly one", None),
    ("tokenize bad messages", "POST", "/tokenize", {"messages": [{"role": "nobody"}]}, None, 400, "role", None),
]


def send(http, method, path, body, headers):
    kwargs = {"headers": headers} if headers else {}
    if isinstance(body, bytes):
        kwargs["content"] = body
        kwargs.setdefault("headers", {})
        kwargs["headers"] = dict(kwargs["headers"], **{"Content-Type": "application/json"})
    elif body is not None:
        kwargs["json"] = body
    return http.request(method, path, **kwargs)


def check_good_request(http):
    response = http.post("/v1/completions", json=completion(temperature=0))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["finish_reason"] in ("length", "stop")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_request(http, small_engine, case):
    name, method, path, body, headers, status, needle, param = case
    submitted = small_engine.stats()["prompt_tokens"]
    response = send(http, method, path, body, headers)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert needle in error["message"], error
    assert isinstance(error["type"], str) and error["type"]
    if param is not None:
        assert error["param"] == param
    assert small_engine.stats()["prompt_tokens"] == submitted, "a refused request reached the engine"
    check_good_request(http)


def test_enough_cases():
    assert len(CASES) >= 15


def test_overload_answers_503(http, small_engine):
    # The bound is 2 engine requests in flight; one request of 3 choices
    # would pass it whatever else runs, so it is refused at once.
    refused = http.post("/v1/completions", json=completion(n=3))
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "server_overloaded"
    assert http.post("/v1/chat/completions", json=chat(n=3)).status_code == 503
    assert http.post("/v1/completions", json=completion(prompt=["a", "b", "c"])).status_code == 503
    assert http.post("/v1/completions", json=completion(n=2)).status_code == 200
    wait_until_idle(small_engine)
    check_good_request(http)


def test_health_needs_no_key(http):
    assert httpx.get(str(http.base_url) + "/health").status_code == 200


def test_admission_counts_requests_in_flight():
    from vllm_cpp.server.api_server import Admission
    from vllm_cpp.server.protocol import ApiError

    admission = Admission(3)
    release = admission.admit(2)
    with pytest.raises(ApiError) as refused:
        admission.admit(2)
    assert refused.value.status == 503
    second = admission.admit(1)
    release()
    release()  # idempotent
    admission.admit(2)
    second()
