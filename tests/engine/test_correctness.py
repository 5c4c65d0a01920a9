"""The engine's model forward against a float reference of the same GGUF.

Golden files: tests/golden/reference_smollm2.json and tf_*.npy, made by
tests/golden/make_reference_golden.py (numpy float64 forward over the
dequantized weights; prompt ids from llama-cpp-python's tokenizer).

Acceptance rule (from the foundation issue): for every prompt, the 32 greedy
ids equal the reference's, except where the reference's top-2 logit gap at
the first differing position is below 0.35. llama.cpp itself, which also
quantizes activations to 8 bits, departs from the reference at gaps up to
about 0.3 on these prompts.

Teacher-forced tolerance: at every position after the prompt, the engine's
logits at the reference's 16 most likely ids are within 1.25 of the
reference (max) and within 0.35 on average; the RMS difference over the
whole vocabulary at the last position is below 0.5. (llama.cpp's own
difference on these prompts: RMS 0.09-0.36, max 0.89.)
"""

import json
import pathlib
import subprocess

import numpy as np
import pytest

from suite_settings import TIMEOUT_FACTOR
from greedy_rule import greedy_failures
from native_build import build_native_tests

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"
REFERENCE = json.loads((GOLDEN / "reference_smollm2.json").read_text())
N_GREEDY = 32


@pytest.fixture(scope="module")
def probe(smollm2_path):
    build = build_native_tests()
    return [str(build / "model_probe"), smollm2_path]


def _ids(field):
    return json.loads(field) if isinstance(field, str) else list(field)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("chunk", [512, 5], ids=["one-prefill", "chunked-prefill"])
def test_greedy_matches_float_reference(probe, chunk):
    prompts = REFERENCE["prompts"]
    stdin = "\n".join(" ".join(map(str, _ids(p["prompt_ids"]))) for p in prompts) + "\n"
    out = subprocess.run(probe + ["greedy", str(N_GREEDY), str(chunk)], input=stdin, capture_output=True,
                         text=True, check=True, timeout=500 * TIMEOUT_FACTOR)
    lines = out.stdout.strip().split("\n")
    assert len(lines) == len(prompts)
    ours = [[int(t) for t in line.split()] for line in lines]
    refs = [dict(name=p["name"], ref_ids=_ids(p["ref_ids"]), ref_gaps=_ids(p["ref_gaps"])) for p in prompts]
    failures = greedy_failures(refs, ours)
    assert not failures, failures


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["chat", "code", "long_paragraph"])
def test_teacher_forced_logits_within_tolerance(probe, tmp_path, name):
    prompt = next(p for p in REFERENCE["prompts"] if p["name"] == name)
    prompt_ids, ref_ids = _ids(prompt["prompt_ids"]), _ids(prompt["ref_ids"])
    ids = prompt_ids + ref_ids
    out_file = tmp_path / "logits.bin"
    subprocess.run(probe + ["logits", str(out_file), str(len(prompt_ids))],
                   input=" ".join(map(str, ids)) + "\n", text=True, check=True, timeout=250 * TIMEOUT_FACTOR)
    top_ids = np.load(GOLDEN / f"tf_{name}_top16_ids.npy")
    top_vals = np.load(GOLDEN / f"tf_{name}_top16_vals.npy")
    last_ref = np.load(GOLDEN / f"tf_{name}_last_logits.npy")
    vocab = last_ref.shape[0]
    ours = np.fromfile(out_file, dtype=np.float32).reshape(-1, vocab)
    # Rows are positions len(prompt)-1 .. len(ids)-1.
    assert ours.shape[0] == len(ids) - len(prompt_ids) + 1
    first = len(prompt_ids) - 1
    errors = np.stack([np.abs(ours[r, top_ids[first + r]] - top_vals[first + r]) for r in range(ours.shape[0])])
    assert errors.max() < 1.25, f"max error {errors.max():.3f}"
    assert errors.mean() < 0.35, f"mean error {errors.mean():.3f}"
    rms = float(np.sqrt(np.mean((ours[-1] - last_ref) ** 2)))
    assert rms < 0.5, f"last-position RMS difference {rms:.3f}"

