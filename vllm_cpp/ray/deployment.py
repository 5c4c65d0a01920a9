"""The Ray Serve application: engine replicas behind one ingress.

- ``EngineReplica``: one engine per replica (``num_threads`` kernel threads,
  the same number of Serve CPUs, so Serve places replicas by CPU), with the
  server's own Starlette app (``server.api_server.build_app``) over it: every
  route ``vllm-cpp serve`` has, with its limits, errors and metrics.
- ``Ingress``: Serve's HTTP entry. It reads the request body, so the request
  router of its handle sees the prompt (``forwarding``), and streams back the
  replica's ASGI messages. A replica that dies mid-request ends that request
  with a clear error (503 before the response started; an SSE error event
  and ``[DONE]`` after), and Serve starts a replacement.
- ``build_application`` binds them (``vllm-cpp serve --replicas``);
  ``app_builder`` is the same from a ``serve run`` config's ``args``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Any, Dict, Optional

from ray import serve
from ray.serve.config import RequestRouterConfig

from ..engine_options import engine_options_from_vllm_names, normalize_options
from ..models import resolve_model
from ..server.api_server import ServerConfig, build_app
from ..server.protocol import ApiError
from .forwarding import ForwardedRequest, routing_text, run_app

logger = logging.getLogger("vllm_cpp.ray")

APP_NAME = "vllm-cpp"
ROUTERS = {"prefix": "vllm_cpp.ray.prefix_router:PrefixAffinityRouter",
           # Serve's own default, power of two choices on queue length.
           "pow2": "ray.serve._private.request_router:PowerOfTwoChoicesRequestRouter"}
REPLICA_HEADER = b"x-vllm-cpp-replica"  # "<Serve replica id>:<pid>" of the replica that answered


@serve.deployment(name="VllmCppEngine")
class EngineReplica:
    def __init__(self, model: str, engine_options: Dict[str, Any], server_config: ServerConfig):
        from ..engine import Engine

        # A bundled short name resolves on the replica's own node.
        self.engine = Engine.load(resolve_model(model)[0], **engine_options)
        self.app = build_app(self.engine, server_config)
        self.replica = "%s:%d" % (serve.get_replica_context().replica_id.unique_id, os.getpid())
        self.header = ((REPLICA_HEADER, self.replica.encode()),)

    async def handle_http(self, request: ForwardedRequest):
        async for message in run_app(self.app, request, self.header):
            yield message

    def engine_stats(self) -> Dict[str, Any]:
        """This replica's id (as in its responses' header) and
        ``Engine.stats()``: prefix-cache hits, KV transfer counters (for
        benchmarks and operators; a handle call reaches one replica)."""
        return {"replica": self.replica, "stats": self.engine.stats()}

    def check_health(self) -> None:  # Serve's periodic health check
        if self.engine.closed:
            raise RuntimeError("the engine is closed")

    def __del__(self):
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.cancel_all()
            engine.close()


def _error_start(status: int) -> Dict[str, Any]:
    return {"type": "http.response.start", "status": status,
            "headers": [(b"content-type", b"application/json")]}


@serve.deployment(name="VllmCppIngress", ray_actor_options={"num_cpus": 0})
@serve.ingress()
class Ingress:
    def __init__(self, engine, max_request_bytes: int):
        self.engine = engine.options(stream=True, method_name="handle_http")
        self.max_request_bytes = max_request_bytes

    def __serve_build_asgi_app__(self):
        async def app(scope, receive, send):  # a plain coroutine function: uvicorn's ASGI 3 check
            await self.forward(scope, receive, send)
        return app

    async def _read_body(self, receive) -> Optional[bytes]:
        """The whole body; at most one byte past the limit (the replica's
        app answers 413), None if the client left."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            if size <= self.max_request_bytes:
                chunks.append(chunk[:self.max_request_bytes + 1 - size])
                size += len(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def forward(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] != "http":
            return
        body = await self._read_body(receive)
        if body is None:
            return
        path, prefix = scope["path"], scope.get("root_path", "")
        if prefix and path.startswith(prefix):  # an application under a route_prefix other than "/"
            path = path[len(prefix):] or "/"
        request = ForwardedRequest(scope["method"], path, scope.get("query_string", b""),
                                   list(scope.get("headers", [])), body, scope.get("client"), routing_text(body))
        started, event_stream = False, False
        try:
            async for message in self.engine.remote(request):
                if message["type"] == "http.response.start":
                    started = True
                    event_stream = any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                                       for name, value in message.get("headers", []))
                await send(message)
        except Exception as exc:  # the replica died or was lost mid-request: end this request only
            reason = "the engine replica serving this request failed (%s); retry it" % type(exc).__name__
            logger.warning("%s %s: %s", scope["method"], scope["path"], reason)
            error = json.dumps(ApiError(503, reason, code="replica_failed").body()).encode()
            if not started:
                await send(_error_start(503))
                await send({"type": "http.response.body", "body": error})
            elif event_stream:
                await send({"type": "http.response.body", "body": b"data: " + error + b"\n\ndata: [DONE]\n\n"})
            else:  # a JSON body cut short: nothing valid can follow, end it
                await send({"type": "http.response.body", "body": b""})


def build_application(model: str, engine_options: Dict[str, Any], server_config: ServerConfig, *,
                      replicas: int = 1, threads_per_replica: int = 1, router: str = "prefix",
                      router_kwargs: Optional[Dict[str, Any]] = None,
                      autoscaling_config: Optional[Dict[str, Any]] = None):
    """The bound Serve application: ``replicas`` engine replicas (or
    ``autoscaling_config``, Serve's, scaling on ongoing requests) of
    ``threads_per_replica`` threads and Serve CPUs each, routed by
    ``router`` (``prefix`` or ``pow2``, Serve's default)."""
    if router not in ROUTERS:
        raise ValueError("router must be one of %s, not %r" % (", ".join(sorted(ROUTERS)), router))
    if threads_per_replica < 1 or (autoscaling_config is None and replicas < 1):
        raise ValueError("replicas and threads per replica must be >= 1")
    engine_options = dict(engine_options, num_threads=threads_per_replica)
    scale = ({"autoscaling_config": autoscaling_config} if autoscaling_config is not None
             else {"num_replicas": replicas})
    engine = EngineReplica.options(
        ray_actor_options={"num_cpus": threads_per_replica},
        # The engine batches what it is given; its own admission bound answers 503 past it.
        max_ongoing_requests=server_config.max_pending_requests,
        request_router_config=RequestRouterConfig(request_router_class=ROUTERS[router],
                                                  request_router_kwargs=router_kwargs or {}),
        **scale)
    return Ingress.bind(engine.bind(model, engine_options, server_config), server_config.max_request_bytes)


_SERVER_FIELDS = {field.name for field in dataclasses.fields(ServerConfig)} - {"limits", "connection_limits"}


def app_builder(args: Dict[str, Any]):
    """``serve run`` / a Serve config's ``import_path``
    (``vllm_cpp.ray.deployment:app_builder``). ``args``: ``model`` (a
    bundled short name, GGUF file or HF directory), ``replicas``,
    ``threads_per_replica``, ``router``, ``router_kwargs``,
    ``autoscaling_config``, ``engine`` (``Engine.load`` options, vLLM's
    names) and ``server`` (``ServerConfig`` fields; ``model_name`` defaults
    to the short name)."""
    args = dict(args)
    unknown = set(args) - {"model", "replicas", "threads_per_replica", "router", "router_kwargs",
                           "autoscaling_config", "engine", "server"}
    if unknown or "model" not in args:
        raise ValueError("vllm-cpp app_builder: needs 'model'; unknown args: %s" % ", ".join(sorted(unknown)))
    _, short_name = resolve_model(str(args["model"]))
    server = dict(args.get("server") or {})
    bad = set(server) - _SERVER_FIELDS
    if bad:
        raise ValueError("vllm-cpp app_builder: unknown server fields: %s" % ", ".join(sorted(bad)))
    server.setdefault("model_name", short_name)
    engine = engine_options_from_vllm_names(dict(args.get("engine") or {}))
    normalize_options(engine)  # an unknown or ill-typed option is refused here, not by every replica in turn
    return build_application(str(args["model"]), engine, ServerConfig(**server),
                             replicas=int(args.get("replicas", 1)),
                             threads_per_replica=int(args.get("threads_per_replica", 1)),
                             router=args.get("router", "prefix"), router_kwargs=args.get("router_kwargs"),
                             autoscaling_config=args.get("autoscaling_config"))
