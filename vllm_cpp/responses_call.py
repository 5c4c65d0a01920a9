"""The OpenAI Responses API's translation, done by the engine's protocol
room (``vllm_responses_begin`` / ``_feed`` / ``_finish``): a Responses
request becomes the chat request it runs as, and that chat call's output
(its chunks, or the ``chat.completion``) becomes the Responses events and
the ``response`` object. The generation itself is the chat call's (one
road); this wraps the native translator object."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from . import _ffi
from ._ffi import decode_cstr, encode_str, ffi, lib


def _taken_string(out, field: str) -> str:
    """The library-allocated string in ``out[0]``, freed."""
    try:
        return decode_cstr(out[0], field) or ""
    finally:
        lib.vllm_string_free(out[0])


class ResponsesCall:
    """One Responses request's translation. ``chat_request`` is the chat
    body to run; ``feed`` each chat output text; ``finish`` once at the end.
    Not thread-safe (one consumer, as the native object)."""

    def __init__(self, request: str, history: Optional[List[Dict[str, Any]]], response_id: str,
                 created_at: int):
        call = ffi.new("vllm_responses_call**")
        out = ffi.new("char**")
        history_b = encode_str(json.dumps(history), "history") if history is not None else ffi.NULL
        status = lib.vllm_responses_begin(encode_str(request, "request"), history_b,
                                          encode_str(response_id, "response_id"), int(created_at), call, out)
        _ffi.check(status)
        self._call = ffi.gc(call[0], lib.vllm_responses_free)
        self.chat_request: str = _taken_string(out, "chat request")

    def feed(self, chat_output: str) -> List[Dict[str, Any]]:
        """The events one chat chunk makes (none for a ``chat.completion``)."""
        out = ffi.new("char**")
        status = lib.vllm_responses_feed(self._call, encode_str(chat_output, "chat output"), out)
        _ffi.check(status)
        return json.loads(_taken_string(out, "events"))

    def finish(self) -> Tuple[List[Dict[str, Any]], Dict[str, Any], List[Dict[str, Any]]]:
        """(the closing events, the response object, the conversation with
        its output: what a later ``previous_response_id`` continues)."""
        out = ffi.new("char**")
        _ffi.check(lib.vllm_responses_finish(self._call, out))
        result = json.loads(_taken_string(out, "response"))
        return result["events"], result["response"], result["conversation"]
