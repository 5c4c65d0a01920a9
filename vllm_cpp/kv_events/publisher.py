"""vLLM's ZmqEventPublisher protocol (vllm/distributed/kv_events.py), written
here for the engine's KV cache events, and the thread that feeds it.

Wire format, as vLLM's: each batch is one PUB message of three frames,
``(topic, seq, payload)``: the topic's UTF-8 bytes, the batch's sequence
number (8 bytes, big-endian, from 0), and the msgpack of ``KVEventBatch``,
the array ``[ts, [event, ...], data_parallel_rank]`` whose events are
tagged maps (BlockStored / BlockRemoved / AllBlocksCleared). The last
``buffer_steps`` batches are kept for the replay socket (ROUTER): a client
sends ``(b"", start_seq as 8 bytes big-endian)`` and gets every kept batch
from start_seq on as ``(b"", seq, payload)``, then ``(b"", -1 as 8 signed
bytes, b"")``.

One thread owns both sockets (ZMQ sockets are not thread-safe): it waits
for the engine's events (vllm_engine_kv_events_take, the GIL released),
publishes them as one batch, and answers replay requests in between.
ZMQ lives here, not in libvllm: the library stays free of a networking
dependency every embedder would have to ship, and the hashes vLLM's
indexers expect (pickle or CBOR, SHA-256) are Python's to compute.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Tuple

from .block_hashes import VllmBlockHasher
from .config import KVEventsConfig
from .translate import EventTranslator, all_blocks_cleared

logger = logging.getLogger("vllm_cpp.kv_events")

END_SEQ = (-1).to_bytes(8, "big", signed=True)
#: How long one wait for the engine's events lasts: also the longest a replay request waits.
_TAKE_TIMEOUT_MS = 50


def _binds(endpoint: str) -> bool:
    # vLLM's rule: bind a wildcard or local endpoint, connect to anything else.
    return "*" in endpoint or "::" in endpoint or endpoint.startswith(("ipc://", "inproc://"))


class ZmqEventPublisher:
    """The PUB socket, the replay ROUTER socket and the replay buffer. Used
    by one thread (KvEventsPump's)."""

    def __init__(self, config: KVEventsConfig, data_parallel_rank: int = 0):
        import msgpack
        import zmq

        self._zmq = zmq
        self._packb = msgpack.Packer(use_bin_type=True).pack
        self._rank = data_parallel_rank
        self._topic = config.topic.encode("utf-8")
        self._buffer: Deque[Tuple[int, bytes]] = collections.deque(maxlen=config.buffer_steps)
        self._next_seq = 0
        self._ctx = zmq.Context.instance()
        self._pub = self._ctx.socket(zmq.PUB)
        self._replay = None
        opening = config.endpoint
        try:
            self._pub.set_hwm(config.hwm)
            if _binds(config.endpoint):
                self._pub.bind(config.endpoint)
            else:
                self._pub.connect(config.endpoint)
            if config.replay_endpoint is not None:
                opening = config.replay_endpoint
                self._replay = self._ctx.socket(zmq.ROUTER)
                self._replay.bind(config.replay_endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise OSError("--kv-events-config: cannot open %s: %s" % (opening, exc)) from None

    @property
    def endpoint(self) -> str:
        return self._pub.getsockopt_string(self._zmq.LAST_ENDPOINT)

    @property
    def replay_endpoint(self) -> Optional[str]:
        return None if self._replay is None else self._replay.getsockopt_string(self._zmq.LAST_ENDPOINT)

    def publish(self, events: List[Dict[str, Any]]) -> int:
        """Sends one KVEventBatch; returns its sequence number."""
        seq = self._next_seq
        self._next_seq += 1
        payload = self._packb([time.time(), events, self._rank])
        self._pub.send_multipart((self._topic, seq.to_bytes(8, "big"), payload))
        self._buffer.append((seq, payload))
        return seq

    def serve_replays(self) -> None:
        """Answers the replay requests waiting (none without a replay socket)."""
        while self._replay is not None and self._replay.poll(0):
            frames = self._replay.recv_multipart()
            if len(frames) != 3 or len(frames[2]) != 8:
                logger.warning("KV events: a replay request of %d frames ignored (expected an identity, "
                               "an empty frame and an 8-byte sequence number)", len(frames))
                continue
            client, _, start = frames
            start_seq = int.from_bytes(start, "big")
            for seq, payload in self._buffer:
                if seq >= start_seq:
                    self._replay.send_multipart((client, b"", seq.to_bytes(8, "big"), payload))
            self._replay.send_multipart((client, b"", END_SEQ, b""))

    def close(self) -> None:
        self._pub.close(linger=0)
        if self._replay is not None:
            self._replay.close(linger=0)


class KvEventsPump:
    """Publishes an engine's KV cache events until stopped: started after
    the engine is loaded and before requests arrive, stopped before the
    engine is closed (a take that finds it closed also ends it)."""

    def __init__(self, engine, config: KVEventsConfig, hash_algo: str = "sha256",
                 hasher: Optional[VllmBlockHasher] = None):
        self._engine = engine
        hasher = hasher or VllmBlockHasher.from_environment(hash_algo)
        stats = engine.stats()
        self.translator = EventTranslator(hasher, stats["block_size"], stats["kv_cache_groups"])
        self.publisher = ZmqEventPublisher(config)
        try:
            engine.kv_events_enable()  # InvalidArgumentError when prefix caching is off
        except BaseException:
            self.publisher.close()
            raise
        self.dropped = 0
        self._stop = threading.Event()
        # A fresh cache: whatever an indexer remembers from this endpoint's
        # previous process is gone (it is also sequence 0 for a replay).
        self.publisher.publish([all_blocks_cleared()])
        self._thread = threading.Thread(target=self._run, name="vllm-cpp-kv-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._pump()
        except Exception:  # the server goes on; routers lose this server's exact prefix view
            logger.exception("KV events: the publisher stopped")

    def _pump(self) -> None:
        from ..errors import VllmError

        while not self._stop.is_set():
            try:
                batch = self._engine.kv_events_take(_TAKE_TIMEOUT_MS)
            except VllmError:
                if self._engine.closed:
                    return
                raise
            if batch["dropped"]:
                self.dropped += batch["dropped"]
                logger.warning("KV events: the engine dropped %d events nobody took in time; indexers "
                               "now miss some of this server's blocks", batch["dropped"])
            events = self.translator.translate(batch["events"])
            if events:
                self.publisher.publish(events)
            self.publisher.serve_replays()

    def stop(self) -> None:
        """Ends the thread, tells subscribers the cache is gone
        (AllBlocksCleared) and closes the sockets. Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        try:
            self.publisher.publish([all_blocks_cleared()])
        finally:
            self.publisher.close()
