"""Pull-style delivery, the package's one way to read a request: the async
adapters, and the blocking ones (:class:`ThreadPoller`, :class:`PulledRun`:
the calling thread waits in ``vllm_poller_poll``; ``Engine.complete``,
``stream``, ``complete_stream``, ``chat`` and ``chat_stream`` read their
request so).

An engine's async requests are submitted without a callback
(``vllm_request_submit_pull``, ``vllm_chat_submit_pull``) and report to a
native poller, one per event loop that submits them. The loop watches the
poller's file descriptor itself (``vllm_poller_fd``, ``loop.add_reader``):
when an engine step has output the descriptor becomes readable, and the
loop polls without blocking and hands each event to its request's
consumer. A poll hands over the new output of every ready request (a
completion's deltas of several steps coalesced). So thousands of streams
cost no thread each, and a step wakes one thread, the loop's: no poller
thread takes a core from the engine mid-step and then wakes the loop.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import json
import os
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from . import _ffi
from ._ffi import decode_cstr, ffi, lib
from .errors import EngineClosedError, InvalidConfigurationError
from .handle_lifetime import HandleLifetime
from .request import Request

__all__ = ["PulledEvent", "EventPoller", "ThreadPoller", "PulledRun", "PulledBatch", "RequestEvents", "await_request",
           "aiterate_request", "running_loop"]


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


def _pulled(event) -> PulledEvent:
    """A native ``vllm_event`` read (before the next poll releases its strings)."""
    logprobs = None
    if event.logprobs_json != ffi.NULL:
        logprobs = json.loads(ffi.string(event.logprobs_json))
    return PulledEvent(decode_cstr(event.text, "delta"), bool(event.finished), event.n_tokens, logprobs)


class EventPoller:
    """A native poller (``vllm_poller``) for an engine's requests submitted
    on one event loop, ``loop``, which watches its descriptor and delivers
    its events through ``consumer.deliver``, on the loop's thread.
    ``register(consumer)`` gives the tag to submit with. ``close()``, from
    any thread, frees the native poller (which holds the native engine until
    then) once a poll in progress is done, and ends the loop's watch.

    The loop watches a ``dup`` of the native descriptor: the native one is
    closed by the poller's free, which may run on another thread (the
    engine's close) while the loop still watches; the dup stays open, never
    readable again, until the loop's thread stops watching it."""

    def __init__(self, engine_ptr, loop: asyncio.AbstractEventLoop):
        out = ffi.new("vllm_poller**")
        _ffi.check(lib.vllm_poller_create(engine_ptr, out))
        self.loop = loop
        # The native poller: submits use it under the engine's lifetime (the
        # engine's free closes its pollers), polls under the poller's own.
        self.ptr = out[0]
        self._lifetime = HandleLifetime(out[0], functools.partial(lib.vllm_poller_free, out[0]), "poller")
        self._consumers: Dict[int, "RequestEvents"] = {}
        self._tags = itertools.count(1)
        self._events = ffi.new("vllm_event[]", _POLL_BATCH)
        self._count = ffi.new("int32_t*")
        native_fd = ffi.new("int*")
        try:
            _ffi.check(lib.vllm_poller_fd(out[0], native_fd))
            self._fd = os.dup(native_fd[0])
        except BaseException:
            self._lifetime.close()
            raise
        try:
            loop.add_reader(self._fd, self._drain)
        except BaseException as exc:
            os.close(self._fd)
            self._lifetime.close()
            if isinstance(exc, NotImplementedError):
                raise InvalidConfigurationError(
                    "vllm-cpp's async requests need an event loop that can watch a file descriptor "
                    "(loop.add_reader); %s cannot" % type(loop).__name__) from None
            raise

    def register(self, consumer: "RequestEvents") -> int:
        tag = next(self._tags)
        self._consumers[tag] = consumer
        return tag

    def unregister(self, tag: int) -> None:
        self._consumers.pop(tag, None)

    def idle(self) -> bool:
        """No request of this poller is waiting for its last event."""
        return not self._consumers

    def free_abandoned(self) -> None:
        """The loop being closed: free the requests that nobody reads and
        that waited for their last event to close them (a reader that left
        early, its wait cut short as the loop ended), since that event can
        no longer be delivered. Freeing one unregisters it (forget)."""
        for consumer in list(self._consumers.values()):
            consumer.free_if_released()

    def forget(self, tag: int) -> None:
        """The request of ``tag`` was freed (on any thread): a consumer still
        waiting for its last event (the request was closed under it, e.g. by
        ``Engine.close()``) gets an empty one (its ``wait()`` then raises
        that the request is closed)."""
        consumer = self._consumers.pop(tag, None)
        if consumer is not None:
            try:
                self.loop.call_soon_threadsafe(consumer.deliver, PulledEvent("", True, 0, None))
            except RuntimeError:  # the loop is closed: nobody reads it
                pass

    def _drain(self) -> None:
        """On the loop, the descriptor being readable: one poll that does
        not block, its events to their consumers. Events left over (more
        than a batch) keep the descriptor readable: the loop calls again."""
        try:
            self._lifetime.acquire()
        except EngineClosedError:  # closed: the loop's watch is ending
            return
        try:
            _ffi.check(lib.vllm_poller_poll(self.ptr, 0, self._events, _POLL_BATCH, self._count))
            ready = self._take(self._count[0])
        finally:
            self._lifetime.release()
        for consumer, pulled in ready:
            consumer.deliver(pulled)

    def _take(self, count: int) -> List[Tuple["RequestEvents", PulledEvent]]:
        """The poll's events as (consumer, event), read before the next poll
        releases their strings; a finished request's consumer is dropped."""
        consumers = self._consumers
        ready = []
        for i in range(count):
            event = self._events[i]
            consumer = consumers.get(event.tag)
            if consumer is None:  # closed meanwhile
                continue
            pulled = _pulled(event)
            if pulled.finished:
                del consumers[event.tag]
            ready.append((consumer, pulled))
        return ready

    def close(self) -> None:
        """Free the native poller (now, or when a poll in progress is done)
        and end the loop's watch: here on the loop's thread or while the
        loop is not running, else on the loop's thread next."""
        if not self._lifetime.close():
            return
        loop = self.loop
        if loop.is_closed():  # a closed loop watches nothing
            os.close(self._fd)
        elif not loop.is_running() or running_loop() is loop:
            self._unwatch()
        else:
            try:
                loop.call_soon_threadsafe(self._unwatch)
            except RuntimeError:  # closed meanwhile
                os.close(self._fd)

    def _unwatch(self) -> None:
        self.loop.remove_reader(self._fd)
        os.close(self._fd)


class ThreadPoller:
    """A native poller of requests read on the calling thread (no event
    loop, no thread of its own): ``events()`` waits in ``vllm_poller_poll``
    (the GIL released) and yields ``(tag, event)`` as they come, for as long
    as it is iterated. It has the interface ``Engine._start_request``
    registers pull requests with (one consumer: the reader)."""

    _WAIT_MS = 200  # a wait's slice: a Python signal is handled between two

    def __init__(self, engine_ptr):
        out = ffi.new("vllm_poller**")
        _ffi.check(lib.vllm_poller_create(engine_ptr, out))
        self.ptr = out[0]
        self._events = ffi.new("vllm_event[]", 64)
        self._count = ffi.new("int32_t*")
        self._tags = itertools.count(1)

    def register(self, consumer: Any) -> int:
        return next(self._tags)

    def unregister(self, tag: int) -> None:
        pass

    def forget(self, tag: int) -> None:
        pass

    def events(self):
        """``(tag, event)`` of the poller's requests, as they come."""
        while True:
            _ffi.check(lib.vllm_poller_poll(self.ptr, self._WAIT_MS, self._events, 64, self._count))
            for i in range(self._count[0]):
                event = self._events[i]
                yield event.tag, _pulled(event)

    def close(self) -> None:
        if self.ptr is not None:
            lib.vllm_poller_free(self.ptr)
            self.ptr = None


class PulledRun:
    """One pull request read on the calling thread (``Engine._pulled``): a
    :class:`PulledBatch` of one, iterated for its :class:`PulledEvent`s."""

    def __init__(self, batch: "PulledBatch"):
        self.request = batch.requests[0]
        self._batch = batch

    def __iter__(self):
        for _request, event in self._batch:
            yield event

    def close(self) -> None:
        self._batch.close()

    def __enter__(self) -> "PulledRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class PulledBatch:
    """Pull requests of one :class:`ThreadPoller` read together on the
    calling thread (``LLM.generate``, ``LLM.chat``): iterate it once for
    ``(request, event)`` until every request's last event; each request's
    outcome is checked at its last event (``Request.wait()`` raises its
    error). ``close()`` cancels those still running, returns once the engine
    has let go of them, frees every request and the poller, then runs
    ``release``."""

    def __init__(self, requests: List[Request], poller: ThreadPoller, release: Callable[[], None]):
        self.requests = requests
        self._poller = poller
        self._release = release  # of what the batch holds (the engine, as a blocking call does)
        # The poller handed out its tags in submit order, from 1.
        self._running = {tag: request for tag, request in enumerate(requests, 1)}
        self._events = poller.events()

    def __iter__(self):
        running = self._running
        for tag, event in self._events:
            request = running.get(tag)
            if request is None:
                continue
            logits = request._logits
            if logits is not None and logits.error is not None:
                request.cancel()  # the processor failed: end; wait() raises it
            if event.finished:
                del running[tag]
                request.wait()  # raises the request's error
            yield request, event
            if not running:
                return

    def close(self) -> None:
        if self._poller.ptr is None:
            return
        try:
            if self._running:
                for request in self._running.values():
                    request.cancel()
                for _tag, event in self._events:  # up to the engine's drops
                    if event.finished:
                        self._running.pop(_tag, None)
                        if not self._running:
                            break
        finally:
            for request in self.requests:
                request.close()
            self._poller.close()
            self._release()

    def __enter__(self) -> "PulledBatch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def running_loop() -> Optional[asyncio.AbstractEventLoop]:
    """The calling thread's running event loop, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class RequestEvents:
    """A pull request submitted now (``submit(consumer)`` registers this
    object with its event loop's poller and returns the :class:`Request`; a
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

    def __init__(self, submit: Optional[Callable[["RequestEvents"], Request]],
                 after: Optional[Callable[[Request], None]] = None):
        self.loop = asyncio.get_running_loop()
        self._events: "collections.deque[PulledEvent]" = collections.deque()
        self._waiter: Optional[asyncio.Future] = None
        self._after = after
        self._ended = False      # the last event has arrived
        self._reading = False    # an ``async for`` is active
        self._released = False   # nobody reads: close on the last event
        # None until the submit returns (``submitted``: events may come first).
        self.request: Optional[Request] = submit(self) if submit is not None else None

    @classmethod
    async def submitted(cls, submit: Callable[["RequestEvents"], Awaitable[Request]],
                        after: Optional[Callable[[Request], None]] = None) -> "RequestEvents":
        """The events of a request submitted by awaiting ``submit(consumer)``
        (``Engine.asubmit_pull``: the native call off the loop, which goes on
        delivering every other request's events meanwhile)."""
        events = cls(None, after)
        events.request = await submit(events)
        return events

    def adopt_released(self, request: Request) -> None:
        """The request of a submit whose awaiting task was cancelled: nobody
        reads it, so it is released (cancelled, closed at its last event)."""
        self.request = request
        self._release()

    def deliver(self, event: PulledEvent) -> None:
        """On the loop: one event from the poller."""
        if event.finished:
            self._ended = True
        if self._released:
            if event.finished:
                self.request.close()
            return
        if self.request is None:  # its submit has not returned yet: read after it has
            self._events.append(event)
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

    def free_if_released(self) -> None:
        """Close the request now if it is released (see free_abandoned)."""
        if self._released:
            self.request.close()

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


async def await_request(submit: Callable[[RequestEvents], Awaitable[Request]],
                        result: Callable[[Request], Any]) -> Any:
    """Submit by awaiting ``submit(consumer)``, wait for the request without
    blocking the event loop, then return ``result(request)``; cancelling the
    awaiting task cancels the native request. The request is closed after."""
    values = []
    events = (await RequestEvents.submitted(submit, lambda request: values.append(result(request)))).__aiter__()
    try:
        async for _event in events:
            pass
    finally:
        await events.aclose()
    return values[0]


async def aiterate_request(submit: Callable[[RequestEvents], Awaitable[Request]],
                           convert: Callable[[str], Any] = lambda s: s):
    """Async generator over the non-empty deltas of a pull request.

    Leaving the generator early (``break``, ``aclose()``, task cancellation)
    cancels the native request.
    """
    events = (await RequestEvents.submitted(submit)).__aiter__()
    try:
        async for event in events:
            if event.delta:
                yield convert(event.delta)
    finally:
        await events.aclose()
