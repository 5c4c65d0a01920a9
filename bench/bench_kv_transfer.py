"""Time to first token of a ~2,000-token prompt (SmolLM2-135M-Instruct):
cold, from the local prefix cache, from a directory store (KV transfer,
SharedStorageConnector) and from Redis (RedisConnector), side by side in one
run, rounds interleaved.

    python bench/bench_kv_transfer.py            # --rounds N, --redis-url URL, --model PATH

Each mode serves the prompt with greedy max_tokens=1 (prefill plus one
sampled token) in an engine loaded beforehand (load time not counted):
cold: a fresh engine with no connector; local: the same engine again (its
prefix cache holds the prompt); disk and Redis: a fresh kv_consumer engine
whose store a kv_producer filled once before the rounds. Without
--redis-url a redis-server from the system's packages is started on a free
port (and the Redis mode is skipped when there is none). The directory
store lives in a temporary directory, read through the page cache.
"""

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from kv_stores import REDIS_MISSING, RedisServer  # noqa: E402
from vllm_cpp import Engine, SamplingParams  # noqa: E402
from vllm_cpp.models import smollm2_path  # noqa: E402

WORDS = "The quick brown fox jumps over the lazy dog while the river runs to the sea and birds sing. "
PROMPT = "".join(f"Line {i}: {WORDS}" for i in range(81))
MAX_MODEL_LEN = 4096


def ttft(engine):
    start = time.perf_counter()
    out = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1))
    return time.perf_counter() - start, out


def consumer_ttft(model, config):
    with Engine.load(model, max_model_len=MAX_MODEL_LEN, kv_transfer_config=config) as engine:
        seconds, _ = ttft(engine)
        kv = engine.stats()["kv_transfer"]
    if kv["blocks_loaded"] == 0 or kv["blocks_rejected"] or kv["warnings"]:
        raise RuntimeError(f"the consumer did not load the prefix: {kv}")
    return seconds


def fill(model, config):
    with Engine.load(model, max_model_len=MAX_MODEL_LEN, kv_transfer_config=config) as engine:
        _, out = ttft(engine)
    return out.prompt_tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a GGUF (default: the bundled SmolLM2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()
    model = args.model or smollm2_path()

    server = None
    redis_url = args.redis_url
    if redis_url is None and not REDIS_MISSING:
        server = RedisServer()
        redis_url = server.url
    try:
        with tempfile.TemporaryDirectory() as store:
            disk = {"kv_connector": "SharedStorageConnector", "kv_connector_extra_config": {"shared_storage_path": store}}
            redis = {"kv_connector": "RedisConnector", "kv_connector_extra_config": {"url": redis_url}}
            prompt_tokens = fill(model, {**disk, "kv_role": "kv_producer"})
            if redis_url:
                fill(model, {**redis, "kv_role": "kv_producer"})
            times = {"cold": [], "local prefix cache": [], "disk": [], "redis": []}
            for _ in range(args.rounds):
                with Engine.load(model, max_model_len=MAX_MODEL_LEN) as engine:
                    times["cold"].append(ttft(engine)[0])
                    times["local prefix cache"].append(ttft(engine)[0])
                times["disk"].append(consumer_ttft(model, {**disk, "kv_role": "kv_consumer"}))
                if redis_url:
                    times["redis"].append(consumer_ttft(model, {**redis, "kv_role": "kv_consumer"}))
    finally:
        if server:
            server.stop()

    cold = statistics.median(times["cold"])
    print(f"model {pathlib.Path(model).name}, prompt {prompt_tokens} tokens, {args.rounds} rounds (median)")
    print(f"{'mode':<20} {'TTFT s':>8} {'vs cold':>8}")
    for mode, samples in times.items():
        if not samples:
            print(f"{mode:<20} {'skipped':>8} ({REDIS_MISSING})")
            continue
        median = statistics.median(samples)
        print(f"{mode:<20} {median:8.3f} {cold / median:7.1f}x")


if __name__ == "__main__":
    main()
