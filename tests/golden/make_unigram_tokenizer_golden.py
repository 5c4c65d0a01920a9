#!/usr/bin/env python3
"""Writes the Unigram (XLM-RoBERTa) tokenizer fixtures and their golden file:

1. a SentencePiece unigram model (600 pieces, nmt_nfkc normalization, so a
   real precompiled charsmap) trained on the tokenizer corpora, laid out as
   XLM-RoBERTa's sentencepiece.bpe.model is (<unk> 0, <s> 1, </s> 2);
2. a tiny random transformers XLMRobertaModel with it, whose tokenizer
   transformers exports (XLMRobertaTokenizerFast: Precompiled normalizer,
   WhitespaceSplit + Metaspace, <s> ... </s>) and which llama.cpp's own
   convert_hf_to_gguf.py converts -> tiny_encoders/xlm-roberta.gguf
   (committed; tokenizer.ggml.model "t5", llama.cpp's UGM);
3. the ids of Hugging Face `tokenizers` on the export (and on the older
   export shape bge-m3's file has: Precompiled then Replace " {2,}", a
   Metaspace pre-tokenizer alone) and of llama.cpp on the GGUF, for the
   texts of make_encoder_tokenizer_golden.py.

tests/support/encoder_tokenizers.unigram_document rebuilds the export from
the GGUF (the script checks it is the same document), so the test needs only
the GGUF.

    python tests/golden/make_unigram_tokenizer_golden.py [--llama-cpp DIR]

(the reference environment: transformers 5.25, tokenizers 0.23.3,
sentencepiece, llama-cpp-python 0.3.36). Output: tiny_encoders/xlm-roberta.gguf
and tokenizer_unigram.json {"texts", "hf": {"plain", "special"},
"hf_legacy": {...}, "llama_cpp": {...}}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

from encoder_tokenizers import unigram_document  # noqa: E402
from make_encoder_tokenizer_golden import all_texts, llama_cpp_ids, write_golden  # noqa: E402
from make_moe_goldens import llama_cpp_dir  # noqa: E402

GGUF = os.path.join(HERE, "tiny_encoders", "xlm-roberta.gguf")


def train_sentencepiece(out_dir, texts):
    import sentencepiece as spm

    corpus = os.path.join(out_dir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(t for t in texts * 3 if t.strip()) + "\n")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(out_dir, "spm"), vocab_size=600,
                                   model_type="unigram", character_coverage=0.9995,
                                   normalization_rule_name="nmt_nfkc", minloglevel=2)
    return os.path.join(out_dir, "spm.model")


def make_tiny_xlmr(out_dir, spm_model):
    import shutil

    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

    hf_dir = os.path.join(out_dir, "tiny-xlm-roberta")
    os.makedirs(hf_dir)
    shutil.copy(spm_model, os.path.join(hf_dir, "sentencepiece.bpe.model"))
    XLMRobertaConfig().save_pretrained(hf_dir)  # for the tokenizer's loading
    tokenizer = XLMRobertaTokenizerFast.from_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
                              intermediate_size=8, max_position_embeddings=24)
    config.save_pretrained(hf_dir)
    torch.manual_seed(43)
    XLMRobertaModel(config).save_pretrained(hf_dir)
    return hf_dir


def convert(hf_dir, out, llama_cpp):
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    subprocess.run([sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), hf_dir, "--outfile", out,
                    "--outtype", "f16"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def hf_ids(document, texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(document))
    return {"plain": [tok.encode(t, add_special_tokens=False).ids for t in texts],
            "special": [tok.encode(t, add_special_tokens=True).ids for t in texts]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-cpp", help="llama.cpp source tree with convert_hf_to_gguf.py")
    args = parser.parse_args()
    texts = all_texts()
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = make_tiny_xlmr(tmp, train_sentencepiece(tmp, texts))
        os.makedirs(os.path.dirname(GGUF), exist_ok=True)
        convert(hf_dir, GGUF, llama_cpp_dir(args.llama_cpp))
        with open(os.path.join(hf_dir, "tokenizer.json"), encoding="utf-8") as f:
            exported = json.load(f)
    ours = unigram_document(GGUF)
    if exported != ours:
        sys.exit(f"unigram_document differs from transformers' export in "
                 f"{[k for k in set(exported) | set(ours) if exported.get(k) != ours.get(k)]}")
    golden = {"texts": texts, "hf": hf_ids(ours, texts), "hf_legacy": hf_ids(unigram_document(GGUF, legacy=True), texts),
              "llama_cpp": llama_cpp_ids(texts, GGUF)}
    write_golden("tokenizer_unigram.json", golden)


if __name__ == "__main__":
    main()
