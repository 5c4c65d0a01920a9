"""The ``vllm_cpp`` exception hierarchy.

Every error raised by the bindings derives from :class:`VllmError`. Errors
that come from a native status carry the message ``vllm_last_error()`` gave
(``message``) and the status code (``status``). Caller errors also derive
from :class:`ValueError`, as Python code expects of bad arguments.
"""

import re
from typing import Optional

__all__ = [
    "VllmError",
    "AbiMismatchError",
    "InvalidArgumentError",
    "ContextLengthExceededError",
    "ModelLoadError",
    "EngineError",
    "EngineClosedError",
    "UnknownNativeError",
    "InvalidConfigurationError",
    "InteriorNulError",
    "InvalidUtf8Error",
    "CallbackError",
    "LogitsProcessorError",
    "RequestCallbackThreadError",
    "error_for_status",
]

# vllm_status values (vllm.h); kept here so the mapping is importable without
# the compiled module.
VLLM_OK = 0
VLLM_ERR_INVALID_ARGUMENT = 1
VLLM_ERR_MODEL_LOAD = 2
VLLM_ERR_RUNTIME = 3
VLLM_ERR_UNKNOWN = 4


class VllmError(Exception):
    """Base class of every vllm_cpp error.

    ``message`` is the human-readable text (for native errors: what
    ``vllm_last_error()`` said); ``status`` is the native ``vllm_status`` when
    the error came from one, else ``None``.
    """

    def __init__(self, message: str = "", *, status: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.status = status

    def __reduce__(self):
        return (_rebuild, (type(self), self.message, self.status, dict(self.__dict__)))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls, message, status, state):
    err = cls.__new__(cls)
    VllmError.__init__(err, message, status=status)
    err.__dict__.update(state)
    return err


class AbiMismatchError(VllmError):
    """The loaded libvllm speaks a different C ABI than these bindings."""

    def __init__(self, expected: int, actual: int):
        super().__init__(
            "libvllm C ABI mismatch: the vllm_cpp bindings need ABI version %d, "
            "the loaded library reports %d (reinstall vllm-cpp so both come from "
            "one build)" % (expected, actual)
        )
        self.expected = expected
        self.actual = actual


class InvalidArgumentError(VllmError, ValueError):
    """VLLM_ERR_INVALID_ARGUMENT: the engine refused an argument (out of range,
    malformed JSON, unknown name, or a feature that is not implemented)."""


class ContextLengthExceededError(InvalidArgumentError):
    """The prompt does not fit the engine's max_model_len. ``max_model_len``
    and ``prompt_tokens`` are the numbers the engine reported; the message is
    vLLM's ("This model's maximum context length is N tokens. However, your
    request has M input tokens. ..."), which clients such as LangChain and
    litellm recognise."""

    def __init__(self, message: str = "", *, status: Optional[int] = None,
                 max_model_len: int = 0, prompt_tokens: int = 0):
        super().__init__(message, status=status)
        self.max_model_len = max_model_len
        self.prompt_tokens = prompt_tokens


#: The engine's overflow refusal (engine/engine.cpp, pinned by
#: test_agent_turns.py): the C ABI has no status of its own for it.
_CONTEXT_LENGTH_EXCEEDED = re.compile(
    r"This model's maximum context length is (\d+) tokens\. However, your request has (\d+) input tokens\.")


class ModelLoadError(VllmError):
    """VLLM_ERR_MODEL_LOAD: config, tokenizer or weights could not be loaded."""


class EngineError(VllmError):
    """VLLM_ERR_RUNTIME: generation or engine failure."""


class EngineClosedError(EngineError):
    """The engine (or request) was used after ``close()``."""


class UnknownNativeError(VllmError):
    """VLLM_ERR_UNKNOWN, or a status code this version does not know."""


class InvalidConfigurationError(VllmError, ValueError):
    """A Python value the C ABI cannot carry (wrong type, out of the native
    integer range, ``max_tokens=0``, ...). Raised before any native call."""


class InteriorNulError(VllmError, ValueError):
    """A string passed to the engine contains a NUL character; ``field`` names
    the argument it was found in."""

    def __init__(self, field: str, message: Optional[str] = None):
        super().__init__(message or "%s contains an interior NUL character" % field)
        self.field = field


class InvalidUtf8Error(VllmError):
    """The engine returned bytes that are not valid UTF-8; ``field`` names the
    value (``text``, ``delta``, ...) and ``data`` holds the raw bytes."""

    def __init__(self, field: str, data: bytes = b"", reason: str = ""):
        msg = "native %s is not valid UTF-8" % field
        if reason:
            msg += ": " + reason
        super().__init__(msg)
        self.field = field
        self.data = data


class CallbackError(VllmError):
    """A callback of a non-blocking request raised; the original exception is
    ``__cause__``."""


class LogitsProcessorError(VllmError):
    """A logits processor raised; the original exception is ``__cause__``."""


class RequestCallbackThreadError(VllmError):
    """``Request.wait()`` was called from the request's own callback thread,
    which would deadlock."""


_STATUS_ERRORS = {
    VLLM_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    VLLM_ERR_MODEL_LOAD: ModelLoadError,
    VLLM_ERR_RUNTIME: EngineError,
    VLLM_ERR_UNKNOWN: UnknownNativeError,
}


def error_for_status(status: int, message: str) -> VllmError:
    """The exception for a non-OK native status, carrying the native message.

    A status this version does not know maps to :class:`UnknownNativeError`.
    """
    cls = _STATUS_ERRORS.get(int(status))
    if cls is None:
        text = "unknown native status %d" % int(status)
        if message:
            text += ": " + message
        return UnknownNativeError(text, status=int(status))
    if not message:
        message = "native call failed with status %d and no message" % int(status)
    overflow = _CONTEXT_LENGTH_EXCEEDED.match(message) if cls is InvalidArgumentError else None
    if overflow is not None:
        return ContextLengthExceededError(message, status=int(status), max_model_len=int(overflow.group(1)),
                                          prompt_tokens=int(overflow.group(2)))
    return cls(message, status=int(status))
