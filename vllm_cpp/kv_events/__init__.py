"""KV cache events as vLLM publishes them (``--kv-events-config``), for
routers that index every server's cached prefix blocks (llm-d's precise
prefix-cache scorer, the Gateway API Inference Extension's endpoint picker).

Needs the ``kv-events`` extra (pyzmq, msgpack): ``pip install
"vllm-cpp[kv-events]"``. See docs/kubernetes.md."""

from .block_hashes import SUPPORTED_HASH_ALGOS, VllmBlockHasher, cbor_canonical
from .config import KVEventsConfig, KVEventsConfigError, parse_kv_events_config
from .translate import EventTranslator

__all__ = ["KVEventsConfig", "KVEventsConfigError", "parse_kv_events_config", "VllmBlockHasher",
           "SUPPORTED_HASH_ALGOS", "cbor_canonical", "EventTranslator", "start_kv_events"]


def start_kv_events(engine, config: KVEventsConfig, hash_algo: str = "sha256"):
    """A running KvEventsPump for ``engine`` (stop it before closing the
    engine), or None when ``config`` publishes nothing."""
    if not config.active:
        return None
    try:
        from .publisher import KvEventsPump
    except ImportError as exc:
        raise ImportError("KV cache events need their extra: pip install \"vllm-cpp[kv-events]\" (%s)"
                          % exc) from None
    return KvEventsPump(engine, config, hash_algo)
