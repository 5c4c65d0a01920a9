"""Hugging Face model directories: SmolLM2 as a bf16 HF directory (made from
the bundled GGUF by tests/support/hf_convert.py, cached in ~/.cache/vllm-cpp-test)
runs the same greedy tokens as the same weights as a GGUF F16 file, through
the engine's forward (tests/model_probe.cpp); the C++ unit test of the
safetensors reader and the directory source; and every bad directory is a
ModelLoadError naming the file and the problem, with the engine still usable.
"""

import json
import os
import struct
import subprocess

import numpy as np
import pytest

import hf_convert
from tiny_models import byte_tokens
from native_build import build_native_tests
from vllm_cpp import Engine, ModelLoadError, SamplingParams

# Token ids of a few prompts (SmolLM2's vocabulary): "The capital of France is",
# a chat turn, code, and digits.
PROMPTS = [
    [504, 3575, 282, 4649, 314],
    [1, 4093, 198, 19556, 17, 1350, 359, 346, 47, 2, 198, 1, 520, 9531, 198],
    [564, 7119, 24, 92, 77, 216, 46, 52, 28, 198, 216, 216, 216, 216, 1212],
    [34, 32, 33, 36, 30, 216, 35, 37, 39],
]
GREEDY_TOKENS = 24


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.fixture(scope="module")
def smollm2_hf(smollm2_path):
    return hf_convert.cached(smollm2_path, "to-hf", "bf16")


@pytest.fixture(scope="module")
def smollm2_f16_gguf(smollm2_hf):
    return hf_convert.cached(smollm2_hf, "to-gguf", "f16")


def greedy(build, model, chunk=4):
    stdin = "\n".join(" ".join(map(str, p)) for p in PROMPTS) + "\n"
    result = subprocess.run([str(build / "model_probe"), model, "greedy", str(GREEDY_TOKENS), str(chunk)],
                            input=stdin, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return [list(map(int, line.split())) for line in result.stdout.splitlines()]


@pytest.mark.timeout(900)
def test_hf_directory_equals_gguf_f16(build, smollm2_hf, smollm2_f16_gguf):
    hf, gguf = greedy(build, smollm2_hf), greedy(build, smollm2_f16_gguf)
    assert len(hf) == len(PROMPTS)
    assert hf == gguf


@pytest.mark.timeout(600)
def test_safetensors_native(build):
    result = subprocess.run([str(build / "test_safetensors")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert result.stdout.strip().endswith(" 0 failed")


# -- bad directories through Engine.load --------------------------------------------

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 96,
    "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
    "vocab_size": 256, "tie_word_embeddings": True,
}


def tiny_tensors(vocab_rows=256):
    rng = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (vocab_rows, 64), "model.norm.weight": (64,)}
    layer = "model.layers.0."
    shapes.update({layer + "input_layernorm.weight": (64,), layer + "post_attention_layernorm.weight": (64,),
                   layer + "self_attn.q_proj.weight": (64, 64), layer + "self_attn.k_proj.weight": (32, 64),
                   layer + "self_attn.v_proj.weight": (32, 64), layer + "self_attn.o_proj.weight": (64, 64),
                   layer + "mlp.gate_proj.weight": (96, 64), layer + "mlp.up_proj.weight": (96, 64),
                   layer + "mlp.down_proj.weight": (64, 96)})
    return {name: ("F32", rng.standard_normal(shape).astype(np.float32) * 0.1) for name, shape in shapes.items()}


def tiny_dir(tmp_path, config=None, tensors=None, tokenizer=True):
    """A one-layer Llama directory; its tokenizer is the 256 byte tokens."""
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config or TINY_CONFIG))
    hf_convert.write_safetensors(str(model / "model.safetensors"), tensors or tiny_tensors())
    if tokenizer:
        alphabet = byte_tokens()
        doc = hf_convert.tokenizer_json(alphabet, [1] * len(alphabet), [], "gpt-2")
        (model / "tokenizer.json").write_text(json.dumps(doc))
    return model


def assert_usable(engine):
    out = engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=3))
    assert out.completion_tokens >= 1 and out.text


def load_fails(engine, path, *parts):
    with pytest.raises(ModelLoadError) as info:
        Engine.load(str(path))
    message = str(info.value)
    for part in parts:
        assert str(part) in message, message
    assert_usable(engine)
    return message


def test_directory_without_config_json(engine, tmp_path):
    load_fails(engine, tmp_path, tmp_path, "config.json is missing")


def test_unknown_architecture(engine, tmp_path):
    model = tiny_dir(tmp_path, {**TINY_CONFIG, "architectures": ["MambaForCausalLM"]})
    load_fails(engine, model, model, "'MambaForCausalLM'", "is not supported", "LlamaForCausalLM")


def test_index_naming_a_missing_shard(engine, tmp_path):
    model = tiny_dir(tmp_path)
    (model / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"model.embed_tokens.weight": "model.safetensors",
                        "model.norm.weight": "model-00002-of-00002.safetensors"}}))
    load_fails(engine, model, "model-00002-of-00002.safetensors", "missing")


def test_truncated_safetensors(engine, tmp_path):
    model = tiny_dir(tmp_path)
    data = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(data[:len(data) - 1000])
    load_fails(engine, model, model / "model.safetensors", "truncated")


def _rewrite_header(path, edit):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])


def test_header_with_lying_offsets(engine, tmp_path):
    model = tiny_dir(tmp_path)
    _rewrite_header(model / "model.safetensors",
                    lambda h: h["model.norm.weight"].update(data_offsets=[10 ** 9, 10 ** 9 + 256]))
    load_fails(engine, model, model / "model.safetensors", "'model.norm.weight'", "past the end")


def test_header_with_lying_shape(engine, tmp_path):
    model = tiny_dir(tmp_path)
    _rewrite_header(model / "model.safetensors", lambda h: h["model.norm.weight"].update(shape=[65]))
    load_fails(engine, model, "'model.norm.weight'", "260 bytes", "span 256")


def test_overlapping_tensors(engine, tmp_path):
    model = tiny_dir(tmp_path)
    # The norm's 256 bytes placed inside the embedding's range.
    _rewrite_header(model / "model.safetensors", lambda h: h["model.norm.weight"].update(data_offsets=[0, 256]))
    load_fails(engine, model, "'model.embed_tokens.weight' and 'model.norm.weight' overlap")


@pytest.mark.parametrize("dtype", ["F8_E4M3", "I8"])
def test_unsupported_dtype(engine, tmp_path, dtype):
    tensors = tiny_tensors()
    tensors["model.norm.weight"] = (dtype, np.zeros(64, np.uint8))
    model = tiny_dir(tmp_path, tensors=tensors)
    load_fails(engine, model, "'model.norm.weight'", "dtype " + dtype, "does not compute")


def test_missing_tensor(engine, tmp_path):
    tensors = tiny_tensors()
    del tensors["model.layers.0.mlp.up_proj.weight"]
    load_fails(engine, tiny_dir(tmp_path, tensors=tensors), "blk.0.ffn_up.weight", "is missing")


def test_tensor_of_the_wrong_shape(engine, tmp_path):
    tensors = tiny_tensors()
    tensors["model.layers.0.self_attn.k_proj.weight"] = ("F32", np.zeros((48, 64), np.float32))
    load_fails(engine, tiny_dir(tmp_path, tensors=tensors), "blk.0.attn_k.weight", "has shape [64, 48]")


def test_tokenizer_config_path_that_does_not_exist(engine, tmp_path):
    model = tiny_dir(tmp_path)
    with pytest.raises(ModelLoadError) as info:
        Engine.load(str(model), tokenizer_config_path=str(tmp_path / "nope.json"))
    assert "nope.json" in str(info.value) and "does not exist" in str(info.value)
    assert_usable(engine)


def test_directory_without_tokenizer_json(engine, tmp_path):
    model = tiny_dir(tmp_path, tokenizer=False)
    load_fails(engine, model, model, "tokenizer.json is missing")


@pytest.mark.timeout(60)
def test_tokenizer_json_fifo_is_refused_without_blocking(engine, tmp_path):
    model = tiny_dir(tmp_path, tokenizer=False)
    os.mkfifo(model / "tokenizer.json")
    load_fails(engine, model, model / "tokenizer.json", "not a regular file")


def test_tiny_directory_generates(engine, tmp_path):
    with Engine.load(str(tiny_dir(tmp_path)), max_model_len=64) as tiny:
        out = tiny.complete("ab", SamplingParams.greedy(max_tokens=4))
    assert out.prompt_tokens == 2 and out.completion_tokens == 4


def test_embedding_rows_past_the_tokenizer_are_dropped(engine, tmp_path):
    """Padding rows (the checkpoint's embedding is longer than tokenizer.json)
    are left out, so no sampled id falls outside the vocabulary."""
    model = tiny_dir(tmp_path, {**TINY_CONFIG, "vocab_size": 264}, tiny_tensors(vocab_rows=264))
    with Engine.load(str(model), max_model_len=64) as tiny:
        out = tiny.complete("ab", SamplingParams(max_tokens=16, temperature=1.0, seed=3))
    assert out.completion_tokens == 16
