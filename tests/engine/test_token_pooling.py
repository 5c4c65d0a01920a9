"""vLLM's token pooling (issue 43) and the pooling API on the tiny
XLM-RoBERTa embedder of tests/golden/tiny_crossencoder/: ALL gives every
prompt row (checked against transformers' hidden states: its first, last and
mean rows are the golden's CLS, LAST and MEAN vectors), STEP keeps the rows
of the step_tag_id tokens and their returned_token_ids columns, as vLLM's
StepPool; ``Engine.encode`` / ``LLM.encode`` / ``vllm_pooling`` by task, and
what each refuses by name."""

import json
import pathlib

import numpy as np
import pytest

import vllm_cpp
from vllm_cpp import LLM, Engine

pytestmark = pytest.mark.timeout(300)

TINY = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_crossencoder"
TOL = 2e-4


def golden():
    path = TINY / "xlm-roberta.json"
    if not path.exists():
        pytest.skip("no golden xlm-roberta.json (make_crossencoder_goldens.py writes it)")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def engine():
    golden()
    with Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64, kv_cache_dtype="float32") as e:
        yield e


def test_all_rows_match_transformers(engine):
    g = golden()
    for r in g["records"]:
        rows = np.asarray(engine.encode([r["prompt_ids"]], task="token_embed", normalize=False)[0])
        assert rows.shape == (len(r["prompt_ids"]), 64)
        assert np.abs(rows[0] - r["ref_CLS"]).max() < TOL
        assert np.abs(rows[-1] - r["ref_LAST"]).max() < TOL
        assert np.abs(rows.mean(axis=0) - r["ref_MEAN"]).max() < TOL
    unit = np.asarray(engine.encode(g["records"][1]["text"], task="token_embed")[0])  # the model's Normalize
    assert np.allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)


def test_step_keeps_the_tag_rows_and_columns():
    g = golden()
    ids = g["records"][3]["prompt_ids"]
    tag = ids[2]  # a token of the prompt (vLLM's step_tag_id marks the step ends)
    columns = [0, 3, 5]
    config = {"tok_pooling_type": "STEP", "step_tag_id": tag, "returned_token_ids": columns, "normalize": False}
    with Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64, kv_cache_dtype="float32",
                     pooler_config=config) as step:
        rows = np.asarray(step.encode([ids], task="token_embed")[0])
        everything = np.asarray(step.encode([ids], task="embed")[0])  # still its CLS embedding
    with Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64, kv_cache_dtype="float32") as plain:
        all_rows = np.asarray(plain.encode([ids], task="token_embed", normalize=False)[0])
    expected = all_rows[[i for i, t in enumerate(ids) if t == tag]][:, columns]
    assert rows.shape == expected.shape and np.abs(rows - expected).max() < 1e-6
    assert everything.shape == (64,)


def test_pooling_tasks_and_llm_encode(engine):
    g = golden()
    text = g["records"][0]["text"]
    assert engine.encode(text)[0] == pytest.approx(engine.embed(text)[0], abs=1e-6)  # the model's task: embed
    answer = json.loads(engine.pooling_json(json.dumps({"input": [text], "task": "token_embed",
                                                         "encoding_format": "base64"})))
    import base64
    flat = np.frombuffer(base64.b64decode(answer["data"][0]["data"]), dtype=np.float32)
    assert flat.size == len(g["records"][0]["prompt_ids"]) * 64
    assert answer["object"] == "list" and answer["id"].startswith("pool-")
    assert answer["data"][0]["object"] == "pooling" and answer["usage"]["prompt_tokens"] == len(g["records"][0]["prompt_ids"])
    llm = LLM(str(TINY / "xlm-roberta.gguf"), max_model_len=64)
    try:
        out = llm.encode([text], pooling_task="token_embed")
        assert len(out[0].outputs.data) == len(out[0].prompt_token_ids) == len(g["records"][0]["prompt_ids"])
    finally:
        llm.engine.close()


def test_refusals_name_the_field(engine):
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="'task' must be embed, token_embed or classify"):
        engine.encode("x", task="token_classify")
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="cannot classify"):
        engine.encode("x", task="classify")
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="'task' must be a string"):
        engine.pooling_json(json.dumps({"input": "x", "task": 3}))
    for config, message in [({"tok_pooling_type": "MAX"}, "'pooler_config.tok_pooling_type' must be ALL or STEP"),
                            ({"step_tag_id": 3}, "need tok_pooling_type STEP"),
                            ({"tok_pooling_type": "STEP", "returned_token_ids": [64]}, "not a column"),
                            ({"pooling_type": "ALL"}, "set by pooler_config's tok_pooling_type")]:
        with pytest.raises(vllm_cpp.InvalidArgumentError, match=message):
            Engine.load(str(TINY / "xlm-roberta.gguf"), max_model_len=64, pooler_config=config)
    assert len(engine.encode("still serving", task="token_embed")[0]) > 0
    with Engine.load(str(TINY / "xlm-roberta-classify.gguf"), max_model_len=64) as classifier:
        assert len(classifier.encode("x")[0]) == 3  # its own task: classify
        with pytest.raises(vllm_cpp.InvalidArgumentError, match="classification head"):
            classifier.encode("x", task="token_embed")
