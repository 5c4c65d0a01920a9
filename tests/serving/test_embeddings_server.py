"""``POST /v1/embeddings`` (issue 43) with real clients: the ``openai``
client's ``embeddings.create`` (floats, base64 -- its default, decoded by the
client -- and ``dimensions``), validated by its types; LangChain's
``OpenAIEmbeddings(check_embedding_ctx_length=False)``; ``/v1/models``
naming the tasks; the pooling metric; bad input answered with 400s naming
the field while the server stays usable; ``vllm-cpp embed``."""

import base64
import json
import math
import struct
import subprocess
import sys

import httpx
import openai
import pytest

from server_harness import MODEL_NAME, running_server
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

TEXTS = ["Hello world", "Embeddings are vectors.", "A third, somewhat longer sentence about retrieval."]


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, runner="both", max_model_len=256, max_num_seqs=16,
                     hf_overrides={"is_matryoshka": True}) as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(engine):
    with running_server(engine, max_model_len=256) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url):
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)


def close(a, b, tol=1e-5):
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= tol


def test_openai_client_floats_and_base64_equal_the_engine(client, engine):
    expected = engine.embed(TEXTS)
    floats = client.embeddings.create(model=MODEL_NAME, input=TEXTS, encoding_format="float")
    assert floats.object == "list" and floats.model == MODEL_NAME
    assert [d.index for d in floats.data] == [0, 1, 2]
    assert all(d.object == "embedding" for d in floats.data)
    for d, e in zip(floats.data, expected):
        assert close(d.embedding, e)
    assert floats.usage.prompt_tokens == floats.usage.total_tokens == sum(len(engine.tokenize(t)) for t in TEXTS)
    # The client's default: base64, decoded by the client to floats.
    default = client.embeddings.create(model=MODEL_NAME, input=TEXTS[0])
    assert default.data[0].embedding == floats.data[0].embedding


def test_base64_is_the_float32_bytes(base_url, engine):
    body = httpx.post(base_url + "/v1/embeddings", json={"input": TEXTS[1], "encoding_format": "base64"}).json()
    raw = base64.b64decode(body["data"][0]["embedding"])
    values = struct.unpack("<%df" % (len(raw) // 4), raw)
    assert close(values, engine.embed(TEXTS[1])[0], 0.0)


def test_dimensions_and_token_id_inputs(client, engine):
    cut = client.embeddings.create(model=MODEL_NAME, input=TEXTS[2], dimensions=32, encoding_format="float")
    vec = cut.data[0].embedding
    assert len(vec) == 32 and abs(math.sqrt(sum(x * x for x in vec)) - 1.0) < 1e-5
    ids = [engine.tokenize(t) for t in TEXTS[:2]]
    by_ids = client.embeddings.create(model=MODEL_NAME, input=ids, encoding_format="float")
    one_list = client.embeddings.create(model=MODEL_NAME, input=ids[0], encoding_format="float")
    expected = engine.embed(TEXTS[:2])
    assert close(by_ids.data[1].embedding, expected[1]) and close(one_list.data[0].embedding, expected[0])


def test_langchain_openai_embeddings(base_url, engine):
    langchain_openai = pytest.importorskip(
        "langchain_openai", reason="langchain-openai is not installed (the test extra installs it on Python 3.11+)")
    embeddings = langchain_openai.OpenAIEmbeddings(base_url=base_url + "/v1", api_key="unused", model=MODEL_NAME,
                                                   check_embedding_ctx_length=False, max_retries=0)
    docs = embeddings.embed_documents(TEXTS)
    query = embeddings.embed_query(TEXTS[0])
    expected = engine.embed(TEXTS)
    assert len(docs) == 3 and all(close(d, e, 1e-5) for d, e in zip(docs, expected))
    assert close(query, expected[0], 1e-5)


def test_models_name_the_tasks_and_metrics_count_pooling(base_url):
    card = httpx.get(base_url + "/v1/models").json()["data"][0]
    assert card["supported_tasks"] == ["generate", "embed"]
    httpx.post(base_url + "/v1/embeddings", json={"input": "count me"})
    metrics = httpx.get(base_url + "/metrics").text
    line = next(l for l in metrics.splitlines() if l.startswith("vllm_cpp:pooling_requests_total"))
    assert float(line.split()[-1]) >= 1


@pytest.mark.parametrize("body, param, message", [
    ({"input": []}, "input", "'input' must be a string"),
    ({"input": [[]]}, "input", "'input' must be a string"),
    ({}, "input", "'input' is required"),
    ({"input": ""}, "input", "'input' has no tokens"),
    ({"input": ["fine", ""]}, "input", "'input[1]' has no tokens"),
    ({"input": "x", "encoding_format": "hex"}, "encoding_format", "must be float or base64"),
    ({"input": "x", "dimensions": 0}, "dimensions", "'dimensions'"),
    ({"input": "x", "dimensions": 100000}, "dimensions", "'dimensions' must be between 1 and the model's hidden size"),
    ({"input": "word " * 400}, None, "maximum context length is 256"),
    ({"input": "x", "truncate_prompt_tokens": 100000}, "truncate_prompt_tokens", "greater than max_model_len"),
    ({"input": ["ok", [10 ** 8]]}, None, "outside the vocabulary"),
    ({"input": "x", "model": "other"}, "model", "other"),
])
def test_bad_input_is_a_400_naming_the_field(base_url, body, param, message):
    response = httpx.post(base_url + "/v1/embeddings", json=body)
    assert response.status_code in (400, 404), response.text
    error = response.json()["error"]
    assert message in error["message"]
    if param is not None and response.status_code == 400:
        assert error["param"] == param
    assert httpx.post(base_url + "/v1/embeddings", json={"input": "still alive"}).status_code == 200


def test_truncation_instead_of_the_length_error(base_url, engine):
    long_text = "word " * 400
    body = httpx.post(base_url + "/v1/embeddings",
                      json={"input": long_text, "truncate_prompt_tokens": 16, "encoding_format": "float"}).json()
    ids = engine.tokenize(long_text)[-16:]
    assert close(body["data"][0]["embedding"], engine.embed([ids])[0])
    assert body["usage"]["prompt_tokens"] == 16


def test_generation_only_server_refuses_embeddings(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128) as generate_only, running_server(generate_only) as url:
        response = httpx.post(url + "/v1/embeddings", json={"input": "x"})
        assert response.status_code == 400
        assert "--runner pooling" in response.json()["error"]["message"]
        assert httpx.get(url + "/v1/models").json()["data"][0]["supported_tasks"] == ["generate"]


def test_cli_embed_prints_one_vector_per_text(smollm2_path, tmp_path):
    # From a neutral folder: `python -m` puts the working directory first on
    # sys.path, and the checkout's vllm_cpp/ has no compiled module.
    done = subprocess.run([sys.executable, "-m", "vllm_cpp", "embed", str(smollm2_path), "one", "two",
                           "--max-model-len", "128", "--dimensions", "8", "--hf-overrides", '{"is_matryoshka": true}'],
                          capture_output=True, text=True, timeout=240, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all(len(json.loads(line)) == 8 for line in lines)
    refused = subprocess.run([sys.executable, "-m", "vllm_cpp", "embed", str(smollm2_path), "one",
                              "--max-model-len", "128", "--dimensions", "8"], capture_output=True, text=True,
                             timeout=240, cwd=str(tmp_path))
    assert refused.returncode == 2 and "does not support matryoshka" in refused.stderr


def test_pooling_only_server_refuses_generation(smollm2_path):
    with Engine.load(smollm2_path, runner="pooling", max_model_len=128) as pooling_only, \
            running_server(pooling_only) as url:
        for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
                           ("/v1/completions", {"prompt": "hi"})):
            response = httpx.post(url + path, json=body)
            assert response.status_code == 400, response.text
            assert "serves embeddings only" in response.json()["error"]["message"]
        assert httpx.post(url + "/v1/embeddings", json={"input": "x"}).status_code == 200
        assert httpx.get(url + "/v1/models").json()["data"][0]["supported_tasks"] == ["embed"]


def test_bert_encoder_served_through_the_openai_client():
    """The tiny BERT of tests/golden/tiny_embed (WordPiece texts in its
    vocabulary): the client's vectors equal the engine's; generation and an
    over-long input are 400s naming why; the server stays usable."""
    import pathlib

    gguf = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_embed" / "bert-mean.gguf"
    if not gguf.exists():
        pytest.skip(f"no {gguf.name} (tests/golden/make_embed_goldens.py writes it)")
    texts = ["hello world", "the cat sat on the mat.", "search query text"]
    with Engine.load(gguf, max_model_len=32) as bert, running_server(bert, max_model_len=32) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        for encoding in ({"encoding_format": "float"}, {}):  # {}: the client's base64, decoded by it
            answer = client.embeddings.create(model=MODEL_NAME, input=texts, **encoding)
            for d, e in zip(answer.data, bert.embed(texts)):
                assert close(d.embedding, e) and abs(math.fsum(x * x for x in d.embedding) - 1.0) < 1e-4
        refused = httpx.post(url + "/v1/completions", json={"prompt": "hello"})
        assert refused.status_code == 400 and "bert is an encoder" in refused.json()["error"]["message"]
        too_long = httpx.post(url + "/v1/embeddings", json={"input": " ".join(["cat"] * 40)})
        assert too_long.status_code == 400, too_long.text
        assert client.embeddings.create(model=MODEL_NAME, input="dog").data[0].embedding
