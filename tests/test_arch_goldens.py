"""Architectures on tiny random models made by transformers (no torch here).

The models and goldens are committed under tests/golden/tiny/ by
tests/golden/make_arch_goldens.py: per case ``<case>.gguf`` (F16 matrices
holding exactly the float16-rounded weights transformers ran, converted by
tests/hf_convert.py), ``<case>.json`` (3 prompts of random ids with
transformers' 32 greedy ids and top-2 gaps) and ``<case>_logits.npy``
(transformers' float32 logits for every position of prompt 0 + its greedy
ids). Cases: gemma (GeGLU, embedding scale), gemma2 (soft-capping of scores
and logits, sandwich norms, sliding window 8 on layer 0), gemma3 (q/k norms,
sliding window 8 on five of six layers with local RoPE base 10000), mistral
(sliding window 8 on every layer).

Each case runs through model_probe with the float32 KV cache (as
test_architectures.py, whose docstring has the reason):

* logits mode, prefill of 8 ids then one decode step per id: every row from
  position 7 on is within FLOAT_MAX (max) and FLOAT_MEAN (mean) of
  transformers'. Weights are the same floats on both sides, so only float32
  rounding and the order of sums separate the two (measured max ~1e-5 on
  logits of std 1.6-1.8);
* greedy, prefill chunks of 7 and 64: ids equal transformers', except where
  transformers' top-2 gap at the first difference is below twice the largest
  logit error of the teacher-forced run plus 1e-4 (greedy_check.py).
"""

import json
import pathlib
import subprocess

import numpy as np
import pytest

from greedy_check import greedy_failures
from native_build import build_native_tests

TINY = pathlib.Path(__file__).parent / "golden" / "tiny"
CASES = sorted(p.stem for p in TINY.glob("*.gguf"))
FLOAT_MAX, FLOAT_MEAN = 1e-3, 1e-4
LOGITS_CHUNK = 8
GREEDY_CHUNKS = (7, 64)


@pytest.fixture(scope="module", autouse=True)
def float32_kv_cache():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_CPP_KV_CACHE_DTYPE", "f32")
        yield


@pytest.fixture(scope="module")
def probe():
    return str(build_native_tests() / "model_probe")


def _logits(probe, model, ids, out):
    subprocess.run([probe, str(model), "logits", str(out), str(LOGITS_CHUNK)], input=" ".join(map(str, ids)) + "\n",
                   text=True, check=True, timeout=60, capture_output=True)
    return np.fromfile(out, dtype=np.float32)


def test_every_case_has_goldens():
    assert set(CASES) == {"gemma", "gemma2", "gemma3", "mistral"}
    for case in CASES:
        assert (TINY / f"{case}.json").is_file() and (TINY / f"{case}_logits.npy").is_file()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_tiny_model_matches_transformers(probe, tmp_path, case, record_property):
    golden = json.loads((TINY / f"{case}.json").read_text())
    model = TINY / f"{case}.gguf"
    want = np.load(TINY / f"{case}_logits.npy")[LOGITS_CHUNK - 1:]
    first = golden["prompts"][0]
    got = _logits(probe, model, first["prompt_ids"] + first["ref_ids"], tmp_path / "logits.bin")
    got = got.reshape(-1, want.shape[1])
    assert got.shape == want.shape
    err = np.abs(got - want)
    record_property("max_error", float(err.max()))
    print(f"\n{case}: max {err.max():.2e} mean {err.mean():.2e} logit std {want.std():.2f}")
    assert err.max() <= FLOAT_MAX, f"max logit error {err.max():.3g} at row {np.unravel_index(err.argmax(), err.shape)}"
    assert err.mean() <= FLOAT_MEAN, f"mean logit error {err.mean():.3g}"

    prompts = golden["prompts"]
    stdin = "".join(" ".join(map(str, p["prompt_ids"])) + "\n" for p in prompts)
    for chunk in GREEDY_CHUNKS:
        out = subprocess.run([probe, str(model), "greedy", str(len(first["ref_ids"])), str(chunk)], input=stdin,
                             text=True, check=True, timeout=60, capture_output=True)
        ours = [[int(t) for t in line.split()] for line in out.stdout.strip().split("\n")]
        failures = greedy_failures(prompts, ours, 2 * float(err.max()) + 1e-4)
        assert not failures, (f"chunk {chunk}", failures)
