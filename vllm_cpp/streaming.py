"""The import path ``vllm_cpp.streaming`` of earlier versions, kept working:
stream events (:mod:`~vllm_cpp.stream_events`), non-blocking requests
(:mod:`~vllm_cpp.request`) and the pull path under the async API
(:mod:`~vllm_cpp.pull_requests`) now have modules of their own; this module
only re-exports them."""

from .pull_requests import PulledEvent, RequestEvents
from .request import Request, RequestOutcome
from .stream_events import StreamControl, StreamEvent, StreamOutcome

__all__ = [
    "StreamControl",
    "StreamEvent",
    "StreamOutcome",
    "RequestOutcome",
    "Request",
    "RequestEvents",
    "PulledEvent",
]
