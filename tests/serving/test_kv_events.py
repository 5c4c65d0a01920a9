"""KV cache events as vLLM publishes them (vllm_cpp/kv_events): a ZMQ
subscriber decodes our batches with vLLM's schema, its block hashes for a
known token sequence are the ones vLLM's algorithm gives, prefix-cache
stores, hits and evictions show up as the matching events, the replay
socket returns missed batches, and ``vllm-cpp serve --kv-events-config``
publishes from a real server.

vLLM's definitions are rebuilt here, independently of the code under test:
the msgspec structs of vllm/distributed/kv_events.py (tagged-map events in
an array-like batch, as vLLM >= 0.2x publishes them; unknown fields refused,
so nothing extra slips through), and hash_block_tokens of
vllm/v1/core/kv_cache_utils.py with cbor2 (sha256_cbor) and pickle
(sha256). vLLM itself does not install here (it needs torch)."""

import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any, List, Optional, Tuple, Union

import pytest

msgspec = pytest.importorskip("msgspec", reason="vLLM's event schema is rebuilt with msgspec (test extra)")
cbor2 = pytest.importorskip("cbor2", reason="vLLM's sha256_cbor is rebuilt with cbor2 (test extra)")
zmq = pytest.importorskip("zmq", reason="the publisher needs the kv-events extra (pyzmq)")
pytest.importorskip("msgpack", reason="the publisher needs the kv-events extra (msgpack)")

from cli_harness import cli_path, start_server  # noqa: E402
from vllm_cpp import Engine, InvalidArgumentError, SamplingParams, Toggle  # noqa: E402
from vllm_cpp.kv_events import KVEventsConfig, KVEventsConfigError, VllmBlockHasher, parse_kv_events_config  # noqa: E402
from vllm_cpp.kv_events.block_hashes import cbor_canonical  # noqa: E402
from vllm_cpp.kv_events.publisher import KvEventsPump  # noqa: E402

pytestmark = pytest.mark.timeout(300)

BLOCK_SIZE = 16
SEED = "0"
#: A prompt of more than one block, new to the cache for each number.
WARM_UP = "Warming up the subscription, attempt number %d, with enough words to fill a block."


# ---- vLLM's schema (vllm/distributed/kv_events.py), rebuilt ------------------
ExternalBlockHash = Union[int, bytes]


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, forbid_unknown_fields=True):
    ts: float
    events: List[Any]
    data_parallel_rank: Optional[int] = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True, forbid_unknown_fields=True):
    pass


class BlockStored(KVCacheEvent):
    block_hashes: List[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: List[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[List[Optional[Tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class BlockRemoved(KVCacheEvent):
    block_hashes: List[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: List[Union[BlockStored, BlockRemoved, AllBlocksCleared]]


DECODER = msgspec.msgpack.Decoder(type=KVEventBatch)


# ---- vLLM's block hashes (vllm/v1/core/kv_cache_utils.py), rebuilt -----------
def vllm_sha256_cbor(value) -> bytes:
    return hashlib.sha256(cbor2.dumps(value, canonical=True)).digest()


def vllm_sha256(value) -> bytes:
    return hashlib.sha256(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def vllm_block_hashes(hash_fn, seed: str, token_ids: List[int], block_size: int) -> List[int]:
    """hash_block_tokens along a request's full blocks, NONE_HASH = hash_fn(seed),
    as events carry them (maybe_convert_block_hash: the low 64 bits)."""
    none_hash = hash_fn(seed)
    parent, out = None, []
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        block = hash_fn((parent or none_hash, tuple(token_ids[start:start + block_size]), None))
        out.append(int.from_bytes(block, "big") & ((1 << 64) - 1))
        parent = block
    return out


# ---- a subscriber ---------------------------------------------------------------
class Subscriber:
    """A SUB socket on the publisher's endpoint: (seq, KVEventBatch) pairs."""

    def __init__(self, endpoint: str, topic: str = ""):
        self.history = []  # every event received
        self.ctx = zmq.Context.instance()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt_string(zmq.SUBSCRIBE, topic)
        self.sub.connect(endpoint)
        self.topic = topic.encode()

    def receive(self, timeout_s: float = 10.0):
        if not self.sub.poll(int(timeout_s * 1000)):
            return None
        topic, seq, payload = self.sub.recv_multipart()
        assert topic == self.topic
        batch = DECODER.decode(payload)
        # Byte for byte what vLLM's own encoder writes for those structs.
        assert msgspec.msgpack.encode(batch) == payload
        return int.from_bytes(seq, "big"), batch

    def events_until(self, predicate, timeout_s: float = 30.0):
        """Every event received until ``predicate(all so far)`` holds."""
        events, deadline = [], time.monotonic() + timeout_s
        while not predicate(events):
            left = deadline - time.monotonic()
            assert left > 0, "events so far: %r" % events
            got = self.receive(left)
            if got is not None:
                events.extend(got[1].events)
                self.history.extend(got[1].events)
        return events

    def wait_until_subscribed(self, run_unique_prompt, attempts: int = 100):
        """A PUB socket drops what it sends before a subscription reaches it:
        run prompts the cache has not seen until their events arrive."""
        for attempt in range(attempts):
            run_unique_prompt(attempt)
            got = self.receive(0.5)
            if got is not None:
                self.history.extend(got[1].events)
                return
        raise AssertionError("no events reached the subscriber")

    def close(self):
        self.sub.close(linger=0)


def stored_hashes(events) -> List[ExternalBlockHash]:
    return [h for e in events if isinstance(e, BlockStored) for h in e.block_hashes]


def removed_hashes(events) -> List[ExternalBlockHash]:
    return [h for e in events if isinstance(e, BlockRemoved) for h in e.block_hashes]


@pytest.fixture(scope="module")
def small_engine(smollm2_path):
    """24 blocks of 16 tokens: a few prompts fill it, so blocks get evicted."""
    with Engine.load(smollm2_path, max_model_len=256, block_size=BLOCK_SIZE, num_blocks=24) as eng:
        yield eng


@pytest.fixture(scope="module")
def pump(small_engine):
    config = KVEventsConfig(enable_kv_cache_events=True, endpoint="tcp://127.0.0.1:*",
                            replay_endpoint="tcp://127.0.0.1:*", topic="kv-events")
    pump = KvEventsPump(small_engine, config, hasher=VllmBlockHasher("sha256_cbor", SEED))
    yield pump
    pump.stop()


@pytest.fixture(scope="module")
def subscriber(pump, small_engine):
    sub = Subscriber(pump.publisher.endpoint, "kv-events")
    sub.wait_until_subscribed(lambda i: run_prompt(small_engine, prompt_ids(small_engine, WARM_UP % i)))
    yield sub
    sub.close()


def prompt_ids(engine, text: str) -> List[int]:
    return engine.tokenize(text)


def run_prompt(engine, ids: List[int]) -> None:
    engine.complete(ids, SamplingParams.greedy(max_tokens=1))


# ---- hashes ---------------------------------------------------------------------
def test_hashes_match_vllms_algorithm_for_known_tokens():
    """Our hasher gives what vLLM's definition gives, for both algorithms,
    and NONE_HASH of seed "0" under sha256_cbor is SHA-256 of CBOR "0" (0x6130)."""
    tokens = list(range(1000, 1000 + 5 * BLOCK_SIZE)) + [7, 8, 9]
    for algo, reference in (("sha256_cbor", vllm_sha256_cbor), ("sha256", vllm_sha256)):
        ours = VllmBlockHasher(algo, SEED)
        parent, chain = None, []
        for start in range(0, len(tokens) - BLOCK_SIZE + 1, BLOCK_SIZE):
            parent = ours.block_hash(parent, tokens[start:start + BLOCK_SIZE])
            chain.append(ours.external(parent))
        assert chain == vllm_block_hashes(reference, SEED, tokens, BLOCK_SIZE), algo
    assert VllmBlockHasher("sha256_cbor", SEED).none_hash == hashlib.sha256(b"\x61\x30").digest()
    assert VllmBlockHasher("sha256_cbor", SEED).none_hash.hex().startswith("4e1195df")


@pytest.mark.parametrize("value", [None, True, False, 0, 23, 24, 255, 256, 65535, 65536, 2**32, 2**64 - 1,
                                   -1, -25, -2**64, b"", b"x" * 300, "", "0", "é" * 40,
                                   (b"\x00" * 32, (1, 2, 151643), None), [], list(range(30))])
def test_canonical_cbor_is_cbor2s(value):
    assert cbor_canonical(value) == cbor2.dumps(value, canonical=True)


def test_bytes_hashes_when_ints_are_off():
    hasher = VllmBlockHasher("sha256", SEED, int_hashes=False)
    block = hasher.block_hash(None, [1] * BLOCK_SIZE)
    assert hasher.external(block) == block and len(block) == 32


def test_translation_of_two_groups_and_orphans():
    """The engine's events for a model with a full and a sliding group,
    interleaved block by block: one BlockStored per group and chain, a
    removal closing its group's run, a block of an unknown parent skipped."""
    from vllm_cpp.kv_events import EventTranslator

    hasher = VllmBlockHasher("sha256_cbor", SEED)
    groups = [{"kind": "full_attention", "sliding_window": 0}, {"kind": "sliding_window", "sliding_window": 32}]
    translator = EventTranslator(hasher, 2, groups)
    a, b, c = [1, 2], [3, 4], [5, 6]
    stored = lambda g, h, parent, tokens: {"type": "stored", "group": g, "hash": h, "parent": parent, "tokens": tokens}
    events = translator.translate([stored(0, 11, None, a), stored(1, 11, None, a), stored(0, 12, 11, b),
                                   stored(1, 12, 11, b), {"type": "removed", "group": 1, "hash": 11},
                                   stored(1, 13, 12, c), stored(0, 13, 12, c), stored(0, 99, 98, a)])
    chain = vllm_block_hashes(vllm_sha256_cbor, SEED, a + b + c, 2)
    assert [(e["type"], e.get("group_idx"), e["block_hashes"]) for e in events] == [
        ("BlockStored", 0, chain), ("BlockStored", 1, chain[:2]), ("BlockRemoved", 1, chain[:1]),
        ("BlockStored", 1, chain[2:])]
    assert events[0]["token_ids"] == a + b + c and events[0]["extra_keys"] == [None] * 3
    assert events[1]["kv_cache_spec_kind"] == "sliding_window" and events[1]["kv_cache_spec_sliding_window"] == 32
    assert events[3]["parent_block_hash"] == chain[1]
    assert translator.orphans == 1 and translator.known_blocks == 3
    # Every group gives a block back: it is forgotten.
    translator.translate([{"type": "removed", "group": 0, "hash": 11}])
    assert translator.known_blocks == 2


# ---- events from a real engine ---------------------------------------------------
def test_stored_events_carry_vllms_hashes_for_the_prompt(small_engine, pump, subscriber):
    ids = prompt_ids(small_engine, "Kubernetes routes requests by prefix affinity. " * 6)
    full = len(ids) // BLOCK_SIZE
    expected = vllm_block_hashes(vllm_sha256_cbor, SEED, ids, BLOCK_SIZE)[:full]
    run_prompt(small_engine, ids)
    events = subscriber.events_until(lambda evs: set(expected) <= set(stored_hashes(evs)))
    stored = [e for e in events if isinstance(e, BlockStored)]
    first = next(e for e in stored if e.block_hashes[0] == expected[0])
    assert first.parent_block_hash is None and first.block_size == BLOCK_SIZE
    assert first.medium == "CPU" and first.lora_id is None and first.lora_name is None
    assert first.group_idx == 0 and first.kv_cache_spec_kind == "full_attention"
    # One BlockStored per run of a chain: tokens and hashes line up with the prompt's.
    n = len(first.block_hashes)
    assert first.block_hashes == expected[:n] and first.token_ids == ids[:n * BLOCK_SIZE]
    assert first.extra_keys == [None] * n


def test_a_prefix_hit_stores_only_the_new_blocks(small_engine, pump, subscriber):
    shared = prompt_ids(small_engine, "A shared system prompt about prefix caching in routers. " * 8)
    shared = shared[:3 * BLOCK_SIZE]
    assert len(shared) == 3 * BLOCK_SIZE
    first = shared + prompt_ids(small_engine, " First question, about queues and utilisation?") * 2
    second = shared + prompt_ids(small_engine, " Second question, about evictions and replays!") * 2
    run_prompt(small_engine, first)
    expected_first = vllm_block_hashes(vllm_sha256_cbor, SEED, first, BLOCK_SIZE)
    subscriber.events_until(lambda evs: set(expected_first) <= set(stored_hashes(evs)))
    hits_before = small_engine.stats()["prefix_cache_hits"]
    run_prompt(small_engine, second)
    expected_second = vllm_block_hashes(vllm_sha256_cbor, SEED, second, BLOCK_SIZE)
    events = subscriber.events_until(lambda evs: set(expected_second[3:]) <= set(stored_hashes(evs)))
    assert small_engine.stats()["prefix_cache_hits"] - hits_before >= 3 * BLOCK_SIZE
    # The shared blocks were hits: not stored again; the first new block's parent is the last shared one.
    assert not set(expected_second[:3]) & set(stored_hashes(events))
    new = next(e for e in events if isinstance(e, BlockStored) and e.block_hashes[0] == expected_second[3])
    assert new.parent_block_hash == expected_second[2]


def test_evictions_remove_what_was_stored(small_engine, pump, subscriber):
    """Filling the 24-block cache with other prompts evicts an earlier
    prompt's blocks: BlockRemoved names exactly hashes stored before."""
    victim = prompt_ids(small_engine, "This prompt will be evicted from the cache soon enough. " * 4)
    run_prompt(small_engine, victim)
    victim_hashes = vllm_block_hashes(vllm_sha256_cbor, SEED, victim, BLOCK_SIZE)[:len(victim) // BLOCK_SIZE]
    seen = subscriber.events_until(lambda evs: set(victim_hashes) <= set(stored_hashes(evs)))
    for i in range(6):
        run_prompt(small_engine, prompt_ids(small_engine, ("Filler number %d pushes blocks out. " % i) * 8))
    seen += subscriber.events_until(lambda evs: set(victim_hashes) & set(removed_hashes(evs)))
    removed = removed_hashes(seen)
    assert set(victim_hashes) & set(removed)
    # Only what was stored before is removed (the subscriber has seen every event since the module began).
    assert set(removed_hashes(subscriber.history)) <= set(stored_hashes(subscriber.history))
    assert all(isinstance(e, (BlockStored, BlockRemoved)) for e in seen)


def test_replay_returns_missed_batches(small_engine, pump):
    """A client that missed batches asks the replay socket for them from a
    sequence number: every kept batch from there, then the end marker."""
    ids = prompt_ids(small_engine, "Nobody is subscribed while this prompt runs, so replay it. " * 3)
    run_prompt(small_engine, ids)
    expected = vllm_block_hashes(vllm_sha256_cbor, SEED, ids, BLOCK_SIZE)[:len(ids) // BLOCK_SIZE]
    ctx = zmq.Context.instance()
    replay = ctx.socket(zmq.DEALER)
    replay.connect(pump.publisher.replay_endpoint)
    try:
        deadline = time.monotonic() + 30
        while True:
            replay.send_multipart((b"", (0).to_bytes(8, "big")))
            batches = []
            while True:
                assert replay.poll(10_000), "no answer from the replay socket"
                _, seq, payload = replay.recv_multipart()
                if seq == (-1).to_bytes(8, "big", signed=True):
                    assert payload == b""
                    break
                batches.append((int.from_bytes(seq, "big"), DECODER.decode(payload)))
            events = [e for _, b in batches for e in b.events]
            if set(expected) <= set(stored_hashes(events)) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        seqs = [s for s, _ in batches]
        assert seqs == list(range(len(seqs))) and seqs[0] == 0
        assert isinstance(batches[0][1].events[0], AllBlocksCleared)  # the pump's start
        assert set(expected) <= set(stored_hashes(events))
        assert all(b.data_parallel_rank == 0 for _, b in batches)
        # From a later sequence number: only the batches from there on.
        replay.send_multipart((b"", seqs[-1].to_bytes(8, "big")))
        _, seq, _ = replay.recv_multipart()
        assert int.from_bytes(seq, "big") == seqs[-1]
        assert replay.recv_multipart()[1] == (-1).to_bytes(8, "big", signed=True)
    finally:
        replay.close(linger=0)


def test_a_bad_replay_request_is_ignored(small_engine, pump):
    ctx = zmq.Context.instance()
    replay = ctx.socket(zmq.DEALER)
    replay.connect(pump.publisher.replay_endpoint)
    try:
        replay.send_multipart((b"", b"short"))
        replay.send_multipart((b"", (10**9).to_bytes(8, "big")))
        assert replay.poll(10_000)
        assert replay.recv_multipart()[1] == (-1).to_bytes(8, "big", signed=True)
    finally:
        replay.close(linger=0)
    run_prompt(small_engine, prompt_ids(small_engine, "still serving"))


# ---- configuration ----------------------------------------------------------------
def test_config_spelled_as_vllms():
    config = parse_kv_events_config('{"enable_kv_cache_events": true, "publisher": "zmq", '
                                    '"endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558", '
                                    '"buffer_steps": 100, "hwm": 1000, "max_queue_size": 10, "topic": "kv"}')
    assert config.active and config.replay_endpoint == "tcp://*:5558" and config.topic == "kv"
    assert parse_kv_events_config('{"enable_kv_cache_events": true}').resolved_publisher == "zmq"
    assert not parse_kv_events_config("{}").active
    assert not parse_kv_events_config('{"enable_kv_cache_events": true, "publisher": "null"}').active


@pytest.mark.parametrize("text,message", [
    ("nope", "not valid JSON"), ("[]", "must be a JSON object"),
    ('{"enable_kv_cache_event": true}', "unknown key 'enable_kv_cache_event'"),
    ('{"enable_kv_cache_events": 1}', "'enable_kv_cache_events' must be bool"),
    ('{"buffer_steps": true}', "'buffer_steps' must be int"),
    ('{"publisher": "kafka"}', "unknown publisher 'kafka'"),
    ('{"hwm": 0}', "'hwm' must be >= 1"), ('{"endpoint": "5557"}', "ZMQ endpoint")])
def test_bad_configs_are_refused_by_name(text, message):
    with pytest.raises(KVEventsConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_kv_events_config(text)


def test_events_need_prefix_caching(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128, prefix_caching=Toggle.OFF) as eng:
        with pytest.raises(InvalidArgumentError, match="KV cache events need prefix caching"):
            eng.kv_events_enable()
        assert eng.complete("still works", SamplingParams.greedy(max_tokens=2)).text is not None


def test_take_refuses_a_negative_timeout(small_engine):
    with pytest.raises(InvalidArgumentError, match="timeout_ms must be >= 0"):
        small_engine.kv_events_take(-1)


# ---- the server ---------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_publishes_kv_events(smollm2_path, tmp_path):
    """``vllm-cpp serve --kv-events-config`` (vLLM's JSON): a completion's
    blocks arrive as BlockStored with sha256_cbor hashes under
    PYTHONHASHSEED; SIGTERM ends with AllBlocksCleared."""
    port = free_port()
    # A wildcard host: the publisher binds (vLLM's rule; a plain host means connect).
    config = json.dumps({"enable_kv_cache_events": True, "endpoint": "tcp://*:%d" % port, "topic": "kv-events"})
    env = dict(os.environ, PYTHONHASHSEED=SEED)
    cli = cli_path()
    sub = Subscriber("tcp://127.0.0.1:%d" % port, "kv-events")
    server = subprocess.Popen([cli, "serve", smollm2_path, "--port", "0", "--max-model-len", "256",
                               "--served-model-name", "smol", "--block-size", str(BLOCK_SIZE), "--kv-events-config", config,
                               "--prefix-caching-hash-algo", "sha256_cbor"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        assert "serving" in line, line + server.stderr.read()
        url = "http://127.0.0.1:%s" % line.rsplit(":", 1)[1].strip()

        def complete(prompt):
            body = json.dumps({"model": "smol", "prompt": prompt, "max_tokens": 2, "temperature": 0}).encode()
            request = urllib.request.Request(url + "/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as response:
                assert json.loads(response.read())["usage"]["completion_tokens"] == 2

        sub.wait_until_subscribed(lambda i: complete(WARM_UP % i))
        prompt = "Routers read these events to find cached prefixes. " * 4
        request = urllib.request.Request(url + "/tokenize", data=json.dumps({"prompt": prompt}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            ids = json.loads(response.read())["tokens"]
        complete(prompt)
        expected = vllm_block_hashes(vllm_sha256_cbor, SEED, ids, BLOCK_SIZE)[:len(ids) // BLOCK_SIZE]
        sub.events_until(lambda evs: set(expected) <= set(stored_hashes(evs)))
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0, server.stderr.read()
        sub.events_until(lambda evs: any(isinstance(e, AllBlocksCleared) for e in evs), timeout_s=10)
    finally:
        sub.close()
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize("flags,message", [
    (["--kv-events-config", '{"enable_kv_cache_events": true, "bogus": 1}'], "unknown key 'bogus'"),
    (["--kv-events-config", '{"enable_kv_cache_events": true}', "--prefix-caching-hash-algo", "xxhash"],
     "xxhash: not supported"),
    (["--kv-events-config", '{"enable_kv_cache_events": true}', "--no-enable-prefix-caching"],
     "KV cache events need prefix caching")])
def test_serve_refuses_bad_event_flags(smollm2_path, flags, message):
    result = subprocess.run([cli_path(), "serve", smollm2_path, "--port", "0", "--max-model-len", "128", *flags],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 2 and message in result.stderr, result.stderr
