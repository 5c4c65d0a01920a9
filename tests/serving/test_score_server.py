"""``/score``, ``/v1/score``, ``/rerank``, ``/v1/rerank`` and ``/v2/rerank``
(issue 43) on SmolLM2 loaded as a Qwen3-Reranker-style scorer (vLLM's
``--hf-overrides`` with classifier_from_token ["no", "yes"] and
is_original_qwen3_reranker): vLLM's score shape (text_1/text_2 and
queries/documents), a Jina-shaped rerank answered as Jina's API documents it
(results with index, relevance_score, document.text; top_n;
return_documents), Cohere's own client's ``rerank`` against /v2/rerank, an
embedding server scoring by cosine similarity, and bad input as 400s naming
the field while the server stays usable."""

import httpx
import pytest

from server_harness import MODEL_NAME, running_server
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

RERANKER = {"architectures": ["Qwen3ForSequenceClassification"], "classifier_from_token": ["no", "yes"],
            "is_original_qwen3_reranker": True}
QUERY = "What is the capital of France?"
DOCUMENTS = ["Paris is the capital of France.", "Bananas are yellow.", "France's capital city is Paris."]


@pytest.fixture(scope="module")
def served(smollm2_path):
    """(engine, base URL): the reranker and its server, for the module."""
    with Engine.load(smollm2_path, hf_overrides=RERANKER, max_model_len=256, max_num_seqs=8) as engine, \
            running_server(engine, max_model_len=256) as url:
        yield engine, url


@pytest.fixture(scope="module")
def expected(served):
    """The engine's own scores, which every route must give."""
    return served[0].score(QUERY, DOCUMENTS)


@pytest.fixture(scope="module")
def base_url(served):
    return served[1]


def test_scores_are_probabilities_from_the_engine(expected):
    assert len(expected) == 3 and all(0.0 < s < 1.0 for s in expected)


@pytest.mark.parametrize("path", ["/score", "/v1/score"])
def test_score_routes_in_vllm_shape(base_url, expected, path):
    body = httpx.post(base_url + path, json={"model": MODEL_NAME, "text_1": QUERY, "text_2": DOCUMENTS}).json()
    assert body["object"] == "list" and body["model"] == MODEL_NAME and body["id"].startswith("score-")
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert all(d["object"] == "score" for d in body["data"])
    assert [d["score"] for d in body["data"]] == pytest.approx(expected, abs=1e-6)
    assert body["usage"]["prompt_tokens"] == body["usage"]["total_tokens"] > 0
    by_names = httpx.post(base_url + path, json={"queries": [QUERY] * 3, "documents": DOCUMENTS}).json()
    assert [d["score"] for d in by_names["data"]] == pytest.approx(expected, abs=1e-6)
    one = httpx.post(base_url + path, json={"text_1": QUERY, "text_2": DOCUMENTS[1]}).json()
    assert one["data"][0]["score"] == pytest.approx(expected[1], abs=1e-6)


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_jina_shaped_rerank(base_url, expected, path):
    """Jina's request (model, query, documents, top_n, return_documents) and
    its answer: results ordered by relevance_score, each with the index in
    the request's documents and document.text; usage.total_tokens."""
    body = httpx.post(base_url + path, json={"model": MODEL_NAME, "query": QUERY, "documents": DOCUMENTS,
                                              "top_n": 2, "return_documents": True}).json()
    order = sorted(range(3), key=lambda i: -expected[i])[:2]
    assert [r["index"] for r in body["results"]] == order
    for r in body["results"]:
        assert r["relevance_score"] == pytest.approx(expected[r["index"]], abs=1e-6)
        assert r["document"] == {"text": DOCUMENTS[r["index"]]}
    assert body["usage"]["total_tokens"] > 0 and body["model"] == MODEL_NAME
    bare = httpx.post(base_url + path, json={"query": QUERY, "documents": [{"text": d} for d in DOCUMENTS],
                                              "return_documents": False}).json()
    assert len(bare["results"]) == 3 and all("document" not in r for r in bare["results"])


def test_cohere_client_rerank(base_url, expected):
    cohere = pytest.importorskip("cohere", reason="cohere is not installed (the test extra pins it)")
    client = cohere.ClientV2(api_key="unused", base_url=base_url)
    response = client.rerank(model=MODEL_NAME, query=QUERY, documents=DOCUMENTS, top_n=3)
    assert [r.index for r in response.results] == sorted(range(3), key=lambda i: -expected[i])
    assert [r.relevance_score for r in response.results] == pytest.approx(sorted(expected, reverse=True), abs=1e-6)


@pytest.mark.parametrize("path, body, param, message", [
    ("/rerank", {"query": QUERY, "documents": []}, "documents", "'documents' must not be empty"),
    ("/rerank", {"query": QUERY}, "documents", "'documents' is required"),
    ("/v1/rerank", {"query": "", "documents": DOCUMENTS}, "query", "'query' must not be empty"),
    ("/v2/rerank", {"query": QUERY, "documents": DOCUMENTS, "top_n": -1}, "top_n", "'top_n' must be"),
    ("/v1/rerank", {"query": QUERY, "documents": ["a", 3]}, "documents", "'documents[1]' must be a string"),
    ("/score", {"text_1": QUERY}, "text_2", "'text_2' (or 'documents') is required"),
    ("/score", {"text_1": ["a", "b"], "text_2": ["c", "d", "e"]}, "query", "give one query or one per document"),
    ("/v1/score", {"text_1": QUERY, "text_2": DOCUMENTS, "model": "other"}, "model", "other"),
    ("/score", {"text_1": QUERY, "text_2": "word " * 400}, None, "maximum context length is 256"),
])
def test_bad_input_is_a_400_naming_the_field(base_url, path, body, param, message):
    response = httpx.post(base_url + path, json=body)
    assert response.status_code in (400, 404), response.text
    error = response.json()["error"]
    assert message in error["message"]
    if param is not None and response.status_code == 400:
        assert error["param"] == param
    assert httpx.post(base_url + "/rerank", json={"query": QUERY, "documents": DOCUMENTS}).status_code == 200


def test_models_say_score_and_embeddings_are_refused(base_url):
    assert httpx.get(base_url + "/v1/models").json()["data"][0]["supported_tasks"] == ["score"]
    response = httpx.post(base_url + "/v1/embeddings", json={"input": "x"})
    assert response.status_code == 400 and "score head" in response.json()["error"]["message"]


def test_generation_server_cannot_score_and_embedding_server_scores_cosine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128) as generate_only, running_server(generate_only) as url:
        response = httpx.post(url + "/v1/rerank", json={"query": QUERY, "documents": DOCUMENTS})
        assert response.status_code == 400 and "cannot score" in response.json()["error"]["message"]
        assert httpx.post(url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2}).status_code == 200
    with Engine.load(smollm2_path, runner="pooling", max_model_len=128) as embedder, running_server(embedder) as url:
        vectors = embedder.embed([QUERY] + DOCUMENTS)
        cosine = [sum(a * b for a, b in zip(vectors[0], v)) for v in vectors[1:]]
        body = httpx.post(url + "/score", json={"text_1": QUERY, "text_2": DOCUMENTS}).json()
        assert [d["score"] for d in body["data"]] == pytest.approx(cosine, abs=1e-5)
