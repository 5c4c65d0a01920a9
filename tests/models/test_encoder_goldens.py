"""The embedding architectures beyond bert and the decoder embedders
(issue 43) against transformers, sentence-transformers and llama.cpp, on the
tiny models of tests/golden/tiny_embed/ made by make_encoder_goldens.py
(which says how), from the Hugging Face directory and from the GGUF
llama.cpp's converter wrote; and what each refuses.

``gemma-embedding`` (EmbeddingGemma: bidirectional Gemma 3 layers, mean
pooling, two Dense projections, Normalize). Tolerances, of the vector's
largest magnitude (at least 1):
- the directory against transformers: 2e-4 (test_embed_goldens.py's; it is
  about 3e-6 here);
- the GGUF against transformers: 5e-3. llama.cpp's converter adds 1 to
  Gemma's float16 norm weights in float16, so the GGUF's norms are rounded
  by up to 4.9e-4 each: the file is a slightly different model (we are
  2e-3 to 4e-3 from transformers on it, the same as from the directory's
  weights rounded so);
- the GGUF against llama.cpp on the same file: 5e-3 (llama.cpp rounds
  activations to float16; it is itself 3.6e-3 from transformers, recorded
  as llama_cpp_vs_ref_max_err).

``modern-bert`` and ``nomic-bert``: both forms within 2e-4 of transformers
(transformers 5's own NomicBertModel reads the hand-written published
layout) and sentence-transformers, the GGUF within 5e-3 of llama.cpp.

``jina-bert-v2``: no transformers class runs it, so its reference is
llama.cpp's own embeddings on the GGUF its converter wrote from the
hand-written directory, for both forms within 5e-3 (about 2e-3 seen:
llama.cpp's float16 activations and tanh GELU); the two forms agree to 1e-6.
"""

import json
import re
import shutil

import numpy as np
import pytest

import vllm_cpp
from gguf_rewrite import rewritten
from test_embed_goldens import golden, model_path, unit, within
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

POOLING_TYPES = ["CLS", "MEAN", "LAST"]
HF_TOL = 2e-4
GGUF_TOL = 5e-3
LLAMA_CPP_TOL = 5e-3
# Per case and form: against transformers / sentence-transformers.
TOL = {("gemma-embedding", "hf"): HF_TOL, ("gemma-embedding", "gguf"): GGUF_TOL,
       ("modern-bert", "hf"): HF_TOL, ("modern-bert", "gguf"): HF_TOL,
       ("nomic-bert", "hf"): HF_TOL, ("nomic-bert", "gguf"): HF_TOL,
       # no transformers class runs it: its reference is llama.cpp's embeddings
       ("jina-bert-v2", "hf"): LLAMA_CPP_TOL, ("jina-bert-v2", "gguf"): LLAMA_CPP_TOL}
CASES = ["gemma-embedding", "modern-bert", "nomic-bert", "jina-bert-v2"]


def load(case, form, **options):
    return Engine.load(model_path(case, form), max_model_len=64, kv_cache_dtype="float32", **options)


# --- every case ---

@pytest.mark.parametrize("form", ["gguf", "hf"])
@pytest.mark.parametrize("case", CASES)
def test_model_default_pooling_matches_sentence_transformers(case, form):
    """As loaded (runner auto): the model's pooling (and gemma-embedding's
    Dense projections), Normalize."""
    g = golden(case)
    with load(case, form) as engine:
        assert engine.stats()["supported_tasks"] == ["embed"]
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
    for ours, r in zip(vectors, g["records"]):
        within(ours, r["st_embedding"], TOL[case, form])
        assert abs(np.linalg.norm(ours) - 1.0) < 1e-5


@pytest.mark.parametrize("pooling", POOLING_TYPES)
@pytest.mark.parametrize("form", ["gguf", "hf"])
@pytest.mark.parametrize("case", CASES)
def test_each_pooling_matches_transformers_and_llama_cpp(case, form, pooling):
    g = golden(case)
    with load(case, form, pooler_config={"pooling_type": pooling, "normalize": False}) as engine:
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
        normalised = engine.embed([r["prompt_ids"] for r in g["records"]], normalize=True)
    for ours, unit_ours, r in zip(vectors, normalised, g["records"]):
        within(ours, r[f"ref_{pooling}"], TOL[case, form])
        within(unit_ours, unit(r[f"ref_{pooling}"]), TOL[case, form])
        if form == "gguf":
            within(ours, r[f"llama_cpp_{pooling}"], LLAMA_CPP_TOL)


@pytest.mark.parametrize("case", CASES)
def test_encoder_refuses_generation(case):
    with pytest.raises(vllm_cpp.VllmError, match=re.escape(f"{case} is an encoder (embeddings only")):
        Engine.load(model_path(case, "gguf"), runner="generate")


# --- gemma-embedding ---


def test_gemma_embedding_forms_agree():
    """The GGUF and the directory are the same model but for the converter's
    rounded norms: within the GGUF tolerance of each other."""
    g = golden("gemma-embedding")
    prompts = [r["prompt_ids"] for r in g["records"]]
    with load("gemma-embedding", "gguf") as a, load("gemma-embedding", "hf") as b:
        for x, y in zip(a.embed(prompts), b.embed(prompts)):
            within(x, y, GGUF_TOL)


@pytest.fixture(scope="module")
def gemma_engine():
    with Engine.load(model_path("gemma-embedding", "hf"), max_model_len=32, kv_cache_dtype="float32",
                     pooler_config={"normalize": False}) as engine:
        yield engine


def test_gemma_embedding_refuses_generation(gemma_engine):
    with pytest.raises(vllm_cpp.InvalidArgumentError, match=re.escape("gemma-embedding is an encoder")):
        gemma_engine.complete("hello world")


def test_gemma_embedding_batch_and_length(gemma_engine):
    """Batched requests attend only over their own rows; an over-long prompt
    is refused (or cut when asked) and the engine keeps serving."""
    g = golden("gemma-embedding")
    prompts = [r["prompt_ids"] for r in g["records"]]
    together = gemma_engine.embed(prompts)
    for ours, prompt, r in zip(together, prompts, g["records"]):
        assert np.allclose(ours, gemma_engine.embed([prompt])[0], atol=1e-6)
        within(ours, r["ref_MEAN"], HF_TOL)
    long = prompts[2] + prompts[2]  # 60 ids > max_model_len 32
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="32"):
        gemma_engine.embed([long])
    assert np.allclose(gemma_engine.embed([long], truncate_prompt_tokens=30)[0], together[2], atol=1e-6)


def edited_dir(tmp_path, edit, case="gemma-embedding"):
    """A copy of the case's directory with `edit(path)` applied."""
    target = tmp_path / "model"
    shutil.copytree(model_path(case, "hf"), target)
    edit(target)
    return target


def edit_json(path, **changes):
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def drop_module(d, module_path):
    modules = [m for m in json.loads((d / "modules.json").read_text()) if m["path"] != module_path]
    (d / "modules.json").write_text(json.dumps(modules))


BAD_GEMMA_DIRS = {
    "causal": (lambda d: edit_json(d / "config.json", use_bidirectional_attention=False),
               "config.json 'use_bidirectional_attention' is false, which is not supported (only true)"),
    "dense-bias": (lambda d: edit_json(d / "2_Dense" / "config.json", bias=True),
                   "bias true is not supported (Dense modules without bias only)"),
    "dense-tanh": (lambda d: edit_json(d / "3_Dense" / "config.json",
                                       activation_function="torch.nn.modules.activation.Tanh"),
                   "activation_function \"torch.nn.modules.activation.Tanh\" is not supported"),
    "one-dense": (lambda d: drop_module(d, "3_Dense"), "modules.json has 1 Dense modules (two are supported"),
    "dense-bin": (lambda d: (d / "2_Dense" / "model.safetensors").unlink(),
                  "has no model.safetensors (the Dense weights; pytorch_model.bin is not read)"),
}


@pytest.mark.parametrize("bad", sorted(BAD_GEMMA_DIRS))
def test_bad_gemma_embedding_dir_refused_by_name(tmp_path, bad):
    edit, message = BAD_GEMMA_DIRS[bad]
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        Engine.load(edited_dir(tmp_path, edit))


def test_dense_modules_refused_for_other_architectures(tmp_path):
    """A bert directory with Dense modules: the vector would not be the model's."""
    bert = model_path("bert-mean", "hf")
    if not bert.exists():
        pytest.skip("no bert-mean golden directory")
    target = tmp_path / "bert"
    shutil.copytree(bert, target)
    gemma = model_path("gemma-embedding", "hf")
    for dense in ("2_Dense", "3_Dense"):
        shutil.copytree(gemma / dense, target / dense)
    modules = json.loads((gemma / "modules.json").read_text())
    (target / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape("modules.json has Dense modules, which BertModel")):
        Engine.load(target)


def test_gemma_embedding_gguf_with_one_dense_tensor_refused(tmp_path):
    path = rewritten(model_path("gemma-embedding", "gguf"), tmp_path / "one-dense.gguf", drop_tensor="dense_3.weight")
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape("tensor 'dense_3.weight' is missing (the Dense")):
        Engine.load(path)


# --- modern-bert ---

def test_modern_bert_batch_and_length():
    """Batched requests attend only over their own rows (sliding and global
    layers); an over-long prompt is refused and the engine keeps serving."""
    g = golden("modern-bert")
    prompts = [r["prompt_ids"] for r in g["records"]]
    with Engine.load(model_path("modern-bert", "gguf"), max_model_len=32, kv_cache_dtype="float32",
                     pooler_config={"normalize": False}) as engine:
        together = engine.embed(prompts)
        for ours, prompt, r in zip(together, prompts, g["records"]):
            assert np.allclose(ours, engine.embed([prompt])[0], atol=1e-6)
            within(ours, r["ref_CLS"], HF_TOL)
        with pytest.raises(vllm_cpp.InvalidArgumentError, match="32"):
            engine.embed([prompts[2] + prompts[2]])
        assert np.allclose(engine.embed([prompts[0]])[0], together[0], atol=1e-6)


BAD_MODERN_BERT_DIRS = {
    "silu": (dict(hidden_activation="silu"), "config.json 'hidden_activation' is \"silu\", which is not supported"),
    "norm-bias": (dict(norm_bias=True), "config.json 'norm_bias' is true, which is not supported (only false)"),
    "attention-bias": (dict(attention_bias=True), "config.json 'attention_bias' is true, which is not supported"),
    "layer-types": (dict(layer_types=["full_attention", "sliding_attention"]),
                    "config.json 'layer_types' is not a list of num_hidden_layers layer types"),
    "chunked-layer": (dict(layer_types=["full_attention", "chunked_attention", "sliding_attention", "full_attention"]),
                      "config.json 'layer_types' has \"chunked_attention\""),
}


BAD_MODERN_BERT_GGUFS = {
    "silu": (dict(set_values={"modern-bert.hidden_activation": "silu"}),
             "modern-bert.hidden_activation 'silu' is not supported (gelu only)"),
    "no-embedding-norm": (dict(drop_tensor="token_embd_norm.weight"),
                          "tensor 'token_embd_norm.weight' (the embedding norm) is missing"),
    "missing-norm": (dict(drop_tensor="blk.1.attn_norm.weight"), "tensor 'blk.1.attn_norm.weight' is missing"),
}


@pytest.mark.parametrize("bad", sorted(BAD_MODERN_BERT_GGUFS))
def test_bad_modern_bert_gguf_refused_by_name(tmp_path, bad):
    edits, message = BAD_MODERN_BERT_GGUFS[bad]
    path = rewritten(model_path("modern-bert", "gguf"), tmp_path / f"{bad}.gguf", **edits)
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        Engine.load(path)


# --- nomic-bert ---

BAD_NOMIC_BERT_DIRS = {
    "prenorm": (dict(prenorm=True), "config.json 'prenorm' is true, which is not supported (only false)"),
    "gelu": (dict(activation_function="gelu"), "config.json 'activation_function' is \"gelu\", which is not supported"),
    "moe": (dict(moe_every_n_layers=2), "config.json 'moe_every_n_layers' is 2, which is not supported (only unset)"),
    "partial-rope": (dict(rotary_emb_fraction=0.5), "config.json 'rotary_emb_fraction' is 0.5, which is not supported"),
    "qkv-bias": (dict(qkv_proj_bias=True), "config.json 'qkv_proj_bias' is true, which is not supported"),
}


BAD_JINA_BERT_V2_DIRS = {
    "absolute": (dict(position_embedding_type="absolute"),
                 "config.json 'position_embedding_type' is \"absolute\", which is not supported (only \"alibi\")"),
    "glu": (dict(feed_forward_type="reglu"), "config.json 'feed_forward_type' is \"reglu\", which is not supported"),
}

BAD_CONFIGS = {**{("modern-bert", bad): v for bad, v in BAD_MODERN_BERT_DIRS.items()},
               **{("nomic-bert", bad): v for bad, v in BAD_NOMIC_BERT_DIRS.items()},
               **{("jina-bert-v2", bad): v for bad, v in BAD_JINA_BERT_V2_DIRS.items()}}


@pytest.mark.parametrize("case,bad", sorted(BAD_CONFIGS))
def test_bad_config_json_refused_by_name(tmp_path, case, bad):
    changes, message = BAD_CONFIGS[case, bad]
    path = edited_dir(tmp_path, lambda d: edit_json(d / "config.json", **changes), case=case)
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        Engine.load(path)


def test_bad_nomic_bert_gguf_refused_naming_the_tensor(tmp_path):
    path = rewritten(model_path("nomic-bert", "gguf"), tmp_path / "no-gate.gguf", drop_tensor="blk.1.ffn_gate.weight")
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape("tensor 'blk.1.ffn_gate.weight' is missing")):
        Engine.load(path)


# --- jina-bert-v2 ---

def test_jina_bert_v2_forms_are_the_same_model():
    """The directory and the GGUF hold the same float16 weights: equal vectors
    (the comparison with llama.cpp above is the independent check)."""
    g = golden("jina-bert-v2")
    prompts = [r["prompt_ids"] for r in g["records"]]
    with load("jina-bert-v2", "gguf") as a, load("jina-bert-v2", "hf") as b:
        for x, y in zip(a.embed(prompts), b.embed(prompts)):
            within(x, y, 1e-6)


def test_jina_bert_v2_variants_refused_naming_the_tensor(tmp_path):
    """jina-embeddings-v2-base-code's q/k LayerNorms and a separate ffn_gate are not run."""
    for name, shape in (("blk.0.attn_q_norm.weight", 64), ("blk.1.ffn_gate.weight", (96, 64))):
        path = rewritten(model_path("jina-bert-v2", "gguf"), tmp_path / f"{name}.gguf",
                         add_tensors={name: np.zeros(shape, dtype=np.float32)})
        with pytest.raises(vllm_cpp.ModelLoadError,
                           match=re.escape(f"tensor '{name}' is not supported (a jina-bert-v2 variant")):
            Engine.load(path)
