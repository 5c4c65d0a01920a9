"""vllm-cpp against llama.cpp (llama-cpp-python) at real model sizes.

Runs both engines on the same GGUF files (by default the random-weight
Llama-3.2-1B-shaped files that make_sized_ggufs.py writes, in Q4_K_M and
Q8_0), each engine in a fresh child process, the engines alternating for
--rounds rounds so a burst of load on a shared machine hits both alike;
each engine keeps its best round. Per file, one markdown table:

* load time (s): the engine's load call (Engine.load / Llama()), page
  cache warm after the first round; the least of the rounds (vllm-cpp's
  later rounds map the prepared-weights cache its first round wrote:
  docs/features/prepared-weights-cache.md; VLLM_CPP_PREPARED_CACHE=off
  times a load without it);
* peak resident memory (MiB): the child's ru_maxrss, mmapped weights that
  were touched included; the most of the rounds;
* prefill of a --prompt-tokens prompt (tokens/s) and batch-1 decode of
  --decode-tokens tokens (tokens/s): bench_vs_llamacpp.py's measurements;
* batch-1 decode as a share of the memory-bandwidth bound: read bandwidth
  (bench_decode_bound.py's loop, before each round, the best kept) / weight bytes one
  decode step reads (bench_decode_bound.py's count from the tensor table);
* --clients concurrent requests (--client-prompt-tokens prompt and
  --client-output-tokens greedy tokens each, ignore_eos): output tokens/s.
  vllm-cpp gets them all at once through Engine.submit (`vllm-cpp bench`'s
  measurement) and batches them; llama.cpp serves them one after another,
  as bench_serving.py does.

The weights are random, so prompts are fixed token ids (a seeded draw from
the vocabulary's first 40,000 ids), not text.

Usage:  python bench/bench_sizes.py [--models A.gguf,B.gguf] [--rounds 2] [--json OUT.json]
        (default models: make_sized_ggufs.py's llama-3.2-1b q4_k_m and q8_0, made if missing)
Needs:  pip install gguf numpy cffi llama-cpp-python; a C compiler (the bandwidth loop)
Prints a markdown table per file, ratios vllm-cpp / llama.cpp; docs/benchmarks.md records a run.
"""

import argparse
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys
import time

from bench_decode_bound import read_bandwidth, weight_bytes_per_token
from bench_vs_llamacpp import bench_llamacpp, bench_vllm_cpp
from make_sized_ggufs import default_dir, make

ENGINES = ("llamacpp", "vllm_cpp")
PROMPT_SEED = 7
PROMPT_ID_RANGE = (300, 40000)  # ordinary tokens of the (padded SmolLM2) vocabulary: no specials


def fixed_ids(index, n_tokens):
    """Prompt `index` (0 is the long prompt; 1.. the clients'; -1 the short one): n_tokens fixed ids."""
    import numpy as np

    rng = np.random.default_rng([PROMPT_SEED, index + 1])
    return [int(t) for t in rng.integers(*PROMPT_ID_RANGE, size=n_tokens)]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def clients_llamacpp(args, prompts):
    """llama.cpp serves the requests one after another: (load seconds, output tokens/s)."""
    import numpy as np
    from llama_cpp import Llama

    start = time.perf_counter()
    llm = Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=args.threads,
                n_threads_batch=args.threads, verbose=False)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    for ids in prompts:
        llm.reset()
        llm.eval(ids)
        for _ in range(args.client_output_tokens - 1):
            llm.eval([int(np.argmax(llm.scores[llm.n_tokens - 1]))])
    rate = len(prompts) * args.client_output_tokens / (time.perf_counter() - start)
    llm.close()
    return load_s, rate


def clients_vllm_cpp(args, prompts):
    """vllm-cpp gets every request at once: (load seconds, output tokens/s)."""
    from vllm_cpp import Engine, Toggle
    from vllm_cpp.cli.bench import measure

    start = time.perf_counter()
    engine = Engine.load(args.model, max_model_len=1024, max_num_seqs=len(prompts), prefix_caching=Toggle.OFF)
    load_s = time.perf_counter() - start
    with engine:
        measure(engine, prompts[:1], 4)  # warm-up
        rate = measure(engine, prompts, args.client_output_tokens)["output_tokens_per_s"]
    return load_s, rate


def measure_engine(engine, args):
    """One engine's figures on args.model, in this (child) process."""
    os.environ["VLLM_CPP_NUM_THREADS"] = str(args.threads)
    prompt, short = fixed_ids(0, args.prompt_tokens), fixed_ids(-1, 4)
    clients = [fixed_ids(i + 1, args.client_prompt_tokens) for i in range(args.clients)]
    if engine == "llamacpp":
        load_s, serving = clients_llamacpp(args, clients)
        pp, tg = bench_llamacpp(args.model, args.threads, prompt, short, args.repeats, args.decode_tokens)
    else:
        load_s, serving = clients_vllm_cpp(args, clients)
        t_prefill, tg = bench_vllm_cpp(args.model, args.threads, prompt, short, args.repeats, args.decode_tokens)
        pp = len(prompt) / t_prefill
    return {"load_s": load_s, "peak_rss_mib": peak_rss_mib(), "prefill_tok_s": pp, "decode_tok_s": tg,
            "clients_tok_s": serving}


def child_args(args, model):
    return ["--model", str(model), "--threads", str(args.threads), "--repeats", str(args.repeats),
            "--prompt-tokens", str(args.prompt_tokens), "--decode-tokens", str(args.decode_tokens),
            "--clients", str(args.clients), "--client-prompt-tokens", str(args.client_prompt_tokens),
            "--client-output-tokens", str(args.client_output_tokens)]


def run_file(args, model):
    """Alternating rounds on one file, the read bandwidth measured before each (the best kept, as a
    burst of load on a shared machine slows the read loop as it slows the engines); returns its row."""
    best, bandwidth = {}, 0.0
    for round_ in range(args.rounds):
        bandwidth = max(bandwidth, read_bandwidth(args.threads, 3))
        order = ENGINES if round_ % 2 == 0 else ENGINES[::-1]
        for engine in order:
            child = subprocess.run([sys.executable, os.path.abspath(__file__), "--only", engine,
                                    *child_args(args, model)], capture_output=True, text=True,
                                   cwd=os.path.dirname(os.path.abspath(__file__)))
            if child.returncode != 0:
                raise SystemExit(f"bench_sizes: {engine} failed on {model}:\n{child.stderr[-3000:]}")
            got = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"  round {round_ + 1} {engine}: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()),
                  file=sys.stderr)
            if engine not in best:
                best[engine] = got
                continue
            mine = best[engine]
            mine["load_s"] = min(mine["load_s"], got["load_s"])
            for key in ("peak_rss_mib", "prefill_tok_s", "decode_tok_s", "clients_tok_s"):
                mine[key] = max(mine[key], got[key])
    per_token = weight_bytes_per_token(str(model))
    bound = bandwidth / per_token
    for figures in best.values():
        figures["decode_share_of_bound"] = figures["decode_tok_s"] / bound
    return {"model": os.path.basename(model), "file_bytes": os.path.getsize(model),
            "weight_bytes_per_token": per_token, "read_bandwidth_bytes_per_s": bandwidth,
            "decode_bound_tok_s": bound,
            "vllm-cpp": best["vllm_cpp"], "llama.cpp": best["llamacpp"]}


METRICS = {  # key: (row label, cell format); for load time and memory lower is better
    "prefill_tok_s": ("prefill, {prompt_tokens}-token prompt (tokens/s)", "{:.1f}"),
    "decode_tok_s": ("batch-1 decode, {decode_tokens} tokens (tokens/s)", "{:.1f}"),
    "decode_share_of_bound": ("batch-1 decode, share of the bound ({bound:.1f} tokens/s)", "{:.0%}"),
    "clients_tok_s": ("{clients} concurrent requests, output tokens/s", "{:.1f}"),
    "load_s": ("load time (s)", "{:.2f}"),
    "peak_rss_mib": ("peak resident memory (MiB)", "{:.0f}"),
}


def print_table(args, row):
    print(f"\n{row['model']} ({row['file_bytes'] / 1e9:.2f} GB; {row['weight_bytes_per_token'] / 1e6:.0f} MB of "
          f"weights read per token; read bandwidth {row['read_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s); "
          f"threads: {args.threads}; best of {args.rounds} alternating rounds x {args.repeats} repeats")
    print("| metric | vllm-cpp | llama.cpp | ratio |")
    print("|---|---|---|---|")
    names = dict(prompt_tokens=args.prompt_tokens, decode_tokens=args.decode_tokens, clients=args.clients,
                 bound=row["decode_bound_tok_s"])
    for key, (label, fmt) in METRICS.items():
        ours, theirs = row["vllm-cpp"][key], row["llama.cpp"][key]
        print(f"| {label.format(**names)} | {fmt.format(ours)} | {fmt.format(theirs)} | {ours / theirs:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=None,
                        help="comma-separated GGUF files (default: make_sized_ggufs.py's llama-3.2-1b q4_k_m,q8_0)")
    parser.add_argument("--dir", type=pathlib.Path, default=default_dir(), help="make_sized_ggufs.py's cache folder")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--client-prompt-tokens", type=int, default=64)
    parser.add_argument("--client-output-tokens", type=int, default=64)
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the rows here")
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure_engine(args.only, args)))
        return

    if args.models:
        models = args.models.split(",")
    else:
        paths = make("llama-3.2-1b", ["q4_k_m", "q8_0"], args.dir, args.threads,
                     log=lambda line: print(line, file=sys.stderr))
        models = [paths["q4_k_m"], paths["q8_0"]]
    rows = []
    for model in models:
        rows.append(run_file(args, model))
        print_table(args, rows[-1])
        if args.json:  # after each file, so a run stopped midway keeps the files it finished
            write_json(args, rows)


def write_json(args, rows):
    import llama_cpp

    import vllm_cpp

    doc = {"comparison": "vllm-cpp vs llama.cpp at real sizes (random-weight GGUFs, bench_sizes.py)",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                      f"Linux {platform.release()}",
           "versions": {"vllm-cpp": vllm_cpp.__version__, "llama-cpp-python": llama_cpp.__version__,
                        "python": platform.python_version()},
           "command": "cd bench && python " + " ".join([os.path.basename(__file__), *sys.argv[1:]]),
           "threads": args.threads, "rounds": args.rounds,
           "repeats": args.repeats, "rows": rows}
    args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
