"""A blocking streaming call as a generator: the call runs on a worker
thread, its deltas come out of ``next()``."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator

from .stream_events import StreamEvent

__all__ = ["iterate_on_thread"]


_DELTA, _DONE, _ERROR = 0, 1, 2


def iterate_on_thread(run: Callable[[Callable[[StreamEvent], Any]], Any],
                      convert: Callable[[str], Any] = lambda s: s,
                      name: str = "vllm-cpp-stream") -> Iterator[Any]:
    """Generator over the non-empty deltas of ``run(callback)``, which is
    started on a worker thread at the first ``next()``.

    Closing the generator (``break``, ``close()``, garbage collection) makes
    the callback return False, so the native request is aborted at its next
    delivery; the generator then joins the worker, so the request is over
    when ``close()`` returns. Errors of the call re-raise from ``next()``.
    """
    items: "queue.Queue[tuple]" = queue.Queue()
    cancelled = threading.Event()

    def on_event(event: StreamEvent):
        if cancelled.is_set():
            return False
        if event.delta:
            items.put((_DELTA, event.delta))
        return not cancelled.is_set()

    def worker():
        try:
            run(on_event)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            items.put((_ERROR, exc))
        else:
            items.put((_DONE, None))

    thread = threading.Thread(target=worker, name=name, daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == _DELTA:
                yield convert(value)
            elif kind == _DONE:
                return
            else:
                raise value
    finally:
        cancelled.set()
        if thread is not threading.current_thread():
            thread.join()
