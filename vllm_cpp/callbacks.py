"""Callbacks from native code: the sinks behind ``user_data`` and the
``extern "Python"`` trampolines.

Native code calls back through two ``extern "Python"`` trampolines declared in
``build_ffi.py``: a request's logits processor (on the engine loop), and the
token callback of a request made by ``Engine.submit`` / ``submit_chat`` (the
C ABI's callback path, on the request's native delivery thread; everything
else reads its requests through :mod:`vllm_cpp.pull_requests`). Their
``void* user_data`` is the key of a sink object in
:data:`vllm_cpp._ffi.handles`, registered for the life of a request handle.
A sink never lets an exception reach the C boundary: it records it, returns
``false`` (which aborts the request natively) and the request's ``wait()``
raises it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Optional

from . import _ffi
from ._ffi import decode_cstr, ffi, lib
from .errors import LogitsProcessorError
from .stream_events import StreamControl, StreamEvent

__all__ = ["TokenSink", "LogitsSink", "TOKEN_TRAMPOLINE", "LOGITS_TRAMPOLINE", "raised_by", "stream_continues"]


def stream_continues(result: Any) -> Optional[bool]:
    """What a stream callback's return value asks: True (go on), False
    (stop), None (not a StreamControl, bool or None)."""
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
            result = self.callback(StreamEvent(delta, finished))
            go_on = stream_continues(result)
            if go_on is None:
                raise TypeError(
                    "stream callback must return StreamControl, bool or None, not %s"
                    % type(result).__name__
                )
            if finished:
                self.done = True
            if not go_on:
                self.done = True
                return False
            return True
        except BaseException as exc:  # noqa: BLE001 - re-raised after the native call
            self.error = exc
            self.done = True
            return False


def raised_by(what: str, cause: BaseException, error_type) -> BaseException:
    """``error_type`` saying that ``what`` raised ``cause`` (its ``__cause__``)."""
    err = error_type("%s raised %s: %s" % (what, type(cause).__name__, cause))
    err.__cause__ = cause
    return err


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
            raise raised_by("logits processor", self.error, LogitsProcessorError)


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
    # Only reached if the sink itself failed outside its guard: stop the request.
    return False


def _logits_onerror(exc_type, exc_value, tb):
    return None


@ffi.def_extern(onerror=_token_onerror)
def _vllm_token_trampoline(delta_text, finished, user_data):
    sink = _ffi.handles.lookup(user_data)
    return False if sink is None else sink.on_token(delta_text, finished)


@ffi.def_extern(onerror=_logits_onerror)
def _vllm_logits_trampoline(token_ids, n_token_ids, logits, vocab_size, user_data):
    sink = _ffi.handles.lookup(user_data)
    if sink is not None:  # else the request was closed: its row no longer matters
        sink.run(token_ids, n_token_ids, logits, vocab_size)


TOKEN_TRAMPOLINE = lib._vllm_token_trampoline
LOGITS_TRAMPOLINE = lib._vllm_logits_trampoline
