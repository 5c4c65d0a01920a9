"""One version, in one place (third_party/vllm.cpp/VERSION): the installed
metadata, vllm_cpp.__version__ and the engine's vllm_version() agree."""

import importlib.metadata
import pathlib

import pytest

import vllm_cpp

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION_FILE = ROOT / "third_party" / "vllm.cpp" / "VERSION"


def test_metadata_package_and_engine_agree():
    assert vllm_cpp.__version__ == vllm_cpp.library_version() == importlib.metadata.version("vllm-cpp")


def test_the_version_file_is_the_source():
    if not VERSION_FILE.is_file():
        pytest.skip("not a source checkout (no %s)" % VERSION_FILE.relative_to(ROOT))
    assert VERSION_FILE.read_text().strip() == vllm_cpp.__version__
    assert "\n## %s" % vllm_cpp.__version__ in (ROOT / "CHANGELOG.md").read_text() or \
        "\n## Unreleased" in (ROOT / "CHANGELOG.md").read_text()
