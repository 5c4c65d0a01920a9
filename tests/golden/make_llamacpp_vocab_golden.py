#!/usr/bin/env python3
"""Writes tokenizer_llamacpp_vocabs.json: llama.cpp's own tokenizer tests
(models/ggml-vocab-NAME.gguf with .inp/.out, the ids llama.cpp's
test-tokenizer-0 expects) in a form CI can run without those files (about
50 MB): for each vocabulary the tests and only the part of the vocabulary
their ids are built from (tests/support/llama_cpp_vocabs.compact_vocabulary),
which tests/models/test_tokenizer_llamacpp_vocabs.py writes back into a
vocabulary-only GGUF with every id in place.

How the committed file was made (the llama-cpp-python 0.3.36 sdist's tree)::

    LLAMA_CPP_DIR=.../llama_cpp_python-0.3.36/vendor/llama.cpp \\
        .venv/bin/python tests/golden/make_llamacpp_vocab_golden.py

Every vocabulary with tests whose tokenizer model the engine reads is
included; bert-bge (WordPiece) is left to the WordPiece tokenizer's own
goldens. With transformers importable (it was 5.25 for the committed file),
Gemma 4's entry also records whether transformers' GemmaTokenizer on that
vocabulary gives llama.cpp's ids ("tokenizer_json"), the form the test then
writes as a tokenizer.json. The output is byte-reproducible.
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))

from llama_cpp_vocabs import compact_vocabulary, llama_cpp_tree, read_tests, vocab_names  # noqa: E402

OUT = HERE / "tokenizer_llamacpp_vocabs.json"
#: Vocabularies with tests that are not byte-level BPE, SentencePiece or Gemma 4's BPE.
LEFT_OUT = {"bert-bge"}


def gemma4_tokenizer_json_check(entry):
    """Whether transformers' GemmaTokenizer (the class Gemma 4's published
    tokenizer.json comes from) built on the compact Gemma 4 vocabulary and
    its merges tokenizes every test as llama.cpp does; None without
    transformers."""
    try:
        from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
        import transformers
    except ImportError:
        return None
    from llama_cpp_vocabs import compact_tokens

    tokens = compact_tokens(entry["vocabulary"])
    tokenizer = GemmaTokenizer(vocab={t: i for i, t in enumerate(tokens)},
                               merges=[tuple(m.split(" ", 1)) for m in entry["vocabulary"]["merges"]])
    agree = all(tokenizer(text, add_special_tokens=False)["input_ids"] == ids for text, ids in entry["cases"])
    return {"transformers": transformers.__version__, "class": "GemmaTokenizer", "equals_llama_cpp": agree}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-cpp", help="llama.cpp's source tree (default: $LLAMA_CPP_DIR or the sdist's)")
    args = parser.parse_args()
    tree = pathlib.Path(args.llama_cpp) if args.llama_cpp else llama_cpp_tree()
    if tree is None:
        sys.exit("llama.cpp's source tree not found: pass --llama-cpp or set LLAMA_CPP_DIR")
    models = tree / "models"
    vocabs = {}
    for name in vocab_names(models):
        if name in LEFT_OUT:
            continue
        cases = read_tests(models, name)
        vocabs[name] = {"cases": cases, "vocabulary": compact_vocabulary(models / f"ggml-vocab-{name}.gguf", cases)}
        if name == "gemma-4":
            vocabs[name]["tokenizer_json"] = gemma4_tokenizer_json_check(vocabs[name])
        print(f"{name}: {len(cases)} tests, {len(vocabs[name]['vocabulary']['tokens'])} tokens kept", flush=True)
    doc = {"made_by": "tests/golden/make_llamacpp_vocab_golden.py",
           "source": "llama.cpp models/ggml-vocab-*.gguf(.inp/.out), llama-cpp-python 0.3.36 sdist",
           "vocabs": vocabs}
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
