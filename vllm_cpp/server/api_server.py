"""The OpenAI-compatible server: the Starlette app, its middleware, and the
uvicorn run with a clean shutdown.

Routes: ``POST /v1/chat/completions``, ``POST /v1/completions``,
``GET /v1/models``, ``GET /v1/models/{id}``, ``POST /tokenize``,
``POST /detokenize``, ``GET /tokenizer_info``, ``GET /health``,
``GET|POST /ping``, ``GET /version``, ``GET /metrics``, ``GET /openapi.json``
and ``GET /docs`` (openapi.py); ``POST /v1/responses``, ``GET`` and
``DELETE /v1/responses/{id}`` (serving_responses.py); Anthropic's ``POST /v1/messages`` and
``POST /v1/messages/count_tokens`` (serving_messages.py, in Anthropic's error shape); ``POST /v1/embeddings``
(serving_embeddings.py). Errors are OpenAI's
JSON shape with their status (protocol.ApiError). With an API key set,
``/v1/*`` needs ``Authorization: Bearer KEY`` (compared in constant time),
as in vLLM. Each request is held to the per-request bounds of
``limits.RequestLimits`` (n, max_tokens, stop strings, tools). Generation
requests in flight are bounded
(``max_pending_requests``, counting engine requests: prompts x n); past
the bound the server answers 503 instead of queueing without limit, with
``Retry-After`` (the OpenAI SDKs wait that long and retry).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional, Tuple

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import __version__, library_version
from ..engine import Engine
from ..errors import VllmError
from ..lora import LoRARequest
from . import schema
from .connections import BodyDeadline, guarded_protocol
from .generation import ClientDisconnected, until_disconnected
from .lora_modules import ServedLoras, runtime_updating_allowed
from .media import MediaFetcher, MediaFetchLimits
from .limits import ConnectionLimits, RequestLimits, cap_default_max_tokens, check_limits
from .metrics import CONTENT_TYPE, ServerMetrics
from .openapi import docs_page, openapi_document
from .protocol import (
    ENGINE_REFUSALS,
    IGNORED_CHAT_FIELDS,
    IGNORED_COMPLETION_FIELDS,
    ApiError,
    check_fields,
    check_model,
    check_request_chat_template,
    engine_refusal,
    invalid,
    parse_body,
    parse_chat_request,
    parse_completion_request,
    prompt_count,
    read_field,
)
from .serving_openai import OpenAIServing
from .serving_responses import ResponseStore, ResponsesServing
from . import serving_messages
from . import serving_embeddings
from . import serving_score
from . import serving_classify
from . import serving_pooling
from .tokenizer_info import tokenizer_info

logger = logging.getLogger("vllm_cpp.server")


@dataclass(frozen=True)
class ServerConfig:
    model_name: str
    api_key: Optional[str] = None
    max_request_bytes: int = 16 * 1024 * 1024
    max_pending_requests: int = 256
    max_model_len: Optional[int] = None
    enable_auto_tool_choice: bool = False
    trust_request_chat_template: bool = False  # a request's own chat_template is used, not refused
    limits: RequestLimits = RequestLimits()
    connection_limits: ConnectionLimits = ConnectionLimits()
    # /v1/responses: the responses kept for previous_response_id and GET
    responses_store_max_entries: int = 1024
    responses_store_max_age_s: float = 3600.0
    responses_store_max_bytes: int = 256 << 20
    # /v1/messages streams: a ping after this many idle seconds (--messages-ping-interval)
    messages_ping_interval_s: float = 15.0
    # LoRA adapters served by name (--lora-modules; lora_modules.py)
    lora_modules: Tuple[LoRARequest, ...] = ()
    # Chat image URLs the server fetches (--allowed-media-domains, --allowed-local-media-path; media.py)
    allowed_media_domains: Tuple[str, ...] = ()
    allowed_local_media_path: Optional[str] = None
    media_fetch_limits: MediaFetchLimits = MediaFetchLimits()


class Admission:
    """Counts engine requests in flight; refuses past the bound (503, with
    a Retry-After of a second: requests finish at every engine step, so a
    slot is likely free by then, and the SDKs then retry without backing
    off further)."""

    def __init__(self, bound: int):
        self._bound = bound
        self._in_flight = 0

    def admit(self, n: int) -> Callable[[], None]:
        """Take ``n`` slots; returns their (idempotent) release."""
        if self._in_flight + n > self._bound:
            raise ApiError(503, "the server is overloaded: %d requests in flight (bound %d); retry later"
                           % (self._in_flight, self._bound), code="server_overloaded",
                           headers={"Retry-After": "1"})
        self._in_flight += n
        released = []

        def release() -> None:
            if not released:
                released.append(True)
                self._in_flight -= n

        return release


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def _sse(payloads: AsyncIterator[str]) -> AsyncIterator[str]:
    """Server-sent events of the payloads. Once the response has started an
    engine error can only be the stream's last event (as vLLM sends it)."""
    try:
        async for payload in payloads:
            yield "data: " + payload + "\n\n"
    except VllmError as exc:
        status = 400 if isinstance(exc, ENGINE_REFUSALS) else 500
        yield "data: " + json.dumps(ApiError(status, str(exc)).body()) + "\n\n"
        yield "data: [DONE]\n\n"


class OpenAIServer:
    """The handlers, over one engine."""

    def __init__(self, engine: Engine, config: ServerConfig):
        self.engine = engine
        self.config = config
        self.metrics = ServerMetrics(engine, config.model_name)
        self.admission = Admission(config.max_pending_requests)
        self.completions = OpenAIServing(engine.asubmit_completions_pull, config.model_name, self.metrics,
                                         IGNORED_COMPLETION_FIELDS, "prompt")
        self.chat = OpenAIServing(engine.asubmit_chat_pull, config.model_name, self.metrics, IGNORED_CHAT_FIELDS,
                                  "messages")
        self.responses = ResponsesServing(
            OpenAIServing(engine.asubmit_chat_pull, config.model_name, self.metrics, {}, "input"),
            config.model_name, ResponseStore(config.responses_store_max_entries, config.responses_store_max_age_s,
                                              max_bytes=config.responses_store_max_bytes),
            config.enable_auto_tool_choice, config.trust_request_chat_template, config.limits, config.max_model_len)
        self._created = int(time.time())
        self.messages = serving_messages.MessagesServing(self)
        self.loras = ServedLoras(engine, config.lora_modules)
        self.media = MediaFetcher(config.allowed_media_domains, config.allowed_local_media_path,
                                  config.media_fetch_limits)
        self.openapi = openapi_document(config.model_name, config.limits, config.max_model_len,
                                        config.api_key is not None)

    # -- plumbing ----------------------------------------------------------
    async def read_json(self, request: Request) -> Dict[str, Any]:
        limit = self.config.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(413, "the request body is %s bytes, more than the limit of %d"
                           % (declared, limit))
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, "the request body is more than the limit of %d bytes" % limit)
            chunks.append(chunk)
        body = parse_body(b"".join(chunks))
        check_limits(body, self.config.limits, self.config.max_model_len)
        return body

    def routes(self):
        def handler(fn: Callable[[Request], Awaitable[Response]],
                    respond: Callable[[ApiError], Response] = _error_response):
            """``respond``: the error shape (OpenAI's; Anthropic's for its API)."""
            async def wrapped(request: Request) -> Response:
                try:
                    return await fn(request)
                except ApiError as exc:
                    return respond(exc)
                except ENGINE_REFUSALS as exc:
                    return respond(engine_refusal(exc))
                except (ClientDisconnected, ClientDisconnect):  # left while generating / sending its body
                    return Response(status_code=499)  # nobody reads it; for the log
            return wrapped

        return [
            Route("/v1/chat/completions", handler(self.create_chat_completion), methods=["POST"]),
            Route("/v1/completions", handler(self.create_completion), methods=["POST"]),
            Route("/v1/models", handler(self.show_models), methods=["GET"]),
            Route("/v1/models/{model_id:path}", handler(self.show_model), methods=["GET"]),
            Route("/tokenize", handler(self.tokenize), methods=["POST"]),
            Route("/detokenize", handler(self.detokenize), methods=["POST"]),
            Route("/tokenizer_info", handler(self.show_tokenizer_info), methods=["GET"]),
            Route("/health", handler(self.health), methods=["GET"]),
            Route("/ping", handler(self.health), methods=["GET", "POST"]),  # vLLM's (SageMaker's) name
            Route("/version", handler(self.version), methods=["GET"]),
            Route("/metrics", handler(self.show_metrics), methods=["GET"]),
            Route("/openapi.json", handler(self.show_openapi), methods=["GET"]),
            Route("/docs", handler(self.show_docs), methods=["GET"]),
            # OpenAI's Responses API (serving_responses.py)
            Route("/v1/responses", handler(self.create_response), methods=["POST"]),
            Route("/v1/responses/{response_id}", handler(self.retrieve_response), methods=["GET"]),
            Route("/v1/responses/{response_id}", handler(self.delete_response), methods=["DELETE"]),
            # Anthropic's Messages API (serving_messages.py): its errors in Anthropic's shape
            Route("/v1/messages", handler(self.messages.create_message, serving_messages.error_response),
                  methods=["POST"]),
            Route("/v1/messages/count_tokens", handler(self.messages.count_tokens, serving_messages.error_response),
                  methods=["POST"]),
            # Embeddings (serving_embeddings.py)
            Route("/v1/embeddings", handler(lambda request: serving_embeddings.create_embedding(self, request)),
                  methods=["POST"]),
            # Scoring and reranking (serving_score.py)
        ] + [Route(path, handler(lambda request: serving_score.create_score(self, request)), methods=["POST"])
             for path in ("/score", "/v1/score")
        ] + [Route(path, handler(lambda request: serving_score.create_rerank(self, request)), methods=["POST"])
             for path in ("/rerank", "/v1/rerank", "/v2/rerank")
        ] + [  # Classification (serving_classify.py)
            Route("/classify", handler(lambda request: serving_classify.create_classify(self, request)),
                  methods=["POST"]),
            Route("/pooling", handler(lambda request: serving_pooling.create_pooling(self, request)),
                  methods=["POST"]),
        ] + ([  # vLLM's runtime LoRA routes, only behind its flag
            Route("/v1/load_lora_adapter", handler(self.load_lora_adapter), methods=["POST"]),
            Route("/v1/unload_lora_adapter", handler(self.unload_lora_adapter), methods=["POST"]),
        ] if runtime_updating_allowed() else [])

    # -- generation --------------------------------------------------------
    async def create_completion(self, request: Request) -> Response:
        body = await self.read_json(request)
        served = self._served_model(body)
        cap_default_max_tokens(body, self.config.limits, schema.COMPLETION["max_tokens"].default)
        stream, include_usage = parse_completion_request(body)
        self._name_adapter(body)
        n = body.get("n")
        return await self._generate(
            request, prompt_count(body) * (n if isinstance(n, int) and n > 0 else 1), stream,
            start=lambda: self.completions.start(body, stream, served),
            cancel=lambda run: run.cancel(),
            payloads=lambda run, usage: self.completions.stream(run, include_usage, usage),
            complete=self.completions.complete)

    async def create_chat_completion(self, request: Request) -> Response:
        body = await self.read_json(request)
        served = self._served_model(body)
        cap_default_max_tokens(body, self.config.limits, schema.CHAT["max_tokens"].default)
        stream, include_usage = parse_chat_request(body, self.config.enable_auto_tool_choice,
                                                   self.config.trust_request_chat_template)
        self._name_adapter(body)
        await self.media.resolve(body)
        n = body.get("n")
        return await self._generate(
            request, n if isinstance(n, int) and n > 0 else 1, stream,
            start=lambda: self.chat.start(body, stream, served),
            cancel=lambda run: run.cancel(),
            payloads=lambda run, usage: self.chat.stream(run, include_usage, usage),
            complete=self.chat.complete)

    def _served_model(self, body: Dict[str, Any]) -> str:
        """The name a completion or chat body asks for: the base model's or
        a LoRA adapter's (404 model_not_found otherwise)."""
        check_model(body, [self.config.model_name] + self.loras.names())
        return body.get("model") or self.config.model_name

    def _name_adapter(self, body: Dict[str, Any]) -> None:
        """After the HTTP checks: an adapter's body names it to the engine."""
        lora = self.loras.find(body.get("model"))
        if lora is not None:
            body["lora_int_id"] = lora.lora_int_id

    async def _generate(self, request: Request, slots: int, stream: bool, *, start: Callable[[], Awaitable[Any]],
                        cancel: Callable[[Any], Any],
                        payloads: Callable[[Any, Dict[str, int]], AsyncIterator[str]],
                        complete: Callable[[Any], Awaitable[Dict[str, Any]]],
                        sse: Callable[[AsyncIterator[str]], AsyncIterator[str]] = _sse) -> Response:
        """Admit ``slots`` engine requests, ``start()`` them (an engine
        refusal raises here, before any response), then answer with an SSE
        stream of ``payloads`` or the JSON ``complete`` builds. However the
        response ends (finished, failed, client gone, never started) the work
        is cancelled (a no-op once finished) and the slots released."""
        release = self.admission.admit(slots)
        work = None

        def end() -> None:
            if work is not None:
                cancel(work)
            release()

        streaming = False
        try:
            work = await start()  # the engine's submit runs off the event loop
            if stream:
                usage: Dict[str, int] = {}
                request.state.usage = usage  # for the request log
                streaming = True  # from here the response calls end()
                return StreamingResponse(sse(payloads(work, usage)), media_type="text/event-stream",
                                         background=BackgroundTask(end))
            response = await until_disconnected(request.receive, complete(work))
            request.state.usage = response["usage"]
            return JSONResponse(response)
        finally:
            if not streaming:
                end()

    # -- /v1/responses -----------------------------------------------------
    async def create_response(self, request: Request) -> Response:
        body = await self.read_json(request)
        served = self._served_model(body)
        lora = self.loras.find(served)
        call = self.responses.begin(body, served)
        stream = json.loads(call.chat_request).get("stream", False)
        return await self._generate(
            request, 1, stream,
            start=lambda: self.responses.start(call, lora and lora.lora_int_id),
            cancel=lambda run: run.cancel(),
            payloads=lambda run, usage: self.responses.stream(run, usage),
            complete=self.responses.complete,
            sse=lambda framed: framed)

    async def retrieve_response(self, request: Request) -> Response:
        return JSONResponse(self.responses.retrieve(request.path_params["response_id"]))

    async def delete_response(self, request: Request) -> Response:
        return JSONResponse(self.responses.delete(request.path_params["response_id"]))

    # -- the rest ----------------------------------------------------------
    def _model_card(self) -> Dict[str, Any]:
        return {"id": self.config.model_name, "object": "model", "created": self._created,
                "owned_by": "vllm-cpp", "root": self.engine.model_path, "parent": None,
                "max_model_len": self.config.max_model_len,
                # What the model serves, in vLLM's task names ("generate", "embed").
                "supported_tasks": self.engine.stats()["supported_tasks"]}

    async def show_models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [self._model_card()] +
                             self.loras.cards(self._created, self.config.model_name)})

    async def show_model(self, request: Request) -> Response:
        """OpenAI's ``GET /v1/models/{model}`` (``client.models.retrieve``):
        the card, or OpenAI's 404 ``model_not_found``."""
        model_id = request.path_params["model_id"]
        check_model({"model": model_id}, [self.config.model_name] + self.loras.names())
        for card in self.loras.cards(self._created, self.config.model_name):
            if card["id"] == model_id:
                return JSONResponse(card)
        return JSONResponse(self._model_card())

    async def load_lora_adapter(self, request: Request) -> Response:
        """vLLM's ``POST /v1/load_lora_adapter`` (``lora_name``, ``lora_path``):
        the adapter is read and checked off the event loop."""
        body = await self.read_json(request)
        served = [self.config.model_name]
        text = await asyncio.get_running_loop().run_in_executor(None, self.loras.load, body, served)
        return PlainTextResponse(text)

    async def unload_lora_adapter(self, request: Request) -> Response:
        """vLLM's ``POST /v1/unload_lora_adapter`` (``lora_name``)."""
        return PlainTextResponse(self.loras.unload(await self.read_json(request)))

    async def show_tokenizer_info(self, request: Request) -> Response:
        return JSONResponse(tokenizer_info(self.engine, self.config.max_model_len))

    async def tokenize(self, request: Request) -> Response:
        """``prompt`` (text), or a chat request's ``messages`` rendered by the
        model's template (with ``add_generation_prompt``,
        ``continue_final_message``, ``chat_template_kwargs``, ``tools``, and
        ``chat_template`` on a server that trusts request templates)."""
        body = await self.read_json(request)
        check_fields(body, tuple(schema.TOKENIZE))
        check_request_chat_template(body, self.config.trust_request_chat_template)
        check_model(body, [self.config.model_name])
        if ("prompt" in body) == ("messages" in body):
            raise invalid("send exactly one of 'prompt' and 'messages'")
        if "messages" in body:
            tokens = self.engine.tokenize_chat({k: v for k, v in body.items() if k != "add_special_tokens"})
        else:
            prompt = body["prompt"]
            if not isinstance(prompt, str):
                raise invalid("'prompt' must be a string", param="prompt")
            tokens = self.engine.tokenize(prompt, add_special_tokens=read_field(body, "add_special_tokens",
                                                                                schema.TOKENIZE))
        return JSONResponse({"count": len(tokens), "max_model_len": self.config.max_model_len,
                             "tokens": tokens})

    async def detokenize(self, request: Request) -> Response:
        body = await self.read_json(request)
        check_fields(body, tuple(schema.DETOKENIZE))
        check_model(body, [self.config.model_name])
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            raise invalid("'tokens' must be a list of integers", param="tokens")
        return JSONResponse({"prompt": self.engine.detokenize(tokens)})

    async def health(self, request: Request) -> Response:
        if self.engine.closed:
            raise ApiError(503, "the engine is closed")
        return Response(status_code=200)

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": __version__, "engine": library_version()})

    async def show_metrics(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def show_openapi(self, request: Request) -> Response:
        return JSONResponse(self.openapi)

    async def show_docs(self, request: Request) -> Response:
        return HTMLResponse(docs_page(self.openapi))


class _Middleware:
    """Pure ASGI (so streaming and disconnects pass through untouched):
    the body deadline (a 408 that closes the connection), the API key check
    for ``/v1/*``, then one log line and one metrics count per request."""

    def __init__(self, app, server: OpenAIServer):
        self.app = app
        self.server = server
        key = server.config.api_key
        self._expected = ("Bearer " + key).encode() if key else None

    def _authorized(self, scope) -> bool:
        if self._expected is None or not scope["path"].startswith("/v1"):
            return True
        headers = dict(scope["headers"])
        given = headers.get(b"authorization", b"")
        # Anthropic's clients send the key as x-api-key.
        anthropic = b"Bearer " + headers[b"x-api-key"] if b"x-api-key" in headers else b""
        return hmac.compare_digest(given, self._expected) or hmac.compare_digest(anthropic, self._expected)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.monotonic()
        status = [500]
        state = scope.setdefault("state", {})
        body = BodyDeadline(receive, self.server.config.connection_limits.body_timeout)

        async def send_status(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                if body.expired:  # the rest of its body may still come: do not read it as a request
                    message = dict(message, headers=list(message.get("headers", [])) + [(b"connection", b"close")])
            await send(message)

        try:
            if self._authorized(scope):
                await self.app(scope, body, send_status)
            else:
                error = ApiError(401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
                                 code="invalid_api_key")
                respond = (serving_messages.error_response if serving_messages.is_messages_path(scope["path"])
                           else _error_response)
                await respond(error)(scope, receive, send_status)
        finally:
            usage = state.get("usage") or {}
            client = scope.get("client") or ("-", 0)
            logger.info('%s:%s "%s %s" %d%s prompt_tokens=%s completion_tokens=%s %.3fs',
                        client[0], client[1], scope["method"], scope["path"], status[0],
                        " (client disconnected)" if status[0] == 499 else "",
                        usage.get("prompt_tokens", "-"), usage.get("completion_tokens", "-"),
                        time.monotonic() - start)
            route = scope["path"] if status[0] != 404 else "<unknown>"
            self.server.metrics.http_requests.labels(scope["method"], route, str(status[0])).inc()


def build_app(engine: Engine, config: ServerConfig) -> Starlette:
    server = OpenAIServer(engine, config)

    async def not_found(request: Request, exc: HTTPException) -> Response:
        status = exc.status_code
        if status == 404:
            message = "no route %s %s" % (request.method, request.url.path)
        elif status == 405:
            message = "method %s is not allowed on %s" % (request.method, request.url.path)
        else:
            message = str(exc.detail)
        respond = (serving_messages.error_response if serving_messages.is_messages_path(request.url.path)
                   else _error_response)
        return respond(ApiError(status, message))

    async def internal(request: Request, exc: Exception) -> Response:
        logger.exception("internal error on %s %s", request.method, request.url.path)
        return _error_response(ApiError(500, "internal error: %s" % exc))

    app = Starlette(routes=server.routes(), exception_handlers={HTTPException: not_found,
                                                                Exception: internal})
    app.state.server = server
    app.add_middleware(_Middleware, server=server)
    return app


def uvicorn_config(app: Starlette, config: ServerConfig, **options):
    """uvicorn's configuration for ``app`` with the connection guards of
    ``config.connection_limits`` (``options``: uvicorn.Config's own)."""
    import uvicorn

    return uvicorn.Config(app, http=guarded_protocol(config.connection_limits), lifespan="off", **options)


def serve(engine: Engine, config: ServerConfig, host: str = "127.0.0.1", port: int = 8000,
          log_level: str = "info", ready: Optional[Callable[[int], None]] = None) -> None:
    """Serve until SIGINT/SIGTERM, then abort the requests in flight (their
    streams end with finish reason "abort") and close the engine."""
    import uvicorn

    uv_config = uvicorn_config(build_app(engine, config), config, host=host, port=port, log_level=log_level,
                               access_log=False, timeout_graceful_shutdown=10)

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame) -> None:
            logger.info("shutting down (%s): aborting requests in flight",
                        signal.Signals(sig).name)
            engine.cancel_all()
            super().handle_exit(sig, frame)

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if ready is not None and self.servers:
                ready(self.servers[0].sockets[0].getsockname()[1])

    # uvicorn re-raises the signal it caught once it has stopped; with these
    # handlers in place that re-raise is absorbed, so the engine is closed
    # and the process exits normally. (Signals reach the main thread only.)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, lambda _sig, _frame: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _Server(uv_config).run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        engine.close()
