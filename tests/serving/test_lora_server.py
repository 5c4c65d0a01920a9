"""LoRA adapters through the API server, as vLLM serves them: --lora-modules,
the adapter picked by the request's ``model`` (the ``openai`` client; chat,
Responses and, with the ``anthropic`` client, Messages),
``/v1/models`` with each adapter's ``parent``, the runtime load/unload routes
behind VLLM_ALLOW_RUNTIME_LORA_UPDATING, and the ``vllm:lora_requests_info``
gauge read with prometheus_client's parser. The base model is the tiny
llama of tests/golden/tiny_lora with its PEFT adapter."""

import pathlib

import pytest

from lora_files import scaled_variant
from server_harness import MODEL_NAME, running_server

vllm_cpp = pytest.importorskip("vllm_cpp")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
from vllm_cpp import LoRARequest  # noqa: E402
from vllm_cpp.server.lora_modules import parse_lora_modules  # noqa: E402

TINY_LORA = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_lora"
pytestmark = pytest.mark.skipif(not (TINY_LORA / "llama.json").is_file(), reason="no tests/golden/tiny_lora goldens")
PROMPT = [11, 28, 99, 129, 185, 143, 7, 64]
GOLDEN = LoRARequest("golden", 1, str(TINY_LORA / "llama.lora"))
#: The tiny tokenizer has no chat template: a plain one for the chat-shaped APIs.
TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture(scope="module")
def engine():
    with vllm_cpp.Engine.load(str(TINY_LORA / "llama.hf"), enable_lora=True, max_loras=2, max_model_len=128,
                                chat_template=TEMPLATE) as e:
        yield e


@pytest.fixture(scope="module")
def server(engine):
    patch = pytest.MonkeyPatch()
    patch.setenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")
    try:
        with running_server(engine, lora_modules=(GOLDEN,)) as url:
            yield url
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0)


def _text(engine, lora):
    return engine.complete(PROMPT, vllm_cpp.SamplingParams.greedy(max_tokens=12, ignore_eos=True),
                           lora_request=lora).text


def _complete(client, model):
    return client.completions.create(model=model, prompt=PROMPT, max_tokens=12, temperature=0,
                                     extra_body={"ignore_eos": True})


def test_lora_modules_syntax():
    plain, as_json = parse_lora_modules(["a=/x/a", '{"name": "b", "path": "/x/b", "base_model_name": "m"}'])
    assert (plain.lora_name, plain.lora_int_id, plain.path) == ("a", 1, "/x/a")
    assert (as_json.lora_name, as_json.lora_int_id, as_json.path, as_json.base_model_name) == ("b", 2, "/x/b", "m")
    for bad in ("noequals", "=path", '{"name": "c"}', "{not json"):
        with pytest.raises(ValueError, match="--lora-modules"):
            parse_lora_modules([bad])
    with pytest.raises(ValueError, match="given twice"):
        parse_lora_modules(["a=/1", "a=/2"])


@pytest.mark.timeout(60)
def test_models_list_the_adapters_with_their_parent(client):
    cards = {m.id: m for m in client.models.list().data}
    assert set(cards) == {MODEL_NAME, "golden"}
    assert cards["golden"].parent == MODEL_NAME and cards["golden"].root == GOLDEN.path
    assert client.models.retrieve("golden").id == "golden"


@pytest.mark.timeout(60)
def test_model_field_selects_the_adapter(client, engine):
    with_adapter, base = _complete(client, "golden"), _complete(client, MODEL_NAME)
    assert with_adapter.model == "golden" and base.model == MODEL_NAME
    assert with_adapter.choices[0].text == _text(engine, GOLDEN)
    assert base.choices[0].text == _text(engine, None)
    assert with_adapter.choices[0].text != base.choices[0].text
    with pytest.raises(openai.NotFoundError, match="The model 'nope' does not exist"):
        _complete(client, "nope")


@pytest.mark.timeout(60)
def test_load_and_unload_at_runtime(server, client, engine, tmp_path):
    neg = scaled_variant(TINY_LORA / "llama.lora", tmp_path / "neg", -1.0)
    with httpx.Client(base_url=server, timeout=60) as http:
        loaded = http.post("/v1/load_lora_adapter", json={"lora_name": "neg", "lora_path": str(neg)})
        assert loaded.status_code == 200 and "neg" in loaded.text
        again = http.post("/v1/load_lora_adapter", json={"lora_name": "neg", "lora_path": str(neg)})
        assert again.status_code == 400 and "already been loaded" in again.json()["error"]["message"]
        bad = http.post("/v1/load_lora_adapter",
                        json={"lora_name": "qwen", "lora_path": str(TINY_LORA / "qwen3.lora")})
        assert bad.status_code == 400
        assert "LoRA adapter 'qwen'" in bad.json()["error"]["message"]
        assert "does not match the base model" in bad.json()["error"]["message"]
        assert {m.id for m in client.models.list().data} == {MODEL_NAME, "golden", "neg"}
        text = _complete(client, "neg").choices[0].text
        assert text == _text(engine, LoRARequest("neg-direct", 90, str(neg)))
        assert text != _complete(client, "golden").choices[0].text
        assert http.post("/v1/unload_lora_adapter", json={"lora_name": "neg"}).status_code == 200
        with pytest.raises(openai.NotFoundError):
            _complete(client, "neg")
        gone = http.post("/v1/unload_lora_adapter", json={"lora_name": "neg"})
        assert gone.status_code == 404 and "cannot be found" in gone.json()["error"]["message"]
    engine.remove_lora(90)
    assert _complete(client, "golden").choices[0].text == _text(engine, GOLDEN)  # still serving


@pytest.mark.timeout(60)
def test_metrics_show_lora_requests_info(server, client):
    from prometheus_client.parser import text_string_to_metric_families

    _complete(client, "golden")
    text = httpx.get(server + "/metrics", timeout=30).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    info = families["vllm:lora_requests_info"]
    (sample,) = info.samples
    assert sample.labels["max_lora"] == "2"
    assert set(sample.labels) == {"running_lora_adapters", "max_lora", "waiting_lora_adapters"}
    assert sample.value > 0


@pytest.mark.timeout(60)
def test_runtime_routes_absent_without_the_flag(engine, monkeypatch):
    monkeypatch.delenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", raising=False)
    with running_server(engine) as url:
        response = httpx.post(url + "/v1/load_lora_adapter", json={"lora_name": "x", "lora_path": "/x"}, timeout=30)
        assert response.status_code == 404


QUESTION = "tell me about the sea"


def _chat_text(client, model):
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": QUESTION}],
                                           max_tokens=10, temperature=0)
    assert reply.model == model
    return reply.choices[0].message.content


@pytest.mark.timeout(60)
def test_responses_select_the_adapter_by_model(client):
    for model in ("golden", MODEL_NAME):
        response = client.responses.create(model=model, input=QUESTION, max_output_tokens=10, temperature=0)
        assert response.model == model
        assert response.output_text == _chat_text(client, model)
    streamed = client.responses.create(model="golden", input=QUESTION, max_output_tokens=10, temperature=0,
                                       stream=True)
    done = [e for e in streamed if e.type in ("response.completed", "response.incomplete")][-1].response
    assert done.model == "golden" and done.output_text == _chat_text(client, "golden")
    assert _chat_text(client, "golden") != _chat_text(client, MODEL_NAME)
    with pytest.raises(openai.NotFoundError, match="The model 'nope' does not exist"):
        client.responses.create(model="nope", input=QUESTION, max_output_tokens=4)


@pytest.mark.timeout(60)
def test_messages_select_the_adapter_by_model(server, client):
    anthropic = pytest.importorskip("anthropic")
    messages = anthropic.Anthropic(base_url=server, api_key="unused", max_retries=0).messages
    for model in ("golden", MODEL_NAME):
        reply = messages.create(model=model, max_tokens=10, extra_body={"temperature": 0},
                                messages=[{"role": "user", "content": QUESTION}])
        assert reply.model == model
        assert reply.content[0].text == _chat_text(client, model)
    with messages.stream(model="golden", max_tokens=10, extra_body={"temperature": 0},
                         messages=[{"role": "user", "content": QUESTION}]) as stream:
        assert stream.get_final_text() == _chat_text(client, "golden")
    with pytest.raises(anthropic.NotFoundError, match="nope"):
        messages.create(model="nope", max_tokens=4, messages=[{"role": "user", "content": QUESTION}])
