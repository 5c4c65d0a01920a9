"""The import path ``vllm_cpp.core`` of earlier versions, kept working: the
engine, its options, sampling parameters and results now live in modules
named by their role (:mod:`~vllm_cpp.engine`, :mod:`~vllm_cpp.engine_options`,
:mod:`~vllm_cpp.sampling_params`, :mod:`~vllm_cpp.outputs`,
:mod:`~vllm_cpp.marshalling`); this module only re-exports them."""

from .engine import Engine, EngineBuilder, Prompt
from .engine_options import (
    ENGINE_OPTION_TABLE,
    ENGINE_OPTIONS,
    EngineOption,
    OptionKind,
    SchedulerPolicy,
    Toggle,
    engine_options_from_vllm_names,
    normalize_options as _normalize_options,
)
from .marshalling import native_model_params, native_options_json, native_sampling_params
from .outputs import Completion, FinishReason, TokenLogprob
from .sampling_params import SamplingParams, StructuredOutput

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
