"""Routes clients expect beside the generation ones: ``GET /tokenizer_info``
(read as lm-evaluation-harness's ``remote`` tokenizer reads it),
``GET /v1/models/{id}`` (``client.models.retrieve``), ``GET|POST /ping``,
and ``Retry-After`` on the 503 past the in-flight bound, with which the
openai SDK's own retries get through an overload."""

import threading

import pytest

httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 8192


@pytest.fixture(scope="module")
def engine(smollm2_path):
    from vllm_cpp import Engine

    # Long enough for a stream that outlasts the overload test's retries.
    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN) as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(engine):
    # One generation request in flight at a time: the overload test needs it.
    with running_server(engine, max_model_len=MAX_MODEL_LEN, max_pending_requests=1) as url:
        yield url


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=120) as client:
        yield client


def test_tokenizer_info_as_lm_eval_reads_it(http):
    info = http.get("/tokenizer_info").json()
    assert isinstance(info["tokenizer_class"], str)  # vLLM's one required key
    # SmolLM2's special tokens (its GGUF's bos and eos ids: 1 and 2).
    assert (info["bos_token"], info["bos_token_id"]) == ("<|im_start|>", 1)
    assert (info["eos_token"], info["eos_token_id"]) == ("<|im_end|>", 2)
    assert "pad_token" in info and info["model_max_length"] == MAX_MODEL_LEN
    assert info["add_bos_token"] is False and "chat_template" not in info  # no --chat-template given
    # lm-eval's RemoteTokenizer: eos_token_id is /tokenize of eos_token without special tokens.
    tokens = http.post("/tokenize", json={"prompt": info["eos_token"], "add_special_tokens": False}).json()
    assert tokens["tokens"] == [info["eos_token_id"]]
    assert http.post("/detokenize", json={"tokens": tokens["tokens"]}).json()["prompt"] == info["eos_token"]


def test_tokenizer_info_carries_the_servers_chat_template(smollm2_path):
    from vllm_cpp import Engine

    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with Engine.load(smollm2_path, max_model_len=256, chat_template=template) as engine:
        with running_server(engine, max_model_len=256) as url:
            info = httpx.get(url + "/tokenizer_info", timeout=60).json()
    assert info["chat_template"] == template


def test_models_retrieve(base_url):
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)
    model = client.models.retrieve(MODEL_NAME)
    assert model.id == MODEL_NAME and model.object == "model"
    assert model.model_dump() == client.models.list().data[0].model_dump()
    with pytest.raises(openai.NotFoundError) as refused:
        client.models.retrieve("no-such/model")
    error = refused.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model" and "no-such/model" in error["message"]


def test_ping(http):
    assert http.get("/ping").status_code == 200
    assert http.post("/ping").status_code == 200


def test_sdk_retries_get_through_an_overload(base_url, http, engine):
    """One long stream holds the only slot; the SDK's first try is refused
    with 503 and Retry-After; seeing that refusal the stream's client leaves
    (freeing the slot), and the SDK's retry is answered."""
    blocker = http.stream("POST", "/v1/completions", json={"prompt": "Once upon a time", "max_tokens": MAX_MODEL_LEN - 16,
                                                             "ignore_eos": True, "stream": True})
    stream = blocker.__enter__()
    assert stream.status_code == 200
    lines = stream.iter_lines()  # kept: a dropped iterator closes the connection
    next(lines)  # generating: the slot is taken
    refusals = []
    released = threading.Event()

    def on_response(response):
        if response.status_code == 503 and not released.is_set():
            refusals.append(dict(response.headers))
            blocker.__exit__(None, None, None)
            released.set()

    with httpx.Client(event_hooks={"response": [on_response]}) as hooked:
        client = openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=4, http_client=hooked)
        completion = client.completions.create(model=MODEL_NAME, prompt="Hello", max_tokens=2)
    if not released.is_set():
        blocker.__exit__(None, None, None)
    assert refusals, "the overload was never hit"
    assert refusals[0].get("retry-after") == "1"
    assert completion.choices[0].text is not None and completion.usage.completion_tokens >= 1
    wait_until_idle(engine)
