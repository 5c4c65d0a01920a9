"""Replicas on Ray Serve (vllm_cpp/ray/), in one run: output tokens/s and
time to first token for 1 vs 2 engine replicas (one thread each), and for
the prefix-affinity router vs Serve's default (power of two choices) on a
shared-prefix workload, with each configuration's prefix-cache hit rate.

    python bench/bench_replicas.py [--prefixes 8 --requests-per-prefix 64 --concurrency 8 --rounds 1 --json PATH]

Needs the [ray] extra. A local Ray of 2 CPUs is started; each configuration
is deployed fresh (cold prefix caches), warmed by one short request per
replica, then sent the workload: ``--prefixes`` system prompts (about
``--prefix-words`` words each) x ``--requests-per-prefix`` chats with a
unique question, shuffled (the same order for every configuration),
``--concurrency`` streams at a time, ``--max-tokens`` greedy tokens each.
``--num-blocks`` bounds each replica's KV cache (default: room for half
the prefixes and one more) so that which replica a prefix goes to matters,
as it does on a machine whose cache is smaller than its working set. The hit
rate is the replicas' prefix-cache hits over queries (tokens), read through
the engine deployment's handle before and after the workload. With
``--rounds N`` the three configurations run N times, interleaved, and the
table has each configuration's median."""

import argparse
import asyncio
import json
import os
import platform
import random
import socket
import statistics
import sys
import time

import httpx

from vllm_cpp import __version__
from vllm_cpp.models import smollm2_path

TOPICS = ["astronomy", "baking", "chess", "dentistry", "economics", "falconry", "geology", "harbours",
          "irrigation", "jazz", "knitting", "lighthouses", "metallurgy", "navigation", "orchards", "printing"]


def system_prompt(index, words):
    topic = TOPICS[index % len(TOPICS)]
    body = " ".join("%s fact %d of the handbook on %s, kept for every answer." % (topic, n, topic)
                    for n in range(words // 10 + 1))
    return "You are assistant %d, an expert on %s. Read the handbook first. %s" % (index, topic, body)


def workload(prefixes, per_prefix, words, seed):
    requests = [(p, q) for p in range(prefixes) for q in range(per_prefix)]
    random.Random(seed).shuffle(requests)
    return [[{"role": "system", "content": system_prompt(p, words)},
             {"role": "user", "content": "Question %d: give one short tip." % q}] for p, q in requests]


async def one_stream(http, url, model, messages, max_tokens):
    start = time.perf_counter()
    first, tokens = None, 0
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    async with http.stream("POST", url + "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                raise RuntimeError(chunk["error"])
            if first is None and chunk.get("choices") and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - start
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return first, tokens


async def run_workload(url, model, requests, concurrency, max_tokens):
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 2)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        async def bounded(messages):
            async with gate:
                return await one_stream(http, url, model, messages, max_tokens)

        start = time.perf_counter()
        results = await asyncio.gather(*(bounded(messages) for messages in requests))
        wall = time.perf_counter() - start
    ttfts = [first for first, _ in results if first is not None]
    return {"wall_s": round(wall, 2), "output_tokens": sum(tokens for _, tokens in results),
            "output_tokens_per_s": round(sum(tokens for _, tokens in results) / wall, 1),
            "ttft_mean_s": round(statistics.mean(ttfts), 3), "ttft_p50_s": round(statistics.median(ttfts), 3),
            "ttft_p90_s": round(sorted(ttfts)[int(0.9 * (len(ttfts) - 1))], 3)}


def cache_counters(handle, replicas):
    """Summed prefix-cache (hits, queries) of all ``replicas`` replicas."""
    seen = {}
    for _ in range(100):
        answer = handle.engine_stats.remote().result(timeout_s=60)
        seen[answer["replica"]] = answer["stats"]
        if len(seen) == replicas:
            break
    if len(seen) != replicas:
        raise RuntimeError("reached %d of %d replicas for their stats" % (len(seen), replicas))
    return (sum(s["prefix_cache_hits"] for s in seen.values()), sum(s["prefix_cache_queries"] for s in seen.values()))


def measure(serve, model_path, args, port, replicas, router, requests):
    from vllm_cpp.ray.deployment import APP_NAME, build_application
    from vllm_cpp.server.api_server import ServerConfig

    engine = {"max_model_len": args.max_model_len, "num_blocks": args.num_blocks, "max_num_seqs": args.concurrency}
    app = build_application(model_path, engine, ServerConfig(model_name="bench"), replicas=replicas,
                            threads_per_replica=1, router=router)
    serve.run(app, name=APP_NAME, route_prefix="/")
    url = "http://127.0.0.1:%d" % port
    handle = serve.get_deployment_handle("VllmCppEngine", app_name=APP_NAME)
    try:
        warm = [[{"role": "user", "content": "Hello %d" % n}] for n in range(2 * replicas)]
        asyncio.run(run_workload(url, "bench", warm, replicas, 2))
        hits0, queries0 = cache_counters(handle, replicas)
        row = asyncio.run(run_workload(url, "bench", requests, args.concurrency, args.max_tokens))
        hits, queries = cache_counters(handle, replicas)
    finally:
        serve.delete(APP_NAME)
    row.update(replicas=replicas, threads_per_replica=1, router=router,
               prefix_cache_hit_rate=round((hits - hits0) / max(1, queries - queries0), 3))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefixes", type=int, default=8)
    parser.add_argument("--requests-per-prefix", type=int, default=64)
    parser.add_argument("--prefix-words", type=int, default=250, help="words of each system prompt (default 250)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--max-model-len", type=int, default=1024)
    parser.add_argument("--num-blocks", type=int, default=None,
                        help="KV blocks per replica (default: about half the prefixes' blocks plus the batch's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="runs of the three configurations, interleaved")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the results file here")
    parser.add_argument("--machine", default=None, help="the machine's description for the results file")
    args = parser.parse_args()

    import ray
    from ray import serve

    requests = workload(args.prefixes, args.requests_per_prefix, args.prefix_words, args.seed)
    if args.num_blocks is None:
        # SmolLM2's tokenizer: about 4.5 characters a token here; 16-token blocks. Room for
        # half the prefixes and one more, plus each running request's own blocks.
        prompt_blocks = -(-len(system_prompt(0, args.prefix_words)) // (4.5 * 16)) + 2
        args.num_blocks = int(prompt_blocks * (args.prefixes // 2 + 1) + 2 * args.concurrency)
    model_path = smollm2_path()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    rows = []
    try:
        for round_index in range(args.rounds):
            for replicas, router in ((1, "pow2"), (2, "pow2"), (2, "prefix")):
                row = measure(serve, model_path, args, port, replicas, router, requests)
                row["round"] = round_index
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        serve.shutdown()
        ray.shutdown()

    print("\nmedian of %d round(s)" % args.rounds)
    print("%-9s %-7s %10s %9s %9s %9s" % ("replicas", "router", "out tok/s", "TTFT mean", "TTFT p90", "hit rate"))
    for replicas, router in ((1, "pow2"), (2, "pow2"), (2, "prefix")):
        mine = [row for row in rows if row["replicas"] == replicas and row["router"] == router]
        print("%-9d %-7s %10.1f %9.3f %9.3f %9.3f" % tuple(
            [replicas, router] + [statistics.median(row[key] for row in mine) for key in
                                  ("output_tokens_per_s", "ttft_mean_s", "ttft_p90_s", "prefix_cache_hit_rate")]))
    if args.json:
        doc = {"comparison": "bench/bench_replicas.py: vllm-cpp on Ray Serve, 1 vs 2 engine replicas (one thread "
                             "each) and the prefix-affinity router vs Serve's default (power of two choices), "
                             "%d prefixes x %d requests, %d streams at a time, %d greedy tokens, %d KV blocks a "
                             "replica, %d round(s) interleaved" % (args.prefixes, args.requests_per_prefix,
                                                                  args.concurrency, args.max_tokens, args.num_blocks,
                                                                  args.rounds),
               "machine": args.machine or "%s, %d CPUs, load average %.1f at the end"
                          % (platform.processor() or platform.machine(), os.cpu_count(), os.getloadavg()[0]),
               "date": time.strftime("%Y-%m-%d"),
               "versions": {"vllm-cpp": __version__, "ray": ray.__version__, "python": platform.python_version()},
               "command": "python " + " ".join(["bench/bench_replicas.py"] + sys.argv[1:]),
               "rows": rows}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
