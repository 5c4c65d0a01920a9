"""Connection guards against clients that hold the server's sockets: a
deadline for a request's headers, one for its body, and a bound on the
connections one client address may hold open.

uvicorn bounds none of these: its ``timeout_keep_alive`` only runs between
a finished response and the next request's first byte, a connection that
sends half its headers is held as long as the client likes, and its
``limit_concurrency`` is one bound for all clients together (503 for
everyone once one client fills it). Headers never reach the ASGI app, so
their deadline and the per-client bound live in a subclass of uvicorn's
HTTP protocol (``guarded_protocol``); the body deadline wraps the ASGI
``receive`` (``BodyDeadline``), where a timeout can still be answered.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
from typing import Any, Callable, Optional

from .limits import ConnectionLimits
from .protocol import ApiError

logger = logging.getLogger("vllm_cpp.server")


def _raw_response(error: ApiError) -> bytes:
    """A whole HTTP/1.1 response for ``error`` that closes the connection,
    for a socket whose request never reached the app."""
    body = json.dumps(error.body()).encode()
    reasons = {408: "Request Timeout", 429: "Too Many Requests"}
    head = ("HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            "connection: close\r\n\r\n" % (error.status, reasons.get(error.status, "Error"), len(body)))
    return head.encode() + body


def _refusal_app(error: ApiError):
    """An ASGI app answering every request with ``error`` and closing."""
    body = json.dumps(error.body()).encode()

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": error.status,
                    "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    return app


def guarded_protocol(limits: ConnectionLimits, base: Optional[type] = None) -> type:
    """A subclass of uvicorn's HTTP protocol class (``base``, default the
    one uvicorn picks: httptools when installed, else h11) for one server:

    - from a connection's first byte of a request (or its opening) until
      the request's headers are complete at most ``header_timeout``
      seconds pass; then it is answered 408 and closed;
    - a client address with ``max_per_client`` connections open gets each
      further connection's request answered 429 and closed (the extra
      connection is still held to the header deadline meanwhile).
    """
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base
    open_by_host = collections.Counter()  # this server's connections per client address

    class GuardedProtocol(base):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._header_timer: Optional[asyncio.TimerHandle] = None
            self._host = self.client[0] if self.client else None
            if self._host is not None:
                open_by_host[self._host] += 1
                if open_by_host[self._host] > limits.max_per_client:
                    logger.info("%s:%s refused: %d connections open from this address (bound %d)",
                                self._host, self.client[1], open_by_host[self._host] - 1, limits.max_per_client)
                    self.app = _refusal_app(ApiError(
                        429, "too many connections from %s: %d are open, the bound is %d (set by "
                        "--max-connections-per-client)" % (self._host, open_by_host[self._host] - 1,
                                                           limits.max_per_client), code="too_many_connections"))
            self._arm_header_deadline()

        def connection_lost(self, exc) -> None:
            self._disarm_header_deadline()
            if self._host is not None:
                open_by_host[self._host] -= 1
                if open_by_host[self._host] <= 0:
                    del open_by_host[self._host]
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            if self._header_timer is None and (cycle is None or cycle.response_complete):
                self._arm_header_deadline()  # a keep-alive connection's next request began
            super().data_received(data)
            if self.cycle is not cycle:
                self._disarm_header_deadline()  # its headers are complete: the request runs

        def _arm_header_deadline(self) -> None:
            self._header_timer = self.loop.call_later(limits.header_timeout, self._header_deadline_passed)

        def _disarm_header_deadline(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_deadline_passed(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            logger.info("%s:%s closed: request headers incomplete after %gs (408; set by --request-header-timeout)",
                        self._host or "-", self.client[1] if self.client else 0, limits.header_timeout)
            self.transport.write(_raw_response(ApiError(
                408, "the request headers did not arrive within %g seconds (set by --request-header-timeout)"
                % limits.header_timeout,
                code="request_timeout")))
            self.transport.close()

    GuardedProtocol.__name__ = "Guarded" + base.__name__
    return GuardedProtocol


class BodyDeadline:
    """An ASGI ``receive`` whose body messages must all arrive within
    ``timeout`` seconds of the request's start (one deadline for the whole
    body, so a client sending a byte now and then cannot stretch it).
    Past it the read raises a 408 ApiError and ``expired`` is set (the
    response then closes the connection). Once the body is complete
    messages pass through untimed (a handler waiting for a disconnect)."""

    def __init__(self, receive: Callable[[], Any], timeout: float):
        self._receive = receive
        self._timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._body_done = False
        self.expired = False

    async def __call__(self):
        if self._body_done:
            return await self._receive()
        try:
            message = await asyncio.wait_for(self._receive(), max(0.0, self._deadline - time.monotonic()))
        except asyncio.TimeoutError:
            self.expired = True
            raise ApiError(408, "the request body did not arrive within %g seconds (set by "
                           "--request-body-timeout)" % self._timeout, code="request_timeout") from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._body_done = True
        return message
