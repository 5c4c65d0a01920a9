"""XLM-RoBERTa embeddings and cross-encoder scores and classes against
transformers (float32) and llama.cpp (issue 43), on the tiny random models of
tests/golden/tiny_crossencoder/ (make_crossencoder_goldens.py says how they
were made), from the Hugging Face directory and from the GGUF llama.cpp's
converter wrote.

- ``xlm-roberta`` (XLMRobertaModel, sentence-transformers CLS + Normalize as
  bge-m3): texts tokenized by our Unigram tokenizer to transformers' ids,
  each pooling type within 2e-4 of transformers and 5e-3 of llama.cpp.
- ``xlm-roberta-rerank`` / ``bert-rerank`` (one-label
  *ForSequenceClassification, bge-reranker's shape): the (query, document)
  text pair encoded with the tokenizer's pair template (RoBERTa's
  ``<s> q </s></s> d </s>``; BERT's ``[CLS] q [SEP] d [SEP]`` with token type
  1 for the document) and scored sigmoid(logit), as vLLM scores a
  cross-encoder. llama.cpp's rerank logit on the XLM-RoBERTa GGUF; the BERT
  GGUF has no pooler (llama.cpp's converter drops it), so it is checked
  against the same computation by hand in transformers (gguf_score).
- ``xlm-roberta-classify`` (three labels named by id2label): softmax
  probabilities and the likeliest label's name, vs transformers and
  llama.cpp's rank outputs.
"""

import json
import pathlib
import re

import numpy as np
import pytest

import vllm_cpp
from vllm_cpp import LLM, Engine

pytestmark = pytest.mark.timeout(300)

TINY = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_crossencoder"
REF_TOL = 2e-4
LLAMA_CPP_TOL = 5e-3
FORMS = ["gguf", "hf"]


def golden(case):
    path = TINY / f"{case}.json"
    if not path.exists():
        pytest.skip(f"no golden {path.name} (make_crossencoder_goldens.py writes it)")
    return json.loads(path.read_text())


def model_path(case, form):
    return str(TINY / (f"{case}.gguf" if form == "gguf" else f"{case}.hf"))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def softmax(x):
    e = np.exp(np.asarray(x, dtype=np.float64) - np.max(x))
    return e / e.sum()


def within(ours, ref, tol):
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape
    err = float(np.abs(ours - ref).max())
    assert err <= tol * max(1.0, float(np.abs(ref).max())), f"max error {err:.3e}"


# --- XLM-RoBERTa as an embedder ---

@pytest.mark.parametrize("form", FORMS)
def test_xlm_roberta_tokenizes_and_embeds_as_transformers(form):
    g = golden("xlm-roberta")
    with Engine.load(model_path("xlm-roberta", form), max_model_len=64, kv_cache_dtype="float32") as engine:
        assert engine.stats()["supported_tasks"] == ["embed"]
        for r in g["records"]:
            assert engine.tokenize(r["text"]) == r["prompt_ids"]
        vectors = engine.embed([r["text"] for r in g["records"]])  # the model's own CLS + Normalize
    for ours, r in zip(vectors, g["records"]):
        ref = np.asarray(r["ref_CLS"])
        within(ours, ref / np.linalg.norm(ref), REF_TOL)


@pytest.mark.parametrize("pooling", ["CLS", "MEAN", "LAST"])
@pytest.mark.parametrize("form", FORMS)
def test_xlm_roberta_each_pooling_type(form, pooling):
    g = golden("xlm-roberta")
    with Engine.load(model_path("xlm-roberta", form), max_model_len=64, kv_cache_dtype="float32",
                     pooler_config={"pooling_type": pooling, "normalize": False}) as engine:
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
    for ours, r in zip(vectors, g["records"]):
        within(ours, r[f"ref_{pooling}"], REF_TOL)
        if form == "gguf":
            within(ours, r[f"llama_cpp_{pooling}"], LLAMA_CPP_TOL)


def test_xlm_roberta_positions_past_the_offset_are_refused():
    """RoBERTa's positions start at pad_token_id + 1: 66 learned rows are 64 positions."""
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="exceeds the model's context length 64"):
        Engine.load(model_path("xlm-roberta", "hf"), max_model_len=65)


# --- cross-encoders: scores ---

@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", ["xlm-roberta-rerank", "bert-rerank"])
def test_cross_encoder_scores_match_transformers(case, form):
    g = golden(case)
    key = "gguf_score" if case == "bert-rerank" and form == "gguf" else "score"
    with Engine.load(model_path(case, form), max_model_len=64) as engine:
        assert engine.stats()["supported_tasks"] == ["classify", "score"]
        scores = engine.score([r["query"] for r in g["records"]], [r["document"] for r in g["records"]])
        one_query = engine.score(g["records"][0]["query"], [g["records"][1]["document"]])
    within(scores, [r[key] for r in g["records"]], REF_TOL)
    assert one_query[0] == pytest.approx(scores[1], abs=1e-6)  # the same pair, one query against a list
    if case == "xlm-roberta-rerank" and form == "gguf":
        within(scores, sigmoid([r["llama_cpp_logit"] for r in g["records"]]), LLAMA_CPP_TOL)


def test_bert_pair_uses_token_type_one():
    """The golden's pairs have token types 1 for the document: scoring the
    same ids as one segment (token type 0 throughout) differs."""
    g = golden("bert-rerank")
    r = g["records"][0]
    assert 1 in r["token_type_ids"]
    with Engine.load(model_path("bert-rerank", "hf"), max_model_len=64) as engine:
        pair = engine.score(r["query"], [r["document"]])[0]
        assert pair == pytest.approx(r["score"], abs=REF_TOL)
        one_segment = engine.classify([r["prompt_ids"]])[0][0]  # the same ids, all token type 0
        assert abs(one_segment - pair) > 1e-3


def test_llm_score_and_classify_shapes():
    g = golden("xlm-roberta-rerank")
    llm = LLM(model_path("xlm-roberta-rerank", "gguf"), max_model_len=64)
    try:
        out = llm.score(g["records"][0]["query"], [r["document"] for r in g["records"][:2]])
        assert [o.outputs.score for o in out] == pytest.approx(
            llm.engine.score(g["records"][0]["query"], [r["document"] for r in g["records"][:2]]), abs=1e-6)
        classified = llm.classify(["hello world"])
        assert classified[0].outputs.num_classes == 1 and 0.0 < classified[0].outputs.probs[0] < 1.0
        assert classified[0].prompt_token_ids == llm.engine.tokenize("hello world")
    finally:
        llm.engine.close()


# --- classification ---

@pytest.mark.parametrize("form", FORMS)
def test_classifier_probabilities_and_labels(form):
    g = golden("xlm-roberta-classify")
    texts = [r["text"] for r in g["records"]]
    with Engine.load(model_path("xlm-roberta-classify", form), max_model_len=64) as engine:
        assert engine.stats()["supported_tasks"] == ["classify"]
        probs = engine.classify(texts)
        answer = json.loads(engine.classify_json(json.dumps({"input": texts})))
    for ours, r in zip(probs, g["records"]):
        within(ours, r["probs"], REF_TOL)
        if form == "gguf":
            within(ours, softmax(r["llama_cpp_logits"]), LLAMA_CPP_TOL)
    labels = ["negative", "neutral", "positive"]
    assert answer["object"] == "list" and answer["id"].startswith("classify-")
    for item, r in zip(answer["data"], g["records"]):
        assert item["num_classes"] == 3 and item["label"] == labels[int(np.argmax(r["probs"]))]
    assert answer["usage"]["prompt_tokens"] == sum(len(r["prompt_ids"]) for r in g["records"])


def test_what_each_model_refuses():
    with Engine.load(model_path("xlm-roberta-classify", "gguf"), max_model_len=64) as classifier:
        with pytest.raises(vllm_cpp.InvalidArgumentError, match="a cross-encoder's score needs one"):
            classifier.score("q", ["d"])
        with pytest.raises(vllm_cpp.InvalidArgumentError, match=re.escape("has a classification head (3 labels)")):
            classifier.embed(["x"])
        with pytest.raises(vllm_cpp.InvalidArgumentError, match="'input' must be a string"):
            classifier.classify([])
        assert len(classifier.classify("still serving")[0]) == 3
    with Engine.load(model_path("xlm-roberta", "gguf"), max_model_len=64) as embedder:
        with pytest.raises(vllm_cpp.InvalidArgumentError, match="cannot classify: it has no classification head"):
            embedder.classify(["x"])


def test_classify_c_entry_point():
    """vllm_classify: a body in, the JSON out; NULL arguments refused by name."""
    from vllm_cpp._ffi import ffi, lib

    with Engine.load(model_path("xlm-roberta-classify", "gguf"), max_model_len=64) as engine:
        out = ffi.new("char**")
        with engine._use() as handle:
            assert lib.vllm_classify(handle, json.dumps({"input": ["a", "b"]}).encode(), out) == 0
            try:
                answer = json.loads(ffi.string(out[0]).decode())
            finally:
                lib.vllm_string_free(out[0])
            assert [d["index"] for d in answer["data"]] == [0, 1]
            assert lib.vllm_classify(handle, ffi.NULL, out) != 0 and out[0] == ffi.NULL
            assert "request_json" in ffi.string(lib.vllm_last_error()).decode()
        assert lib.vllm_classify(ffi.NULL, b"{}", out) != 0 and out[0] == ffi.NULL


# --- vLLM's activations from config.json ---

def with_config(tmp_path, case, **keys):
    """A copy of `case`'s HF directory whose config.json has `keys` set."""
    import shutil

    directory = tmp_path / case
    shutil.copytree(TINY / f"{case}.hf", directory)
    config = json.loads((directory / "config.json").read_text())
    config.update(keys)
    (directory / "config.json").write_text(json.dumps(config))
    return str(directory)


def test_cross_encoder_activation_from_sentence_transformers(tmp_path):
    """A CrossEncoder saved with an Identity activation scores raw logits (vLLM
    reads sentence_transformers.activation_fn, else sbert_ce_default_activation_function)."""
    g = golden("xlm-roberta-rerank")
    pairs = ([r["query"] for r in g["records"]], [r["document"] for r in g["records"]])
    for i, keys in enumerate(({"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}},
                              {"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity"})):
        with Engine.load(with_config(tmp_path / str(i), "xlm-roberta-rerank", **keys),
                         max_model_len=64) as engine:
            within(engine.score(*pairs), [r["logit"] for r in g["records"]], REF_TOL)
    bad = with_config(tmp_path / "bad", "xlm-roberta-rerank",
                      sbert_ce_default_activation_function="torch.nn.modules.activation.Tanh")
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="Tanh is not supported"):
        Engine.load(bad, max_model_len=64)


@pytest.mark.parametrize("problem_type", ["regression", "multi_label_classification"])
def test_classifier_problem_type(tmp_path, problem_type):
    g = golden("xlm-roberta-classify")
    with Engine.load(with_config(tmp_path, "xlm-roberta-classify", problem_type=problem_type),
                     max_model_len=64) as engine:
        out = engine.classify([r["text"] for r in g["records"]])
    for ours, r in zip(out, g["records"]):
        within(ours, r["logits"] if problem_type == "regression" else sigmoid(r["logits"]), REF_TOL)
