"""Speculative decoding (issue 12).

The components without a model run as the engine's native test program
test_spec_decode: the speculative_config parser and its refusals, the n-gram
and suffix proposers, and the rejection sampler's output distribution
against the ordinary sampler's (chi-square at a fixed significance).
"""

import pytest

from native_build import build_native_tests
from test_native import run_program


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.mark.timeout(600)
def test_native_spec_decode_components(build):
    run_program(build, "test_spec_decode")
