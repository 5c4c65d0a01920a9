"""``vllm-cpp serve``'s KV cache event flags, spelled as vLLM's
(``--kv-events-config``, ``--prefix-caching-hash-algo``), and starting the
publisher they ask for (vllm_cpp/kv_events)."""

from __future__ import annotations

import argparse
from typing import Optional

from ..kv_events.block_hashes import SUPPORTED_HASH_ALGOS, VLLM_HASH_ALGOS, hash_function
from ..kv_events.config import KVEventsConfig, KVEventsConfigError, parse_kv_events_config
from .engine_args import UsageError


def add_kv_events_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("KV cache events (llm-d, Gateway API Inference Extension)")
    group.add_argument("--kv-events-config", default=None, metavar="JSON",
                       help="publish the prefix cache's stored and evicted blocks over ZMQ as vLLM does, e.g. "
                            "'{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\", "
                            "\"replay_endpoint\": \"tcp://*:5558\", \"topic\": \"kv-events\"}' (vLLM's "
                            "KVEventsConfig keys; needs the kv-events extra; default: off)")
    group.add_argument("--prefix-caching-hash-algo", default="sha256", choices=VLLM_HASH_ALGOS,
                       help="the block hashes the KV cache events carry, as vLLM computes them: sha256 "
                            "(pickle; vLLM's default) or sha256_cbor (what llm-d's indexer computes); seeded "
                            "by PYTHONHASHSEED (set it to the indexer's seed). Supported: %s"
                            % ", ".join(SUPPORTED_HASH_ALGOS))


def kv_events_config(args: argparse.Namespace) -> Optional[KVEventsConfig]:
    """The checked config (None without the flag), before the engine loads."""
    if args.kv_events_config is None:
        return None
    try:
        config = parse_kv_events_config(args.kv_events_config)
        hash_function(args.prefix_caching_hash_algo)
    except (KVEventsConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return config


def start_kv_events_for(engine, args: argparse.Namespace, config: Optional[KVEventsConfig]):
    """The running publisher (stop it after serving), or None."""
    if config is None:
        return None
    from ..kv_events import start_kv_events

    try:
        return start_kv_events(engine, config, args.prefix_caching_hash_algo)
    except (ImportError, OSError) as exc:
        raise UsageError(str(exc)) from None
