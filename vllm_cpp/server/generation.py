"""Engine requests as the handlers consume them: async streams of output
that never hold an executor thread while the engine works, cancel their
native request when the consumer leaves (a client disconnect cancels the
handler's task), and report timings to the metrics."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Tuple, TypeVar

from ..engine import Engine, Prompt, may_constrain
from ..outputs import Completion, TokenLogprob
from ..pull_requests import RequestEvents
from ..sampling_params import SamplingParams
from . import jsonio
from .metrics import RequestTimer

T = TypeVar("T")


class CompletionRun:
    """One engine completion, submitted by ``await CompletionRun.submitted(...)``
    (an engine refusal raises there, before any response is started; the
    native submit, which waits while a constraint compiles, runs off the
    event loop): ``outputs()`` yields its text as it is generated, with the
    new tokens' logprobs when asked for; then ``completion`` holds the whole
    result (with token ids and logprobs). ``cancel()`` cancels it, read or
    not (a reader then sees it end with finish reason "abort")."""

    def __init__(self, engine: Engine, timer: RequestTimer, token_ids: bool):
        self.timer = timer
        self.completion: Optional[Completion] = None
        self._engine = engine
        self._token_ids = token_ids
        self._events: RequestEvents

    @classmethod
    async def submitted(cls, engine: Engine, prompt: Prompt, params: SamplingParams, priority: int,
                        timer: RequestTimer, token_ids: bool = False) -> "CompletionRun":
        run = cls(engine, timer, token_ids)
        run._events = await RequestEvents.submitted(
            lambda events: engine.asubmit_pull(prompt, params, events, priority=priority),
            lambda request: setattr(run, "completion", request.completion()))
        return run

    def cancel(self) -> None:
        self._events.cancel()

    def prompt_logprobs(self) -> Tuple[Optional[TokenLogprob], ...]:
        """The prompt's logprobs, once its first token is out (the run's
        params asked for prompt_logprobs)."""
        return self._events.request.prompt_logprobs()

    async def outputs(self) -> AsyncIterator[Tuple[str, Optional[Tuple[TokenLogprob, ...]], Optional[List[int]]]]:
        """(text, logprobs, token ids) per engine event that has any: the
        text generated since the previous one, its tokens' logprobs (None
        unless the request asked for them) and their ids (None unless the
        run was made with ``token_ids``; a stop string's tokens, whose text
        never comes out, too)."""
        generated = 0
        async for event in self._events:
            ids = None
            if event.n_tokens:
                self.timer.output(event.n_tokens)
                if self._token_ids:
                    ids = self._events.request.token_ids(generated, event.n_tokens)
                generated += event.n_tokens
            if event.delta or event.logprobs or ids:
                logprobs = event.logprobs
                yield event.delta, (None if logprobs is None
                                    else tuple(TokenLogprob.from_native(e) for e in logprobs)), ids


class ChatRun:
    """One chat call through ``Engine.submit_chat``, submitted (and
    validated by the engine, off the event loop) by ``await
    ChatRun.submitted(...)``; ``texts()`` yields the JSON texts it delivers:
    chunks when the body streams, else the response."""

    def __init__(self, body: Dict[str, Any], timer: RequestTimer):
        self.timer = timer
        # A blocking call's one delivery is the whole response, not a token.
        self._timed = bool(body.get("stream"))
        self._events: RequestEvents

    @classmethod
    async def submitted(cls, engine: Engine, body: Dict[str, Any], timer: RequestTimer) -> "ChatRun":
        run = cls(body, timer)
        text = jsonio.dumps(body)  # the engine's JSON, written here by the server's one writer
        constrained = may_constrain(body)
        run._events = await RequestEvents.submitted(
            lambda events: engine.asubmit_chat_pull(text, events, constrained=constrained))
        return run

    def cancel(self) -> None:
        self._events.cancel()

    async def texts(self) -> AsyncIterator[str]:
        async for event in self._events:
            if event.delta:
                if self._timed:
                    self.timer.output()
                yield event.delta


async def merge(streams: List[AsyncIterator[T]]) -> AsyncIterator[T]:
    """The items of several async iterators as they come (one task each);
    leaving early cancels every task, so their requests are cancelled."""
    if len(streams) == 1:  # one choice: no tasks needed
        async for item in streams[0]:
            yield item
        return
    queue: "asyncio.Queue[tuple]" = asyncio.Queue()
    done = object()

    async def pump(stream: AsyncIterator[T]) -> None:
        try:
            async for item in stream:
                await queue.put((item, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            await queue.put((done, exc))
            raise
        await queue.put((done, None))

    tasks = [asyncio.ensure_future(pump(s)) for s in streams]
    try:
        left = len(tasks)
        while left:
            item, error = await queue.get()
            if item is done:
                if error is not None and not isinstance(error, asyncio.CancelledError):
                    raise error
                left -= 1
            else:
                yield item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


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
