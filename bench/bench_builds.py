"""Side-by-side speed of two or more builds of vllm-cpp, each installed in
its own Python environment: e.g. the wheel built by the system's GCC and the
manylinux_2_28 wheel built by zig (clang, libc++), to show the portable
toolchain costs nothing.

Each build runs the measurements of bench_vs_llamacpp.py (prompt processing
of a 512-token prompt, batch-1 decode of 128 tokens; best of --repeats) in a
child process of its own interpreter; the builds alternate for --rounds
rounds and each keeps its best, so a burst of load on a shared machine hits
all of them alike. By default the engine runs one thread and the time is
the process's CPU time, which is the compute itself and hardly moves when
other programs load the machine (wall-clock time on a shared 2-core machine
varied 8x between runs of one build); --clock wall --threads N measures
wall-clock time with N threads instead.

Usage:  python bench/bench_builds.py gcc=.venv/bin/python zig=/tmp/zig-venv/bin/python

Prints a markdown table, with each build's ratio to the first one.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

from bench_vs_llamacpp import bench_vllm_cpp, make_prompt_ids


def measure(args):
    """One build's (prompt tokens/s, decode tokens/s), in this process."""
    from vllm_cpp import Engine

    with Engine.load(args.model, max_model_len=1024) as vocab:
        prompt_ids = make_prompt_ids(lambda text: vocab.tokenize(text, add_special_tokens=False), args.prompt_tokens)
        prompt_text = vocab.detokenize(prompt_ids)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    t_prefill, tg = bench_vllm_cpp(args.model, args.threads, prompt_text, "Once upon a time", args.repeats,
                                   args.decode_tokens, clock)
    return args.prompt_tokens / t_prefill, tg


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="*", help="NAME=PYTHON: an interpreter with that build of vllm-cpp installed")
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                        help="process CPU time (default; meaningful with one thread) or wall-clock time")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model is None:
        from vllm_cpp.models import smollm2_path

        args.model = smollm2_path()
    if args.only:
        print(json.dumps(measure(args)))
        return
    if len(args.builds) < 2 or not all("=" in b for b in args.builds):
        parser.error("name at least two builds as NAME=PYTHON")

    builds = dict(b.split("=", 1) for b in args.builds)
    best = {name: [0.0, 0.0] for name in builds}
    for _ in range(args.rounds):
        for name, python in builds.items():
            child = subprocess.run([python, os.path.abspath(__file__), "--only", "--model", args.model,
                                    "--threads", str(args.threads), "--clock", args.clock,
                                    "--prompt-tokens", str(args.prompt_tokens),
                                    "--decode-tokens", str(args.decode_tokens), "--repeats", str(args.repeats)],
                                   check=True, capture_output=True, text=True,
                                   cwd=os.path.dirname(os.path.abspath(__file__)))
            pp, tg = json.loads(child.stdout.strip().splitlines()[-1])
            best[name] = [max(best[name][0], pp), max(best[name][1], tg)]

    first = next(iter(builds))
    print(f"model: {os.path.basename(args.model)}; threads: {args.threads}; {args.clock} time; "
          f"cpu: {platform.processor() or platform.machine()}; best of {args.rounds} alternating rounds x {args.repeats} repeats")
    print("| build | prompt processing, %d tokens (tokens/s) | ratio | batch-1 decode, %d tokens (tokens/s) | ratio |"
          % (args.prompt_tokens, args.decode_tokens))
    print("|---|---|---|---|---|")
    for name in builds:
        pp, tg = best[name]
        print(f"| {name} | {pp:.1f} | {pp / best[first][0]:.2f} | {tg:.1f} | {tg / best[first][1]:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
