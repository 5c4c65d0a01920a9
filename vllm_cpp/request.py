"""A non-blocking request (:class:`Request`) and how it ended
(:class:`RequestOutcome`): the library waits and says (``vllm_request_wait_for``);
its handle keeps the native engine alive."""

from __future__ import annotations

import enum
import functools
import math
import threading
import weakref
from typing import Callable, Optional, Tuple

from . import _ffi
from ._ffi import decode_cstr, ffi, lib
from .callbacks import LogitsSink, TokenSink, raised_by
from .errors import (
    CallbackError,
    EngineClosedError,
    LogitsProcessorError,
    RequestCallbackThreadError,
    error_for_status,
)
from .handle_lifetime import HandleLifetime

__all__ = ["RequestOutcome", "Request"]


class RequestOutcome(enum.Enum):
    """How a non-blocking request ended (``Request.wait()``)."""

    COMPLETED = "completed"
    STOPPED_BY_CALLBACK = "stopped_by_callback"
    CANCELLED = "cancelled"


def _free_request(ptr, handles: list, on_free: Optional[Callable[[], None]]) -> None:
    """Free a native request handle (from its own callback the library
    finishes the free once the callback returns), then release its Python
    callback objects (``on_free`` runs in between)."""
    lib.vllm_request_free(ptr)
    if on_free is not None:
        on_free()
    for h in handles:
        _ffi.handles.release(h)
    del handles[:]


def _timeout_ms(timeout: Optional[float]) -> int:
    """``vllm_request_wait_for``'s timeout: -1 for None, else whole ms,
    rounded up and clamped to [0, INT32_MAX] (inf: the longest wait)."""
    if timeout is None:
        return -1
    ms = max(0.0, float(timeout) * 1000)
    return _ffi.INT32_MAX if ms >= _ffi.INT32_MAX else math.ceil(ms)


#: How a request ended, by the native ``vllm_request_state`` (FAILED raises).
_OUTCOMES = {
    lib.VLLM_REQUEST_FINISHED: RequestOutcome.COMPLETED,
    lib.VLLM_REQUEST_STOPPED: RequestOutcome.STOPPED_BY_CALLBACK,
    lib.VLLM_REQUEST_CANCELLED: RequestOutcome.CANCELLED,
}


class Request:
    """A non-blocking request made by ``Engine.submit``.

    Callbacks run on a native delivery thread. ``wait()`` blocks until
    delivery finished and says how the request ended (the library's
    outcome); ``cancel()`` aborts it (idempotent); ``close()`` (or the
    context manager, or the finalizer) cancels, joins delivery,
    frees the native handle, and only then releases the Python callback.
    The native handle keeps its engine alive. Closed from the request's own
    callback, the library finishes the free once the callback returns.
    """

    def __init__(self, engine, ptr, sink: TokenSink, logits: Optional[LogitsSink],
                 handles: list, on_free: Optional[Callable[[], None]] = None):
        self._engine = engine  # keeps the Engine object (and its poller) alive
        self._ptr = ptr
        self._sink = sink
        self._logits = logits
        self._lifetime = HandleLifetime(ptr, functools.partial(_free_request, ptr, handles, on_free), "request")
        # The finalizer only closes the lifetime: the free itself waits for
        # any thread still inside wait()/cancel() on this handle. A weakref
        # finalizer holds its arguments from outside the request, so they
        # are intact when it runs, also when the request dies in a cycle
        # (with its callback's closure); nothing it holds leads back here.
        self._finalizer = weakref.finalize(self, self._lifetime.close)
        self._finalizer.atexit = False
        # (outcome, error) once delivery has finished.
        self._ended: Optional[Tuple[Optional[RequestOutcome], Optional[BaseException]]] = None

    def _use(self):
        """The native handle, kept from being freed while in use."""
        return self._lifetime.use()

    def _on_own_thread(self) -> bool:
        return self._sink.thread_id is not None and self._sink.thread_id == threading.get_ident()

    # -- public ------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._lifetime.closed

    def is_done(self) -> bool:
        """True once delivery has finished (non-blocking)."""
        if self._ended is not None:
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
        if self._ended is None:
            outcome = ffi.new("vllm_request_outcome*")
            with self._use() as ptr:
                _ffi.check(lib.vllm_request_wait_for(ptr, _timeout_ms(timeout), outcome))
                message = decode_cstr(outcome.error, "request_error") or ""
            if outcome.state == lib.VLLM_REQUEST_RUNNING:
                raise TimeoutError("request still running after %gs" % timeout)
            self._ended = self._ending(int(outcome.state), int(outcome.status), message)
        result, error = self._ended
        if error is not None:
            raise error
        return result

    def _ending(self, state: int, status: int, message: str):
        """(outcome, error) for the native outcome; what the Python callback
        or logits processor raised (which made the request stop) comes first."""
        if self._sink.error is not None:
            return None, raised_by("request callback", self._sink.error, CallbackError)
        if self._logits is not None and self._logits.error is not None:
            return None, raised_by("logits processor", self._logits.error, LogitsProcessorError)
        if state == lib.VLLM_REQUEST_FAILED:
            return None, error_for_status(status, message)
        return _OUTCOMES[state], None

    def close(self) -> None:
        """Cancel if needed, join delivery, free the native handle, release
        the callback. From the request's own callback the library finishes
        the free once the callback returns."""
        self._lifetime.close()

    def __enter__(self) -> "Request":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("done" if self._ended is not None else "live")
        return "<vllm_cpp.Request %s>" % state
