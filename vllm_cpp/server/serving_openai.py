"""``POST /v1/chat/completions`` and ``POST /v1/completions``: the engine's
own OpenAI protocol room (``vllm_chat_submit_pull``,
``vllm_completion_submit_pull``) behind HTTP. The engine validates the body,
runs its ``n`` choices per prompt and writes the OpenAI JSON, the same way
for both endpoints; this layer adds the model check, the SSE framing and the
metrics. Streams always ask the engine for the usage chunk (the request log
and metrics need the token counts) and forward it only when the client
asked for it."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional

from ..errors import ContextLengthExceededError
from .generation import ProtocolRun
from .metrics import ServerMetrics
from .protocol import ApiError, context_length_exceeded, engine_body

#: Submits a request body on the engine's poller: Engine.asubmit_chat_pull
#: or Engine.asubmit_completions_pull.
Submit = Callable[..., Awaitable[Any]]


async def whole_response(run: ProtocolRun) -> Dict[str, Any]:
    """A blocking call's one delivery, the whole response JSON, parsed."""
    text = "".join([text async for text in run.texts()])
    if not text:  # cancelled natively: the server is shutting down
        raise ApiError(503, "the request was aborted: the server is shutting down")
    response = json.loads(text)
    run.timer.done()
    return response


class OpenAIServing:
    """One endpoint: ``submit`` is its engine entry point, ``ignored`` the
    documented fields it accepts and drops, ``prompt_param`` the field a
    context-length refusal names ("messages" or "prompt")."""

    def __init__(self, submit: Submit, model_name: str, metrics: ServerMetrics, ignored: Dict[str, Any],
                 prompt_param: str):
        self._submit = submit
        self._model = model_name
        self._metrics = metrics
        self._ignored = ignored
        self._prompt_param = prompt_param

    async def start(self, body: Dict[str, Any], stream: bool, model: Optional[str] = None) -> ProtocolRun:
        """Submit the call now (the engine's refusal raises here); ``model``:
        the name the response gives (a LoRA adapter's; default the served model's)."""
        sent = engine_body(body, model or self._model, self._ignored)
        sent["stream"] = stream
        if stream:
            sent["stream_options"] = {"include_usage": True}
        try:
            return await ProtocolRun.submitted(self._submit, sent, self._metrics.timer())
        except ContextLengthExceededError as exc:
            raise context_length_exceeded(exc, self._prompt_param) from None

    def _count_finishes(self, choices) -> None:
        for choice in choices:
            if choice.get("finish_reason") is not None:
                self._metrics.finished(choice["finish_reason"])

    async def complete(self, run: ProtocolRun) -> Dict[str, Any]:
        """The whole response (``chat.completion`` or ``text_completion``)."""
        response = await whole_response(run)
        self._count_finishes(response["choices"])
        return response

    async def stream(self, run: ProtocolRun, include_usage: bool,
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

