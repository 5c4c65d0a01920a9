"""KV cache memory of Gemma 3 270M with sliding-window layers keeping only
their window's blocks, at a long context.

Gemma 3 270M has 18 layers: 15 sliding (window 512) and 3 global; one KV
head of 256 dims, so a token takes 1 KiB of K/V per layer in the default
half-precision cache. One run, one engine (default sizing: max_model_len
32768, max_num_seqs 8, VLLM_CPP_KV_CACHE_MB budget):

* reserved: kv_cache_bytes and each KV cache group's blocks, and how many
  tokens of context the full-attention group can hold; "before" is what the
  single-group cache reserved under the same budget (the sizing rule it
  had: every layer in one pool of max_num_seqs sequences within the budget);
* in use at 4,096 tokens of context: a 4,096-token prompt is prefilled and
  decoded; blocks_used of each group is read from Engine.stats() during
  decode. "before" is the same sequence with every layer holding every
  block (the single group's table covered all positions in all layers).

Usage:  python bench/bench_sliding_window_kv.py [--model PATH] [--context N]
Prints a markdown report; BENCHMARKS.md records a run.
"""

import argparse
import math
import os

from vllm_cpp import Engine, SamplingParams

MAX_MODEL_LEN = 32768  # Gemma 3 270M's context length


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--context", type=int, default=4096)
    args = parser.parse_args()
    if args.model is None:
        from vllm_cpp.models import gemma3_path

        args.model = gemma3_path()

    mib = 2**20
    with Engine.load(args.model, max_model_len=MAX_MODEL_LEN) as eng:
        stats = eng.stats()
        groups = {g["kind"]: g for g in stats["kv_cache_groups"]}
        full, sliding = groups["full_attention"], groups["sliding_window"]
        n_layers = full["num_layers"] + sliding["num_layers"]
        bs = stats["block_size"]
        block_layer_bytes = full["bytes"] // (full["blocks_total"] * full["num_layers"])  # one block of one layer
        # The single-group sizing under the same budget: all layers per
        # block, max_num_seqs (8) sequences of max_model_len, at least one.
        budget = int(os.environ.get("VLLM_CPP_KV_CACHE_MB", "1024")) * mib
        one_seq = math.ceil(MAX_MODEL_LEN / bs)
        before_blocks = max(one_seq, min(budget // (block_layer_bytes * n_layers), one_seq * 8))

        # A prompt of `context` tokens: token ids of ordinary text, repeated.
        ids = eng.tokenize("The quick brown fox jumps over the lazy dog. " * 2000)[: args.context]
        seen = []

        def record(event):
            if not event.finished:
                g = {x["kind"]: x for x in eng.stats()["kv_cache_groups"]}
                seen.append((g["full_attention"]["blocks_used"], g["sliding_window"]["blocks_used"]))

        eng.complete_stream(ids, SamplingParams.greedy(max_tokens=8, ignore_eos=True), record)

    full_used = max(f for f, _ in seen)
    sliding_used = max(s for _, s in seen)
    after_bytes = (full_used * full["num_layers"] + sliding_used * sliding["num_layers"]) * block_layer_bytes
    before_bytes = full_used * n_layers * block_layer_bytes
    print(f"Gemma 3 270M ({full['num_layers']} global + {sliding['num_layers']} sliding layers, "
          f"window {sliding['sliding_window']}), block_size {bs}, f16 KV cache\n")
    print("| | before (one group) | after (KV cache groups) |")
    print("|---|---:|---:|")
    print(f"| reserved `kv_cache_bytes` | {before_blocks * n_layers * block_layer_bytes / mib:.0f} MiB | {stats['kv_cache_bytes'] / mib:.0f} MiB "
          f"(full {full['bytes'] / mib:.0f} + sliding {sliding['bytes'] / mib:.0f}) |")
    print(f"| blocks reserved | {before_blocks} x {n_layers} layers | full {full['blocks_total']} x "
          f"{full['num_layers']}, sliding {sliding['blocks_total']} x {sliding['num_layers']} |")
    print(f"| tokens of context the reservation holds | {before_blocks * bs:,} | {full['blocks_total'] * bs:,} |")
    print(f"| blocks in use at {len(ids):,} tokens (decode) | {full_used} per layer, all {n_layers} layers | "
          f"full {full_used}, sliding {sliding_used} (window: {math.ceil(sliding['sliding_window'] / bs)}) |")
    print(f"| K/V bytes in use at {len(ids):,} tokens | {before_bytes / mib:.1f} MiB | {after_bytes / mib:.1f} MiB "
          f"({before_bytes / after_bytes:.1f}x less) |")


if __name__ == "__main__":
    main()
