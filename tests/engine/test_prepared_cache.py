"""The prepared-weights cache (engine: model/prepared_cache.*): a large model
file's matmul-ready copies written once and mapped by later loads.

Runs on a copy of SmolLM2 (so its identity can change under the test) with
VLLM_CPP_PREPARED_CACHE_MIN_MB=0 (SmolLM2 is below the default threshold):
each load's greedy tokens equal those of a load without the cache; an entry
is reused while it agrees with the model file, and written again when it is
truncated, corrupted, or the model file changed; entries of deleted model
files are pruned; "off" writes nothing; a bad setting is a clear error and
an unusable directory falls back to memory.
"""

import os
import shutil

import pytest

from vllm_cpp import Engine, SamplingParams

PROMPT = "The capital of France is"
MAX_TOKENS = 24
DATA_OFFSET = 2 << 20  # where an entry's copies start (prepared_cache.cpp)


def greedy(model):
    with Engine.load(str(model), max_model_len=256) as engine:
        return engine.complete(PROMPT, SamplingParams.greedy(max_tokens=MAX_TOKENS, ignore_eos=True)).token_ids


def entries(cache):
    return sorted(p for p in cache.iterdir()) if cache.exists() else []


@pytest.fixture(scope="module")
def model_copy(smollm2_path, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "smollm2-copy.gguf"
    shutil.copyfile(smollm2_path, path)
    return path


@pytest.fixture(scope="module")
def reference(model_copy):
    """Greedy tokens without the cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_CPP_PREPARED_CACHE", "off")
        return greedy(model_copy)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "prepared"
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE", str(directory))
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE_MIN_MB", "0")
    return directory


MARK_NS = 1000 * 10**9  # an entry's times set by the test: a rewritten entry has its own


def mark(entry):
    os.utime(entry, ns=(MARK_NS, MARK_NS))


def rewritten(cache):
    return only_entry(cache).stat().st_mtime_ns != MARK_NS


def only_entry(cache):
    found = entries(cache)
    assert len(found) == 1 and found[0].name.endswith(".prepared"), found
    return found[0]


def test_entry_written_once_then_mapped(model_copy, reference, cache):
    assert greedy(model_copy) == reference
    entry = only_entry(cache)
    assert entry.name.startswith("smollm2-copy.gguf-")
    assert entry.stat().st_size > DATA_OFFSET
    mark(entry)
    assert greedy(model_copy) == reference
    assert not rewritten(cache)  # read, not written again


def test_truncated_entry_is_written_again(model_copy, reference, cache):
    greedy(model_copy)
    entry = only_entry(cache)
    size = entry.stat().st_size
    os.truncate(entry, size // 2)
    assert greedy(model_copy) == reference
    assert only_entry(cache).stat().st_size == size


def test_entry_whose_data_was_lost_is_written_again(model_copy, reference, cache):
    greedy(model_copy)
    entry = only_entry(cache)
    with open(entry, "r+b") as f:  # the first copy's first bytes zeroed, as a crash before writeback leaves them
        f.seek(DATA_OFFSET)
        f.write(bytes(4096))
    mark(entry)
    assert greedy(model_copy) == reference
    assert rewritten(cache)


def test_changed_model_file_replaces_its_entry(model_copy, reference, cache):
    greedy(model_copy)
    mark(only_entry(cache))
    stat = model_copy.stat()
    os.utime(model_copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert greedy(model_copy) == reference
    assert rewritten(cache)


def test_entries_of_deleted_model_files_are_pruned(model_copy, reference, cache, tmp_path):
    other = tmp_path / "other.gguf"
    shutil.copyfile(model_copy, other)
    greedy(other)
    greedy(model_copy)
    assert len(entries(cache)) == 2
    other.unlink()
    stat = model_copy.stat()
    os.utime(model_copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))  # a new entry: the cache is pruned
    assert greedy(model_copy) == reference
    assert only_entry(cache).name.startswith("smollm2-copy.gguf-")


def test_off_and_below_threshold_write_nothing(model_copy, reference, cache, monkeypatch):
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE", "off")
    assert greedy(model_copy) == reference
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE", str(cache))
    monkeypatch.delenv("VLLM_CPP_PREPARED_CACHE_MIN_MB")  # SmolLM2's copies are below the default 256 MiB
    assert greedy(model_copy) == reference
    assert entries(cache) == []


def test_bad_threshold_is_a_clear_error(model_copy, reference, cache, monkeypatch):
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE_MIN_MB", "lots")
    with pytest.raises(Exception, match="VLLM_CPP_PREPARED_CACHE_MIN_MB.*'lots'"):
        greedy(model_copy)
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE_MIN_MB", "0")
    assert greedy(model_copy) == reference


def test_unusable_directory_falls_back_to_memory(model_copy, reference, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE", str(blocker / "prepared"))
    monkeypatch.setenv("VLLM_CPP_PREPARED_CACHE_MIN_MB", "0")
    assert greedy(model_copy) == reference
