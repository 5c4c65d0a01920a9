"""Engine, its options, sampling parameters and results.

Everything here converts Python values to the C ABI (``vllm.h``) and back;
the engine itself is native. Values the ABI cannot carry are refused here
(:class:`InvalidConfigurationError`) before any native call; everything
else, including features the engine does not implement yet, is for the
engine to accept or refuse (:class:`InvalidArgumentError` with its message).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import inspect
import json
import numbers
import operator
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _ffi
from ._ffi import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, UINT64_MAX, decode_cstr, encode_str, ffi, lib
from .chat_template import load_chat_template
from .errors import (
    CallbackError,
    InvalidArgumentError,
    InvalidConfigurationError,
)
from .streaming import (
    LOGITS_TRAMPOLINE,
    TOKEN_TRAMPOLINE,
    EventPoller,
    LogitsSink,
    Request,
    RequestEvents,
    RequestOutcome,
    StreamEvent,
    StreamOutcome,
    TokenSink,
    WeakSink,
    _Lifetime,
    aiterate_request,
    await_request,
    iterate_on_thread,
    raise_callback_error,
)

__all__ = [
    "Toggle",
    "SchedulerPolicy",
    "FinishReason",
    "StructuredOutput",
    "SamplingParams",
    "Completion",
    "TokenLogprob",
    "EngineBuilder",
    "Engine",
]

#: A prompt: text, or token ids used as they are (no BOS added).
Prompt = Union[str, Sequence[int]]

PathLike = Union[str, "os.PathLike[str]"]
StreamCallback = Callable[[StreamEvent], Any]


class Toggle(enum.IntEnum):
    """A tri-state engine switch: the engine's default, on, or off."""

    DEFAULT = 0
    ON = 1
    OFF = 2


class SchedulerPolicy(str, enum.Enum):
    """Scheduling policy: first come first served, (priority, arrival) order,
    or longest cached prefix first."""

    FCFS = "fcfs"
    PRIORITY = "priority"
    LPM = "lpm"

    def __str__(self) -> str:
        return self.value


class FinishReason(str, enum.Enum):
    """Why a completion finished. Compares equal to the native string."""

    STOP = "stop"
    LENGTH = "length"
    ABORT = "abort"
    ERROR = "error"
    REPETITION = "repetition"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Optional[str]) -> Union["FinishReason", str, None]:
        """The member for a native reason, the plain string for a reason this
        version does not know, ``None`` for none."""
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            return value


# --------------------------------------------------------------------------
# Value checks shared by the option and parameter conversions.


def _int_in(value: Any, name: str, lo: int, hi: int) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise InvalidConfigurationError(
            "%s must be an int, not %s" % (name, type(value).__name__)
        ) from None
    if not lo <= value <= hi:
        raise InvalidConfigurationError(
            "%s=%d is out of range [%d, %d]" % (name, value, lo, hi)
        )
    return value


def _int32(value: Any, name: str) -> int:
    return _int_in(value, name, INT32_MIN, INT32_MAX)


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidConfigurationError(
            "%s must be a number, not %s" % (name, type(value).__name__)
        )
    return float(value)


def _opt_str(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidConfigurationError(
            "%s must be a str, not %s" % (name, type(value).__name__)
        )
    encode_str(value, name)
    return value


def _opt_json(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return _opt_str(value, name)
    if isinstance(value, dict):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigurationError(
                "%s is not JSON-serializable: %s" % (name, exc)
            ) from None
        return _opt_str(text, name)
    raise InvalidConfigurationError(
        "%s must be a JSON str or a dict, not %s" % (name, type(value).__name__)
    )


def _toggle(value: Any, name: str) -> Toggle:
    if value is None:
        return Toggle.DEFAULT
    if isinstance(value, Toggle):
        return value
    if isinstance(value, bool):
        return Toggle.ON if value else Toggle.OFF
    if isinstance(value, str):
        try:
            return Toggle[value.upper()]
        except KeyError:
            pass
    elif isinstance(value, numbers.Integral):
        try:
            return Toggle(int(value))
        except ValueError:
            pass
    raise InvalidConfigurationError(
        "%s must be a Toggle (DEFAULT, ON, OFF), not %r" % (name, value)
    )


def _policy(value: Any, name: str) -> Union[SchedulerPolicy, str]:
    if isinstance(value, SchedulerPolicy):
        return value
    if not isinstance(value, str):
        raise InvalidConfigurationError(
            "%s must be a SchedulerPolicy or str, not %s" % (name, type(value).__name__)
        )
    try:
        return SchedulerPolicy(value)
    except ValueError:
        # Unknown names are the engine's to refuse (InvalidArgumentError).
        return _opt_str(value, name)


def _path_str(value: Any, name: str) -> str:
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, str):
        try:
            value = os.fspath(value)
        except TypeError:
            raise InvalidConfigurationError(
                "%s must be a str or os.PathLike, not %s" % (name, type(value).__name__)
            ) from None
        if isinstance(value, bytes):
            value = os.fsdecode(value)
    return _opt_str(value, name)


def _int64(value: Any, name: str) -> int:
    return _int_in(value, name, INT64_MIN, INT64_MAX)


# --------------------------------------------------------------------------
# Engine options: one table drives Engine.load's keywords, EngineBuilder's
# methods, validation, marshalling, LLM's vLLM names and the CLI's flags.


@dataclass(frozen=True)
class OptionKind:
    """How values of one kind of engine option are checked and carried."""

    annotation: Any
    #: A set value (not None) -> its normalized form; InvalidConfigurationError.
    check: Callable[[Any, str], Any]
    #: The normalized form -> the vllm_model_params field's or the JSON value.
    native: Callable[[Any], Any]
    #: The command line's argparse ``type``; None: a --flag/--no-flag switch.
    cli_type: Optional[Callable[[str], Any]] = str


_INT32 = OptionKind(int, _int32, int, int)
_INT64 = OptionKind(int, _int64, int, int)
_TEXT = OptionKind(str, _opt_str, str)
_TEMPLATE = OptionKind(str, _opt_str, str, load_chat_template)  # the CLI takes FILE or TEXT
_PATH = OptionKind(PathLike, _path_str, str)
_JSON = OptionKind(Union[str, Dict[str, Any]], _opt_json, str)
_TOGGLE = OptionKind(Toggle, _toggle, int, None)
_POLICY = OptionKind(Union[SchedulerPolicy, str], _policy, str)


@dataclass(frozen=True)
class EngineOption:
    """One engine option: an ``Engine.load`` keyword and the
    ``EngineBuilder`` method of the same name."""

    name: str
    kind: OptionKind
    #: Its ``vllm_model_params`` field; None: a key (``name``) of the
    #: options JSON of ``vllm_engine_load_with_options``.
    field: Optional[str]
    doc: str
    #: vLLM's name when it differs (``LLM`` keywords, the CLI flag).
    vllm_name: Optional[str] = None
    #: A flag of every ``vllm-cpp`` subcommand: ``--<vLLM name with dashes>``.
    cli: bool = False
    metavar: Optional[str] = None

    @property
    def flag_name(self) -> str:
        return self.vllm_name or self.name


#: Every engine option, v10's struct fields in their order, then the options JSON.
ENGINE_OPTION_TABLE: Tuple[EngineOption, ...] = (
    EngineOption("tokenizer_config_path", _PATH, "tokenizer_config_path",
                 "Override for a Hugging Face directory's tokenizer_config.json (unused for GGUF files)."),
    EngineOption("block_size", _INT32, "block_size",
                 "Tokens per KV block (unset or <= 0: engine default, 16).", cli=True, metavar="N"),
    EngineOption("num_blocks", _INT32, "num_blocks",
                 "KV block count (unset or <= 0: sized from the KV cache budget).", cli=True, metavar="N"),
    EngineOption("max_model_len", _INT32, "max_model_len",
                 "Longest sequence, prompt + output (unset or <= 0: the model's context length).",
                 cli=True, metavar="N"),
    EngineOption("max_num_seqs", _INT32, "max_num_seqs",
                 "Most sequences scheduled at once (unset: engine default, 8).", cli=True, metavar="N"),
    EngineOption("tool_parser", _TEXT, "tool_parser",
                 "Tool-call parser for chat: hermes, llama3_json, mistral, pythonic "
                 "(unset: detected from the chat template).", vllm_name="tool_call_parser", cli=True,
                 metavar="NAME"),
    EngineOption("reasoning_parser", _TEXT, "reasoning_parser",
                 "Reasoning parser: deepseek_r1, qwen3, mistral or none (unset: detected from the template).",
                 cli=True, metavar="NAME"),
    EngineOption("speculative_config", _JSON, "speculative_config",
                 "Speculative decoding config as vLLM's --speculative-config (str or dict).",
                 cli=True, metavar="JSON"),
    EngineOption("prefix_caching", _TOGGLE, "enable_prefix_caching",
                 "Automatic prefix caching: Toggle.DEFAULT (on), ON or OFF.",
                 vllm_name="enable_prefix_caching", cli=True),
    EngineOption("max_num_batched_tokens", _INT32, "max_num_batched_tokens",
                 "Per-step token budget (chunked prefill; None: engine default, 2048).", cli=True, metavar="N"),
    EngineOption("scheduler", _POLICY, "scheduling_policy",
                 "Scheduling policy: SchedulerPolicy.FCFS (default), PRIORITY or LPM.",
                 vllm_name="scheduling_policy", cli=True, metavar="POLICY"),
    EngineOption("kv_transfer_config", _JSON, "kv_transfer_config",
                 "KV connector config as vLLM's --kv-transfer-config (str or dict).", cli=True, metavar="JSON"),
    EngineOption("jump_forward", _TOGGLE, "enable_jump_forward",
                 "Jump-forward decoding for structured output: Toggle.DEFAULT (off), ON or OFF "
                 "(VT_ENABLE_JUMP_FORWARD overrides)."),
    EngineOption("chat_template", _TEMPLATE, None,
                 "Chat template text used instead of the model's (parsed at load); the command line "
                 "takes a file or the text.", cli=True, metavar="FILE|TEXT"),
    EngineOption("kv_cache_dtype", _TEXT, None,
                 "KV cache element type: auto (float16), float16/fp16, float32/fp32 "
                 "(VLLM_CPP_KV_CACHE_DTYPE overrides).", cli=True, metavar="DTYPE"),
    EngineOption("kv_cache_memory_bytes", _INT64, None,
                 "KV cache budget in bytes when num_blocks is unset (default 1 GiB; "
                 "VLLM_CPP_KV_CACHE_MB overrides).", cli=True, metavar="N"),
    EngineOption("num_threads", _INT32, None,
                 "Threads of the engine's pool, 1-1024 (default: all cores; VLLM_CPP_NUM_THREADS overrides).",
                 cli=True, metavar="N"),
    EngineOption("isa", _TEXT, None,
                 "Kernel build: scalar, avx2, avx512 or neon, process-wide (default: the best this CPU "
                 "runs; VLLM_CPP_ISA overrides).", cli=True, metavar="NAME"),
)

_OPTIONS_BY_NAME = {o.name: o for o in ENGINE_OPTION_TABLE}

#: Option names accepted by Engine.load and EngineBuilder, in table order.
ENGINE_OPTIONS = tuple(_OPTIONS_BY_NAME)


def _normalize_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """Validate engine options; returns the set ones, normalized."""
    unknown = sorted(set(options) - set(ENGINE_OPTIONS))
    if unknown:
        raise TypeError("unknown engine option(s): %s (known: %s)"
                        % (", ".join(unknown), ", ".join(ENGINE_OPTIONS)))
    return {o.name: o.kind.check(options[o.name], o.name)
            for o in ENGINE_OPTION_TABLE if options.get(o.name) is not None}


def engine_options_from_vllm_names(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``Engine.load`` options from keywords that may use vLLM's names
    (``enable_prefix_caching``, ``scheduling_policy``, ``tool_call_parser``)."""
    by_vllm_name = {o.vllm_name: o.name for o in ENGINE_OPTION_TABLE if o.vllm_name}
    return {by_vllm_name.get(name, name): value for name, value in kwargs.items()}


def _load_signature() -> inspect.Signature:
    """``Engine.load(cls, model_path, *, <every option>=None)``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [inspect.Parameter("cls", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter("model_path", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=PathLike)]
        + [inspect.Parameter(o.name, keyword, default=None, annotation=Optional[o.kind.annotation])
           for o in ENGINE_OPTION_TABLE],
        return_annotation="Engine")


def _model_path(model_path: Any) -> str:
    return _path_str(model_path, "model_path")


def native_model_params(model_path: PathLike, options: Dict[str, Any]):
    """The ``vllm_model_params*`` for a model path and normalized options,
    plus the buffers it points into (keep both alive for the call). Options
    carried by the options JSON are left out (:func:`native_options_json`)."""
    keep: List[Any] = []

    def native(value: Any, name: str):
        if not isinstance(value, str):
            return value
        buf = ffi.new("char[]", encode_str(value, name))
        keep.append(buf)
        return buf

    p = ffi.new("vllm_model_params*")
    p[0] = lib.vllm_model_params_default()
    p.model_path = native(_model_path(model_path), "model_path")
    for o in ENGINE_OPTION_TABLE:
        if o.field is not None and o.name in options:
            setattr(p, o.field, native(o.kind.native(options[o.name]), o.name))
    return p, keep


def native_options_json(options: Dict[str, Any]) -> Optional[str]:
    """The options JSON of ``vllm_engine_load_with_options`` for normalized
    options (None when none of them travels that way)."""
    carried = {o.name: o.kind.native(options[o.name])
               for o in ENGINE_OPTION_TABLE if o.field is None and o.name in options}
    return json.dumps(carried) if carried else None


# --------------------------------------------------------------------------
# Sampling.


def _completion_from(out) -> "Completion":
    """A Completion from a filled ``vllm_completion`` (not freed here)."""
    text = decode_cstr(out.text, "text") or ""
    reason = FinishReason.parse(decode_cstr(out.finish_reason, "finish_reason"))
    return Completion(text, reason, int(out.prompt_tokens), int(out.completion_tokens))


@dataclass(frozen=True)
class StructuredOutput:
    """A constraint on the generated text. Build it with one of the class
    methods; at most one constraint applies to a request."""

    kind: str
    value: Union[str, Tuple[str, ...], None] = None

    _KINDS = ("json_schema", "regex", "choice", "grammar", "json_object")

    def __post_init__(self):
        if self.kind not in self._KINDS:
            raise InvalidConfigurationError(
                "structured output kind must be one of %s, not %r" % (self._KINDS, self.kind)
            )
        name = "structured_output.%s" % self.kind
        if self.kind == "json_object":
            if self.value is not None:
                raise InvalidConfigurationError("json_object takes no value")
        elif self.kind == "choice":
            if isinstance(self.value, str) or not isinstance(self.value, Iterable):
                raise InvalidConfigurationError("choice must be a sequence of str")
            choices = tuple(self.value)
            if not choices:
                raise InvalidConfigurationError("choice must not be empty")
            for c in choices:
                _opt_str(c, name)
            object.__setattr__(self, "value", choices)
        elif self.kind == "json_schema" and isinstance(self.value, dict):
            object.__setattr__(self, "value", _opt_json(self.value, name))
        else:
            if not isinstance(self.value, str):
                raise InvalidConfigurationError(
                    "%s must be a str, not %s" % (name, type(self.value).__name__)
                )
            _opt_str(self.value, name)

    @classmethod
    def json_schema(cls, schema: Union[str, Dict[str, Any]]) -> "StructuredOutput":
        """Output that validates against a JSON Schema (str or dict)."""
        return cls("json_schema", schema)

    @classmethod
    def regex(cls, pattern: str) -> "StructuredOutput":
        """Output that matches a regular expression as a whole."""
        return cls("regex", pattern)

    @classmethod
    def choice(cls, choices: Sequence[str]) -> "StructuredOutput":
        """Output that is exactly one of ``choices`` (non-empty)."""
        return cls("choice", tuple(choices) if not isinstance(choices, str) else choices)

    @classmethod
    def grammar(cls, gbnf: str) -> "StructuredOutput":
        """Output that a GBNF grammar (llama.cpp dialect) accepts."""
        return cls("grammar", gbnf)

    @classmethod
    def json_object(cls) -> "StructuredOutput":
        """Output that is any JSON object."""
        return cls("json_object")


LogitsProcessor = Callable[[Sequence[int], Any], None]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion; mirrors ``vllm_sampling_params``.

    Defaults are the native ones. ``max_tokens=None`` is unbounded (up to
    ``max_model_len``); ``0`` or a negative value is refused. ``seed=None``
    is unseeded. ``stop`` takes a str or a sequence of str. A
    ``logits_processor`` is a callable ``f(token_ids, logits) -> None`` that
    edits ``logits`` (a float32 numpy view when numpy is installed, else a
    ``memoryview``; valid only during the call) in place; it needs a bounded
    ``max_tokens``. ``logprobs=k`` (0..20) reports each generated token's
    log-probability and its ``k`` most likely alternatives in
    ``Completion.logprobs`` (the request goes through
    ``vllm_request_submit_tokens``). Range checks beyond what the ABI can
    carry (top_p in (0, 1], ...) are done by the engine
    (:class:`InvalidArgumentError`).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    max_tokens: Optional[int] = 16
    seed: Optional[int] = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_tokens: int = 0
    ignore_eos: bool = False
    stop: Tuple[str, ...] = ()
    structured_output: Optional[StructuredOutput] = None
    logits_processor: Optional[LogitsProcessor] = field(default=None, compare=True)
    logprobs: Optional[int] = None

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        for name in ("temperature", "top_p", "min_p", "presence_penalty",
                     "frequency_penalty", "repetition_penalty"):
            set_(name, _real(getattr(self, name), name))
        set_("top_k", _int32(self.top_k, "top_k"))
        if self.max_tokens is not None:
            n = _int32(self.max_tokens, "max_tokens")
            if n <= 0:
                raise InvalidConfigurationError(
                    "max_tokens=%d: must be >= 1 (use max_tokens=None for unbounded)" % n
                )
            set_("max_tokens", n)
        if self.seed is not None:
            set_("seed", _int_in(self.seed, "seed", 0, UINT64_MAX))
        set_("min_tokens", _int_in(self.min_tokens, "min_tokens", 0, INT32_MAX))
        if not isinstance(self.ignore_eos, (bool, int)) or self.ignore_eos not in (0, 1):
            raise InvalidConfigurationError("ignore_eos must be a bool")
        set_("ignore_eos", bool(self.ignore_eos))
        stop = self.stop
        if stop is None:
            stop = ()
        elif isinstance(stop, str):
            stop = (stop,)
        elif isinstance(stop, Iterable):
            stop = tuple(stop)
        else:
            raise InvalidConfigurationError(
                "stop must be a str or a sequence of str, not %s" % type(stop).__name__
            )
        if len(stop) > INT32_MAX:
            raise InvalidConfigurationError("too many stop strings")
        for s in stop:
            _opt_str(s, "stop")
        set_("stop", stop)
        if self.structured_output is not None and not isinstance(
            self.structured_output, StructuredOutput
        ):
            raise InvalidConfigurationError(
                "structured_output must be a StructuredOutput, not %s"
                % type(self.structured_output).__name__
            )
        if self.logprobs is not None:
            set_("logprobs", _int32(self.logprobs, "logprobs"))
        if self.logits_processor is not None:
            if not callable(self.logits_processor):
                raise InvalidConfigurationError("logits_processor must be callable")
            if self.max_tokens is None:
                raise InvalidConfigurationError(
                    "a logits_processor needs a bounded max_tokens (got max_tokens=None)"
                )

    @classmethod
    def greedy(cls, **overrides: Any) -> "SamplingParams":
        """Greedy decoding (``temperature=0.0``) plus any other fields."""
        values: Dict[str, Any] = {"temperature": 0.0}
        values.update(overrides)
        return cls(**values)


class _NativeSampling:
    """A ``vllm_sampling_params*`` for one native call, with the buffers and
    callback handles it points to. ``close()`` releases the handles; for a
    submitted request the Request takes them over instead."""

    def __init__(self, params: SamplingParams):
        if not isinstance(params, SamplingParams):
            raise InvalidConfigurationError(
                "params must be SamplingParams, not %s" % type(params).__name__
            )
        self.keep: List[Any] = []
        self.handles: List[Any] = []
        self.logits: Optional[LogitsSink] = None
        p = ffi.new("vllm_sampling_params*")
        p[0] = lib.vllm_sampling_params_default()
        p.temperature = params.temperature
        p.top_p = params.top_p
        p.top_k = params.top_k
        p.min_p = params.min_p
        p.max_tokens = 0 if params.max_tokens is None else params.max_tokens
        if params.seed is not None:
            p.seed = params.seed
            p.has_seed = 1
        else:
            p.seed = 0
            p.has_seed = 0
        p.presence_penalty = params.presence_penalty
        p.frequency_penalty = params.frequency_penalty
        p.repetition_penalty = params.repetition_penalty
        p.min_tokens = params.min_tokens
        p.ignore_eos = 1 if params.ignore_eos else 0
        if params.stop:
            p.stop = self._str_array(params.stop, "stop")
            p.n_stop = len(params.stop)
        so = params.structured_output
        if so is not None:
            name = "structured_output.%s" % so.kind
            if so.kind == "json_schema":
                p.structured_json = self._cstr(so.value, name)
            elif so.kind == "regex":
                p.structured_regex = self._cstr(so.value, name)
            elif so.kind == "choice":
                p.structured_choice = self._str_array(so.value, name)
                p.n_structured_choice = len(so.value)
            elif so.kind == "grammar":
                p.structured_grammar = self._cstr(so.value, name)
            elif so.kind == "json_object":
                p.structured_json_object = 1
        if params.logits_processor is not None:
            self.logits = LogitsSink(params.logits_processor)
            handle = _ffi.handles.register(WeakSink(self.logits))  # self.logits: held by the caller
            self.handles.append(handle)
            p.logits_processor = LOGITS_TRAMPOLINE
            p.logits_processor_user_data = handle
        self.ptr = p

    def _cstr(self, text: str, name: str):
        buf = ffi.new("char[]", encode_str(text, name))
        self.keep.append(buf)
        return buf

    def _str_array(self, items: Sequence[str], name: str):
        bufs = [self._cstr(s, name) for s in items]
        arr = ffi.new("const char*[]", bufs)
        self.keep.append(arr)
        return arr

    def close(self) -> None:
        for h in self.handles:
            _ffi.handles.release(h)
        self.handles = []

    def __enter__(self) -> "_NativeSampling":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def native_sampling_params(params: SamplingParams):
    """The native struct for ``params`` (for inspection and tests); the
    returned object keeps its buffers alive. Use ``.ptr``."""
    return _NativeSampling(params)


@dataclass(frozen=True)
class TokenLogprob:
    """One token's log-probability: its id, raw bytes, text (the bytes as
    UTF-8, U+FFFD where a token holds part of a character) and, for a
    generated token, the most likely alternatives."""

    token_id: int
    token_bytes: bytes
    logprob: float
    top_logprobs: Tuple["TokenLogprob", ...] = ()

    @property
    def token(self) -> str:
        return self.token_bytes.decode("utf-8", errors="replace")

    @classmethod
    def from_native(cls, entry: Dict[str, Any]) -> "TokenLogprob":
        """An entry of ``vllm_request_output``'s ``logprobs`` list."""
        return cls(int(entry["token_id"]), bytes(entry["bytes"]), float(entry["logprob"]),
                   tuple(cls.from_native(alt) for alt in entry.get("top_logprobs", ())))


@dataclass(frozen=True)
class Completion:
    """The result of ``Engine.complete``. ``token_ids`` (the generated ids)
    is set for completions made through a request (``submit``,
    ``acomplete``, token-id prompts, ``logprobs``); ``logprobs`` when the
    sampling parameters asked for them."""

    text: str
    finish_reason: Union[FinishReason, str, None]
    prompt_tokens: int
    completion_tokens: int
    # Extras of the request path; equality is about the completion itself.
    token_ids: Optional[Tuple[int, ...]] = field(default=None, compare=False)
    logprobs: Optional[Tuple[TokenLogprob, ...]] = field(default=None, compare=False)


# --------------------------------------------------------------------------
# The engine.


class EngineBuilder:
    """Fluent form of :meth:`Engine.load`: one method per option, same names.

    ``Engine.builder(path).num_blocks(64).max_model_len(256).load()``
    """

    def __init__(self, model_path: PathLike):
        self._model_path = model_path
        self._options: Dict[str, Any] = {}

    def _set(self, name: str, value: Any) -> "EngineBuilder":
        self._options[name] = value
        return self

    @property
    def model_path(self) -> PathLike:
        return self._model_path

    @property
    def options(self) -> Dict[str, Any]:
        """The options set so far, validated and normalized like Engine.load does."""
        return _normalize_options(dict(self._options))

    def load(self) -> "Engine":
        """Load the engine with these options (see :meth:`Engine.load`)."""
        return Engine.load(self._model_path, **self._options)

    def __repr__(self) -> str:
        return "EngineBuilder(%r, %r)" % (self._model_path, self._options)


def _builder_method(option: EngineOption) -> Callable[[EngineBuilder, Any], EngineBuilder]:
    def set_option(self: EngineBuilder, value: Any) -> EngineBuilder:
        return self._set(option.name, value)

    set_option.__name__ = option.name
    set_option.__qualname__ = "EngineBuilder." + option.name
    set_option.__doc__ = option.doc
    set_option.__annotations__ = {"value": Optional[option.kind.annotation], "return": "EngineBuilder"}
    return set_option


for _option in ENGINE_OPTION_TABLE:
    setattr(EngineBuilder, _option.name, _builder_method(_option))


def _free_engine(ptr, pollers: List[EventPoller]) -> None:
    for poller in pollers:  # before the engine: a poll reads its tokenizer
        poller.close()
    lib.vllm_engine_free(ptr)


class Engine:
    """A loaded model with its KV cache and scheduler (``vllm_engine``).

    Create it with :meth:`load` or :meth:`builder`. One engine is safe to
    share between threads; concurrent calls are batched by the native
    scheduler. ``close()`` or ``with Engine.load(...) as engine:`` release it
    deterministically (close waits for no call: the native handle is freed
    when the last call in flight and the last live :class:`Request` are
    done); otherwise an ``ffi.gc`` finalizer does.
    """

    def __init__(self, ptr, model_path: str, options: Dict[str, Any]):
        self._ptr = ptr
        self._model_path = model_path
        self._options = options
        # The async requests' poller, made at the first one (a list so the
        # engine's free, which must not hold the Engine, can reach it).
        self._pollers: List[EventPoller] = []
        self._pollers_lock = threading.Lock()
        self._lifetime = _Lifetime(functools.partial(_free_engine, ptr, self._pollers), "engine")
        lifetime = self._lifetime
        # The finalizer closes the lifetime; the native free waits for the
        # calls in flight and the live requests.
        self._gc = ffi.gc(ffi.cast("void*", ptr), lambda _p: lifetime.close())
        self._requests: "weakref.WeakSet[Request]" = weakref.WeakSet()
        self._requests_lock = threading.Lock()

    # -- construction ------------------------------------------------------
    @classmethod
    def load(cls, model_path: PathLike, **options: Any) -> "Engine":
        """Load a model: a GGUF file or a Hugging Face model directory.

        The keywords are the options of ``ENGINE_OPTION_TABLE`` (see
        docs/python-api.md). Every option left at ``None`` takes the native
        default (``vllm_model_params`` and ``vllm_engine_load_with_options``
        in the C ABI). Raises :class:`AbiMismatchError` (checked first),
        ``TypeError`` for an unknown option, :class:`InvalidConfigurationError`
        for a value the ABI cannot carry, :class:`ModelLoadError` (path and
        reason in the message) and :class:`InvalidArgumentError` from the
        engine.
        """
        _ffi.check_abi()
        options = _normalize_options(options)
        path = _model_path(model_path)
        params, keep = native_model_params(path, options)
        options_json = native_options_json(options)
        out = ffi.new("vllm_engine**")
        status = lib.vllm_engine_load_with_options(
            params, ffi.NULL if options_json is None else encode_str(options_json, "options"), out)
        del keep
        if status != 0:
            if out[0] != ffi.NULL:  # the ABI says it stays NULL; be safe anyway
                lib.vllm_engine_free(out[0])
            _ffi.check(status)
        if out[0] == ffi.NULL:
            raise _ffi.error_for_status(4, "vllm_engine_load_with_options returned OK but no engine")
        return cls(out[0], path, options)

    # help(Engine.load) and IDEs show one keyword per option.
    load.__func__.__signature__ = _load_signature()

    @classmethod
    def builder(cls, model_path: PathLike) -> EngineBuilder:
        """A fluent :class:`EngineBuilder` for ``model_path``."""
        return EngineBuilder(model_path)

    # -- state -------------------------------------------------------------
    @property
    def model_path(self) -> str:
        return self._model_path

    @property
    def options(self) -> Dict[str, Any]:
        """The options the engine was loaded with (those that were set)."""
        return dict(self._options)

    @property
    def closed(self) -> bool:
        return self._lifetime.closed

    @contextlib.contextmanager
    def _use(self):
        self._lifetime.acquire()
        try:
            yield self._ptr
        finally:
            self._lifetime.release()

    def close(self) -> None:
        """Release the engine: live requests are closed first; the native
        handle is freed once calls still in flight on other threads return.
        Idempotent."""
        with self._requests_lock:
            requests = list(self._requests)
        for req in requests:
            req.close()
        self._lifetime.close()

    def cancel_all(self) -> None:
        """Cancel every live request (chat calls included): each ends at the
        next engine step with finish reason ``abort``. A server's shutdown."""
        with self._requests_lock:
            requests = list(self._requests)
        for request in requests:
            request.cancel()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<vllm_cpp.Engine %r%s>" % (self._model_path, " closed" if self.closed else "")

    # -- completion --------------------------------------------------------
    def complete(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> Completion:
        """Blocking completion of ``prompt`` (default params: the native
        defaults, e.g. ``max_tokens=16``). Token-id prompts and ``logprobs``
        go through a request (:meth:`submit`); text runs on this thread."""
        params = _sampling(params)
        if _needs_request(prompt, params):
            request = self.submit(prompt, params, lambda _event: None)
            with request:
                request.wait()
                return self.request_completion(request)
        prompt_b = encode_str(prompt, "prompt")
        with _NativeSampling(params) as native, self._use() as h:
            out = ffi.new("vllm_completion*")
            status = lib.vllm_complete(h, prompt_b, native.ptr, out)
            try:
                if native.logits is not None:
                    native.logits.raise_if_failed()
                _ffi.check(status)
                return _completion_from(out)
            finally:
                lib.vllm_completion_free(out)

    def _stream_call(self, native_fn, first_arg: bytes, native: Optional[_NativeSampling],
                     callback: StreamCallback) -> StreamOutcome:
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        sink = TokenSink(callback, native.logits if native is not None else None)
        handle = _ffi.handles.register(sink)
        try:
            with self._use() as h:
                if native is not None:
                    status = native_fn(h, first_arg, native.ptr, TOKEN_TRAMPOLINE, handle)
                else:
                    status = native_fn(h, first_arg, TOKEN_TRAMPOLINE, handle)
        finally:
            _ffi.handles.release(handle)
        raise_callback_error(sink)
        if native is not None and native.logits is not None:
            native.logits.raise_if_failed()
        _ffi.check(status)
        return StreamOutcome(stopped_by_callback=sink.stopped)

    def complete_stream(self, prompt: str, params: Optional[SamplingParams],
                        callback: StreamCallback) -> StreamOutcome:
        """Blocking streaming completion: ``callback(StreamEvent)`` is called
        with each delta, then once with ``finished=True`` when the request
        finishes by itself. Returning ``StreamControl.STOP`` (or False) stops
        the request. An exception from the callback aborts the request and is
        re-raised here unchanged; the engine stays usable. A token-id prompt
        runs as a request whose delivery thread calls ``callback``."""
        params = _sampling(params)
        if _needs_request(prompt, params):
            request = self.submit(prompt, params, callback)
            with request:
                try:
                    outcome = request.wait()
                except CallbackError as exc:
                    raise exc.__cause__ from None
            return StreamOutcome(stopped_by_callback=outcome is RequestOutcome.STOPPED_BY_CALLBACK)
        prompt_b = encode_str(prompt, "prompt")
        with _NativeSampling(params) as native:
            return self._stream_call(lib.vllm_complete_stream, prompt_b, native, callback)

    def stream(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> Iterator[str]:
        """Generator of the text deltas of a completion. Breaking out of it
        (or closing it) cancels the request promptly."""
        _check_prompt(prompt)
        params = _sampling(params)
        _NativeSampling(params).close()  # surface conversion errors now
        return iterate_on_thread(lambda cb: self.complete_stream(prompt, params, cb))

    # -- tokens ------------------------------------------------------------
    def tokenize(self, text: str, *, add_special_tokens: bool = True) -> List[int]:
        """The token ids of ``text`` (``vllm_tokenize``); with
        ``add_special_tokens`` they are the ids a text prompt is run with."""
        text_b = encode_str(text, "text")
        return self._token_ids_of(lambda h, ids, n: lib.vllm_tokenize(h, text_b, bool(add_special_tokens), ids, n))

    def tokenize_chat(self, request: Union[str, Dict[str, Any]]) -> List[int]:
        """The prompt ids of an OpenAI chat request (``vllm_chat_tokenize``):
        its messages rendered by the model's template and tokenized as
        :meth:`chat` runs them; the request is validated as :meth:`chat`
        validates it."""
        request_b = encode_str(_request_json(request), "request_json")
        return self._token_ids_of(lambda h, ids, n: lib.vllm_chat_tokenize(h, request_b, ids, n))

    def _token_ids_of(self, call: Callable[[Any, Any, Any], int]) -> List[int]:
        """The ids a native ``(engine, int32_t** ids, int32_t* n)`` call
        hands over, freed after the copy."""
        out_ids = ffi.new("int32_t**")
        out_n = ffi.new("int32_t*")
        with self._use() as h:
            status = call(h, out_ids, out_n)
        try:
            _ffi.check(status)
            return list(ffi.unpack(out_ids[0], out_n[0])) if out_n[0] > 0 else []
        finally:
            lib.vllm_tokens_free(out_ids[0])

    def detokenize(self, token_ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``token_ids`` (``vllm_detokenize``); an id outside the
        vocabulary is :class:`InvalidArgumentError`."""
        ids = _token_ids(token_ids, "token_ids")
        array = ffi.new("int32_t[]", ids) if ids else ffi.NULL
        out = ffi.new("char**")
        with self._use() as h:
            status = lib.vllm_detokenize(h, array, len(ids), bool(skip_special_tokens), out)
        try:
            _ffi.check(status)
            return decode_cstr(out[0], "text") or ""
        finally:
            lib.vllm_string_free(out[0])

    # -- chat --------------------------------------------------------------
    def chat_json(self, request: str) -> str:
        """OpenAI ``/v1/chat/completions`` request JSON in, ``chat.completion``
        JSON out."""
        request_b = encode_str(request, "request_json")
        out = ffi.new("char**")
        with self._use() as h:
            status = lib.vllm_chat(h, request_b, out)
        try:
            _ffi.check(status)
            return decode_cstr(out[0], "response_json") or ""
        finally:
            lib.vllm_string_free(out[0])

    def chat(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """OpenAI chat completion: request dict in, ``chat.completion`` dict out."""
        return json.loads(self.chat_json(_request_json(request)))

    def chat_stream_json(self, request: str, callback: StreamCallback) -> StreamOutcome:
        """Streaming chat: each event's ``delta`` is one ``chat.completion.chunk``
        JSON object; the terminal event has ``finished=True`` and ``""``."""
        request_b = encode_str(request, "request_json")
        return self._stream_call(lib.vllm_chat_stream, request_b, None, callback)

    def chat_stream(self, request: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """Generator of ``chat.completion.chunk`` dicts; closing it cancels."""
        text = _request_json(request)
        encode_str(text, "request_json")
        return iterate_on_thread(lambda cb: self.chat_stream_json(text, cb), json.loads)

    # -- statistics --------------------------------------------------------
    def stats(self) -> Dict[str, Any]:
        """Engine statistics (a snapshot between engine steps): running and
        waiting requests, KV blocks (``kv_blocks_total/used/free/cached``, of
        the primary KV cache group: full attention when the model has it),
        ``block_size``, ``kv_cache_bytes`` (all groups), prefix-cache
        ``queries`` and ``hits`` (tokens), prompt and generated token totals,
        preemptions, model steps, finished and aborted requests, and
        ``kv_cache_groups`` (per group: ``kind``, ``sliding_window``,
        ``num_layers``, ``blocks_total/used/free/cached``, ``bytes``)."""
        out = ffi.new("char**")
        with self._use() as ptr:
            _ffi.check(lib.vllm_engine_stats(ptr, out))
        try:
            return json.loads(decode_cstr(out[0], "stats"))
        finally:
            lib.vllm_string_free(out[0])

    # -- non-blocking requests --------------------------------------------
    def submit(self, prompt: Prompt, params: Optional[SamplingParams],
               callback: StreamCallback, *, priority: Optional[int] = None) -> Request:
        """Start a completion and return at once; ``callback`` runs on a
        native delivery thread. See :class:`Request`.

        ``priority``: lower runs first under ``SchedulerPolicy.PRIORITY``
        (ties in arrival order); other policies ignore it. A text prompt goes
        through the additive ``vllm_request_submit_with_priority`` (the
        default ``0`` is what the v10 ``vllm_request_submit`` submits);
        token ids, or ``params.logprobs``, through
        ``vllm_request_submit_tokens`` (a text prompt is tokenized first, as
        the engine would).
        """
        params = _sampling(params)
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        priority = 0 if priority is None else _int32(priority, "priority")
        if not _needs_request(prompt, params):
            prompt_b = encode_str(prompt, "prompt")
            native = _NativeSampling(params)
            return self._start_request(
                lambda h, handle, out: lib.vllm_request_submit_with_priority(
                    h, prompt_b, native.ptr, priority, TOKEN_TRAMPOLINE, handle, out),
                callback, native)
        ids = self.tokenize(prompt) if isinstance(prompt, str) else _token_ids(prompt, "prompt")
        # Never NULL: an empty prompt is the engine's to refuse, by name.
        array = ffi.new("int32_t[]", ids or [0])
        logprobs = -1 if params.logprobs is None else params.logprobs
        native = _NativeSampling(params)
        return self._start_request(
            lambda h, handle, out: lib.vllm_request_submit_tokens(
                h, array, len(ids), native.ptr, priority, logprobs, TOKEN_TRAMPOLINE, handle, out),
            callback, native)

    def submit_chat(self, request: Union[str, Dict[str, Any]], callback: StreamCallback) -> Request:
        """Start an OpenAI chat call and return at once (``vllm_chat_submit``).
        The request is validated before this returns
        (:class:`InvalidArgumentError` naming the field). ``callback`` gets
        each ``chat.completion.chunk`` JSON when the request has
        ``"stream": true``, else one terminal event carrying the
        ``chat.completion`` JSON. ``cancel()`` stops every choice at the next
        engine step."""
        text_b = encode_str(_request_json(request), "request_json")
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        return self._start_request(
            lambda h, handle, out: lib.vllm_chat_submit(h, text_b, TOKEN_TRAMPOLINE, handle, out),
            callback, None)

    def submit_pull(self, prompt: Prompt, params: Optional[SamplingParams], consumer: RequestEvents,
                    *, priority: Optional[int] = None) -> Request:
        """Start a completion whose output goes to ``consumer`` (a
        :class:`RequestEvents`, which calls this) through the engine's poller
        (``vllm_request_submit_pull``): no thread per request. The path under
        :meth:`astream`, :meth:`acomplete` and the server. Refusals as
        :meth:`submit`."""
        params = _sampling(params)
        priority = 0 if priority is None else _int32(priority, "priority")
        prompt_b, array, n_ids = ffi.NULL, ffi.NULL, 0
        if isinstance(prompt, str):
            prompt_b = encode_str(prompt, "prompt")
        else:
            ids = _token_ids(prompt, "prompt")
            array, n_ids = ffi.new("int32_t[]", ids or [0]), len(ids)
        logprobs = -1 if params.logprobs is None else params.logprobs
        native = _NativeSampling(params)
        poller = self._poller()
        return self._start_request(
            lambda h, tag, out: lib.vllm_request_submit_pull(
                h, poller.ptr, tag, prompt_b, array, n_ids, native.ptr, priority, logprobs, out),
            None, native, (poller, consumer))

    def submit_chat_pull(self, request: Union[str, Dict[str, Any]], consumer: RequestEvents) -> Request:
        """:meth:`submit_chat` with its output going to ``consumer`` through
        the engine's poller (``vllm_chat_submit_pull``); the path under
        :meth:`achat`, :meth:`achat_stream` and the server."""
        text_b = encode_str(_request_json(request), "request_json")
        poller = self._poller()
        return self._start_request(
            lambda h, tag, out: lib.vllm_chat_submit_pull(h, poller.ptr, tag, text_b, out),
            None, None, (poller, consumer))

    def _poller(self) -> EventPoller:
        with self._pollers_lock:
            if not self._pollers:
                with self._use() as h:
                    self._pollers.append(EventPoller(h))
            return self._pollers[0]

    def _start_request(self, submit_native: Callable[[Any, Any, Any], int], callback: Optional[StreamCallback],
                       native: Optional[_NativeSampling],
                       pull: Optional[Tuple[EventPoller, RequestEvents]] = None) -> Request:
        """Run ``submit_native(engine_ptr, user_data, out)`` and wrap the
        native request; the Request takes over the callback handles. A pull
        request (``pull``: the poller and the consumer) passes its tag as
        user_data and has no callback; its sink only records the outcome."""
        logits = native.logits if native is not None else None
        if pull is None:
            sink = TokenSink(callback, logits)
            user_data = _ffi.handles.register(WeakSink(sink))  # the Request holds the sink
            handles = [user_data]
        else:
            sink = TokenSink(lambda _event: None, logits)  # never called back
            user_data = pull[0].register(pull[1])
            handles = []
        if native is not None:
            handles += native.handles
            native.handles = []
        out = ffi.new("vllm_request**")
        self._lifetime.acquire()  # held by the request until it is freed
        try:
            status = submit_native(self._ptr, user_data, out)
            if status != 0 or out[0] == ffi.NULL:
                message = _ffi.last_error()
                if out[0] != ffi.NULL:
                    lib.vllm_request_free(out[0])
                raise _ffi.error_for_status(status if status != 0 else 4,
                                            message or "the submit call returned no request")
        except BaseException:
            if pull is not None:
                pull[0].unregister(user_data)
            for h in handles:
                _ffi.handles.release(h)
            self._lifetime.release()
            raise
        on_free = None if pull is None else functools.partial(pull[0].forget, user_data)
        request = Request(self, out[0], sink, logits, handles, on_free)
        with self._requests_lock:
            self._requests.add(request)
        return request

    def request_completion(self, request: Request) -> Completion:
        """The :class:`Completion` of a finished completion request (text,
        finish reason, counts, token ids, logprobs when asked for)."""
        out = ffi.new("vllm_completion*")
        output = ffi.new("char**")
        with request._use() as ptr, self._use() as h:
            status = lib.vllm_request_completion(ptr, out)
            output_status = lib.vllm_request_output(h, ptr, output) if status == 0 else status
        try:
            _ffi.check(status)
            _ffi.check(output_status)
            completion = _completion_from(out)
            generated = json.loads(decode_cstr(output[0], "output"))
        finally:
            lib.vllm_completion_free(out)
            lib.vllm_string_free(output[0])
        logprobs = generated["logprobs"]
        return dataclasses.replace(
            completion,
            token_ids=tuple(generated["token_ids"]),
            logprobs=None if logprobs is None else tuple(TokenLogprob.from_native(e) for e in logprobs))

    # -- async -------------------------------------------------------------
    async def acomplete(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> Completion:
        """The :class:`Completion` (with token ids), built on :meth:`submit`
        without blocking the event loop; cancelling the awaiting task
        cancels the request."""
        return await await_request(lambda events: self.submit_pull(prompt, params, events), self.request_completion)

    def astream(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> AsyncIterator[str]:
        """Async generator of text deltas, built on :meth:`submit_pull`;
        leaving it early or cancelling the task cancels the request."""
        _check_prompt(prompt)
        return aiterate_request(lambda events: self.submit_pull(prompt, params, events))

    async def achat(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """:meth:`chat` through :meth:`submit_chat`, without blocking the
        event loop; cancelling the task cancels every choice natively."""
        body = _with_stream(request, False)
        parts = [part async for part in aiterate_request(lambda events: self.submit_chat_pull(body, events))]
        return json.loads("".join(parts))

    def achat_stream(self, request: Dict[str, Any]) -> AsyncIterator[Dict[str, Any]]:
        """Async generator of chunk dicts through :meth:`submit_chat`; leaving
        it early or cancelling the task cancels every choice natively."""
        body = _with_stream(request, True)
        return aiterate_request(lambda events: self.submit_chat_pull(body, events), json.loads)


def _with_stream(request: Any, stream: bool) -> str:
    """The request JSON with its "stream" field set (text that is not a JSON
    object is passed on for the engine to refuse)."""
    if isinstance(request, str):
        try:
            parsed = json.loads(request)
        except ValueError:
            return request
        if not isinstance(parsed, dict):
            return request
        request = parsed
    if not isinstance(request, dict):
        raise InvalidConfigurationError(
            "chat request must be a dict or JSON str, not %s" % type(request).__name__)
    return _request_json(dict(request, stream=stream))


def _check_prompt(prompt: Any) -> None:
    if isinstance(prompt, str):
        encode_str(prompt, "prompt")
    else:
        _token_ids(prompt, "prompt")


def _sampling(params: Any) -> SamplingParams:
    """``params``, or the defaults for None; anything else is refused."""
    if params is None:
        return SamplingParams()
    if not isinstance(params, SamplingParams):
        raise InvalidConfigurationError("params must be SamplingParams, not %s" % type(params).__name__)
    return params


def _needs_request(prompt: Any, params: SamplingParams) -> bool:
    """Whether a completion must go through ``vllm_request_submit_tokens``."""
    return not isinstance(prompt, str) or params.logprobs is not None


def _token_ids(value: Any, name: str) -> List[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidConfigurationError(
            "%s must be a str or a sequence of int token ids, not %s" % (name, type(value).__name__))
    return [_int32(v, "%s[%d]" % (name, i)) for i, v in enumerate(value)]


def _request_json(request: Any) -> str:
    if isinstance(request, str):
        return request
    try:
        return json.dumps(request)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigurationError("chat request is not JSON-serializable: %s" % exc) from None
