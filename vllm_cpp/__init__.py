"""vllm_cpp: Python bindings of vllm.cpp, a C++ LLM inference engine.

    from vllm_cpp import Engine, SamplingParams
    with Engine.load("model.gguf") as engine:
        print(engine.complete("The capital of France is",
                              SamplingParams.greedy(max_tokens=8)).text)

The engine is ``libvllm`` (C ABI v10, ``vllm.h``), reached through an
out-of-line API-mode cffi module; see ``get_include()`` and
``get_library_path()`` to build C clients against the copy shipped here.
"""

import os as _os

from . import _ffi, models
from .engine import Engine, EngineBuilder
from .engine_options import SchedulerPolicy, Toggle
from .errors import (
    AbiMismatchError,
    CallbackError,
    EngineClosedError,
    EngineError,
    InteriorNulError,
    InvalidArgumentError,
    ContextLengthExceededError,
    InvalidConfigurationError,
    InvalidUtf8Error,
    LogitsProcessorError,
    ModelLoadError,
    RequestCallbackThreadError,
    UnknownNativeError,
    VllmError,
)
from .llm import LLM, CompletionOutput, Logprob, RequestOutput
from .lora import LoRARequest
from .outputs import Completion, FinishReason, TokenLogprob
from .pooling import EmbeddingOutput, EmbeddingRequestOutput, PoolingParams
from .pooling import ClassificationOutput, ClassificationRequestOutput, PoolingOutput, PoolingRequestOutput
from .pooling import ScoringOutput, ScoringRequestOutput
from .request import Request, RequestOutcome
from .sampling_params import SamplingParams, StructuredOutput
from .stream_events import StreamControl, StreamEvent, StreamOutcome

#: The C ABI version these bindings speak.
ABI_VERSION = _ffi.EXPECTED_ABI_VERSION

_PACKAGE_DIR = _os.path.dirname(_os.path.abspath(__file__))
_LIBRARY_NAMES = ("libvllm.so", "libvllm.dylib", "vllm.dll")


def get_include() -> str:
    """Directory holding ``vllm.h`` (the C ABI header) inside the package."""
    return _os.path.join(_PACKAGE_DIR, "include")


def get_library_path() -> str:
    """Path of the ``libvllm`` shared library shipped inside the package."""
    for name in _LIBRARY_NAMES:
        candidate = _os.path.join(_PACKAGE_DIR, name)
        if _os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(
        "libvllm is not in %s; build the package with `pip install .`" % _PACKAGE_DIR
    )


def abi_version() -> int:
    """``vllm_abi_version()`` of the loaded libvllm."""
    return _ffi.native_abi_version()


def library_version() -> str:
    """``vllm_version()`` of the loaded libvllm."""
    return _ffi.decode_cstr(_ffi.lib.vllm_version(), "version") or ""


#: The package's version: the engine's, both read from one file
#: (third_party/vllm.cpp/VERSION) when they are built.
__version__ = library_version()


__all__ = [
    "ABI_VERSION",
    "AbiMismatchError",
    "CallbackError",
    "Completion",
    "CompletionOutput",
    "Engine",
    "EngineBuilder",
    "EngineClosedError",
    "EngineError",
    "FinishReason",
    "InteriorNulError",
    "InvalidArgumentError",
    "ContextLengthExceededError",
    "InvalidConfigurationError",
    "InvalidUtf8Error",
    "LLM",
    "Logprob",
    "LogitsProcessorError",
    "ModelLoadError",
    "Request",
    "RequestCallbackThreadError",
    "RequestOutcome",
    "RequestOutput",
    "SamplingParams",
    "SchedulerPolicy",
    "StreamControl",
    "StreamEvent",
    "StreamOutcome",
    "StructuredOutput",
    "TokenLogprob",
    "Toggle",
    "UnknownNativeError",
    "VllmError",
    "LoRARequest",
    "abi_version",
    "get_include",
    "get_library_path",
    "library_version",
    "__version__",
    # Embeddings (issue 43)
    "EmbeddingOutput",
    "EmbeddingRequestOutput",
    "PoolingParams",
    # Scoring, classification and the pooling API (issue 43)
    "ScoringOutput",
    "ScoringRequestOutput",
    "ClassificationOutput",
    "ClassificationRequestOutput",
    "PoolingOutput",
    "PoolingRequestOutput",
]
