#!/usr/bin/env python3
"""Writes the golden files of the engine's tokenizer.json loader: Hugging Face
`tokenizers` itself on the tokenizer.json files that transformers exports
from SmolLM2's GGUF (byte-level BPE) and Gemma 3 270M's (SentencePiece-style
BPE with byte fallback), and on SmolLM2's vocabulary written as a
tokenizer.json with each pre-tokenizer of
tokenizer_probe.BYTE_LEVEL_PRE_TOKENIZERS (the test writes the same files).

How the committed files were made:

    python tests/golden/make_tokenizer_json_golden.py \\
        --smollm2 SmolLM2-135M-Instruct.Q4_1.gguf --gemma gemma-3-270m-q4_k_m.gguf

(a Python with torch, transformers 5.24.0 and tokenizers 0.23.3):
`AutoTokenizer.from_pretrained(dir, gguf_file=name).save_pretrained(out)`,
then `Tokenizer.from_file(out/tokenizer.json).encode(text, add_special_tokens)`
for make_tokenizer_golden.py's corpus plus make_tokenizer_gguf_golden.py's
Gemma texts. The exported files (2 MB and 33 MB) are not committed (they
are written to build/tokenizer-json/{smollm2,gemma3}/): the suite writes
the same documents itself, SmolLM2's with tokenizer_probe.py and Gemma's
with tests/support/hf_convert.py, and this script checks that Gemma's equals the
export (vocabulary, merges, added tokens and all).

Outputs, next to this script: tokenizer_json_{smollm2,gemma3}.json
  {"cases": [{"text", "add_special_tokens", "ids"}], "tokenizer_config": {...}}
  and, in the SmolLM2 one, "pre_tokenizer_variants": {name: [{"text", "ids"}]} for
  the corpus and tokenizer_probe.NFC_TEXTS
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

from make_tokenizer_golden import CORPUS  # noqa: E402
from make_tokenizer_gguf_golden import GEMMA_TEXTS  # noqa: E402
from tokenizer_probe import BYTE_LEVEL_PRE_TOKENIZERS, NFC_TEXTS, write_byte_level_json  # noqa: E402


def export(gguf_path, name):
    from transformers import AutoTokenizer

    out = os.path.join(ROOT, "build", "tokenizer-json", name)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf_path)),
                                        gguf_file=os.path.basename(gguf_path))
    tok.save_pretrained(out)
    return out


def cases_for(out_dir, texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))
    cases = []
    for text in texts:
        for add_special in (False, True):
            if add_special and text not in GEMMA_TEXTS and text != CORPUS[1]:
                continue
            cases.append({"text": text, "add_special_tokens": add_special,
                          "ids": tok.encode(text, add_special_tokens=add_special).ids})
    return cases


def pre_tokenizer_variants(gguf_path):
    from tokenizers import Tokenizer

    variants = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in BYTE_LEVEL_PRE_TOKENIZERS:
            tok = Tokenizer.from_file(write_byte_level_json(gguf_path, os.path.join(tmp, "t.json"), name))
            variants[name] = [{"text": text, "ids": tok.encode(text, add_special_tokens=False).ids}
                              for text in CORPUS + NFC_TEXTS]
    return variants


def check_hf_convert_writes_the_export(gguf_path, out_dir):
    """The suite tokenizes Gemma with the tokenizer.json that hf_convert
    writes (no transformers in CI): it must be transformers' export."""
    import gguf
    import hf_convert

    reader = gguf.GGUFReader(gguf_path)
    field = lambda key: hf_convert._field(reader, key)  # noqa: E731
    ours = hf_convert.gemma_tokenizer_json(field("tokenizer.ggml.tokens"), list(field("tokenizer.ggml.token_type")),
                                           field("tokenizer.ggml.bos_token_id"))
    with open(os.path.join(out_dir, "tokenizer.json"), encoding="utf-8") as f:
        exported = json.load(f)
    assert json.loads(json.dumps(ours)) == exported, "hf_convert's Gemma tokenizer.json differs from transformers'"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smollm2", required=True, help="SmolLM2 GGUF file")
    parser.add_argument("--gemma", required=True, help="Gemma 3 270M GGUF file")
    args = parser.parse_args()
    import tokenizers
    import transformers

    for name, path in (("smollm2", args.smollm2), ("gemma3", args.gemma)):
        out = export(path, name)
        with open(os.path.join(out, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        golden = {"source": os.path.basename(path), "made_by": "tests/golden/make_tokenizer_json_golden.py",
                  "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                  "encode": "Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens).ids",
                  "tokenizer_config": {k: config.get(k) for k in ("bos_token", "eos_token")},
                  "cases": cases_for(out, CORPUS + GEMMA_TEXTS)}
        if name == "smollm2":
            golden["pre_tokenizer_variants"] = pre_tokenizer_variants(path)
        else:
            check_hf_convert_writes_the_export(path, out)
        with open(os.path.join(HERE, f"tokenizer_json_{name}.json"), "w", encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print("written")


if __name__ == "__main__":
    main()
