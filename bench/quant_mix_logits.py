"""Teacher-forced logits of llama.cpp and of vllm-cpp on the same quantized files:
where (and at what llama.cpp top-2 gap) the greedy choices part, per mix.

For each mix (made from the bundled Q4_1 SmolLM2 by llama.cpp's quantizer,
tests/support/llama_quantize.py, cached), llama.cpp (llama-cpp-python) runs
32 greedy steps on each of 8 golden prompts and keeps every step's logits;
the engine (the native test program model_probe, built by
tests/support/native_build.py) is fed the same tokens (prompt as one
prefill, then one decode step per token) and writes its logits. Prints per
prompt max and mean |ours - llama.cpp| and the steps where the argmax
differs, with llama.cpp's top-2 gap there. Needs llama_cpp (run it with a
Python that has it, e.g. the reference environment).

    python bench/quant_mix_logits.py MODEL_PROBE SOURCE.gguf Q2_K:mix Q2_K:pure Q8_0:mix ...
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]
import llama_cpp  # noqa: E402
from llama_quantize import quantized  # noqa: E402

N_STEPS, N_PROMPTS = 32, 8


def llama_cpp_steps(llm, prompt):
    """llama.cpp's greedy tokens and each step's logits."""
    n_vocab = llm.n_vocab()
    llm.reset()
    llm.eval(prompt)
    tokens, rows = [], []
    for step in range(N_STEPS):
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(n_vocab,)).copy()
        rows.append(logits)
        tokens.append(int(logits.argmax()))
        if step + 1 < N_STEPS:
            llm.eval([tokens[-1]])
    return tokens, np.array(rows, dtype=np.float32)


def engine_rows(probe, path, prompt, tokens):
    with tempfile.NamedTemporaryFile(suffix=".f32") as out:
        ids = prompt + tokens[:-1]
        run = subprocess.run([probe, str(path), "logits", out.name, str(len(prompt))], input=" ".join(map(str, ids)) + "\n",
                             capture_output=True, text=True, check=True)
        del run
        return np.fromfile(out.name, dtype=np.float32).reshape(len(tokens), -1)


def main():
    probe, source, *mixes = sys.argv[1:]
    prompts = json.loads((ROOT / "tests" / "golden" / "reference_smollm2.json").read_text())["prompts"][:N_PROMPTS]
    for spec in mixes:
        mix, kind = spec.split(":")
        path = quantized(source, mix, kind == "pure")
        llm = llama_cpp.Llama(str(path), n_ctx=512, n_threads=2, verbose=False)
        cells = []
        for p in prompts:
            prompt = json.loads(p["prompt_ids"]) if isinstance(p["prompt_ids"], str) else list(p["prompt_ids"])
            tokens, theirs = llama_cpp_steps(llm, prompt)
            ours = engine_rows(probe, path, prompt, tokens)
            top2 = np.sort(theirs, axis=1)[:, -2:]
            parted = [f"@{i}(gap {top2[i, 1] - top2[i, 0]:.3f})" for i in np.nonzero(ours.argmax(1) != theirs.argmax(1))[0]]
            diff = np.abs(ours - theirs)
            cells.append(f"{p['name']} max {diff.max():.2f} mean {diff.mean():.3f} {' '.join(parted)}")
        llm.close()
        print(f"{mix} {kind}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
