"""The package as users get it: the sdist builds anywhere, and a platform
wheel made from it installs and runs without a compiler.

One module-scoped build does what a release does: ``python -m build
--sdist`` of this checkout, then in an empty directory the sdist unpacked
and ``python -m build --wheel`` from it (build isolation: the sdist's own
build requirements), then ``auditwheel repair`` on Linux. The tests install
the result into fresh virtual environments whose PATH has no compiler and
generate with SmolLM2 there. The build compiles the whole engine once: the
module's cost, about 7 minutes on 2 busy cores without ccache, under 2
minutes in all where a ccache has the checkout's objects (see build_env).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

import vllm_cpp
from vllm_cpp import SamplingParams
from wheel_tools import PROMPT, auditwheel, check_abi3_self_contained, make_venv, run, run_in_venv, shown_policy

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "packaging-test"

pytestmark = [
    pytest.mark.timeout(2400),  # the fixture's engine build counts against the first test
    pytest.mark.skipif(not (ROOT / "setup.py").is_file(), reason="needs the source checkout (setup.py) to build from"),
]

#: What a wheel build needs from the sdist (beyond the Python package).
REQUIRED_IN_SDIST = (
    "setup.py", "pyproject.toml", "build_ffi.py", "zig_toolchain.py", "LICENSE", "README.md", "CHANGELOG.md",
    "docs/c-abi-v10.md", "vllm_cpp/include/vllm.h", "third_party/vllm.cpp/CMakeLists.txt",
    "third_party/vllm.cpp/VERSION", "third_party/vllm.cpp/src/api/c_api.cpp",
    "third_party/vllm.cpp/src/api/libvllm.map",
)
#: Build outputs that must never be in an sdist.
GENERATED = re.compile(r"(^|/)(build|__pycache__|\.git)(/|$)|\.(so|dylib|o|a|pyc)$|(^|/)_vllm_ffi")

def build_env():
    """The environment of the wheel build: where ccache is installed it
    compiles through it, with the checkout as base directory, so objects the
    checkout's own build compiled (same relative layout) are reused."""
    env = dict(os.environ)
    if shutil.which("ccache") and not env.get("CMAKE_CXX_COMPILER_LAUNCHER"):
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache")
        env.setdefault("CCACHE_BASEDIR", str(ROOT))
    return env


@pytest.fixture(scope="module")
def dists():
    """(sdist, repaired wheel) built as described in the module docstring."""
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "src").mkdir(parents=True)
    run([sys.executable, "-m", "build", "--sdist", "--outdir", WORK / "sdist", ROOT])
    (sdist,) = (WORK / "sdist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(WORK / "src", filter="data")
        else:  # Python < 3.9.17 has no extraction filters
            tar.extractall(WORK / "src")
    (source,) = (WORK / "src").iterdir()
    run([sys.executable, "-m", "build", "--wheel", "--outdir", WORK / "wheel", source], env=build_env())
    (wheel,) = (WORK / "wheel").glob("*.whl")
    if sys.platform.startswith("linux"):
        auditwheel("repair", "-w", WORK / "repaired", wheel)
        (wheel,) = (WORK / "repaired").glob("*.whl")
    return sdist, wheel


def test_sdist_has_what_a_build_needs_and_nothing_generated(dists):
    sdist, _wheel = dists
    with tarfile.open(sdist) as tar:
        names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    missing = [name for name in REQUIRED_IN_SDIST if name not in names]
    assert not missing, "missing from the sdist: %s" % missing
    generated = [name for name in names if GENERATED.search(name)]
    assert not generated, "generated files in the sdist: %s" % generated[:20]


def test_wheel_is_abi3_stripped_and_self_contained(dists):
    _sdist, wheel = dists
    platform_tag, sizes = check_abi3_self_contained(wheel, vllm_cpp.__version__)
    if sys.platform.startswith("linux"):
        # The policy this machine's toolchain allows: manylinux_2_28 in
        # cibuildwheel's manylinux_2_28 image; a newer glibc/libstdc++ gets a
        # newer one (the report says which; test_zig_wheels.py builds
        # manylinux_2_28 here with zig).
        assert re.fullmatch(r"manylinux_2_\d+_(x86_64|aarch64)", platform_tag), platform_tag
        assert shown_policy(wheel) == platform_tag
    print("\n" + sizes)


def test_wheel_generates_in_a_fresh_venv_without_a_compiler(dists, engine):
    _sdist, wheel = dists
    python, env = make_venv(sys.executable, WORK / "venv", wheel)
    result = run_in_venv(python, env, vllm_cpp.models.smollm2_path(), WORK)
    assert pathlib.Path(result["file"]).is_relative_to(WORK / "venv")
    assert result["version"] == result["metadata"] == result["library"] == vllm_cpp.__version__
    expected = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=8)).text
    assert result["complete"] == result["stream"] == expected


def other_pythons():
    """Interpreters of other minor versions than this one: $VLLM_CPP_OTHER_PYTHONS
    (os.pathsep-separated), python3.N on PATH, the system's python3 and pyenv's."""
    candidates = [p for p in os.environ.get("VLLM_CPP_OTHER_PYTHONS", "").split(os.pathsep) if p]
    candidates += [shutil.which("python3.%d" % minor) for minor in range(9, 16)]
    candidates.append("/usr/bin/python3")
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(str(p) for p in pathlib.Path(root, "versions").glob("3.*/bin/python3"))
    found = {}
    for candidate in filter(None, candidates):
        proc = subprocess.run([candidate, "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            minor = tuple(int(x) for x in proc.stdout.split())
            if minor >= (3, 9) and minor != sys.version_info[:2]:
                found.setdefault(minor, candidate)
    return found


def test_abi3_wheel_runs_under_another_python_minor(dists):
    """The one wheel serves every CPython from 3.9: run it under the oldest
    other minor version this machine has."""
    _sdist, wheel = dists
    found = other_pythons()
    if not found:
        pytest.skip("no CPython >= 3.9 of another minor version than %d.%d here (looked at "
                    "$VLLM_CPP_OTHER_PYTHONS, python3.N on PATH, /usr/bin/python3, pyenv)" % sys.version_info[:2])
    minor = min(found)
    python, env = make_venv(found[minor], WORK / "venv-other", wheel)
    result = run_in_venv(python, env, vllm_cpp.models.smollm2_path(), WORK)
    assert tuple(result["python"]) == minor
    assert result["version"] == vllm_cpp.__version__ and result["complete"] == result["stream"]
    print("\nran the %s wheel under Python %d.%d (%s) and %d.%d" % (
        wheel.name, *minor, found[minor], *sys.version_info[:2]))
