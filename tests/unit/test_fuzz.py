"""The engine's libFuzzer targets (third_party/vllm.cpp/tests/fuzz, one per
parser of untrusted input): built with clang under ASan and UBSan, each one
replays its committed inputs (seeds, and every crash or hang found so far)
and then fuzzes for a few seconds, so a regression in a parser's robustness
fails the suite. Longer runs: tests/fuzz/run_fuzzers.py --seconds N.
Skipped when clang with libFuzzer is missing (Debian: clang libclang-rt-14-dev;
the README's test command installs them first, tests/fuzz_toolchain.sh).
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUZZ = ROOT / "third_party" / "vllm.cpp" / "tests" / "fuzz"
BUILD = ROOT / "build" / "fuzz"
SMOKE_SECONDS = 4


def _runner():
    spec = importlib.util.spec_from_file_location("run_fuzzers", FUZZ / "run_fuzzers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if not (FUZZ / "run_fuzzers.py").is_file():
    # Against an installed wheel (tests/ without the engine's sources): the
    # fuzz targets build from those sources.
    pytest.skip("needs the engine's source tree (%s)" % FUZZ, allow_module_level=True)
runner = _runner()


def _libfuzzer_missing(tmp_path):
    """Why libFuzzer targets cannot be built here, or None."""
    clangxx = shutil.which("clang++")
    if clangxx is None:
        return "clang++ is not installed (Debian: apt-get install clang libclang-rt-14-dev)"
    source = tmp_path / "probe.cpp"
    source.write_text('extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n')
    result = subprocess.run([clangxx, "-fsanitize=fuzzer,address,undefined", str(source), "-o",
                             str(tmp_path / "probe")], capture_output=True, text=True)
    if result.returncode != 0:
        return f"clang++ cannot link libFuzzer (Debian: libclang-rt-14-dev): {result.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def fuzz_bin_dir(tmp_path_factory):
    missing = _libfuzzer_missing(tmp_path_factory.mktemp("libfuzzer"))
    if missing:
        pytest.skip(missing)
    return runner.build(BUILD, runner.targets(), ROOT / "vllm_cpp" / "include")


def test_every_parser_has_a_target_and_seeds():
    expected = {"fuzz_gguf", "fuzz_safetensors", "fuzz_tokenizer_json", "fuzz_chat_request", "fuzz_completion_request",
                "fuzz_json", "fuzz_jinja", "fuzz_gbnf", "fuzz_json_schema", "fuzz_regex", "fuzz_tokenizer",
                "fuzz_tool_parsers", "fuzz_reasoning_parsers", "fuzz_kv_transfer"}
    assert expected <= set(runner.targets())
    for name in runner.targets():
        assert any((FUZZ / "corpus" / name).iterdir()), f"{name} has no seed corpus"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", runner.targets())
def test_fuzz_target_replays_and_survives_a_smoke_run(fuzz_bin_dir, name):
    ok, output = runner.replay(fuzz_bin_dir / name, name, BUILD, input_timeout=10)
    assert ok, f"{name} fails on a committed input:\n{output[-4000:]}"
    ok, executions, coverage, _, output = runner.fuzz(fuzz_bin_dir / name, name, BUILD, SMOKE_SECONDS,
                                                      input_timeout=10)
    assert ok, f"{name} found a crash or hang (saved under {BUILD / 'crashes'}):\n{output[-4000:]}"
