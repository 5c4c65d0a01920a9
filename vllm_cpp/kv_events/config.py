"""``--kv-events-config``: vLLM's ``KVEventsConfig`` (vllm/config/kv_events.py),
read from the same JSON with the same keys and defaults, so a deployment's
vLLM flags work unchanged. Keys vLLM does not have are refused by name."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, Optional


class KVEventsConfigError(ValueError):
    """A --kv-events-config that is not what vLLM accepts."""


@dataclasses.dataclass(frozen=True)
class KVEventsConfig:
    enable_kv_cache_events: bool = False
    # "zmq" or "null"; None: "zmq" when events are enabled, else "null" (vLLM's rule).
    publisher: Optional[str] = None
    endpoint: str = "tcp://*:5557"
    replay_endpoint: Optional[str] = None
    buffer_steps: int = 10_000  # batches kept for the replay endpoint
    hwm: int = 100_000  # the PUB socket's high-water mark
    max_queue_size: int = 100_000  # accepted for vLLM's spelling; the engine's own bound applies (docs)
    topic: str = ""

    @property
    def active(self) -> bool:
        """Whether anything is published (vLLM's NullEventPublisher otherwise)."""
        return self.enable_kv_cache_events and self.resolved_publisher == "zmq"

    @property
    def resolved_publisher(self) -> str:
        if self.publisher is not None:
            return self.publisher
        return "zmq" if self.enable_kv_cache_events else "null"


_TYPES = {"enable_kv_cache_events": (bool,), "publisher": (str, type(None)), "endpoint": (str,),
          "replay_endpoint": (str, type(None)), "buffer_steps": (int,), "hwm": (int,),
          "max_queue_size": (int,), "topic": (str,)}


def parse_kv_events_config(text: str) -> KVEventsConfig:
    """The config a --kv-events-config JSON object describes; KVEventsConfigError
    names what is wrong."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise KVEventsConfigError("--kv-events-config is not valid JSON: %s" % exc) from None
    if not isinstance(raw, dict):
        raise KVEventsConfigError("--kv-events-config must be a JSON object, not %s" % type(raw).__name__)
    return kv_events_config_from_dict(raw)


def kv_events_config_from_dict(raw: Dict[str, Any]) -> KVEventsConfig:
    for key, value in raw.items():
        if key not in _TYPES:
            raise KVEventsConfigError("--kv-events-config: unknown key %r (vLLM's keys: %s)"
                                      % (key, ", ".join(_TYPES)))
        wanted = _TYPES[key]
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            raise KVEventsConfigError("--kv-events-config: %r must be %s, not %r"
                                      % (key, " or ".join("null" if t is type(None) else t.__name__
                                                          for t in wanted), value))
    config = KVEventsConfig(**raw)
    if config.publisher not in (None, "zmq", "null"):
        raise KVEventsConfigError("--kv-events-config: unknown publisher %r (vLLM's: zmq, null)" % config.publisher)
    for key in ("buffer_steps", "hwm", "max_queue_size"):
        if getattr(config, key) < 1:
            raise KVEventsConfigError("--kv-events-config: %r must be >= 1, not %d" % (key, getattr(config, key)))
    for key in ("endpoint", "replay_endpoint"):
        value = getattr(config, key)
        if value is not None and "://" not in value:
            raise KVEventsConfigError("--kv-events-config: %r must be a ZMQ endpoint such as tcp://*:5557, not %r"
                                      % (key, value))
    return config
