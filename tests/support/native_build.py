"""Builds the engine's own test programs (third_party/vllm.cpp/tests) once.

The C-ABI test and the C++ unit tests link the engine objects, so they are
built with CMake from the source tree, in Release like the package, into
build/native-tests (reused by later runs: CMake rebuilds only what changed).

Two variables serve a copy of tests/ run outside the checkout against an
installed package (tests/support/sanitize.py): $VLLM_CPP_SOURCE_ROOT names the
checkout (the programs build from its sources, and conftest finds the
fixtures beside it), and $VLLM_CPP_SANITIZE, as for setup.py, builds them
with ASan+UBSan in the sanitized package's own CMake tree
(build/libvllm-ninja-sanitize), linking the engine objects already built
there: a tree of their own would compile the instrumented engine a second
time (ccache cannot share objects with debug information between trees).
"""

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("VLLM_CPP_SOURCE_ROOT") or pathlib.Path(__file__).resolve().parents[2])
ENGINE = ROOT / "third_party" / "vllm.cpp"
SANITIZE = os.environ.get("VLLM_CPP_SANITIZE", "").strip().lower() in ("1", "on", "true", "yes")
#: The engine's CMake is told where vllm.h is (-DVLLM_INCLUDE_DIR).
INCLUDE_DIR = ROOT / "vllm_cpp" / "include"


def _tool(name):
    """cmake/ninja from PATH or from the running interpreter's environment."""
    found = shutil.which(name)
    if found:
        return found
    candidate = pathlib.Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else None


#: setup.py's tree for the sanitized package (its build/libvllm-<generator>-sanitize).
BUILD = ROOT / "build" / ("libvllm-%s-sanitize" % ("ninja" if _tool("ninja") else "make") if SANITIZE
                          else "native-tests")

#: Why the native tests cannot run, or None: the suite also runs from a copy
#: of tests/ against an installed wheel, where the engine's sources are absent.
SOURCE_TREE_MISSING = (None if (ENGINE / "CMakeLists.txt").is_file() else
                       f"the engine's sources ({ENGINE}) are not here: the native test programs "
                       "build from a source checkout")


def build_native_tests():
    """Configures and builds every test program; returns the build directory
    (skips the calling test when there is no source tree to build from)."""
    if SOURCE_TREE_MISSING:
        import pytest

        pytest.skip(SOURCE_TREE_MISSING)
    cmake = _tool("cmake")
    if cmake is None:
        raise RuntimeError("cmake is needed to build the native tests (pip install cmake)")
    configure = [cmake, "-S", str(ENGINE), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release", "-DVLLM_BUILD_TESTS=ON",
                 f"-DVLLM_INCLUDE_DIR={INCLUDE_DIR}", "-DVLLM_SANITIZE=%s" % ("ON" if SANITIZE else "OFF")]
    ninja = _tool("ninja")
    if ninja and not (BUILD / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    subprocess.run([cmake, "--build", str(BUILD), "-j", jobs], check=True, stdout=subprocess.DEVNULL)
    return BUILD


def run_program(build, name, *args, env=None):
    """Runs one native test program; asserts it exits 0 with "0 failed"."""
    result = subprocess.run([str(build / name), *map(str, args)], capture_output=True, text=True, timeout=500,
                            env=env)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert summary.endswith("0 failed"), summary
    return result
