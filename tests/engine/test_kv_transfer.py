"""KV transfer connectors (issue 13): computed prefixes shared between
engines through a directory (SharedStorageConnector) or Redis
(RedisConnector).

The native program test_kv_transfer checks the parts that need no model:
the config's refusals, the block record (truncated, corrupt and foreign
records refused), the directory store under concurrent writers and an
unwritable directory, the I/O worker, and the Redis client against a
server that is absent or silent, and (where redis-server is installed)
against a real one.

With SmolLM2: a producer process serves a ~2,000-token prompt and a fresh
consumer process on the same store gives byte-identical greedy output with
the prefix loaded (directory and Redis); disaggregated prefill (the
producer stops after one token); faults (corrupted, truncated and foreign
blocks, an unwritable directory, a Redis server that is gone, a producer
killed mid-write) each recompute with the same output; bad configs are
refused at load.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from kv_stores import REDIS_MISSING, RedisServer
from native_build import build_native_tests, run_program
from vllm_cpp import Engine, InvalidArgumentError, SamplingParams

TESTS = pathlib.Path(__file__).resolve().parents[1]
RUNNER = TESTS / "support" / "kv_transfer_run.py"
TINY_LLAMA = TESTS / "golden" / "tiny" / "llama.gguf"
MAX_MODEL_LEN = 4096
MAX_TOKENS = 16
WORDS = "The quick brown fox jumps over the lazy dog while the river runs to the sea and birds sing. "
#: ~2,000 tokens for SmolLM2 (each line is ~25).
LONG_PROMPT = "".join(f"Line {i}: {WORDS}" for i in range(81))
#: For the fault tests: ~30 blocks of 16 tokens.
SHORT_PROMPT = "".join(f"Entry {i}: {WORDS}" for i in range(20))


def storage_config(path, role):
    return {"kv_connector": "SharedStorageConnector", "kv_role": role,
            "kv_connector_extra_config": {"shared_storage_path": str(path)}}


def redis_config(url, role):
    return {"kv_connector": "RedisConnector", "kv_role": role, "kv_connector_extra_config": {"url": url}}


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.fixture(scope="module")
def redis_server():
    if REDIS_MISSING:
        pytest.skip(REDIS_MISSING)
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def prompt_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("kvx") / "prompt.txt"
    path.write_text(LONG_PROMPT, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(smollm2_path):
    """One engine without a connector: the texts every transfer must reproduce."""
    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN) as engine:
        long = engine.complete(LONG_PROMPT, SamplingParams.greedy(max_tokens=MAX_TOKENS))
        short = engine.complete(SHORT_PROMPT, SamplingParams.greedy(max_tokens=MAX_TOKENS))
    assert long.prompt_tokens >= 2000
    return {"long": long.text, "short": short.text, "long_prompt_tokens": long.prompt_tokens,
            "short_prompt_tokens": short.prompt_tokens}


def run_engine_process(model, config, prompt_file, max_tokens=MAX_TOKENS):
    result = subprocess.run([sys.executable, str(RUNNER), str(model), json.dumps(config), str(prompt_file),
                             str(max_tokens), str(MAX_MODEL_LEN)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def complete_with(model, config, prompt):
    """An engine in this process: serve one greedy completion, close (its saves are written)."""
    with Engine.load(model, max_model_len=MAX_MODEL_LEN, kv_transfer_config=config) as engine:
        text = engine.complete(prompt, SamplingParams.greedy(max_tokens=MAX_TOKENS)).text
        stats = engine.stats()
    return text, stats


def assert_loaded_prefix(run, prompt_tokens):
    kv = run["stats"]["kv_transfer"]
    full_blocks = (prompt_tokens - 1) // 16
    assert kv["blocks_loaded"] == full_blocks, kv
    assert kv["tokens_loaded"] == full_blocks * 16
    assert kv["bytes_loaded"] > 0 and kv["blocks_rejected"] == 0 and kv["warnings"] == 0, kv
    # The loaded blocks were prefix-cache hits: only the tail was computed.
    assert run["stats"]["prefix_cache_hits"] == full_blocks * 16


# -- without a model -------------------------------------------------------------------------

@pytest.mark.timeout(300)
def test_native_kv_transfer(build):
    run_program(build, "test_kv_transfer")


@pytest.mark.timeout(300)
def test_native_kv_transfer_with_redis(build, redis_server):
    run_program(build, "test_kv_transfer", redis_server.port)


# -- two processes ---------------------------------------------------------------------------

@pytest.mark.timeout(900)
def test_directory_producer_then_fresh_consumer_process(smollm2_path, reference, prompt_file, tmp_path):
    producer = run_engine_process(smollm2_path, storage_config(tmp_path, "kv_producer"), prompt_file)
    assert producer["text"] == reference["long"]
    saved = producer["stats"]["kv_transfer"]
    assert saved["blocks_saved"] >= reference["long_prompt_tokens"] // 16, saved
    assert saved["warnings"] == 0 and saved["saves_pending"] == 0, saved
    consumer = run_engine_process(smollm2_path, storage_config(tmp_path, "kv_consumer"), prompt_file)
    assert consumer["text"] == reference["long"]
    assert_loaded_prefix(consumer, consumer["prompt_tokens"])
    assert consumer["stats"]["kv_transfer"]["blocks_saved"] == 0  # a consumer never writes


@pytest.mark.timeout(900)
def test_disaggregated_prefill(smollm2_path, reference, prompt_file, tmp_path):
    """The producer only prefills (one token); the consumer decodes: the text
    is one engine's."""
    producer = run_engine_process(smollm2_path, storage_config(tmp_path, "kv_producer"), prompt_file, max_tokens=1)
    assert reference["long"].startswith(producer["text"])
    consumer = run_engine_process(smollm2_path, storage_config(tmp_path, "kv_consumer"), prompt_file)
    assert consumer["text"] == reference["long"]
    assert_loaded_prefix(consumer, consumer["prompt_tokens"])


@pytest.mark.timeout(900)
def test_redis_disaggregated_then_fresh_consumer_process(smollm2_path, reference, prompt_file, redis_server):
    producer = run_engine_process(smollm2_path, redis_config(redis_server.url, "kv_producer"), prompt_file, max_tokens=1)
    assert producer["stats"]["kv_transfer"]["blocks_saved"] >= reference["long_prompt_tokens"] // 16
    consumer = run_engine_process(smollm2_path, redis_config(redis_server.url, "kv_both"), prompt_file)
    assert consumer["text"] == reference["long"]
    assert_loaded_prefix(consumer, consumer["prompt_tokens"])


def test_sliding_window_model_gemma3(gemma3_gguf, tmp_path):
    """Gemma 3 (five sliding layers in six, window 512): every layer's K/V is
    stored; the consumer's sliding group adopts only the window before the
    hit, the full group all of it; the text is one engine's."""
    prompt = "".join(f"Item {i}: {WORDS}" for i in range(40))  # past the window
    with Engine.load(str(gemma3_gguf), max_model_len=2048) as engine:
        expected = engine.complete(prompt, SamplingParams.greedy(max_tokens=MAX_TOKENS))
    assert expected.prompt_tokens > 600
    for role in ("kv_producer", "kv_consumer"):
        with Engine.load(str(gemma3_gguf), max_model_len=2048,
                         kv_transfer_config=storage_config(tmp_path, role)) as engine:
            out = engine.complete(prompt, SamplingParams.greedy(max_tokens=MAX_TOKENS))
            stats = engine.stats()
        assert out.text == expected.text, role
    kv = stats["kv_transfer"]
    assert kv["blocks_loaded"] == (expected.prompt_tokens - 1) // 16 and kv["blocks_rejected"] == 0, kv
    assert stats["prefix_cache_hits"] == kv["tokens_loaded"]


# -- faults: each recomputes, with the same output -------------------------------------------

@pytest.fixture(scope="module")
def short_store(smollm2_path, tmp_path_factory, reference):
    """A store holding the short prompt's blocks: (root, the model's block files)."""
    root = tmp_path_factory.mktemp("short_store")
    text, stats = complete_with(smollm2_path, storage_config(root, "kv_producer"), SHORT_PROMPT)
    assert text == reference["short"]
    # A producer's request ends once its blocks are written.
    kv = stats["kv_transfer"]
    assert kv["saves_pending"] == 0 and kv["blocks_saved"] >= reference["short_prompt_tokens"] // 16, kv
    assert kv["warnings"] == 0
    (model_dir,) = [d for d in root.iterdir() if d.is_dir()]
    return root, model_dir


def damaged_copy(short_store, tmp_path, damage):
    import shutil

    root, model_dir = short_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    blocks = sorted((copy / model_dir.name).glob("*.kvblock"))
    assert len(blocks) >= 20
    for block in blocks:  # every block, so the consumer meets the damage at its first
        damage(block)
    return copy


def consume_short(smollm2_path, store, reference, role="kv_consumer"):
    text, stats = complete_with(smollm2_path, storage_config(store, role), SHORT_PROMPT)
    assert text == reference["short"]
    return stats["kv_transfer"]


def test_corrupted_blocks_are_recomputed(smollm2_path, short_store, reference, tmp_path):
    def flip(block):
        data = bytearray(block.read_bytes())
        data[len(data) // 2] ^= 0x40
        block.write_bytes(bytes(data))
    kv = consume_short(smollm2_path, damaged_copy(short_store, tmp_path, flip), reference)
    assert kv["blocks_loaded"] == 0 and kv["blocks_rejected"] == 1 and "corrupt" in kv["last_warning"], kv


def test_truncated_blocks_are_recomputed(smollm2_path, short_store, reference, tmp_path):
    def truncate(block):
        data = block.read_bytes()
        block.write_bytes(data[:len(data) - 1000])
    kv = consume_short(smollm2_path, damaged_copy(short_store, tmp_path, truncate), reference)
    assert kv["blocks_loaded"] == 0 and kv["blocks_rejected"] == 1 and "truncated" in kv["last_warning"], kv


def test_one_damaged_block_midway_loads_the_blocks_before_it(smollm2_path, short_store, reference, tmp_path):
    """The consumer loads blocks in order up to the damaged one; kv_both then
    recomputes the rest and replaces the damaged record."""
    import shutil

    root, model_dir = short_store
    store = tmp_path / "store"
    shutil.copytree(root, store)  # keeps the mtimes: the producer wrote the blocks in chain order
    blocks = sorted((store / model_dir.name).glob("*.kvblock"), key=lambda p: p.stat().st_mtime_ns)
    blocks[10].write_bytes(blocks[10].read_bytes()[:100])
    kv = consume_short(smollm2_path, store, reference, role="kv_both")
    assert kv["blocks_loaded"] == 10 and kv["blocks_rejected"] == 1 and kv["blocks_saved"] >= 1, kv
    kv = consume_short(smollm2_path, store, reference)
    assert kv["blocks_loaded"] == (reference["short_prompt_tokens"] - 1) // 16 and kv["blocks_rejected"] == 0, kv


def test_foreign_model_blocks_are_refused(smollm2_path, short_store, reference, tmp_path):
    """Records of another model (the tiny random Llama), planted under the
    names this model looks up, are recognised as foreign."""
    other = tmp_path / "other"
    with Engine.load(str(TINY_LLAMA), max_model_len=256,
                     kv_transfer_config=storage_config(other, "kv_producer")) as engine:
        engine.complete("hello " * 40, SamplingParams.greedy(max_tokens=2))
    foreign = sorted(next(d for d in other.iterdir() if d.is_dir()).glob("*.kvblock"))[0].read_bytes()
    kv = consume_short(smollm2_path, damaged_copy(short_store, tmp_path, lambda b: b.write_bytes(foreign)), reference)
    assert kv["blocks_loaded"] == 0 and kv["blocks_rejected"] == 1 and "foreign" in kv["last_warning"], kv


def test_another_model_never_reads_this_models_blocks(short_store):
    """The fingerprint names each model's namespace: the tiny model, on the
    same store, finds nothing of SmolLM2's."""
    root, _ = short_store
    with Engine.load(str(TINY_LLAMA), max_model_len=256,
                     kv_transfer_config=storage_config(root, "kv_consumer")) as engine:
        engine.complete(SHORT_PROMPT[:200], SamplingParams.greedy(max_tokens=2))
        kv = engine.stats()["kv_transfer"]
    assert kv["blocks_loaded"] == 0 and kv["blocks_rejected"] == 0, kv


def test_unwritable_directory_degrades_to_recompute(smollm2_path, reference, tmp_path):
    # Under a regular file: unwritable even for root (permission bits are not).
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    text, stats = complete_with(smollm2_path, storage_config(blocker / "store", "kv_both"), SHORT_PROMPT)
    assert text == reference["short"]
    kv = stats["kv_transfer"]
    assert kv["blocks_saved"] == 0 and kv["warnings"] >= 1 and "cannot create" in kv["last_warning"], kv
    assert kv["load_misses"] == 1


def test_unreachable_redis_degrades_to_recompute(smollm2_path, reference):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text, stats = complete_with(smollm2_path, redis_config(f"redis://127.0.0.1:{port}", "kv_both"), SHORT_PROMPT)
    assert text == reference["short"]
    kv = stats["kv_transfer"]
    assert kv["blocks_loaded"] == 0 and kv["warnings"] >= 1 and "Redis" in kv["last_warning"], kv


@pytest.mark.timeout(900)
def test_producer_killed_mid_write_leaves_the_store_usable(smollm2_path, reference, prompt_file, tmp_path):
    process = subprocess.Popen([sys.executable, str(RUNNER), str(smollm2_path),
                                json.dumps(storage_config(tmp_path, "kv_producer")), str(prompt_file),
                                str(MAX_TOKENS), str(MAX_MODEL_LEN)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while not list(tmp_path.glob("*/*.kvblock")):  # its first blocks are being written
            assert process.poll() is None and time.monotonic() < deadline, "the producer wrote nothing"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    # A temporary file of a write the kill cut short, as it would be left.
    model_dir = next(d for d in tmp_path.iterdir() if d.is_dir())
    (model_dir / ".0123456789abcdef.tmp.1.2.3").write_bytes(b"VLLMKVB\0 half a block")
    consumer = run_engine_process(smollm2_path, storage_config(tmp_path, "kv_both"), prompt_file)
    assert consumer["text"] == reference["long"]
    kv = consumer["stats"]["kv_transfer"]
    assert kv["blocks_rejected"] == 0 and kv["warnings"] == 0, kv
    assert kv["blocks_loaded"] + kv["blocks_saved"] >= consumer["prompt_tokens"] // 16, kv


# -- configuration ---------------------------------------------------------------------------

BAD_CONFIGS = [
    ({"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_connector_extra_config": {}},
     "unknown kv_connector 'NixlConnector'"),
    ({"kv_connector": "SharedStorageConnector", "kv_role": "kv_sender",
      "kv_connector_extra_config": {"shared_storage_path": "/tmp/x"}}, "unknown kv_role 'kv_sender'"),
    ({"kv_connector": "SharedStorageConnector", "kv_connector_extra_config": {"shared_storage_path": "/tmp/x"}},
     "'kv_role' is required"),
    ({"kv_connector": "SharedStorageConnector", "kv_role": "kv_both"}, "'kv_connector_extra_config' is required"),
    ({"kv_connector": "SharedStorageConnector", "kv_role": "kv_both", "kv_connector_extra_config": {}},
     "'shared_storage_path' is required"),
    ({"kv_connector": "RedisConnector", "kv_role": "kv_both", "kv_connector_extra_config": {}}, "'url' is required"),
    ({"kv_connector": "RedisConnector", "kv_role": "kv_both", "kv_connector_extra_config": {"url": "rediss://h"}},
     "TLS"),
    ({"kv_connector": "SharedStorageConnector", "kv_role": "kv_both", "kv_buffer_size": 1,
      "kv_connector_extra_config": {"shared_storage_path": "/tmp/x"}}, "'kv_buffer_size' is not supported"),
]


@pytest.mark.parametrize("config, message", BAD_CONFIGS, ids=[m for _, m in BAD_CONFIGS])
def test_bad_configs_are_refused_at_load(smollm2_path, config, message):
    with pytest.raises(InvalidArgumentError, match="kv_transfer_config") as info:
        Engine.load(smollm2_path, max_model_len=128, kv_transfer_config=config)
    assert message in str(info.value)


def test_loading_roles_need_prefix_caching(smollm2_path, tmp_path):
    from vllm_cpp import Toggle

    with pytest.raises(InvalidArgumentError, match="prefix caching"):
        Engine.load(smollm2_path, max_model_len=128, prefix_caching=Toggle.OFF,
                    kv_transfer_config=storage_config(tmp_path, "kv_consumer"))
    # A producer does not load: it works without the prefix cache.
    with Engine.load(smollm2_path, max_model_len=128, prefix_caching=Toggle.OFF,
                     kv_transfer_config=storage_config(tmp_path, "kv_producer")) as engine:
        assert engine.complete("Hi " * 40, SamplingParams.greedy(max_tokens=2)).completion_tokens >= 1


def test_stats_without_a_connector_are_null(engine):
    assert engine.stats()["kv_transfer"] is None
