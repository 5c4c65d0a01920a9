#!/usr/bin/env python3
"""Writes tokenizer_json_added_tokens.json: Hugging Face `tokenizers` on
small crafted tokenizer.json files whose added tokens exercise how
`tokenizers` finds them (tests/models/test_tokenizer_json.py replays them against
the engine's loader): overlapping tokens (leftmost-longest), single_word at
word boundaries and inside words (Unicode word characters), lstrip/rstrip
with Unicode whitespace, normalized and raw tokens under an NFC and a
SentencePiece-style normalizer, and special tokens not parsed
(`encode_special_tokens`).

How the committed file was made (a Python with tokenizers 0.23.3):

    python tests/golden/make_added_tokens_golden.py

Output, next to this script: {"tokenizers": [{"name", "doc" (the
tokenizer.json), "cases": [{"text", "parse_special", "ids"}]}]}
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
METASPACE = "\u2581"


def gpt2_byte_symbols():
    """GPT-2's byte-level alphabet: byte -> the code point standing for it."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    symbols, extra = {}, 0
    for b in range(256):
        if b in printable:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + extra)
            extra += 1
    return symbols


def added(content, special=False, single_word=False, lstrip=False, rstrip=False, normalized=True):
    return {"content": content, "special": special, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized}


def with_ids(tokens, first_id):
    return [{"id": first_id + i, **t} for i, t in enumerate(tokens)]


BYTE_LEVEL_ADDED = [
    added("<|sp|>", special=True, normalized=False),
    added("<|sp|><|x|>", special=True, normalized=False),  # overlaps <|sp|>
    added("ab", normalized=False),
    added("bcd", normalized=False),                      # overlaps ab: leftmost-longest takes ab
    added("cat", single_word=True, normalized=False),
    added("<m>", lstrip=True, rstrip=True, normalized=False),
    added("<l>", lstrip=True, normalized=False),
    added("<r>", rstrip=True, normalized=False),
    added(" x", normalized=False),                       # starts inside <r>'s rstrip
    added("\u00e9t\u00e9", normalized=True),             # NFC: matches e+U+0301 too
    added("e\u0301x", normalized=False),                 # raw: decomposed only
    added("<|norm-sp|>", special=True, normalized=True),  # a special token matched after normalizing
    added("dog", single_word=True, lstrip=True, rstrip=True, normalized=True),
    added("<|sp|>z", normalized=False),                  # longer than the special token it starts with
]

BYTE_LEVEL_TEXTS = [
    "abcd", "xbcdab", "xy ay", "<|sp|><|x|><|sp|>", "<|sp|>z <|sp|>", "a<|sp|><|x|>b",
    "cat", "a cat.", "concat", "cats", "_cat", "\u00e9cat", "1cat", "cat\u0301", "cat-cat", "(cat)",
    "\u00abcat\u00bb", "\u24b6cat", "\u00b2cat", "\u200dcat", "x\u2003cat\u3000",
    "a  <m>  b", "a\u3000<m>\u2003b", "\t<m>\n", "\u00a0<m>\u0085x", "\u200b<m>\u200b", "<m><m>  <m>",
    "x \u2028<l> y", "<l><l>", "<r> x y", "<r>\u2009 x", "<r>x",
    "\u00e9t\u00e9", "e\u0301te\u0301", "e\u0301x", "e\u0301xe\u0301t\u00e9", "\u00e9x",
    "a<|norm-sp|>b", "dog", "hot dog ", "hotdog", "dog\u00a0dog",
    "caf\U0001F600cat", "",
]

METASPACE_ADDED = [
    added("<unk>", special=True, normalized=False),
    added("<s>", special=True, normalized=False),
    added("</s>", special=True, normalized=False),
    added("fox bar", normalized=True),  # a space: normalized to "▁fox▁bar"
    added("fox", normalized=True),      # normalized to "▁fox": only after a space or at the start
    added(" baz", normalized=False),    # raw, with its space
    added("qu", single_word=True, normalized=True),
    added("<e>", special=True, lstrip=True, rstrip=True, normalized=False),
]

METASPACE_TEXTS = [
    "foo fox", "fox bar", "say fox bar", "fox", "xfox", "say fox", "fox barfox bar", "a baz", "baz", " baz",
    "qu", "a qu b", "aqu", "<s>fox</s>", "a <e> b", "a\u3000<e>\u2003b", "<e>fox", "fox<e>fox bar",
]


def byte_level_doc():
    symbols = gpt2_byte_symbols()
    vocab = {symbols[b]: b for b in range(256)}
    merges = [[symbols[ord("x")], symbols[ord("y")]], [symbols[ord(" ")], symbols[ord("a")]]]
    vocab[symbols[ord("x")] + symbols[ord("y")]] = 256
    vocab[symbols[ord(" ")] + symbols[ord("a")]] = 257
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "added_tokens": with_ids(BYTE_LEVEL_ADDED, len(vocab)),
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": byte_level,
        "post_processor": None,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def metaspace_vocab():
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in [METASPACE, "a", "b", "o", "f", "r", "s", "y", "z", "q", "u", "e", "x"]:
        vocab[piece] = len(vocab)
    return vocab


def metaspace_doc(normalizer):
    vocab = metaspace_vocab()
    merges = [[METASPACE, "a"], ["f", "o"], ["fo", "o"]]
    vocab[METASPACE + "a"] = len(vocab)
    vocab["fo"] = len(vocab)
    vocab["foo"] = len(vocab)
    specials = {t["content"]: vocab[t["content"]] for t in METASPACE_ADDED[:3]}
    tokens = [{"id": specials[t["content"]], **t} for t in METASPACE_ADDED[:3]]
    tokens += with_ids(METASPACE_ADDED[3:], len(vocab))
    doc = {
        "version": "1.0",
        "added_tokens": tokens,
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    if normalizer:
        doc["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": METASPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}]}
    else:
        doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "first",
                                "split": True}
    return doc


def cases(doc, texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(doc))
    out = []
    for parse_special in (True, False):
        tok.encode_special_tokens = not parse_special
        for text in texts:
            out.append({"text": text, "parse_special": parse_special,
                        "ids": tok.encode(text, add_special_tokens=False).ids})
    return out


def main():
    import tokenizers

    entries = []
    for name, doc, texts in (("byte_level_nfc", byte_level_doc(), BYTE_LEVEL_TEXTS),
                             ("metaspace_normalizer", metaspace_doc(True), METASPACE_TEXTS),
                             ("metaspace_pre_tokenizer", metaspace_doc(False), METASPACE_TEXTS)):
        entries.append({"name": name, "doc": doc, "cases": cases(doc, texts)})
    golden = {"made_by": "tests/golden/make_added_tokens_golden.py", "tokenizers_version": tokenizers.__version__,
              "encode": "Tokenizer.from_str(doc).encode(text, add_special_tokens=False).ids, "
                        "encode_special_tokens = not parse_special",
              "tokenizers": entries}
    with open(os.path.join(HERE, "tokenizer_json_added_tokens.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("written")


if __name__ == "__main__":
    main()
