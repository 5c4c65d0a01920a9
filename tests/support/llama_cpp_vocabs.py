"""llama.cpp's own tokenizer tests: the vocabulary-only GGUFs under its
``models/`` (``ggml-vocab-NAME.gguf``) with ``.inp`` (texts) and ``.out``
(llama.cpp's ids, add_special and parse_special off), read as llama.cpp's
tests/test-tokenizer-0.cpp reads them.

The files come from llama.cpp's source tree, which is not a test requirement:
``llama_cpp_tree()`` finds it ($LLAMA_CPP_DIR, or the llama-cpp-python sdist
unpacked in the running interpreter's prefix, as the golden scripts use it)
or returns None. For CI, ``compact_vocabulary`` keeps of a vocabulary only
what the tests' ids can reach (see its docstring) and ``write_compact_gguf``
turns that back into a vocabulary-only GGUF with every id where it was
(tests/golden/make_llamacpp_vocab_golden.py and
tests/models/test_tokenizer_llamacpp_vocabs.py share them).
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import List, Optional, Tuple

SEPARATOR = "\n__ggml_vocab_test__\n"
NORMAL = 1  # GGUF token type

#: The tokenizer.* keys a compact vocabulary keeps (besides tokens, types,
#: scores and merges, which it rewrites).
_KEPT_SCALARS = ("general.architecture", "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                 "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                 "tokenizer.ggml.mask_token_id", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_bos_token",
                 "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix",
                 "tokenizer.ggml.remove_extra_whitespaces")


def llama_cpp_tree() -> Optional[pathlib.Path]:
    """llama.cpp's source tree (with models/ggml-vocab-*.gguf), or None."""
    candidates = [os.environ.get("LLAMA_CPP_DIR")]
    candidates += [str(p / "vendor" / "llama.cpp") for p in sorted(pathlib.Path(sys.prefix).glob("llama_cpp_python-*"))]
    return next((pathlib.Path(c) for c in candidates if c and (pathlib.Path(c) / "models").is_dir()), None)


def vocab_names(models: pathlib.Path) -> List[str]:
    """The vocabularies in ``models`` that have .inp/.out tests."""
    return sorted(p.name[len("ggml-vocab-"):-len(".gguf.inp")] for p in models.glob("ggml-vocab-*.gguf.inp"))


def read_tests(models: pathlib.Path, name: str) -> List[Tuple[str, List[int]]]:
    """[(text, llama.cpp's ids)] in file order, split as test-tokenizer-0.cpp
    splits them (no empty text after a final separator)."""
    raw = (models / f"ggml-vocab-{name}.gguf.inp").read_bytes().decode("utf-8")
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    lines = (models / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8").splitlines()
    assert len(texts) == len(lines), f"{name}: {len(texts)} texts, {len(lines)} id lines"
    return [(text, [int(t) for t in line.split()]) for text, line in zip(texts, lines)]


def _field(reader, key):
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def compact_vocabulary(gguf_path, cases) -> dict:
    """The part of a vocabulary that decides the ids of ``cases``.

    Kept: every token that is not NORMAL (control, user-defined, byte,
    unknown: matched or fallen back to whatever the text), the ids the
    metadata names, and the tokens the expected ids are built from: for BPE
    each merge whose result is kept, recursively; for SentencePiece every
    split of a kept token into two tokens, recursively. BPE picks the
    best-ranked applicable merge (SentencePiece the best-scored bigram), so
    a run that only ever chose kept merges chooses the same on the subset
    (the merges keep their order). Other ids become fillers in
    ``write_compact_gguf``."""
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    scores = _field(reader, "tokenizer.ggml.scores")
    merges = _field(reader, "tokenizer.ggml.merges") or []
    scalars = {k: _field(reader, k) for k in _KEPT_SCALARS if k in reader.fields}
    index = {t: i for i, t in enumerate(tokens)}
    kept = {i for i, t in enumerate(types) if t != NORMAL}
    kept |= {v for k, v in scalars.items() if k.endswith("_id") and 0 <= v < len(tokens)}
    by_result = {}
    for rank, merge in enumerate(merges):
        cut = merge.find(" ", 1)  # as llama.cpp splits a merge: a token may start with a space
        left, right = merge[:cut], merge[cut + 1:]
        by_result.setdefault(left + right, []).append((rank, left, right))
    kept_ranks, visited, todo = set(), set(), [tokens[i] for _, ids in cases for i in ids]
    while todo:
        text = todo.pop()
        if text in visited or text not in index:
            continue
        visited.add(text)
        kept.add(index[text])
        if merges:
            for rank, left, right in by_result.get(text, []):
                kept_ranks.add(rank)
                todo += [left, right]
        else:
            todo += [p for cut in range(1, len(text)) for p in (text[:cut], text[cut:])
                     if text[:cut] in index and text[cut:] in index]
    return {
        "n_tokens": len(tokens),
        "scalars": scalars,
        "tokens": {str(i): [tokens[i], int(types[i])] + ([float(scores[i])] if scores is not None else [])
                   for i in sorted(kept)},
        "merges": [merges[r] for r in sorted(kept_ranks)],
    }



def compact_tokens(compact: dict) -> List[str]:
    """Every id's text: the kept tokens, and elsewhere a filler no text
    reaches (an ASCII space inside, which byte-level and SentencePiece
    vocabularies never hold)."""
    kept = compact["tokens"]
    return [kept[str(i)][0] if str(i) in kept else f"[filler {i}]" for i in range(compact["n_tokens"])]


def compact_token_types(compact: dict) -> List[int]:
    kept = compact["tokens"]
    return [kept[str(i)][1] if str(i) in kept else NORMAL for i in range(compact["n_tokens"])]


def write_compact_gguf(compact: dict, path) -> pathlib.Path:
    """A vocabulary-only GGUF of ``compact``: its tokens at their ids, every
    other id a NORMAL filler (compact_tokens)."""
    import gguf

    scalars = compact["scalars"]
    writer = gguf.GGUFWriter(str(path), scalars["general.architecture"])
    kept = {int(i): v for i, v in compact["tokens"].items()}
    n = compact["n_tokens"]
    with_scores = any(len(v) == 3 for v in kept.values())
    writer.add_tokenizer_model(scalars["tokenizer.ggml.model"])
    if "tokenizer.ggml.pre" in scalars:
        writer.add_tokenizer_pre(scalars["tokenizer.ggml.pre"])
    writer.add_token_list(compact_tokens(compact))
    writer.add_token_types(compact_token_types(compact))
    if with_scores:
        writer.add_token_scores([kept[i][2] if i in kept else -1e9 for i in range(n)])
    if compact["merges"]:
        writer.add_token_merges(compact["merges"])
    for key, value in scalars.items():
        if key.endswith("_id"):
            writer.add_uint32(key, value)
        elif isinstance(value, bool):
            writer.add_bool(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return pathlib.Path(path)
