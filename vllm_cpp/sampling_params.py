"""How to sample one completion: :class:`SamplingParams` and its
structured-output constraint, :class:`StructuredOutput`. Plain values,
checked when made; :mod:`vllm_cpp.marshalling` turns them into the native
struct."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _ffi
from ._ffi import INT32_MAX, INT64_MAX, UINT64_MAX, lib
from .checks import int32, int_in, opt_json, opt_str, real
from .errors import InvalidConfigurationError

__all__ = ["StructuredOutput", "SamplingParams", "LogitsProcessor", "check_request_fields"]


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
                opt_str(c, name)
            object.__setattr__(self, "value", choices)
        elif self.kind == "json_schema" and isinstance(self.value, dict):
            object.__setattr__(self, "value", opt_json(self.value, name))
        else:
            if not isinstance(self.value, str):
                raise InvalidConfigurationError(
                    "%s must be a str, not %s" % (name, type(self.value).__name__)
                )
            opt_str(self.value, name)

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
    ``vllm_request_submit_with_options``). Range checks beyond what the ABI can
    carry (top_p in (0, 1], ...) are done by the engine
    (:class:`InvalidArgumentError`). ``n`` (vLLM's) is how many sequences
    ``LLM.generate`` and ``LLM.chat`` sample for each prompt; an engine
    request samples one, so ``Engine.submit`` and its kin refuse ``n > 1``.
    ``logit_bias`` (OpenAI's; ``{token_id: bias}``, each bias in
    [-100, 100]) is added to those tokens' logits; ``allowed_token_ids``
    (vLLM's; non-empty) are the only tokens that can be generated. Both
    apply after the min_tokens and structured-output masks and before the
    penalties; the engine checks ranges and ids (:class:`InvalidArgumentError`
    naming the field). ``logit_bias`` is kept as a read-only mapping,
    ``allowed_token_ids`` as a tuple. ``stop_token_ids`` (vLLM's): generating
    one finishes the request (its text output unless it is a special
    token; masked before ``min_tokens``, like EOS).
    ``include_stop_str_in_output`` (vLLM's) keeps a matched stop string at
    the end of the text. ``prompt_logprobs=k`` (vLLM's; 0..20) reports each
    prompt token's log-probability and its k most likely alternatives
    (``Completion.prompt_logprobs``); such a request computes its whole
    prompt (no prefix-cache hit), as in vLLM. ``skip_special_tokens=False``
    (vLLM's) puts control tokens' text in the output too.
    ``truncate_prompt_tokens=k`` (vLLM's, k >= 1; its -1 is refused) keeps
    the prompt's last k tokens. ``bad_words`` (vLLM's): words the output may
    not contain (each as it tokenizes alone and after a space; the last
    token of one is masked wherever the output has the rest of it).
    ``request_fields``: sampling fields under vLLM's names as a request
    body gave them (an HTTP server's ``/v1/completions`` body), sent to the
    engine as they are in the options JSON, where its one parser of the
    sampling fields checks them (the same limits and error texts as a chat
    request's, :class:`InvalidArgumentError` naming the field, raised here
    at once by :func:`check_request_fields`) and each replaces the
    attribute of the same name. A ``seed`` up to 2**64 - 1 is sent as the
    signed integer of the same 64 bits (the struct's seed is unsigned). The
    checks of the other attributes here are only those of what the native
    struct can carry (types, widths); every limit is the engine's.
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
    n: int = 1
    logit_bias: Optional[Mapping[int, float]] = None
    allowed_token_ids: Optional[Tuple[int, ...]] = None
    stop_token_ids: Tuple[int, ...] = ()
    include_stop_str_in_output: bool = False
    prompt_logprobs: Optional[int] = None
    skip_special_tokens: bool = True
    truncate_prompt_tokens: Optional[int] = None
    bad_words: Tuple[str, ...] = ()
    request_fields: Optional[Mapping[str, Any]] = None

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        for name in ("temperature", "top_p", "min_p", "presence_penalty",
                     "frequency_penalty", "repetition_penalty"):
            set_(name, real(getattr(self, name), name))
        set_("top_k", int32(self.top_k, "top_k"))
        if self.max_tokens is not None:
            n = int32(self.max_tokens, "max_tokens")
            if n <= 0:
                raise InvalidConfigurationError(
                    "max_tokens=%d: must be >= 1 (use max_tokens=None for unbounded)" % n
                )
            set_("max_tokens", n)
        if self.seed is not None:
            set_("seed", int_in(self.seed, "seed", 0, UINT64_MAX))
        set_("min_tokens", int_in(self.min_tokens, "min_tokens", 0, INT32_MAX))
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
            opt_str(s, "stop")
        set_("stop", stop)
        if self.structured_output is not None and not isinstance(
            self.structured_output, StructuredOutput
        ):
            raise InvalidConfigurationError(
                "structured_output must be a StructuredOutput, not %s"
                % type(self.structured_output).__name__
            )
        if self.logprobs is not None:
            set_("logprobs", int32(self.logprobs, "logprobs"))
        set_("n", int_in(self.n, "n", 1, INT32_MAX))
        if self.logit_bias is not None:
            set_("logit_bias", _logit_bias(self.logit_bias))
        if self.allowed_token_ids is not None:
            set_("allowed_token_ids", _token_ids(self.allowed_token_ids, "allowed_token_ids"))
        set_("stop_token_ids", () if self.stop_token_ids is None
             else _token_ids(self.stop_token_ids, "stop_token_ids"))
        for flag in ("include_stop_str_in_output", "skip_special_tokens"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidConfigurationError("%s must be a bool" % flag)
        if self.prompt_logprobs is not None:
            set_("prompt_logprobs", int32(self.prompt_logprobs, "prompt_logprobs"))
        if self.truncate_prompt_tokens is not None:
            set_("truncate_prompt_tokens", int32(self.truncate_prompt_tokens, "truncate_prompt_tokens"))
        if self.bad_words is None or isinstance(self.bad_words, str) or not isinstance(self.bad_words, Iterable):
            raise InvalidConfigurationError("bad_words must be a sequence of str, not %s"
                                            % type(self.bad_words).__name__)
        set_("bad_words", tuple(self.bad_words))
        for word in self.bad_words:
            opt_str(word, "bad_words")
        if self.request_fields is not None:
            if not isinstance(self.request_fields, Mapping) or not all(
                    isinstance(k, str) for k in self.request_fields):
                raise InvalidConfigurationError("request_fields must be a mapping of field names to values")
            fields = dict(self.request_fields)
            if "seed" in fields:
                fields["seed"] = _engine_seed(fields["seed"], 0)
            check_request_fields(fields)
            set_("request_fields", types.MappingProxyType(fields))
        if self.logits_processor is not None:
            if not callable(self.logits_processor):
                raise InvalidConfigurationError("logits_processor must be callable")
            if self.max_tokens is None:
                raise InvalidConfigurationError(
                    "a logits_processor needs a bounded max_tokens (got max_tokens=None)"
                )

    def request_options(self) -> Dict[str, Any]:
        """The fields beyond ``vllm_sampling_params`` as the engine's JSON
        takes them (a chat request's, and the options of
        ``vllm_request_submit_with_options``): only those that are set."""
        options: Dict[str, Any] = {}
        if self.logit_bias is not None:
            options["logit_bias"] = {str(token): bias for token, bias in self.logit_bias.items()}
        if self.allowed_token_ids is not None:
            options["allowed_token_ids"] = list(self.allowed_token_ids)
        if self.stop_token_ids:
            options["stop_token_ids"] = list(self.stop_token_ids)
        if self.include_stop_str_in_output:
            options["include_stop_str_in_output"] = True
        if self.prompt_logprobs is not None:
            options["prompt_logprobs"] = self.prompt_logprobs
        if not self.skip_special_tokens:
            options["skip_special_tokens"] = False
        if self.truncate_prompt_tokens is not None:
            options["truncate_prompt_tokens"] = self.truncate_prompt_tokens
        if self.bad_words:
            options["bad_words"] = list(self.bad_words)
        if self.request_fields:
            options.update(self.request_fields)
        return options

    def for_choice(self, index: int) -> "SamplingParams":
        """The one-sequence params of sequence ``index`` of ``n``: a seeded
        request's sequence i samples with ``seed + i`` (vLLM's rule), so the
        n sequences differ and each repeats from run to run."""
        seed = self.seed if self.seed is None else (self.seed + index) % (UINT64_MAX + 1)
        fields = self.request_fields
        if fields and "seed" in fields:
            fields = dict(fields, seed=_engine_seed(fields["seed"], index))
        return dataclasses.replace(self, seed=seed, n=1, request_fields=fields)

    @classmethod
    def greedy(cls, **overrides: Any) -> "SamplingParams":
        """Greedy decoding (``temperature=0.0``) plus any other fields."""
        values: Dict[str, Any] = {"temperature": 0.0}
        values.update(overrides)
        return cls(**values)


def check_request_fields(fields: Mapping[str, Any]) -> None:
    """Checks sampling fields under vLLM's names with the engine's own
    parser (``vllm_sampling_options_check``: the one a chat request and the
    options JSON go through), without an engine: :class:`InvalidArgumentError`
    with its message, naming the field. Token ids are checked against the
    vocabulary only when a request runs."""
    try:
        text = json.dumps(dict(fields), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigurationError("request_fields must be JSON values: %s" % exc) from None
    _ffi.check(lib.vllm_sampling_options_check(text.encode("ascii")))  # json.dumps escaped the rest


def _engine_seed(seed: Any, index: int) -> Any:
    """Seed + index as the engine's parser reads a 64-bit seed: a signed
    integer of the same 64 bits as the struct's unsigned one. Anything but
    an integer in [-2**63, 2**64) is left for the engine to refuse."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(INT64_MAX + 1) <= seed <= UINT64_MAX:
        return seed
    wrapped = (seed + index) % (UINT64_MAX + 1)
    return wrapped - (UINT64_MAX + 1) if wrapped > INT64_MAX else wrapped


def _logit_bias(value: Any) -> Mapping[int, float]:
    """A read-only copy of a ``{token_id: bias}`` mapping, its keys int32 and
    its values finite numbers (JSON has no NaN; the engine checks the range)."""
    if not isinstance(value, Mapping):
        raise InvalidConfigurationError("logit_bias must be a mapping of token ids to numbers, not %s"
                                        % type(value).__name__)
    bias: Dict[int, float] = {}
    for token, number in value.items():
        token = int32(token, "logit_bias key")
        number = real(number, "logit_bias[%d]" % token)
        if not math.isfinite(number):
            raise InvalidConfigurationError("logit_bias[%d] must be a finite number, not %r" % (token, number))
        bias[token] = number
    return types.MappingProxyType(bias)


def _token_ids(value: Any, name: str) -> Tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidConfigurationError("%s must be a sequence of int token ids, not %s"
                                        % (name, type(value).__name__))
    return tuple(int32(t, "%s[%d]" % (name, i)) for i, t in enumerate(value))
