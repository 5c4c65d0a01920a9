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
"""

import json
import pathlib
import re
import shutil

import numpy as np
import pytest

import vllm_cpp
from gguf_rewrite import rewritten
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

TINY_EMBED = pathlib.Path(__file__).resolve().parent.parent / "golden" / "tiny_embed"
POOLING_TYPES = ["CLS", "MEAN", "LAST"]
HF_TOL = 2e-4
GGUF_TOL = 5e-3
LLAMA_CPP_TOL = 5e-3
TOL = {"hf": HF_TOL, "gguf": GGUF_TOL}


def golden(case):
    path = TINY_EMBED / f"{case}.json"
    if not path.exists():
        pytest.skip(f"no embedding golden {path.name} (make_encoder_goldens.py writes it)")
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


def load(case, form, **options):
    return Engine.load(model_path(case, form), max_model_len=64, kv_cache_dtype="float32", **options)


# --- gemma-embedding ---

@pytest.mark.parametrize("form", ["gguf", "hf"])
def test_gemma_embedding_matches_sentence_transformers(form):
    """As loaded (runner auto): mean pooling, the Dense projections, Normalize."""
    g = golden("gemma-embedding")
    with load("gemma-embedding", form) as engine:
        assert engine.stats()["supported_tasks"] == ["embed"]
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
    for ours, r in zip(vectors, g["records"]):
        within(ours, r["st_embedding"], TOL[form])
        assert abs(np.linalg.norm(ours) - 1.0) < 1e-5


@pytest.mark.parametrize("pooling", POOLING_TYPES)
@pytest.mark.parametrize("form", ["gguf", "hf"])
def test_gemma_embedding_each_pooling_matches_transformers_and_llama_cpp(form, pooling):
    g = golden("gemma-embedding")
    with load("gemma-embedding", form, pooler_config={"pooling_type": pooling, "normalize": False}) as engine:
        vectors = engine.embed([r["prompt_ids"] for r in g["records"]])
        normalised = engine.embed([r["prompt_ids"] for r in g["records"]], normalize=True)
    for ours, unit_ours, r in zip(vectors, normalised, g["records"]):
        within(ours, r[f"ref_{pooling}"], TOL[form])
        within(unit_ours, unit(r[f"ref_{pooling}"]), TOL[form])
        if form == "gguf":
            within(ours, r[f"llama_cpp_{pooling}"], LLAMA_CPP_TOL)


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
    with pytest.raises(vllm_cpp.VllmError, match=re.escape("gemma-embedding is an encoder (embeddings only")):
        Engine.load(model_path("gemma-embedding", "gguf"), runner="generate")


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


def edited_dir(tmp_path, edit):
    """A copy of the gemma-embedding directory with `edit(path)` applied."""
    target = tmp_path / "model"
    shutil.copytree(model_path("gemma-embedding", "hf"), target)
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
