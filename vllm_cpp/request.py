"""A request (:class:`Request`) and how it ended (:class:`RequestOutcome`):
the library waits and says (``vllm_request_wait_for``); a completion's
result, prompt logprobs and token ids are read from it; its handle keeps the
native engine alive."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import threading
import weakref
from typing import Any, Callable, List, Optional, Tuple

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
from .checks import int_in
from .handle_lifetime import HandleLifetime
from .marshalling import completion_from
from .outputs import Completion, TokenLogprob

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
    """A request: made by ``Engine.submit`` (its callback runs on a native
    delivery thread, the C ABI's callback path), or a pull request whose
    events its reader takes (``Engine.submit_pull``, ``asubmit_pull``, and
    the blocking calls and generators of ``Engine``). ``wait()`` blocks until
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

    # -- a completion's output ---------------------------------------------
    def completion(self) -> Completion:
        """The :class:`Completion` of a finished completion request (text,
        finish reason, counts, token ids, logprobs when asked for)."""
        out = ffi.new("vllm_completion*")
        output = ffi.new("char**")
        with self._use() as ptr, self._engine._use() as h:
            status = lib.vllm_request_completion(ptr, out)
            output_status = lib.vllm_request_output(h, ptr, output) if status == 0 else status
        try:
            _ffi.check(status)
            _ffi.check(output_status)
            completion = completion_from(out)
            generated = json.loads(decode_cstr(output[0], "output"))
        finally:
            lib.vllm_completion_free(out)
            lib.vllm_string_free(output[0])
        logprobs = generated["logprobs"]
        prompt_logprobs = generated.get("prompt_logprobs")
        return dataclasses.replace(
            completion,
            token_ids=tuple(generated["token_ids"]),
            logprobs=None if logprobs is None else tuple(TokenLogprob.from_native(e) for e in logprobs),
            prompt_logprobs=None if prompt_logprobs is None else _prompt_logprob_entries(prompt_logprobs))

    def prompt_logprobs(self) -> Tuple[Optional[TokenLogprob], ...]:
        """A completion request's prompt_logprobs while it runs
        (``vllm_request_prompt_logprobs``): there once its prompt is
        computed, before its first token's event; ``None`` first."""
        out = ffi.new("char**")
        with self._use() as ptr, self._engine._use() as h:
            status = lib.vllm_request_prompt_logprobs(h, ptr, out)
        try:
            _ffi.check(status)
            entries = json.loads(decode_cstr(out[0], "prompt_logprobs"))
        finally:
            lib.vllm_string_free(out[0])
        return _prompt_logprob_entries(entries)

    def token_ids(self, start: int, count: int) -> List[int]:
        """The ids of a completion request's generated tokens
        ``[start, start + count)``, fewer where fewer have been generated so
        far (``vllm_request_token_ids``); readable while it runs: a pull
        request's events count their tokens (``n_tokens``), so an event's ids
        start where the counts before it end. ``count`` is at most 2**20 (a
        buffer that size is allocated; no context is longer)."""
        start, count = int_in(start, "start", 0, _ffi.INT32_MAX), int_in(count, "count", 0, 1 << 20)
        ids = ffi.new("int32_t[]", max(count, 1))
        n = ffi.new("int32_t*")
        with self._use() as ptr:
            _ffi.check(lib.vllm_request_token_ids(ptr, start, count, ids, n))
        return list(ids[0:n[0]])

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


def _prompt_logprob_entries(entries: List[Any]) -> Tuple[Optional[TokenLogprob], ...]:
    """vllm_request_output's "prompt_logprobs" array: None for the first
    prompt token, then one TokenLogprob each."""
    return tuple(None if e is None else TokenLogprob.from_native(e) for e in entries)
