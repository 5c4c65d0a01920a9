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

Case ``modern-bert``
-------------------
A tiny random ``ModernBertModel`` (transformers: rotary positions, a global
layer every 3rd from layer 0 and sliding ones between within
``local_attention`` / 2 on each side, GeGLU with erf GELU, LayerNorms
without bias, pre-norm with the first layer's attention norm the identity,
a final norm; no biases), 4 layers, local_attention 16, with CLS
sentence-transformers pooling (gte-modernbert's) and Normalize; steps 2-4 as
for gemma-embedding without Dense modules (``ref_<TYPE>`` is the pooled
hidden state itself).

Case ``nomic-bert`` (nomic-embed-text v1/v1.5)
----------------------------------------------
The published checkpoints are trust_remote_code and the hub is not
reachable, so the directory is written by hand (``remote_code_dir``:
config.json with nomic-embed-text's keys, random float16 tensors under its
published names: fused ``Wqkv``, ``fc11``/``fc12``/``fc2``, ``norm1``/``norm2``,
``emb_ln``; BERT_VOCAB's WordPiece tokenizer; MEAN sentence-transformers
pooling) and converted by llama.cpp's converter. transformers 5.25 has its
own ``NomicBertModel``, which reads that published layout (and the
converter reads config.json through its config class, so config.json also
carries transformers' key names); it is the transformers reference here,
and sentence-transformers and **llama.cpp's own embeddings** (llama-cpp-
python, ``embedding=True``, each pooling type) on the GGUF are checked as
for the other cases.

Case ``jina-bert-v2`` (jina-embeddings-v2-base-en)
--------------------------------------------------
Also trust_remote_code, and transformers has no JinaBert class, so there
is no transformers reference: the directory is written by hand as for
nomic-bert (BERT's embeddings without positions, ALiBi attention with
biases, the fused GEGLU ``mlp.gated_layers`` whose first half is the gate,
``mlp.wo`` and ``mlp.layernorm``; MEAN pooling), converted by llama.cpp's
converter (which reads config.json, ``model_type`` "bert", without the
remote code), and **llama.cpp's own embeddings** on the GGUF
(llama-cpp-python, ``embedding=True``, each pooling type) are the reference
for both our GGUF and our reading of the directory (``ref_<TYPE>`` =
``llama_cpp_<TYPE>``; ``reference: "llama.cpp"`` in the golden).

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

MODERN_BERT = dict(vocab_size=make_moe_goldens.BASE["vocab_size"], hidden_size=64, num_hidden_layers=4,
                   num_attention_heads=4, intermediate_size=96, max_position_embeddings=64, local_attention=16,
                   global_attn_every_n_layers=3, norm_eps=1e-5, hidden_activation="gelu",
                   pad_token_id=0, bos_token_id=make_moe_goldens.TOKENIZER["bos_id"],
                   eos_token_id=make_moe_goldens.TOKENIZER["eos_id"], cls_token_id=make_moe_goldens.TOKENIZER["bos_id"],
                   sep_token_id=make_moe_goldens.TOKENIZER["eos_id"],
                   # llama.cpp's converter writes ModernBERT's norm_eps as the RMS epsilon and
                   # its loader wants attention.layer_norm_epsilon: this extra key (transformers
                   # keeps and ignores it) makes the converter write that too.
                   layer_norm_eps=1e-5)

# nomic-ai/nomic-embed-text-v1.5's config.json keys (NomicBertConfig, remote code), tiny.
NOMIC_BERT = dict(architectures=["NomicBertModel"], model_type="nomic_bert", activation_function="swiglu",
                  causal=False, fused_bias_fc=True, layer_norm_epsilon=1e-12, mlp_fc1_bias=False,
                  mlp_fc2_bias=False, n_embd=64, n_head=4, n_inner=96, n_layer=2, n_positions=2048,
                  max_trained_positions=2048, parallel_block=False, prenorm=False, qkv_proj_bias=False,
                  rotary_emb_base=1000, rotary_emb_fraction=1.0, rotary_emb_interleaved=False,
                  rotary_emb_scale_base=None, rotary_scaling_factor=None, type_vocab_size=2,
                  vocab_size=len(make_embed_goldens.BERT_VOCAB), pad_token_id=0,
                  # transformers 5's own NomicBertConfig names (its NomicBertModel reads the
                  # published tensor layout; llama.cpp's converter reads config.json through it)
                  hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                  layer_norm_eps=1e-12, max_position_embeddings=2048,
                  rope_parameters=dict(rope_type="default", rope_theta=1000.0))

# jinaai/jina-embeddings-v2-base-en's config.json keys (JinaBertConfig, remote code), tiny.
JINA_BERT_V2 = dict(architectures=["JinaBertModel"], model_type="bert", vocab_size=len(make_embed_goldens.BERT_VOCAB),
                    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                    hidden_act="gelu", max_position_embeddings=64, type_vocab_size=2, layer_norm_eps=1e-12,
                    pad_token_id=0, position_embedding_type="alibi", feed_forward_type="geglu", emb_pooler="mean")

CASES = {
    "gemma-embedding": ("Gemma3TextConfig", GEMMA_EMBEDDING, "MEAN"),
    "modern-bert": ("ModernBertConfig", MODERN_BERT, "CLS"),
    "nomic-bert": ("remote code", NOMIC_BERT, "MEAN"),
    "jina-bert-v2": ("remote code", JINA_BERT_V2, "MEAN"),
}


def jina_bert_v2_tensors(config, seed):
    """JinaBertModel's state dict (its published tensor names), seeded, float16."""
    rng = np.random.default_rng(seed)
    dim, ffn, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]

    def matrix(rows, cols, scale=None):
        return (rng.standard_normal((rows, cols)) * (scale or 1 / np.sqrt(cols))).astype(np.float16)

    def vector(n, around):
        return (around + 0.1 * rng.standard_normal(n)).astype(np.float16)

    t = {"embeddings.word_embeddings.weight": matrix(vocab, dim, 0.2),
         "embeddings.token_type_embeddings.weight": matrix(config["type_vocab_size"], dim, 0.2),
         "embeddings.LayerNorm.weight": vector(dim, 1.0), "embeddings.LayerNorm.bias": vector(dim, 0.0)}
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            t.update({p + part + ".weight": matrix(dim, dim), p + part + ".bias": vector(dim, 0.0)})
        t.update({p + "attention.output.LayerNorm.weight": vector(dim, 1.0),
                  p + "attention.output.LayerNorm.bias": vector(dim, 0.0),
                  p + "mlp.gated_layers.weight": matrix(2 * ffn, dim),
                  p + "mlp.wo.weight": matrix(dim, ffn), p + "mlp.wo.bias": vector(dim, 0.0),
                  p + "mlp.layernorm.weight": vector(dim, 1.0), p + "mlp.layernorm.bias": vector(dim, 0.0)})
    return t


def nomic_bert_tensors(config, seed):
    """NomicBertModel's state dict (its published tensor names), seeded, float16."""
    rng = np.random.default_rng(seed)
    dim, ffn, vocab = config["n_embd"], config["n_inner"], config["vocab_size"]

    def matrix(rows, cols, scale=None):
        return (rng.standard_normal((rows, cols)) * (scale or 1 / np.sqrt(cols))).astype(np.float16)

    def norm(n, around):
        return (around + 0.1 * rng.standard_normal(n)).astype(np.float16)

    t = {"embeddings.word_embeddings.weight": matrix(vocab, dim, 0.2),
         "embeddings.token_type_embeddings.weight": matrix(config["type_vocab_size"], dim, 0.2),
         "emb_ln.weight": norm(dim, 1.0), "emb_ln.bias": norm(dim, 0.0)}
    for layer in range(config["n_layer"]):
        p = f"encoder.layers.{layer}."
        t.update({p + "attn.Wqkv.weight": matrix(3 * dim, dim), p + "attn.out_proj.weight": matrix(dim, dim),
                  p + "mlp.fc11.weight": matrix(ffn, dim), p + "mlp.fc12.weight": matrix(ffn, dim),
                  p + "mlp.fc2.weight": matrix(dim, ffn),
                  p + "norm1.weight": norm(dim, 1.0), p + "norm1.bias": norm(dim, 0.0),
                  p + "norm2.weight": norm(dim, 1.0), p + "norm2.bias": norm(dim, 0.0)})
    return t


def remote_code_dir(case, seed):
    """A trust_remote_code model's directory written by hand (config.json and
    its tensors under their published names; BERT_VOCAB's WordPiece
    tokenizer): transformers cannot build it without the remote code, and
    the hub is not reachable."""
    import transformers
    from safetensors.numpy import save_file

    config = CASES[case][1]
    hf_dir = OUT / f"{case}.hf"
    shutil.rmtree(hf_dir, ignore_errors=True)
    hf_dir.mkdir(parents=True)
    (hf_dir / "config.json").write_text(json.dumps(config, indent=2))
    tensors = nomic_bert_tensors if case == "nomic-bert" else jina_bert_v2_tensors
    save_file(tensors(config, seed), str(hf_dir / "model.safetensors"))
    vocab = {token: i for i, token in enumerate(make_embed_goldens.BERT_VOCAB)}
    transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(hf_dir)
    return hf_dir


def write_records(case, pooling, records, hf_dir, gguf_path):
    """Step 4's other two: sentence-transformers' and llama.cpp's vectors of the
    records' prompts, then the golden file (make_embed_goldens.write_golden)."""
    prompts = [r["prompt_ids"] for r in records]
    for record, st in zip(records, make_embed_goldens.sentence_transformers_embeddings(hf_dir, prompts)):
        record["st_embedding"] = st
    for t in POOLING_TYPES:
        for record, vec in zip(records, make_embed_goldens.llama_cpp_embeddings(gguf_path, prompts, t)):
            record[f"llama_cpp_{t}"] = vec
    make_embed_goldens.write_golden(case, pooling, records)


def make_llama_cpp_reference_case(case, pooling, gguf_path, seed):
    """No transformers class runs the model: llama.cpp's embeddings on the GGUF
    are the reference for both forms (``ref_<TYPE>`` = ``llama_cpp_<TYPE>``,
    ``st_embedding`` the normalised vector of the model's pooling; the golden
    says ``reference: "llama.cpp"``)."""
    records = [dict(prompt_ids=p) for p in make_embed_goldens.bert_prompts(seed)]
    prompts = [r["prompt_ids"] for r in records]
    for t in POOLING_TYPES:
        for record, vec in zip(records, make_embed_goldens.llama_cpp_embeddings(gguf_path, prompts, t)):
            record[f"llama_cpp_{t}"] = record[f"ref_{t}"] = vec
    for record in records:
        ref = np.array(record[f"ref_{pooling}"])
        record["st_embedding"] = (ref / np.linalg.norm(ref)).tolist()
    golden = dict(case=case, pooling=pooling, normalize=True, reference="llama.cpp", records=records)
    (OUT / f"{case}.json").write_text(json.dumps(golden))
    print(f"{case}: llama.cpp's embeddings recorded as the reference")


def make_remote_code_case(case, llama_cpp, seed=0):
    """A remote-code case: the hand-written directory, its GGUF by llama.cpp's
    converter, and the records of make_embed_goldens (transformers 5's own
    NomicBertModel loaded from the directory, sentence-transformers,
    llama.cpp)."""
    import torch
    import transformers

    _, config, pooling = CASES[case]
    hf_dir = remote_code_dir(case, seed)
    make_embed_goldens.write_sentence_transformers(hf_dir, pooling, config["hidden_size"])
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)
    if case == "jina-bert-v2":
        return make_llama_cpp_reference_case(case, pooling, gguf_path, seed)
    model = transformers.AutoModel.from_pretrained(str(hf_dir), dtype=torch.float32,
                                                   attn_implementation="eager").eval()
    model.model = model
    prompts = make_embed_goldens.bert_prompts(seed)
    records = make_embed_goldens.transformers_records(model, prompts)
    write_records(case, pooling, records, hf_dir, gguf_path)


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
    if config_class == "remote code":
        return make_remote_code_case(case, llama_cpp, seed)
    model = tiny_base_model(config_class, kwargs, seed)
    prompts = make_moe_goldens.seeded_prompts(seed)
    hf_dir = make_moe_goldens.fresh_hf_dir(model, OUT / f"{case}.hf")
    make_embed_goldens.write_sentence_transformers(hf_dir, pooling, kwargs["hidden_size"])
    denses = dense_modules(kwargs["hidden_size"], seed) if case == "gemma-embedding" else []
    if denses:
        add_dense_modules(hf_dir, denses)
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp, extra_args=("--sentence-transformers-dense-modules",))
    records = projected_records(model, prompts, denses)
    write_records(case, pooling, records, hf_dir, gguf_path)


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
