"""Python values -> the C ABI's structs and back: ``vllm_model_params`` and
the options JSON of ``vllm_engine_load_with_options`` from normalized
engine options, ``vllm_sampling_params`` (with its buffers, the logits
processor's callback handle and the sampling options JSON of
``vllm_request_submit_with_options``) from :class:`SamplingParams`, and
:class:`Completion` from a ``vllm_completion``."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from . import _ffi
from ._ffi import decode_cstr, encode_str, ffi, lib
from .callbacks import LOGITS_TRAMPOLINE, LogitsSink, WeakSink
from .checks import path_str
from .engine_options import ENGINE_OPTION_TABLE, PathLike
from .errors import InvalidConfigurationError
from .outputs import Completion, FinishReason
from .sampling_params import SamplingParams

__all__ = ["native_model_params", "native_options_json", "NativeSampling", "native_sampling_params",
           "completion_from"]


def model_path_str(model_path: Any) -> str:
    return path_str(model_path, "model_path")


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
    p.model_path = native(model_path_str(model_path), "model_path")
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


def completion_from(out) -> "Completion":
    """A Completion from a filled ``vllm_completion`` (not freed here)."""
    text = decode_cstr(out.text, "text") or ""
    reason = FinishReason.parse(decode_cstr(out.finish_reason, "finish_reason"))
    return Completion(text, reason, int(out.prompt_tokens), int(out.completion_tokens))


class NativeSampling:
    """A ``vllm_sampling_params*`` for one native call, with the buffers and
    callback handles it points to. ``close()`` releases the handles; for a
    submitted request the Request takes them over instead."""

    def __init__(self, params: SamplingParams):
        if not isinstance(params, SamplingParams):
            raise InvalidConfigurationError(
                "params must be SamplingParams, not %s" % type(params).__name__
            )
        if params.n != 1:
            raise InvalidConfigurationError(
                "n=%d: an engine request samples one sequence; LLM.generate and LLM.chat sample n "
                "(or submit one request per SamplingParams.for_choice(i))" % params.n
            )
        self.keep: List[Any] = []
        self.handles: List[Any] = []
        self.logits: Optional[LogitsSink] = None
        # The options JSON of the *_with_options submits (NULL: none).
        options = params.request_options()
        self.options = self._cstr(json.dumps(options), "options") if options else ffi.NULL
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

    def __enter__(self) -> "NativeSampling":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def native_sampling_params(params: SamplingParams):
    """The native struct for ``params`` (for inspection and tests); the
    returned object keeps its buffers alive. Use ``.ptr``."""
    return NativeSampling(params)
