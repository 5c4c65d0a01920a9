"""Load time of vllm-cpp against llama.cpp (llama-cpp-python) on the same GGUF files.

Each load runs in a child process of its own, the two engines alternating
round by round (a burst of load on a shared machine hits both alike), with
the file's pages warm in the page cache (one untimed read first). Reports
each engine's fastest, median and slowest load per file (and the least
CPU time a load took), and the ratio of the fastest loads (vllm-cpp / llama.cpp; below 1 is faster).

    python bench/bench_load.py FILE.gguf [FILE.gguf ...] [--rounds 5] [--threads 2]
        [--llama-python /path/to/python-with-llama_cpp] [--baseline-python /path/to/other-build's-python]

--baseline-python adds a third engine to the alternation: vllm-cpp as that
Python imports it (another build: before and after a change, same run).

vllm-cpp's prepared-weights cache (docs/features/prepared-weights-cache.md)
starts empty in a temporary folder for each file (VLLM_CPP_PREPARED_CACHE,
unless --cache-dir names one to keep), so vllm-cpp's first round writes the
entry and the later rounds map it: `first_s` is that first load, and the
fastest / median / slowest figures are of the later rounds (all rounds for
llama.cpp and a baseline).
Children run from a temporary folder, so each Python imports its own
installed vllm_cpp, not a checkout's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# The load's CPU seconds (user + system, all threads): on a busy machine
# wall time waits for cores, CPU time much less so.
CPU = "def cpu():\n    r = resource.getrusage(resource.RUSAGE_SELF)\n    return r.ru_utime + r.ru_stime\n"
CHILD = {
    "vllm-cpp": (
        "import sys, time, resource\n" + CPU +
        "from vllm_cpp import Engine, Toggle\n"
        "cpu0, start = cpu(), time.perf_counter()\n"
        "engine = Engine.load(sys.argv[1], max_model_len=1024, prefix_caching=Toggle.OFF)\n"
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, cpu() - cpu0)\n"
        "engine.close()\n"
    ),
    "llama.cpp": (
        "import os, sys, time, resource\n" + CPU +
        "from llama_cpp import Llama\n"
        "cpu0, start = cpu(), time.perf_counter()\n"
        "llm = Llama(model_path=sys.argv[1], n_ctx=1024, n_batch=512, n_threads=int(os.environ['VLLM_CPP_NUM_THREADS']),"
        " verbose=False)\n"
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, cpu() - cpu0)\n"
        "llm.close()\n"
    ),
}


def load_once(python, engine, path, threads, cache_dir):
    env = dict(os.environ, VLLM_CPP_NUM_THREADS=str(threads), VLLM_CPP_PREPARED_CACHE=cache_dir)
    with tempfile.TemporaryDirectory() as neutral:
        out = subprocess.run([python, "-c", CHILD[engine.split(" ")[0]], path], env=env, capture_output=True, text=True,
                             check=True, cwd=neutral)
    seconds, rss, cpu = out.stdout.split()[-3:]
    return float(seconds), float(rss), float(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rounds", type=int, default=5, help="at least 2 (vllm-cpp's first writes the cache)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--llama-python", default=sys.executable, help="a Python that imports llama_cpp")
    parser.add_argument("--baseline-python", help="a Python whose vllm_cpp is another build, timed alongside")
    parser.add_argument("--cache-dir", help="vllm-cpp's prepared-weights cache (default: a fresh temporary folder per file)")
    args = parser.parse_args()
    pythons = {"vllm-cpp": sys.executable, "llama.cpp": args.llama_python}
    if args.baseline_python:
        pythons["vllm-cpp (baseline)"] = args.baseline_python
    results = {}
    for path in args.files:
        with open(path, "rb") as f:  # the page cache warm for both engines
            while f.read(1 << 24):
                pass
        path = os.path.abspath(path)
        times = {engine: [] for engine in pythons}
        cpu = {engine: [] for engine in pythons}
        rss = {engine: 0.0 for engine in pythons}
        with tempfile.TemporaryDirectory() as fresh_cache:
            for _ in range(args.rounds):
                for engine in pythons:
                    seconds, peak, cpu_s = load_once(pythons[engine], engine, path, args.threads,
                                                     args.cache_dir or fresh_cache)
                    times[engine].append(seconds)
                    cpu[engine].append(cpu_s)
                    rss[engine] = max(rss[engine], peak)
        first = {"vllm-cpp": (times["vllm-cpp"].pop(0), cpu["vllm-cpp"].pop(0))}
        name = os.path.basename(path)
        results[name] = {engine: {"min_s": min(t), "median_s": statistics.median(t), "max_s": max(t),
                                  "cpu_s_min": min(cpu[engine]), "cpu_s_median": statistics.median(cpu[engine]),
                                  "all_s": t, "peak_rss_mib": rss[engine]} for engine, t in times.items()}
        results[name]["vllm-cpp"]["first_s"], results[name]["vllm-cpp"]["first_cpu_s"] = first["vllm-cpp"]
        results[name]["ratio_min"] = min(times["vllm-cpp"]) / min(times["llama.cpp"])
        row = "  ".join(f"{e} {min(t):.2f}/{statistics.median(t):.2f}/{max(t):.2f} s (CPU {min(cpu[e]):.2f} s)"
                        for e, t in times.items())
        print(f"{name}: {row}  ratio {results[name]['ratio_min']:.2f}  (vllm-cpp's first load, writing the cache: "
              f"{first['vllm-cpp'][0]:.2f} s, CPU {first['vllm-cpp'][1]:.2f} s)", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
