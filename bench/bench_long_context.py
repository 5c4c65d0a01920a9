"""Long contexts, vllm-cpp against llama.cpp (llama-cpp-python) on one GGUF.

* prefill: tokens/s for a --prompt-tokens prompt (default 4,096), the time
  to its first generated token (best of --repeats);
* decode at that context: tokens/s for --decode-tokens greedy tokens after
  the prompt, (time for prompt + N+1 tokens - time for prompt + 1 token) / N.

Each engine configuration runs in a fresh child process, the same thread
count for all, in alternating order for --rounds rounds (the best round
counts): vllm-cpp with each --kv-cache-dtype (auto = f16, int8), llama.cpp
with flash attention off and on (its f16 cache; the table shows its best).
Prefix caching is off, so every run prefills, as llama.cpp's eval does.

Usage:  python bench/bench_long_context.py [--model PATH] [--threads N] [--prompt-tokens 4096]
            [--decode-tokens 64] [--repeats 2] [--rounds 1] [--kv-cache-dtype auto,int8]
Needs llama-cpp-python (bench_vs_llamacpp.py says how). Prints a markdown
table with the ratios vllm-cpp / llama.cpp's best (higher is better for
vllm-cpp); BENCHMARKS.md records a run.
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from bench_vs_llamacpp import make_prompt_ids  # noqa: E402

HEADROOM = 256  # context beyond the prompt and the decoded tokens, for both engines


def bench_llamacpp(model, threads, prompt_ids, decode_tokens, repeats, flash_attn):
    from llama_cpp import Llama

    llm = Llama(model_path=model, n_ctx=len(prompt_ids) + decode_tokens + HEADROOM, n_batch=512, n_ubatch=512,
                n_threads=threads, n_threads_batch=threads, flash_attn=flash_attn, verbose=False)

    # The prompt, then decode_tokens more one at a time: the prompt's own
    # again (llama-cpp-python keeps no logits to pick from without
    # logits_all, which would cost a vocabulary row per prompt token; a
    # step's cost does not depend on which token it feeds). Both phases are
    # timed inside one run: subtracting a short run from a long one drowns
    # 64 decode steps in the 4,096-token prefill's noise.
    def run():
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt_ids)
        t1 = time.perf_counter()
        for i in range(decode_tokens):
            llm.eval([prompt_ids[i]])
        return t1 - t0, time.perf_counter() - t1

    return best_phases(run, len(prompt_ids), decode_tokens, repeats)


def bench_vllm_cpp(model, threads, prompt_text, n_prompt, decode_tokens, repeats, kv_cache_dtype):
    from vllm_cpp import Engine, SamplingParams, Toggle

    engine = Engine.load(model, max_model_len=n_prompt + decode_tokens + HEADROOM, prefix_caching=Toggle.OFF,
                         num_threads=threads, kv_cache_dtype=kv_cache_dtype)
    params = SamplingParams.greedy(max_tokens=decode_tokens + 1, ignore_eos=True)

    # Prefill: to the first streamed piece; decode: from it to the last.
    def run():
        t0 = time.perf_counter()
        first = None
        for _ in engine.stream(prompt_text, params):
            first = first or time.perf_counter()
        return first - t0, time.perf_counter() - first

    assert engine.complete(prompt_text, SamplingParams.greedy(max_tokens=1)).prompt_tokens == n_prompt  # warm-up
    result = best_phases(run, n_prompt, decode_tokens, repeats)
    engine.close()
    return result


def best_phases(run, n_prompt, decode_tokens, repeats):
    """(prefill tok/s, decode tok/s), each phase's best of `repeats` runs."""
    times = [run() for _ in range(repeats)]
    return n_prompt / min(t[0] for t in times), decode_tokens / min(t[1] for t in times)


def measure(config, args):
    """One configuration's (prefill tok/s, decode tok/s), in this (child) process."""
    from llama_cpp import Llama

    vocab = Llama(model_path=args.model, vocab_only=True, verbose=False)
    tokenize = lambda text: vocab.tokenize(text.encode(), add_bos=False, special=False)  # noqa: E731
    prompt_ids = make_prompt_ids(tokenize, args.prompt_tokens)
    engine, option = config.split(":")
    if engine == "llamacpp":
        return bench_llamacpp(args.model, args.threads, prompt_ids, args.decode_tokens, args.repeats, option == "fa")
    prompt_text = vocab.detokenize(prompt_ids).decode()
    assert tokenize(prompt_text) == prompt_ids
    return bench_vllm_cpp(args.model, args.threads, prompt_text, len(prompt_ids), args.decode_tokens, args.repeats,
                          option)


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--prompt-tokens", type=int, default=4096)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kv-cache-dtype", default="auto,int8", help="vllm-cpp's caches, comma-separated")
    parser.add_argument("--only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model or smollm2_path()
    if args.only:
        print(json.dumps(measure(args.only, args)))
        return

    ours = [f"vllm_cpp:{d}" for d in args.kv_cache_dtype.split(",")]
    configs = ["llamacpp:nofa", "llamacpp:fa"] + ours
    results = {c: (0.0, 0.0) for c in configs}
    for _ in range(args.rounds):
        for config in configs:
            child = subprocess.run([sys.executable, __file__, "--only", config, "--model", args.model,
                                    "--threads", str(args.threads), "--prompt-tokens", str(args.prompt_tokens),
                                    "--decode-tokens", str(args.decode_tokens), "--repeats", str(args.repeats)],
                                   check=True, capture_output=True, text=True)
            pp, tg = json.loads(child.stdout.strip().splitlines()[-1])
            results[config] = (max(results[config][0], pp), max(results[config][1], tg))
        configs = configs[::-1]  # alternate the order between rounds

    l_pp = max(results["llamacpp:nofa"][0], results["llamacpp:fa"][0])
    l_tg = max(results["llamacpp:nofa"][1], results["llamacpp:fa"][1])
    print(f"model: {os.path.basename(args.model)}; threads: {args.threads}; "
          f"cpu: {platform.processor() or platform.machine()}; rounds: {args.rounds}")
    print(f"llama.cpp flash attention off / on: prefill {results['llamacpp:nofa'][0]:.1f} / "
          f"{results['llamacpp:fa'][0]:.1f} tok/s, decode {results['llamacpp:nofa'][1]:.1f} / "
          f"{results['llamacpp:fa'][1]:.1f} tok/s")
    print("| metric | vllm-cpp KV cache | vllm-cpp | llama.cpp (best) | ratio |")
    print("|---|---|---|---|---|")
    for config in ours:
        pp, tg = results[config]
        dtype = config.split(":")[1]
        print(f"| prefill, {args.prompt_tokens}-token prompt (tokens/s) | {dtype} | {pp:.1f} | {l_pp:.1f} | "
              f"{pp / l_pp:.2f} |")
        print(f"| decode at {args.prompt_tokens} tokens of context, {args.decode_tokens} tokens (tokens/s) | "
              f"{dtype} | {tg:.1f} | {l_tg:.1f} | {tg / l_tg:.2f} |")


if __name__ == "__main__":
    main()
