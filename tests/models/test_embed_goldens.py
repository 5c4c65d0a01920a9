"""Embeddings against transformers, sentence-transformers and llama.cpp
(issue 43) on the tiny embedders of tests/golden/tiny_embed/ (made by
make_embed_goldens.py, which says how): from the Hugging Face directory
(sentence-transformers' modules.json / 1_Pooling read for the pooling and
normalisation) and from the GGUF llama.cpp's converter wrote (its
`<arch>.pooling_type`), for each pooling type.

Tolerances: against transformers' float32 pooled hidden states, 2e-4 of the
vector's largest magnitude (float16 weights read as float16 by both; our
activations stay float32, the KV cache float32 here); against llama.cpp
5e-3 (it rounds activations to float16 for F16 matrices: it is itself
2.2e-3 from transformers, recorded in the golden as llama_cpp_vs_ref_max_err).

The bert cases (bidirectional encoder; bert-cls and bert-mean are the same
weights with CLS and MEAN sentence-transformers pooling) hold the same
tolerances; llama.cpp's GELU is the tanh approximation where transformers'
(and ours) is erf, and it is 1.7e-3 from transformers on them.
"""

import json
import pathlib
import re

import numpy as np
import pytest

import vllm_cpp
from gguf_rewrite import rewritten
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

TINY_EMBED = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_embed"
CASES = ["qwen3-embedding", "bert-cls", "bert-mean"]
# One case per set of weights (bert-mean is bert-cls's weights).
WEIGHTS = ["qwen3-embedding", "bert-cls"]
POOLING_TYPES = ["CLS", "MEAN", "LAST"]
REF_TOL = 2e-4
LLAMA_CPP_TOL = 5e-3


def golden(case):
    path = TINY_EMBED / f"{case}.json"
    if not path.exists():
        pytest.skip(f"no embedding golden {path.name} (make_embed_goldens.py writes it)")
    return json.loads(path.read_text())


def model_path(case, form):
    return TINY_EMBED / (f"{case}.gguf" if form == "gguf" else f"{case}.hf")


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def within(ours, ref, tol):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape
    err = float(np.abs(ours - ref).max())
    assert err <= tol * max(1.0, float(np.abs(ref).max())), f"max error {err:.3e}"
    return err


@pytest.mark.parametrize("form", ["gguf", "hf"])
@pytest.mark.parametrize("case", CASES)
def test_model_default_pooling_matches_sentence_transformers(case, form):
    """Loaded as it is (runner auto): the model's own pooling and Normalize,
    equal to sentence-transformers' sentence_embedding."""
    g = golden(case)
    with Engine.load(model_path(case, form), max_model_len=64, kv_cache_dtype="float32") as engine:
        assert engine.stats()["supported_tasks"] == ["embed"]
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
    for ours, r in zip(vectors, g["records"]):
        within(ours, r["st_embedding"], REF_TOL)
        assert abs(np.linalg.norm(ours) - 1.0) < 1e-5


@pytest.mark.parametrize("pooling", POOLING_TYPES)
@pytest.mark.parametrize("form", ["gguf", "hf"])
@pytest.mark.parametrize("case", WEIGHTS)
def test_each_pooling_type_matches_transformers_and_llama_cpp(case, form, pooling):
    g = golden(case)
    with Engine.load(model_path(case, form), max_model_len=64, kv_cache_dtype="float32",
                     pooler_config={"pooling_type": pooling, "normalize": False}) as engine:
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
        normalised = engine.embed([r["prompt_ids"] for r in g["records"]], normalize=True)
    for ours, unit_ours, r in zip(vectors, normalised, g["records"]):
        within(ours, r[f"ref_{pooling}"], REF_TOL)
        within(unit_ours, unit(r[f"ref_{pooling}"]), REF_TOL)
        if form == "gguf":
            within(ours, r[f"llama_cpp_{pooling}"], LLAMA_CPP_TOL)


@pytest.mark.parametrize("case", WEIGHTS)
def test_chunked_prefill_pools_the_same_vector(case):
    """A prompt split over several steps (a small token budget) pools every
    chunk's rows: MEAN equals the one-step vector. An encoder is never split:
    its budget is raised to the longest prompt (max_model_len)."""
    g = golden(case)
    ids = g["records"][2]["prompt_ids"]
    with Engine.load(model_path(case, "gguf"), max_model_len=64, kv_cache_dtype="float32",
                     max_num_batched_tokens=8, pooler_config={"pooling_type": "MEAN", "normalize": False}) as engine:
        within(engine.embed([ids])[0], g["records"][2]["ref_MEAN"], REF_TOL)


# --- the bert encoder: what it refuses ---

@pytest.fixture(scope="module")
def bert_engine():
    with Engine.load(model_path("bert-mean", "gguf"), max_model_len=32, kv_cache_dtype="float32",
                     pooler_config={"normalize": False}) as engine:
        yield engine


def test_bert_refuses_generation(bert_engine):
    with pytest.raises(vllm_cpp.InvalidArgumentError, match=re.escape("(bert is an encoder: it has no text generation)")):
        bert_engine.complete("hello world")
    for runner in ("generate", "both"):
        with pytest.raises(vllm_cpp.VllmError, match=re.escape("bert is an encoder (embeddings only, no text generation)")):
            Engine.load(model_path("bert-cls", "gguf"), runner=runner)


def test_bert_over_long_input_refused_or_truncated(bert_engine):
    g = golden("bert-mean")
    ids = g["records"][2]["prompt_ids"]  # 30 ids
    long = ids + ids  # 60 > max_model_len 32
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="32"):
        bert_engine.embed([long])
    truncated = bert_engine.embed([long], truncate_prompt_tokens=30)[0]
    assert np.allclose(truncated, bert_engine.embed([long[-30:]])[0], atol=1e-6)
    within(bert_engine.embed([ids])[0], g["records"][2]["ref_MEAN"], REF_TOL)  # still serving


def test_bert_batch_matches_one_at_a_time(bert_engine):
    """Each request attends over its own rows only (no mask across requests)."""
    g = golden("bert-mean")
    prompts = [r["prompt_ids"] for r in g["records"]]
    together = bert_engine.embed(prompts)
    for ours, prompt in zip(together, prompts):
        assert np.allclose(ours, bert_engine.embed([prompt])[0], atol=1e-6)


BAD_BERT = {
    "missing": (dict(drop_tensor="blk.1.layer_output_norm.bias"), "tensor 'blk.1.layer_output_norm.bias' is missing"),
    "no-positions": (dict(drop_tensor="position_embd.weight"), "tensor 'position_embd.weight' is missing"),
    "short-bias": (dict(drop_tensor="blk.0.attn_q.bias", add_tensors={"blk.0.attn_q.bias": np.zeros(32)}),
                   "tensor 'blk.0.attn_q.bias' has 32 elements, expected 64"),
    "short-positions": (dict(set_values={"bert.context_length": 128}),
                        "tensor 'position_embd.weight' has shape [64, 64], expected [64, 128]"),
}


@pytest.mark.parametrize("bad", sorted(BAD_BERT))
def test_bad_bert_gguf_refused_naming_the_tensor(tmp_path, bad):
    edits, message = BAD_BERT[bad]
    path = rewritten(model_path("bert-cls", "gguf"), tmp_path / f"{bad}.gguf", **edits)
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        Engine.load(path)
