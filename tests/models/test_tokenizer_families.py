"""The pre-tokenizers of issue 41's families (Qwen 3.5/3.6, GLM-4/4.5,
gpt-oss and Phi-4-mini's o200k, Kimi-K2, DeepSeek-V3, DeepSeek LLM/V2's six
Splits, SmolLM3, OLMo 2, Granite 3), in both forms: the GGUF's
tokenizer.ggml.pre name and the tokenizer.json Split regex, against Hugging
Face `tokenizers` and llama.cpp (golden/make_tokenizer_family_pre_golden.py:
the suite needs neither). The vocabulary is one trained on the texts with
merges across every boundary a split may draw, so a wrong split shows in
the ids; it is written into a vocabulary-only copy of SmolLM2's GGUF.

Where llama.cpp's GPT-4o regex (its classes collapsed: a non-ASCII letter
is both upper and lower case, marks are not letters) splits otherwise than
the model's own tokenizer, the engine follows the model's (`tokenizers`),
in both forms; those texts are left out of the llama.cpp comparison and
counted.

Gemma 4's GGUF tokenizer model (`gemma4`: BPE over characters, "▁" for
spaces, newline runs apart, byte fallback) is checked against llama.cpp
the same way, on a vocabulary trained likewise, ids and detokenized bytes.
"""

import json
import pathlib
import sys
import unicodedata

import pytest

from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from tokenizer_probe import FAMILY_PRE_TOKENIZERS, ProbeError, probe_path, tokenize, write_byte_level_json

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
from make_tokenizer_family_pre_golden import family_vocab_gguf, gemma4_gguf  # noqa: E402

GOLDEN = json.loads((GOLDEN_DIR / "tokenizer_family_pre.json").read_text(encoding="utf-8"))
GEMMA4 = json.loads((GOLDEN_DIR / "tokenizer_family_gemma4.json").read_text(encoding="utf-8"))

#: Each tokenizer.json form and the GGUF names the engine gives its split.
GGUF_NAMES = {"qwen35": ["qwen35"], "gpt-4o": ["gpt-4o", "llama4", "minimax-m2"], "deepseek-v3": ["deepseek-v3"],
              "deepseek-llm": ["deepseek-llm"],
              # The names SmolLM3's GGUFs carry ("smaug-bpe": its Llama 3
              # tokenizer.json hashes as Smaug's in llama.cpp's converter),
              # OLMo 2's ("dbrx": Dolma 2 is cl100k, as DBRX's) and Granite
              # 3's ("refact": StarCoder's vocabulary, as Refact's).
              "llama3-merges": ["smaug-bpe", "dbrx"], "starcoder-digits": ["refact", "starcoder"]}
#: The texts where llama.cpp's GPT-4o split is not the regex's (see above).
LLAMA_CPP_GPT4O_DIFFERS = 8
#: tokenizer.json forms split as llama.cpp splits, and the number of texts
#: where that is not `tokenizers`' split: DeepSeek LLM/V2's six Splits, where
#: an en, em or ideographic space (U+2002, U+2003, U+3000) before a letter
#: run leads it in llama.cpp (the model's GGUF form, checked against
#: llama.cpp's own tests in test_tokenizer_llamacpp_vocabs.py) and stands
#: alone in `tokenizers`.
JSON_FOLLOWS_LLAMA_CPP = {"deepseek-llm": 2}


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def vocab_gguf(smollm2_path, tmp_path_factory):
    return family_vocab_gguf(smollm2_path, "qwen35", str(tmp_path_factory.mktemp("family") / "vocab.gguf"))


def mismatches(cases, got):
    return [(c["text"], ids, c["ids"]) for c, (ids, _) in zip(cases, got) if ids != c["ids"]]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(FAMILY_PRE_TOKENIZERS))
def test_tokenizer_json_split_equals_tokenizers(probe, vocab_gguf, tmp_path, name):
    cases = GOLDEN["tokenizers"][name]
    if name in JSON_FOLLOWS_LLAMA_CPP:
        llama = GOLDEN["llama_cpp"][GGUF_NAMES[name][0]]
        cases = [c for c, ll in zip(cases, llama) if c["ids"] == ll["ids"]]
        assert len(cases) == len(llama) - JSON_FOLLOWS_LLAMA_CPP[name]
    path = write_byte_level_json(vocab_gguf, tmp_path / "tokenizer.json", name)
    bad = mismatches(cases, tokenize(probe, ["json", path], [c["text"] for c in cases]))
    assert not bad, f"[{name}] {len(bad)} of {len(cases)} differ, first {bad[0]!r}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pre", list(GOLDEN["llama_cpp"]))
def test_gguf_pre_name_equals_llamacpp(probe, vocab_gguf, pre):
    cases = GOLDEN["llama_cpp"][pre]
    if pre in GGUF_NAMES["gpt-4o"]:
        ours = GOLDEN["tokenizers"]["gpt-4o"]
        cases = [c for c, t in zip(cases, ours) if c["ids"] == t["ids"]]
        assert len(cases) == len(ours) - LLAMA_CPP_GPT4O_DIFFERS
    bad = mismatches(cases, tokenize(probe, ["gguf", vocab_gguf, f"pre={pre}"], [c["text"] for c in cases]))
    assert not bad, f"[{pre}] {len(bad)} of {len(cases)} differ, first {bad[0]!r}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(FAMILY_PRE_TOKENIZERS))
def test_gguf_and_tokenizer_json_forms_agree(probe, vocab_gguf, tmp_path, name):
    # A GGUF has no normalizer: where the tokenizer.json's NFC changes the
    # text, the forms differ by design (as llama.cpp and tokenizers do).
    nfc = (FAMILY_PRE_TOKENIZERS[name][0] or {}).get("type") == "NFC"
    texts = [c["text"] for c in GOLDEN["tokenizers"][name]
             if not nfc or unicodedata.normalize("NFC", c["text"]) == c["text"]]
    assert len(texts) > 50
    path = write_byte_level_json(vocab_gguf, tmp_path / "tokenizer.json", name)
    from_json = [ids for ids, _ in tokenize(probe, ["json", path], texts)]
    for pre in GGUF_NAMES[name]:
        from_gguf = [ids for ids, _ in tokenize(probe, ["gguf", vocab_gguf, f"pre={pre}"], texts)]
        differ = [t for t, a, b in zip(texts, from_json, from_gguf) if a != b]
        assert not differ, f"[{name} / {pre}] {len(differ)} differ, first {differ[0]!r}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("regex", [
    # Near misses of the families' regexes: refused, never taken for the nearest.
    FAMILY_PRE_TOKENIZERS["qwen35"][1]["pretokenizers"][0]["pattern"]["Regex"].replace("\\p{N}|", "\\p{N}{1,3}|"),
    FAMILY_PRE_TOKENIZERS["gpt-4o"][1]["pretokenizers"][0]["pattern"]["Regex"].replace("[\\r\\n/]*", "[\\r\\n]*"),
])
def test_unknown_split_regex_is_refused_by_name(probe, vocab_gguf, tmp_path, regex):
    path = write_byte_level_json(vocab_gguf, tmp_path / "tokenizer.json", "qwen35")
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = regex
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProbeError) as info:
        tokenize(probe, ["json", path], ["x"])
    assert f"pre-tokenizer Split regex '{regex}' is not supported" in str(info.value)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pre", ["qwen3", "gpt-4", "glm-4", "kimi", "smollm3", "olmo2", "granite", "granite3"])
def test_unknown_family_like_pre_name_is_refused(probe, vocab_gguf, pre):
    with pytest.raises(ProbeError, match=f"unknown pre-tokenizer '{pre}'"):
        tokenize(probe, ["gguf", vocab_gguf, f"pre={pre}"], ["x"])


@pytest.fixture(scope="module")
def gemma4_vocab_gguf(smollm2_path, tmp_path_factory):
    return gemma4_gguf(smollm2_path, GEMMA4, str(tmp_path_factory.mktemp("gemma4") / "vocab.gguf"))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("add_bos,special", [(False, True), (True, True), (False, False)])
def test_gemma4_gguf_tokenizer_equals_llamacpp(probe, gemma4_vocab_gguf, add_bos, special):
    cases = [c for c in GEMMA4["cases"] if c["add_bos"] == add_bos and c["special"] == special]
    assert cases
    got = tokenize(probe, ["gguf", gemma4_vocab_gguf], [c["text"] for c in cases], add_special=add_bos,
                   parse_special=special)
    bad = [(c["text"], ids, c["ids"]) for c, (ids, pieces) in zip(cases, got)
           if ids != c["ids"] or pieces.hex() != c["detokenized_hex"]]
    assert not bad, f"{len(bad)} of {len(cases)} differ, first {bad[0]!r}"


@pytest.mark.timeout(120)
def test_unknown_tokenizer_model_is_refused_by_name(probe, smollm2_path, tmp_path):
    from make_tokenizer_golden import vocab_only_copy

    path = str(tmp_path / "plamo.gguf")
    vocab_only_copy(smollm2_path, "default", path, {"tokenizer.ggml.model": "plamo2"})
    with pytest.raises(ProbeError, match="unsupported tokenizer model 'plamo2'"):
        tokenize(probe, ["gguf", path], ["x"])


@pytest.mark.timeout(120)
def test_split_sequence_out_of_order_is_refused(probe, vocab_gguf, tmp_path):
    # DeepSeek-V3's Splits, each known, in another order: another split.
    path = write_byte_level_json(vocab_gguf, tmp_path / "tokenizer.json", "deepseek-v3")
    doc = json.loads(path.read_text(encoding="utf-8"))
    splits = doc["pre_tokenizer"]["pretokenizers"]
    splits[0], splits[1] = splits[1], splits[0]
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProbeError, match="this sequence of 3 Split regexes is not supported"):
        tokenize(probe, ["json", path], ["x"])
