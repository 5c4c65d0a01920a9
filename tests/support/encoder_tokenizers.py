"""Tokenizer files of encoder models for the tokenizer tests, written from a
GGUF vocabulary with the gguf package: a BERT (WordPiece) tokenizer.json the
way transformers' BertTokenizerFast exports it
(golden/make_encoder_tokenizer_golden.py checks that it is the same
document), and llama.cpp's vocabulary test files read."""

import json
import re

CONTROL = 3  # GGUF token type
PHANTOM_SPACE = "\u2581"
#: BERT's reserved tokens, which llama.cpp's converter leaves as they are.
UNUSED = re.compile(r"\[unused\d+\]")

#: BertNormalizer variants the tests run (the vocabulary is bge's, uncased).
BERT_NORMALIZERS = {
    "uncased": {"clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
    "keep_accents": {"clean_text": True, "handle_chinese_chars": True, "strip_accents": False, "lowercase": True},
    "cased": {"clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": False},
    "raw": {"clean_text": False, "handle_chinese_chars": False, "strip_accents": True, "lowercase": True},
}


def wordpiece_vocab(gguf_path):
    """The Hugging Face vocabulary of a llama.cpp "bert" GGUF: "\u2581piece"
    back to "piece", a bare continuation back to "##piece"."""
    import gguf

    reader = gguf.GGUFReader(gguf_path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    vocab = []
    for text, kind in zip(tokens, types):
        if kind == CONTROL or UNUSED.fullmatch(text):
            vocab.append(text)
        elif text.startswith(PHANTOM_SPACE):
            vocab.append(text[len(PHANTOM_SPACE):])
        else:
            vocab.append("##" + text)
    return vocab


def wordpiece_document(vocab, normalizer="uncased"):
    """transformers' BertTokenizerFast export of `vocab` (uncased, [CLS] ... [SEP])."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    added = [{"id": vocab.index(t), "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in specials]

    def special(t, type_id=0):
        return {"SpecialToken": {"id": t, "type_id": type_id}}

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", **BERT_NORMALIZERS[normalizer]},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]"), {"Sequence": {"id": "A", "type_id": 0}}, special("[SEP]")],
            "pair": [special("[CLS]"), {"Sequence": {"id": "A", "type_id": 0}}, special("[SEP]"),
                     {"Sequence": {"id": "B", "type_id": 1}}, special("[SEP]", 1)],
            "special_tokens": {t: {"id": t, "ids": [vocab.index(t)], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}},
    }


def write_wordpiece_json(gguf_path, out_path, normalizer="uncased"):
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(wordpiece_document(wordpiece_vocab(gguf_path), normalizer), f, ensure_ascii=False)
    return out_path


def assert_same_ids(probe, load_args, texts, expected, parse_special):
    """The probe's ids equal expected {"plain": [ids], "special": [ids]}
    (without / with the model's special tokens around the text)."""
    from tokenizer_probe import tokenize

    for mode, add_special in (("plain", False), ("special", True)):
        got = tokenize(probe, load_args, texts, add_special=add_special, parse_special=parse_special)
        bad = [(t, e, ids) for t, e, (ids, _) in zip(texts, expected[mode], got) if ids != e]
        assert not bad, f"{mode}: {len(bad)} of {len(texts)} differ; first {bad[0]!r}"


def read_llama_vocab_test(gguf_path):
    """llama.cpp's test-tokenizer-0 cases beside a vocabulary: [(text, ids)]."""
    with open(str(gguf_path) + ".inp", encoding="utf-8", newline="") as f:
        texts = f.read().split("\n__ggml_vocab_test__\n")
    with open(str(gguf_path) + ".out", encoding="utf-8") as f:
        lines = f.read().split("\n")
    return [(text, [int(i) for i in line.split()]) for text, line in zip(texts, lines)]


#: The tokenizer keys llama.cpp's convert_hf_to_gguf.py (llama-cpp-python
#: 0.3.36's) writes for a BertModel with bge-small's vocabulary: [CLS] and
#: [SEP] as BOS and EOS, add_sep false. golden/make_encoder_tokenizer_golden.py
#: converts a tiny random BertModel and checks write_converted_bert_gguf's
#: file against it key for key.
CONVERTED_BERT_KEYS = {
    "tokenizer.ggml.model": "bert",
    "tokenizer.ggml.pre": "jina-v2-en",
    "tokenizer.ggml.token_type_count": 2,
    "tokenizer.ggml.bos_token_id": 101,
    "tokenizer.ggml.eos_token_id": 102,
    "tokenizer.ggml.unknown_token_id": 100,
    "tokenizer.ggml.seperator_token_id": 102,
    "tokenizer.ggml.padding_token_id": 0,
    "tokenizer.ggml.mask_token_id": 103,
    "tokenizer.ggml.add_bos_token": True,
    "tokenizer.ggml.add_eos_token": True,
    "tokenizer.ggml.add_sep_token": False,
    "tokenizer.ggml.normalizer.lowercase": True,
}


def converted_bert_tokens(bge_gguf_path):
    """The converter's token texts for bge's vocabulary: as the older
    converter that wrote ggml-vocab-bert-bge.gguf, but [unusedN] with the
    word-start prefix too."""
    import gguf

    tokens = gguf.GGUFReader(bge_gguf_path).fields["tokenizer.ggml.tokens"].contents()
    return [PHANTOM_SPACE + t if UNUSED.fullmatch(t) else t for t in tokens]


def write_converted_bert_gguf(bge_gguf_path, out_path):
    """The tokenizer metadata (no tensors) of a BertModel with bge's
    vocabulary as convert_hf_to_gguf.py writes it."""
    import gguf

    reader = gguf.GGUFReader(bge_gguf_path)
    writer = gguf.GGUFWriter(str(out_path), arch="bert")
    writer.add_token_list(converted_bert_tokens(bge_gguf_path))
    writer.add_token_types(reader.fields["tokenizer.ggml.token_type"].contents())
    for key, value in CONVERTED_BERT_KEYS.items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        else:
            writer.add_string(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


def unigram_document(gguf_path, legacy=False):
    """The tokenizer.json transformers' XLMRobertaTokenizerFast exports for
    the XLM-RoBERTa model llama.cpp converted to `gguf_path` (its pieces,
    scores and precompiled charsmap); legacy: the older export shape
    (bge-m3's file): Precompiled then Replace " {2,}" -> " ", Metaspace alone."""
    import base64

    import gguf

    fields = gguf.GGUFReader(gguf_path).fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    scores = fields["tokenizer.ggml.scores"].contents()
    charsmap = bytes(fields["tokenizer.ggml.precompiled_charsmap"].contents())
    # The converter writes [PADn] (score -10000) where transformers has
    # <mask> (score 0).
    vocab = [["<mask>", 0.0] if t.startswith("[PAD") else [t, float(s)] for t, s in zip(tokens, scores)]
    specials = [(i, t) for i, (t, _) in enumerate(vocab) if t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in specials]
    metaspace = {"type": "Metaspace", "replacement": PHANTOM_SPACE, "prepend_scheme": "always", "split": True}
    precompiled = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()}

    def special(t):
        return {"SpecialToken": {"id": t, "type_id": 0}}

    ids = {t: i for i, t in specials}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": ({"type": "Sequence", "normalizers": [
            precompiled, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]} if legacy else precompiled),
        "pre_tokenizer": (metaspace if legacy else
                          {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]}),
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>")],
            "pair": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>"), special("</s>"),
                     {"Sequence": {"id": "B", "type_id": 0}}, special("</s>")],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in ("</s>", "<s>")},
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": ids["<unk>"], "vocab": vocab, "byte_fallback": False},
    }


def write_unigram_json(gguf_path, out_path, legacy=False):
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(unigram_document(gguf_path, legacy), f, ensure_ascii=False)
    return out_path
