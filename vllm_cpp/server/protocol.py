"""OpenAI request validation and error bodies, with no I/O.

Everything a handler reads from a request body goes through here first, so
a malformed body is refused with a 400 naming the field. The sampling
fields (temperature ... bad_words) are the engine's: its one parser of them
checks a chat body's (``vllm_chat``) and a completion's (sent as they are
in the options JSON, ``SamplingParams.request_fields``), so both endpoints
refuse a value with the same message, and :func:`engine_refusal` answers it
with the same 400 (``param``: the field the message names). Here bodies
only get the checks that belong to the HTTP layer and to each protocol's
own fields: a JSON object, known top-level fields, the model name, a
completion's prompt, n, logprobs, echo.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .._ffi import INT32_MAX
from ..sampling_params import SamplingParams, StructuredOutput
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
    return named_refusal(str(error))


def named_refusal(message: str) -> ApiError:
    """A 400 worded as the engine's chat parser words it, ``param`` as
    engine_refusal sets it (until /v1/completions is parsed by the engine
    too, its protocol fields read here answer as chat does)."""
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
    "reasoning_effort": ("a string", lambda v: isinstance(v, str)),
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


def read_stop(body: Dict[str, Any]) -> Tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    raise _type_error("stop", "a string or a list of strings", stop)


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
# /v1/completions

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

Prompt = Union[str, List[int]]


@dataclass(frozen=True)
class CompletionRequest:
    prompts: Tuple[Prompt, ...]
    params: SamplingParams
    n: int
    stream: bool
    include_usage: bool
    priority: int
    # vLLM's: each choice's prompt and generated token ids
    return_token_ids: bool = False
    # OpenAI's: each choice's text starts with its prompt (and its logprobs
    # with the prompt's, through SamplingParams.prompt_logprobs)
    echo: bool = False
    # vLLM's: logprobs name tokens "token_id:<id>"
    return_tokens_as_token_ids: bool = False
    # vLLM's prompt_logprobs asked for: each choice reports them
    prompt_logprobs: bool = False
    # echo with max_tokens 0 (OpenAI's and vLLM's "echo without
    # generation"): the engine runs one token for the prompt's logprobs; the
    # choices show only the prompt, finish "length", 0 completion tokens
    echo_only: bool = False


def _read_prompts(body: Dict[str, Any]) -> Tuple[Prompt, ...]:
    prompt = body.get("prompt")
    if prompt is None:
        raise invalid("'prompt' is required", param="prompt")

    def token_list(value: Any) -> bool:
        return (isinstance(value, list) and len(value) > 0
                and all(isinstance(t, int) and not isinstance(t, bool) for t in value))

    if isinstance(prompt, str):
        return (prompt,)
    if token_list(prompt):
        return (list(prompt),)
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) or token_list(p) for p in prompt):
        return tuple(p if isinstance(p, str) else list(p) for p in prompt)
    raise invalid("'prompt' must be a string, a list of strings, a list of token ids or a list "
                  "of token id lists (non-empty)", param="prompt")


def _read_structured(body: Dict[str, Any]) -> Optional[StructuredOutput]:
    chosen: List[StructuredOutput] = []
    fmt = body.get("response_format")
    if fmt is not None:
        chosen.append(read_response_format(fmt))
    # vLLM's structured_outputs object, and the guided_* fields it replaced.
    fields = [(name, body.get(name)) for name in _GUIDED]
    outputs = body.get("structured_outputs")
    if outputs is not None:
        if not isinstance(outputs, dict):
            raise _type_error("structured_outputs", "an object", outputs)
        check_fields(outputs, tuple(_STRUCTURED_OUTPUTS))
        fields += [("structured_outputs." + key, outputs.get(key)) for key in _STRUCTURED_OUTPUTS]
    for name, value in fields:
        if value is None or value is False and name.endswith("json_object"):
            continue
        kind = _GUIDED.get(name) or _STRUCTURED_OUTPUTS[name.split(".", 1)[1]]
        wanted, wording = _GUIDED_TYPES.get(kind, ((str,), "a string"))
        if not isinstance(value, wanted):
            raise named_refusal(_type_message(name, wording, value))
        try:
            chosen.append(StructuredOutput.json_object() if kind == "json_object" else StructuredOutput(kind, _text(value)))
        except InvalidConfigurationError as exc:
            raise invalid("'%s': %s" % (name, exc), param=name) from None
    if len(chosen) > 1:
        raise invalid("at most one of 'response_format', the guided_* fields and a structured_outputs key may "
                      "be set")
    return chosen[0] if chosen else None


#: vLLM's constraint fields: the guided_* ones and structured_outputs' keys, with StructuredOutput's kinds.
_GUIDED = {"guided_json": "json_schema", "guided_regex": "regex", "guided_choice": "choice",
           "guided_grammar": "grammar"}
_STRUCTURED_OUTPUTS = {"json": "json_schema", "regex": "regex", "choice": "choice", "grammar": "grammar",
                       "json_object": "json_object"}
#: What each kind's value must be, worded as the engine's chat parser words it.
_GUIDED_TYPES = {"json_schema": ((dict, str), "a JSON schema (an object or its JSON text)"),
                 "choice": ((list,), "an array"), "json_object": ((bool,), "a boolean")}


def _text(schema: Any) -> Any:
    """A schema object as JSON text, written by the server's one writer
    (a large one would stall the event loop in json.dumps); other values
    as they are."""
    return jsonio.dumps(schema) if isinstance(schema, dict) else schema


def read_response_format(fmt: Any) -> Optional[StructuredOutput]:
    """OpenAI's response_format; its refusals read as chat's (the engine's)."""
    def refused_type(name: str, wanted: str, value: Any) -> ApiError:
        return named_refusal(_type_message(name, wanted, value))

    if not isinstance(fmt, dict):
        raise refused_type("response_format", "an object", fmt)
    kind = fmt.get("type")
    if kind is None:
        raise named_refusal("'response_format.type' is required")
    if not isinstance(kind, str):
        raise refused_type("response_format.type", "a string", kind)
    if kind == "text":
        return None
    if kind == "json_object":
        return StructuredOutput.json_object()
    if kind != "json_schema":
        raise named_refusal("'response_format.type' must be 'text', 'json_object' or 'json_schema' (got '%s')" % kind)
    spec = fmt.get("json_schema")
    if spec is None:
        raise named_refusal("'response_format.json_schema' is required")
    if not isinstance(spec, dict):
        raise refused_type("response_format.json_schema", "an object", spec)
    if spec.get("name") is not None and not isinstance(spec["name"], str):
        raise refused_type("response_format.json_schema.name", "a string", spec["name"])
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        # Chat takes a missing schema (any JSON) and a boolean one; a
        # completion needs an object (a known difference, until the engine
        # parses completions too).
        raise refused_type("response_format.json_schema.schema", "an object", schema)
    return StructuredOutput.json_schema(_text(schema))


#: The sampling fields a completion body hands the engine as they are: the
#: engine's one parser of them checks types and limits (as for chat).
ENGINE_SAMPLING_FIELDS = (
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "seed", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "min_tokens", "ignore_eos", "stop", "logit_bias", "allowed_token_ids",
    "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens", "truncate_prompt_tokens",
    "bad_words", "prompt_logprobs",
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_completion_request(body: Dict[str, Any]) -> CompletionRequest:
    check_fields(body, COMPLETION_FIELDS + tuple(IGNORED_COMPLETION_FIELDS))
    accept_ignored(body, IGNORED_COMPLETION_FIELDS)

    def field(name: str) -> Any:
        return read_field(body, name, schema.COMPLETION)

    prompts = _read_prompts(body)
    n = field("n")
    best_of = field("best_of")
    if best_of is not None and best_of != n:
        raise invalid("'best_of' other than 'n' is not supported", param="best_of")
    echo = field("echo")
    if body.get("suffix") is not None:
        raise invalid("'suffix' is not supported", param="suffix")
    read_user(body)
    stream = field("stream")
    return_token_ids = field("return_token_ids")
    logprobs = field("logprobs")
    prompt_logprobs = body.get("prompt_logprobs")
    max_tokens = body.get("max_tokens")
    engine_fields = {name: body[name] for name in ENGINE_SAMPLING_FIELDS if body.get(name) is not None}
    for name, value in engine_fields.items():
        if isinstance(value, float) and not math.isfinite(value):  # NaN, 1e999: JSON cannot carry them on
            raise invalid("'%s' must be a finite number (got %s)" % (name, value), param=name)
    # The completions endpoint's own rules: 16 tokens by default, and echo
    # with max_tokens 0 runs one token (its prompt's logprobs), not shown.
    engine_fields.setdefault("max_tokens", schema.COMPLETION["max_tokens"].default)
    echo_only = _is_int(max_tokens) and max_tokens == 0
    if echo_only:
        if not echo:
            raise invalid("'max_tokens' must be at least 1 (0 only with echo) (got 0)", param="max_tokens")
        engine_fields["max_tokens"] = 1
    if prompt_logprobs is None and echo and logprobs is not None:
        # vLLM's rule: an echoed prompt's logprobs come with the outputs'.
        engine_fields["prompt_logprobs"] = logprobs
    truncate = body.get("truncate_prompt_tokens")
    try:
        params = SamplingParams(
            structured_output=_read_structured(body),
            logprobs=logprobs,
            # Read by the server itself for echo; the engine refuses a bad value first.
            truncate_prompt_tokens=truncate if _is_int(truncate) and 0 < truncate <= INT32_MAX else None,
            request_fields=engine_fields,
        )
    except InvalidArgumentError as exc:  # the engine's parser: chat's message and param
        raise engine_refusal(exc) from None
    except InvalidConfigurationError as exc:
        raise invalid(str(exc)) from None
    include_usage = read_include_usage(body)  # checked streaming or not, as chat checks it
    return CompletionRequest(prompts, params, n, stream,
                             include_usage if stream else False,
                             field("priority"), return_token_ids, echo,
                             field("return_tokens_as_token_ids"), prompt_logprobs is not None,
                             echo_only=echo_only)


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
    read_user(body)
    stream = read_field(body, "stream", schema.CHAT)
    return stream, read_include_usage(body) if stream else False


def engine_chat_body(body: Dict[str, Any], served_model: str) -> Dict[str, Any]:
    """The body handed to the engine: the HTTP-only fields left out and the
    served model name put in."""
    out = {k: v for k, v in body.items()
           if k not in ("user", "parallel_tool_calls") and k not in IGNORED_CHAT_FIELDS}
    out["model"] = served_model
    return out
