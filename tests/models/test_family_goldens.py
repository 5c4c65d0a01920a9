"""The dense families of issue 41 on tiny random models (no torch here).

The models and goldens are committed under tests/golden/tiny_families/ by
tests/golden/make_family_goldens.py (its docstring has what each case
exercises): per case ``<case>.hf/`` (the Hugging Face directory transformers
saved, float16; phi4-mini's config.json in the form Phi-4-mini publishes),
``<case>.gguf`` (that directory converted by llama.cpp's own
convert_hf_to_gguf.py), ``<case>.json`` (3 prompts of random ids with
transformers' 32 greedy ids and top-2 gaps, and llama.cpp's greedy ids and
gaps on the GGUF) and ``<case>_logits.npy`` (transformers' float32 logits for
every position of prompt 0 + its greedy ids). Cases: smollm3 (every 4th
layer without RoPE), olmo2 (post-norms only, whole-projection q/k norms),
granite (dense Granite 3's four multipliers), glm4 (sandwich norms, qkv bias,
fused gate_up, partial rotary over adjacent pairs), phi4-mini (Phi-4-mini's
config: partial rotary 0.75, LongRoPE, tied embeddings).

Both forms run through model_probe with the float32 KV cache, as
test_moe_goldens.py: teacher-forced logits within test_arch_goldens'
FLOAT_MAX (1e-3) / FLOAT_MEAN (1e-4) of transformers' (the weights are the
same float16 values on both sides), greedy ids (prefill chunks 7 and 64)
equal transformers' under the near-tie rule (greedy_rule.py), and the GGUF
form's greedy ids equal llama.cpp's under the peer rule. Bad input (a missing
tensor, contradictory metadata, a config.json option these forwards do not
run) is refused at load naming the file and the problem, and the process
goes on loading good models (test_moe_goldens._load_refused).
"""

import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

from greedy_rule import PEER_GAP_THRESHOLD, greedy_failures
from native_build import build_native_tests  # noqa: F401 (conftest builds it before the tests run)
from probe_fixtures import float32_kv_cache, model_probe_path  # noqa: F401 (float32_kv_cache: autouse)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_arch_goldens import LOGITS_CHUNK, _logits, _rewritten, assert_probe_refuses  # noqa: E402
from test_moe_goldens import (assert_matches_transformers, GREEDY_CHUNKS, _drop_safetensors_tensor, _greedy, _load_refused,  # noqa: E402
                              edited_hf_copy)

TINY = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_families"
SUPPORTED = ("smollm3", "olmo2", "granite", "glm4", "phi4-mini")
CASES = [c for c in SUPPORTED if (TINY / f"{c}.gguf").is_file()]
FORMS = {"gguf": lambda case: TINY / f"{case}.gguf", "hf": lambda case: TINY / f"{case}.hf"}
#: case -> (general.architecture, rope.dimension_count) as llama.cpp's converter wrote them
GGUF_SHAPE = {"smollm3": ("smollm3", 32), "olmo2": ("olmo2", 16), "granite": ("granite", 16),
              "glm4": ("glm4", 16), "phi4-mini": ("phi3", 24)}


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY / f"{case}.json").read_text())


def _need(case):
    if case not in CASES:
        pytest.skip(f"no {case} golden under tests/golden/tiny_families (make_family_goldens.py writes it)")


def test_goldens_present():
    assert CASES, "no family goldens under tests/golden/tiny_families (make_family_goldens.py writes them)"
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json", f"{case}.hf/model.safetensors"):
            assert (TINY / name).is_file(), name


@pytest.mark.parametrize("case", CASES)
def test_golden_files_agree_with_themselves(case):
    """The GGUF is the architecture the converter names, with the rotary
    width of the config; llama.cpp's greedy ids pass the near-tie rule
    against transformers' (the reference itself is sound); the logits are
    [prompt 0 + 32 ids, vocab]."""
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(str(TINY / f"{case}.gguf"))
    arch, rope_dim = GGUF_SHAPE[case]
    assert reader.fields["general.architecture"].contents() == arch

    def field(key, default=None):
        return reader.fields[f"{arch}.{key}"].contents() if f"{arch}.{key}" in reader.fields else default

    head_dim = field("attention.key_length", field("embedding_length") // field("attention.head_count"))
    assert field("rope.dimension_count", head_dim) == rope_dim
    golden = _golden(case)
    first = golden["prompts"][0]
    logits = np.load(TINY / f"{case}_logits.npy")
    assert logits.shape[0] == len(first["prompt_ids"]) + len(first["ref_ids"]) == len(first["prompt_ids"]) + 32
    llama = [p["llama_cpp_ids"] for p in golden["prompts"]]
    assert not greedy_failures(golden["prompts"], llama, 2 * golden["llama_cpp_logits_max_err"] + 1e-4)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", CASES)
def test_tiny_family_matches_transformers(probe, tmp_path, case, form, record_property):
    model = FORMS[form](case)
    want = np.load(TINY / f"{case}_logits.npy")[LOGITS_CHUNK - 1:]
    assert_matches_transformers(probe, model, _golden(case), want, tmp_path / "logits.bin", f"{case} ({form})",
                                record_property)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    """The GGUF form's greedy ids against llama.cpp's on the same file, under the peer rule."""
    prompts = [dict(p, ref_ids=p["llama_cpp_ids"], ref_gaps=p["llama_cpp_gaps"]) for p in _golden(case)["prompts"]]
    for chunk in GREEDY_CHUNKS:
        failures = greedy_failures(prompts, _greedy(probe, TINY / f"{case}.gguf", prompts, chunk), PEER_GAP_THRESHOLD)
        assert not failures, (f"chunk {chunk}", failures)


@pytest.mark.timeout(60)
def test_smollm3_nope_layer_matters(probe, tmp_path):
    """The 4th layer's lack of RoPE is what makes the output equal: the same
    directory with every layer rotating (no_rope_layers all 1) gives other logits."""
    _need("smollm3")
    target = edited_hf_copy(TINY / "smollm3.hf", tmp_path / "smollm3.hf", {"no_rope_layers": [1, 1, 1, 1]})
    first = _golden("smollm3")["prompts"][0]
    ids = first["prompt_ids"] + first["ref_ids"]
    want = np.load(TINY / "smollm3_logits.npy")[LOGITS_CHUNK - 1:]
    got = _logits(probe, target, ids, tmp_path / "logits.bin", []).reshape(want.shape)
    assert np.abs(got - want).max() > 0.05


BAD_GGUF = {
    "olmo2-post-ffn-norm-missing": ("olmo2", dict(drop_tensor="blk.1.post_ffw_norm.weight"),
                                    "tensor 'blk.1.post_ffw_norm.weight' is missing"),
    "olmo2-kv-heads-not-k-norm": ("olmo2", dict(set_values={"olmo2.attention.head_count_kv": 2}),
                                  "tensor 'blk.0.attn_k.weight' has shape [64, 64], expected [64, 32]"),
    "olmo2-olmo3-sliding-window": ("olmo2", dict(set_values={"olmo2.attention.sliding_window": 4096}),
                                   "olmo2.attention.sliding_window is not supported for olmo2 (OLMo 3's "
                                   "sliding-window layers are not implemented)"),
    "glm4-nextn-layers": ("glm4", dict(set_values={"glm4.nextn_predict_layers": 1}),
                          "glm4.nextn_predict_layers is not supported (next-token-prediction layers are not "
                          "implemented)"),
    "glm4-rope-sections": ("glm4", dict(set_values={"glm4.rope.dimension_sections": 8}),
                           "glm4.rope.dimension_sections (multimodal RoPE) is not supported"),
    "glm4-post-attention-norm-missing": ("glm4", dict(drop_tensor="blk.0.post_attention_norm.weight"),
                                         "tensor 'blk.0.post_attention_norm.weight' is missing"),
    "glm4-qkv-bias-missing": ("glm4", dict(drop_tensor="blk.1.attn_k.bias"), "tensor 'blk.1.attn_k.bias' is missing"),
    "glm4-rope-wider-than-head": ("glm4", dict(set_values={"glm4.rope.dimension_count": 48}),
                                  "unsupported head or RoPE dimension"),
    "glm4-ffn-length-not-fused-up": ("glm4", dict(set_values={"glm4.feed_forward_length": 96}),
                                     "tensor 'blk.0.ffn_up.weight' has shape [64, 256], expected [64, 192]"),
    "granite-negative-residual": ("granite", dict(set_values={"granite.residual_scale": -0.5}),
                                  "granite.residual_scale must not be negative"),
    "granite-zero-attention-scale": ("granite", dict(set_values={"granite.attention.scale": 0.0}),
                                     "granite.attention.scale must be positive"),
    "smollm3-ffn-down-missing": ("smollm3", dict(drop_tensor="blk.3.ffn_down.weight"),
                                 "tensor 'blk.3.ffn_down.weight' is missing"),
    "smollm3-step-key-on-gguf": ("smollm3", dict(set_values={"vllm.no_rope_layer_step": -1}),
                                 "vllm.no_rope_layer_step must not be negative"),
    "phi4-mini-factors-not-rope-width": ("phi4-mini", dict(set_values={"phi3.rope.dimension_count": 32}),
                                         "tensor 'rope_factors_long.weight' has 12 elements, expected 16"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_family_gguf_refused_at_load(probe, tmp_path, bad):
    case, edits, message = BAD_GGUF[bad]
    _need(case)
    path = _rewritten(TINY / f"{case}.gguf", tmp_path / f"{bad}.gguf", **edits)
    assert_probe_refuses(probe, path, message)
    _load_refused(path, message)


BAD_CONFIG = {
    "smollm3-irregular-nope-layers": ("smollm3", {"no_rope_layers": [1, 0, 1, 1]},
                                      "config.json 'no_rope_layers' [1,0,1,1] is not supported (only every n-th "
                                      "layer without RoPE: layer 3 breaks the pattern)"),
    "smollm3-nope-layers-count": ("smollm3", {"no_rope_layers": [1, 1, 0]},
                                  "config.json 'no_rope_layers' is not a list of 4 flags"),
    "smollm3-sliding-window": ("smollm3", {"use_sliding_window": True, "sliding_window": 8},
                               "config.json 'use_sliding_window' is true, which is not supported (only unset)"),
    "olmo2-attention-bias": ("olmo2", {"attention_bias": True},
                             "config.json 'attention_bias' is true, which is not supported (only unset)"),
    "olmo2-sliding-window": ("olmo2", {"sliding_window": 8},
                             "config.json 'sliding_window' is 8, which is not supported (only unset)"),
    "granite-mlp-bias": ("granite", {"mlp_bias": True},
                         "config.json 'mlp_bias' is true, which is not supported (only unset)"),
    "glm4-no-attention-bias": ("glm4", {"attention_bias": False},
                               "config.json 'attention_bias' is false, which is not supported (only true)"),
    "phi4-mini-partial-rotary": ("phi4-mini", {"partial_rotary_factor": 1.5},
                                 "config.json 'partial_rotary_factor' is not a number in (0, 1]"),
    "phi4-mini-factor-count": ("phi4-mini", {"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 16,
                                                              "long_factor": [1.0] * 16}},
                               "tensor 'rope_factors_long.weight' has 16 elements, expected 12"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_CONFIG))
def test_bad_family_config_json_refused_at_load(tmp_path, bad):
    case, changes, message = BAD_CONFIG[bad]
    _need(case)
    _load_refused(edited_hf_copy(TINY / f"{case}.hf", tmp_path / f"{case}.hf", changes), message)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case, hf_tensor, gguf_tensor", [
    ("olmo2", "model.layers.1.post_feedforward_layernorm.weight", "blk.1.post_ffw_norm.weight"),
    ("glm4", "model.layers.0.post_mlp_layernorm.weight", "blk.0.post_ffw_norm.weight"),
    ("olmo2", "model.layers.0.self_attn.k_norm.weight", "blk.0.attn_k_norm.weight"),
])
def test_hf_family_tensor_missing_refused(tmp_path, case, hf_tensor, gguf_tensor):
    _need(case)
    target = tmp_path / f"{case}.hf"
    shutil.copytree(TINY / f"{case}.hf", target)
    _drop_safetensors_tensor(target / "model.safetensors", hf_tensor)
    _load_refused(target, f"tensor '{gguf_tensor}' is missing")
