"""``POST /v1/chat/completions``: the engine's own chat (``vllm_chat_submit``)
behind HTTP. The engine validates the body, renders the template, runs the
choices and writes the OpenAI JSON; this layer adds the model check, the
SSE framing and the metrics. Streams always ask the engine for the usage
chunk (the request log and metrics need the token counts) and forward it
only when the client asked for it."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict

from ..engine import Engine
from ..errors import ContextLengthExceededError
from .generation import ChatRun
from .metrics import ServerMetrics
from .protocol import ApiError, context_length_exceeded, engine_chat_body


class ChatServing:
    def __init__(self, engine: Engine, model_name: str, metrics: ServerMetrics):
        self._engine = engine
        self._model = model_name
        self._metrics = metrics

    async def start(self, body: Dict[str, Any], stream: bool) -> ChatRun:
        """Submit the call now (the engine's refusal raises here)."""
        engine_body = engine_chat_body(body, self._model)
        engine_body["stream"] = stream
        if stream:
            engine_body["stream_options"] = {"include_usage": True}
        try:
            return await ChatRun.submitted(self._engine, engine_body, self._metrics.timer())
        except ContextLengthExceededError as exc:
            raise context_length_exceeded(exc, "messages") from None

    def _count_finishes(self, choices) -> None:
        for choice in choices:
            if choice.get("finish_reason") is not None:
                self._metrics.finished(choice["finish_reason"])

    async def complete(self, run: ChatRun) -> Dict[str, Any]:
        """The ``chat.completion`` response."""
        text = "".join([text async for text in run.texts()])
        if not text:  # cancelled natively: the server is shutting down
            raise ApiError(503, "the request was aborted: the server is shutting down")
        response = json.loads(text)
        run.timer.done()
        self._count_finishes(response["choices"])
        return response

    async def stream(self, run: ChatRun, include_usage: bool,
                     usage_out: Dict[str, int]) -> AsyncIterator[str]:
        """The SSE ``data:`` payloads: the engine's chunks, then ``[DONE]``."""
        async for text in run.texts():
            chunk = json.loads(text)
            if chunk.get("usage") is not None and not chunk["choices"]:
                usage_out.update(chunk["usage"])
                if include_usage:
                    yield text
                continue
            self._count_finishes(chunk["choices"])
            yield text
        run.timer.done()
        yield "[DONE]"
