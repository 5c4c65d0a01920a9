"""manylinux_2_28 wheels made on this machine with zig (zig_toolchain.py):
x86_64 natively and aarch64 cross-built, repaired with auditwheel, and run.

Opt-in, as a separate command (each target compiles the whole engine once
more: about 10 minutes on 2 busy cores without ccache, a few seconds more
per target with it):

    pip install ziglang==0.17.0        # ~100 MB download, 410 MB installed
    VLLM_CPP_ZIG_WHEELS=1 python -m pytest -q tests/packaging/test_zig_wheels.py

x86_64: `auditwheel show` names manylinux_2_28_x86_64, `auditwheel repair
--plat manylinux_2_28_x86_64` accepts it without grafting anything, and the
wheel generates in a fresh virtual environment without a compiler.
aarch64 (the same checks, auditwheel reading the foreign ELF files), then,
where qemu-aarch64 and the aarch64 glibc (Debian: qemu-user,
libc6-arm64-cross, which g++-aarch64-linux-gnu brings) are installed: the
C ABI test program, cross-compiled by zig against the wheel's libvllm, runs
its whole suite with SmolLM2 under qemu; and where an aarch64 CPython is
unpacked (tests/support/aarch64_python.py), the wheel is installed for it and
generates under qemu too.
"""

import os
import pathlib
import re
import shutil
import sys
import tempfile
import zipfile

import pytest

import vllm_cpp
from aarch64_python import DEFAULT_DIR as AARCH64_PYTHON_DIR
from aarch64_python import Aarch64Python
from vllm_cpp import SamplingParams
from wheel_tools import (PROMPT, RUN_IN_VENV, auditwheel, check_abi3_self_contained, completion_result,
                         elf_needed_and_stripped, make_venv, run, run_in_venv, shown_policy, wheel_binaries)

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "zig-wheels-test"
GLIBC = "2.28"
#: The aarch64 glibc qemu-aarch64 loads programs with (Debian's libc6-arm64-cross).
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
#: What libvllm and the extension may link dynamically: glibc's libraries
#: only (zig links LLVM's libc++ statically; libvllm's version script keeps
#: its symbols private).
GLIBC_LIBRARIES = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                   "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libvllm.so"}


def find_zig():
    sys.path.insert(0, str(ROOT))
    try:
        from zig_toolchain import find_zig as find
    finally:
        sys.path.remove(str(ROOT))
    return find()


ZIG = find_zig() if (ROOT / "zig_toolchain.py").is_file() else None

pytestmark = [
    pytest.mark.timeout(3600),  # a target's first build counts against its first test
    pytest.mark.skipif(os.environ.get("VLLM_CPP_ZIG_WHEELS") != "1",
                       reason="builds two more engines: run on request, VLLM_CPP_ZIG_WHEELS=1 (see the module docstring)"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux wheels are built on Linux"),
    pytest.mark.skipif(not (ROOT / "setup.py").is_file(), reason="needs the source checkout (setup.py) to build from"),
    pytest.mark.skipif(ZIG is None, reason="no zig: `pip install ziglang` (or name it in VLLM_CPP_ZIG)"),
]

PLATFORM = "manylinux_%s_%%s" % GLIBC.replace(".", "_")


def glibc_minor_of(policy, arch):
    match = re.fullmatch(r"manylinux_2_(\d+)_" + arch, policy) or re.fullmatch(r"manylinux2014_" + arch, policy)
    assert match, policy
    return int(match.group(1)) if match.groups() else 17


def build_zig_wheel(arch):
    """The repaired manylinux_2_28 wheel for `arch`, built from the checkout
    (its CMake tree, build/libvllm-ninja-zig-TARGET, is kept: later runs
    rebuild what changed)."""
    out = WORK / arch
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, VLLM_CPP_ZIG_TARGET="%s-linux-gnu.%s" % (arch, GLIBC), VLLM_CPP_ZIG=ZIG)
    if shutil.which("ccache") and not env.get("CMAKE_CXX_COMPILER_LAUNCHER"):
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", out / "built", ROOT],
        env=env)
    (built,) = (out / "built").glob("*.whl")
    assert built.name.endswith("-linux_%s.whl" % arch), built.name
    if arch == os.uname().machine:
        # --plat: anything the 2.28 policy does not allow is an error, not a
        # retag; --only-plat: that tag alone (the wheel also meets an older
        # policy, which auditwheel would add to its name).
        auditwheel("repair", "--plat", PLATFORM % arch, "--only-plat", "-w", out / "repaired", built)
    else:
        # auditwheel's --plat offers only this machine's architecture: repair
        # at the policy auditwheel finds, check it is 2.28 or older, and give
        # the wheel the release tag (`wheel tags`).
        auditwheel("repair", "-w", out / "auto", built)
        (auto,) = (out / "auto").glob("*.whl")
        assert glibc_minor_of(shown_policy(auto), arch) <= int(GLIBC.split(".")[1])
        (out / "repaired").mkdir()
        retagged = run([sys.executable, "-m", "wheel", "tags", "--platform-tag", PLATFORM % arch, auto]).split()[-1]
        shutil.move(str(out / "auto" / retagged), str(out / "repaired" / retagged))
    (wheel,) = (out / "repaired").glob("*.whl")
    return wheel


# Module-scoped fixtures: a build that fails fails every test that needs it
# once (pytest keeps the error), instead of being tried again per test.
@pytest.fixture(scope="module")
def x86_64_wheel():
    return build_zig_wheel("x86_64")


@pytest.fixture(scope="module")
def aarch64_wheel():
    return build_zig_wheel("aarch64")


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_wheel_is_manylinux_2_28(arch, request):
    wheel = request.getfixturevalue(arch + "_wheel")
    platform_tag, sizes = check_abi3_self_contained(wheel, vllm_cpp.__version__)
    assert platform_tag == PLATFORM % arch
    # auditwheel's own reading of the symbol versions: 2.28 or older (zig's
    # glibc 2.28 stubs give expf@GLIBC_2.27 as the newest on x86_64).
    shown = shown_policy(wheel)
    assert glibc_minor_of(shown, arch) <= int(GLIBC.split(".")[1]), shown
    for member, data in wheel_binaries(wheel).items():
        needed, _stripped = elf_needed_and_stripped(data)
        assert set(needed) <= GLIBC_LIBRARIES, "%s links %s" % (member, needed)
    print("\n%s; auditwheel show: %s" % (sizes, shown))


def test_x86_64_wheel_generates_in_a_fresh_venv(engine, x86_64_wheel):
    if os.uname().machine != "x86_64":
        pytest.skip("runs the x86_64 wheel natively")
    python, env = make_venv(sys.executable, WORK / "venv", x86_64_wheel)
    result = run_in_venv(python, env, vllm_cpp.models.smollm2_path(), WORK)
    assert pathlib.Path(result["file"]).is_relative_to(WORK / "venv")
    assert result["version"] == result["library"] == vllm_cpp.__version__
    expected = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=8)).text
    assert result["complete"] == result["stream"] == expected


def need_qemu():
    if not shutil.which("qemu-aarch64"):
        pytest.skip("needs qemu-aarch64 (Debian: qemu-user)")
    if not os.path.isfile(os.path.join(AARCH64_SYSROOT, "lib", "ld-linux-aarch64.so.1")):
        pytest.skip("needs the aarch64 glibc in %s (Debian: libc6-arm64-cross)" % AARCH64_SYSROOT)


def unpacked(wheel, where):
    shutil.rmtree(where, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(where)
    return where / "vllm_cpp"


@pytest.mark.timeout(1800)
def test_aarch64_c_abi_program_runs_under_qemu(smollm2_path, aarch64_wheel):
    need_qemu()
    package = unpacked(aarch64_wheel, WORK / "aarch64-unpacked")
    program = WORK / "test_c_abi-aarch64"
    run([ZIG, "cc", "-target", "aarch64-linux-gnu." + GLIBC, "-O2",
         ROOT / "third_party" / "vllm.cpp" / "tests" / "test_c_abi.c", "-I", package / "include",
         "-L", package, "-lvllm", "-lpthread", "-Wl,-rpath," + str(package), "-o", program])
    out = run(["qemu-aarch64", "-L", AARCH64_SYSROOT, program, smollm2_path], timeout=1500)
    summary = out.strip().splitlines()[-1]
    assert summary.endswith(" 0 failed"), summary
    print("\n" + summary + " (aarch64 test_c_abi against the wheel's libvllm, under qemu)")


@pytest.mark.timeout(1800)
def test_aarch64_wheel_generates_under_qemu_python(engine, smollm2_path, aarch64_wheel):
    need_qemu()
    python = Aarch64Python(os.environ.get("VLLM_CPP_AARCH64_PYTHON_DIR", AARCH64_PYTHON_DIR), AARCH64_SYSROOT)
    if python.executable is None:
        pytest.skip("no aarch64 CPython unpacked in %s (python tests/support/aarch64_python.py makes it)" % python.directory)
    wheel = aarch64_wheel
    site = WORK / "aarch64-site"
    shutil.rmtree(site, ignore_errors=True)
    # pip of this (x86_64) interpreter installs for the other one: the
    # wheel and its dependency cffi, as aarch64 wheels for its version.
    # --pre: an index may hold cffi's aarch64 wheels for a pre-release only
    # (the development machine's offline mirror has 2.0.0b1 and no final
    # one); cffi is only the runtime this checks our wheel against.
    major, minor = python.version()
    run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", site,
         "--platform", "manylinux_%s_aarch64" % GLIBC.replace(".", "_"), "--python-version", "%d.%d" % (major, minor),
         "--implementation", "cp", "--only-binary=:all:", "--pre", wheel])
    with tempfile.TemporaryDirectory() as cwd:
        out = run(python.command("-c", RUN_IN_VENV, smollm2_path, PROMPT, pythonpath=[site]), cwd=cwd, timeout=1500)
    result = completion_result(out)
    assert result["machine"] == "aarch64" and tuple(result["python"]) == (major, minor)
    assert result["version"] == result["metadata"] == result["library"] == vllm_cpp.__version__
    expected = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=8)).text
    assert result["complete"] == result["stream"] == expected
    print("\naarch64 CPython %d.%d under qemu: %r" % (major, minor, result["complete"]))
