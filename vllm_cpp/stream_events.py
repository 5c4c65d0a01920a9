"""What a stream callback sees and returns: :class:`StreamEvent`,
:class:`StreamControl`, and how a blocking stream ended,
:class:`StreamOutcome`."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["StreamControl", "StreamEvent", "StreamOutcome"]


class StreamControl(enum.Enum):
    """What a stream callback returns: go on, or stop (abort) the request.

    ``True`` and ``None`` also mean CONTINUE; ``False`` means STOP.
    """

    CONTINUE = "continue"
    STOP = "stop"


@dataclass(frozen=True)
class StreamEvent:
    """One callback: the text produced by an engine step (``delta``, never
    splitting a code point), or the terminal event (``finished=True``, delta
    possibly ``""``)."""

    delta: str
    finished: bool


@dataclass(frozen=True)
class StreamOutcome:
    """How a blocking stream ended. ``stopped_by_callback`` is True when the
    callback returned STOP before the terminal event (returning STOP on the
    terminal event itself is a natural finish)."""

    stopped_by_callback: bool
