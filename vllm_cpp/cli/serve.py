"""``vllm-cpp serve MODEL``: load the engine and run the API server until
SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable

from ..chat_template import FALLBACK_WARNING, uses_plain_fallback
from .engine_args import UsageError
from .kv_events_args import kv_events_config, start_kv_events_for


def run_serve(args: argparse.Namespace, load: Callable) -> int:
    try:
        from ..server.api_server import ServerConfig, serve
        from ..server.limits import ConnectionLimits, RequestLimits
        from ..server.lora_modules import parse_lora_modules
        from ..server.media import MediaFetchLimits
    except ImportError as exc:
        raise UsageError("the server needs its extra: pip install \"vllm-cpp[server]\" (%s)" % exc) from None
    bounds = [("--max-pending-requests", args.max_pending_requests, 1),
              ("--max-request-bytes", args.max_request_bytes, 1), ("--max-n", args.max_n, 1),
              ("--max-stop-strings", args.max_stop_strings, 0),
              ("--max-stop-string-bytes", args.max_stop_string_bytes, 1), ("--max-tools", args.max_tools, 0),
              ("--max-connections-per-client", args.max_connections_per_client, 1),
              ("--responses-store-max-entries", args.responses_store_max_entries, 0),
              ("--responses-store-max-bytes", args.responses_store_max_bytes, 1),
              ("--media-fetch-max-bytes", args.media_fetch_max_bytes, 1),
              ("--media-fetch-max-redirects", args.media_fetch_max_redirects, 0)]
    if args.max_tokens_limit is not None:
        bounds.append(("--max-tokens-limit", args.max_tokens_limit, 1))
    for flag, value, least in bounds:
        if value < least:
            raise UsageError("%s must be >= %d, not %d" % (flag, least, value))
    for flag, seconds in (("--request-header-timeout", args.request_header_timeout),
                          ("--request-body-timeout", args.request_body_timeout),
                          ("--responses-store-max-age", args.responses_store_max_age),
                          ("--messages-ping-interval", args.messages_ping_interval),
                          ("--media-fetch-timeout", args.media_fetch_timeout)):
        if not seconds > 0 or seconds == float("inf"):
            raise UsageError("%s must be a positive number of seconds, not %s" % (flag, seconds))
    logging.basicConfig(format="%(levelname)s %(asctime)s %(name)s: %(message)s", level=logging.INFO)
    events_config = kv_events_config(args)
    name = args.served_model_name or args.short_name
    try:
        lora_modules = tuple(parse_lora_modules(args.lora_modules))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if lora_modules and not args.enable_lora:
        raise UsageError("--lora-modules needs --enable-lora")
    config = ServerConfig(model_name=name, api_key=args.api_key or os.environ.get("VLLM_API_KEY"),
                          max_request_bytes=args.max_request_bytes,
                          max_pending_requests=args.max_pending_requests,
                          max_model_len=args.max_model_len,
                          enable_auto_tool_choice=args.enable_auto_tool_choice,
                          trust_request_chat_template=args.trust_request_chat_template,
                          limits=RequestLimits(max_n=args.max_n, max_tokens=args.max_tokens_limit,
                                               max_stop_strings=args.max_stop_strings,
                                               max_stop_string_bytes=args.max_stop_string_bytes,
                                               max_tools=args.max_tools),
                          connection_limits=ConnectionLimits(header_timeout=args.request_header_timeout,
                                                             body_timeout=args.request_body_timeout,
                                                             max_per_client=args.max_connections_per_client),
                          responses_store_max_entries=args.responses_store_max_entries,
                          responses_store_max_age_s=args.responses_store_max_age,
                          responses_store_max_bytes=args.responses_store_max_bytes,
                          messages_ping_interval_s=args.messages_ping_interval,
                          lora_modules=lora_modules,
                          allowed_media_domains=tuple(args.allowed_media_domains or ()),
                          allowed_local_media_path=args.allowed_local_media_path,
                          media_fetch_limits=MediaFetchLimits(max_bytes=args.media_fetch_max_bytes,
                                                              timeout_s=args.media_fetch_timeout,
                                                              max_redirects=args.media_fetch_max_redirects))
    if args.replicas is not None:  # engine replicas on Ray Serve (serve_ray.py)
        if events_config is not None:
            raise UsageError("--kv-events-config is not supported with --replicas (one publisher per replica "
                             "is not built yet)")
        from .serve_ray import run_serve_replicas
        return run_serve_replicas(args, config)
    engine = load(args)
    try:
        kv_events = start_kv_events_for(engine, args, events_config)
    except BaseException:
        engine.close()
        raise
    if uses_plain_fallback(engine):
        logging.getLogger("vllm_cpp.serve").warning(FALLBACK_WARNING)

    def ready(port: int) -> None:
        # One line a script can wait for (the port matters with --port 0).
        print("vllm-cpp: serving %s as %r on http://%s:%d" % (args.model, name, args.host, port),
              flush=True)

    try:
        serve(engine, config, host=args.host, port=args.port, log_level=args.uvicorn_log_level, ready=ready)
    finally:
        if kv_events is not None:
            kv_events.stop()  # after serve closed the engine: tells subscribers the cache is gone
    sys.stdout.flush()
    return 0
