#!/usr/bin/env python3
"""Writes tokenizer_wordpiece.json, the golden file of the engine's WordPiece
(BERT) tokenizer, from the references themselves:

- Hugging Face `tokenizers` on the tokenizer.json that transformers'
  BertTokenizerFast exports for bge-small's vocabulary (recovered from
  llama.cpp's tests/golden/llama_vocab/ggml-vocab-bert-bge.gguf), once per
  tests/support/encoder_tokenizers.BERT_NORMALIZERS variant; the script
  checks that encoder_tokenizers.wordpiece_document (what the test writes)
  is the same document as the export;
- llama.cpp (llama-cpp-python's llama_tokenize) on the GGUF itself;
- llama.cpp on a tiny random transformers BertModel with the same
  vocabulary, converted by llama.cpp's own convert_hf_to_gguf.py (whose
  tokenizer keys differ: [CLS] / [SEP] as BOS / EOS). The converted file
  (877 KB) is not committed: the script checks that
  encoder_tokenizers.write_converted_bert_gguf writes the same tokenizer
  metadata, which the test loads.

The texts are make_tokenizer_golden.CORPUS, llama.cpp's own .inp cases and
300 texts drawn (seeded) from pieces in many scripts, with accents and
combining marks, CJK, controls, odd whitespace, emoji and words past
max_input_chars_per_word.

How the committed file was made (the reference environment: transformers
5.25, tokenizers 0.23.3, llama-cpp-python 0.3.36):

    python tests/golden/make_encoder_tokenizer_golden.py [--llama-cpp DIR]

(DIR, or $LLAMA_CPP_DIR: the llama.cpp tree with convert_hf_to_gguf.py; by
default the llama-cpp-python sdist's beside the running Python's prefix).

Output: tokenizer_wordpiece.json
  {"texts": [...], "hf": {variant: {"plain": [ids...], "special": [ids...]}},
   "llama_cpp": {"plain": [...], "special": [...]},
   "llama_cpp_converted": {"plain": [...], "special": [...]}}
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

from encoder_tokenizers import (BERT_NORMALIZERS, read_llama_vocab_test, wordpiece_document,  # noqa: E402
                                wordpiece_vocab, write_converted_bert_gguf)
from make_moe_goldens import llama_cpp_dir  # noqa: E402
from make_tokenizer_golden import CORPUS  # noqa: E402

BGE_VOCAB = os.path.join(HERE, "llama_vocab", "ggml-vocab-bert-bge.gguf")

PIECES = [
    "Hello", "world", "tokenization", "unaffable", "embeddings", "The", "QUICK", "brown", "fox", "don't",
    "café", "naïve", "Ångström", "résumé", "Straße", "İstanbul", "ǅemal", "Ωmega", "ΟΔΥΣΣΕΥΣ", "Привет", "мир",
    "مرحبا", "नमस्ते", "ภาษาไทย", "한국어", "日本語", "ひらがな", "カタカナ", "中文字符", "𠀀𠀁", "豈",
    "🤗", "👍🏽", "ＡＢＣ", "ﬁ", "12345", "3.14", "1,000", "e\u0301", "a\u0308o\u0323\u0302", "\u0301start",
    "!?", ",", ".", ";:", "—", "–", "…", "«»", "“quoted”", "$%^&*", "+=<>", "|~`", "@#", "(x)", "[y]", "{z}",
    "\x00", "\x07", "\x1b", "\u200b", "\ufeff", "\u00ad", "\ufffd", "\ue000", "\u0378",
    "a" * 120, "supercalifragilistic" * 6, "x" * 99, "é" * 101,
    "[CLS]", "[SEP]", "[MASK]", "[unused3]", "##ing", "\u2581word",
]
SEPARATORS = [" ", "", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\x0b", "\x1c", " \r\n "]


def drawn_texts(count=300, seed=43):
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 10))]
        texts.append("".join(p + rng.choice(SEPARATORS) for p in parts))
    return texts


def all_texts():
    texts = list(CORPUS) + [t for t, _ in read_llama_vocab_test(BGE_VOCAB)] + drawn_texts()
    seen = set()
    return [t for t in texts if not (t in seen or seen.add(t))]


def check_export(vocab, out_dir):
    from transformers import BertTokenizerFast

    vocab_txt = os.path.join(out_dir, "vocab.txt")
    with open(vocab_txt, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_txt).save_pretrained(out_dir)
    with open(os.path.join(out_dir, "tokenizer.json"), encoding="utf-8") as f:
        exported = json.load(f)
    ours = wordpiece_document(vocab)
    if exported != ours:
        differing = [k for k in set(exported) | set(ours) if exported.get(k) != ours.get(k)]
        sys.exit(f"wordpiece_document differs from transformers' export in {differing}")


def hf_ids(vocab, texts, normalizer):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(wordpiece_document(vocab, normalizer)))
    return {"plain": [tok.encode(t, add_special_tokens=False).ids for t in texts],
            "special": [tok.encode(t, add_special_tokens=True).ids for t in texts]}


def convert_tiny_bert(vocab, out_dir, llama_cpp):
    """A random 1-layer BertModel with `vocab`, converted by llama.cpp; the
    GGUF's path. Its tokenizer metadata must be write_converted_bert_gguf's."""
    import gguf
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    hf_dir = os.path.join(out_dir, "tiny-bert")
    os.makedirs(hf_dir)
    vocab_txt = os.path.join(hf_dir, "vocab.txt")
    with open(vocab_txt, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_txt).save_pretrained(hf_dir)
    torch.manual_seed(43)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
                         intermediate_size=8, max_position_embeddings=16)).save_pretrained(hf_dir)
    out = os.path.join(out_dir, "tiny-bert.gguf")
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    subprocess.run([sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), hf_dir, "--outfile", out,
                    "--outtype", "f16"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours = write_converted_bert_gguf(BGE_VOCAB, os.path.join(out_dir, "ours.gguf"))

    def tokenizer_fields(path):
        fields = gguf.GGUFReader(path).fields
        return {k: f.contents() for k, f in fields.items() if k.startswith("tokenizer.")}

    if tokenizer_fields(out) != tokenizer_fields(ours):
        theirs, mine = tokenizer_fields(out), tokenizer_fields(ours)
        sys.exit(f"write_converted_bert_gguf differs from the converter in "
                 f"{[k for k in set(theirs) | set(mine) if theirs.get(k) != mine.get(k)]}")
    return out


def llama_cpp_ids(texts, path=BGE_VOCAB):
    import llama_cpp

    llm = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    return {"plain": [llm.tokenize(t.encode("utf-8"), add_bos=False, special=False) for t in texts],
            "special": [llm.tokenize(t.encode("utf-8"), add_bos=True, special=False) for t in texts]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-cpp", help="llama.cpp source tree with convert_hf_to_gguf.py")
    args = parser.parse_args()
    vocab = wordpiece_vocab(BGE_VOCAB)
    texts = all_texts()
    golden = {"texts": texts, "hf": {name: hf_ids(vocab, texts, name) for name in BERT_NORMALIZERS},
              "llama_cpp": llama_cpp_ids(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        check_export(vocab, tmp)
        golden["llama_cpp_converted"] = llama_cpp_ids(texts, convert_tiny_bert(vocab, tmp, llama_cpp_dir(args.llama_cpp)))
    write_golden("tokenizer_wordpiece.json", golden)


def write_golden(name, golden):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False)
        f.write("\n")
    print(f"{name}: {len(golden['texts'])} texts")


if __name__ == "__main__":
    main()
