"""Anthropic's Messages API: ``POST /v1/messages`` and
``POST /v1/messages/count_tokens``. The engine translates the body into the
chat request it means and runs it on the chat road
(``vllm_messages_submit_pull``, ``vllm_messages_tokenize``), writing
Anthropic's ``message`` or stream events; this layer adds the fields check
(Anthropic refuses fields it does not document, and so do we), the model
check, admission, the SSE framing with event names (``event: NAME``, which
the ``anthropic`` SDK dispatches on) and Anthropic's error shape
(``{"type": "error", "error": {"type", "message"}}``). Clients send the API
key as ``x-api-key`` (api_server's middleware takes it as it takes
``Authorization: Bearer``) and an ``anthropic-version`` header, accepted
whatever its value."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, AsyncIterator, Dict, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import VllmError
from .generation import ProtocolRun
from .protocol import ENGINE_REFUSALS, ApiError, check_model, invalid
from .serving_openai import whole_response

if TYPE_CHECKING:
    from .api_server import OpenAIServer

MESSAGES_PATH = "/v1/messages"

#: The fields Anthropic documents that the server takes (the engine checks
#: their values; server tools, images and documents are refused by name).
#: cache_control is accepted and ignored: the prefix cache is automatic.
MESSAGES_FIELDS = ("model", "messages", "max_tokens", "system", "tools", "tool_choice", "stop_sequences",
                   "temperature", "top_p", "top_k", "stream", "metadata", "thinking", "cache_control")
COUNT_TOKENS_FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control")

#: Anthropic's error types by status.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 405: "invalid_request_error", 408: "timeout_error",
                413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error"}

#: OpenAI's finish reasons (the metrics' labels) of Anthropic's stop reasons.
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def is_messages_path(path: str) -> bool:
    return path == MESSAGES_PATH or path.startswith(MESSAGES_PATH + "/")


def error_body(status: int, message: str) -> Dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error_body(error.status, error.message), status_code=error.status, headers=error.headers)


def _check_fields(body: Dict[str, Any], accepted) -> None:
    unknown = sorted(set(body) - set(accepted))
    if unknown:
        raise invalid("%s: Extra inputs are not permitted (this server takes %s)"
                      % (", ".join(unknown), ", ".join(accepted)), param=unknown[0])
    if not isinstance(body.get("model"), str):
        raise invalid("'model' is required and must be a string", param="model")


async def _sse(events: AsyncIterator[str]) -> AsyncIterator[str]:
    """Anthropic's framing: each event under its name; an engine failure
    after the response started is the stream's last event, ``error``."""
    try:
        async for frame in events:
            yield frame
    except VllmError as exc:
        status = 400 if isinstance(exc, ENGINE_REFUSALS) else 500
        yield "event: error\ndata: %s\n\n" % json.dumps(error_body(status, str(exc)))


#: The keep-alive event Anthropic's streams carry (the SDKs skip it).
_PING = 'event: ping\ndata: {"type": "ping"}\n\n'


async def with_idle_marks(items: AsyncIterator[str], interval_s: float) -> AsyncIterator[Optional[str]]:
    """``items``, with a None each time ``interval_s`` seconds pass without
    one (a slow prompt, a long think): where a stream sends its pings. The
    item being awaited is cancelled if the consumer leaves."""
    iterator = items.__aiter__()
    pending: Optional[asyncio.Future] = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=interval_s)
            if not done:
                yield None
                continue
            finished, pending = pending, None
            try:
                item = finished.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)


class MessagesServing:
    """The two routes, over the server's engine, body reader and admission."""

    def __init__(self, server: "OpenAIServer"):
        self._server = server

    def _check(self, body: Dict[str, Any], accepted) -> None:
        _check_fields(body, accepted)
        check_model(body, [self._server.config.model_name])
        tools, choice = body.get("tools"), body.get("tool_choice")
        auto = choice is None or (isinstance(choice, dict) and choice.get("type") == "auto")
        if tools and auto and not self._server.config.enable_auto_tool_choice:
            raise invalid('tool_choice "auto" (the default with tools) requires the server to run with '
                          "--enable-auto-tool-choice (and a tool call parser)", param="tool_choice")

    async def create_message(self, request: Request) -> Response:
        server = self._server
        body = await server.read_json(request)
        self._check(body, MESSAGES_FIELDS)
        stops = body.get("stop_sequences")
        if isinstance(stops, list) and len(stops) > server.config.limits.max_stop_strings:
            raise invalid("'stop_sequences' has %d strings, more than this server allows (%d; set by "
                          "--max-stop-strings)" % (len(stops), server.config.limits.max_stop_strings),
                          param="stop_sequences")
        stream = body.get("stream") is True
        return await server._generate(request, 1, stream, start=lambda: self._start(body),
                                      cancel=lambda run: run.cancel(), payloads=self._events,
                                      complete=self._complete, sse=_sse)

    async def count_tokens(self, request: Request) -> Response:
        body = await self._server.read_json(request)
        self._check(body, COUNT_TOKENS_FIELDS)
        return JSONResponse({"input_tokens": len(self._server.engine.tokenize_messages(body))})

    async def _start(self, body: Dict[str, Any]) -> ProtocolRun:
        # A prompt past the context is an engine refusal like any other: a 400.
        return await ProtocolRun.submitted(self._server.engine.asubmit_messages_pull, body,
                                           self._server.metrics.timer())

    def _finished(self, stop_reason: Any) -> None:
        if stop_reason is not None:
            self._server.metrics.finished(_FINISH_REASONS.get(stop_reason, "stop"))

    async def _complete(self, run: ProtocolRun) -> Dict[str, Any]:
        message = await whole_response(run)
        self._finished(message["stop_reason"])
        return message

    async def _events(self, run: ProtocolRun, usage_out: Dict[str, int]) -> AsyncIterator[str]:
        """The engine's events, each framed under its name."""
        async for text in with_idle_marks(run.texts(), self._server.config.messages_ping_interval_s):
            if text is None:  # idle: Anthropic's streams ping periodically
                yield _PING
                continue
            event = json.loads(text)
            if event["type"] == "message_start":
                usage_out["prompt_tokens"] = event["message"]["usage"]["input_tokens"]
            elif event["type"] == "message_delta":
                usage_out["completion_tokens"] = event["usage"]["output_tokens"]
                self._finished(event["delta"]["stop_reason"])
            yield "event: %s\ndata: %s\n\n" % (event["type"], text)
            if event["type"] == "message_start":
                # Anthropic's stream sends a ping early on; the SDKs read it as a keep-alive.
                yield _PING
        run.timer.done()
