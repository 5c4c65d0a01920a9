"""The HTTP layer's checks of OpenAI request bodies and its error bodies,
with no I/O.

The OpenAI protocol itself (every field of a chat or completions body, the
choices, the responses) is the engine's (its protocol room,
``third_party/vllm.cpp/src/chat``): one parser for both endpoints, so they
refuse a value with the same message, and :func:`engine_refusal` answers it
with the same 400 (``param``: the field the message names). Here bodies
only get the checks that belong to the HTTP layer: a JSON object, known
top-level fields (OpenAI refuses others; the C ABI ignores them), the model
name, numbers JSON can carry on, the stream flags the server frames its
answer by, and the server's own policies (auto tool choice, request
templates).
"""

from __future__ import annotations

import logging
import math
import re
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

from ..errors import ContextLengthExceededError, InteriorNulError, InvalidArgumentError, InvalidConfigurationError
from . import jsonio, schema

logger = logging.getLogger("vllm_cpp.server")


class ApiError(Exception):
    """An error answered as OpenAI does:
    ``{"error": {"message", "type", "param", "code"}}`` with ``status``."""

    TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             408: "timeout_error", 413: "invalid_request_error", 429: "rate_limit_error",
             503: "server_overloaded", 500: "internal_server_error"}

    def __init__(self, status: int, message: str, param: Optional[str] = None,
                 code: Optional[str] = None, headers: Optional[Dict[str, str]] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers  # response headers besides the JSON's (Retry-After)

    def body(self) -> Dict[str, Any]:
        return {"error": {"message": self.message, "type": self.TYPES.get(self.status, "error"),
                          "param": self.param, "code": self.code}}


def invalid(message: str, param: Optional[str] = None) -> ApiError:
    return ApiError(400, message, param=param)


#: What the engine (or the Python conversion before it) refuses: a 400.
ENGINE_REFUSALS = (InvalidArgumentError, InvalidConfigurationError, InteriorNulError)

#: The request field an engine message opens with: 'top_p' must be ...,
#: 'stop[1]' must be ..., 'messages[0].role' ... (its first name).
_NAMED_FIELD = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)[\[.']")


def engine_refusal(error: Exception) -> ApiError:
    """The 400 of an engine refusal, the same for every endpoint: the
    engine's message, and as ``param`` the request field it names (None
    when it names none)."""
    message = str(error)
    named = _NAMED_FIELD.match(message)
    return invalid(message, param=named.group(1) if named else None)


def context_length_exceeded(error: ContextLengthExceededError, param: str) -> ApiError:
    """OpenAI's answer to a prompt past the context (``code``
    "context_length_exceeded", which LangChain and litellm match), with the
    engine's (vLLM's) wording; ``param`` is "messages" or "prompt"."""
    return ApiError(400, error.message, param=param, code="context_length_exceeded")


def parse_body(raw: bytes) -> Dict[str, Any]:
    """The request body as a JSON object (400 otherwise)."""
    try:
        body = jsonio.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid("the request body is not valid JSON: %s" % exc) from None
    except RecursionError:  # Python's parser recurses per nesting level
        raise invalid("the request body is nested too deeply (limit about %d levels, Python's recursion limit)"
                      % sys.getrecursionlimit()) from None
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object, not %s" % type(body).__name__)
    return body


def check_fields(body: Dict[str, Any], known: Sequence[str]) -> None:
    """OpenAI refuses arguments it does not know; so do we."""
    for name in body:
        if name not in known:
            raise invalid("unrecognized request argument: '%s'" % name, param=name)


def check_model(body: Dict[str, Any], served_names: Sequence[str]) -> None:
    model = body.get("model")
    if model is None:
        return  # vLLM serves its one model when the field is left out
    if not isinstance(model, str):
        raise invalid("'model' must be a string", param="model")
    if model not in served_names:
        raise ApiError(404, "The model '%s' does not exist (served: %s)"
                       % (model, ", ".join(served_names)), param="model", code="model_not_found")


# --------------------------------------------------------------------------
# Documented OpenAI fields the server accepts and does not use. Clients send
# them (the Agents SDK forwards store and metadata); vLLM accepts them and
# logs them, and so do we, refusing only a value of the wrong type. Fields
# nobody documents stay refused (check_fields). Chat bodies go on to the
# engine, which reads what it knows and ignores the rest (the C ABI's rule);
# these are taken out before it.


def _is_string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


#: name -> (what it must be, the check)
IGNORED_CHAT_FIELDS = {
    "store": ("a boolean", lambda v: isinstance(v, bool)),
    "metadata": ("an object of strings", _is_string_map),
    "service_tier": ("a string", lambda v: isinstance(v, str)),
    "prompt_cache_key": ("a string", lambda v: isinstance(v, str)),
    "safety_identifier": ("a string", lambda v: isinstance(v, str)),
    "modalities": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(m, str) for m in v)),
    "prediction": ("an object", lambda v: isinstance(v, dict)),
    "verbosity": ("a string", lambda v: isinstance(v, str)),
}
#: The legacy completions API documents nothing beyond what the server reads.
IGNORED_COMPLETION_FIELDS: Dict[str, Any] = {}


def accept_ignored(body: Dict[str, Any], ignored: Dict[str, Any]) -> None:
    """Checks the type of each ignored field present (400 naming it) and
    logs their names once, at debug level."""
    present = [name for name in body if name in ignored and body[name] is not None]
    for name in present:
        wanted, check = ignored[name]
        if not check(body[name]):
            raise _type_error(name, wanted, body[name])
    modalities = body.get("modalities")
    if isinstance(modalities, list) and any(m != "text" for m in modalities):
        raise invalid("'modalities' other than [\"text\"] are not supported (this server writes text only)",
                      param="modalities")
    if present:
        logger.debug("the request's fields %s are accepted and ignored", ", ".join(present))


# --------------------------------------------------------------------------
# Typed field readers: each names the field it refuses.


#: JSON's kinds as the engine names them in its messages.
_KINDS = {type(None): "null", bool: "bool", int: "int", float: "float", str: "string", list: "array",
          dict: "object"}


def _type_message(name: str, wanted: str, value: Any) -> str:
    """Worded as the engine words it ("'n' must be an integer (got string)")."""
    return "'%s' must be %s (got %s)" % (name, wanted, _KINDS.get(type(value), type(value).__name__))


def _type_error(name: str, wanted: str, value: Any) -> ApiError:
    return invalid(_type_message(name, wanted, value), param=name)


def read_bool(body: Dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _type_error(name, "a boolean", value)
    return value


def read_int(body: Dict[str, Any], name: str, default: Optional[int], lo: int, hi: int) -> Optional[int]:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(name, "an integer", value)
    if not lo <= value <= hi:
        raise invalid("'%s' must be between %d and %d (got %d)" % (name, lo, hi, value), param=name)
    return value


def read_number(body: Dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _type_error(name, "a finite number", value)
    if not lo <= value <= hi:
        raise invalid("'%s' must be in [%g, %g] (got %g)" % (name, lo, hi, value), param=name)
    return float(value)


def read_field(body: Dict[str, Any], name: str, table: Dict[str, "schema.FieldSpec"]) -> Any:
    """A boolean, integer or number field read by its definition in
    ``table`` (a schema.py table): its type, bounds and default."""
    spec = table[name]
    kind = spec.schema["type"]
    if kind == "boolean":
        return read_bool(body, name, spec.default)
    if kind == "integer":
        return read_int(body, name, spec.default, spec.schema["minimum"], spec.schema["maximum"])
    return read_number(body, name, spec.default, spec.schema["minimum"], spec.schema["maximum"])


def read_user(body: Dict[str, Any]) -> None:
    """OpenAI's end-user id: a string, not used."""
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise _type_error("user", "a string", user)


def read_include_usage(body: Dict[str, Any]) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise _type_error("stream_options", "an object", options)
    check_fields(options, ("include_usage", "continuous_usage_stats"))
    return read_bool(options, "include_usage", False)


# --------------------------------------------------------------------------
# /v1/completions: the engine parses the body (vllm_completion_submit_pull).

COMPLETION_FIELDS = (
    "model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options",
    "logprobs", "echo", "stop", "presence_penalty", "frequency_penalty", "best_of", "logit_bias",
    "seed", "suffix", "user",
    # vLLM's extra sampling parameters
    "top_k", "min_p", "repetition_penalty", "min_tokens", "ignore_eos", "priority",
    "response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
    "return_token_ids", "allowed_token_ids", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens",
    "truncate_prompt_tokens", "bad_words", "return_tokens_as_token_ids", "prompt_logprobs",
)


def parse_completion_request(body: Dict[str, Any]) -> Tuple[bool, bool]:
    """Checks the HTTP layer's part of a completions body (the engine
    validates every field it reads, as for chat); returns (stream,
    include_usage)."""
    check_fields(body, COMPLETION_FIELDS + tuple(IGNORED_COMPLETION_FIELDS))
    accept_ignored(body, IGNORED_COMPLETION_FIELDS)
    return _read_http_fields(body, schema.COMPLETION)


def prompt_count(body: Dict[str, Any]) -> int:
    """How many prompts a completions body runs (for admission; the engine
    refuses a malformed prompt)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        return len(prompt)
    return 1


def _read_http_fields(body: Dict[str, Any], table: Dict[str, "schema.FieldSpec"]) -> Tuple[bool, bool]:
    """What both endpoints check before the engine sees a body: the user
    field, numbers JSON can carry on, and stream / stream_options (the
    server reads them to frame its answer)."""
    read_user(body)
    check_finite_numbers(body)
    stream = read_field(body, "stream", table)
    return stream, read_include_usage(body) if stream else False


def check_finite_numbers(body: Dict[str, Any]) -> None:
    """NaN and the infinities (1e999) parse but JSON cannot carry them on
    to the engine: refused here, naming the field."""
    for name, value in body.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise invalid("'%s' must be a finite number (got %s)" % (name, value), param=name)


def engine_body(body: Dict[str, Any], served_model: str, ignored: Dict[str, Any]) -> Dict[str, Any]:
    """The body handed to the engine: the HTTP-only fields left out and the
    served model name put in."""
    out = {k: v for k, v in body.items() if k not in ("user", "parallel_tool_calls") and k not in ignored}
    out["model"] = served_model
    return out


# --------------------------------------------------------------------------
# /v1/chat/completions: the engine validates the fields it reads.

CHAT_FIELDS = (
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n",
    "stream", "stream_options", "logprobs", "top_logprobs", "stop", "presence_penalty",
    "frequency_penalty", "seed", "response_format", "tools", "tool_choice", "user",
    "parallel_tool_calls",
    # legacy function calling: the engine reads functions as tools, function_call as tool_choice
    "functions", "function_call",
    # vLLM's extras
    "top_k", "min_p", "repetition_penalty", "min_tokens", "ignore_eos", "priority",
    "chat_template_kwargs", "add_generation_prompt", "continue_final_message", "chat_template",
    "return_token_ids", "logit_bias", "allowed_token_ids", "stop_token_ids", "include_stop_str_in_output",
    "skip_special_tokens", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
    "truncate_prompt_tokens", "bad_words", "return_tokens_as_token_ids",
    # the chat template's reasoning_effort variable (gpt-oss)
    "reasoning_effort",
    # vLLM's: the reasoning section's token budget (the engine then ends it)
    "thinking_token_budget",
)


def check_request_chat_template(body: Dict[str, Any], trusted: bool) -> None:
    """A request's own template (``chat_template``, or transformers' way,
    ``chat_template_kwargs.chat_template``) runs only on a server started
    with --trust-request-chat-template, as in vLLM."""
    kwargs = body.get("chat_template_kwargs")
    if not trusted and (body.get("chat_template") is not None
                        or (isinstance(kwargs, dict) and kwargs.get("chat_template") is not None)):
        raise invalid("Chat template is passed with request, but --trust-request-chat-template is not set. "
                      "Refused request with untrusted chat template.", param="chat_template")


def parse_chat_request(body: Dict[str, Any], auto_tool_choice: bool,
                       trust_chat_template: bool = False) -> Tuple[bool, bool]:
    """Checks the HTTP layer's part of a chat body; returns (stream,
    include_usage). ``parallel_tool_calls`` and ``user`` are accepted and
    dropped (every call found is returned, as vLLM does). As in vLLM,
    tool_choice "auto" (the default with tools) needs the server started
    with --enable-auto-tool-choice, and a request's own chat template
    --trust-request-chat-template."""
    check_fields(body, CHAT_FIELDS + tuple(IGNORED_CHAT_FIELDS))
    accept_ignored(body, IGNORED_CHAT_FIELDS)
    check_request_chat_template(body, trust_chat_template)
    if "messages" not in body:
        raise invalid("'messages' is required", param="messages")
    tools = body.get("tools") or body.get("functions")
    choice = body.get("tool_choice", body.get("function_call", "auto"))
    if tools and choice in ("auto", None) and not auto_tool_choice:
        raise invalid('"auto" tool choice requires the server to run with --enable-auto-tool-choice '
                      "(and a tool call parser)", param="tool_choice")
    read_field(body, "parallel_tool_calls", schema.CHAT)
    return _read_http_fields(body, schema.CHAT)
