"""The API server on a free local port in a thread of the test process, so
a test can talk HTTP to it and read the same engine's stats directly."""

import contextlib
import threading
import time

import uvicorn

from vllm_cpp.server.api_server import ServerConfig, build_app, uvicorn_config

MODEL_NAME = "smollm2"


@contextlib.contextmanager
def running_server(engine, **config):
    """Yields the base URL (``http://127.0.0.1:PORT``); stops the server at
    exit. ``config``: ServerConfig fields besides the model name."""
    server_config = ServerConfig(model_name=MODEL_NAME, **config)
    server = uvicorn.Server(uvicorn_config(build_app(engine, server_config), server_config, host="127.0.0.1",
                                           port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="test-api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield "http://127.0.0.1:%d" % port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def hostile_input_client(engine, max_request_bytes):
    """An httpx client of the server the hostile-input tests talk to: bodies
    up to ``max_request_bytes``, the request's own chat templates trusted (so
    they reach the engine's Jinja interpreter)."""
    import httpx

    with running_server(engine, max_request_bytes=max_request_bytes, max_pending_requests=64, max_model_len=256,
                        trust_request_chat_template=True) as url:
        with httpx.Client(base_url=url, timeout=300) as client:
            yield client


def wait_until_idle(engine, deadline_s=60.0):
    """Poll the engine's stats (published after each step) until no request
    runs or waits; returns the last snapshot."""
    deadline = time.monotonic() + deadline_s
    while True:
        stats = engine.stats()
        if stats["running_requests"] == 0 and stats["waiting_requests"] == 0 and stats["kv_blocks_used"] == 0:
            return stats
        if time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


@contextlib.contextmanager
def tool_calling_server(model_path, max_model_len=512):
    """What ``vllm-cpp serve MODEL --enable-auto-tool-choice
    --tool-call-parser hermes`` runs, in this process: an engine of its own
    with the hermes parser behind the server. Yields (engine, base URL)."""
    from vllm_cpp import Engine

    with Engine.load(model_path, max_model_len=max_model_len, tool_parser="hermes") as engine:
        with running_server(engine, max_model_len=max_model_len, enable_auto_tool_choice=True) as url:
            yield engine, url
