"""Regenerate the goldens of the embedding architectures beyond bert and the
decoder embedders (issue 43) under tests/golden/tiny_embed/, with
make_embed_goldens.py's helpers and record layout (read its docstring first).

Case ``gemma-embedding`` (EmbeddingGemma)
-----------------------------------------
1. A tiny random ``Gemma3TextModel`` (transformers) with
   ``use_bidirectional_attention`` (EmbeddingGemma's text model: Gemma 3's
   layers, q/k norms, sandwich norms, GeGLU, sqrt(dim) embedding scale, no
   causal mask; sliding layers see the tokens within half the configured
   window on both sides), 6 layers so one of them is global (Gemma 3's
   pattern), sliding_window 16 so the 20- and 30-id prompts reach past it.
   Weights seeded and rounded to float16 (make_moe_goldens._randomize).
2. Saved as a float16 directory with the tiny byte-level BPE tokenizer and
   made a sentence-transformers model as google/embeddinggemma-300m is:
   Transformer, Pooling (mean), two Dense modules without bias or activation
   (``2_Dense`` dim -> 2 dim, ``3_Dense`` 2 dim -> dim; ``linear.weight``
   in their model.safetensors, saved by sentence-transformers' own Dense),
   Normalize.
3. Converted by llama.cpp's own converter with
   ``--sentence-transformers-dense-modules`` (without it the Dense weights
   are left out of the GGUF): architecture ``gemma-embedding``, tensors
   ``dense_2.weight`` / ``dense_3.weight``.
4. Records per prompt: transformers' float32 ``last_hidden_state`` pooled
   each way and then through both Dense projections, unnormalised
   (``ref_<TYPE>``: what sentence-transformers computes with that pooling,
   before Normalize); sentence-transformers' own ``sentence_embedding``
   (``st_embedding``); llama.cpp's pooled embedding on the GGUF per type
   (``llama_cpp_<TYPE>``; llama.cpp applies the Dense projections after
   pooling).

How to regenerate
-----------------
From the repository root, with the reference venv (see make_embed_goldens.py)::

    python tests/golden/make_encoder_goldens.py [--only CASE ...] [--llama-cpp DIR]
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_embed_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = make_embed_goldens.OUT
POOLING_TYPES = make_embed_goldens.POOLING_TYPES

GEMMA_EMBEDDING = dict(make_moe_goldens.BASE, num_hidden_layers=6, head_dim=16, query_pre_attn_scalar=16,
                       intermediate_size=128, sliding_window=16, use_bidirectional_attention=True,
                       max_position_embeddings=64)

CASES = {
    "gemma-embedding": ("Gemma3TextConfig", GEMMA_EMBEDDING, "MEAN"),
}


def tiny_base_model(config_class, kwargs, seed):
    """A random base (headless) transformers model of ``config_class``, seeded and
    rounded as make_moe_goldens.tiny_model makes decoders."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.AutoModel.from_config(config, dtype=torch.float32).eval()
    make_moe_goldens._randomize(model, seed)
    return model


def dense_modules(dim, seed):
    """EmbeddingGemma's two Dense modules (dim -> 2 dim -> dim), no bias, no activation."""
    import torch
    from sentence_transformers.base.modules.dense import Dense

    g = torch.Generator().manual_seed(seed + 1)
    out = []
    for n_in, n_out in ((dim, 2 * dim), (2 * dim, dim)):
        weight = (torch.randn(n_out, n_in, generator=g) / np.sqrt(n_in)).half().float()
        out.append(Dense(n_in, n_out, bias=False, activation_function=torch.nn.Identity(), init_weight=weight))
    return out


def add_dense_modules(hf_dir, denses):
    """modules.json's Dense entries between Pooling and Normalize (2_Dense, 3_Dense, 4_Normalize)."""
    modules = json.loads((hf_dir / "modules.json").read_text())
    normalize = modules.pop()
    for i, dense in enumerate(denses, start=2):
        (hf_dir / f"{i}_Dense").mkdir()
        dense.save(str(hf_dir / f"{i}_Dense"))
        modules.append(dict(idx=i, name=str(i), path=f"{i}_Dense", type="sentence_transformers.models.Dense"))
    n = len(modules)
    shutil.move(str(hf_dir / normalize["path"]), str(hf_dir / f"{n}_Normalize"))
    modules.append(dict(normalize, idx=n, name=str(n), path=f"{n}_Normalize"))
    (hf_dir / "modules.json").write_text(json.dumps(modules, indent=2))


def projected_records(model, prompts, denses):
    """make_embed_goldens.transformers_records with every pooled vector through the Dense modules."""
    import torch

    model.model = model
    records = make_embed_goldens.transformers_records(model, prompts)
    del model.model
    with torch.no_grad():
        for r in records:
            for t in POOLING_TYPES:
                x = torch.tensor([r[f"ref_{t}"]], dtype=torch.float32)
                for dense in denses:
                    x = dense.linear(x)
                r[f"ref_{t}"] = x[0].numpy().astype(float).tolist()
    return records


def make_case(case, llama_cpp, seed=0):
    config_class, kwargs, pooling = CASES[case]
    model = tiny_base_model(config_class, kwargs, seed)
    prompts = make_moe_goldens.seeded_prompts(seed)
    hf_dir = make_moe_goldens.fresh_hf_dir(model, OUT / f"{case}.hf")
    make_embed_goldens.write_sentence_transformers(hf_dir, pooling, kwargs["hidden_size"])
    denses = dense_modules(kwargs["hidden_size"], seed)
    add_dense_modules(hf_dir, denses)
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp, extra_args=("--sentence-transformers-dense-modules",))
    records = projected_records(model, prompts, denses)
    for record, st in zip(records, make_embed_goldens.sentence_transformers_embeddings(hf_dir, prompts)):
        record["st_embedding"] = st
    for t in POOLING_TYPES:
        for record, vec in zip(records, make_embed_goldens.llama_cpp_embeddings(gguf_path, prompts, t)):
            record[f"llama_cpp_{t}"] = vec
    write_golden(case, pooling, records)


def write_golden(case, pooling, records):
    """make_embed_goldens' record file, with the same error summaries."""
    err = max(float(np.abs(np.array(r[f"llama_cpp_{t}"]) - np.array(r[f"ref_{t}"])).max())
              for r in records for t in POOLING_TYPES)
    st_err = max(float(np.abs(np.array(r["st_embedding"]) - np.array(r[f"ref_{pooling}"]) /
                              np.linalg.norm(r[f"ref_{pooling}"])).max()) for r in records)
    golden = dict(case=case, pooling=pooling, normalize=True, records=records,
                  llama_cpp_vs_ref_max_err=err, st_vs_ref_max_err=st_err)
    (OUT / f"{case}.json").write_text(json.dumps(golden))
    print(f"{case}: dim {len(records[0]['ref_' + pooling])}, llama.cpp vs transformers max err {err:.2e}, "
          f"sentence-transformers vs transformers (normalised) {st_err:.2e}")


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
