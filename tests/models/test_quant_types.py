"""The tensor types of issue 40 end to end, without llama_cpp: a tiny llama
in each of IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0,
TQ2_0 and MXFP4, every matrix in that type, made by llama.cpp's quantizer
and committed with llama.cpp's greedy ids on it
(tests/golden/make_quant_type_goldens.py). The engine's greedy ids must
equal llama.cpp's except from a near-tie on (tests/support/greedy_rule.py's
PEER_GAP_THRESHOLD: both engines round activations to 8 bits, each its
own way). tests/models/test_quant_mixes.py does the same on SmolLM2 in
llama.cpp's mixes where llama_cpp is installed.
"""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from greedy_rule import PEER_GAP_THRESHOLD, divergence, first_difference
from native_build import build_native_tests

gguf = pytest.importorskip("gguf")

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden" / "quant_types"
GOLDENS = json.loads((GOLDEN_DIR / "goldens.json").read_text())
TYPES = tuple(GOLDENS["types"])


@pytest.fixture(scope="module")
def probe():
    return str(build_native_tests() / "model_probe")


def _engine_greedy(probe, path, prompts, n_new):
    stdin = "".join(" ".join(map(str, p)) + "\n" for p in prompts)
    out = subprocess.run([probe, str(path), "greedy", str(n_new), "64"], input=stdin, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"the engine failed on {path.name}:\n{out.stderr[-2000:]}"
    return [[int(t) for t in line.split()] for line in out.stdout.strip().split("\n")]


def test_goldens_cover_every_new_type():
    assert set(TYPES) == {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "TQ1_0", "TQ2_0", "MXFP4"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("qtype", TYPES)
def test_type_matches_llama_cpp(probe, qtype):
    case = GOLDENS["types"][qtype]
    path = GOLDEN_DIR / case["file"]
    matrices = [t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors if len(t.shape) == 2]
    assert matrices and set(matrices) == {qtype}, f"{path.name} holds {sorted(set(matrices))}"

    prompts = case["prompts"]
    ours = _engine_greedy(probe, path, [p["prompt_ids"] for p in prompts], GOLDENS["n_new"])
    assert len(ours) == len(prompts)
    failures, identical = [], 0
    for i, (mine, p) in enumerate(zip(ours, prompts)):
        step = first_difference(mine, p["ref_ids"])
        identical += step is None
        if divergence(mine, p["ref_ids"], p["ref_gaps"], PEER_GAP_THRESHOLD) is not None:
            failures.append(f"prompt {i}: step {step}: ours {mine[step]}, llama.cpp {p['ref_ids'][step]} "
                            f"(llama.cpp's top-2 gap {p['ref_gaps'][step]:.3f})")
    print(f"\n{qtype}: {identical}/{len(prompts)} identical to llama.cpp")
    assert not failures, failures
