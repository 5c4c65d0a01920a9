"""Regenerate the embedding goldens under tests/golden/tiny_embed/ (issue 43).

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds a tiny model with transformers (make_moe_goldens.tiny_model: torch
   seed 0, float32, eager attention, weights seeded and rounded to float16).
2. Saves it as a Hugging Face directory (make_moe_goldens.fresh_hf_dir: float16
   safetensors plus the tiny byte-level BPE tokenizer) and makes it a
   sentence-transformers model as the published embedders are: ``modules.json``
   (Transformer, Pooling, Normalize), ``1_Pooling/config.json`` with the case's
   pooling mode, ``sentence_bert_config.json``. That directory is committed as
   ``tiny_embed/<case>.hf/``.
3. Converts it to ``tiny_embed/<case>.gguf`` with **llama.cpp's own converter**
   (make_moe_goldens.convert: ``convert_hf_to_gguf.py --outtype f16`` with the
   tiny vocabulary's pre-tokenizer named "default"); the converter reads
   modules.json and writes ``<arch>.pooling_type``.
4. Records, per seeded prompt of random ids (12, 20, 30 ids, make_moe_goldens.
   seeded_prompts): transformers' float32 final hidden states (the base
   model's ``last_hidden_state``, after the final norm) pooled by hand as
   sentence-transformers' Pooling module pools them, for every pooling type
   (CLS: row 0; MEAN: the average of the rows; LAST: the last row), not
   normalised (``ref_<TYPE>``); sentence-transformers' own
   ``sentence_embedding`` for the directory's configured pooling with its
   Normalize module (``st_embedding``, run on the same ids through
   ``SentenceTransformer.forward``); and llama.cpp's pooled embedding on the
   GGUF for every pooling type (``llama_cpp_<TYPE>``, llama-cpp-python with
   ``embedding=True, pooling_type=...``, not normalised; its tokenizer is
   bypassed so it runs exactly these ids).

Case ``qwen3-embedding``: Qwen3-Embedding's shape (a qwen3 decoder, q/k RMS
norms per head, tied embeddings) with last-token pooling and normalisation,
as Qwen/Qwen3-Embedding-0.6B's modules.json / 1_Pooling say. Attention is
causal, as in transformers and llama.cpp.

Cases ``bert-cls`` and ``bert-mean``: a tiny random ``BertModel`` (the
all-MiniLM / bge-small shape: learned absolute positions, token types,
post-norm LayerNorms, GELU MLP; 2 layers, hidden 64, 4 heads) with a tiny
WordPiece vocabulary (``BERT_VOCAB``, saved by ``BertTokenizerFast``), CLS
(bge) and MEAN (all-MiniLM, e5) pooling with Normalize. Both cases are the
same weights (seed 0); only the Pooling module differs, and so the GGUF's
``bert.pooling_type``. The prompts are random ids of that vocabulary after
[CLS] and before [SEP], as the tokenizer frames a text. Attention is
bidirectional.

How to regenerate
-----------------
From the repository root, with the reference venv (torch CPU, transformers,
sentence-transformers, numpy, gguf, llama-cpp-python and its sdist's
llama.cpp tree; made with Python 3.11, torch 2.13.0+cpu, transformers 5.25.0,
sentence-transformers 6.3.0, llama-cpp-python 0.3.36)::

    python tests/golden/make_embed_goldens.py [--only CASE ...] [--llama-cpp DIR]

About 20 s per case on 2 cores.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_embed"
TOKENIZER = make_moe_goldens.TOKENIZER
POOLING_TYPES = ("CLS", "MEAN", "LAST")
# sentence-transformers' Pooling config key per pooling type.
ST_MODE = {"CLS": "pooling_mode_cls_token", "MEAN": "pooling_mode_mean_tokens", "LAST": "pooling_mode_lasttoken"}

# A tiny WordPiece vocabulary: BERT's special tokens, letters, words, suffixes.
BERT_VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghijklmnopqrstuvwxyz.,!?") +
              "the of and to in is it that was for on with as by at this be are from or an".split() +
              "hello world cat dog sat mat run text model embed vector search query document".split() +
              ["##s", "##ing", "##ed", "##er", "##ly", "##est", "##ion", "##al"])
BERT = dict(vocab_size=len(BERT_VOCAB), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=64, type_vocab_size=2, layer_norm_eps=1e-12,
            hidden_act="gelu", pad_token_id=0)

CASES = {
    "qwen3-embedding": ("Qwen3Config", dict(make_moe_goldens.BASE, head_dim=32, intermediate_size=128,
                                            tie_word_embeddings=True), "LAST"),
    "bert-cls": ("BertConfig", BERT, "CLS"),
    "bert-mean": ("BertConfig", BERT, "MEAN"),
}


def write_sentence_transformers(directory, pooling, hidden_size):
    """modules.json, 1_Pooling/config.json and sentence_bert_config.json as
    sentence-transformers writes them for a Transformer -> Pooling -> Normalize model."""
    modules = [dict(idx=0, name="0", path="", type="sentence_transformers.models.Transformer"),
               dict(idx=1, name="1", path="1_Pooling", type="sentence_transformers.models.Pooling"),
               dict(idx=2, name="2", path="2_Normalize", type="sentence_transformers.models.Normalize")]
    (directory / "modules.json").write_text(json.dumps(modules, indent=2))
    (directory / "1_Pooling").mkdir(exist_ok=True)
    config = {"word_embedding_dimension": hidden_size, **{mode: False for mode in ST_MODE.values()},
              "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
              "pooling_mode_weightedmean_tokens": False, "include_prompt": True}
    config[ST_MODE[pooling]] = True
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(config, indent=2))
    (directory / "2_Normalize").mkdir(exist_ok=True)
    (directory / "sentence_bert_config.json").write_text(json.dumps(dict(max_seq_length=256, do_lower_case=False)))


def pooled(hidden, pooling):
    """One prompt's [tokens, dim] rows pooled as sentence-transformers pools them."""
    if pooling == "CLS":
        return hidden[0]
    if pooling == "MEAN":
        return hidden.mean(axis=0)
    return hidden[-1]


def tiny_bert(kwargs, seed):
    """A random BertModel as make_moe_goldens.tiny_model makes decoders (same
    scales: its _randomize; weights rounded to float16)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.BertConfig(**kwargs)
    config._attn_implementation = "eager"
    model = transformers.BertModel(config).eval()
    make_moe_goldens._randomize(model, seed)
    model.model = model  # transformers_records reads the base model as .model
    return model


def fresh_bert_dir(model, directory):
    """The BertModel as a float16 directory with BERT_VOCAB's BertTokenizerFast."""
    import copy
    import shutil

    import torch
    import transformers

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    del model.model
    copy.deepcopy(model).to(torch.float16).save_pretrained(directory, safe_serialization=True)
    model.model = model
    vocab = {token: i for i, token in enumerate(BERT_VOCAB)}
    transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(directory)
    return directory


def bert_prompts(seed):
    """Random ids of BERT_VOCAB's ordinary tokens between [CLS] and [SEP], the prompt lengths of the other cases."""
    rng = np.random.default_rng(seed)
    return [[2] + [int(i) for i in rng.integers(5, len(BERT_VOCAB), n - 2)] + [3]
            for n in make_moe_goldens.make_arch_goldens.PROMPT_LENGTHS]


def transformers_records(model, prompts):
    import torch

    records = []
    with torch.no_grad():
        for prompt in prompts:
            hidden = model.model(torch.tensor([prompt])).last_hidden_state[0].float().numpy()
            records.append(dict(prompt_ids=prompt,
                                **{f"ref_{t}": pooled(hidden, t).astype(float).tolist() for t in POOLING_TYPES}))
    return records


def sentence_transformers_embeddings(hf_dir, prompts):
    """sentence-transformers' sentence_embedding of each prompt's ids (its
    configured pooling, then Normalize), run through the model's forward."""
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(hf_dir), device="cpu", model_kwargs=dict(dtype=torch.float32))
    out = []
    with torch.no_grad():
        for prompt in prompts:
            ids = torch.tensor([prompt])
            features = st.forward(dict(input_ids=ids, attention_mask=torch.ones_like(ids)))
            out.append(features["sentence_embedding"][0].float().numpy().astype(float).tolist())
    return out


def llama_cpp_embeddings(gguf_path, prompts, pooling):
    """llama.cpp's pooled, unnormalised embedding of each prompt's ids."""
    import llama_cpp

    kinds = {"CLS": llama_cpp.LLAMA_POOLING_TYPE_CLS, "MEAN": llama_cpp.LLAMA_POOLING_TYPE_MEAN,
             "LAST": llama_cpp.LLAMA_POOLING_TYPE_LAST}
    llm = llama_cpp.Llama(str(gguf_path), embedding=True, pooling_type=kinds[pooling], n_ctx=256, n_batch=256,
                          n_ubatch=256, n_threads=2, verbose=False)
    by_text = {f"p{i}": prompt for i, prompt in enumerate(prompts)}
    llm.tokenize = lambda text, add_bos=True, special=False: by_text[text.decode()]
    out = [np.asarray(llm.embed(text, normalize=False), dtype=np.float64).tolist() for text in by_text]
    llm.close()
    return out


def make_case(case, llama_cpp, seed=0):
    config_class, kwargs, pooling = CASES[case]
    if config_class == "BertConfig":
        model = tiny_bert(kwargs, seed)
        prompts = bert_prompts(seed)
        hf_dir = fresh_bert_dir(model, OUT / f"{case}.hf")
    else:
        _, model = make_moe_goldens.tiny_model(config_class, kwargs, seed)
        prompts = make_moe_goldens.seeded_prompts(seed)
        hf_dir = make_moe_goldens.fresh_hf_dir(model, OUT / f"{case}.hf")
    write_sentence_transformers(hf_dir, pooling, kwargs["hidden_size"])
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)
    records = transformers_records(model, prompts)
    for record, st in zip(records, sentence_transformers_embeddings(hf_dir, prompts)):
        record["st_embedding"] = st
    for t in POOLING_TYPES:
        for record, vec in zip(records, llama_cpp_embeddings(gguf_path, prompts, t)):
            record[f"llama_cpp_{t}"] = vec
    write_golden(case, pooling, records)


def write_golden(case, pooling, records):
    """``OUT/<case>.json``: the records and how far llama.cpp and sentence-transformers are from transformers."""
    err = max(float(np.abs(np.array(r[f"llama_cpp_{t}"]) - np.array(r[f"ref_{t}"])).max())
              for r in records for t in POOLING_TYPES)
    ref = np.array(records[0][f"ref_{pooling}"])
    st_err = max(float(np.abs(np.array(r["st_embedding"]) - np.array(r[f"ref_{pooling}"]) /
                              np.linalg.norm(r[f"ref_{pooling}"])).max()) for r in records)
    golden = dict(case=case, pooling=pooling, normalize=True, records=records,
                  llama_cpp_vs_ref_max_err=err, st_vs_ref_max_err=st_err)
    (OUT / f"{case}.json").write_text(json.dumps(golden))
    print(f"{case}: dim {ref.size}, llama.cpp vs transformers max err {err:.2e}, "
          f"sentence-transformers vs transformers (normalised) {st_err:.2e}")


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
