"""How a draft model's confidence predicts its acceptance, and what
stopping a draft early at a confidence threshold would gain: an offline
model of greedy draft-model speculation, free of timing noise.

The target (SmolLM2 F16, as bench_speculative.py makes it) writes its
greedy continuation of each prompt. The draft (SmolLM2 Q4_0) is then run
teacher-forced over that continuation: at each position, its greedy token
and that token's probability under its own distribution (logprobs=0 on a
one-token request whose prompt is the prefix; the prefix cache makes that
cheap). With greedy verification this is exact: a draft that starts at
position i proposes the draft's tokens at i, i+1, ... and they are
accepted while they equal the target's, which is what the teacher-forced
tokens show (past the first mismatch everything is rejected anyway; only
the confidences there, which decide where a draft stops, are the
teacher-forced ones instead of the draft's own).

Each strategy is replayed over every continuation: a draft of at most k
tokens that also stops after the first token whose confidence is below a
threshold tau (tau 0: never). A step that drafts j tokens costs a target
forward of j + 1 positions, T(j + 1), plus j draft tokens (d each); it
yields the accepted tokens plus one. The speedup is tokens / cost summed
over the text, costs in units of a target decode T(1). The costs are
measured here first, at --threads (each the third fastest of 15 one-token
requests whose prompt adds 1..7 new tokens to a cached prefix), unless
given (--draft-cost d, --verify-costs T(2),T(3),...).

Usage:  python bench/draft_confidence.py [--target PATH] [--draft PATH] [--max-tokens 128] [--threads N]
                                         [--draft-cost D] [--verify-costs T2,T3,...] [--peer-python PATH]
"""

import argparse
import math
import os
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_speculative import TASKS, quantized_draft, TESTS_DIR  # noqa: E402

# Open-ended chat beyond bench_speculative's one prompt, so the estimate
# does not rest on a single story.
MORE_CHAT = [
    "What are some good habits for staying healthy while working from home?",
    "Explain how a rainbow forms, as if to a ten-year-old.",
    "Give me three ideas for a birthday party for my grandmother.",
    "Write a poem about the sea in winter.",
    "Why do cats purr?",
    "Describe your ideal weekend.",
    "What should I pack for a week of hiking in the mountains?",
]
THRESHOLDS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
MAX_K = 6
BLOCK = 16  # the engine's default block size: a prefix of whole blocks is cached whole


def forward_seconds(model, threads, max_positions):
    """Seconds of a forward of 1..max_positions positions after a cached
    prefix: the third fastest of 15 one-token requests each."""
    from vllm_cpp import Engine, SamplingParams

    rng = random.Random(0)
    one = SamplingParams.greedy(max_tokens=1)
    with Engine.load(model, max_model_len=2048, num_threads=threads) as engine:
        prefix = [rng.randrange(1000, 30000) for _ in range(6 * BLOCK)]
        engine.complete(prefix, one)
        times = {n: [] for n in range(1, max_positions + 1)}
        for _ in range(15):
            for n in times:
                ids = prefix + [rng.randrange(1000, 30000) for _ in range(n)]
                start = time.perf_counter()
                engine.complete(ids, one)
                times[n].append(time.perf_counter() - start)
    return [sorted(times[n])[2] for n in sorted(times)]


def traces(target, draft, prompts, max_tokens, threads):
    """Per prompt: the target's greedy tokens, and per position the
    draft's greedy token and its probability given the target's prefix."""
    from vllm_cpp import Engine, SamplingParams

    with Engine.load(target, max_model_len=2048, num_threads=threads) as t:
        continuations = [t.complete(ids, SamplingParams.greedy(max_tokens=max_tokens)).token_ids for ids in prompts]
    out = []
    one = SamplingParams.greedy(max_tokens=1, logprobs=0)
    with Engine.load(draft, max_model_len=2048, num_threads=threads) as d:
        for ids, cont in zip(prompts, continuations):
            guesses = []
            for i in range(len(cont)):
                c = d.complete(list(ids) + list(cont[:i]), one)
                guesses.append((c.token_ids[0], math.exp(c.logprobs[0].logprob)))
            out.append((cont, guesses))
    return out


def replay(trace, k, tau, draft_cost, verify_costs):
    """(tokens, cost in decodes) of speculating over one continuation;
    verify_costs[j] is T(j + 1) / T(1)."""
    cont, guesses = trace
    i = tokens = 0
    cost = 0.0
    while i < len(cont):
        drafted = accepted = 0
        matching = True
        while drafted < k and i + drafted < len(cont):
            token, confidence = guesses[i + drafted]
            drafted += 1
            matching = matching and token == cont[i + drafted - 1]
            accepted += matching
            if confidence < tau:
                break
        accepted = min(accepted, len(cont) - i - 1)
        cost += verify_costs[drafted] + drafted * draft_cost
        tokens += accepted + 1
        i += accepted + 1
    return tokens, cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", help="default: SmolLM2 F16 from the bundled GGUF (tests/support/hf_convert.py)")
    parser.add_argument("--draft", help="default: SmolLM2 Q4_0 by llama.cpp's quantizer (tests/support/llama_quantize.py)")
    parser.add_argument("--peer-python", help="a Python with llama-cpp-python, to make the draft when this one has none")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--draft-cost", type=float, help="a draft token, in target decodes (default: measured)")
    parser.add_argument("--verify-costs", help="T(2),T(3),... in target decodes, %d of them (default: measured)" % MAX_K)
    args = parser.parse_args()

    sys.path.insert(0, str(TESTS_DIR))
    import hf_convert
    from vllm_cpp import Engine
    from vllm_cpp.models import smollm2_path

    target = args.target or hf_convert.cached(hf_convert.cached(smollm2_path(), "to-hf", "f16"), "to-gguf", "f16")
    draft = args.draft or quantized_draft("Q4_0", args.peer_python)
    groups = {"open-ended chat": [TASKS["open-ended chat"]] + [[{"role": "user", "content": c}] for c in MORE_CHAT],
              "grounded": [m for name, m in TASKS.items() if name.startswith("grounded")]}
    with Engine.load(target, max_model_len=2048) as engine:
        prompts = {g: [engine.tokenize_chat({"messages": m}) for m in ms] for g, ms in groups.items()}
    # The target's forwards are measured once, for both costs, when either is not given.
    target_seconds = None
    if args.verify_costs is None or args.draft_cost is None:
        target_seconds = forward_seconds(target, args.threads, MAX_K + 1 if args.verify_costs is None else 1)
    if args.verify_costs:
        verify = [1.0] + [float(c) for c in args.verify_costs.split(",")]
        if len(verify) != MAX_K + 1:
            sys.exit("--verify-costs takes %d costs, T(2) to T(%d)" % (MAX_K, MAX_K + 1))
    else:
        verify = [t / target_seconds[0] for t in target_seconds]
    draft_cost = args.draft_cost
    if draft_cost is None:
        draft_cost = forward_seconds(draft, args.threads, 1)[0] / target_seconds[0]
    print(f"target {pathlib.Path(target).name}, draft {pathlib.Path(draft).name}; greedy, {args.max_tokens} tokens; "
          f"{args.threads} threads; a draft token {draft_cost:.2f} of a target decode; target forwards of 2..{MAX_K + 1} "
          f"positions " + ", ".join(f"{c:.2f}" for c in verify[1:]) + " decodes")
    for group, ps in prompts.items():
        ts = traces(target, draft, ps, args.max_tokens, args.threads)
        pairs = [(tok == want, p) for cont, guesses in ts for want, (tok, p) in zip(cont, guesses)]
        print(f"\n{group}: {len(ps)} prompts, {len(pairs)} positions, draft agrees at "
              f"{100 * sum(a for a, _ in pairs) / len(pairs):.0f}%")
        print("\n| draft confidence | positions | agreement |\n|---|---|---|")
        edges = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.01]
        for lo, hi in zip(edges, edges[1:]):
            bucket = [a for a, p in pairs if lo <= p < hi]
            if bucket:
                print(f"| {lo:.1f}-{min(hi, 1.0):.1f} | {len(bucket)} | {100 * sum(bucket) / len(bucket):.0f}% |")
        print("\n| k \\ tau | " + " | ".join(f"{t:.1f}" for t in THRESHOLDS) + " |")
        print("|---" * (len(THRESHOLDS) + 1) + "|")
        for k in range(1, MAX_K + 1):
            cells = []
            for tau in THRESHOLDS:
                runs = [replay(t, k, tau, draft_cost, verify) for t in ts]
                cells.append(f"{sum(r[0] for r in runs) / sum(r[1] for r in runs):.3f}x")
            print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
