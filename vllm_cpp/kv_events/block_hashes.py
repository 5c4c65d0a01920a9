"""vLLM's prefix-cache block hashes (vllm/v1/core/kv_cache_utils.py), so that
an indexer written for vLLM (llm-d's precise prefix-cache scorer) finds our
blocks under the names it computes for a prompt's tokens.

vLLM names block i by ``hash_fn((parent, tuple(tokens), extra_keys))``: the
parent is block i-1's 32-byte hash, or for the first block ``NONE_HASH =
hash_fn(PYTHONHASHSEED)`` (32 random bytes when PYTHONHASHSEED is unset, so
that nobody outside the process can predict them); ``extra_keys`` is None
for a plain text request (no LoRA, multimodal input or cache salt). Events
carry the hash's low 64 bits as an unsigned integer (``int.from_bytes(h,
"big") & (2**64 - 1)``), or the bytes when VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
is 0. ``hash_fn`` is --prefix-caching-hash-algo's: ``sha256`` (vLLM's
default: SHA-256 of the pickle, protocol 5) or ``sha256_cbor`` (SHA-256 of
canonical CBOR: what llm-d's indexer recomputes in Go).

The engine's own prefix cache keeps a cheaper 64-bit chain hash of its own;
these are computed only for the events, here, from the tokens it reports.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from typing import Any, Callable, Optional, Sequence, Union

#: --prefix-caching-hash-algo values vLLM has; the xxhash ones need a package we do not use.
SUPPORTED_HASH_ALGOS = ("sha256", "sha256_cbor")
VLLM_HASH_ALGOS = SUPPORTED_HASH_ALGOS + ("xxhash", "xxhash_cbor")

ExternalBlockHash = Union[int, bytes]


def _cbor_head(major: int, n: int) -> bytes:
    # The shortest argument encoding: what canonical CBOR (RFC 8949 4.2.1) requires.
    if n < 24:
        return bytes([major << 5 | n])
    for extra, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | extra]) + n.to_bytes(width, "big")
    raise ValueError("integer %d does not fit CBOR's 64-bit argument" % n)


def cbor_canonical(value: Any) -> bytes:
    """Canonical CBOR of the values a block hash's input holds (None, bools,
    integers, bytes, str, tuples and lists), as ``cbor2.dumps(value,
    canonical=True)`` writes them."""
    if value is None:
        return b"\xf6"
    if value is True or value is False:
        return b"\xf5" if value else b"\xf4"
    if isinstance(value, int):
        return _cbor_head(0, value) if value >= 0 else _cbor_head(1, -1 - value)
    if isinstance(value, (bytes, bytearray)):
        return _cbor_head(2, len(value)) + bytes(value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return _cbor_head(3, len(data)) + data
    if isinstance(value, (tuple, list)):
        return _cbor_head(4, len(value)) + b"".join(cbor_canonical(v) for v in value)
    raise TypeError("no CBOR encoding for %s in a block hash" % type(value).__name__)


def sha256_pickle(value: Any) -> bytes:
    """vLLM's ``sha256``: SHA-256 of the highest-protocol pickle."""
    return hashlib.sha256(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def sha256_cbor(value: Any) -> bytes:
    """vLLM's ``sha256_cbor``: SHA-256 of the canonical CBOR."""
    return hashlib.sha256(cbor_canonical(value)).digest()


_HASH_FUNCTIONS = {"sha256": sha256_pickle, "sha256_cbor": sha256_cbor}


def hash_function(algo: str) -> Callable[[Any], bytes]:
    if algo not in _HASH_FUNCTIONS:
        if algo in VLLM_HASH_ALGOS:
            raise ValueError("--prefix-caching-hash-algo %s: not supported by vllm-cpp's KV cache events "
                             "(supported: %s)" % (algo, ", ".join(SUPPORTED_HASH_ALGOS)))
        raise ValueError("--prefix-caching-hash-algo: unknown algorithm %r (vLLM's: %s)"
                         % (algo, ", ".join(VLLM_HASH_ALGOS)))
    return _HASH_FUNCTIONS[algo]


class VllmBlockHasher:
    """vLLM's chain of block hashes for one hash algorithm and seed."""

    def __init__(self, algo: str = "sha256", seed: Optional[str] = None, int_hashes: bool = True):
        self.algo = algo
        self._hash = hash_function(algo)
        # vLLM's NONE_HASH: the seed's hash, or random bytes without one.
        self.none_hash = self._hash(seed) if seed is not None else os.urandom(32)
        self.int_hashes = int_hashes

    @classmethod
    def from_environment(cls, algo: str = "sha256") -> "VllmBlockHasher":
        """Seeded by PYTHONHASHSEED, hashes as integers unless
        VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES is 0: as a vLLM process would be."""
        int_hashes = os.environ.get("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", "1") != "0"
        return cls(algo, os.environ.get("PYTHONHASHSEED"), int_hashes)

    def block_hash(self, parent: Optional[bytes], token_ids: Sequence[int]) -> bytes:
        """The hash of a block holding ``token_ids`` after the block hashed ``parent``."""
        return self._hash((parent or self.none_hash, tuple(token_ids), None))

    def external(self, block_hash: bytes) -> ExternalBlockHash:
        """The block hash as events carry it."""
        if not self.int_hashes:
            return block_hash
        return int.from_bytes(block_hash, "big") & ((1 << 64) - 1)
