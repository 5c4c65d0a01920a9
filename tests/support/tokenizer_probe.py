"""Runs the engine's tokenizer probe (third_party/vllm.cpp/tests/tokenizer_probe.cpp)
for the tokenizer tests: texts in, token ids and the bytes of those ids out.
Also writes a byte-level tokenizer.json from a GGUF vocabulary (the tests and
golden/make_tokenizer_json_golden.py share it)."""

import json
import subprocess

from native_build import build_native_tests


class ProbeError(Exception):
    """The probe refused to load the vocabulary; the message is the engine's."""


def probe_path():
    return build_native_tests() / "tokenizer_probe"


def tokenize(probe, load_args, texts, add_special=False, parse_special=True):
    """[(ids, bytes of the ids with special tokens rendered)] for each text."""
    flags = (["--add-special"] if add_special else []) + ([] if parse_special else ["--no-parse-special"])
    stdin = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    result = subprocess.run([str(probe), *flags, *map(str, load_args)], input=stdin, capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise ProbeError(result.stderr.strip())
    out = []
    for line in result.stdout.splitlines():
        ids, hex_bytes = line.split("\t")
        out.append(([int(i) for i in ids.split()], bytes.fromhex(hex_bytes)))
    assert len(out) == len(texts), result.stdout[-2000:]
    return out


CONTROL = 3  # GGUF token type
LLAMA3_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def _byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def _split(*regexes):
    return {"type": "Sequence", "pretokenizers": [
        *({"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False} for r in regexes),
        _byte_level(False)]}


#: Pre-tokenization of byte-level tokenizer.json files: transformers' GGUF
#: export (ByteLevel), SmolLM2's and StarCoder's own (Digits first), Llama 3's
#: and Qwen 2's (Split, ByteLevel without its regex; Qwen 2 normalizes to NFC).
#: name: (normalizer, pre_tokenizer, ignore_merges)
BYTE_LEVEL_PRE_TOKENIZERS = {
    "bytelevel": (None, _byte_level(True), False),
    "digits": (None, {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                            _byte_level(True)]}, False),
    "llama3": (None, _split(LLAMA3_REGEX), True),
    "qwen2": ({"type": "NFC"}, _split(LLAMA3_REGEX.replace("\\p{N}{1,3}", "\\p{N}")), False),
}

#: The regexes of the issue-41 families' tokenizer.json files (Split, then
#: ByteLevel without its regex): Qwen 3.5/3.6 (NFC first; marks join letters),
#: o200k (gpt-oss, Phi-4-mini: GPT-4o's cased words) and DeepSeek-V3's three
#: Splits (an empty normalizer Sequence first, as its file has).
QWEN35_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
GPT4O_REGEX = ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
               "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
               "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
DEEPSEEK3_REGEXES = ("\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                     "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
                     " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")
#: DeepSeek LLM's and DeepSeek-V2's six Splits (their tokenizer.json's, and
#: the regexes of llama.cpp's deepseek-llm pre-tokenizer in llama-vocab.cpp).
DEEPSEEK_LLM_REGEXES = ("[\r\n]",
                        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
                        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
                        "\\s+$",
                        "[一-龥ࠀ-一가-퟿]+",
                        "\\p{N}+")

#: name: (normalizer, pre_tokenizer, ignore_merges); the tokenizer.ggml.pre
#: names of the same split are test_tokenizer_families.GGUF_NAMES.
FAMILY_PRE_TOKENIZERS = {
    "qwen35": ({"type": "NFC"}, _split(QWEN35_REGEX), False),
    "gpt-4o": (None, _split(GPT4O_REGEX), False),
    "deepseek-v3": ({"type": "Sequence", "normalizers": []}, _split(*DEEPSEEK3_REGEXES), False),
    "deepseek-llm": ({"type": "Sequence", "normalizers": []}, _split(*DEEPSEEK_LLM_REGEXES), False),
    # SmolLM3 (Llama 3's vocabulary and regex, its merges applied: GGUF
    # "smaug-bpe") and OLMo 2 (Dolma 2: cl100k's vocabulary and the same
    # regex: GGUF "dbrx", as DBRX's cl100k tokenizer hashes).
    "llama3-merges": (None, _split(LLAMA3_REGEX), False),
    # Granite 3 (StarCoder's tokenizer: single digits, then GPT-2's
    # ByteLevel regex: GGUF "refact").
    "starcoder-digits": BYTE_LEVEL_PRE_TOKENIZERS["digits"],
}

#: Texts NFC changes: combining sequences, their order, Hangul jamo, singletons.
NFC_TEXTS = [
    "A\u030a ring, \u212b angstrom, e\u0301t\u00e9",
    "a\u0307\u0323 a\u0323\u0307 q\u0307\u0323",
    "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af jamo",
    "\u0958 \u2126 \u1e9b\u0323 excluded and singletons",
    "\u0301leading mark",
]


def write_byte_level_json(gguf_path, out_path, pre="bytelevel"):
    """A tokenizer.json with the GGUF's byte-level vocabulary and merges, its
    control tokens as special added tokens (as transformers exports it), and
    the pre-tokenizer BYTE_LEVEL_PRE_TOKENIZERS or FAMILY_PRE_TOKENIZERS names."""
    import gguf

    reader = gguf.GGUFReader(gguf_path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    normalizer, pre_tokenizer, ignore_merges = {**BYTE_LEVEL_PRE_TOKENIZERS, **FAMILY_PRE_TOKENIZERS}[pre]
    doc = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(tokens) if types[i] == CONTROL],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": _byte_level(True),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ") for m in reader.fields["tokenizer.ggml.merges"].contents()]},
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    return out_path
