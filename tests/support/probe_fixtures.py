"""What the tests that run model_probe share.

``from probe_fixtures import float32_kv_cache`` in a test module switches
every engine it starts (model_probe subprocesses and in-process engines) to
the float32 KV cache; test_architectures.py's docstring says why tests of
an architecture's math want it.
"""

import os

import pytest

from native_build import build_native_tests


@pytest.fixture(scope="module", autouse=True)
def float32_kv_cache():
    """The float32 KV cache for every engine the importing module starts."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_CPP_KV_CACHE_DTYPE", "f32")
        yield


def model_probe_path():
    """model_probe from build/native-tests, or $VLLM_CPP_TEST_MODEL_PROBE (e.g. a sanitizer build)."""
    override = os.environ.get("VLLM_CPP_TEST_MODEL_PROBE")
    return override if override else str(build_native_tests() / "model_probe")
