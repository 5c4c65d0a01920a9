"""One HTTP request carried from the Serve ingress to an engine replica, and
its run through the replica's ASGI app (the server's own Starlette app).

The ingress reads the whole body before routing, because a router that
places requests by prompt prefix must see the prompt; Serve's HTTP proxy
routes on the headers alone. The replica then drives its app in-process as
uvicorn would (``http.request`` with the body, ``http.disconnect`` once the
caller goes away) and yields the app's ASGI messages, which the ingress
sends on unchanged. Plain ASGI: nothing here needs Ray."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

# Characters of prompt text a router looks at: system prompts and few-shot
# examples sit at the start, and hashing more costs the ingress time.
ROUTING_TEXT_CHARS = 8192


@dataclass
class ForwardedRequest:
    method: str
    path: str
    query_string: bytes
    headers: List[Tuple[bytes, bytes]]
    body: bytes
    client: Optional[Tuple[str, int]] = None
    # The prompt's leading text, for prefix-affinity routing ("" when the
    # body has none: GET routes, tokens-only prompts, bodies that are not JSON).
    routing_text: str = field(default="")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI / Anthropic content parts
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def routing_text(body: bytes) -> str:
    """The start of the prompt a request's JSON body carries, in the order
    the model reads it: ``system`` (Anthropic), ``messages`` (role and
    content), ``instructions`` + ``input`` (Responses), or ``prompt``."""
    if not body.lstrip().startswith(b"{"):
        return ""
    try:
        request = json.loads(body)
    except ValueError:
        return ""  # the replica's app answers the parse error
    if not isinstance(request, dict):
        return ""
    pieces: List[str] = [_content_text(request.get("system")), _content_text(request.get("instructions"))]
    messages = request.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict):
                pieces.append("%s:%s\n" % (message.get("role", ""), _content_text(message.get("content"))))
    for key in ("input", "prompt"):
        value = request.get(key)
        if isinstance(value, list) and value and isinstance(value[0], str):
            value = value[0]  # a batch of prompts: the first places it
        pieces.append(_content_text(value))
    return "".join(pieces)[:ROUTING_TEXT_CHARS]


def http_scope(request: ForwardedRequest) -> Dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": request.method, "scheme": "http", "path": request.path,
            "raw_path": request.path.encode(), "root_path": "", "query_string": request.query_string,
            "headers": list(request.headers), "client": request.client, "server": None, "state": {}}


async def run_app(app, request: ForwardedRequest,
                  extra_headers: Tuple[Tuple[bytes, bytes], ...] = ()) -> AsyncIterator[Dict[str, Any]]:
    """Run ``app`` on ``request``; yield its ``http.response.*`` messages
    (``extra_headers`` added to the start). If the consumer stops early
    (its client left, Serve cancelled the call) the app receives
    ``http.disconnect`` and finishes on its own, so the engine work it
    started is cancelled by the app's usual clean-up."""
    messages: asyncio.Queue = asyncio.Queue()
    gone = asyncio.Event()
    body_sent = [False]

    async def receive() -> Dict[str, Any]:
        if not body_sent[0]:
            body_sent[0] = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Dict[str, Any]) -> None:
        if gone.is_set():
            # Dropped, as uvicorn drops sends after a disconnect under ASGI spec 2.3: the app
            # learns of it from receive() and ends through its own clean-up (which cancels the
            # engine request), where an exception here would skip that clean-up.
            return
        if message["type"] == "http.response.start" and extra_headers:
            message = dict(message, headers=list(message.get("headers", [])) + list(extra_headers))
        await messages.put(message)

    async def run() -> None:
        try:
            await app(http_scope(request), receive, send)
        finally:
            await messages.put(None)

    task = asyncio.ensure_future(run())
    finished = False
    try:
        while True:
            message = await messages.get()
            if message is None:
                finished = True
                break
            yield message
        await task  # an exception the app let through is the caller's
    finally:
        if not finished:
            gone.set()
            # The app ends by itself once it sees the disconnect; keep its
            # outcome from being reported as never retrieved.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
