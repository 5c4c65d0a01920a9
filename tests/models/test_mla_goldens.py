"""Multi-head latent attention (deepseek2) on tiny random models (no torch here).

The models and goldens are committed under tests/golden/tiny_mla/ by
tests/golden/make_mla_goldens.py (its docstring has what each case
exercises): ``deepseek2-lite`` (no q_lora_rank, 26 layers, a leading dense
layer, shared experts, routed_scaling_factor), ``deepseek2`` (q_lora_rank,
YaRN with DeepSeek's mscale) and ``deepseek2-groups`` (group-limited
routing; llama.cpp and transformers score groups differently, so its HF form
is compared with transformers and its GGUF with llama.cpp), each as ``<case>.hf/`` (transformers' directory)
and ``<case>.gguf`` (llama.cpp's converter: kv_b split into attn_k_b /
attn_v_b), with transformers' greedy ids, gaps and float32 logits and
llama.cpp's greedy ids on the GGUF.

Both forms run through model_probe with the float32 KV cache, as
test_moe_goldens.py: teacher-forced logits within FLOAT_MAX / FLOAT_MEAN of
transformers' (test_arch_goldens.py's tolerance), greedy ids (prefill chunks
7 and 64) equal transformers' under the near-tie rule, and the GGUF form's
equal llama.cpp's under the peer rule. The KV cache stores per token and
layer only the latent row (kv_lora_rank + rope dim elements), measured from
the engine's stats(); a batch of requests gives each the ids it gets alone;
bad input (a latent rank that does not match the tensors, a missing tensor,
refused options) is refused at load naming file and problem, and the process
goes on loading good models.
"""

import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

from native_build import build_native_tests  # noqa: F401 (conftest builds it before the tests run)
from probe_fixtures import float32_kv_cache, model_probe_path  # noqa: F401 (float32_kv_cache: autouse)

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from greedy_rule import greedy_failures  # noqa: E402
from test_arch_goldens import LOGITS_CHUNK, _logits, _rewritten  # noqa: E402
from test_moe_goldens import (_drop_safetensors_tensor, _greedy, _load_refused, check_batch_invariance,  # noqa: E402
                              check_config_refused, check_gguf_refused, check_matches_llama_cpp,
                              check_matches_transformers)

TINY_MLA = GOLDEN_DIR / "tiny_mla"
SUPPORTED = ("deepseek2-lite", "deepseek2", "deepseek2-groups")
CASES = [c for c in SUPPORTED if (TINY_MLA / f"{c}.gguf").is_file()]
GOOD = TINY_MLA / "deepseek2.gguf"  # loads after every refusal
FORMS = {"gguf": lambda case: TINY_MLA / f"{case}.gguf", "hf": lambda case: TINY_MLA / f"{case}.hf"}


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY_MLA / f"{case}.json").read_text())


def test_goldens_present():
    if not CASES:
        pytest.skip("no MLA goldens under tests/golden/tiny_mla (make_mla_goldens.py writes them)")
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json"):
            assert (TINY_MLA / name).is_file(), name


# deepseek2-groups' GGUF routes by groups as llama.cpp reads its keys (a group
# scored by its best two experts, DeepSeek-V3's rule), transformers' DeepseekV2
# by its best one: its HF form equals transformers, its GGUF llama.cpp.
FORM_CASES = [(case, form) for case in CASES for form in sorted(FORMS) if case != "deepseek2-groups" or form == "hf"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case, form", FORM_CASES)
def test_tiny_mla_matches_transformers(probe, tmp_path, case, form, record_property):
    prompts = _golden(case)["prompts"]  # the logits file is on prompt 0 + its ref_ids
    check_matches_transformers(probe, FORMS[form](case), np.load(TINY_MLA / f"{case}_logits.npy"), prompts,
                               prompts[0], tmp_path, f"{case} ({form})", record_property)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    """The GGUF form's greedy ids against llama.cpp's on the same file, under
    the peer rule (llama.cpp rounds activations to float16 for F16 matrices)."""
    check_matches_llama_cpp(probe, TINY_MLA / f"{case}.gguf", _golden(case)["prompts"])


@pytest.mark.timeout(180)
def test_batch_invariance_with_latent_attention():
    """Each of 8 requests (prompts of different lengths, prefill and decode
    mixed) generates the same ids alone and all 8 submitted at once."""
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    check_batch_invariance(GOOD, len(np.load(TINY_MLA / "deepseek2_logits.npy")[0]))


BAD_GGUF = {
    # kv_lora_rank and the cached row's width changed together: the tensors say otherwise.
    "latent-rank-not-tensors": (dict(set_values={"deepseek2.attention.kv_lora_rank": 16,
                                                 "deepseek2.attention.key_length": 32,
                                                 "deepseek2.attention.value_length": 16}),
                                "tensor 'blk.0.attn_kv_a_mqa.weight' has shape [64, 48], expected [64, 32]"),
    "latent-rank-not-key-length": (dict(set_values={"deepseek2.attention.kv_lora_rank": 16}),
                                   "deepseek2.attention.key_length 48 is not deepseek2.attention.kv_lora_rank 16 + "
                                   "deepseek2.rope.dimension_count 16"),
    "latent-rank-missing": (dict(set_values={"deepseek2.attention.kv_lora_rank": None}),
                            "deepseek2.attention.kv_lora_rank is missing or not positive"),
    "k-b-missing": (dict(drop_tensor="blk.1.attn_k_b.weight"), "tensor 'blk.1.attn_k_b.weight' is missing"),
    "v-b-wrong-shape": (dict(drop_tensor="blk.0.attn_v_b.weight",
                             add_tensors={"blk.0.attn_v_b.weight": np.zeros((4, 16, 32))}),
                        "tensor 'blk.0.attn_v_b.weight' has shape [32, 16, 4], expected [32, 24, 4]"),
    "kv-a-norm-missing": (dict(drop_tensor="blk.0.attn_kv_a_norm.weight"),
                          "tensor 'blk.0.attn_kv_a_norm.weight' is missing"),
    "q-a-missing": (dict(drop_tensor="blk.1.attn_q_a.weight"), "tensor 'blk.1.attn_q_a.weight' is missing"),
    "groups-uneven": (dict(set_values={"deepseek2.expert_group_count": 3, "deepseek2.expert_group_used_count": 1}),
                      "deepseek2.expert_group_count 3 and expert_group_used_count 1 do not split 4 experts"),
    "dense-count-too-large": (dict(set_values={"deepseek2.leading_dense_block_count": 3}),
                              "deepseek2.leading_dense_block_count 3 is not between 0 and the block count 2"),
    "several-kv-heads": (dict(set_values={"deepseek2.attention.head_count_kv": 2}),
                         "deepseek2.attention.head_count_kv is 2, but latent attention caches one latent row"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_mla_gguf_refused_at_load(probe, tmp_path, bad):
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    edits, message = BAD_GGUF[bad]
    check_gguf_refused(probe, _rewritten(GOOD, tmp_path / f"{bad}.gguf", **edits), message, GOOD)


BAD_CONFIG = {
    "norm-topk": ({"norm_topk_prob": True}, "config.json 'norm_topk_prob' is true, which is not supported"),
    "groups-uneven": ({"topk_method": "group_limited_greedy", "n_group": 3, "topk_group": 1},
                      "deepseek2.expert_group_count 3 and expert_group_used_count 1 do not split 4 experts"),
    "topk-method": ({"topk_method": "noaux_tc"}, "config.json 'topk_method' is \"noaux_tc\", which is not supported"),
    "mscale-differs": ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                                            "original_max_position_embeddings": 64, "mscale": 1.0,
                                            "mscale_all_dim": 0.707}},
                       "config.json rope_scaling 'mscale' 1.0 and 'mscale_all_dim' 0.707 differ"),
    "latent-rank-not-tensors": ({"kv_lora_rank": 16},
                                "tensor 'blk.0.attn_kv_a_mqa.weight' has shape [64, 48], expected [64, 32]"),
    "attention-bias": ({"attention_bias": True}, "config.json 'attention_bias' is true, which is not supported"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_CONFIG))
def test_bad_mla_config_json_refused_at_load(tmp_path, bad):
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    changes, message = BAD_CONFIG[bad]
    check_config_refused(TINY_MLA / "deepseek2.hf", tmp_path, changes, message, GOOD)


@pytest.mark.timeout(60)
def test_hf_kv_b_missing_refused(tmp_path):
    """A checkpoint without one layer's kv_b_proj names the tensor the loader
    makes of it."""
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    target = tmp_path / "deepseek2.hf"
    shutil.copytree(TINY_MLA / "deepseek2.hf", target)
    _drop_safetensors_tensor(target / "model.safetensors", "model.layers.1.self_attn.kv_b_proj.weight")
    _load_refused(target, "tensor 'blk.1.attn_k_b.weight' is missing", GOOD)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kv_dtype, element_bytes", [("f32", 4), ("f16", 2)])
def test_cache_bytes_per_token_are_the_latent_row(monkeypatch, kv_dtype, element_bytes):
    """The KV cache holds per token and layer only the latent and the rotary
    key part: its bytes (stats(), every group) over its token slots and
    layers are (kv_lora_rank + rope dim) elements, not the heads' K and V."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    config = _golden("deepseek2")["config"]
    latent_row = config["kv_lora_rank"] + config["qk_rope_head_dim"]
    monkeypatch.setenv("VLLM_CPP_KV_CACHE_DTYPE", kv_dtype)
    with vllm_cpp.Engine.load(str(GOOD), max_model_len=64) as engine:
        stats = engine.stats()
    per_token_and_layer = [g["bytes"] / (g["blocks_total"] * stats["block_size"] * g["num_layers"])
                           for g in stats["kv_cache_groups"]]
    assert per_token_and_layer == [latent_row * element_bytes] * len(stats["kv_cache_groups"])
    assert sum(g["bytes"] for g in stats["kv_cache_groups"]) == stats["kv_cache_bytes"]
    # The expanded form would hold heads x (qk_nope + rope + v_head_dim) elements.
    expanded = config["num_attention_heads"] * (config["qk_nope_head_dim"] + config["qk_rope_head_dim"] +
                                                config["v_head_dim"])
    assert latent_row * 4 < expanded


@pytest.mark.timeout(120)
def test_prefix_cache_hit_gives_the_same_ids():
    """A request whose prompt's first blocks are cached (another request had
    the same prefix) generates the ids it generates in an engine without
    prefix caching, where every latent row is computed."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    if "deepseek2" not in CASES:
        pytest.skip("no deepseek2 golden")
    rng = np.random.default_rng(7)
    vocab = len(np.load(TINY_MLA / "deepseek2_logits.npy")[0])
    prefix = [int(t) for t in rng.integers(0, vocab, size=40)]
    first, second = prefix + [1, 2, 3], prefix + [4, 5, 6, 7]
    params = vllm_cpp.SamplingParams.greedy(max_tokens=24, ignore_eos=True)
    with vllm_cpp.Engine.load(str(GOOD), max_model_len=128, prefix_caching=vllm_cpp.Toggle.OFF) as engine:
        want = list(engine.complete(second, params).token_ids)
    with vllm_cpp.Engine.load(str(GOOD), max_model_len=128) as engine:
        engine.complete(first, params)
        got = list(engine.complete(second, params).token_ids)
        hits = engine.stats()["prefix_cache_hits"]
    assert hits >= 32  # the two full blocks of the shared prefix
    assert got == want


# Measured: f16 0.004 (lite) and 0.003; i8 0.05 on the 2-layer model (on the
# 26-layer lite model int8's rounding grows through the layers to 0.7).
ROUNDED = [("deepseek2-lite", "f16", 0.01), ("deepseek2", "f16", 0.01), ("deepseek2", "i8", 0.1)]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case, kv_dtype, max_error", [r for r in ROUNDED if r[0] in CASES])
def test_rounded_latent_rows(probe, tmp_path, monkeypatch, case, kv_dtype, max_error):
    """With the latent rows stored in half precision (the default) or int8,
    the GGUF form's logits stay within ``max_error`` of transformers' and its
    greedy ids equal them under the near-tie rule at twice the measured
    error (the cache's rounding is the only difference from the float32 runs
    above)."""
    monkeypatch.setenv("VLLM_CPP_KV_CACHE_DTYPE", kv_dtype)
    prompts = _golden(case)["prompts"]
    first = prompts[0]
    want = np.load(TINY_MLA / f"{case}_logits.npy")[LOGITS_CHUNK - 1:]
    got = _logits(probe, TINY_MLA / f"{case}.gguf", first["prompt_ids"] + first["ref_ids"], tmp_path / "l.bin", [])
    err = float(np.abs(got.reshape(want.shape) - want).max())
    print(f"\n{case} {kv_dtype}: max logit error {err:.4f}")
    assert err <= max_error
    for chunk in (7, 64):
        failures = greedy_failures(prompts, _greedy(probe, TINY_MLA / f"{case}.gguf", prompts, chunk), 2 * err + 1e-4)
        assert not failures, (kv_dtype, f"chunk {chunk}", failures)
