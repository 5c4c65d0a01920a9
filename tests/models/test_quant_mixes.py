"""SmolLM2 in the quantization mixes llama.cpp's own quantizer makes, run by
the engine and by llama.cpp on the very same files.

A user's Q4_K_M or Q5_K_M file is not all Q4_K / Q5_K: llama.cpp fills the
mix with Q5_0 / Q5_1 (or IQ4_NL) on matrices whose rows are not a multiple
of 256 (SmolLM2's 576-wide ones), with Q6_K / Q8_0 on some others. Each mix
below is made with ``llama_cpp.llama_model_quantize`` from the bundled Q4_1
GGUF (requantizing) and cached between runs (tests/support/llama_quantize.py); Q2_K
also "pure" (PURE_MIXES), since its mix of SmolLM2 holds no Q2_K tensor.

Checked per mix: the engine loads the file, and its 32 greedy ids on 8 of
the golden prompts (tests/golden/reference_smollm2.json, ids as llama.cpp
tokenizes them) equal llama.cpp's on the same file, except from a near-tie
on: where the two first differ, llama.cpp's own top-2 logit gap must be
small (tests/support/greedy_rule.py, the rule test_correctness.py applies against
the float reference). Each test prints the file's tensor types and where
(and at what gap) the engine left llama.cpp's path.

Near-tie threshold: greedy_rule's PEER_GAP_THRESHOLD (twice the one against
the float reference: both sides round here, and their errors add).
Measured on the bundled Q4_1 file itself (the "source" case below, kernels
that predate these types): 9 of the 12 golden prompts leave llama.cpp's
path, at gaps up to 0.40.

Skipped when llama_cpp (llama-cpp-python, not a test requirement) is not
importable.
"""

from __future__ import annotations

import collections
import json
import pathlib
import subprocess
import sys

import pytest

from greedy_rule import PEER_GAP_THRESHOLD, divergence, first_difference
from llama_quantize import quantized
from native_build import build_native_tests

llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (llama_cpp) to make and run the mixes")
gguf = pytest.importorskip("gguf")

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from make_reference_golden import llamacpp_greedy  # noqa: E402

MIXES = ("Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_NL",
         "IQ4_XS")
# SmolLM2's Q2_K mix holds no Q2_K tensor (its 1536-wide ffn_down gets
# Q3_K, the 576-wide matrices fall back to Q4_0), so llama.cpp's Q2_K blocks
# are also run "pure": every tensor in the mix's type where it fits.
PURE_MIXES = ("Q2_K",)
# The mixes of the codebook and ternary types (IQ1_S .. IQ3_S, TQ1_0,
# TQ2_0). SmolLM2's 576-wide matrices are no multiple of 256, so these
# types land on its 1536-wide ffn_down (the rest falls back to IQ4_NL,
# Q4_0, Q5_K ...). The IQ1/IQ2/IQ3 mixes need an importance matrix: a
# uniform one (llama_quantize's imatrix=True).
IQ_MIXES = ("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M")
TERNARY_MIXES = ("TQ1_0", "TQ2_0")
# MXFP4_MOE puts MXFP4 on expert tensors only (Q8_0 elsewhere); "pure"
# puts it on every matrix of this dense model (576 is a multiple of 32).
PURE_MIXES_MXFP4 = ("MXFP4_MOE",)
N_PROMPTS = 8
N_GREEDY = 32
PROMPTS = json.loads((GOLDEN / "reference_smollm2.json").read_text())["prompts"][:N_PROMPTS]


def _ids(field):
    return json.loads(field) if isinstance(field, str) else list(field)


def _tensor_types(path: pathlib.Path) -> dict:
    counts = collections.Counter(t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors)
    return dict(sorted(counts.items()))


@pytest.fixture(scope="module")
def probe():
    return str(build_native_tests() / "model_probe")


def _engine_greedy(probe, path, prompts):
    stdin = "".join(" ".join(map(str, p)) + "\n" for p in prompts)
    out = subprocess.run([probe, str(path), "greedy", str(N_GREEDY), "512"], input=stdin, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"the engine failed on {path.name}:\n{out.stderr[-2000:]}"
    return [[int(t) for t in line.split()] for line in out.stdout.strip().split("\n")]


def _llama_cpp_greedy(path, prompts):
    llm = llama_cpp.Llama(str(path), n_ctx=512, n_threads=2, logits_all=False, verbose=False)
    try:
        return [llamacpp_greedy(llm, p, N_GREEDY) for p in prompts]
    finally:
        llm.close()




_CASES = ([(None, False, False)] + [(m, False, False) for m in MIXES] + [(m, True, False) for m in PURE_MIXES]
          + [(m, False, True) for m in IQ_MIXES] + [(m, False, False) for m in TERNARY_MIXES]
          + [(m, True, False) for m in PURE_MIXES_MXFP4])


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mix, pure, imatrix", _CASES,
                         ids=["source", *MIXES, *(f"{m}-pure" for m in PURE_MIXES), *IQ_MIXES, *TERNARY_MIXES,
                              *(f"{m}-pure" for m in PURE_MIXES_MXFP4)])
def test_mix_matches_llama_cpp(probe, smollm2_path, mix, pure, imatrix, record_property):
    path = pathlib.Path(smollm2_path) if mix is None else quantized(smollm2_path, mix, pure, imatrix)
    prompts = [_ids(p["prompt_ids"]) for p in PROMPTS]
    theirs = _llama_cpp_greedy(path, prompts)
    ours = _engine_greedy(probe, path, prompts)
    assert len(ours) == len(prompts) and all(len(o) == N_GREEDY for o in ours)

    departures, failures = [], []
    for p, mine, (ids, gaps) in zip(PROMPTS, ours, theirs):
        step = first_difference(mine, ids)
        if step is None:
            continue
        departures.append(f"{p['name']}@{step} (gap {gaps[step]:.3f})")
        if divergence(mine, ids, gaps, PEER_GAP_THRESHOLD) is not None:
            failures.append(f"{p['name']}: first difference at step {step}: ours {mine[step]}, llama.cpp {ids[step]} "
                            f"with a top-2 gap of {gaps[step]:.3f}")
    types = _tensor_types(path)
    record_property("tensor_types", types)
    record_property("departures", departures)
    print(f"\n{path.stem}: {types}; {len(prompts) - len(departures)}/{len(prompts)} identical to llama.cpp"
          + (f"; departures (prompt@step, llama.cpp's gap): {', '.join(departures)}" if departures else ""))
    assert not failures, failures
