"""The engine's KV cache events (vllm.h's vllm_engine_kv_events_take: blocks
named by the prefix cache's own 64-bit chain hashes, stored blocks with their
tokens) turned into vLLM's events (vllm/distributed/kv_events.py): BlockStored
with vLLM's block hashes, BlockRemoved, as msgspec encodes them (tagged maps,
"type" first, fields in declaration order, defaults left out).

A stored block's vLLM hash needs its parent's, so the hashes of the blocks the
engine holds are kept by engine hash (one entry per hash, counted over the KV
cache groups holding it) until the last group evicts them. The engine reports
a block's parent before the block (a request holds its whole prefix while its
blocks are cached), so a parent is always known unless recording started
after the parent was cached; such blocks are skipped and counted
(``orphans``). Consecutive blocks of one chain make one BlockStored, as
vLLM's scheduler reports a request's new blocks."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from .block_hashes import VllmBlockHasher

#: Where the blocks live: vLLM says "GPU" for its (device) KV cache; ours is in host memory.
MEDIUM_CPU = "CPU"


class EventTranslator:
    def __init__(self, hasher: VllmBlockHasher, block_size: int, groups: Sequence[Dict[str, Any]],
                 medium: str = MEDIUM_CPU):
        self._hasher = hasher
        self._block_size = block_size
        self._groups = list(groups)  # Engine.stats()["kv_cache_groups"]: kind, sliding_window
        self._medium = medium
        self._known: Dict[int, List[Any]] = {}  # engine hash -> [vLLM hash bytes, groups holding it]
        self.orphans = 0

    @property
    def known_blocks(self) -> int:
        return len(self._known)

    def translate(self, engine_events: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """vLLM's events (dicts in msgspec's field order) for a batch of the engine's."""
        out: List[Dict[str, Any]] = []
        # Per group, the BlockStored a next block of the same chain extends, and the
        # engine hash it ends with; a BlockRemoved of that group closes it (order kept).
        open_stored: Dict[int, Tuple[Dict[str, Any], int]] = {}
        for event in engine_events:
            if event["type"] == "stored":
                self._stored(event, out, open_stored)
            else:
                open_stored.pop(event["group"], None)
                self._removed(event, out)
        return out

    def _stored(self, event: Dict[str, Any], out: List[Dict[str, Any]],
                open_stored: Dict[int, Tuple[Dict[str, Any], int]]) -> None:
        engine_hash, parent, group = event["hash"], event["parent"], event["group"]
        entry = self._known.get(engine_hash)
        if entry is not None:
            entry[1] += 1
            block_hash = entry[0]
        else:
            parent_hash = None
            if parent is not None:
                parent_entry = self._known.get(parent)
                if parent_entry is None:
                    self.orphans += 1
                    return
                parent_hash = parent_entry[0]
            block_hash = self._hasher.block_hash(parent_hash, event["tokens"])
            self._known[engine_hash] = [block_hash, 1]
        external = self._hasher.external(block_hash)
        extended = open_stored.get(group)
        if extended is not None and parent is not None and extended[1] == parent:
            stored = extended[0]
            stored["block_hashes"].append(external)
            stored["token_ids"].extend(event["tokens"])
            stored["extra_keys"].append(None)
            open_stored[group] = (stored, engine_hash)
            return
        parent_external = None
        if parent is not None:
            parent_external = self._hasher.external(self._known[parent][0])
        stored = {"type": "BlockStored", "block_hashes": [external], "parent_block_hash": parent_external,
                  "token_ids": list(event["tokens"]), "block_size": self._block_size, "lora_id": None,
                  "medium": self._medium, "lora_name": None, "extra_keys": [None], "group_idx": group}
        stored.update(self._group_spec(group))
        out.append(stored)
        open_stored[group] = (stored, engine_hash)

    def _removed(self, event: Dict[str, Any], out: List[Dict[str, Any]]) -> None:
        entry = self._known.get(event["hash"])
        if entry is None:
            return  # its store was skipped (an orphan) or recorded before events were on
        external = self._hasher.external(entry[0])
        entry[1] -= 1
        if entry[1] == 0:
            del self._known[event["hash"]]
        previous = out[-1] if out else None
        if previous is not None and previous["type"] == "BlockRemoved" and previous["group_idx"] == event["group"]:
            previous["block_hashes"].append(external)
            return
        out.append({"type": "BlockRemoved", "block_hashes": [external], "medium": self._medium,
                    "group_idx": event["group"]})

    def _group_spec(self, group: int) -> Dict[str, Any]:
        # vLLM's kv_cache_spec_kind / _sliding_window (the latter left out when None).
        spec = self._groups[group] if group < len(self._groups) else {}
        kind = spec.get("kind", "full_attention")
        fields: Dict[str, Any] = {"kv_cache_spec_kind": kind}
        if kind == "sliding_window":
            fields["kv_cache_spec_sliding_window"] = spec.get("sliding_window")
        return fields


def all_blocks_cleared() -> Dict[str, Any]:
    return {"type": "AllBlocksCleared"}
