"""What a completion produced: :class:`Completion`, its
:class:`FinishReason` and per-token :class:`TokenLogprob`s."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Union

__all__ = ["FinishReason", "TokenLogprob", "Completion", "decode_embedding"]


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


@dataclass(frozen=True)
class TokenLogprob:
    """One token's log-probability: its id, raw bytes, text (the bytes as
    UTF-8, U+FFFD where a token holds part of a character) and, for a
    generated or prompt token, the most likely alternatives and its rank
    (vLLM's: how many tokens are at least as likely; 1 for the most likely;
    ``None`` where the engine computed none, e.g. an alternative)."""

    token_id: int
    token_bytes: bytes
    logprob: float
    top_logprobs: Tuple["TokenLogprob", ...] = ()
    rank: Optional[int] = None

    @property
    def token(self) -> str:
        return self.token_bytes.decode("utf-8", errors="replace")

    @classmethod
    def from_native(cls, entry: Dict[str, Any]) -> "TokenLogprob":
        """An entry of ``vllm_request_output``'s ``logprobs`` list."""
        return cls(int(entry["token_id"]), bytes(entry["bytes"]), float(entry["logprob"]),
                   tuple(cls.from_native(alt) for alt in entry.get("top_logprobs", ())), entry.get("rank"))


@dataclass(frozen=True)
class Completion:
    """The result of ``Engine.complete``. ``token_ids`` (the generated ids)
    is set for completions made through a request (``submit``,
    ``acomplete``, token-id prompts, ``logprobs``); ``logprobs`` when the
    sampling parameters asked for them; ``prompt_logprobs`` (vLLM's) when
    they asked for those: one entry per prompt token, ``None`` for the
    first (nothing precedes it)."""

    text: str
    finish_reason: Union[FinishReason, str, None]
    prompt_tokens: int
    completion_tokens: int
    # Extras of the request path; equality is about the completion itself.
    token_ids: Optional[Tuple[int, ...]] = field(default=None, compare=False)
    logprobs: Optional[Tuple[TokenLogprob, ...]] = field(default=None, compare=False)
    prompt_logprobs: Optional[Tuple[Optional[TokenLogprob], ...]] = field(default=None, compare=False)


def decode_embedding(value: Union[str, list]) -> list:
    """An OpenAI embedding object's ``embedding``: a list of floats, or the
    base64 of its float32 bytes (little endian: ``encoding_format="base64"``)."""
    if isinstance(value, list):
        return [float(x) for x in value]
    import base64
    import struct

    raw = base64.b64decode(value)
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))
