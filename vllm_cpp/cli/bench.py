"""``vllm-cpp bench MODEL``: output throughput and latency at a few client
counts, in process (the serving numbers to expect before deploying).

Each level submits that many requests at once (distinct prompts of
``--input-len`` tokens, ``--output-len`` greedy tokens, ignore_eos) and
reports output tokens/s over the wall time, time to first token and time
per output token. Progress goes to stderr as each level starts and ends
(a level of many clients takes tens of seconds), each row of the table to
stdout as soon as it is measured; ``--json PATH`` also writes the results
with every request's time to first token (``bench/plot_results.py`` plots
them). ``bench/bench_server.py`` uses ``measure`` for its in-process
baseline.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import threading
import time
from typing import Any, Dict, List

from ..engine import Engine
from ..sampling_params import SamplingParams

_PARAGRAPH = ("The history of computing is a story of people who wanted machines to do arithmetic "
              "faster than any clerk could. Early mechanical calculators gave way to relays, then "
              "vacuum tubes, transistors and integrated circuits. ")


def prompt_ids(engine: Engine, index: int, n_tokens: int) -> List[int]:
    """A natural-text prompt of exactly n_tokens ids, distinct from its
    first tokens on (no two share a cached prefix)."""
    text = "Request %d. " % index
    ids = engine.tokenize(text)
    while len(ids) < n_tokens:
        text += _PARAGRAPH
        ids = engine.tokenize(text)
    return ids[:n_tokens]


def _percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(engine: Engine, prompts: List[List[int]], output_len: int) -> Dict[str, float]:
    """Submit every prompt at once; throughput and latency of the batch."""
    params = SamplingParams.greedy(max_tokens=output_len, ignore_eos=True)
    n = len(prompts)
    first: List[float] = [0.0] * n
    last: List[float] = [0.0] * n
    left = [n]
    lock = threading.Lock()
    done = threading.Event()

    def callback(i: int):
        def on_event(event) -> bool:
            now = time.perf_counter()
            if event.delta and not first[i]:
                first[i] = now
            if event.finished:
                last[i] = now
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        done.set()
            return True
        return on_event

    start = time.perf_counter()
    requests = [engine.submit(p, params, callback(i)) for i, p in enumerate(prompts)]
    done.wait()
    wall = time.perf_counter() - start
    for request in requests:
        request.wait()
        request.close()
    ttft = [f - start for f in first]
    tpot = [(l - f) / max(1, output_len - 1) for f, l in zip(first, last)]
    return {"clients": n, "output_tokens_per_s": n * output_len / wall,
            "ttft_p50_s": statistics.median(ttft), "ttft_p99_s": _percentile(ttft, 0.99),
            "tpot_p50_s": statistics.median(tpot), "wall_s": wall, "ttft_s": sorted(ttft)}


TABLE_HEADER = ["| clients | output tok/s | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) |",
                "| ---: | ---: | ---: | ---: | ---: |"]


def format_row(r: Dict[str, Any]) -> str:
    return "| %d | %.1f | %.0f | %.0f | %.1f |" % (
        r["clients"], r["output_tokens_per_s"], r["ttft_p50_s"] * 1e3, r["ttft_p99_s"] * 1e3, r["tpot_p50_s"] * 1e3)


def format_table(rows: List[Dict[str, Any]]) -> str:
    return "\n".join(TABLE_HEADER + [format_row(r) for r in rows])


def _progress(text: str) -> None:
    print("vllm-cpp bench: " + text, file=sys.stderr, flush=True)


def _machine() -> str:
    """The CPU's model name and count, and the OS (no host names, no paths)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s, %d CPUs, %s %s" % (cpu, os.cpu_count() or 0, platform.system(), platform.release())


def results_document(args: argparse.Namespace, rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """What --json writes: the rows with the machine, date, versions and the
    command that reproduces them (the shape of bench/results/*.json)."""
    from .. import __version__

    return {"comparison": "vllm-cpp bench (in process)", "engine": "vllm-cpp",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": _machine(),
            "versions": {"vllm-cpp": __version__, "python": platform.python_version()},
            "command": "vllm-cpp " + " ".join(sys.argv[1:]) if sys.argv[1:] else "vllm-cpp bench",
            "model": getattr(args, "short_name", None) or os.path.basename(args.model),
            "input_len": args.input_len, "output_len": args.output_len, "rows": rows}


def client_counts(text: str) -> List[int]:
    """The --concurrency value: positive integers separated by commas."""
    try:
        counts = [int(c) for c in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas, got %r" % text)
    return counts


def run_bench(engine: Engine, args: argparse.Namespace) -> int:
    _progress("warming up")
    engine.complete(prompt_ids(engine, -1, 8), SamplingParams.greedy(max_tokens=2))  # warm-up
    print("%s: %d prompt tokens, %d output tokens per request" % (args.model, args.input_len, args.output_len))
    print("\n".join(TABLE_HEADER), flush=True)
    rows, offset = [], 0
    for level, clients in enumerate(args.concurrency, 1):
        _progress("level %d of %d: %d client%s, %d output tokens each..."
                  % (level, len(args.concurrency), clients, "" if clients == 1 else "s", args.output_len))
        prompts = [prompt_ids(engine, offset + i, args.input_len) for i in range(clients)]
        offset += clients
        row = measure(engine, prompts, args.output_len)
        rows.append(row)
        print(format_row(row), flush=True)
        _progress("level %d done in %.1f s" % (level, row["wall_s"]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results_document(args, rows), f, indent=1)
            f.write("\n")
        _progress("results written to %s" % args.json)
    return 0
