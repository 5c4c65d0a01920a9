"""Scoring (issue 43) in the engine: Qwen3-Reranker's yes/no score head
(``hf_overrides`` classifier_from_token, is_original_qwen3_reranker) against
the score done by hand in transformers on the tiny Qwen3 model of
tests/golden/tiny_embed (make_rerank_goldens.py says how), from its HF
directory and its GGUF; an embedding model's cosine-similarity scores;
``LLM.score``'s vLLM shape; refusals naming the field or what to load.

Tolerance: 5e-4 on the score (a probability; 1.4e-4 seen on the ~300-id
template prompts), 2e-3 on the yes - no margin
(float16 weights read as float16 by both; our activations float32)."""

import json
import pathlib
import shutil

import numpy as np
import pytest

from vllm_cpp import LLM, Engine, SamplingParams
from vllm_cpp.errors import InvalidArgumentError

pytestmark = pytest.mark.timeout(300)

TINY_EMBED = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_embed"
SCORE_TOL = 5e-4


def golden():
    path = TINY_EMBED / "qwen3-reranker.json"
    if not path.exists():
        pytest.skip("no reranker golden (make_rerank_goldens.py writes it)")
    return json.loads(path.read_text())


def overrides(g, qwen3):
    o = {"architectures": ["Qwen3ForSequenceClassification"],
         "classifier_from_token": [g["false_token"], g["true_token"]]}
    if qwen3:
        o["is_original_qwen3_reranker"] = True
    return o


@pytest.fixture(scope="module", params=["hf", "gguf"])
def model_path(request, tmp_path_factory):
    """The tiny model's two forms. The HF copy declares 512 positions:
    Qwen3-Reranker's prompt in its 300-token byte-level vocabulary is ~300
    ids, past the 256 its config declares (rotary positions: the weights do
    not depend on it). The GGUF (context_length 256) runs the plain form."""
    if request.param == "gguf":
        return TINY_EMBED / "qwen3-embedding.gguf"
    out = tmp_path_factory.mktemp("rerank") / "qwen3-reranker.hf"
    shutil.copytree(TINY_EMBED / "qwen3-embedding.hf", out)
    config = json.loads((out / "config.json").read_text())
    config["max_position_embeddings"] = 512
    (out / "config.json").write_text(json.dumps(config))
    return out


def max_len(model_path):
    return 256 if str(model_path).endswith(".gguf") else 512


@pytest.mark.parametrize("form", ["qwen3", "plain"])
def test_yes_no_score_equals_transformers(model_path, form):
    g = golden()
    if form == "qwen3" and max_len(model_path) < 512:
        pytest.skip("Qwen3-Reranker's prompt is ~300 ids in the tiny vocabulary: past the GGUF's context_length 256")
    records = [r for r in g["records"] if r["form"] == form]
    with Engine.load(str(model_path), hf_overrides=overrides(g, form == "qwen3"),
                     max_model_len=max_len(model_path)) as engine:
        assert "score" in engine.stats()["supported_tasks"]
        scores = engine.score(records[0]["query"], [r["document"] for r in records])
        # Pair by pair gives the same.
        pairwise = engine.score([r["query"] for r in records], [r["document"] for r in records])
    for r, s, p in zip(records, scores, pairwise):
        assert abs(s - r["score"]) <= SCORE_TOL, (r["document"], s, r["score"])
        assert s == p
        margin = np.log(s / (1 - s))
        assert abs(margin - (r["logit_yes"] - r["logit_no"])) <= 2e-3


def test_prompt_ids_are_transformers(model_path):
    """The ids the engine scores are transformers' (the template spelled as
    vLLM's example writes it, tokenized the same)."""
    g = golden()
    with Engine.load(str(model_path), runner="generate", max_model_len=max_len(model_path)) as engine:
        for r in g["records"]:
            if r["form"] == "plain":
                assert engine.tokenize(r["query"]) + engine.tokenize(r["document"]) == r["prompt_ids"]


def test_llm_score_is_vllm_shaped(model_path):
    g = golden()
    records = [r for r in g["records"] if r["form"] == "plain"]
    llm = LLM(str(model_path), hf_overrides=overrides(g, False), max_model_len=max_len(model_path))
    try:
        outputs = llm.score(records[0]["query"], [r["document"] for r in records])
        assert [o.outputs.score for o in outputs] == pytest.approx([r["score"] for r in records], abs=SCORE_TOL)
        assert all(o.finished for o in outputs) and len({o.request_id for o in outputs}) == len(outputs)
        with pytest.raises(InvalidArgumentError, match="score head"):
            llm.engine.embed("a text")
    finally:
        llm.close()


def test_embedding_model_scores_cosine_similarity():
    with Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf")) as engine:
        q, d1, d2 = "a query", "a first document", "another one"
        vectors = np.array(engine.embed([q, d1, d2]), dtype=np.float64)
        scores = engine.score(q, [d1, d2])
        expected = [float(vectors[0] @ vectors[i]) for i in (1, 2)]
        assert np.allclose(scores, expected, atol=1e-5)


def test_refusals_name_the_field_and_the_engine_serves_on(tmp_path):
    g = golden()
    with pytest.raises(InvalidArgumentError, match="classifier_from_token.*two tokens"):
        Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides={"classifier_from_token": ["n"]})
    with pytest.raises(InvalidArgumentError, match="'hf_overrides.classifier_from_token' \"nope\" is 4 tokens"):
        Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides={"classifier_from_token": ["n", "nope"]})
    with pytest.raises(InvalidArgumentError, match="is_original_qwen3_reranker"):
        Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides={"is_original_qwen3_reranker": True})
    with pytest.raises(InvalidArgumentError, match="architectures"):
        Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides={"architectures": ["BertModel"]})
    with Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), runner="generate") as engine:
        with pytest.raises(InvalidArgumentError, match="cannot score"):
            engine.score("q", ["d"])
        assert engine.complete("ab", SamplingParams(max_tokens=2))
    with Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides=overrides(g, False)) as engine:
        with pytest.raises(InvalidArgumentError, match="'documents' must not be empty"):
            engine.score("q", [])
        with pytest.raises(InvalidArgumentError, match="'query' must not be empty"):
            engine.score("", ["d"])
        with pytest.raises(InvalidArgumentError, match=r"'documents\[1\]' must not be empty"):
            engine.score("q", ["d", ""])
        with pytest.raises(InvalidArgumentError, match="give one query or one per document"):
            engine.score(["a", "b"], ["c", "d", "e"])
        assert len(engine.score("q", ["d"])) == 1


def test_c_entry_points_through_cffi():
    """vllm_score / vllm_rerank: a body in, the JSON out (the caller frees
    it); NULL arguments refused by name with *out_json zeroed."""
    from vllm_cpp._ffi import ffi, lib

    g = golden()
    with Engine.load(str(TINY_EMBED / "qwen3-embedding.gguf"), hf_overrides=overrides(g, False)) as engine:
        out = ffi.new("char**")
        with engine._use() as handle:
            body = json.dumps({"query": "q", "documents": ["a", "b"], "top_n": 1}).encode()
            assert lib.vllm_rerank(handle, body, out) == 0
            try:
                answer = json.loads(ffi.string(out[0]).decode())
            finally:
                lib.vllm_string_free(out[0])
            assert len(answer["results"]) == 1 and answer["results"][0]["index"] in (0, 1)
            assert lib.vllm_score(handle, ffi.NULL, out) != 0 and out[0] == ffi.NULL
            assert "request_json" in ffi.string(lib.vllm_last_error()).decode()
        assert lib.vllm_rerank(ffi.NULL, b"{}", out) != 0 and out[0] == ffi.NULL
        assert "engine" in ffi.string(lib.vllm_last_error()).decode()
