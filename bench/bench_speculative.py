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

Usage:  python bench/bench_speculative.py [--model PATH] [--threads N] [--max-tokens N]
Prints a markdown table (ratios against vllm-cpp without speculation);
BENCHMARKS.md records a run.
"""

import argparse
import json
import os
import platform
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


def child(args):
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
    parser.add_argument("--only", choices=list(ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--batch-only", choices=list(BATCH_ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model or smollm2_path()
    if args.only or args.batch_only:
        child(args)
        return

    from vllm_cpp import Engine

    with Engine.load(args.model, max_model_len=2048) as engine:
        prompts = [engine.tokenize_chat({"messages": m}) for m in TASKS.values()]
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


if __name__ == "__main__":
    main()
