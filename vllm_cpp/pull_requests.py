"""Pull-style delivery: the async adapters.

An engine's async requests are submitted without a callback
(``vllm_request_submit_pull``, ``vllm_chat_submit_pull``) and report to
the engine's one native poller. One Python thread polls it: each poll hands
over the new output of every ready request (a completion's deltas of
several steps coalesced), and all of a poll's events for one event loop go
to that loop in one ``call_soon_threadsafe``. So thousands of streams cost
no thread each, and a token costs no thread hop of its own.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import threading
import json
from typing import Any, Callable, Dict, Optional

from . import _ffi
from ._ffi import decode_cstr, ffi, lib
from .request import Request

__all__ = ["PulledEvent", "EventPoller", "RequestEvents", "await_request", "aiterate_request"]


_POLL_BATCH = 1024


class PulledEvent:
    """One event of a pull request: its new text (``delta``), whether it is
    the last one, how many tokens a completion generated since its previous
    event, and their logprob entries (``vllm_request_output``'s format) when
    the request asked for them."""

    __slots__ = ("delta", "finished", "n_tokens", "logprobs")

    def __init__(self, delta: str, finished: bool, n_tokens: int, logprobs: Optional[list]):
        self.delta = delta
        self.finished = finished
        self.n_tokens = n_tokens
        self.logprobs = logprobs


class EventPoller:
    """An engine's native poller (``vllm_poller``) and the thread that polls
    it. ``register(consumer)`` gives the tag to submit with; the consumer's
    ``loop`` receives its events through ``consumer.deliver``. ``close()``
    stops the thread and frees the poller (which holds the native engine
    until then), once every request submitted with it is freed."""

    def __init__(self, engine_ptr):
        out = ffi.new("vllm_poller**")
        _ffi.check(lib.vllm_poller_create(engine_ptr, out))
        self.ptr = out[0]
        self._consumers: Dict[int, "RequestEvents"] = {}
        self._tags = itertools.count(1)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="vllm-cpp-poller", daemon=True)
        self._thread.start()

    def register(self, consumer: "RequestEvents") -> int:
        tag = next(self._tags)
        self._consumers[tag] = consumer
        return tag

    def unregister(self, tag: int) -> None:
        self._consumers.pop(tag, None)

    def forget(self, tag: int) -> None:
        """The request of ``tag`` was freed: a consumer still waiting for
        its last event (the request was closed under it, e.g. by
        ``Engine.close()``) gets an empty one (its ``wait()`` then raises
        that the request is closed)."""
        consumer = self._consumers.pop(tag, None)
        if consumer is not None:
            try:
                consumer.loop.call_soon_threadsafe(consumer.deliver, PulledEvent("", True, 0, None))
            except RuntimeError:  # the loop is closed: nobody reads it
                pass

    def _run(self) -> None:
        events = ffi.new("vllm_event[]", _POLL_BATCH)
        count = ffi.new("int32_t*")
        consumers = self._consumers
        while not self._stopping:
            _ffi.check(lib.vllm_poller_poll(self.ptr, -1, events, _POLL_BATCH, count))
            by_loop: Dict[Any, list] = {}
            for i in range(count[0]):
                event = events[i]
                consumer = consumers.get(event.tag)
                if consumer is None:  # closed meanwhile
                    continue
                logprobs = None
                if event.logprobs_json != ffi.NULL:
                    logprobs = json.loads(ffi.string(event.logprobs_json))
                pulled = PulledEvent(decode_cstr(event.text, "delta"), bool(event.finished),
                                     event.n_tokens, logprobs)
                if pulled.finished:
                    consumers.pop(event.tag, None)
                batch = by_loop.get(consumer.loop)
                if batch is None:
                    batch = by_loop[consumer.loop] = []
                batch.append((consumer, pulled))
            for loop, batch in by_loop.items():
                try:
                    loop.call_soon_threadsafe(_deliver_all, batch)
                except RuntimeError:  # the loop is closed: nobody reads these
                    for consumer, pulled in batch:
                        if pulled.finished:
                            consumer.request.close()
        # This thread frees the poller: close() may run on it (a finalizer).
        lib.vllm_poller_free(self.ptr)

    def close(self) -> None:
        self._stopping = True
        _ffi.check(lib.vllm_poller_wake(self.ptr))
        if threading.current_thread() is not self._thread:
            self._thread.join()


def _deliver_all(batch: list) -> None:
    for consumer, event in batch:
        consumer.deliver(event)


class RequestEvents:
    """A pull request submitted now (``submit(consumer)`` registers this
    object with the engine's poller and returns the :class:`Request`; a
    refusal raises here), whose :class:`PulledEvent`s are read with
    ``async for`` on the event loop that created it, by one reader. After
    the last event the request's outcome is checked by ``wait()`` (raising
    its error) and ``after(request)`` runs; both return at once by then.

    The request is closed on the loop by whoever holds it last. A reader
    closes it after the last event; leaving early it cancels the request and
    waits for that last event (the engine's next step), as a blocking cancel
    does. ``cancel()`` with a reader active only cancels the native request:
    the reader still gets the last event and closes it. Without a reader (a
    request never read, or one whose reader was interrupted while it waited)
    the request is released: cancelled, and closed when its last event
    arrives. A reader therefore always sees the last event: none waits for
    ever on a request someone else gave up on."""

    def __init__(self, submit: Callable[["RequestEvents"], Request],
                 after: Optional[Callable[[Request], None]] = None):
        self.loop = asyncio.get_running_loop()
        self._events: "collections.deque[PulledEvent]" = collections.deque()
        self._waiter: Optional[asyncio.Future] = None
        self._after = after
        self._ended = False      # the last event has arrived
        self._reading = False    # an ``async for`` is active
        self._released = False   # nobody reads: close on the last event
        self.request = submit(self)

    def deliver(self, event: PulledEvent) -> None:
        """On the loop: one event from the poller."""
        if event.finished:
            self._ended = True
        if self._released:
            if event.finished:
                self.request.close()
            return
        logits = self.request._logits
        if logits is not None and logits.error is not None:
            self.request.cancel()  # the processor failed: end; wait() raises it
        self._events.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def cancel(self) -> None:
        """Cancel the request. With a reader active, the reader gets its last
        event and closes it; otherwise it is released (closed now if it has
        ended, else when its last event arrives)."""
        if self._reading:
            self.request.cancel()
        else:
            self._release()

    def _release(self) -> None:
        if self._released:
            return
        self._released = True
        self._events.clear()
        if self._ended:
            self.request.close()
        else:
            self.request.cancel()

    async def _next_event(self) -> None:
        """Waits until an event is queued."""
        while not self._events:
            self._waiter = self.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def __aiter__(self):
        if self._reading or self._released:
            raise RuntimeError("the events of a pull request are read once, by one reader")
        self._reading = True
        events = self._events
        finished = False
        try:
            while True:
                await self._next_event()
                event = events.popleft()
                if event.finished:
                    finished = True
                    _settle(self.request, self._after)
                yield event
                if finished:
                    break
        finally:
            try:
                if not finished:
                    # Left early: cancel, and return once the engine has let
                    # go of the request (its next step).
                    self.request.cancel()
                    while not self._ended:
                        events.clear()
                        await self._next_event()
            finally:
                self._reading = False
                self._release()  # closes it, now or when its last event comes


def _settle(request: Request, after: Optional[Callable[[Request], None]]) -> None:
    request.wait()  # raises the request's error, if any
    if after is not None:
        after(request)


async def await_request(submit: Callable[[RequestEvents], Request],
                        result: Callable[[Request], Any]) -> Any:
    """Submit with ``submit(consumer)``, wait for the request without
    blocking the event loop, then return ``result(request)``; cancelling the
    awaiting task cancels the native request. The request is closed after."""
    values = []
    events = RequestEvents(submit, lambda request: values.append(result(request))).__aiter__()
    try:
        async for _event in events:
            pass
    finally:
        await events.aclose()
    return values[0]


async def aiterate_request(submit: Callable[[RequestEvents], Request],
                           convert: Callable[[str], Any] = lambda s: s):
    """Async generator over the non-empty deltas of a pull request.

    Leaving the generator early (``break``, ``aclose()``, task cancellation)
    cancels the native request.
    """
    events = RequestEvents(submit).__aiter__()
    try:
        async for event in events:
            if event.delta:
                yield convert(event.delta)
    finally:
        await events.aclose()
