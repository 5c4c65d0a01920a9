"""The engine's tokenizer.json loader against Hugging Face `tokenizers`
(golden/make_tokenizer_json_golden.py), and its refusals.

SmolLM2's tokenizer.json is written at test time from its GGUF with the gguf
package, the way transformers exports it (ByteLevel pre-tokenizer and
decoder, the control tokens as special added tokens), so this runs anywhere;
so are variants with the pre-tokenization of SmolLM2's own, Llama 3's and
Qwen 2's (NFC) tokenizer.json.
Gemma 3's (SentencePiece-style BPE with byte fallback, 514,906 merges
recovered from the vocabulary) is the one tests/support/hf_convert.py writes into
the Hugging Face form of the GGUF (conftest's gemma3_hf_dir), the same
document transformers exports; its tests skip without the Gemma file.
"""

import json
import pathlib

import pytest

from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from tokenizer_probe import BYTE_LEVEL_PRE_TOKENIZERS, ProbeError, probe_path, tokenize, write_byte_level_json

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def smollm2_json(smollm2_path, tmp_path_factory):
    return write_byte_level_json(smollm2_path, tmp_path_factory.mktemp("smollm2") / "tokenizer.json")


@pytest.fixture(scope="module")
def gemma3_json(gemma3_hf_dir):
    return gemma3_hf_dir / "tokenizer.json"


def check_against_golden(probe, path, golden_name):
    golden = json.loads((GOLDEN / golden_name).read_text(encoding="utf-8"))
    config = golden["tokenizer_config"]
    options = [f"{k.split('_')[0]}={v}" for k, v in config.items() if v]
    for add_special in (False, True):
        cases = [c for c in golden["cases"] if c["add_special_tokens"] == add_special]
        got = tokenize(probe, ["json", path, *options], [c["text"] for c in cases], add_special=add_special)
        for case, (ids, _) in zip(cases, got):
            assert ids == case["ids"], (add_special, case["text"])
    return golden


def check_round_trip(probe, path, golden):
    # A literal U+2581 decodes as the space it stands for; bytes the
    # vocabulary lacks are dropped.
    texts = [c["text"] for c in golden["cases"] if "\u2581" not in c["text"] and "\x04" not in c["text"]]
    for text, (_, pieces) in zip(texts, tokenize(probe, ["json", path], texts)):
        assert pieces == text.encode("utf-8")


@pytest.mark.timeout(300)
def test_smollm2_json_equals_tokenizers(probe, smollm2_json):
    check_round_trip(probe, smollm2_json, check_against_golden(probe, smollm2_json, "tokenizer_json_smollm2.json"))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pre", [p for p in BYTE_LEVEL_PRE_TOKENIZERS if p != "bytelevel"])
def test_byte_level_pre_tokenizers_equal_tokenizers(probe, smollm2_path, tmp_path, pre):
    golden = json.loads((GOLDEN / "tokenizer_json_smollm2.json").read_text(encoding="utf-8"))
    cases = golden["pre_tokenizer_variants"][pre]
    path = write_byte_level_json(smollm2_path, tmp_path / "tokenizer.json", pre)
    got = tokenize(probe, ["json", path], [c["text"] for c in cases])
    mismatches = [c["text"] for c, (ids, _) in zip(cases, got) if ids != c["ids"]]
    assert not mismatches, f"[{pre}] {len(mismatches)} of {len(cases)} differ, first {mismatches[0]!r}"


@pytest.mark.timeout(300)
def test_gemma3_json_equals_tokenizers(probe, gemma3_json):
    check_round_trip(probe, gemma3_json, check_against_golden(probe, gemma3_json, "tokenizer_json_gemma3.json"))


def tiny_metaspace(**overrides):
    """A SentencePiece-style tokenizer.json: Llama 2's normalizer and decoder."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "\u2581": 5, "a": 6, "b": 7, "ab": 8,
             "\u2581ab": 9, "\u2581a": 10}
    doc = {
        "added_tokens": [{"id": i, "content": t, "special": True, "lstrip": False, "rstrip": False,
                          "normalized": False, "single_word": False} for t, i in [("<unk>", 0), ("<s>", 1), ("</s>", 2)]],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                   {"Sequence": {"id": "A", "type_id": 0}}]},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True, "vocab": vocab,
                  "merges": ["a b", ["\u2581", "ab"], ["\u2581", "a"]]},
    }
    doc.update(overrides)
    return doc


def write(tmp_path, doc, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.timeout(60)
def test_tiny_metaspace_bpe(probe, tmp_path):
    path = write(tmp_path, tiny_metaspace())
    (ids, pieces), (ids2, _), (ids3, _) = tokenize(probe, ["json", path], ["ab a\u00e9", "x", "<s>ab"])
    # Prepend and Replace, merges by rank ("a b" before "▁ ab"), é by its bytes.
    assert ids == [9, 10, 3, 4] and pieces == " ab a\u00e9".encode()
    assert ids2 == [5, 0]  # "x" has no token and no byte tokens: <unk>
    assert ids3 == [1, 9]  # the Prepend normalizer applies after an added token too
    assert tokenize(probe, ["json", path], ["ab"], add_special=True)[0][0] == [1, 9]
    assert tokenize(probe, ["json", path, "add_bos=0"], ["ab"], add_special=True)[0][0] == [9]
    metaspace = tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                                               "prepend_scheme": "first", "split": False})
    assert tokenize(probe, ["json", write(tmp_path, metaspace)], ["ab", "<s>ab"])[1][0] == [1, 8]


@pytest.mark.timeout(60)
def test_added_token_strip_and_roberta_processing(probe, tmp_path):
    doc = tiny_metaspace()
    plain = write(tmp_path, doc, "plain.json")
    # Without lstrip/rstrip the spaces around </s> stay in the text.
    assert tokenize(probe, ["json", plain], ["ab </s> ab"])[0][0] == [9, 5, 2, 5, 9]
    doc["added_tokens"][2].update(lstrip=True, rstrip=True)
    doc["post_processor"] = {"type": "RobertaProcessing", "cls": ["<s>", 1], "sep": ["</s>", 2]}
    stripped = write(tmp_path, doc, "stripped.json")
    assert tokenize(probe, ["json", stripped], ["ab  </s>  ab"])[0][0] == [9, 2, 9]
    assert tokenize(probe, ["json", stripped], ["ab"], add_special=True)[0][0] == [1, 9, 2]
    split = tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                                           "prepend_scheme": "always", "split": True})
    # A merge across a word boundary ("a" "▁", ranked first) applies only
    # without the split before each "▁".
    split["model"]["vocab"]["a\u2581"] = 11
    split["model"]["merges"].insert(0, ["a", "\u2581"])
    assert tokenize(probe, ["json", write(tmp_path, split, "split.json")], ["a ab"])[0][0] == [10, 9]
    split["pre_tokenizer"]["split"] = False
    assert tokenize(probe, ["json", write(tmp_path, split, "whole.json")], ["a ab"])[0][0] == [5, 11, 8]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["byte_level_nfc", "metaspace_normalizer", "metaspace_pre_tokenizer"])
def test_added_tokens_match_as_tokenizers_does(probe, tmp_path, name):
    """Crafted added tokens (golden/make_added_tokens_golden.py): overlaps,
    single_word, Unicode lstrip/rstrip, normalized or raw, special tokens
    parsed or not."""
    golden = json.loads((GOLDEN / "tokenizer_json_added_tokens.json").read_text(encoding="utf-8"))
    entry = next(e for e in golden["tokenizers"] if e["name"] == name)
    path = write(tmp_path, entry["doc"])
    for parse_special in (True, False):
        cases = [c for c in entry["cases"] if c["parse_special"] == parse_special]
        got = tokenize(probe, ["json", path], [c["text"] for c in cases], parse_special=parse_special)
        mismatches = [(c["text"], ids, c["ids"]) for c, (ids, _) in zip(cases, got) if ids != c["ids"]]
        assert not mismatches, f"parse_special={parse_special}: {len(mismatches)} differ: {mismatches[:3]}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("doc,message", [
    ("{not json", "not a JSON tokenizer file"),
    ("[1, 2]", "the top level is not an object"),
    (tiny_metaspace(model={"type": "WordPiece", "vocab": {}}), "model WordPiece is not supported"),
    (tiny_metaspace(model={"type": "Unigram", "vocab": []}), "model Unigram is not supported"),
    (tiny_metaspace(normalizer={"type": "NFKC"}), "normalizer NFKC is not supported"),
    (tiny_metaspace(normalizer={"type": "NFC"}), "NFC is supported with ByteLevel pre-tokenization only"),
    (tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"},
        {"type": "ByteLevel", "use_regex": False}]}), "Split regex '\\d+' is not supported"),
    (tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Whitespace"}), "pre-tokenizer Whitespace"),
    (tiny_metaspace(decoder={"type": "WordPiece"}), "decoder WordPiece"),
    (tiny_metaspace(post_processor={"type": "BertProcessing"}), "post-processor BertProcessing"),
    # Sparse ids would size the token table past what the file describes
    # (a fuzzer's input: 2^31 - 1 made the loader allocate 64 GiB).
    (tiny_metaspace(model=dict(tiny_metaspace()["model"], vocab=dict(tiny_metaspace()["model"]["vocab"], z=2**31 - 1))),
     "vocab entry 'z' has id 2147483647, past the"),
    (tiny_metaspace(added_tokens=[{"id": 70000, "content": "<x>", "special": True}]),
     "added token '<x>' has id 70000, past the"),
])
def test_bad_tokenizer_json_is_refused_by_name(probe, tmp_path, doc, message):
    path = write(tmp_path, doc)
    with pytest.raises(ProbeError) as info:
        tokenize(probe, ["json", path], ["x"])
    assert message in str(info.value) and str(path) in str(info.value)


@pytest.mark.timeout(60)
def test_missing_tokenizer_json_and_unknown_bos(probe, tmp_path):
    with pytest.raises(ProbeError, match="cannot read tokenizer file"):
        tokenize(probe, ["json", tmp_path / "absent.json"], ["x"])
    with pytest.raises(ProbeError, match="bos_token '<nope>' is not in the vocabulary"):
        tokenize(probe, ["json", write(tmp_path, tiny_metaspace()), "bos=<nope>"], ["x"])
