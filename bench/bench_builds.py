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

Two more workloads compare builds of different commits (a reshaping that
must not cost speed, as issue 38's before/after):

* ``--workload serving``: in process, ``--clients`` requests (distinct
  128-token prompts, 128 greedy tokens, ignore_eos) submitted at once
  through ``Engine.submit`` (``vllm_cpp.cli.bench.measure``, the
  ``vllm-cpp bench`` measurement), wall-clock output tokens/s with
  ``--threads`` threads (default: all cores), best of --repeats per round.
* ``--workload http``: each build's ``vllm-cpp serve``, started from its
  own interpreter, answers ``--clients`` streamed ``/v1/completions`` at
  once (bench_server.py's lean clients); output tokens/s from the usage
  chunks over the wall time. The servers run one at a time.

Both also report CPU time per output token (the whole process's: the
engine's threads and the delivery; for http the server's), the least of
the rounds: on a loaded machine it moves far less than tokens/s, and what
a change to the request road costs shows there first.

Usage:  python bench/bench_builds.py gcc=.venv/bin/python zig=/tmp/zig-venv/bin/python
        python bench/bench_builds.py --workload http before=/tmp/before/bin/python after=.venv/bin/python

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


def measure_serving(args):
    """One build's in-process serving throughput (output tokens/s) at each
    client count, best of args.repeats, in this process."""
    from vllm_cpp import Engine
    from vllm_cpp.cli.bench import measure as measure_batch, prompt_ids

    levels = client_levels(args.clients)
    best, cpu = {}, {}
    with Engine.load(args.model, max_model_len=args.prompt_tokens + args.decode_tokens + 16,
                     max_num_seqs=max(levels), prefix_caching=False) as engine:
        prompts = [prompt_ids(engine, i, args.prompt_tokens) for i in range(sum(levels) + 1)]
        measure_batch(engine, prompts[-1:], 4)  # warm-up
        for _ in range(args.repeats):
            offset = 0
            for c in levels:
                before = time.process_time()
                result = measure_batch(engine, prompts[offset:offset + c], args.decode_tokens)
                per_token = (time.process_time() - before) / (c * args.decode_tokens)
                offset += c
                best[c] = max(best.get(c, 0.0), result["output_tokens_per_s"])
                cpu[c] = min(cpu.get(c, float("inf")), per_token)
    return [[best[c], cpu[c]] for c in levels]


def measure_http(python, args):
    """One build's HTTP serving throughput (output tokens/s) at each client
    count: its own server, best of args.repeats."""
    import asyncio

    from bench_server import Server, cpu_seconds, http_level, start_vllm_cpp
    from vllm_cpp import Engine
    from vllm_cpp.cli.bench import prompt_ids

    levels = client_levels(args.clients)
    ctx = args.prompt_tokens + args.decode_tokens + 16
    with Engine.load(args.model, max_model_len=ctx) as vocab:
        texts = [vocab.detokenize(prompt_ids(vocab, i, args.prompt_tokens)) for i in range(sum(levels) + 1)]
    server = Server(start_vllm_cpp(args.model, args.threads, max(levels), ctx, python=python), "vllm-cpp serve",
                    {"ignore_eos": True})
    best, cpu = {}, {}
    try:
        asyncio.run(http_level(server.url, texts[-1:], 4, server.extra))  # warm-up
        for _ in range(args.repeats):
            offset = 0
            for c in levels:
                before = cpu_seconds(server.process.pid)
                result = asyncio.run(http_level(server.url, texts[offset:offset + c], args.decode_tokens, server.extra))
                per_token = (cpu_seconds(server.process.pid) - before) / (c * args.decode_tokens)
                offset += c
                best[c] = max(best.get(c, 0.0), result["tokens_per_s"])
                cpu[c] = min(cpu.get(c, float("inf")), per_token)
    finally:
        server.close()
    return [[best[c], cpu[c]] for c in levels]


def client_levels(text):
    return [int(c) for c in text.split(",")]


def child_command(python, args, workload):
    return [python, os.path.abspath(__file__), "--only", "--workload", workload, "--model", args.model,
            "--threads", str(args.threads), "--clock", args.clock, "--clients", args.clients,
            "--prompt-tokens", str(args.prompt_tokens), "--decode-tokens", str(args.decode_tokens),
            "--repeats", str(args.repeats)]


def print_throughput_table(args, builds, best, what):
    levels = client_levels(args.clients)
    first = next(iter(builds))
    print(f"model: {os.path.basename(args.model)}; threads: {args.threads}; wall-clock time; "
          f"cpu: {platform.processor() or platform.machine()}; {what}; {args.prompt_tokens} prompt tokens, "
          f"{args.decode_tokens} greedy output tokens per request; best of {args.rounds} alternating rounds "
          f"x {args.repeats} repeats")
    print("| build | " + " | ".join(f"{c} clients: tok/s | ratio | CPU ms/token | ratio" for c in levels) + " |")
    print("|---|" + "---|---|---|---|" * len(levels))
    for name in builds:
        cells = []
        for i in range(len(levels)):
            (rate, cpu), (rate0, cpu0) = best[name][i], best[first][i]
            cells.append(f"{rate:.1f} | {rate / rate0:.2f} | {cpu * 1e3:.2f} | {cpu / cpu0:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


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
    parser.add_argument("--workload", choices=["formats", "serving", "http"], default="formats",
                        help="formats: prompt processing and batch-1 decode (default); serving: concurrent "
                             "requests in process; http: concurrent streamed completions through each build's server")
    parser.add_argument("--clients", default="16,64", help="client counts of the serving and http workloads")
    parser.add_argument("--only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model is None:
        from vllm_cpp.models import smollm2_path

        args.model = smollm2_path()
    if args.workload != "formats" and "--prompt-tokens" not in sys.argv:
        args.prompt_tokens = 128
    if args.only:
        print(json.dumps(measure_serving(args) if args.workload == "serving" else measure(args)))
        return
    if len(args.builds) < 2 or not all("=" in b for b in args.builds):
        parser.error("name at least two builds as NAME=PYTHON")

    builds = dict(b.split("=", 1) for b in args.builds)
    if args.workload != "formats":
        if "--threads" not in sys.argv:
            args.threads = os.cpu_count()
        args.clock = "wall"
        # Per build and client count: [best tokens/s, least CPU seconds per output token].
        best = {name: [[0.0, float("inf")] for _ in client_levels(args.clients)] for name in builds}
        for _ in range(args.rounds):
            for name, python in builds.items():
                if args.workload == "http":
                    rates = measure_http(python, args)
                else:
                    child = subprocess.run(child_command(python, args, "serving"), check=True, capture_output=True,
                                           text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
                    rates = json.loads(child.stdout.strip().splitlines()[-1])
                best[name] = [[max(b[0], r[0]), min(b[1], r[1])] for b, r in zip(best[name], rates)]
        print_throughput_table(args, builds, best, "in process (Engine.submit)" if args.workload == "serving"
                               else "HTTP (vllm-cpp serve, streamed /v1/completions)")
        return
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
