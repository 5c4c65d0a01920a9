"""Engine requests as the handlers consume them: async streams of output
that never hold an executor thread while the engine works, cancel their
native request when the consumer leaves (a client disconnect cancels the
handler's task), and report timings to the metrics."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, TypeVar

from ..engine import may_constrain
from ..pull_requests import RequestEvents
from . import jsonio
from .metrics import RequestTimer

T = TypeVar("T")


class ProtocolRun:
    """One OpenAI call through the engine's protocol room (chat or
    completions), submitted (and validated by the engine, off the event
    loop when it may compile a constraint) by ``await
    ProtocolRun.submitted(...)``; ``texts()`` yields the JSON texts it
    delivers: chunks when the body streams, else the response."""

    def __init__(self, body: Dict[str, Any], timer: RequestTimer):
        self.timer = timer
        # A blocking call's one delivery is the whole response, not a token.
        self._timed = bool(body.get("stream"))
        self._events: RequestEvents

    @classmethod
    async def submitted(cls, submit: Callable[..., Awaitable[Any]], body: Dict[str, Any],
                        timer: RequestTimer) -> "ProtocolRun":
        """``submit``: Engine.asubmit_chat_pull or asubmit_completions_pull."""
        run = cls(body, timer)
        text = jsonio.dumps(body)  # the engine's JSON, written here by the server's one writer
        constrained = may_constrain(body)
        run._events = await RequestEvents.submitted(lambda events: submit(text, events, constrained=constrained))
        return run

    def cancel(self) -> None:
        self._events.cancel()

    async def texts(self) -> AsyncIterator[str]:
        async for event in self._events:
            if event.delta:
                if self._timed:
                    self.timer.output()
                yield event.delta


async def until_disconnected(receive: Callable[[], Awaitable[Dict[str, Any]]], work: Awaitable[T]) -> T:
    """``await work``, cancelled if the client disconnects first (the body
    has been read, so the next ASGI message is the disconnect)."""
    task = asyncio.ensure_future(work)

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise ClientDisconnected()
        return task.result()
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()


class ClientDisconnected(Exception):
    """The client went away before its response was ready."""
