"""Every architecture the Hugging Face loader maps (llama, mistral, qwen2,
qwen3), as a tiny random GGUF (tests/support/tiny_models.py) and as the HF directory
tests/support/hf_convert.py makes of it (float32, so nothing is rounded): the
forward gives the same logits and greedy ids from both forms. This checks
each architecture's table row (config keys, tensor names, biases, q/k
norms) and that the un-permuted q/k rows with halves RoPE equal llama.cpp's
permuted rows with adjacent-pair RoPE.
"""

import subprocess

import numpy as np
import pytest

import hf_convert
from native_build import build_native_tests
from tiny_models import write_tiny_model

PROMPTS = [[1, 2, 3, 4, 5, 6, 7, 8], [260, 100, 32, 299, 5]]


@pytest.fixture(scope="module")
def probe():
    return str(build_native_tests() / "model_probe")


def logits(probe, model, ids, out):
    subprocess.run([probe, str(model), "logits", str(out), "4"], input=" ".join(map(str, ids)) + "\n", text=True,
                   check=True, timeout=60, capture_output=True)
    return np.fromfile(out, dtype=np.float32)


def greedy(probe, model):
    stdin = "".join(" ".join(map(str, p)) + "\n" for p in PROMPTS)
    out = subprocess.run([probe, str(model), "greedy", "12", "3"], input=stdin, text=True, check=True, timeout=60,
                         capture_output=True)
    return out.stdout.split("\n")


@pytest.mark.parametrize("arch,hf_class", [("llama", "LlamaForCausalLM"), ("qwen2", "Qwen2ForCausalLM"),
                                           ("qwen3", "Qwen3ForCausalLM")])
@pytest.mark.parametrize("tied", [True, False])
def test_hf_form_equals_gguf_form(probe, tmp_path, arch, hf_class, tied):
    gguf_path = write_tiny_model(tmp_path / "tiny.gguf", arch, "F32", tied=tied, seed=7)
    hf_dir = tmp_path / "hf"
    hf_convert.gguf_to_hf(str(gguf_path), str(hf_dir), "f32")
    assert hf_convert.read_json(str(hf_dir), "config.json")["architectures"] == [hf_class]
    a = logits(probe, gguf_path, PROMPTS[0], tmp_path / "a.bin")
    b = logits(probe, hf_dir, PROMPTS[0], tmp_path / "b.bin")
    assert np.abs(a - b).max() <= 1e-4 * max(1.0, np.abs(a).max())
    assert greedy(probe, gguf_path) == greedy(probe, hf_dir)


def test_mistral_directory_runs_as_llama(probe, tmp_path):
    """MistralForCausalLM is llama.cpp's "llama" with the same rows."""
    gguf_path = write_tiny_model(tmp_path / "tiny.gguf", "llama", "F32", seed=3)
    hf_dir = tmp_path / "hf"
    hf_convert.gguf_to_hf(str(gguf_path), str(hf_dir), "f32")
    config = hf_convert.read_json(str(hf_dir), "config.json")
    config["architectures"], config["model_type"] = ["MistralForCausalLM"], "mistral"
    hf_convert.write_json(str(hf_dir), "config.json", config)
    assert greedy(probe, gguf_path) == greedy(probe, hf_dir)


def test_round_trip_back_to_gguf(probe, tmp_path):
    """HF -> GGUF re-permutes q/k: the round trip gives the original logits."""
    gguf_path = write_tiny_model(tmp_path / "tiny.gguf", "llama", "F32", seed=5)
    hf_dir = tmp_path / "hf"
    hf_convert.gguf_to_hf(str(gguf_path), str(hf_dir), "f32")
    back = tmp_path / "back.gguf"
    hf_convert.hf_to_gguf(str(hf_dir), str(back), "f32")
    a = logits(probe, gguf_path, PROMPTS[0], tmp_path / "a.bin")
    b = logits(probe, back, PROMPTS[0], tmp_path / "b.bin")
    np.testing.assert_array_equal(a, b)
