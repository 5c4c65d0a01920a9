"""A Ray Serve request router with prefix-cache affinity, written on
Serve's public ``ray.serve.request_router.RequestRouter`` interface.

Ray's own ``PrefixCacheAffinityRouter`` does not import without vLLM
(Ray Serve LLM's request models import vLLM or SGLang at import time), so
this one is ours. The idea is the same: a request goes where its prompt's
prefix was sent before, because that replica's prefix cache holds the KV
of it; load comes first when it is uneven.

- The prompt's leading text (``ForwardedRequest.routing_text``, carried by
  the ingress) is cut into ``chunk_chars`` pieces, each named by a hash
  chained over the pieces before it, like the engine's block hashes.
- ``_owner`` maps a chain hash to the replica that last got a request with
  that prefix (bounded: the least recently used entries go first).
- ``choose_replicas`` ranks first the owner of the longest known prefix,
  when at least ``min_match_chars`` of text match and its queue is at most
  ``imbalanced_threshold`` longer than the shortest; the rest follow as a
  second rank (Serve takes the least loaded of a rank that has room). A
  request with no known prefix goes to the replicas owning the fewest
  prefixes, so new system prompts spread over the replicas.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, OrderedDict
from typing import Dict, List, Optional

from ray.serve.request_router import PendingRequest, ReplicaID, ReplicaResult, RequestRouter, RunningReplica


def chain_hashes(text: str, chunk_chars: int) -> List[bytes]:
    """One hash per whole ``chunk_chars`` piece of ``text``, each over the
    previous hash and its piece (so equal hashes mean equal prefixes)."""
    hashes, previous = [], b""
    data = text.encode("utf-8", "surrogatepass")
    for start in range(0, len(data) - chunk_chars + 1, chunk_chars):
        previous = hashlib.blake2b(previous + data[start:start + chunk_chars], digest_size=16).digest()
        hashes.append(previous)
    return hashes


def routing_text_of(pending_request: Optional[PendingRequest]) -> str:
    if pending_request is None or not pending_request.args:
        return ""
    return getattr(pending_request.args[0], "routing_text", "") or ""


class PrefixAffinityRouter(RequestRouter):
    def initialize_state(self, chunk_chars: int = 128, min_match_chars: int = 256, imbalanced_threshold: int = 8,
                         max_entries: int = 200_000, **kwargs) -> None:
        """``request_router_kwargs`` of the deployment's
        ``request_router_config`` (numbers in characters of prompt text)."""
        self._chunk_chars = max(16, int(chunk_chars))
        self._min_match_chunks = max(1, int(min_match_chars) // self._chunk_chars)
        self._imbalanced_threshold = int(imbalanced_threshold)
        self._max_entries = int(max_entries)
        self._owner: "OrderedDict[bytes, ReplicaID]" = OrderedDict()
        self._owned: Counter = Counter()  # replica -> prefix entries it owns
        self._hashes_of: Dict[str, List[bytes]] = {}  # request id -> its hashes, until routed

    def _queue_len(self, replica: RunningReplica) -> int:
        known = self.replica_queue_len_cache.get(replica.replica_id)
        return known if known is not None else 0

    def _hashes(self, pending_request: Optional[PendingRequest]) -> List[bytes]:
        if pending_request is None:
            return []
        request_id = pending_request.metadata.internal_request_id
        if request_id not in self._hashes_of:
            if len(self._hashes_of) >= 4096:  # requests cancelled before they were routed
                self._hashes_of.pop(next(iter(self._hashes_of)))
            self._hashes_of[request_id] = chain_hashes(routing_text_of(pending_request), self._chunk_chars)
        return self._hashes_of[request_id]

    async def choose_replicas(self, candidate_replicas: List[RunningReplica],
                              pending_request: Optional[PendingRequest] = None) -> List[List[RunningReplica]]:
        if not candidate_replicas:
            return []
        by_id = {replica.replica_id: replica for replica in candidate_replicas}
        hashes = self._hashes(pending_request)
        shortest = min(self._queue_len(replica) for replica in candidate_replicas)
        for depth in range(len(hashes), self._min_match_chunks - 1, -1):
            owner = by_id.get(self._owner.get(hashes[depth - 1])) if depth else None
            if owner is not None and self._queue_len(owner) - shortest <= self._imbalanced_threshold:
                return [[owner], [replica for replica in candidate_replicas if replica is not owner]]
        if hashes:
            fewest = min(self._owned[replica.replica_id] for replica in candidate_replicas)
            spread = [replica for replica in candidate_replicas if self._owned[replica.replica_id] == fewest]
            rest = [replica for replica in candidate_replicas if replica not in spread]
            return [spread, rest] if rest else [spread]
        # No prompt text (GET routes, token prompts): two random choices, as Serve's default.
        return [random.sample(candidate_replicas, min(2, len(candidate_replicas)))]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID,
                          result: ReplicaResult) -> None:
        hashes = self._hashes_of.pop(pending_request.metadata.internal_request_id, None)
        for digest in hashes or ():
            previous = self._owner.pop(digest, None)
            if previous is not None:
                self._owned[previous] -= 1
            self._owner[digest] = replica_id
            self._owned[replica_id] += 1
        while len(self._owner) > self._max_entries:
            _, evicted = self._owner.popitem(last=False)
            self._owned[evicted] -= 1

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        super().on_replica_actor_died(replica_id)
        for digest in [digest for digest, owner in self._owner.items() if owner == replica_id]:
            del self._owner[digest]
        self._owned.pop(replica_id, None)
