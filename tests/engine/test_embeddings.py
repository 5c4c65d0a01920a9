"""The pooling request kind through the one request road (issue 43), on
SmolLM2 run as a decoder embedder: the runners (generation, pooling, both)
and their refusals, the pooling types checked against each other through
causal attention (a one-token prompt's CLS, MEAN and LAST are the same
vector; LAST of a prefix is what MEAN adds), normalisation, Matryoshka
dimensions, truncate_prompt_tokens, batch invariance (64 concurrent
requests give the vectors one at a time gives) and embeddings beside
generation in one engine. Agreement with transformers and llama.cpp is
tests/models/test_embed_goldens.py's."""

import math
import threading

import pytest

from vllm_cpp import Engine, SamplingParams
from vllm_cpp.errors import InvalidArgumentError

pytestmark = pytest.mark.timeout(300)

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "Embeddings are vectors.",
         "A longer text about retrieval-augmented generation, the main CPU workload, and its other half."]


@pytest.fixture(scope="module")
def both(smollm2_path):
    """Generation and pooling in one engine, LAST pooling (the default of a converted decoder)."""
    with Engine.load(smollm2_path, runner="both", max_model_len=256, max_num_seqs=16,
                     hf_overrides={"is_matryoshka": True}) as eng:
        yield eng


def close(a, b, tol=1e-5):
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= tol


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def test_vectors_are_normalised_hidden_size_and_per_input(both):
    vectors = both.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    for v in vectors:
        assert len(v) == 576  # SmolLM2-135M's hidden size
        assert abs(norm(v) - 1.0) < 1e-5
    assert not close(vectors[0], vectors[1], 1e-3)
    raw = both.embed(TEXTS[0], normalize=False)[0]
    assert norm(raw) > 1.5  # a final hidden state, not a unit vector
    assert close([x / norm(raw) for x in raw], vectors[0])


def test_token_id_inputs_equal_text_inputs(both):
    ids = [both.tokenize(t) for t in TEXTS[:2]]
    assert close(both.embed(ids)[1], both.embed(TEXTS[1])[0])
    assert close(both.embed(ids[0])[0], both.embed(TEXTS[0])[0])


def test_batch_invariance_64_concurrent(both):
    texts = [TEXTS[i % len(TEXTS)] + " #%d" % i for i in range(64)]
    alone = [both.embed(t)[0] for t in texts]
    results = [None] * 64

    def run(i):
        results[i] = both.embed(texts[i])[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, results):
        assert close(a, b)
    # One call with all 64 inputs: batched in the same steps.
    for a, b in zip(alone, both.embed(texts)):
        assert close(a, b)


def test_embeddings_beside_generation(both):
    params = SamplingParams(max_tokens=24, temperature=0.0)
    expected_text = both.complete("Once upon a time", params).text
    expected_vec = both.embed(TEXTS[3])[0]
    done = {}

    def generate():
        done["text"] = both.complete("Once upon a time", params).text

    thread = threading.Thread(target=generate)
    thread.start()
    vectors = [both.embed(TEXTS[3])[0] for _ in range(4)]
    thread.join()
    assert done["text"] == expected_text
    for v in vectors:
        assert close(v, expected_vec)


def test_pooling_types_agree_through_causal_attention(smollm2_path, both):
    ids = both.tokenize(TEXTS[1])
    engines = {t: Engine.load(smollm2_path, runner="pooling", max_model_len=256,
                              pooler_config={"pooling_type": t, "normalize": False})
               for t in ("CLS", "MEAN", "LAST")}
    try:
        one = {t: e.embed([ids[:1]])[0] for t, e in engines.items()}
        assert close(one["CLS"], one["MEAN"], 1e-4) and close(one["CLS"], one["LAST"], 1e-4)
        # CLS: the first token's row, whatever follows it.
        assert close(engines["CLS"].embed([ids])[0], one["CLS"], 1e-4)
        # MEAN of n tokens, less MEAN of n - 1 scaled: the last row (LAST).
        n = len(ids)
        mean_n, mean_m = engines["MEAN"].embed([ids, ids[:-1]])
        last = engines["LAST"].embed([ids])[0]
        derived = [n * a - (n - 1) * b for a, b in zip(mean_n, mean_m)]
        assert max(abs(x - y) for x, y in zip(derived, last)) < 1e-2 * max(1.0, max(map(abs, last)))
        # The engine's default normalisation applies when a request says nothing.
        assert abs(norm(engines["LAST"].embed([ids], normalize=True)[0]) - 1.0) < 1e-5
        assert close(both.embed([ids], normalize=False)[0], last, 1e-4)
        for e in engines.values():
            assert e.stats()["supported_tasks"] == ["embed"]
    finally:
        for e in engines.values():
            e.close()


def test_matryoshka_dimensions_truncate_then_normalise(both):
    full = both.embed(TEXTS[2], normalize=False)[0]
    cut = both.embed(TEXTS[2], dimensions=64)[0]
    assert len(cut) == 64
    assert close(cut, [x / norm(full[:64]) for x in full[:64]])
    with pytest.raises(InvalidArgumentError, match="'dimensions' must be between 1 and"):
        both.embed(TEXTS[2], dimensions=577)


def test_truncate_prompt_tokens_keeps_the_last_tokens(both):
    ids = both.tokenize(TEXTS[3])
    assert close(both.embed(TEXTS[3], truncate_prompt_tokens=5)[0], both.embed([ids[-5:]])[0])
    with pytest.raises(InvalidArgumentError, match="'truncate_prompt_tokens' 1000 is greater than max_model_len"):
        both.embed(TEXTS[3], truncate_prompt_tokens=1000)


def test_no_kv_blocks_kept_and_counted(both):
    before = both.stats()
    both.embed(TEXTS)
    after = both.stats()
    assert after["pooling_requests"] == before["pooling_requests"] + len(TEXTS)
    assert after["running_requests"] == 0 and after["waiting_requests"] == 0
    assert after["kv_blocks_used"] == 0


def test_refusals_name_what_to_use(smollm2_path, both):
    with Engine.load(smollm2_path, max_model_len=128) as generate_only:
        assert generate_only.stats()["supported_tasks"] == ["generate"]
        with pytest.raises(InvalidArgumentError, match="runner 'pooling'"):
            generate_only.embed("hi")
    with Engine.load(smollm2_path, convert="embed", max_model_len=128) as pooling_only:
        assert pooling_only.stats()["supported_tasks"] == ["embed"]
        with pytest.raises(InvalidArgumentError, match="serves embeddings only.*runner 'generate'"):
            pooling_only.complete("hi", SamplingParams(max_tokens=2))
        with pytest.raises(InvalidArgumentError, match="does not support matryoshka"):
            pooling_only.embed("hi", dimensions=8)
        assert len(pooling_only.embed("still alive")[0]) == 576


@pytest.mark.parametrize("options, message", [
    ({"runner": "encode"}, "'runner' must be auto, generate, pooling or both"),
    ({"convert": "classify"}, "'convert' must be auto, none or embed"),
    ({"runner": "generate", "convert": "embed"}, "needs runner pooling"),
    ({"pooler_config": {"pooling_type": "ALL"}}, "ALL is not supported"),
    ({"pooler_config": {"pooling_type": "mean"}}, "must be CLS, MEAN or LAST"),
    ({"pooler_config": {"softmax": True}}, "'pooler_config' key 'softmax' is not supported"),
    ({"hf_overrides": {"num_layers": 2}}, "'hf_overrides' key 'num_layers' is not supported"),
])
def test_bad_pooling_options_refused_by_name(smollm2_path, options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        Engine.load(smollm2_path, runner=options.pop("runner", "pooling"), max_model_len=128, **options)


def test_bad_inputs_leave_the_engine_usable(both):
    with pytest.raises(InvalidArgumentError, match="'input' must be a string"):
        both.embed([])
    with pytest.raises(InvalidArgumentError, match="maximum context length is 256"):
        both.embed("word " * 400)
    with pytest.raises(InvalidArgumentError, match="input\\[1\\].*outside the vocabulary"):
        both.embed([[1, 2, 3], [10 ** 8]])
    with pytest.raises(InvalidArgumentError, match="'input' has no tokens"):
        both.embed("", add_special_tokens=False)
    assert len(both.embed("fine")[0]) == 576


def test_llm_embed_returns_vllm_shaped_outputs(smollm2_path):
    from vllm_cpp import LLM, EmbeddingRequestOutput, PoolingParams

    with LLM(smollm2_path, runner="pooling", max_model_len=128) as llm:
        outputs = llm.embed(TEXTS[:2])
        assert all(isinstance(o, EmbeddingRequestOutput) and o.finished for o in outputs)
        assert outputs[0].prompt_token_ids == llm.engine.tokenize(TEXTS[0])
        assert close(outputs[1].outputs.embedding, llm.engine.embed(TEXTS[1])[0])
        raw = llm.embed({"prompt_token_ids": outputs[0].prompt_token_ids}, pooling_params=PoolingParams(normalize=False))
        assert abs(norm(raw[0].outputs.embedding) - 1.0) > 0.1
        cut = llm.embed(TEXTS[3], truncate_prompt_tokens=4)[0]
        assert cut.prompt_token_ids == llm.engine.tokenize(TEXTS[3])[-4:]
        assert close(cut.outputs.embedding, llm.engine.embed([cut.prompt_token_ids])[0])


def test_c_abi_vllm_embed_upstream_shape(both):
    """vllm_embed / vllm_embedding_result_free as the upstream v15 ABI
    names them: texts in, a library-owned row-major matrix out, zeroed on
    failure."""
    from vllm_cpp._ffi import ffi, lib

    texts = [ffi.new("char[]", t.encode()) for t in TEXTS[:2]]
    array = ffi.new("const char*[]", texts)
    out = ffi.new("vllm_embedding_result*")
    with both._use() as handle:
        assert lib.vllm_embed(handle, array, 2, out) == 0
        try:
            assert out.n_embeddings == 2 and out.dim == 576
            assert out.prompt_tokens == sum(len(both.tokenize(t)) for t in TEXTS[:2])
            rows = [list(ffi.unpack(out.values + i * out.dim, out.dim)) for i in range(2)]
        finally:
            lib.vllm_embedding_result_free(out)
        assert out.values == ffi.NULL and out.n_embeddings == 0
        for row, expected in zip(rows, both.embed(TEXTS[:2])):
            assert close(row, expected)
        assert lib.vllm_embed(handle, array, 0, out) != 0
        assert out.values == ffi.NULL and out.dim == 0
        assert "n_texts must be positive" in ffi.string(lib.vllm_last_error()).decode()
        lib.vllm_embedding_result_free(ffi.NULL)  # a no-op
