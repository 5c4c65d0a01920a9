"""server/jsonio.py: the engine reads the same values from the server's
written copy of a body as from the stdlib's, with orjson and without."""

import json
import math

import pytest

from vllm_cpp.server import jsonio

BODIES = [
    b'{"messages": [{"role": "user", "content": "caf\\u00e9 \\u4e16\\u754c \\ud83d\\ude00"}], "n": 1}',
    b'{"seed": 123456789012345678901234567890, "top_k": -9223372036854775809}',  # past 64 bits
    b'{"content": "a\\ud800b", "x": "\\udfff"}',  # lone surrogates
    b'{"temperature": NaN, "top_p": Infinity, "min_p": -Infinity, "max_tokens": 1e999}',
    b'{"a": 1, "a": 2, "b": [1.5, -0.0, 1e-7, 2.5e300], "c": {"d": null, "e": true}}',
]


def same(a, b):
    """Equal, NaN included (json.loads reads NaN back as a NaN)."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("raw", BODIES)
@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib"])
def test_the_written_body_reads_back_as_the_stdlib_wrote_it(raw, with_orjson, monkeypatch):
    if with_orjson:
        pytest.importorskip("orjson")
    else:
        monkeypatch.setattr(jsonio, "orjson", None)
    body = jsonio.loads(raw)
    assert same(json.loads(jsonio.dumps(body)), json.loads(json.dumps(json.loads(raw))))


def test_non_finite_numbers_are_written_as_the_stdlib_writes_them():
    body = jsonio.loads(b'{"t": NaN, "u": 1e999, "v": -Infinity}')
    assert jsonio.dumps(body) == '{"t": NaN, "u": Infinity, "v": -Infinity}'
    assert all(isinstance(v, float) for v in body.values())


@pytest.mark.parametrize("raw", [b'{"a": }', b"\xff", b"[" * 100000, b"1" * 5000])
def test_parse_errors_are_the_stdlib_s(raw):
    try:
        json.loads(raw)
    except (ValueError, RecursionError) as exc:
        expected = exc
    with pytest.raises(type(expected)) as raised:
        jsonio.loads(raw)
    assert str(raised.value) == str(expected)
