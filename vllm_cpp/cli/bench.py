"""``vllm-cpp bench MODEL``: output throughput and latency at a few client
counts, in process (the serving numbers to expect before deploying).

Each level submits that many requests at once (distinct prompts of
``--input-len`` tokens, ``--output-len`` greedy tokens, ignore_eos) and
reports output tokens/s over the wall time, time to first token and time
per output token. ``bench/bench_server.py`` uses ``measure`` for its
in-process baseline.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Dict, List

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
            "tpot_p50_s": statistics.median(tpot), "wall_s": wall}


def format_table(rows: List[Dict[str, float]]) -> str:
    lines = ["| clients | output tok/s | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append("| %d | %.1f | %.0f | %.0f | %.1f |" % (
            r["clients"], r["output_tokens_per_s"], r["ttft_p50_s"] * 1e3, r["ttft_p99_s"] * 1e3,
            r["tpot_p50_s"] * 1e3))
    return "\n".join(lines)


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
    engine.complete(prompt_ids(engine, -1, 8), SamplingParams.greedy(max_tokens=2))  # warm-up
    rows, offset = [], 0
    for clients in args.concurrency:
        prompts = [prompt_ids(engine, offset + i, args.input_len) for i in range(clients)]
        offset += clients
        rows.append(measure(engine, prompts, args.output_len))
    print("%s: %d prompt tokens, %d output tokens per request" % (args.model, args.input_len, args.output_len))
    print(format_table(rows))
    return 0
