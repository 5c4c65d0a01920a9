"""Serving throughput of vllm-cpp's continuous batching against llama.cpp
(llama-cpp-python) serving the same requests one after another.

One invocation, both engines on the same GGUF and thread count, each in a
fresh child process:

* concurrency 1, 4, 16, 64: that many requests (distinct 128-token prompts,
  128 greedy output tokens, ignore_eos) arrive at once. vllm-cpp gets them
  all through Engine.submit and batches them; llama.cpp runs them one after
  another (one llama_context, as llama-cpp-python serves). Reported: total
  output tokens/s and p50 time to first token. llama.cpp's sequential
  service time does not depend on the concurrency, so it is measured over 8
  requests and its schedule for N requests is computed from those times
  (request k starts when k-1 have finished).
* time to first token of a repeated 1,000-token prompt, vllm-cpp with and
  without prefix caching (the second run of the same prompt).
* resident memory over a stress loop (16 rounds x 4 requests mixing cancel,
  wait, polling and drop).

Usage:  python bench/bench_serving.py [--model PATH] [--threads N]
Needs:  pip install llama-cpp-python
Prints a markdown report; BENCHMARKS.md records a run.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

PROMPT_TOKENS = 128
OUTPUT_TOKENS = 128
CONCURRENCY = [1, 4, 16, 64]
LLAMACPP_REQUESTS = 8

PARAGRAPH = (
    "The history of computing is a story of people who wanted machines to do arithmetic faster than "
    "any clerk could. Early mechanical calculators gave way to relays, then vacuum tubes, transistors "
    "and integrated circuits. "
)


def prompt_text(i, tokenize, n_tokens):
    """A distinct natural-text prompt of about n_tokens tokens (distinct from
    its first block, so no two share a cached prefix)."""
    text = "Request %d. " % i
    while len(tokenize(text)) < n_tokens:
        text += PARAGRAPH
    ids = tokenize(text)[:n_tokens]
    return ids


def child_vllm(model, threads):
    os.environ["VLLM_CPP_NUM_THREADS"] = str(threads)
    from vllm_cpp import Engine, SamplingParams, Toggle
    from vllm_cpp.cli.bench import measure

    out = {}
    with Engine.load(model, max_model_len=1024, max_num_seqs=64, max_num_batched_tokens=2048) as eng:
        from llama_cpp import Llama  # its tokenizer only, to build identical prompts

        tok = Llama(model_path=model, vocab_only=True, verbose=False)
        prompts = [tok.detokenize(prompt_text(i, lambda s: tok.tokenize(s.encode(), add_bos=False),
                                              PROMPT_TOKENS - 1)).decode() for i in range(max(CONCURRENCY) * 2)]
        eng.complete(prompts[-1], SamplingParams.greedy(max_tokens=4))  # warm-up
        offset = 0
        for c in CONCURRENCY:
            # The same measurement as `vllm-cpp bench` (every prompt at once, greedy, ignore_eos).
            ids = [eng.tokenize(p) for p in prompts[offset:offset + c]]
            result = measure(eng, ids, OUTPUT_TOKENS)
            offset += c
            out[str(c)] = {"tokens_per_s": result["output_tokens_per_s"], "ttft_p50": result["ttft_p50_s"]}
        out["stats"] = eng.stats()

    # Time to first token of a repeated 1,000-token prompt.
    long_prompt = tok.detokenize(prompt_text(10_000, lambda s: tok.tokenize(s.encode(), add_bos=False), 999)).decode()
    for name, toggle in (("prefix_cache_on", Toggle.ON), ("prefix_cache_off", Toggle.OFF)):
        with Engine.load(model, max_model_len=2048, prefix_caching=toggle) as eng:
            ttfts = []
            for _ in range(2):
                t0 = time.perf_counter()
                first = []
                eng.complete_stream(long_prompt, SamplingParams.greedy(max_tokens=2),
                                    lambda e: first.append(time.perf_counter()) or True)
                ttfts.append(first[0] - t0)
            out[name] = {"first_run": ttfts[0], "second_run": ttfts[1]}

    # Resident memory over the stress loop.
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    import gc

    with Engine.load(model, max_model_len=256, num_blocks=32, max_num_seqs=4) as eng:
        samples = []
        for round_ in range(16):
            reqs = [eng.submit(prompts[(round_ + i) % 8], SamplingParams.greedy(max_tokens=12 + i),
                               lambda e: True) for i in range(4)]
            reqs[0].cancel()
            reqs[0].wait()
            reqs[1].wait()
            while not reqs[2].is_done():
                time.sleep(0.005)
            reqs[0].close()
            del reqs
            gc.collect()
            samples.append(rss())
        out["rss_mib"] = {"round_1": samples[0] / 2**20, "round_8": samples[7] / 2**20,
                          "round_16": samples[-1] / 2**20, "kv_cache_mib": eng.stats()["kv_cache_bytes"] / 2**20}
    print(json.dumps(out))


def child_llamacpp(model, threads):
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=model, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    tokenize = lambda s: llm.tokenize(s.encode(), add_bos=False)  # noqa: E731
    bos = llm.token_bos()
    prompts = [[bos] + prompt_text(i, tokenize, PROMPT_TOKENS - 1) for i in range(LLAMACPP_REQUESTS + 1)]

    def serve(ids):
        start = time.perf_counter()
        llm.reset()
        llm.eval(ids)
        ttft = time.perf_counter() - start
        for _ in range(OUTPUT_TOKENS - 1):
            token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            llm.eval([token])
        return ttft, time.perf_counter() - start

    serve(prompts[-1])  # warm-up
    times = [serve(p) for p in prompts[:LLAMACPP_REQUESTS]]
    print(json.dumps({"prefill_s": statistics.mean(t for t, _ in times),
                      "request_s": statistics.mean(d for _, d in times)}))


def run_child(kind, model, threads):
    result = subprocess.run([sys.executable, __file__, "--child", kind, "--model", model, "--threads", str(threads)],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--child", choices=["vllm", "llamacpp"], default=None)
    args = parser.parse_args()
    if args.model is None:
        from vllm_cpp.models import smollm2_path

        args.model = smollm2_path()
    if args.child == "vllm":
        return child_vllm(args.model, args.threads)
    if args.child == "llamacpp":
        return child_llamacpp(args.model, args.threads)

    ours = run_child("vllm", args.model, args.threads)
    peer = run_child("llamacpp", args.model, args.threads)
    peer_tps = OUTPUT_TOKENS / peer["request_s"]
    print("Model %s, %d threads, %s, Python %s\n" % (os.path.basename(args.model), args.threads, platform.machine(),
                                                    platform.python_version()))
    print("| concurrent requests | vllm-cpp output tok/s | llama.cpp (sequential) tok/s | ratio | "
          "vllm-cpp p50 TTFT | llama.cpp p50 TTFT |")
    print("|---|---|---|---|---|---|")
    for c in CONCURRENCY:
        r = ours[str(c)]
        # Sequential service: request k (0-based) starts after k full requests.
        peer_ttfts = [k * peer["request_s"] + peer["prefill_s"] for k in range(c)]
        print("| %d | %.1f | %.1f | %.2fx | %.3f s | %.3f s |" % (
            c, r["tokens_per_s"], peer_tps, r["tokens_per_s"] / peer_tps, r["ttft_p50"],
            statistics.median(peer_ttfts)))
    on, off = ours["prefix_cache_on"], ours["prefix_cache_off"]
    print("\nRepeated 1,000-token prompt, time to first token (second run): prefix caching on %.3f s, "
          "off %.3f s (%.1fx faster; first runs %.3f s / %.3f s)" % (
              on["second_run"], off["second_run"], off["second_run"] / on["second_run"], on["first_run"],
              off["first_run"]))
    m = ours["rss_mib"]
    print("\nStress loop RSS: round 1 %.1f MiB, round 8 %.1f MiB, round 16 %.1f MiB (KV cache %.1f MiB)" % (
        m["round_1"], m["round_8"], m["round_16"], m["kv_cache_mib"]))


if __name__ == "__main__":
    main()
