"""The engine's NEON kernels, cross-built for 64-bit ARM and run under
user-mode emulation.

Skipped unless a cross compiler (aarch64-linux-gnu-g++, Debian package
g++-aarch64-linux-gnu) and qemu-aarch64 (package qemu-user) are on PATH;
nothing installs them, so CI only runs this where they happen to be.

It builds test_kernels and test_attention with
third_party/vllm.cpp/cmake/aarch64-linux-gnu.cmake into build/arm-tests and
runs test_kernels on two emulated CPUs: one with the dot product
instructions (the SDOT kernels) and a Cortex-A53 without them (the plain
NEON fallback), and once more with VLLM_CPP_ISA=scalar; test_attention
runs the NEON build of the attention tiles (their register tile is sized
for NEON's registers, unlike the x86 builds').
"""

import os
import shutil
import subprocess

import pytest

# The checkout's engine, also from tests copied out of it (tests/support/sanitize.py).
from native_build import ENGINE, INCLUDE_DIR, ROOT, SOURCE_TREE_MISSING

BUILD = ROOT / "build" / "arm-tests"
SYSROOT = "/usr/aarch64-linux-gnu"

pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("qemu-aarch64") and shutil.which("aarch64-linux-gnu-g++")),
        reason="needs qemu-aarch64 and aarch64-linux-gnu-g++ on PATH",
    ),
    pytest.mark.skipif(bool(SOURCE_TREE_MISSING), reason=SOURCE_TREE_MISSING or ""),
]


@pytest.fixture(scope="module")
def arm_build():
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on PATH")
    subprocess.run([cmake, "-S", str(ENGINE), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
                    f"-DVLLM_INCLUDE_DIR={INCLUDE_DIR}",
                    f"-DCMAKE_TOOLCHAIN_FILE={ENGINE / 'cmake' / 'aarch64-linux-gnu.cmake'}"],
                   check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    subprocess.run([cmake, "--build", str(BUILD), "-j", jobs, "--target", "test_kernels", "test_attention"],
                   check=True, stdout=subprocess.DEVNULL)
    return BUILD


@pytest.fixture(scope="module")
def test_kernels(arm_build):
    return arm_build / "test_kernels"


def run_emulated(program, cpu, isa=None):
    env = dict(os.environ)
    env.pop("VLLM_CPP_ISA", None)
    if isa:
        env["VLLM_CPP_ISA"] = isa
    result = subprocess.run(["qemu-aarch64", "-L", SYSROOT, "-cpu", cpu, str(program)], capture_output=True,
                            text=True, timeout=600, env=env)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, f"{program.name} on {cpu} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert lines and lines[-1].endswith(" 0 failed"), lines[-1:] or result.stderr[-2000:]
    return lines[0]  # test_kernels: "builds on this machine: ... (active: ...)"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("cpu", ["max", "cortex-a53"], ids=["with-dotprod", "without-dotprod"])
def test_kernels_neon(test_kernels, cpu):
    assert "(active: neon)" in run_emulated(test_kernels, cpu)


@pytest.mark.timeout(900)
def test_kernels_forced_scalar(test_kernels):
    assert "(active: scalar)" in run_emulated(test_kernels, "cortex-a53", isa="scalar")


@pytest.mark.timeout(900)
def test_attention_neon(arm_build):
    run_emulated(arm_build / "test_attention", "max")
