"""``POST /v1/responses``, ``GET`` and ``DELETE /v1/responses/{id}``:
OpenAI's Responses API over the chat road. The engine's protocol room
translates (``responses_call.ResponsesCall``: the request into the chat
request it runs as, the chat output into the response object and its
events); the chat call runs as ``/v1/chat/completions`` runs it, with the
same HTTP checks (auto tool choice, request templates). This layer adds the
documented-field check, the SSE framing (``event:`` and ``data:`` lines, as
OpenAI sends them) and the bounded in-memory store behind ``store`` and
``previous_response_id``."""

from __future__ import annotations

import collections
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Dict, List, Optional

from ..errors import VllmError
from ..responses_call import ResponsesCall
from . import jsonio, schema
from .generation import ProtocolRun
from .limits import RequestLimits, cap_default_max_tokens, check_limits
from .protocol import ENGINE_REFUSALS, ApiError, check_fields, invalid, parse_chat_request
from .serving_openai import OpenAIServing

#: The fields OpenAI documents for a Responses request (those the engine
#: does not use are accepted and ignored, or refused by it naming the field
#: when their value asks for what is not supported), and vLLM's sampling extras.
RESPONSES_FIELDS = (
    "model", "input", "instructions", "tools", "tool_choice", "text", "max_output_tokens", "temperature",
    "top_p", "stream", "stream_options", "store", "previous_response_id", "metadata", "user",
    "parallel_tool_calls", "truncation", "include", "reasoning", "service_tier", "background", "conversation",
    "prompt", "max_tool_calls", "top_logprobs", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
    # vLLM's extras
    "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "min_tokens",
    "ignore_eos", "priority", "chat_template_kwargs", "thinking_token_budget",
)


#: --responses-store-max-bytes' default: 256 MiB of stored responses.
DEFAULT_STORE_MAX_BYTES = 256 << 20

@dataclass
class StoredResponse:
    response: Dict[str, Any]
    conversation: List[Dict[str, Any]]  # its input and output items, for previous_response_id
    stored_at: float
    size: int  # the bytes of both as JSON, counted against the store's byte limit


class ResponseStore:
    """The responses kept for ``GET`` and ``previous_response_id``: at most
    ``max_entries`` holding at most ``max_bytes`` (a response and its
    conversation as JSON; the oldest go first, and one larger than the whole
    limit is not kept), each for ``max_age_s`` seconds. ``max_entries`` 0
    keeps none."""

    def __init__(self, max_entries: int, max_age_s: float, clock: Callable[[], float] = time.monotonic,
                 max_bytes: int = DEFAULT_STORE_MAX_BYTES):
        self._max_entries = max_entries
        self._max_age_s = max_age_s
        self._max_bytes = max_bytes
        self._clock = clock
        self._entries: "collections.OrderedDict[str, StoredResponse]" = collections.OrderedDict()
        self._bytes = 0

    def _pop_oldest(self) -> None:
        self._bytes -= self._entries.popitem(last=False)[1].size

    def _expire(self) -> None:
        oldest_kept = self._clock() - self._max_age_s
        while self._entries and next(iter(self._entries.values())).stored_at < oldest_kept:
            self._pop_oldest()

    def put(self, response: Dict[str, Any], conversation: List[Dict[str, Any]]) -> None:
        self._expire()
        size = len(json.dumps(response, ensure_ascii=False).encode()) + \
            len(json.dumps(conversation, ensure_ascii=False).encode())
        if self._max_entries <= 0 or size > self._max_bytes:
            return
        self.delete(response["id"])
        self._entries[response["id"]] = StoredResponse(response, conversation, self._clock(), size)
        self._bytes += size
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            self._pop_oldest()

    @property
    def stored_bytes(self) -> int:
        return self._bytes

    def get(self, response_id: str) -> Optional[StoredResponse]:
        self._expire()
        return self._entries.get(response_id)

    def delete(self, response_id: str) -> bool:
        self._expire()
        entry = self._entries.pop(response_id, None)
        if entry is not None:
            self._bytes -= entry.size
        return entry is not None

    def __len__(self) -> int:
        self._expire()
        return len(self._entries)


def not_found(response_id: str, param: Optional[str] = None) -> ApiError:
    return ApiError(404, "Response with id '%s' not found." % response_id, param=param, code="response_not_found")


class ResponsesRun:
    """One Responses request: its translation and the chat call it runs as."""

    def __init__(self, call: ResponsesCall, run: ProtocolRun):
        self.call = call
        self.run = run

    def cancel(self) -> None:
        self.run.cancel()


class ResponsesServing:
    """``chat``: an OpenAIServing over the engine's chat entry point (its
    context-length refusals name "input"); ``limits`` and ``max_model_len``
    bound the chat request as they bound /v1/chat/completions."""

    def __init__(self, chat: OpenAIServing, model_name: str, store: ResponseStore, auto_tool_choice: bool,
                 trust_chat_template: bool, limits: RequestLimits, max_model_len: Optional[int]):
        self._chat = chat
        self._model = model_name
        self.store = store
        self._auto_tool_choice = auto_tool_choice
        self._trust_chat_template = trust_chat_template
        self._limits = limits
        self._max_model_len = max_model_len

    def begin(self, body: Dict[str, Any], model: Optional[str] = None) -> ResponsesCall:
        """The translation (the engine's refusal raises here); 404 for a
        previous_response_id not stored. ``model``: the name the response
        gives (a LoRA adapter's; default the served model's)."""
        check_fields(body, RESPONSES_FIELDS)
        history = None
        previous = body.get("previous_response_id")
        if isinstance(previous, str):  # other types: the engine refuses them, naming the field
            stored = self.store.get(previous)
            if stored is None:
                raise not_found(previous, param="previous_response_id")
            history = stored.conversation
        body = dict(body, model=model or self._model)
        return ResponsesCall(jsonio.dumps(body), history, "resp_" + uuid.uuid4().hex, int(time.time()))

    async def start(self, call: ResponsesCall, lora_int_id: Optional[int] = None) -> ResponsesRun:
        """Runs the translated chat request (on the LoRA adapter
        ``lora_int_id`` when given: the server's choice by the request's model)."""
        chat_body = json.loads(call.chat_request)
        try:
            check_limits(chat_body, self._limits, self._max_model_len)
        except ApiError as exc:  # the bound on max_output_tokens, read as chat's max_completion_tokens
            if exc.param != "max_completion_tokens":
                raise
            raise invalid(exc.message.replace("'max_completion_tokens'", "'max_output_tokens'"),
                          param="max_output_tokens") from None
        cap_default_max_tokens(chat_body, self._limits, schema.CHAT["max_tokens"].default)
        stream, _ = parse_chat_request(chat_body, self._auto_tool_choice, self._trust_chat_template)
        if lora_int_id:  # after the HTTP checks, as the chat route names it
            chat_body["lora_int_id"] = lora_int_id
        run = await self._chat.start(chat_body, stream, chat_body.get("model"))
        return ResponsesRun(call, run)

    def _finish(self, run: ResponsesRun) -> List[Dict[str, Any]]:
        """The closing events; the response is stored when it asks to be."""
        events, response, conversation = run.call.finish()
        if response.get("store", True):
            self.store.put(response, conversation)
        return events

    async def complete(self, run: ResponsesRun) -> Dict[str, Any]:
        completion = await self._chat.complete(run.run)
        run.call.feed(json.dumps(completion))
        events = self._finish(run)
        return events[-1]["response"]

    async def stream(self, run: ResponsesRun, usage_out: Dict[str, int]) -> AsyncIterator[str]:
        """The SSE events, each with its ``event:`` line."""
        sent = 0  # events, so an error is numbered after them
        try:
            async for text in self._chat.stream(run.run, True, usage_out):
                if text != "[DONE]":
                    for event in run.call.feed(text):
                        sent += 1
                        yield _frame(event)
            for event in self._finish(run):
                sent += 1
                yield _frame(event)
        except VllmError as exc:  # once streaming, a failure is the stream's last event (OpenAI's "error")
            status = 400 if isinstance(exc, ENGINE_REFUSALS) else 500
            yield _frame({"type": "error", "code": ApiError.TYPES.get(status), "message": str(exc), "param": None,
                          "sequence_number": sent})

    def retrieve(self, response_id: str) -> Dict[str, Any]:
        stored = self.store.get(response_id)
        if stored is None:
            raise not_found(response_id)
        return stored.response

    def delete(self, response_id: str) -> Dict[str, Any]:
        if not self.store.delete(response_id):
            raise not_found(response_id)
        return {"id": response_id, "object": "response", "deleted": True}


def _frame(event: Dict[str, Any]) -> str:
    return "event: %s\ndata: %s\n\n" % (event["type"], json.dumps(event))
