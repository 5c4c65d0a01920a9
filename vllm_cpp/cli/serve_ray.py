"""``vllm-cpp serve MODEL --replicas N [--ray-address ADDR]``: the server's
app on engine replicas in Ray Serve (vllm_cpp/ray/), until SIGINT/SIGTERM,
then the application is deleted (its replicas close their engines)."""

from __future__ import annotations

import argparse
import os
import signal
import threading

from ..server.api_server import ServerConfig
from .engine_args import UsageError, engine_options


def run_serve_replicas(args: argparse.Namespace, config: ServerConfig) -> int:
    if args.replicas < 1:
        raise UsageError("--replicas must be >= 1, not %d" % args.replicas)
    if args.max_replicas is not None and args.max_replicas < args.replicas:
        raise UsageError("--max-replicas must be >= --replicas (%d), not %d" % (args.replicas, args.max_replicas))
    if args.port == 0:
        raise UsageError("--port 0 is not supported with --replicas: Ray Serve's proxy needs a fixed port")
    threads = 1 if args.num_threads is None else args.num_threads
    if threads < 1:
        raise UsageError("--num-threads must be >= 1, not %d" % threads)
    try:
        from ..ray import require_ray
        serve = require_ray()
        import ray
        from ..ray.deployment import APP_NAME, build_application
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    autoscaling = None
    if args.max_replicas is not None:
        # Serve's autoscaler on ongoing requests; a replica's target is its batch.
        autoscaling = {"min_replicas": args.replicas, "initial_replicas": args.replicas,
                       "max_replicas": args.max_replicas,
                       "target_ongoing_requests": args.max_num_seqs or 8}
    app = build_application(args.model, engine_options(args), config, replicas=args.replicas,
                            threads_per_replica=threads, router=args.ray_router, autoscaling_config=autoscaling)
    address = args.ray_address or os.environ.get("RAY_ADDRESS")
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _sig, _frame: stop.set())
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)
        print("vllm-cpp: serving %s as %r on http://%s:%d with %d replicas (Ray Serve%s)"
              % (args.model, config.model_name, args.host, args.port, args.replicas,
                 ", cluster " + address if address else ""), flush=True)
        stop.wait()
    finally:
        serve.delete(APP_NAME)
        if not address:  # the local Ray this command started
            serve.shutdown()
        ray.shutdown()
    return 0
