"""Side-by-side speed of vllm-cpp and llama.cpp (llama-cpp-python) on one GGUF.

One invocation runs both engines on the same file with the same thread
count, one after the other, each in a fresh child process (so neither
engine's idle worker threads compete with the other's), and reports:

* prompt processing: tokens/s for prefilling a 512-token prompt (best of
  --repeats), measured as the time to the first generated token;
* batch-1 decode: tokens/s over 128 greedy tokens after a short prompt
  (best of --repeats), measured as (time for 129 tokens - time for 1 token)/128.

Usage:  python bench/bench_vs_llamacpp.py [--model PATH] [--vllm-model PATH] [--threads N]

--vllm-model gives vllm-cpp another form of the same weights (a Hugging
Face directory, say) while llama.cpp runs --model; both must have the
same vocabulary, since the prompt is built with --model's tokenizer.
Needs:  pip install llama-cpp-python  (built from source, native CPU flags)
Prints a markdown table with the ratios vllm-cpp / llama.cpp (higher is
better for vllm-cpp); BENCHMARKS.md records a run.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time


def make_prompt_ids(tokenize, n_tokens):
    """A natural-text prompt of exactly n_tokens tokens (by the model's tokenizer)."""
    paragraph = (
        "The history of computing is a story of people who wanted machines to do "
        "arithmetic faster than any clerk could. Early mechanical calculators gave way "
        "to relays, then vacuum tubes, transistors and integrated circuits. "
    )
    text = paragraph
    while len(tokenize(text)) < n_tokens:
        text += paragraph
    return tokenize(text)[:n_tokens]


def best(fn, repeats, clock=time.perf_counter):
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def bench_llamacpp(model, threads, prompt_ids, short_ids, repeats, decode_tokens):
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=model, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)

    def prefill():
        llm.reset()
        llm.eval(prompt_ids)

    def generate(n):
        llm.reset()
        llm.eval(short_ids)
        for _ in range(n - 1):
            token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            llm.eval([token])

    prefill()  # warm-up
    t_prefill = best(prefill, repeats)
    generate(4)
    t_one = best(lambda: generate(1), repeats)
    t_many = best(lambda: generate(decode_tokens + 1), repeats)
    return len(prompt_ids) / t_prefill, decode_tokens / (t_many - t_one)


def bench_vllm_cpp(model, threads, prompt_text, short_text, repeats, decode_tokens, clock=time.perf_counter):
    os.environ["VLLM_CPP_NUM_THREADS"] = str(threads)
    from vllm_cpp import Engine, SamplingParams, Toggle

    # Prefix caching off: the prompt is run repeatedly and must be
    # prefilled every time, as llama.cpp's eval does.
    engine = Engine.load(model, max_model_len=1024, prefix_caching=Toggle.OFF)
    one = SamplingParams.greedy(max_tokens=1, ignore_eos=True)
    many = SamplingParams.greedy(max_tokens=decode_tokens + 1, ignore_eos=True)

    engine.complete(prompt_text, one)  # warm-up
    t_prefill = best(lambda: engine.complete(prompt_text, one), repeats, clock)
    t_one = best(lambda: engine.complete(short_text, one), repeats, clock)
    t_many = best(lambda: engine.complete(short_text, many), repeats, clock)
    engine.close()
    return t_prefill, decode_tokens / (t_many - t_one)


def measure(engine, args):
    """Runs one engine's measurements (in a child process); returns (pp, tg)."""
    from llama_cpp import Llama

    vocab = Llama(model_path=args.model, vocab_only=True, verbose=False)
    tokenize = lambda text: vocab.tokenize(text.encode(), add_bos=False, special=False)  # noqa: E731
    prompt_ids = make_prompt_ids(tokenize, args.prompt_tokens)
    short_text = "Once upon a time"
    if engine == "llamacpp":
        return bench_llamacpp(args.model, args.threads, prompt_ids, tokenize(short_text), args.repeats,
                              args.decode_tokens)
    prompt_text = vocab.detokenize(prompt_ids).decode()
    assert tokenize(prompt_text) == prompt_ids
    t_prefill, tg = bench_vllm_cpp(args.vllm_model or args.model, args.threads, prompt_text, short_text, args.repeats,
                                   args.decode_tokens)
    return len(prompt_ids) / t_prefill, tg


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--vllm-model", default=None,
                        help="what vllm-cpp loads instead of --model: the same weights in another form (HF directory)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["vllm_cpp", "llamacpp"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model or smollm2_path()
    if args.only:
        print(json.dumps(measure(args.only, args)))
        return

    results = {}
    for engine in ("llamacpp", "vllm_cpp"):
        forms = ["--vllm-model", args.vllm_model] if args.vllm_model else []
        child = subprocess.run([sys.executable, __file__, "--only", engine, "--model", args.model, *forms,
                                "--threads", str(args.threads), "--prompt-tokens", str(args.prompt_tokens),
                                "--decode-tokens", str(args.decode_tokens), "--repeats", str(args.repeats)],
                               check=True, capture_output=True, text=True)
        results[engine] = json.loads(child.stdout.strip().splitlines()[-1])
    (v_pp, v_tg), (l_pp, l_tg) = results["vllm_cpp"], results["llamacpp"]

    ours = f" (vllm-cpp: {os.path.basename(args.vllm_model.rstrip('/'))})" if args.vllm_model else ""
    print(f"model: {os.path.basename(args.model)}{ours}; threads: {args.threads}; cpu: {platform.processor() or platform.machine()}")
    print("| metric | vllm-cpp | llama.cpp | ratio |")
    print("|---|---|---|---|")
    print(f"| prompt processing, {args.prompt_tokens}-token prompt (tokens/s) | {v_pp:.1f} | {l_pp:.1f} | {v_pp / l_pp:.2f} |")
    print(f"| batch-1 decode, {args.decode_tokens} tokens (tokens/s) | {v_tg:.1f} | {l_tg:.1f} | {v_tg / l_tg:.2f} |")


if __name__ == "__main__":
    main()
