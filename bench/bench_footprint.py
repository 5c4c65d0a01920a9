"""Resident memory and start time: vllm-cpp vs llama.cpp on the same GGUF and context.

Each engine runs in a fresh child process per round (the two alternating):
it imports its package, loads the model with a --ctx-token context for
one sequence (llama.cpp's n_ctx; our max_model_len with max_num_seqs=1),
then generates --gen greedy tokens after a prompt of about --prompt tokens.
Reported per engine (the best round for times, the highest for memory):

* load (s): the engine's load call, from file to ready (the file is in
  the page cache after the first round, so this is a warm start), and the
  CPU time it took, all threads (what a busy machine does not inflate);
* RSS after load and peak RSS (MiB): the process's resident set after the
  load call and its high-water mark (VmHWM) after the generation, the
  Python interpreter and the package import included (import alone: the
  "import" column).

Usage:  python bench/bench_footprint.py [--model PATH] [--gemma3] [--ctx N] [--rounds N] [--threads N]
                                       [--peer-python PATH]

Defaults to the bundled SmolLM2-135M Q4_1; --gemma3 adds the bundled Gemma 3
270M Q4_K_M. Needs llama-cpp-python, in this Python or the one --peer-python
names. BENCHMARKS.md records runs.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

PARAGRAPH = ("The history of computing is a story of people who wanted machines to do arithmetic faster than any "
             "clerk could. Early mechanical calculators gave way to relays, then vacuum tubes and transistors. ")


def memory_mib(field):
    """A VmRSS/VmHWM line of /proc/self/status, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def measure(engine, args):
    """One engine's numbers in this (fresh) process."""
    prompt = PARAGRAPH * max(1, args.prompt // 30)
    if engine == "llamacpp":
        from llama_cpp import Llama

        imported = memory_mib("VmRSS")
        start, cpu = time.perf_counter(), time.process_time()
        llm = Llama(model_path=args.model, n_ctx=args.ctx, n_batch=512, n_threads=args.threads,
                    n_threads_batch=args.threads, verbose=False)
        load, load_cpu = time.perf_counter() - start, time.process_time() - cpu
        loaded = memory_mib("VmRSS")
        llm.create_completion(prompt, max_tokens=args.gen, temperature=0.0)
    else:
        from vllm_cpp import Engine, SamplingParams

        imported = memory_mib("VmRSS")
        start, cpu = time.perf_counter(), time.process_time()
        llm = Engine.load(args.model, max_model_len=args.ctx, max_num_seqs=1, num_threads=args.threads)
        load, load_cpu = time.perf_counter() - start, time.process_time() - cpu
        loaded = memory_mib("VmRSS")
        llm.complete(prompt, SamplingParams.greedy(max_tokens=args.gen, ignore_eos=True))
    return {"import": imported, "load": load, "load_cpu": load_cpu, "loaded": loaded, "peak": memory_mib("VmHWM")}


def run_model(model, args):
    results = {"vllm_cpp": [], "llamacpp": []}
    for _ in range(args.rounds):
        for engine in results:
            python = args.peer_python if engine == "llamacpp" and args.peer_python else sys.executable
            child = subprocess.run([python, __file__, "--only", engine, "--model", model, "--ctx",
                                    str(args.ctx), "--prompt", str(args.prompt), "--gen", str(args.gen),
                                    "--threads", str(args.threads)], check=True, capture_output=True, text=True)
            results[engine].append(json.loads(child.stdout.strip().splitlines()[-1]))
    print(f"\nmodel: {os.path.basename(model)}; context: {args.ctx} tokens, one sequence; "
          f"prompt ~{args.prompt} tokens + {args.gen} generated")
    print("| engine | load (s) | load CPU (s) | import RSS (MiB) | RSS after load (MiB) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|")
    best = {}
    for engine, rounds in results.items():
        best[engine] = {**{k: min(r[k] for r in rounds) for k in ("load", "load_cpu")},
                        **{k: max(r[k] for r in rounds) for k in ("import", "loaded", "peak")}}
        b = best[engine]
        print(f"| {engine} | {b['load']:.3f} | {b['load_cpu']:.3f} | {b['import']:.0f} | {b['loaded']:.0f} | {b['peak']:.0f} |")
    ours, peer = best["vllm_cpp"], best["llamacpp"]
    print(f"| ratio (vllm-cpp / llama.cpp) | {ours['load'] / peer['load']:.2f} | "
          f"{ours['load_cpu'] / peer['load_cpu']:.2f} | | "
          f"{ours['loaded'] / peer['loaded']:.2f} | {ours['peak'] / peer['peak']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--gemma3", action="store_true", help="also the bundled Gemma 3 270M Q4_K_M")
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--gen", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--peer-python", help="Python that has llama-cpp-python, for its child "
                        "(default: this one); the child needs nothing else")
    parser.add_argument("--only", choices=["vllm_cpp", "llamacpp"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure(args.only, args)))
        return

    from vllm_cpp.models import gemma3_path, smollm2_path

    print(f"threads: {args.threads}; cpu: {platform.processor() or platform.machine()}")
    run_model(args.model or smollm2_path(), args)
    if args.gemma3:
        run_model(gemma3_path(), args)


if __name__ == "__main__":
    main()
