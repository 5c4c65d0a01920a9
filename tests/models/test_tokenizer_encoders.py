"""The engine's tokenizers for encoder models against their references.

WordPiece (BERT, bge, all-MiniLM, e5), with bge-small's vocabulary as
llama.cpp ships it (golden/llama_vocab/ggml-vocab-bert-bge.gguf):
- the GGUF against llama.cpp's own test files and against llama.cpp on the
  406 texts of golden/make_encoder_tokenizer_golden.py;
- the tokenizer keys llama.cpp's convert_hf_to_gguf.py writes for a
  BertModel ([CLS] / [SEP] as BOS / EOS) against llama.cpp on the converted
  model;
- the tokenizer.json transformers exports (BertNormalizer variants,
  BertPreTokenizer, TemplateProcessing) against Hugging Face `tokenizers`.

Unigram (XLM-RoBERTa: bge-m3, bge-reranker), on a tiny XLM-RoBERTa whose
SentencePiece model (nmt_nfkc: a real precompiled charsmap) was trained for
it and which llama.cpp's own converter wrote
(golden/tiny_encoders/xlm-roberta.gguf, golden/make_unigram_tokenizer_golden.py):
- the GGUF (tokenizer.ggml.model "t5") against llama.cpp;
- the tokenizer.json transformers exports for it (Precompiled,
  WhitespaceSplit + Metaspace), and the older export shape bge-m3's file has
  (Precompiled then Replace " {2,}", Metaspace alone), against `tokenizers`.
"""

import json
import pathlib

import pytest

from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from encoder_tokenizers import (BERT_NORMALIZERS, assert_same_ids, read_llama_vocab_test, unigram_document,
                                wordpiece_document, wordpiece_vocab, write_converted_bert_gguf, write_unigram_json,
                                write_wordpiece_json)
from tokenizer_probe import ProbeError, probe_path, tokenize

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"
BGE_VOCAB = GOLDEN / "llama_vocab" / "ggml-vocab-bert-bge.gguf"
XLMR_GGUF = GOLDEN / "tiny_encoders" / "xlm-roberta.gguf"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def golden():
    return json.loads((GOLDEN / "tokenizer_wordpiece.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def unigram_golden():
    return json.loads((GOLDEN / "tokenizer_unigram.json").read_text(encoding="utf-8"))


def test_bert_gguf_passes_llama_cpp_test_files(probe):
    cases = read_llama_vocab_test(BGE_VOCAB)
    got = tokenize(probe, ["gguf", BGE_VOCAB], [t for t, _ in cases], add_special=False, parse_special=False)
    assert [ids for ids, _ in got] == [ids for _, ids in cases]


def test_bert_gguf_equals_llama_cpp(probe, golden):
    # llama.cpp's test (test-tokenizer-0) and llama-cpp-python parse no
    # special tokens in the text.
    assert_same_ids(probe, ["gguf", BGE_VOCAB], golden["texts"], golden["llama_cpp"], parse_special=False)
    ids, pieces = tokenize(probe, ["gguf", BGE_VOCAB], ["hello"], add_special=True)[0]
    assert ids == [101, 7592, 102] and pieces == b"[CLS] hello[SEP]"


def test_converted_bert_gguf_equals_llama_cpp(probe, golden, tmp_path):
    path = write_converted_bert_gguf(BGE_VOCAB, tmp_path / "tiny-bert.gguf")
    assert_same_ids(probe, ["gguf", path], golden["texts"], golden["llama_cpp_converted"], parse_special=False)


@pytest.mark.parametrize("normalizer", list(BERT_NORMALIZERS))
def test_wordpiece_json_equals_tokenizers(probe, golden, tmp_path, normalizer):
    path = write_wordpiece_json(BGE_VOCAB, tmp_path / "tokenizer.json", normalizer)
    # tokenizers' encode matches the special tokens in the text.
    assert_same_ids(probe, ["json", path], golden["texts"], golden["hf"][normalizer], parse_special=True)


def test_wordpiece_decodes_with_the_continuation_rule(probe, tmp_path):
    text = "tokenization of unaffable embeddings"
    json_path = write_wordpiece_json(BGE_VOCAB, tmp_path / "tokenizer.json")
    for args in (["gguf", BGE_VOCAB], ["json", json_path]):
        ids, pieces = tokenize(probe, args, [text])[0]
        assert len(ids) > len(text.split())  # words were cut into pieces
        assert pieces == b" " + text.encode()  # "##" pieces join their word


def write_document(tmp_path, edit):
    doc = wordpiece_document(wordpiece_vocab(BGE_VOCAB))
    edit(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["model"].update(continuing_subword_prefix="@@"), "continuing_subword_prefix"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre-tokenizer Whitespace"),
    (lambda d: d.update(pre_tokenizer=None), "BertPreTokenizer"),
    (lambda d: d["model"].update(unk_token="[NOPE]"), "[NOPE]"),
    (lambda d: d["model"].update(max_input_chars_per_word=-1), "max_input_chars_per_word"),
    (lambda d: d.update(normalizer={"type": "BertNormalizer", "lowercase": "yes"}), "lowercase"),
])
def test_wordpiece_json_refusals_name_the_component(probe, tmp_path, edit, message):
    path = write_document(tmp_path, edit)
    with pytest.raises(ProbeError, match=message.replace("[", r"\[")):
        tokenize(probe, ["json", path], ["hello"])


def test_wordpiece_json_without_unknown_token_is_refused(probe, tmp_path):
    path = write_document(tmp_path, lambda d: d["model"].pop("unk_token"))
    with pytest.raises(ProbeError, match="unknown token"):
        tokenize(probe, ["json", path], ["hello"])


def test_unigram_gguf_equals_llama_cpp(probe, unigram_golden):
    assert_same_ids(probe, ["gguf", XLMR_GGUF], unigram_golden["texts"], unigram_golden["llama_cpp"], parse_special=False)


@pytest.mark.parametrize("legacy", [False, True], ids=["export", "legacy-export"])
def test_unigram_json_equals_tokenizers(probe, unigram_golden, tmp_path, legacy):
    path = write_unigram_json(XLMR_GGUF, tmp_path / "tokenizer.json", legacy)
    assert_same_ids(probe, ["json", path], unigram_golden["texts"], unigram_golden["hf_legacy" if legacy else "hf"],
                    parse_special=True)


def test_unigram_decodes_spaces(probe, tmp_path):
    path = write_unigram_json(XLMR_GGUF, tmp_path / "tokenizer.json")
    for args in (["gguf", XLMR_GGUF], ["json", path]):
        _, pieces = tokenize(probe, args, ["the quick brown fox"])[0]
        assert pieces == b" the quick brown fox"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
    (lambda d: d["model"].update(vocab=[]), "model Unigram is not supported"),
    (lambda d: d["model"].update(unk_id=10**6), "unk_id"),
    (lambda d: d["model"]["vocab"].__setitem__(5, ["x"]), "vocab entry 5"),
    (lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "!!"}), "base64"),
    (lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "CAAAAA=="}), "charsmap"),
    (lambda d: d.update(normalizer={"type": "Replace", "pattern": {"Regex": "a+"}, "content": ""}), "Replace"),
    (lambda d: d.update(normalizer={"type": "NFKC"}), "normalizer NFKC"),
    (lambda d: d.update(pre_tokenizer={"type": "BertPreTokenizer"}), "pre-tokenizer"),
])
def test_unigram_json_refusals_name_the_component(probe, tmp_path, edit, message):
    doc = unigram_document(XLMR_GGUF)
    edit(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProbeError, match=message):
        tokenize(probe, ["json", path], ["hello"])
