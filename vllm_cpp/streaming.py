"""Callbacks from native code: stream events, the trampolines, ``Request``,
and the generator / async adapters built on them.

Native code calls back through two ``extern "Python"`` trampolines declared in
``build_ffi.py``. Their ``void* user_data`` is an ``ffi.new_handle`` of a sink
object; the handle is kept alive in :data:`vllm_cpp._ffi.handles` for as long
as native code may use it (the blocking call, or the life of a request
handle). A sink never lets an exception reach the C boundary: it records it,
returns ``false`` (which aborts the request natively) and the Python side
re-raises it once the native call has returned.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import functools
import itertools
import json
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Optional

from . import _ffi
from ._ffi import decode_cstr, ffi, lib
from .errors import (
    CallbackError,
    EngineClosedError,
    LogitsProcessorError,
    RequestCallbackThreadError,
    error_for_status,
)

__all__ = [
    "StreamControl",
    "StreamEvent",
    "StreamOutcome",
    "RequestOutcome",
    "Request",
    "RequestEvents",
    "PulledEvent",
]


class StreamControl(enum.Enum):
    """What a stream callback returns: go on, or stop (abort) the request.

    ``True`` and ``None`` also mean CONTINUE; ``False`` means STOP.
    """

    CONTINUE = "continue"
    STOP = "stop"


@dataclass(frozen=True)
class StreamEvent:
    """One callback: the text produced by an engine step (``delta``, never
    splitting a code point), or the terminal event (``finished=True``, delta
    possibly ``""``)."""

    delta: str
    finished: bool


@dataclass(frozen=True)
class StreamOutcome:
    """How a blocking stream ended. ``stopped_by_callback`` is True when the
    callback returned STOP before the terminal event (returning STOP on the
    terminal event itself is a natural finish)."""

    stopped_by_callback: bool


class RequestOutcome(enum.Enum):
    """How a non-blocking request ended (``Request.wait()``)."""

    COMPLETED = "completed"
    STOPPED_BY_CALLBACK = "stopped_by_callback"
    CANCELLED = "cancelled"


# --------------------------------------------------------------------------
# Life-time bookkeeping shared by Engine and Request.


class _Lifetime:
    """A native handle that several threads may be using while someone closes it.

    ``acquire()``/``release()`` bracket every use of the handle; ``close()``
    marks it closed and runs ``free`` at once when nobody uses it, otherwise
    when the last user releases it. No use-after-free, no waiting in close.
    """

    def __init__(self, free: Callable[[], None], what: str):
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        self._freed = False
        self._free = free
        self._what = what

    @property
    def closed(self) -> bool:
        return self._closed

    def acquire(self) -> None:
        with self._lock:
            if self._closed:
                raise EngineClosedError("%s is closed" % self._what)
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            run = self._closed and self._users == 0 and not self._freed
            if run:
                self._freed = True
        if run:
            self._free()

    def close(self) -> bool:
        """Mark closed; free now if unused. Returns False if already closed."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            run = self._users == 0 and not self._freed
            if run:
                self._freed = True
        if run:
            self._free()
        return True


# --------------------------------------------------------------------------
# Sinks: the Python objects behind user_data.


def _is_continue(result: Any) -> Optional[bool]:
    if result is None or result is True or result is StreamControl.CONTINUE:
        return True
    if result is False or result is StreamControl.STOP:
        return False
    return None


class TokenSink:
    """Receives ``vllm_token_callback`` calls for one request and forwards
    them to a Python callable as :class:`StreamEvent`s."""

    def __init__(self, callback: Callable[[StreamEvent], Any], logits=None):
        self.callback = callback
        self.logits = logits            # LogitsSink of the same request, if any
        self.error: Optional[BaseException] = None
        self.stopped = False            # STOP before the terminal event
        self.stop_returned = False      # STOP at any event
        self.terminal = False           # the finished event arrived
        self.done = False               # we told native to stop, or it finished
        self.thread_id: Optional[int] = None

    def on_token(self, delta_ptr, finished: bool) -> bool:
        self.thread_id = threading.get_ident()
        if self.done:
            return False
        try:
            if self.logits is not None and self.logits.error is not None:
                # The logits processor failed: finish the request.
                self.done = True
                return False
            delta = decode_cstr(delta_ptr, "delta") or ""
            finished = bool(finished)
            if finished:
                self.terminal = True
            result = self.callback(StreamEvent(delta, finished))
            go_on = _is_continue(result)
            if go_on is None:
                raise TypeError(
                    "stream callback must return StreamControl, bool or None, not %s"
                    % type(result).__name__
                )
            if finished:
                self.done = True
            if not go_on:
                self.stop_returned = True
                if not finished:
                    self.stopped = True
                self.done = True
                return False
            return True
        except BaseException as exc:  # noqa: BLE001 - re-raised after the native call
            self.error = exc
            self.done = True
            return False


_numpy = None
_numpy_checked = False


def _float_view(logits_ptr, vocab_size: int):
    """A writable, zero-copy view of the native logits row."""
    global _numpy, _numpy_checked
    if not _numpy_checked:
        try:
            import numpy

            _numpy = numpy
        except ImportError:
            _numpy = None
        _numpy_checked = True
    buf = ffi.buffer(logits_ptr, vocab_size * ffi.sizeof("float"))
    if _numpy is not None:
        return _numpy.frombuffer(buf, dtype=_numpy.float32)
    return memoryview(buf).cast("f")


class LogitsSink:
    """Runs a Python logits processor for one request.

    After the processor raised once it is not called again; the request is
    finished (streams: at the next delivery; blocking ``complete``: at its
    bounded ``max_tokens``) and the error is re-raised as
    :class:`LogitsProcessorError`.
    """

    def __init__(self, processor: Callable[..., Any]):
        self.processor = processor
        self.error: Optional[BaseException] = None

    def run(self, ids_ptr, n_ids: int, logits_ptr, vocab_size: int) -> None:
        if self.error is not None:
            return
        try:
            ids = ffi.unpack(ids_ptr, n_ids) if n_ids > 0 else []
            self.processor(ids, _float_view(logits_ptr, vocab_size))
        except BaseException as exc:  # noqa: BLE001 - re-raised after the native call
            self.error = exc

    def raise_if_failed(self) -> None:
        if self.error is not None:
            err = self.error
            raise LogitsProcessorError(
                "logits processor raised %s: %s" % (type(err).__name__, err)
            ) from err


class WeakSink:
    """What a request's callback handle points to: its sink, weakly.

    The handle registry is a root, and a sink holds the user's callback,
    whose closure may hold the very Request that owns the sink. A strong
    handle would keep that cycle alive until the engine closed; through this
    relay the Request (and with it the sink) stays collectable, and its
    finalizer frees the native request before the relay's handle goes. A
    call after the sink is gone stops the request.
    """

    def __init__(self, sink):
        self._sink = weakref.ref(sink)

    def on_token(self, delta_ptr, finished: bool) -> bool:
        sink = self._sink()
        return False if sink is None else sink.on_token(delta_ptr, finished)

    def run(self, ids_ptr, n_ids: int, logits_ptr, vocab_size: int) -> None:
        sink = self._sink()
        if sink is not None:
            sink.run(ids_ptr, n_ids, logits_ptr, vocab_size)


def _token_onerror(exc_type, exc_value, tb):
    # Only reached if the sink itself could not be found: stop the request.
    return False


def _logits_onerror(exc_type, exc_value, tb):
    return None


@ffi.def_extern(onerror=_token_onerror)
def _vllm_token_trampoline(delta_text, finished, user_data):
    return ffi.from_handle(user_data).on_token(delta_text, finished)


@ffi.def_extern(onerror=_logits_onerror)
def _vllm_logits_trampoline(token_ids, n_token_ids, logits, vocab_size, user_data):
    ffi.from_handle(user_data).run(token_ids, n_token_ids, logits, vocab_size)


TOKEN_TRAMPOLINE = lib._vllm_token_trampoline
LOGITS_TRAMPOLINE = lib._vllm_logits_trampoline


def raise_callback_error(sink: TokenSink) -> None:
    """Re-raise, unchanged, what a blocking call's callback raised."""
    if sink.error is not None:
        err = sink.error
        sink.error = None  # break the frame <-> exception cycle
        raise err


# --------------------------------------------------------------------------
# A reaper thread for teardown that cannot run where it was requested (a
# request closed or finalized from its own delivery thread).

_reaper_lock = threading.Lock()
_reaper_queue: "queue.Queue[Callable[[], None]]" = queue.Queue()
_reaper_thread: Optional[threading.Thread] = None


def _reaper_main() -> None:
    while True:
        job = _reaper_queue.get()
        try:
            job()
        except Exception:  # noqa: BLE001 - teardown must go on
            pass


def defer_to_reaper(job: Callable[[], None]) -> None:
    global _reaper_thread
    with _reaper_lock:
        if _reaper_thread is None or not _reaper_thread.is_alive():
            _reaper_thread = threading.Thread(
                target=_reaper_main, name="vllm-cpp-reaper", daemon=True
            )
            _reaper_thread.start()
    _reaper_queue.put(job)


# --------------------------------------------------------------------------
# Non-blocking requests.


def _free_request(ptr, sink_ref: "weakref.ref[TokenSink]", handles: list, engine_lifetime: _Lifetime,
                  on_free: Optional[Callable[[], None]]) -> None:
    """Free a native request handle, then release its Python callback objects
    and its hold on the engine (``on_free`` runs in between). Never runs on
    the request's own delivery thread (that would join itself): from there
    it goes to the reaper. (A sink that is gone is not running a callback:
    the callback's frame would hold it.)"""
    sink = sink_ref()
    if sink is not None and sink.thread_id == threading.get_ident():
        defer_to_reaper(lambda: _free_request(ptr, sink_ref, handles, engine_lifetime, on_free))
        return
    del sink
    lib.vllm_request_free(ptr)
    if on_free is not None:
        on_free()
    for h in handles:
        _ffi.handles.release(h)
    del handles[:]
    engine_lifetime.release()


class Request:
    """A non-blocking request made by ``Engine.submit``.

    Callbacks run on a native delivery thread. ``wait()`` blocks until
    delivery finished and says how the request ended; ``cancel()`` aborts it
    (idempotent); ``close()`` (or the context manager, or the finalizer)
    cancels, joins delivery, frees the native handle, and only
    then releases the Python callback. The request keeps its engine alive.
    Teardown asked for from the request's own callback is deferred to a
    reaper thread.
    """

    def __init__(self, engine, ptr, sink: TokenSink, logits: Optional[LogitsSink],
                 handles: list, on_free: Optional[Callable[[], None]] = None):
        # `engine._lifetime` was acquired by Engine.submit for this request;
        # _free_request releases it after the native handle is gone.
        self._engine = engine  # keeps the Engine object alive
        self._ptr = ptr
        self._sink = sink
        self._logits = logits
        self._lifetime = _Lifetime(
            functools.partial(_free_request, ptr, weakref.ref(sink), handles, engine._lifetime, on_free),
            "request"
        )
        # The finalizer only closes the lifetime: the free itself waits for
        # any thread still inside wait()/cancel() on this handle. A weakref
        # finalizer holds its arguments from outside the request, so they
        # are intact when it runs, also when the request dies in a cycle
        # (with its callback's closure); nothing it holds leads back here.
        self._finalizer = weakref.finalize(self, self._lifetime.close)
        self._finalizer.atexit = False
        self._cancel_requested = False
        self._result: Optional[RequestOutcome] = None
        self._error: Optional[BaseException] = None
        self._waited = False
        self._settle_lock = threading.Lock()

    @contextlib.contextmanager
    def _use(self):
        """The native handle, kept from being freed while in use."""
        self._lifetime.acquire()
        try:
            yield self._ptr
        finally:
            self._lifetime.release()

    def _on_own_thread(self) -> bool:
        return self._sink.thread_id is not None and self._sink.thread_id == threading.get_ident()

    # -- public ------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._lifetime.closed

    def is_done(self) -> bool:
        """True once delivery has finished (non-blocking)."""
        if self._waited:
            return True
        try:
            self._lifetime.acquire()
        except EngineClosedError:
            return True
        try:
            return bool(lib.vllm_request_done(self._ptr))
        finally:
            self._lifetime.release()

    def cancel(self) -> None:
        """Abort the request; idempotent, a finished request stays as it is."""
        try:
            self._lifetime.acquire()
        except EngineClosedError:
            return
        try:
            self._cancel_requested = True
            _ffi.check(lib.vllm_request_cancel(self._ptr))
        finally:
            self._lifetime.release()

    def native_error(self) -> Optional[str]:
        """The native error text of the request, or None (running / no error)."""
        self._lifetime.acquire()
        try:
            text = decode_cstr(lib.vllm_request_error(self._ptr), "request_error")
        finally:
            self._lifetime.release()
        return text or None

    def wait(self, timeout: Optional[float] = None) -> RequestOutcome:
        """Block until delivery finished; return how the request ended.

        Raises ``TimeoutError`` after ``timeout`` seconds (the request stays
        live), :class:`CallbackError` (every time) when the callback raised,
        :class:`LogitsProcessorError` when the logits processor raised, the
        mapped native error when the request failed, and
        :class:`RequestCallbackThreadError` from the request's own callback.
        """
        if self._on_own_thread():
            raise RequestCallbackThreadError(
                "Request.wait() called from the request's own callback thread"
            )
        if not self._waited:
            self._lifetime.acquire()
            try:
                if timeout is not None:
                    deadline = time.monotonic() + max(0.0, timeout)
                    delay = 0.0005
                    while not lib.vllm_request_done(self._ptr):
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise TimeoutError("request still running after %gs" % timeout)
                        time.sleep(min(delay, left))
                        delay = min(delay * 2, 0.02)
                status = lib.vllm_request_wait(self._ptr)
                message = _ffi.last_error() if status != 0 else ""
            finally:
                self._lifetime.release()
            self._settle(int(status), message)
        return self._outcome()

    def _settle(self, status: int, message: str) -> None:
        with self._settle_lock:
            if not self._waited:
                self._settle_locked(status, message)

    def _settle_locked(self, status: int, message: str) -> None:
        sink = self._sink
        if sink.error is not None:
            err = CallbackError(
                "request callback raised %s: %s" % (type(sink.error).__name__, sink.error)
            )
            err.__cause__ = sink.error
            self._error = err
        elif self._logits is not None and self._logits.error is not None:
            err = LogitsProcessorError(
                "logits processor raised %s: %s"
                % (type(self._logits.error).__name__, self._logits.error)
            )
            err.__cause__ = self._logits.error
            self._error = err
        elif status != 0:
            self._error = error_for_status(status, message)
        elif sink.stop_returned:
            self._result = RequestOutcome.STOPPED_BY_CALLBACK
        elif self._cancel_requested and not sink.terminal:
            self._result = RequestOutcome.CANCELLED
        else:
            self._result = RequestOutcome.COMPLETED
        self._waited = True

    def _outcome(self) -> RequestOutcome:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def close(self) -> None:
        """Cancel if needed, join delivery, free the native handle, release
        the callback. From the request's own callback this is deferred to a
        reaper thread."""
        self._lifetime.close()

    def __enter__(self) -> "Request":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("done" if self._waited else "live")
        return "<vllm_cpp.Request %s>" % state


# --------------------------------------------------------------------------
# Generator adapter: a blocking streaming call on a worker thread.

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


# --------------------------------------------------------------------------
# Pull-style delivery: the async adapters.
#
# An engine's async requests are submitted without a callback
# (``vllm_request_submit_pull``, ``vllm_chat_submit_pull``) and report to
# the engine's one native poller. One Python thread polls it: each poll hands
# over the new output of every ready request (a completion's deltas of
# several steps coalesced), and all of a poll's events for one event loop go
# to that loop in one ``call_soon_threadsafe``. So thousands of streams cost
# no thread each, and a token costs no thread hop of its own.

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
    stops the thread and frees the poller; it must run before the engine is
    freed (every request submitted with the poller is freed by then)."""

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
    ``async for`` on the event loop that created it. After the last event the
    request's outcome is checked by ``wait()`` (raising its error) and
    ``after(request)`` runs; both return at once by then. Leaving the loop
    early cancels the request and returns once the engine has dropped it
    (its last event, at the engine's next step); ``cancel()`` for a request
    never read cancels it without waiting. Either way it is closed on the
    loop when its last event arrives."""

    def __init__(self, submit: Callable[["RequestEvents"], Request],
                 after: Optional[Callable[[Request], None]] = None):
        self.loop = asyncio.get_running_loop()
        self._events: "collections.deque[PulledEvent]" = collections.deque()
        self._waiter: Optional[asyncio.Future] = None
        self._after = after
        self._abandoned = False
        self.request = submit(self)

    def deliver(self, event: PulledEvent) -> None:
        """On the loop: one event from the poller."""
        if self._abandoned:
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
        """Cancel the request; it is closed once the engine has dropped it."""
        if self._abandoned:
            return
        self._abandoned = True
        if any(event.finished for event in self._events):
            self.request.close()
            return
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
        events = self._events
        finished = False
        try:
            while True:
                await self._next_event()
                event = events.popleft()
                if event.finished:
                    finished = True
                    self.request._sink.terminal = not self.request._cancel_requested
                    _settle(self.request, self._after)
                yield event
                if finished:
                    break
        finally:
            if finished:
                self.request.close()
            else:
                # Left early: cancel, and return once the engine has let go
                # of the request (its next step), as a blocking cancel does.
                self.request.cancel()
                try:
                    while not any(event.finished for event in events):
                        events.clear()
                        await self._next_event()
                finally:
                    self.cancel()  # closes it, now or when its last event comes


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
