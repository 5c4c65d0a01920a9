"""Value checks shared by the engine options and the sampling parameters:
each returns the value in its normalized form or raises
:class:`InvalidConfigurationError` naming the field. Values the C ABI cannot
carry are refused here, before any native call; everything else is for the
engine to accept or refuse."""

from __future__ import annotations

import json
import numbers
import operator
import os
from typing import Any, Optional

from ._ffi import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, encode_str, fspath
from .errors import InvalidConfigurationError


def int_in(value: Any, name: str, lo: int, hi: int) -> int:
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


def int32(value: Any, name: str) -> int:
    return int_in(value, name, INT32_MIN, INT32_MAX)


def real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidConfigurationError(
            "%s must be a number, not %s" % (name, type(value).__name__)
        )
    return float(value)


def opt_str(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidConfigurationError(
            "%s must be a str, not %s" % (name, type(value).__name__)
        )
    encode_str(value, name)
    return value


def opt_json(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return opt_str(value, name)
    if isinstance(value, dict):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigurationError(
                "%s is not JSON-serializable: %s" % (name, exc)
            ) from None
        return opt_str(text, name)
    raise InvalidConfigurationError(
        "%s must be a JSON str or a dict, not %s" % (name, type(value).__name__)
    )


def path_str(value: Any, name: str) -> str:
    value = fspath(value, name)
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    return opt_str(value, name)


def int64(value: Any, name: str) -> int:
    return int_in(value, name, INT64_MIN, INT64_MAX)
