"""Regenerate the cross-encoder and XLM-RoBERTa goldens under
tests/golden/tiny_crossencoder/ (issue 43).

What this script does, per case of ``CASES``
--------------------------------------------
1. Builds a tiny random encoder with transformers (torch seed 0, float32,
   eager attention, weights scaled and rounded to float16 as
   make_moe_goldens._randomize does) and saves it as a float16 Hugging Face
   directory ``<case>.hf/`` with its tokenizer:
   - XLM-RoBERTa cases: a SentencePiece unigram vocabulary trained as
     make_unigram_tokenizer_golden.py trains it (600 pieces, nmt_nfkc),
     exported by ``XLMRobertaTokenizerFast``; RoBERTa's positions (they start
     at pad_token_id + 1), one token type.
   - BERT cases: make_embed_goldens' WordPiece vocabulary (BertTokenizerFast);
     two token types.
2. Converts it to ``<case>.gguf`` with **llama.cpp's own converter**
   (make_moe_goldens.convert).
3. Records, per input, transformers' float32 answer:
   - ``xlm-roberta`` (``XLMRobertaModel`` with sentence-transformers' CLS
     pooling and Normalize, as bge-m3): per prompt of texts, the ids
     the tokenizer gives (``<s> ... </s>``), the last hidden state pooled
     CLS / MEAN / LAST (``ref_<TYPE>``), and llama.cpp's pooled embeddings
     on the GGUF (``llama_cpp_<TYPE>``).
   - ``xlm-roberta-rerank`` / ``bert-rerank`` (``*ForSequenceClassification``
     with one label, bge-reranker's shape): per (query, document) pair, the
     ids and token types of the tokenizer's pair encoding, the logit and
     its sigmoid (``score``: vLLM's cross-encoder score). For XLM-RoBERTa,
     llama.cpp's rerank on the GGUF (pooling RANK, its raw logit,
     ``llama_cpp_logit``). llama.cpp's converter drops BERT's pooler, so the
     BERT GGUF's own answer is computed by hand in transformers from the
     same hidden states (classifier on the [CLS] row, no pooler:
     ``gguf_logit``), with the pair's token types.
   - ``xlm-roberta-classify`` (three labels, named by id2label): per text,
     the ids, the logits and their softmax (``probs``), and llama.cpp's
     rank outputs (``llama_cpp_logits``).

How to regenerate
-----------------
From the repository root, with the reference venv (torch CPU, transformers,
sentence-transformers, sentencepiece, numpy, gguf, llama-cpp-python and its
sdist's llama.cpp tree; made with Python 3.11, torch 2.13.0+cpu,
transformers 5.25.0, llama-cpp-python 0.3.36)::

    python tests/golden/make_crossencoder_goldens.py [--only CASE ...] [--llama-cpp DIR]

About 10 s per case on 2 cores.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_embed_goldens  # noqa: E402
import make_moe_goldens  # noqa: E402

OUT = HERE / "tiny_crossencoder"

XLMR = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=66, type_vocab_size=1, layer_norm_eps=1e-5, hidden_act="gelu",
            pad_token_id=1, bos_token_id=0, eos_token_id=2)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}

CASES = {
    "xlm-roberta": ("XLMRobertaModel", XLMR),
    "xlm-roberta-rerank": ("XLMRobertaForSequenceClassification", dict(XLMR, num_labels=1)),
    "xlm-roberta-classify": ("XLMRobertaForSequenceClassification",
                             dict(XLMR, num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()})),
    "bert-rerank": ("BertForSequenceClassification", dict(make_embed_goldens.BERT, num_labels=1)),
}

TEXTS = ["hello world", "The cat sat on the mat.", "a search query about vectors and documents",
         "Paris is the capital of France, and the river is the Seine."]
PAIRS = [("what is a cat", "The cat sat on the mat."),
         ("what is a cat", "a search query about vectors and documents"),
         ("capital of france", "Paris is the capital of France, and the river is the Seine."),
         ("hello", "hello world")]


def xlmr_tokenizer(directory):
    """The tiny unigram vocabulary as XLMRobertaTokenizerFast saves it into `directory`."""
    import shutil

    from make_encoder_tokenizer_golden import all_texts
    from make_unigram_tokenizer_golden import train_sentencepiece
    from transformers import XLMRobertaConfig, XLMRobertaTokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        spm = train_sentencepiece(tmp, all_texts() + TEXTS + [q for q, _ in PAIRS])
        shutil.copy(spm, directory / "sentencepiece.bpe.model")
    XLMRobertaConfig().save_pretrained(directory)  # for the tokenizer's loading
    tokenizer = XLMRobertaTokenizerFast.from_pretrained(str(directory))
    (directory / "sentencepiece.bpe.model").unlink()  # the converter then reads tokenizer.json
    tokenizer.save_pretrained(str(directory))
    return tokenizer


def make_model(class_name, kwargs, directory, seed=0):
    """A random model of `class_name` saved as a float16 directory with its tokenizer."""
    import copy
    import shutil

    import torch
    import transformers

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    if class_name.startswith("XLMRoberta"):
        tokenizer = xlmr_tokenizer(directory)
        config = transformers.XLMRobertaConfig(vocab_size=len(tokenizer), **kwargs)
    else:
        vocab = {token: i for i, token in enumerate(make_embed_goldens.BERT_VOCAB)}
        tokenizer = transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True)
        tokenizer.save_pretrained(str(directory))
        config = transformers.BertConfig(**kwargs)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = getattr(transformers, class_name)(config).eval()
    make_moe_goldens._randomize(model, seed)
    copy.deepcopy(model).to(torch.float16).save_pretrained(str(directory), safe_serialization=True)
    return model, tokenizer


def encoded(tokenizer, *texts):
    enc = tokenizer(*texts)
    return enc["input_ids"], enc.get("token_type_ids") or [0] * len(enc["input_ids"])


def llama_cpp_outputs(gguf_path, prompts, pooling, width):
    """llama.cpp's first `width` outputs per prompt of ids (its tokenizer bypassed)."""
    import llama_cpp

    llm = llama_cpp.Llama(str(gguf_path), embedding=True, pooling_type=pooling, n_ctx=256, n_batch=256,
                          n_ubatch=256, n_threads=2, verbose=False)
    by_text = {f"p{i}": prompt for i, prompt in enumerate(prompts)}
    llm.tokenize = lambda text, add_bos=True, special=False: by_text[text.decode()]
    out = [np.asarray(llm.embed(text, normalize=False), dtype=np.float64)[:width].tolist() for text in by_text]
    llm.close()
    return out


def make_case(case, llama_cpp, seed=0):
    import llama_cpp as llama
    import torch

    class_name, kwargs = CASES[case]
    hf_dir = OUT / f"{case}.hf"
    model, tokenizer = make_model(class_name, kwargs, hf_dir, seed)
    if case == "xlm-roberta":
        make_embed_goldens.write_sentence_transformers(hf_dir, "CLS", kwargs["hidden_size"])
    gguf_path = OUT / f"{case}.gguf"
    make_moe_goldens.convert(hf_dir, gguf_path, llama_cpp)
    records = []
    with torch.no_grad():
        if case == "xlm-roberta":
            for text in TEXTS:
                ids, _ = encoded(tokenizer, text)
                hidden = model(torch.tensor([ids])).last_hidden_state[0].float().numpy()
                records.append(dict(text=text, prompt_ids=ids, **{
                    f"ref_{t}": make_embed_goldens.pooled(hidden, t).astype(float).tolist()
                    for t in make_embed_goldens.POOLING_TYPES}))
            kinds = {"CLS": llama.LLAMA_POOLING_TYPE_CLS, "MEAN": llama.LLAMA_POOLING_TYPE_MEAN,
                     "LAST": llama.LLAMA_POOLING_TYPE_LAST}
            for t, kind in kinds.items():
                for record, vec in zip(records, llama_cpp_outputs(gguf_path, [r["prompt_ids"] for r in records],
                                                                  kind, kwargs["hidden_size"])):
                    record[f"llama_cpp_{t}"] = vec
        elif case == "xlm-roberta-classify":
            for text in TEXTS:
                ids, _ = encoded(tokenizer, text)
                logits = model(torch.tensor([ids])).logits[0].float()
                records.append(dict(text=text, prompt_ids=ids, logits=logits.tolist(),
                                    probs=torch.softmax(logits, -1).tolist()))
            for record, out in zip(records, llama_cpp_outputs(gguf_path, [r["prompt_ids"] for r in records],
                                                              llama.LLAMA_POOLING_TYPE_RANK, 3)):
                record["llama_cpp_logits"] = out
        else:
            for query, document in PAIRS:
                ids, types = encoded(tokenizer, query, document)
                out = model(torch.tensor([ids]), token_type_ids=torch.tensor([types]), output_hidden_states=True)
                logit = float(out.logits[0, 0])
                record = dict(query=query, document=document, prompt_ids=ids, token_type_ids=types, logit=logit,
                              score=float(torch.sigmoid(out.logits[0, 0])))
                if case == "bert-rerank":  # the GGUF's head: no pooler (llama.cpp's converter drops it)
                    cls_row = out.hidden_states[-1][0, 0]
                    gguf_logit = float(model.classifier(cls_row)[0])
                    record.update(gguf_logit=gguf_logit, gguf_score=float(torch.sigmoid(torch.tensor(gguf_logit))))
                records.append(record)
            if case == "xlm-roberta-rerank":
                for record, out in zip(records, llama_cpp_outputs(gguf_path, [r["prompt_ids"] for r in records],
                                                                  llama.LLAMA_POOLING_TYPE_RANK, 1)):
                    record["llama_cpp_logit"] = out[0]
    golden = dict(case=case, architecture=class_name, records=records)
    (OUT / f"{case}.json").write_text(json.dumps(golden))
    print(f"{case}: {len(records)} records")


if __name__ == "__main__":
    make_moe_goldens.main(CASES, make_case, OUT)
