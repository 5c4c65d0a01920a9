"""One engine in a process of its own, for the KV transfer tests: loads the
model with a kv_transfer_config, serves one greedy completion of a prompt
read from a file, closes the engine (its queued saves are written) and
prints one JSON line: the text and the engine stats.

    python kv_transfer_run.py MODEL CONFIG_JSON PROMPT_FILE MAX_TOKENS [MAX_MODEL_LEN]
"""

import json
import sys
import time

from vllm_cpp import Engine, SamplingParams


def main(model, config, prompt_file, max_tokens, max_model_len="4096"):
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    with Engine.load(model, max_model_len=int(max_model_len), kv_transfer_config=json.loads(config)) as engine:
        out = engine.complete(prompt, SamplingParams.greedy(max_tokens=int(max_tokens)))
        # The output may come back before its blocks are written: report the
        # counters once the save thread has caught up (closing waits too).
        deadline = time.monotonic() + 120
        while (engine.stats()["kv_transfer"] or {}).get("saves_pending") and time.monotonic() < deadline:
            time.sleep(0.05)
        stats = engine.stats()
    print(json.dumps({"text": out.text, "prompt_tokens": out.prompt_tokens, "stats": stats}))


if __name__ == "__main__":
    main(*sys.argv[1:])
