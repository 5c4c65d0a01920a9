"""The request fields' definitions, one table per body: each field's JSON
Schema (type and bounds), its default and a description.

``/openapi.json`` comes from here (openapi.py), and the HTTP layer's few
readers (``protocol.read_field``: stream, parallel_tool_calls, /tokenize's
add_special_tokens) take a field's type, bounds and default from its entry.
Every other field is validated by the engine's protocol room, for
completions as for chat, so the entries state the engine's bounds
(test_server_openapi.py drives each endpoint's fields through it).
Which fields a body accepts stays in protocol.py's tuples
(``COMPLETION_FIELDS``, ``CHAT_FIELDS``); every name there has an entry
here (tests/serving/test_server_openapi.py checks it). Chat bodies are validated by
the engine's own parser (``src/chat/chat_request.cpp``), so ``CHAT`` states
the engine's types and bounds; the same test drives every chat field
through the engine to keep them equal. A value of ``null`` means the field
is absent, everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from .._ffi import INT32_MAX, INT32_MIN, INT64_MIN, UINT64_MAX


@dataclass(frozen=True)
class FieldSpec:
    schema: Dict[str, Any]      # JSON Schema of a value other than null
    description: str
    default: Any = None         # what an absent (or null) field means
    required: bool = False


def integer(lo: int, hi: int, default: Optional[int], description: str) -> FieldSpec:
    return FieldSpec({"type": "integer", "minimum": lo, "maximum": hi}, description, default)


def number(lo: Optional[float], hi: Optional[float], default: float, description: str,
           exclusive_lo: bool = False) -> FieldSpec:
    schema: Dict[str, Any] = {"type": "number"}
    if lo is not None:
        schema["exclusiveMinimum" if exclusive_lo else "minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    return FieldSpec(schema, description, default)


def boolean(default: bool, description: str) -> FieldSpec:
    return FieldSpec({"type": "boolean"}, description, default)


def other(schema: Dict[str, Any], description: str, required: bool = False) -> FieldSpec:
    return FieldSpec(schema, description, required=required)


_STRING = {"type": "string"}
_OBJECT = {"type": "object"}
_STRINGS = {"type": "array", "items": _STRING}
_TOKEN_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": INT32_MAX}}
_ACCEPTED = "accepted and ignored (an OpenAI field this server does not use)"

_MESSAGE = {"type": "object", "required": ["role"], "properties": {
    "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
    "content": {"anyOf": [_STRING, {"type": "array", "items": {
        "type": "object", "required": ["type", "text"],
        "properties": {"type": {"const": "text"}, "text": _STRING}}}, {"type": "null"}]},
    "name": _STRING, "tool_call_id": _STRING,
    "tool_calls": {"type": "array", "items": {"type": "object", "required": ["function"], "properties": {
        "id": _STRING, "type": {"const": "function"}, "function": {
            "type": "object", "required": ["name", "arguments"],
            "properties": {"name": _STRING, "arguments": _STRING}}}}}}}
_TOOL = {"type": "object", "required": ["type", "function"], "properties": {
    "type": {"const": "function"}, "function": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1}, "description": _STRING, "parameters": _OBJECT}}}}

#: Fields with one meaning wherever a body takes them.
_COMMON: Dict[str, FieldSpec] = {
    "model": other(_STRING, "the served model name (absent: the one model served)"),
    "stream": boolean(False, "send the answer as server-sent events"),
    "stream_options": other({"type": "object", "properties": {
        "include_usage": {"type": "boolean"}, "continuous_usage_stats": {"type": "boolean"}},
        "additionalProperties": False}, "with stream: include_usage adds a final chunk with the token counts"),
    "stop": other({"anyOf": [_STRING, _STRINGS]}, "strings that end the output where they appear"),
    "presence_penalty": number(-2.0, 2.0, 0.0, "penalty for tokens already in the output"),
    "frequency_penalty": number(-2.0, 2.0, 0.0, "penalty per occurrence of a token in the output"),
    "user": other(_STRING, "an end-user id (accepted, not used)"),
    "top_k": integer(-1, INT32_MAX, 0, "sample from the k most likely tokens (0 or -1: all)"),
    "min_p": number(0.0, 1.0, 0.0, "drop tokens less likely than min_p times the most likely one"),
    "min_tokens": integer(0, INT32_MAX, 0, "tokens generated before EOS or a stop may end the output"),
    "ignore_eos": boolean(False, "keep generating past the end-of-sequence token"),
    "priority": integer(INT32_MIN, INT32_MAX, 0, "scheduling priority (lower runs first with the priority policy)"),
    "response_format": other({"type": "object", "properties": {
        "type": {"enum": ["text", "json_object", "json_schema"]},
        "json_schema": {"type": "object", "properties": {"name": _STRING, "schema": _OBJECT}}},
        "required": ["type"]}, "constrain the output to JSON (json_object) or to a JSON Schema"),
    "guided_json": other({"anyOf": [_OBJECT, _STRING]}, "vLLM's: a JSON Schema the output follows"),
    "guided_regex": other(_STRING, "vLLM's: a regular expression the output matches"),
    "guided_choice": other(_STRINGS, "vLLM's: the output is one of these strings"),
    "guided_grammar": other(_STRING, "vLLM's: a GBNF grammar the output follows"),
    "structured_outputs": other({"type": "object", "properties": {
        "json": {"anyOf": [_OBJECT, _STRING]}, "regex": _STRING, "choice": _STRINGS, "grammar": _STRING,
        "json_object": {"type": "boolean"}}, "additionalProperties": False},
        "vLLM's: one constraint (json, regex, choice, grammar or json_object)"),
    "return_token_ids": boolean(False, "vLLM's: answer with the prompt's and the output's token ids"),
    "logit_bias": other({"type": "object", "additionalProperties": {"type": "number", "minimum": -100,
                                                                    "maximum": 100}},
                        "token ids (as strings) to a bias in [-100, 100] added to their logits"),
    "allowed_token_ids": other(_TOKEN_IDS, "vLLM's: only these tokens may be generated"),
    "stop_token_ids": other(_TOKEN_IDS, "vLLM's: generating one of these ends the output"),
    "include_stop_str_in_output": boolean(False, "vLLM's: keep a matched stop string in the output"),
    "skip_special_tokens": boolean(True, "vLLM's: leave control tokens' text out of the output"),
    "bad_words": other(_STRINGS, "vLLM's: words the output may not contain"),
    "return_tokens_as_token_ids": boolean(False, "vLLM's: logprobs name tokens 'token_id:<id>'"),
    "functions": other({"type": "array", "items": _TOOL["properties"]["function"]},
                       "OpenAI's legacy form of tools (each a function)"),
    "function_call": other({"anyOf": [{"enum": ["none", "auto"]}, {
        "type": "object", "required": ["name"], "properties": {"name": _STRING}}]},
        "OpenAI's legacy form of tool_choice"),
    # OpenAI fields clients send that the server accepts and does not use
    # (a value of OpenAI's type is accepted).
    "store": other({"type": "boolean"}, _ACCEPTED),
    "metadata": other({"type": "object", "additionalProperties": _STRING}, _ACCEPTED),
    "modalities": other({"type": "array", "items": {"const": "text"}}, _ACCEPTED + "; only text"),
    "prediction": other(_OBJECT, _ACCEPTED),
    **{name: other(_STRING, _ACCEPTED) for name in (
        "service_tier", "prompt_cache_key", "safety_identifier", "verbosity")},
    "reasoning_effort": other(_STRING, "the chat template's reasoning_effort variable (gpt-oss: low, medium, "
                                       "high), unless chat_template_kwargs sets it"),
}

_PROMPT = {"anyOf": [_STRING, {"type": "array", "minItems": 1, "items": _STRING},
                     dict(_TOKEN_IDS, minItems=1),
                     {"type": "array", "minItems": 1, "items": dict(_TOKEN_IDS, minItems=1)}]}

#: POST /v1/completions (validated by the engine: chat/completion_request.h).
COMPLETION: Dict[str, FieldSpec] = dict(_COMMON, **{
    "prompt": other(_PROMPT, "a string, strings, a list of token ids or lists of them", required=True),
    "max_tokens": integer(0, INT32_MAX, 16, "most tokens generated per choice (0 only with echo)"),
    "temperature": number(0.0, None, 1.0, "sampling temperature (0: greedy)"),
    "top_p": number(0.0, 1.0, 1.0, "nucleus sampling probability mass, in (0, 1]", exclusive_lo=True),
    "n": integer(1, 128, 1, "choices per prompt"),
    "best_of": integer(1, 128, None, "only equal to n is supported"),
    "logprobs": integer(0, 20, None, "log-probabilities of each output token and its k most likely alternatives"),
    "echo": boolean(False, "each choice's text starts with its prompt"),
    "seed": integer(INT64_MIN, UINT64_MAX, None, "sampling seed (choice i uses seed + i; a negative one is "
                    "the unsigned seed of the same 64 bits)"),
    "suffix": other(_STRING, "not supported: refused when given"),
    "repetition_penalty": number(0.0, None, 1.0, "vLLM's: divides (or multiplies) the logits of seen tokens",
                                 exclusive_lo=True),
    "truncate_prompt_tokens": integer(-1, INT32_MAX, None,
                                      "vLLM's: keep the prompt's last k tokens (-1, the model's length, is refused)"),
    "prompt_logprobs": integer(0, 20, None, "vLLM's: each prompt token's log-probability and k alternatives"),
})

#: POST /v1/chat/completions (validated by the engine: src/chat/chat_request.cpp).
CHAT: Dict[str, FieldSpec] = dict(_COMMON, **{
    "messages": other({"type": "array", "minItems": 1, "items": _MESSAGE}, "the conversation", required=True),
    "max_tokens": integer(1, INT32_MAX, None, "most tokens generated per choice (deprecated name)"),
    "max_completion_tokens": integer(1, INT32_MAX, None, "most tokens generated per choice"),
    "temperature": number(0.0, None, 1.0, "sampling temperature (0: greedy)"),
    "top_p": number(0.0, 1.0, 1.0, "nucleus sampling probability mass, in (0, 1]", exclusive_lo=True),
    "n": integer(1, 128, 1, "choices"),
    "logprobs": boolean(False, "log-probabilities of the output tokens"),
    "top_logprobs": integer(0, 20, 0, "with logprobs: the k most likely alternatives of each token"),
    "seed": other({"type": "integer"}, "sampling seed (choice i uses seed + i)"),
    "tools": other({"type": "array", "items": _TOOL}, "functions the model may call"),
    "tool_choice": other({"anyOf": [{"enum": ["none", "auto", "required"]}, {
        "type": "object", "required": ["type", "function"], "properties": {
            "type": {"const": "function"}, "function": {"type": "object", "required": ["name"],
                                                        "properties": {"name": _STRING}}}}]},
        "none, auto (needs --enable-auto-tool-choice), required, or a named function"),
    "parallel_tool_calls": boolean(True, "accepted; every call found is returned"),
    "repetition_penalty": number(0.0, None, 1.0, "vLLM's: divides (or multiplies) the logits of seen tokens",
                                 exclusive_lo=True),
    "chat_template_kwargs": other(_OBJECT, "vLLM's: extra variables for the chat template"),
    "add_generation_prompt": boolean(True, "vLLM's: end the prompt with the assistant turn's opening"),
    "continue_final_message": boolean(False, "vLLM's: continue the last (assistant) message"),
    "chat_template": other({"type": "string", "minLength": 1},
                           "vLLM's: the request's own template (needs --trust-request-chat-template)"),
    "truncate_prompt_tokens": integer(1, INT32_MAX, None, "vLLM's: keep the prompt's last k tokens"),
    "thinking_token_budget": integer(0, INT32_MAX, None, "vLLM's: most reasoning tokens before the engine ends "
                                     "the reasoning section (needs a reasoning parser)"),
})

#: POST /tokenize: a completion's prompt, or a chat's messages rendered by the template.
TOKENIZE: Dict[str, FieldSpec] = {
    "model": _COMMON["model"],
    "prompt": other(_STRING, "text to tokenize (or give messages)"),
    "add_special_tokens": boolean(True, "with prompt: add the tokenizer's special tokens (BOS)"),
    "messages": CHAT["messages"],
    "add_generation_prompt": CHAT["add_generation_prompt"],
    "continue_final_message": CHAT["continue_final_message"],
    "chat_template_kwargs": CHAT["chat_template_kwargs"],
    "tools": CHAT["tools"],
    "chat_template": CHAT["chat_template"],
}

#: POST /detokenize.
DETOKENIZE: Dict[str, FieldSpec] = {
    "model": _COMMON["model"],
    "tokens": other(_TOKEN_IDS, "token ids to turn back into text", required=True),
}
