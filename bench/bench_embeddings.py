"""Embedding throughput: vllm-cpp against llama.cpp (llama-cpp-python's
``Llama.embed`` on the same GGUF) and sentence-transformers (CPU torch, float32,
on the directory the GGUF was converted from), texts/s and tokens/s at batch 1
and batch 32, for the random-weight bge-small-shaped BERT and
Qwen3-Embedding-0.6B-shaped decoder of bench/make_embedding_models.py.

Each engine runs in its own child process (its own threads, its own Python:
``PY_<ENGINE>`` names another interpreter, e.g. the reference environment for
llamacpp and sentence_transformers), the engines alternating in order round by
round; every round prints with the load average, and the summary gives each
engine's best and range and the ratios of the bests. All engines get the same
texts (seeded sentences of the vocabulary's words), tokenize them themselves
and normalise the vectors (the models' Normalize module); each reports the
tokens it ran (its own tokenizer's count).

  batch 1:  the texts one call each, in order;
  batch 32: the texts in calls of 32 (vllm-cpp: one ``Engine.embed`` of 32
            texts; llama.cpp: one ``embed`` of 32, in llama_decode calls of
            n_batch tokens (the BERT: 2048, llama-server's default, as an
            encoder's whole batch is one ubatch; the decoder: all 32 texts,
            ubatches of 512); sentence-transformers: ``encode(batch_size=32)``).

Usage:
    python bench/bench_embeddings.py [--rounds 2] [--shapes bge-small,qwen3-embedding-0.6b]
        [--engines vllm_cpp,llamacpp,sentence_transformers] [--type f16] [--out results.json]
    PY_LLAMACPP=/path/python PY_SENTENCE_TRANSFORMERS=/path/python python bench/bench_embeddings.py
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

THREADS = 2
BATCH = 32
#: shape -> (words per text, texts at batch 1, texts at batch 32 (a multiple of BATCH)).
WORKLOAD = {"bge-small": (120, 16, 64), "qwen3-embedding-0.6b": (20, 4, 32)}
#: The words the texts are made of: whole words of the bench BERT's vocabulary
#: (tests/golden/make_embed_goldens.BERT_VOCAB), so each is one WordPiece token.
WORDS = ("the of and to in is it that was for on with as by at this be are from or an hello world cat dog sat "
         "mat run text model embed vector search query document").split()


def texts_for(shape, count):
    import random

    words, _, _ = WORKLOAD[shape]
    rng = random.Random(f"{shape}-{count}")
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + "." for _ in range(count)]


def cpu_seconds():
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(run):
    """(wall seconds, CPU seconds of this process's threads) of run()."""
    start, cpu = time.perf_counter(), cpu_seconds()
    run()
    return time.perf_counter() - start, cpu_seconds() - cpu


class VllmCpp:
    def __init__(self, paths, shape):
        os.environ["VLLM_CPP_NUM_THREADS"] = str(THREADS)
        from vllm_cpp import Engine

        words = WORKLOAD[shape][0]
        self.engine = Engine.load(str(paths["gguf"]), max_model_len=512, max_num_seqs=BATCH,
                                  max_num_batched_tokens=BATCH * 4 * words)

    def embed(self, texts):
        return self.engine.embed(texts)

    def tokens(self, texts):
        return sum(len(self.engine.tokenize(t)) for t in texts)


class LlamaCpp:
    def __init__(self, paths, shape):
        from llama_cpp import Llama

        if shape.startswith("bge"):
            # An encoder runs each llama_decode as one ubatch, its sequences
            # attending over the whole ubatch (masked): llama-server's 2048
            # (16 of these texts) keeps that quadratic part small.
            n = ubatch = 2048
        else:
            # A decoder: the 32 texts in one llama_decode, in llama.cpp's default ubatches of 512.
            n, ubatch = BATCH * 4 * WORKLOAD[shape][0], 512
        self.llm = Llama(str(paths["gguf"]), embedding=True, n_ctx=n, n_batch=n, n_ubatch=ubatch, n_threads=THREADS,
                         n_threads_batch=THREADS, verbose=False)

    def embed(self, texts):
        return self.llm.embed(texts, normalize=True)

    def tokens(self, texts):
        return sum(len(self.llm.tokenize(t.encode("utf-8"))) for t in texts)


class SentenceTransformers:
    def __init__(self, paths, shape):
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(THREADS)
        self.st = SentenceTransformer(str(paths["hf"]), device="cpu", model_kwargs=dict(dtype=torch.float32))
        self.st.max_seq_length = 512

    def embed(self, texts):
        return self.st.encode(texts, batch_size=BATCH)

    def tokens(self, texts):
        return int(sum(int(self.st.tokenize([t])["attention_mask"].sum()) for t in texts))


ENGINES = {"vllm_cpp": VllmCpp, "llamacpp": LlamaCpp, "sentence_transformers": SentenceTransformers}


def child(engine_name, shape, kind, directory):
    import make_embedding_models

    paths = {"gguf": make_embedding_models.gguf_path(directory, shape, kind),
             "hf": make_embedding_models.hf_path(directory, shape)}
    engine = ENGINES[engine_name](paths, shape)
    _, n1, n32 = WORKLOAD[shape]
    one, many = texts_for(shape, n1), texts_for(shape, n32)
    engine.embed(many[:8])  # warm-up: first touch of the weights and buffers
    (t1, cpu1), (t32, cpu32) = timed(lambda: [engine.embed([t]) for t in one]), timed(
        lambda: [engine.embed(many[i:i + BATCH]) for i in range(0, len(many), BATCH)])
    tok1, tok32 = engine.tokens(one), engine.tokens(many)
    # CPU seconds beside wall seconds: on a busy machine a wall second
    # includes waits for a core (and a spinning thread pool burns CPU).
    return {"batch1": {"texts_per_s": n1 / t1, "tokens_per_s": tok1 / t1, "tokens_per_text": tok1 / n1,
                       "cpu_s_per_text": cpu1 / n1},
            "batch32": {"texts_per_s": n32 / t32, "tokens_per_s": tok32 / t32, "tokens_per_text": tok32 / n32,
                        "cpu_s_per_text": cpu32 / n32}}


def spread(values):
    return f"{max(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main():
    import make_embedding_models

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs=2, metavar=("ENGINE", "SHAPE"), help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--shapes", default=",".join(WORKLOAD))
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--type", default="f16", help="GGUF type made by make_embedding_models.py (f16, q8_0)")
    parser.add_argument("--dir", type=pathlib.Path, default=make_embedding_models.default_dir())
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write the rounds as JSON here")
    args = parser.parse_args()
    if args.only:
        print(json.dumps(child(args.only[0], args.only[1], args.type, args.dir)))
        return
    engines = args.engines.split(",")
    results = {}
    for shape in args.shapes.split(","):
        runs = results[shape] = {e: [] for e in engines}
        for r in range(args.rounds):
            for e in engines if r % 2 == 0 else engines[::-1]:
                python = os.environ.get("PY_" + e.upper(), sys.executable)
                out = subprocess.run([python, os.path.abspath(__file__), "--only", e, shape, "--type", args.type,
                                      "--dir", str(args.dir)], capture_output=True, text=True)
                if out.returncode:
                    raise SystemExit(f"bench_embeddings: {e} on {shape} failed:\n{out.stderr[-3000:]}")
                got = json.loads(out.stdout.strip().splitlines()[-1])
                got["load_average"] = os.getloadavg()[0]
                runs[e].append(got)
                print(f"{shape} round {r + 1} {e}: " + ", ".join(
                    f"{b} {got[b]['texts_per_s']:.2f} texts/s {got[b]['tokens_per_s']:.0f} tok/s "
                    f"({got[b]['tokens_per_text']:.0f} tok/text, {got[b].get('cpu_s_per_text', 0):.2f} CPU s/text)"
                    for b in ("batch1", "batch32")) +
                    f" (load average {got['load_average']:.1f})", flush=True)
        for b in ("batch1", "batch32"):
            best = {e: max(g[b]["texts_per_s"] for g in runs[e]) for e in engines}
            for e in engines:
                line = (f"{shape} {b} {e}: texts/s {spread([g[b]['texts_per_s'] for g in runs[e]])}, "
                        f"tokens/s {spread([g[b]['tokens_per_s'] for g in runs[e]])}")
                if e != "vllm_cpp" and "vllm_cpp" in best:
                    line += f"; vllm-cpp / {e} {best['vllm_cpp'] / best[e]:.2f}x"
                print(line)
    if args.out:
        args.out.write_text(json.dumps({"threads": THREADS, "batch": BATCH, "type": args.type, "workload": WORKLOAD,
                                        "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
