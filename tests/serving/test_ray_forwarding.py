"""The Ray ingress's road without Ray (vllm_cpp/ray/forwarding.py): the
server's own app driven in-process on a forwarded request, as each engine
replica does. Blocking and streaming answers come through whole, with the
replica's header; a caller that stops reading mid-stream (its client left,
Serve cancelled the call) cancels the engine request."""

import asyncio
import json
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))

from server_harness import wait_until_idle  # noqa: E402
from vllm_cpp.ray.forwarding import ForwardedRequest, run_app  # noqa: E402
from vllm_cpp.server.api_server import ServerConfig, build_app  # noqa: E402

HEADER = (b"x-vllm-cpp-replica", b"test:1")


def _request(body, path="/v1/completions", method="POST"):
    data = json.dumps(body).encode() if body is not None else b""
    return ForwardedRequest(method, path, b"", [(b"content-type", b"application/json")], data, ("127.0.0.1", 1))


async def _collect(app, request):
    return [message async for message in run_app(app, request, (HEADER,))]


def test_blocking_and_streaming_answers_come_through(engine):
    app = build_app(engine, ServerConfig(model_name="smol"))
    messages = asyncio.run(_collect(app, _request({"model": "smol", "prompt": "Hello", "max_tokens": 3})))
    start, bodies = messages[0], messages[1:]
    assert start["status"] == 200 and HEADER in start["headers"]
    assert json.loads(b"".join(m.get("body", b"") for m in bodies))["usage"]["completion_tokens"] == 3
    messages = asyncio.run(_collect(app, _request({"model": "smol", "prompt": "Hello", "max_tokens": 3,
                                                   "stream": True})))
    text = b"".join(m.get("body", b"") for m in messages[1:]).decode()
    assert messages[0]["status"] == 200 and text.rstrip().endswith("data: [DONE]")
    bad = asyncio.run(_collect(app, _request(None, path="/v1/chat/completions")))
    assert bad[0]["status"] == 400  # the app's own errors, unchanged
    assert asyncio.run(_collect(app, _request(None, path="/health", method="GET")))[0]["status"] == 200


def test_a_caller_leaving_mid_stream_cancels_the_engine_request(engine):
    app = build_app(engine, ServerConfig(model_name="smol"))

    async def leave_early():
        stream = run_app(app, _request({"model": "smol", "prompt": "Tell a story", "max_tokens": 400,
                                        "ignore_eos": True, "stream": True}))
        async for message in stream:
            if message["type"] == "http.response.body" and message.get("body"):
                break  # the first tokens are out
        await stream.aclose()
        # The app sees the disconnect and ends the work itself, while this loop still runs.
        for _ in range(600):
            stats = engine.stats()
            if stats["running_requests"] == 0 and stats["waiting_requests"] == 0:
                return stats
            await asyncio.sleep(0.05)
        return stats

    before = engine.stats()["generation_tokens"]
    stats = asyncio.run(leave_early())
    assert stats["running_requests"] == 0 and stats["waiting_requests"] == 0
    assert stats["generation_tokens"] - before < 400
    assert wait_until_idle(engine)["kv_blocks_used"] == 0
