"""Speculative decoding: batch-1 decode speed with and without drafts, side by side.

One invocation runs, each in a fresh child process and one after the other
on the same GGUF, prompt token ids and thread count:

* vllm-cpp without speculation, with the n-gram proposer and with suffix
  decoding (greedy, so all three produce the same tokens);
* llama.cpp (llama-cpp-python) without and with its prompt-lookup
  speculation (LlamaPromptLookupDecoding), when llama_cpp is importable;

on three chat prompts (rendered with the model's chat template): two
input-grounded tasks (rewriting a ~500-token passage, editing code), where
the output repeats the input, and one open-ended chat, where it does not.

Decode speed is (tokens - 1) / (time for all tokens - time for the first
token), each the best of --repeats, with the prompt's KV already cached on
both engines (a warm-up run), so prompt processing is left out. vllm-cpp's
acceptance rate (accepted / draft tokens, from Engine.stats()) is reported;
llama-cpp-python does not expose one.

A second table measures the dynamic switch: 8 requests at once (the three
prompts, repeated), aggregate generated tokens/s over the whole batch
(best of --repeats), for vllm-cpp without speculation, with the n-gram
proposer forced on at every batch size (disable_by_batch_size 0), and with
the n-gram proposer and its default switch (off above 4 requests).

A third table is the draft model ("draft_model"): SmolLM2 F16 as the
target, drafted for by SmolLM2 Q4_0 (llama.cpp's quantizer, or --draft),
both made from the bundled GGUF and cached as the tests make them
(tests/hf_convert.py, tests/llama_quantize.py); --draft-types Q4_0,Q8_0,Q6_K
adds a draft engine per llama.cpp file type, each with its acceptance (the
quantizer runs in --peer-python, a Python with llama-cpp-python, when this
one has none); --draft-vocab 0,32768 adds one per draft_vocab_size too (the
draft proposes only ids below it; 0: all). The F16 engines, without
speculation and with each draft,
are loaded in one child process and measured in alternating rounds
(--rounds; the order flips each round), and the median of each is
reported: on a shared machine they all see the same load. Batch 1 on the
three tasks, then 8 requests at once with the default dynamic switch
(speculation off above 4 requests). The draft length follows the measured
acceptance and costs (speculation_policy.h) up to --draft-k; the table
ends with each draft's lowest ratio against the 0.95x floor.

Usage:  python bench/bench_speculative.py [--model PATH] [--threads N] [--max-tokens N]
                                          [--draft-only] [--target PATH] [--draft PATH] [--rounds N]
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

TASKS = {
    "grounded: rewrite a passage": [
        {"role": "user", "content": "Rewrite the following passage exactly, correcting nothing and adding nothing.\n\n"
                                    + PASSAGE}],
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
BATCH_ENGINES = {
    "vllm-cpp": None,
    "vllm-cpp ngram, always on": dict(NGRAM, disable_by_batch_size=0),
    "vllm-cpp ngram, default switch": NGRAM,
}
BATCH_SIZE = 8
DRAFT_K = 4
DRAFT_VOCAB = 0  # the draft table's draft_vocab_size (0: the whole vocabulary)
FLOOR = 0.95  # issue 12: speculation never below this ratio (the dynamic switch)
ENGINES = {
    "vllm-cpp": ("vllm_cpp", None),
    "vllm-cpp ngram": ("vllm_cpp", NGRAM),
    "vllm-cpp suffix": ("vllm_cpp", SUFFIX),
    "llama.cpp": ("llamacpp", None),
    "llama.cpp prompt lookup": ("llamacpp", {"num_pred_tokens": 8, "max_ngram_size": 3}),
}


def best(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_vllm_cpp(model, threads, prompts, max_tokens, repeats, config):
    from vllm_cpp import Engine, SamplingParams

    kw = {"speculative_config": config} if config else {}
    engine = Engine.load(model, max_model_len=2048, num_threads=threads, **kw)
    results = []
    for ids in prompts:
        one = SamplingParams.greedy(max_tokens=1)
        full = SamplingParams.greedy(max_tokens=max_tokens)
        engine.complete(ids, full)  # warm-up: the prompt's KV is cached from here on
        before = engine.stats()["spec_decode"]
        t_one, _ = best(lambda: engine.complete(ids, one), repeats)
        t_full, out = best(lambda: engine.complete(ids, full), repeats)
        after = engine.stats()["spec_decode"]
        acceptance = None
        if after is not None:
            drafted = after["num_draft_tokens"] - before["num_draft_tokens"]
            acceptance = (after["num_accepted_tokens"] - before["num_accepted_tokens"]) / drafted if drafted else 0.0
        results.append({"tokens": out.completion_tokens, "tok_s": (out.completion_tokens - 1) / (t_full - t_one),
                        "acceptance": acceptance})
    engine.close()
    return results


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
        results.append({"tokens": n, "tok_s": (n - 1) / (t_full - t_one), "acceptance": None})
    return results


def run_vllm_cpp_batch(model, threads, prompts, max_tokens, repeats, config):
    import asyncio

    from vllm_cpp import Engine, SamplingParams

    kw = {"speculative_config": config} if config else {}
    engine = Engine.load(model, max_model_len=2048, num_threads=threads, max_num_seqs=BATCH_SIZE, **kw)
    batch = [prompts[i % len(prompts)] for i in range(BATCH_SIZE)]
    params = SamplingParams.greedy(max_tokens=max_tokens)

    def run():
        async def go():
            return await asyncio.gather(*(engine.acomplete(ids, params) for ids in batch))
        return sum(c.completion_tokens for c in asyncio.run(go()))

    run()  # warm-up: the prompts' KV is cached from here on
    elapsed, tokens = best(run, repeats)
    engine.close()
    return {"tokens": tokens, "tok_s": tokens / elapsed}


def draft_variants(drafts, vocabs):
    """(draft file, draft_vocab_size) per engine with a draft, in table order."""
    return [(d, v) for d in drafts for v in vocabs]


def draft_rounds(target, drafts, vocabs, draft_k, threads, prompts, max_tokens, rounds):
    """Per engine (without speculation, then with each draft model at each
    drafting vocabulary size, draft_variants), per
    task: the median batch-1 decode tok/s over alternating rounds; then the
    same for 8 requests at once (aggregate tok/s); and per draft and task
    its acceptance."""
    import asyncio

    from vllm_cpp import Engine, SamplingParams

    def load(draft, vocab):
        kw = {}
        if draft:
            kw["speculative_config"] = {"method": "draft_model", "model": draft, "num_speculative_tokens": draft_k,
                                        "draft_vocab_size": vocab}
        return Engine.load(target, max_model_len=2048, num_threads=threads, max_num_seqs=BATCH_SIZE, **kw)

    engines = [load(None, 0)] + [load(d, v) for d, v in draft_variants(drafts, vocabs)]
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
    # What each engine's dynamic switch measured (its running averages at the end).
    costs = [engine.stats()["spec_decode"] for engine in engines[1:]]
    costs = [{"draft_token_ms": c["draft_token_ms"], "forward_ms": c["forward_ms"]} for c in costs]
    for engine in engines:
        engine.close()
    acceptance = [[accepted / drafted if drafted else None for drafted, accepted in per_engine] for per_engine in counts]
    return {"tok_s": [[statistics.median(v) for v in per_engine] for per_engine in speeds], "tokens": tokens,
            "acceptance": acceptance, "costs": costs}


TESTS_DIR = pathlib.Path(__file__).resolve().parent.parent / "tests"


def quantized_draft(ftype, peer_python):
    """SmolLM2 in llama.cpp's `ftype` (made from the bundled GGUF by its
    quantizer and cached, as the tests make them), here or in peer_python."""
    from vllm_cpp.models import smollm2_path

    try:
        sys.path.insert(0, str(TESTS_DIR))
        import llama_quantize
        return str(llama_quantize.quantized(smollm2_path(), ftype))
    except ImportError:
        if not peer_python:
            raise
    code = (f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); import llama_quantize; "
            f"print(llama_quantize.quantized({smollm2_path()!r}, {ftype!r}))")
    proc = subprocess.run([peer_python, "-c", code], check=True, capture_output=True, text=True)
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


def draft_vocabs(args):
    return [int(v) for v in args.draft_vocab.split(",")]


def draft_name(path):
    """A draft's llama.cpp file type as its cached name says (`...-Q8_0-llama_cpp-...`), else its file name."""
    stem = os.path.basename(path)
    return stem.split("-llama_cpp-")[0].rsplit("-", 1)[-1] if "-llama_cpp-" in stem else stem


def variant_name(draft, vocab):
    return f"{draft_name(draft)} draft" + (f", drafting vocabulary {vocab}" if vocab else "")


def print_draft_table(target, drafts, vocabs, draft_k, result, max_tokens, rounds):
    variants = draft_variants(drafts, vocabs)
    names = ["vllm-cpp F16"] + [f"vllm-cpp F16 + {variant_name(d, v)}" for d, v in variants]
    print(f"target: {os.path.basename(target)}; drafts: {', '.join(os.path.basename(d) for d in drafts)}; "
          f"num_speculative_tokens {draft_k} (the most the policy may choose); greedy, up to {max_tokens} tokens; "
          f"median of {rounds} alternating rounds")
    print()
    print("| task | engine | tokens | decode tok/s | vs F16 without speculation | acceptance |")
    print("|---|---|---|---|---|---|")
    lowest = [None] * len(variants)
    for t, task in enumerate(list(TASKS) + [f"{BATCH_SIZE} requests at once (aggregate)"]):
        base = result["tok_s"][0][t]
        for e, name in enumerate(names):
            rate = result["acceptance"][e][t] if t < len(TASKS) else None
            acceptance = "" if rate is None else f"{100 * rate:.0f}%"
            tok_s = result["tok_s"][e][t]
            if e > 0:
                lowest[e - 1] = min(tok_s / base, lowest[e - 1] or tok_s / base)
            print(f"| {task} | {name} | {result['tokens'][e][t]} | {tok_s:.1f} | {tok_s / base:.2f}x | {acceptance} |")
    print()
    for (d, v), ratio in zip(variants, lowest):
        verdict = "at or above" if ratio >= FLOOR else "BELOW"
        print(f"lowest ratio with the {variant_name(d, v)}: {ratio:.2f}x ({verdict} the {FLOOR}x floor)")
    print()
    print("The dynamic switch's measured costs at the end of the run (running averages, the batch rounds' steps "
          "included), in target decode forwards T(1): a draft token (d), and forwards of 2..k+1 positions")
    print()
    print("| engine | T(1) ms | d | " + " | ".join(f"T({n})" for n in range(2, draft_k + 2)) + " |")
    print("|---|---|---|" + "---|" * draft_k)
    for (d, v), c in zip(variants, result["costs"]):
        forward = c["forward_ms"]
        one = forward.get("1")
        if not one:
            continue
        shares = [c["draft_token_ms"]] + [forward.get(str(n)) for n in range(2, draft_k + 2)]
        print(f"| {variant_name(d, v)} | {one:.2f} | " +
              " | ".join("" if ms is None else f"{ms / one:.2f}" for ms in shares) + " |")


def child(args):
    if args.draft_only:
        with open(args.prompts) as f:
            prompts = json.load(f)
        print(json.dumps(draft_rounds(args.target, args.draft.split(os.pathsep), draft_vocabs(args), args.draft_k,
                                      args.threads, prompts, args.max_tokens, args.rounds)))
        return
    if args.batch_only:
        with open(args.prompts) as f:
            prompts = json.load(f)
        print(json.dumps(run_vllm_cpp_batch(args.model, args.threads, prompts, args.max_tokens, args.repeats,
                                            BATCH_ENGINES[args.batch_only])))
        return
    with open(args.prompts) as f:
        prompts = json.load(f)
    kind, config = ENGINES[args.only]
    run = run_vllm_cpp if kind == "vllm_cpp" else run_llamacpp
    print(json.dumps(run(args.model, args.threads, prompts, args.max_tokens, args.repeats, config)))


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--draft-only", action="store_true", help="only the draft model's table")
    parser.add_argument("--target", help="the draft table's target (default: SmolLM2 F16 from the bundled GGUF)")
    parser.add_argument("--draft", help="the draft table's draft (default: SmolLM2 Q4_0, llama.cpp's quantizer)")
    parser.add_argument("--draft-k", type=int, default=DRAFT_K, help="the draft table's num_speculative_tokens")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the draft table")
    parser.add_argument("--draft-types", default="Q4_0",
                        help="the draft table's drafts, llama.cpp file types of SmolLM2, comma-separated (e.g. Q4_0,Q8_0)")
    parser.add_argument("--draft-vocab", default=str(DRAFT_VOCAB),
                        help="the draft table's draft_vocab_size, comma-separated for one engine each per draft "
                             "(0: the whole vocabulary; e.g. 0,16384 compares the two in one run)")
    parser.add_argument("--peer-python", help="a Python with llama-cpp-python, to make the drafts when this one has none")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=list(ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--batch-only", choices=list(BATCH_ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model or smollm2_path()
    if args.only or args.batch_only or args.child:
        child(args)
        return

    from vllm_cpp import Engine

    with Engine.load(args.model, max_model_len=2048) as engine:
        prompts = [engine.tokenize_chat({"messages": m}) for m in TASKS.values()]
    if args.draft_only:
        run_draft_table(args, prompts)
        return
    try:
        import llama_cpp  # noqa: F401
        engines = list(ENGINES)
    except ImportError:
        print("llama_cpp is not importable: llama.cpp's rows are left out", file=sys.stderr)
        engines = [e for e in ENGINES if ENGINES[e][0] == "vllm_cpp"]

    results, batch_results = {}, {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(prompts, f)

    def run_child(*which):
        proc = subprocess.run([sys.executable, __file__, *which, "--model", args.model, "--prompts", f.name,
                               "--threads", str(args.threads), "--max-tokens", str(args.max_tokens),
                               "--repeats", str(args.repeats)], check=True, capture_output=True, text=True)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    try:
        for name in engines:
            results[name] = run_child("--only", name)
        for name in BATCH_ENGINES:
            batch_results[name] = run_child("--batch-only", name)
    finally:
        os.unlink(f.name)

    print(f"model: {os.path.basename(args.model)}; threads: {args.threads}; cpu: {platform.processor() or platform.machine()}; "
          f"greedy, up to {args.max_tokens} tokens")
    print(f"ngram: {json.dumps(NGRAM)}; suffix: {json.dumps(SUFFIX)}; llama.cpp prompt lookup: "
          f"{json.dumps(ENGINES['llama.cpp prompt lookup'][1])}")
    print()
    print("| task | engine | tokens | decode tok/s | vs vllm-cpp without speculation | acceptance |")
    print("|---|---|---|---|---|---|")
    for t, task in enumerate(TASKS):
        base = results["vllm-cpp"][t]["tok_s"]
        for name in engines:
            r = results[name][t]
            acceptance = "" if r["acceptance"] is None else f"{100 * r['acceptance']:.0f}%"
            print(f"| {task} | {name} | {r['tokens']} | {r['tok_s']:.1f} | {r['tok_s'] / base:.2f}x | {acceptance} |")
    print()
    print(f"| {BATCH_SIZE} requests at once | tokens | aggregate tok/s | vs vllm-cpp without speculation |")
    print("|---|---|---|---|")
    base = batch_results["vllm-cpp"]["tok_s"]
    for name, r in batch_results.items():
        print(f"| {name} | {r['tokens']} | {r['tok_s']:.1f} | {r['tok_s'] / base:.2f}x |")
    print()
    run_draft_table(args, prompts)


def run_draft_table(args, prompts):
    try:
        target, drafts = draft_files(args)
    except ImportError:
        print("llama_cpp is not importable (it makes the drafts): pass --draft or --peer-python, or the draft table "
              "is left out", file=sys.stderr)
        return
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(prompts, f)
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", "--draft-only", "--target", target,
                               "--draft", os.pathsep.join(drafts),
                               "--prompts", f.name, "--threads", str(args.threads), "--max-tokens",
                               str(args.max_tokens), "--rounds", str(args.rounds), "--draft-k", str(args.draft_k),
                               "--draft-vocab", args.draft_vocab],
                              check=True, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    print_draft_table(target, drafts, draft_vocabs(args), args.draft_k, json.loads(proc.stdout.strip().splitlines()[-1]), args.max_tokens,
                      args.rounds)


if __name__ == "__main__":
    main()
