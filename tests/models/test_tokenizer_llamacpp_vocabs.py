"""Our tokenizers against llama.cpp's own tokenizer tests: each vocabulary
under llama.cpp's models/ (ggml-vocab-NAME.gguf) tokenizes its .inp texts
into exactly the .out ids (add_special and parse_special off, as
test-tokenizer-0 runs them).

Two forms: the files themselves from llama.cpp's source tree (about 50 MB,
not in the repository: found by tests/support/llama_cpp_vocabs.llama_cpp_tree,
skipped with the reason when absent), and in CI the committed
golden/tokenizer_llamacpp_vocabs.json (made by
golden/make_llamacpp_vocab_golden.py): the same tests with the part of each
vocabulary their ids are built from, written back into a vocabulary-only
GGUF with every id in place. Gemma 4's vocabulary is also written as the
tokenizer.json Gemma 4 publishes (transformers' GemmaTokenizer: BPE with its
merges, spaces as "▁", byte fallback), which the golden script found to
tokenize these tests as llama.cpp does, and read by the tokenizer.json loader.
"""

import json
import pathlib

import pytest

from hf_convert import gemma_tokenizer_json
from llama_cpp_vocabs import compact_token_types, compact_tokens, llama_cpp_tree, read_tests, write_compact_gguf
from native_build import build_native_tests  # noqa: F401  (conftest builds the probe first)
from tokenizer_probe import probe_path, tokenize

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" / "tokenizer_llamacpp_vocabs.json")
                    .read_text(encoding="utf-8"))["vocabs"]
#: Vocabularies checked here from llama.cpp's tree only: bert-bge (WordPiece)
#: has its committed vocabulary in test_tokenizer_encoders.py.
TREE_ONLY = ("bert-bge",)


@pytest.fixture(scope="module")
def probe():
    return probe_path()


@pytest.fixture(scope="module")
def models():
    tree = llama_cpp_tree()
    if tree is None:
        pytest.skip("llama.cpp's source tree (models/ggml-vocab-*.gguf) is absent: set LLAMA_CPP_DIR to it "
                    "(the llama-cpp-python sdist's vendor/llama.cpp)")
    return tree / "models"


def assert_ids_equal(name, cases, got):
    wrong = [(text, ids, g) for (text, ids), (g, _) in zip(cases, got) if ids != g]
    assert not wrong, f"{name}: {len(wrong)} of {len(cases)} differ from llama.cpp, first: {wrong[0]!r}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(set(GOLDEN) | set(TREE_ONLY)))
def test_vocab_file_equals_llamacpp(probe, models, name):
    cases = read_tests(models, name)
    got = tokenize(probe, ["gguf", models / f"ggml-vocab-{name}.gguf"], [t for t, _ in cases], parse_special=False)
    assert_ids_equal(name, cases, got)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_compact_vocab_equals_llamacpp(probe, tmp_path, name):
    entry = GOLDEN[name]
    path = write_compact_gguf(entry["vocabulary"], tmp_path / f"{name}.gguf")
    got = tokenize(probe, ["gguf", path], [t for t, _ in entry["cases"]], parse_special=False)
    assert_ids_equal(name, entry["cases"], got)


def test_golden_is_the_sdist_tests(models):
    # The committed cases are llama.cpp's current files (remake the golden when they change).
    for name, entry in GOLDEN.items():
        assert [list(c) for c in read_tests(models, name)] == entry["cases"], name


@pytest.mark.timeout(300)
def test_gemma4_tokenizer_json_equals_llamacpp(probe, tmp_path):
    entry = GOLDEN["gemma-4"]
    assert entry["tokenizer_json"]["equals_llama_cpp"], entry["tokenizer_json"]
    vocabulary = entry["vocabulary"]
    doc = gemma_tokenizer_json(compact_tokens(vocabulary), compact_token_types(vocabulary),
                               vocabulary["scalars"]["tokenizer.ggml.bos_token_id"], merges=vocabulary["merges"])
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    got = tokenize(probe, ["json", path], [t for t, _ in entry["cases"]], parse_special=False)
    assert_ids_equal("gemma-4 tokenizer.json", entry["cases"], got)
