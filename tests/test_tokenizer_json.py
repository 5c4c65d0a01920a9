"""The engine's tokenizer.json loader against Hugging Face `tokenizers`
(golden/make_tokenizer_json_golden.py), and its refusals.

SmolLM2's tokenizer.json is written at test time from its GGUF with the gguf
package, the way transformers exports it (ByteLevel pre-tokenizer and
decoder, the control tokens as special added tokens), so this runs anywhere.
Gemma 3's (33 MB, SentencePiece-style BPE with byte fallback) needs
transformers to export: make_tokenizer_json_golden.py leaves it in
build/tokenizer-json/gemma3/, and its test skips when it is absent.
"""

import json
import pathlib

import pytest

from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from tokenizer_probe import ProbeError, probe_path, tokenize

HERE = pathlib.Path(__file__).parent
GOLDEN = HERE / "golden"
GEMMA_JSON = HERE.parent / "build" / "tokenizer-json" / "gemma3" / "tokenizer.json"
CONTROL = 3  # GGUF token type


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def smollm2_json(smollm2_path, tmp_path_factory):
    import gguf

    reader = gguf.GGUFReader(smollm2_path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    doc = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(tokens) if types[i] == CONTROL],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ") for m in reader.fields["tokenizer.ggml.merges"].contents()]},
    }
    path = tmp_path_factory.mktemp("smollm2") / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gemma3_json():
    if not GEMMA_JSON.is_file():
        pytest.skip(f"{GEMMA_JSON} is absent: tests/golden/make_tokenizer_json_golden.py exports it (transformers)")
    return GEMMA_JSON


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
@pytest.mark.parametrize("doc,message", [
    ("{not json", "not a JSON tokenizer file"),
    ("[1, 2]", "the top level is not an object"),
    (tiny_metaspace(model={"type": "WordPiece", "vocab": {}}), "model WordPiece is not supported"),
    (tiny_metaspace(model={"type": "Unigram", "vocab": []}), "model Unigram is not supported"),
    (tiny_metaspace(normalizer={"type": "NFKC"}), "normalizer NFKC is not supported"),
    (tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"},
        {"type": "ByteLevel", "use_regex": False}]}), "Split regex '\\d+' is not supported"),
    (tiny_metaspace(normalizer=None, pre_tokenizer={"type": "Whitespace"}), "pre-tokenizer Whitespace"),
    (tiny_metaspace(decoder={"type": "WordPiece"}), "decoder WordPiece"),
    (tiny_metaspace(added_tokens=[{"id": 1, "content": "<s>", "single_word": True}]), "single_word"),
    (tiny_metaspace(post_processor={"type": "BertProcessing"}), "post-processor BertProcessing"),
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
