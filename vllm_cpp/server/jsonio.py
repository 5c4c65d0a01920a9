"""The server's one road for request JSON: parse a body, write one for the
engine.

Both run on the event loop holding the GIL, so their time is time every
other stream's delivery waits (issue 37, bug 6: a 2 MB constraint body
took ~20 ms to parse and 20-120 ms to write again with the stdlib).
Parsing stays the stdlib's: orjson parses such a body no faster (building
200,000 str objects dominates) and answers differently (integers past
64 bits become floats, NaN and lone surrogates are refused), so every
body gets the answers it got before. Writing goes through orjson when it
is installed (the ``server`` extra), 10-20x faster, with the stdlib as the
fallback for what orjson refuses (integers past 64 bits, lone surrogates),
so the engine reads the same values as before. The one value orjson would
write differently, a non-finite float (as null, where the stdlib writes
NaN / Infinity), is marked when parsed (:class:`NonFiniteFloat`, which
orjson refuses) and so written by the stdlib too.
"""

from __future__ import annotations

import json
import math
from typing import Any

try:
    import orjson
except ImportError:  # the stdlib alone: the same text, written slower
    orjson = None


class NonFiniteFloat(float):
    """NaN or an infinity read from a body: a float to every check, and a
    value orjson refuses, so :func:`dumps` writes it as the stdlib does."""


def _constant(name: str) -> float:
    return NonFiniteFloat(name)  # "NaN", "Infinity", "-Infinity": float() reads each


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else NonFiniteFloat(value)  # 1e999 overflows to inf


def loads(raw: bytes) -> Any:
    """The stdlib's parse (its errors raised as they are), non-finite
    numbers marked."""
    return json.loads(raw, parse_constant=_constant, parse_float=_float)


def dumps(value: Any) -> str:
    """``json.dumps(value)``'s JSON (the same values; orjson writes non-ASCII
    as UTF-8 where the stdlib escapes it)."""
    if orjson is not None:
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # orjson.JSONEncodeError: past 64 bits, a lone surrogate, a non-finite float
            pass
    return json.dumps(value)
