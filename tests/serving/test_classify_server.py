"""Cross-encoders and classifiers behind the server (issue 43): a tiny
XLM-RoBERTa reranker (one-label head, tests/golden/tiny_crossencoder/)
through ``/score``, ``/v1/score``, ``/rerank``, ``/v1/rerank``, ``/v2/rerank``
(with Cohere's own client) and ``/classify``; a three-label classifier
through ``/classify`` in vLLM's shape (index, label, probs, num_classes,
usage); bad input as 400s naming the field, the server usable after each."""

import pathlib

import httpx
import pytest

from server_harness import MODEL_NAME, running_server
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

TINY = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_crossencoder"
QUERY = "what is a cat"
DOCUMENTS = ["The cat sat on the mat.", "a search query about vectors and documents", "hello world"]
TEXTS = ["hello world", "The cat sat on the mat."]


@pytest.fixture(scope="module")
def reranker():
    """(engine, base URL) of the one-label cross-encoder."""
    with Engine.load(str(TINY / "xlm-roberta-rerank.gguf"), max_model_len=64) as engine, \
            running_server(engine, max_model_len=64) as url:
        yield engine, url


@pytest.fixture(scope="module")
def classifier():
    with Engine.load(str(TINY / "xlm-roberta-classify.hf"), max_model_len=64) as engine, \
            running_server(engine, max_model_len=64) as url:
        yield engine, url


def test_models_list_classify_and_score(reranker, classifier):
    assert httpx.get(reranker[1] + "/v1/models").json()["data"][0]["supported_tasks"] == ["classify", "score"]
    assert httpx.get(classifier[1] + "/v1/models").json()["data"][0]["supported_tasks"] == ["classify"]


@pytest.mark.parametrize("path", ["/score", "/v1/score"])
def test_score_routes(reranker, path):
    engine, url = reranker
    expected = engine.score(QUERY, DOCUMENTS)
    body = httpx.post(url + path, json={"model": MODEL_NAME, "text_1": QUERY, "text_2": DOCUMENTS}).json()
    assert [d["score"] for d in body["data"]] == pytest.approx(expected, abs=1e-6)
    assert body["usage"]["prompt_tokens"] > 0


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank", "/v2/rerank"])
def test_rerank_routes(reranker, path):
    engine, url = reranker
    expected = engine.score(QUERY, DOCUMENTS)
    body = httpx.post(url + path, json={"query": QUERY, "documents": DOCUMENTS, "top_n": 2}).json()
    assert [r["index"] for r in body["results"]] == sorted(range(3), key=lambda i: -expected[i])[:2]
    for r in body["results"]:
        assert r["relevance_score"] == pytest.approx(expected[r["index"]], abs=1e-6)
        assert r["document"] == {"text": DOCUMENTS[r["index"]]}


def test_cohere_client_rerank(reranker):
    cohere = pytest.importorskip("cohere", reason="cohere is not installed (the test extra pins it)")
    engine, url = reranker
    expected = engine.score(QUERY, DOCUMENTS)
    response = cohere.ClientV2(api_key="unused", base_url=url).rerank(model=MODEL_NAME, query=QUERY,
                                                                       documents=DOCUMENTS, top_n=3)
    assert [r.index for r in response.results] == sorted(range(3), key=lambda i: -expected[i])
    assert [r.relevance_score for r in response.results] == pytest.approx(sorted(expected, reverse=True), abs=1e-6)


def test_classify_in_vllm_shape(classifier):
    engine, url = classifier
    expected = engine.classify(TEXTS)
    body = httpx.post(url + "/classify", json={"model": MODEL_NAME, "input": TEXTS}).json()
    assert body["object"] == "list" and body["model"] == MODEL_NAME and body["id"].startswith("classify-")
    assert [d["index"] for d in body["data"]] == [0, 1]
    labels = ["negative", "neutral", "positive"]
    for d, probs in zip(body["data"], expected):
        assert d["probs"] == pytest.approx(probs, abs=1e-6) and d["num_classes"] == 3
        assert d["label"] == labels[max(range(3), key=lambda i: probs[i])]
    assert body["usage"]["prompt_tokens"] == body["usage"]["total_tokens"] > 0
    ids = engine.tokenize(TEXTS[0])
    by_ids = httpx.post(url + "/classify", json={"input": ids}).json()
    assert by_ids["data"][0]["probs"] == pytest.approx(expected[0], abs=1e-6)


def test_reranker_classifies_with_its_one_label(reranker):
    engine, url = reranker
    body = httpx.post(url + "/classify", json={"input": "hello world"}).json()
    assert body["data"][0]["num_classes"] == 1 and body["data"][0]["label"] == "LABEL_0"
    assert body["data"][0]["probs"][0] == pytest.approx(engine.classify("hello world")[0][0], abs=1e-6)


@pytest.mark.parametrize("body, param, message", [
    ({"input": []}, "input", "'input' must be a string"),
    ({}, "input", "'input'"),
    ({"input": 3}, "input", "'input' must be a string"),
    ({"input": ["a", 3]}, "input", "'input"),
    ({"input": "x", "truncate_prompt_tokens": "all"}, "truncate_prompt_tokens", "'truncate_prompt_tokens'"),
    ({"input": "x", "model": "other"}, "model", "other"),
    ({"input": "word " * 100}, None, "64"),
])
def test_bad_classify_input_is_a_400(classifier, body, param, message):
    url = classifier[1]
    response = httpx.post(url + "/classify", json=body)
    assert response.status_code in (400, 404), response.text
    error = response.json()["error"]
    assert message in error["message"]
    if param is not None and response.status_code == 400:
        assert error["param"] == param
    assert httpx.post(url + "/classify", json={"input": "still serving"}).status_code == 200


def test_what_each_server_refuses(reranker, classifier):
    """A classifier of three labels cannot score; neither embeds; a rerank with
    no documents names the field."""
    response = httpx.post(classifier[1] + "/rerank", json={"query": QUERY, "documents": DOCUMENTS})
    assert response.status_code == 400 and "a cross-encoder's score needs one" in response.json()["error"]["message"]
    response = httpx.post(classifier[1] + "/v1/embeddings", json={"input": "x"})
    assert response.status_code == 400 and "classification head" in response.json()["error"]["message"]
    response = httpx.post(reranker[1] + "/v2/rerank", json={"query": QUERY, "documents": []})
    assert response.status_code == 400 and response.json()["error"]["param"] == "documents"
    assert httpx.post(reranker[1] + "/rerank", json={"query": QUERY, "documents": DOCUMENTS}).status_code == 200


def test_a_model_without_a_head_cannot_classify():
    with Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64) as embedder, running_server(embedder) as url:
        response = httpx.post(url + "/classify", json={"input": "x"})
        assert response.status_code == 400
        assert "cannot classify: it has no classification head" in response.json()["error"]["message"]
        assert httpx.post(url + "/v1/embeddings", json={"input": "x"}).status_code == 200


def test_pooling_route_by_task(reranker, classifier):
    """/pooling: the model's own task by default (classify here), token_embed
    refused for a head, a bad task named; an embedder answers every row."""
    url = classifier[1]
    body = httpx.post(url + "/pooling", json={"input": TEXTS}).json()
    assert body["id"].startswith("pool-") and [d["object"] for d in body["data"]] == ["pooling", "pooling"]
    assert body["data"][0]["data"] == pytest.approx(classifier[0].classify(TEXTS[0])[0], abs=1e-6)
    response = httpx.post(url + "/pooling", json={"input": "x", "task": "token_classify"})
    assert response.status_code == 400 and response.json()["error"]["param"] == "task"
    response = httpx.post(url + "/pooling", json={"input": "x", "task": "token_embed"})
    assert response.status_code == 400 and "classification head" in response.json()["error"]["message"]
    with Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64) as embedder, running_server(embedder) as url:
        body = httpx.post(url + "/pooling", json={"input": "hello world", "task": "token_embed"}).json()
        rows = body["data"][0]["data"]
        assert len(rows) == len(embedder.tokenize("hello world")) and len(rows[0]) == 64
        assert body["usage"]["prompt_tokens"] == len(rows)
