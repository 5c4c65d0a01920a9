"""Speculative decoding: batch-1 decode speed with and without drafts, side by side.

One invocation, on the same GGUF, prompt token ids and thread count:

* vllm-cpp without speculation, with the n-gram proposer, with suffix
  decoding and with the n-gram proposer forced on at every batch size
  (disable_by_batch_size 0), all loaded in one child process and measured
  in alternating rounds (--rounds; the order flips each round): each
  engine's median tok/s, and its ratio to the first as the median of the
  rounds' ratios (each round's pair measured minutes apart at most, so
  the machine's drift cancels; the rounds' range beside it). The two
  n-gram engines, doing the same work at batch 1, show the noise left.
  Greedy, so all of them produce the same tokens;
* llama.cpp (llama-cpp-python) without and with its prompt-lookup
  speculation (LlamaPromptLookupDecoding), when llama_cpp is importable,
  each in its own child process afterwards (best of --repeats);

on three chat prompts (rendered with the model's chat template): two
input-grounded tasks (rewriting a ~500-token passage, editing code), where
the output repeats the input, and one open-ended chat, where it does not;
then 8 requests at once (the three prompts, repeated), aggregate generated
tokens/s, where the default switch turns speculation off (above 4 requests)
and the forced n-gram engine shows what it would cost.

Decode speed is (tokens - 1) / (time for all tokens - time for the first
token), with the prompt's KV already cached on every engine (a warm-up
run), so prompt processing is left out. vllm-cpp's acceptance rate
(accepted / draft tokens, from Engine.stats()) is reported; llama-cpp-python
does not expose one. Each table ends with each speculating engine's lowest
ratio against the 0.95x floor, and the costs its dynamic switch measured.

A second table is the draft model ("draft_model"): SmolLM2 F16 as the
target, drafted for by SmolLM2 Q4_0 (llama.cpp's quantizer, or --draft),
both made from the bundled GGUF and cached as the tests make them
(tests/support/hf_convert.py, tests/support/llama_quantize.py); --draft-types Q4_0,Q8_0,Q6_K
adds a draft engine per llama.cpp file type, each with its acceptance (the
quantizer runs in --peer-python, a Python with llama-cpp-python, when this
one has none); --draft-vocab 0,32768 adds one per draft_vocab_size too (the
draft proposes only ids below it; 0: all), and --draft-confidence 0,0.5
one per draft_confidence_threshold (a draft stops after a token it gave
less than that; 0: never). The F16 engines, without
speculation and with each draft, are measured the same way, in alternating
rounds in one child process. The draft length follows the measured
acceptance and costs (speculation_policy.h) up to --draft-k.

Usage:  python bench/bench_speculative.py [--model PATH] [--threads N] [--max-tokens N] [--rounds N]
                                          [--draft-only] [--target PATH] [--draft PATH]
                                          [--draft-types Q4_0,Q8_0,...] [--draft-vocab 0,32768]
                                          [--peer-python PATH]
Prints markdown tables (ratios against vllm-cpp without speculation);
BENCHMARKS.md records a run.
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

PASSAGE = (
    "The harbour town of Kessel Bay grew up around a single stone pier that fishermen built in the winter of 1712. "
    "For most of the eighteenth century the town was little more than a row of cottages, a chapel and a salt store, "
    "and its fortunes rose and fell with the herring that arrived each autumn. In 1789 a merchant named Elias Crane "
    "bought the salt store and turned it into a warehouse for timber brought down the coast from the northern "
    "forests. Crane's ships were slow and broad, but they were cheap to run, and within twenty years the warehouse "
    "had become the largest building in the county. The town council, which met in the back room of the Anchor Inn, "
    "voted in 1811 to extend the pier by forty yards so that larger vessels could tie up at low tide. The work took "
    "three summers and cost more than the council had, so Crane lent the difference on the condition that his ships "
    "would pay no harbour dues for fifty years. That agreement shaped the town for half a century. Other merchants "
    "found it hard to compete, and by 1840 Crane's sons owned the warehouse, two shipyards, the rope walk and most "
    "of the houses on Harbour Street. The railway reached Kessel Bay in 1868. At first it carried timber and salt "
    "fish inland, but the trains soon brought visitors in the other direction, and a row of boarding houses went up "
    "along the cliff road. The Crane family, sensing the change, sold the shipyards and built the Grand Pavilion, a "
    "glass and iron hall where brass bands played every Sunday from May to September. The herring disappeared from "
    "the bay in the 1890s, and the last of the fishing fleet was sold for scrap in 1903. Today the pier is a listed "
    "structure, the warehouse is a museum of the timber trade, and the Grand Pavilion hosts a music festival each "
    "summer. Visitors can still see the iron rings where Crane's ships were moored, and the original agreement with "
    "the council hangs in a frame in the museum's entrance hall, signed in faded brown ink by Elias Crane himself."
)

CODE = '''def summarize_orders(orders):
    total = 0
    count = 0
    largest = None
    for order in orders:
        if order["status"] != "paid":
            continue
        total += order["amount"]
        count += 1
        if largest is None or order["amount"] > largest["amount"]:
            largest = order
    average = total / count if count else 0
    return {
        "total": total,
        "count": count,
        "average": average,
        "largest_id": largest["id"] if largest else None,
    }


def format_summary(summary):
    lines = []
    lines.append("Paid orders: " + str(summary["count"]))
    lines.append("Total amount: " + str(summary["total"]))
    lines.append("Average amount: " + str(round(summary["average"], 2)))
    if summary["largest_id"] is not None:
        lines.append("Largest order: " + str(summary["largest_id"]))
    return "\\n".join(lines)
'''

# The passage task's wording matters to a 135M model: "Rewrite the following
# passage exactly, correcting nothing and adding nothing." got a sentence
# about the passage instead of the passage (16 tokens from Q4_1, 87 from
# F16, on 2026-12-05's engine); this one gets the passage back from both (233
# tokens, one stretch of it left out).
TASKS = {
    "grounded: rewrite a passage": [
        {"role": "user", "content": "Rewrite the following passage word for word.\n\n" + PASSAGE}],
    "grounded: edit code": [
        {"role": "user", "content": "In this Python code, rename the variable `total` to `running_total` "
                                    "everywhere and return the whole code.\n\n```python\n" + CODE + "```"}],
    "open-ended chat": [
        {"role": "user", "content": "Write a short story about a dragon who is afraid of the dark."}],
}

NGRAM = {"method": "ngram", "num_speculative_tokens": 8, "prompt_lookup_min": 2, "prompt_lookup_max": 5}
# Without the tree of finished outputs: each prompt is run several times, and
# that tree would have memorised the warm-up's output by the timed runs.
SUFFIX = {"method": "suffix", "num_speculative_tokens": 16, "suffix_decoding_max_cached_requests": 0}
# vllm-cpp's engines of the main table, measured in alternating rounds.
ROUND_ENGINES = {
    "vllm-cpp": None,
    "vllm-cpp ngram": NGRAM,
    "vllm-cpp suffix": SUFFIX,
    "vllm-cpp ngram, always on": dict(NGRAM, disable_by_batch_size=0),
}
LLAMA_ENGINES = {
    "llama.cpp": None,
    "llama.cpp prompt lookup": {"num_pred_tokens": 8, "max_ngram_size": 3},
}
BATCH_SIZE = 8
BATCH_TASK = f"{BATCH_SIZE} requests at once (aggregate)"
DRAFT_K = 4
DRAFT_VOCAB = 0  # the draft table's draft_vocab_size (0: the whole vocabulary)
FLOOR = 0.95  # issue 12: speculation never below this ratio (the dynamic switch)


def alternating_rounds(model, configs, threads, prompts, max_tokens, rounds):
    """One engine per speculative config (None: without speculation), all
    loaded at once. Per engine and task: the median batch-1 decode tok/s over
    alternating rounds, then the same for 8 requests at once (aggregate
    tok/s); per engine and task its acceptance; per speculating engine the
    costs its dynamic switch measured (medians of recent samples at the end)."""
    import asyncio

    from vllm_cpp import Engine, SamplingParams

    def load(config):
        kw = {"speculative_config": config} if config else {}
        return Engine.load(model, max_model_len=2048, num_threads=threads, max_num_seqs=BATCH_SIZE, **kw)

    engines = [load(config) for config in configs]
    one, full = SamplingParams.greedy(max_tokens=1), SamplingParams.greedy(max_tokens=max_tokens)
    batch = [prompts[i % len(prompts)] for i in range(BATCH_SIZE)]

    def decode_tok_s(engine, ids):
        t0 = time.perf_counter()
        engine.complete(ids, one)
        t1 = time.perf_counter()
        out = engine.complete(ids, full)
        t2 = time.perf_counter()
        return (out.completion_tokens - 1) / ((t2 - t1) - (t1 - t0)), out.completion_tokens

    def batch_tok_s(engine):
        async def go():
            return await asyncio.gather(*(engine.acomplete(ids, full) for ids in batch))
        start = time.perf_counter()
        tokens = sum(c.completion_tokens for c in asyncio.run(go()))
        return tokens / (time.perf_counter() - start), tokens

    for engine in engines:  # warm-up: the prompts' KV is cached from here on
        for ids in prompts:
            engine.complete(ids, full)
    speeds = [[[] for _ in prompts] + [[]] for _ in engines]
    tokens = [[0] * (len(prompts) + 1) for _ in engines]
    counts = [[[0, 0] for _ in prompts] for _ in engines]  # draft tokens, accepted, over all rounds
    for r in range(rounds):
        order = range(len(engines)) if r % 2 == 0 else reversed(range(len(engines)))
        for e in order:
            for t, ids in enumerate(prompts):
                before = engines[e].stats()["spec_decode"]
                tok_s, tokens[e][t] = decode_tok_s(engines[e], ids)
                speeds[e][t].append(tok_s)
                after = engines[e].stats()["spec_decode"]
                if after is not None:
                    counts[e][t][0] += after["num_draft_tokens"] - before["num_draft_tokens"]
                    counts[e][t][1] += after["num_accepted_tokens"] - before["num_accepted_tokens"]
            tok_s, tokens[e][-1] = batch_tok_s(engines[e])
            speeds[e][-1].append(tok_s)
    costs = [engine.stats()["spec_decode"] for engine in engines]
    costs = [c and {"draft_token_ms": c["draft_token_ms"], "forward_ms": c["forward_ms"]} for c in costs]
    for engine in engines:
        engine.close()
    acceptance = [[accepted / drafted if drafted else None for drafted, accepted in per_engine] for per_engine in counts]
    # Each round's ratio pairs an engine with the first one measured minutes
    # apart at most: the machine's drift between rounds cancels out.
    ratios = [[[a / b for a, b in zip(mine, first)] for mine, first in zip(per_engine, speeds[0])]
              for per_engine in speeds]
    return {"tok_s": [[statistics.median(v) for v in per_engine] for per_engine in speeds], "tokens": tokens,
            "ratio": [[statistics.median(v) for v in per_engine] for per_engine in ratios],
            "ratio_range": [[(min(v), max(v)) for v in per_engine] for per_engine in ratios],
            "acceptance": acceptance, "costs": costs}


def best(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_llamacpp(model, threads, prompts, max_tokens, repeats, lookup):
    from llama_cpp import Llama

    kw = {}
    if lookup:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
        kw["draft_model"] = LlamaPromptLookupDecoding(**lookup)
        kw["logits_all"] = True  # its verification reads every drafted position's logits
    llm = Llama(model_path=model, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False, **kw)
    results = []
    for ids in prompts:
        def generate(n):
            return llm.create_completion(prompt=ids, max_tokens=n, temperature=0.0)
        generate(max_tokens)  # warm-up: llama-cpp-python reuses the prompt's KV from here on
        t_one, _ = best(lambda: generate(1), repeats)
        t_full, out = best(lambda: generate(max_tokens), repeats)
        n = out["usage"]["completion_tokens"]
        results.append({"tokens": n, "tok_s": (n - 1) / (t_full - t_one)})
    return results


TESTS_DIR = pathlib.Path(__file__).resolve().parent.parent / "tests" / "support"


def quantized_draft(ftype, peer_python):
    """SmolLM2 in llama.cpp's `ftype` (made from the bundled GGUF by its
    quantizer and cached, as the tests make them) by peer_python, else this
    Python, in a child process: the quantizer logs every tensor to stdout."""
    from vllm_cpp.models import smollm2_path

    code = (f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); import llama_quantize; "
            f"print(llama_quantize.quantized({smollm2_path()!r}, {ftype!r}))")
    python = peer_python or sys.executable
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{python} could not make the {ftype} draft ({last})")
    return proc.stdout.strip().splitlines()[-1]


def draft_files(args):
    """The F16 target and the drafts: --draft, else one per --draft-types."""
    sys.path.insert(0, str(TESTS_DIR))
    import hf_convert
    from vllm_cpp.models import smollm2_path

    target = args.target or hf_convert.cached(hf_convert.cached(smollm2_path(), "to-hf", "f16"), "to-gguf", "f16")
    if args.draft:
        return target, [args.draft]
    return target, [quantized_draft(t, args.peer_python) for t in args.draft_types.split(",")]


def draft_name(path):
    """A draft's llama.cpp file type as its cached name says (`...-Q8_0-llama_cpp-...`), else its file name."""
    stem = os.path.basename(path)
    return stem.split("-llama_cpp-")[0].rsplit("-", 1)[-1] if "-llama_cpp-" in stem else stem


def draft_engines(target_name, drafts, vocabs, confidences, draft_k):
    """The draft table's engines: name -> speculative config, one per draft
    file, draft_vocab_size and draft_confidence_threshold (named when several
    are compared; None: the engine's default), after the target alone."""
    engines = {f"vllm-cpp {target_name}": None}
    for draft in drafts:
        for vocab in vocabs:
            for confidence in confidences:
                name = f"vllm-cpp {target_name} + {draft_name(draft)} draft"
                if vocab:
                    name += f", drafting vocabulary {vocab}"
                if len(confidences) > 1:
                    name += f", stops below {confidence}"
                config = {"method": "draft_model", "model": draft, "num_speculative_tokens": draft_k,
                          "draft_vocab_size": vocab}
                if confidence is not None:
                    config["draft_confidence_threshold"] = confidence
                engines[name] = config
    return engines


def print_rounds_table(names, result, widest, extra_rows=None):
    """The batch-1 rows per task and the batch row of alternating_rounds'
    `result` (engines in `names`' order, the first without speculation),
    extra_rows[task] (name, tokens, tok/s) after them; then each speculating
    engine's lowest ratio against the floor, and the costs its switch
    measured (forwards of up to `widest` positions)."""
    print("| task | engine | tokens | decode tok/s | vs the first engine (rounds' range) | acceptance |")
    print("|---|---|---|---|---|---|")
    lowest = [None] * len(names)
    for t, task in enumerate(list(TASKS) + [BATCH_TASK]):
        base = result["tok_s"][0][t]
        for e, name in enumerate(names):
            ratio, (low, high) = result["ratio"][e][t], result["ratio_range"][e][t]
            rate = result["acceptance"][e][t] if t < len(TASKS) else None
            acceptance = "" if rate is None else f"{100 * rate:.0f}%"
            spread = f" ({low:.2f}-{high:.2f})" if e > 0 else ""
            print(f"| {task} | {name} | {result['tokens'][e][t]} | {result['tok_s'][e][t]:.1f} | {ratio:.2f}x{spread} | "
                  f"{acceptance} |")
            if e > 0:
                lowest[e] = min(ratio, lowest[e] or ratio)
        for name, tokens, tok_s in (extra_rows or {}).get(task, []):
            print(f"| {task} | {name} | {tokens} | {tok_s:.1f} | {tok_s / base:.2f}x | |")
    print()
    for name, ratio in list(zip(names, lowest))[1:]:
        verdict = "at or above" if ratio >= FLOOR else "BELOW"
        print(f"lowest ratio of {name}: {ratio:.2f}x ({verdict} the {FLOOR}x floor)")
    print()
    print("The dynamic switch's measured costs at the end of the run (medians of the last 7 samples; one request's forwards, "
          "which the batch rounds' steps do not mix with), in decode forwards T(1): a draft token (d; none for "
          f"model-free proposers), and forwards of 2..{widest} positions")
    print()
    print("| engine | T(1) ms | d | " + " | ".join(f"T({n})" for n in range(2, widest + 1)) + " |")
    print("|---|---|---|" + "---|" * (widest - 1))
    for name, c in zip(names, result["costs"]):
        lone = c and c["forward_ms"].get("1", {})  # one request's forwards, by positions
        one = lone and lone.get("1")
        if not one:
            continue
        shares = [c["draft_token_ms"]] + [lone.get(str(n)) for n in range(2, widest + 1)]
        print(f"| {name} | {one:.2f} | " + " | ".join("" if ms is None else f"{ms / one:.2f}" for ms in shares) + " |")
    print()


def run_child(args, *which, **job):
    """This script in a child process (`which`: its mode's arguments); a
    `job` for alternating_rounds goes through a JSON file. Its last line of
    output, parsed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", f.name, *which, "--threads", str(args.threads),
                               "--max-tokens", str(args.max_tokens), "--repeats", str(args.repeats)],
                              check=True, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(args):
    with open(args.child) as f:
        job = json.load(f)
    if args.llama:
        result = run_llamacpp(job["model"], args.threads, job["prompts"], args.max_tokens, args.repeats,
                              LLAMA_ENGINES[args.llama])
    else:
        result = alternating_rounds(job["model"], job["configs"], args.threads, job["prompts"], args.max_tokens,
                                    job["rounds"])
    print(json.dumps(result))


def main_table(args, prompts):
    try:
        import llama_cpp  # noqa: F401
        peers = list(LLAMA_ENGINES)
    except ImportError:
        print("llama_cpp is not importable: llama.cpp's rows are left out", file=sys.stderr)
        peers = []
    result = run_child(args, model=args.model, configs=list(ROUND_ENGINES.values()), prompts=prompts,
                       rounds=args.rounds)
    peer_results = {name: run_child(args, "--llama", name, model=args.model, prompts=prompts) for name in peers}
    extra_rows = {task: [(name, r[t]["tokens"], r[t]["tok_s"]) for name, r in peer_results.items()]
                  for t, task in enumerate(TASKS)}
    print(f"model: {os.path.basename(args.model)}; threads: {args.threads}; cpu: {platform.processor() or platform.machine()}; "
          f"greedy, up to {args.max_tokens} tokens; vllm-cpp: median of {args.rounds} alternating rounds, "
          f"llama.cpp: best of {args.repeats}")
    print(f"ngram: {json.dumps(NGRAM)}; suffix: {json.dumps(SUFFIX)}; llama.cpp prompt lookup: "
          f"{json.dumps(LLAMA_ENGINES['llama.cpp prompt lookup'])}")
    print()
    print_rounds_table(list(ROUND_ENGINES), result, NGRAM["num_speculative_tokens"] + 1, extra_rows)


def draft_table(args, prompts):
    try:
        target, drafts = draft_files(args)
    except (ImportError, RuntimeError) as e:
        print(f"the draft table is left out: {e}; llama-cpp-python makes the drafts: pass --draft, or --peer-python "
              "for a Python with it", file=sys.stderr)
        return
    confidences = [float(c) for c in args.draft_confidence.split(",")] if args.draft_confidence else [None]
    target_name = os.path.basename(args.target) if args.target else "F16"
    vocabs = [int(v) for v in args.draft_vocab.split(",")]
    engines = draft_engines(target_name, drafts, vocabs, confidences, args.draft_k)
    result = run_child(args, model=target, configs=list(engines.values()), prompts=prompts, rounds=args.rounds)
    print(f"target: {os.path.basename(target)}; drafts: {', '.join(os.path.basename(d) for d in drafts)}; "
          f"num_speculative_tokens {args.draft_k} (the most the policy may choose); greedy, up to "
          f"{args.max_tokens} tokens; median of {args.rounds} alternating rounds")
    print()
    print_rounds_table(list(engines), result, args.draft_k + 1)


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of vllm-cpp's engines")
    parser.add_argument("--repeats", type=int, default=2, help="llama.cpp's runs per prompt (the best is kept)")
    parser.add_argument("--draft-only", action="store_true", help="only the draft model's table")
    parser.add_argument("--target", help="the draft table's target (default: SmolLM2 F16 from the bundled GGUF)")
    parser.add_argument("--draft", help="the draft table's draft (default: SmolLM2 Q4_0, llama.cpp's quantizer)")
    parser.add_argument("--draft-k", type=int, default=DRAFT_K, help="the draft table's num_speculative_tokens")
    parser.add_argument("--draft-types", default="Q4_0",
                        help="the draft table's drafts, llama.cpp file types of SmolLM2, comma-separated (e.g. Q4_0,Q8_0)")
    parser.add_argument("--draft-vocab", default=str(DRAFT_VOCAB),
                        help="the draft table's draft_vocab_size, comma-separated for one engine each per draft "
                             "(0: the whole vocabulary; e.g. 0,16384 compares the two in one run)")
    parser.add_argument("--draft-confidence",
                        help="the draft table's draft_confidence_threshold, comma-separated for one engine each per "
                             "draft (default: the engine's; e.g. 0,0.5 compares drafts run to their length with "
                             "drafts that stop after a token the draft gave less than 0.5)")
    parser.add_argument("--peer-python", help="a Python with llama-cpp-python, to make the drafts when this one has none")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--llama", choices=list(LLAMA_ENGINES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    args.model = args.model or smollm2_path()

    from vllm_cpp import Engine

    with Engine.load(args.model, max_model_len=2048) as engine:
        prompts = [engine.tokenize_chat({"messages": m}) for m in TASKS.values()]
    if not args.draft_only:
        main_table(args, prompts)
    draft_table(args, prompts)


if __name__ == "__main__":
    main()
