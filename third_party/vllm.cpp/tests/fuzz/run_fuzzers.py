#!/usr/bin/env python3
"""Builds the engine's libFuzzer targets (tests/fuzz/fuzz_*.cpp, CMake option
VLLM_BUILD_FUZZERS: clang, ASan+UBSan) and runs them.

    run_fuzzers.py --include-dir DIR [--seconds N] [--target NAME ...] [--build-dir DIR] [--replay-only]

DIR is the directory holding vllm.h (vllm_cpp/include in the vllm-cpp
repository; the VLLM_INCLUDE_DIR environment variable gives it too).

Each target first replays its committed inputs (corpus/NAME/ seeds and
regressions/NAME/, every crash or hang found so far), then fuzzes for N
seconds from a working copy of its seeds (build-dir/corpus/NAME, kept between
runs), with dicts/NAME.dict when there is one. It prints executions and
coverage per target; a crash, sanitizer report or hang (an input running
longer than --input-timeout seconds) is saved as build-dir/crashes/NAME-*
and fails the run (exit status 1). Add each to regressions/NAME/ with its
fix.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ENGINE = HERE.parent.parent


def tool(name):
    """A build tool from PATH or from the running interpreter's environment."""
    found = shutil.which(name)
    if found:
        return found
    candidate = pathlib.Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else None


def targets():
    return sorted(p.stem for p in HERE.glob("fuzz_*.cpp"))


def build(build_dir, names, include_dir):
    """Configures with clang and builds the named targets; returns their directory."""
    cmake, clang, clangxx = tool("cmake"), shutil.which("clang"), shutil.which("clang++")
    if cmake is None or clang is None or clangxx is None:
        raise RuntimeError("building the fuzzers needs cmake, clang and clang++ (Debian: clang libclang-rt-dev)")
    configure = [cmake, "-S", str(ENGINE), "-B", str(build_dir), f"-DCMAKE_C_COMPILER={clang}",
                 f"-DCMAKE_CXX_COMPILER={clangxx}", "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_CXX_FLAGS_DEBUG=",
                 "-DVLLM_BUILD_TESTS=OFF", "-DVLLM_BUILD_FUZZERS=ON",
                 f"-DVLLM_INCLUDE_DIR={pathlib.Path(include_dir).resolve()}"]
    ninja = tool("ninja")
    if ninja and not (build_dir / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    subprocess.run([cmake, "--build", str(build_dir), "-j", jobs, "--target", *names], check=True,
                   stdout=subprocess.DEVNULL)
    return build_dir / "tests" / "fuzz"


def committed_inputs(name):
    files = []
    for folder in (HERE / "corpus" / name, HERE / "regressions" / name):
        if folder.is_dir():
            files += sorted(p for p in folder.iterdir() if p.is_file())
    return files


def flags(name, build_dir, input_timeout):
    out = [f"-timeout={input_timeout}", "-rss_limit_mb=2048", "-malloc_limit_mb=1024", "-print_final_stats=1"]
    crashes = build_dir / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    out.append(f"-artifact_prefix={crashes}/{name}-")
    dictionary = HERE / "dicts" / f"{name}.dict"
    if dictionary.is_file():
        out.append(f"-dict={dictionary}")
    return out


def fresh_rss(command):
    """`command` run from a shell's forked child. Linux carries a process's
    peak RSS (what libFuzzer's -rss_limit_mb checks) across fork and exec,
    so a fuzzer started straight from a large parent (a pytest process late
    in the suite) would start "over" the limit; a grandchild forked from a
    small shell starts from its own."""
    return ["/bin/sh", "-c", '"$0" "$@"; exit $?', *command]


def replay(binary, name, build_dir, input_timeout):
    """Runs every committed input once; returns (ok, output)."""
    inputs = committed_inputs(name)
    if not inputs:
        return True, ""
    result = subprocess.run(fresh_rss([str(binary), *flags(name, build_dir, input_timeout), *map(str, inputs)]),
                            capture_output=True, text=True, errors="replace")
    return result.returncode == 0, result.stdout + result.stderr


def fuzz(binary, name, build_dir, seconds, input_timeout):
    """Fuzzes for `seconds`; returns (ok, executions, coverage, features, output)."""
    corpus = build_dir / "corpus" / name
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = HERE / "corpus" / name
    command = [str(binary), *flags(name, build_dir, input_timeout), f"-max_total_time={seconds}", str(corpus)]
    if seeds.is_dir():
        command.append(str(seeds))  # read, never written: new inputs go to the first directory
    result = subprocess.run(fresh_rss(command), capture_output=True, text=True, errors="replace",
                            timeout=seconds + 10 * input_timeout + 120)
    output = result.stdout + result.stderr
    executions = re.findall(r"stat::number_of_executed_units: (\d+)", output)
    stats = re.findall(r"cov: (\d+) ft: (\d+)", output)
    coverage, features = stats[-1] if stats else ("?", "?")
    return result.returncode == 0, executions[-1] if executions else "?", coverage, features, output


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--include-dir", default=os.environ.get("VLLM_INCLUDE_DIR"),
                        help="the directory holding vllm.h (default: $VLLM_INCLUDE_DIR)")
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target (default 60)")
    parser.add_argument("--target", action="append", choices=targets(), help="a target to run (default: all)")
    parser.add_argument("--build-dir", type=pathlib.Path, default=ENGINE / "build-fuzz")
    parser.add_argument("--input-timeout", type=int, default=10, help="seconds one input may run (a hang)")
    parser.add_argument("--replay-only", action="store_true", help="replay the committed inputs only")
    args = parser.parse_args()
    names = args.target or targets()
    build_dir = args.build_dir.resolve()
    if not args.include_dir:
        parser.error("--include-dir (the directory holding vllm.h, vllm_cpp/include in the repository) is required")
    bin_dir = build(build_dir, names, args.include_dir)
    failed = []
    for name in names:
        ok, output = replay(bin_dir / name, name, build_dir, args.input_timeout)
        line = f"{name}: replayed {len(committed_inputs(name))} committed inputs"
        if ok and not args.replay_only:
            ok, executions, coverage, features, output = fuzz(bin_dir / name, name, build_dir, args.seconds,
                                                              args.input_timeout)
            line += f"; {args.seconds} s: {executions} executions, cov {coverage}, ft {features}"
        print(line + ("" if ok else " FAILED"), flush=True)
        if not ok:
            failed.append(name)
            print(output[-6000:], file=sys.stderr)
    if failed:
        print(f"failed: {', '.join(failed)} (inputs in {build_dir / 'crashes'})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
