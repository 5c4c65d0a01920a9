"""LoRA adapters on the engine: batches mixing adapters and the base model,
max_loras eviction, the prefix cache keyed by adapter, and bad adapters.

The base model is the tiny llama of tests/golden/tiny_lora (its HF form)
with its PEFT adapter (see test_lora_goldens.py for the comparison with
transformers) and three variants of it (every B matrix scaled by -1, 0.5
and 2: same shapes, other outputs), written by tests/support/lora_files.py.
"""

import dataclasses
import pathlib
import shutil

import numpy as np
import pytest

from lora_files import read_safetensors, scaled_variant, write_adapter
from request_batches import completed_ids

vllm_cpp = pytest.importorskip("vllm_cpp")
from vllm_cpp import InvalidArgumentError, LoRARequest, ModelLoadError  # noqa: E402

TINY_LORA = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_lora"
BASE = TINY_LORA / "llama.hf"
pytestmark = pytest.mark.skipif(not (TINY_LORA / "llama.json").is_file(), reason="no tests/golden/tiny_lora goldens")
N_NEW = 24
GREEDY = vllm_cpp.SamplingParams.greedy(max_tokens=N_NEW, ignore_eos=True)


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    """Four LoRARequests of the same shapes with different outputs."""
    root = tmp_path_factory.mktemp("adapters")
    out = [LoRARequest("golden", 1, str(TINY_LORA / "llama.lora"))]
    for i, factor in enumerate((-1.0, 0.5, 2.0), start=2):
        out.append(LoRARequest(f"scaled{i}", i, str(scaled_variant(TINY_LORA / "llama.lora", root / f"a{i}", factor))))
    return out


@pytest.fixture(scope="module")
def prompts():
    rng = np.random.default_rng(3)
    return [[int(t) for t in rng.integers(0, 299, size=n)] for n in (3, 5, 8, 11, 13, 17, 21, 40)]


def _load(**options):
    options = dict(dict(enable_lora=True, max_loras=4, max_model_len=128), **options)
    return vllm_cpp.Engine.load(str(BASE), **options)


@pytest.fixture(scope="module")
def reference(adapters, prompts):
    """Each (prompt, adapter or None)'s ids, run alone on a fresh engine per adapter."""
    out = {}
    for lora in [None] + adapters:
        with _load() as engine:
            for i, p in enumerate(prompts):
                out[i, lora and lora.lora_int_id] = list(engine.complete(p, GREEDY, lora_request=lora).token_ids)
    return out


def _together(engine, jobs):
    """Submits every (prompt, lora) at once; their ids in order."""
    return completed_ids(vllm_cpp, [engine.submit(p, GREEDY, lambda *event: None, lora_request=lora)
                                    for p, lora in jobs], N_NEW)


@pytest.mark.timeout(120)
def test_adapters_change_the_output(reference, adapters, prompts):
    for i in range(len(prompts)):
        outputs = [reference[i, None]] + [reference[i, a.lora_int_id] for a in adapters]
        assert len({tuple(o) for o in outputs}) >= 4, outputs  # the base and most adapters differ


@pytest.mark.timeout(120)
def test_batch_of_8_over_3_adapters_and_the_base_equals_each_alone(reference, adapters, prompts):
    """Batch invariance per adapter: 8 requests (prefill and decode tokens
    mixing) over the base model and 3 adapters, all at once."""
    plan = [None, adapters[0], adapters[1], adapters[2]] * 2
    with _load() as engine:
        steps = engine.stats()["model_steps"]
        got = _together(engine, list(zip(prompts, plan)))
        assert engine.stats()["model_steps"] - steps < len(prompts) * N_NEW  # they shared steps
    assert got == [reference[i, lora and lora.lora_int_id] for i, lora in enumerate(plan)]


@pytest.mark.timeout(180)
def test_max_loras_2_with_4_adapters_loads_and_evicts(reference, adapters, prompts):
    with _load(max_loras=2) as engine:
        for lora in adapters:
            engine.add_lora(lora)
        stats = engine.stats()["lora"]
        assert stats["registered"] == 4 and stats["resident"] == 2 and stats["evictions"] == 2
        for _round in range(2):  # in turn, each needs a load after the first two
            for lora in adapters:
                assert list(engine.complete(prompts[2], GREEDY, lora_request=lora).token_ids) == \
                    reference[2, lora.lora_int_id]
        # All four at once: at most two adapters run together, the others wait their turn.
        plan = adapters * 2
        assert _together(engine, list(zip(prompts, plan))) == \
            [reference[i, lora.lora_int_id] for i, lora in enumerate(plan)]
        stats = engine.stats()["lora"]
    assert stats["resident"] <= 2
    assert stats["loads"] > 8 and stats["evictions"] >= stats["loads"] - 2, stats
    assert stats["max_loras"] == 2


@pytest.mark.timeout(120)
def test_prefix_cache_never_shares_blocks_between_adapters(reference, adapters, prompts):
    """A 40-id prompt fills 2 blocks: run by the base model then by an
    adapter, the adapter must not hit the base's blocks (its K/V differ);
    the same adapter again must hit its own."""
    long_prompt = prompts[-1]
    with _load() as engine:
        def hits():
            return engine.stats()["prefix_cache_hits"]

        assert list(engine.complete(long_prompt, GREEDY).token_ids) == reference[7, None]
        before = hits()
        got = list(engine.complete(long_prompt, GREEDY, lora_request=adapters[0]).token_ids)
        assert hits() == before, "an adapter's request hit the base model's blocks"
        assert got == reference[7, 1]
        got = list(engine.complete(long_prompt, GREEDY, lora_request=adapters[1]).token_ids)
        assert hits() == before, "an adapter's request hit another adapter's blocks"
        assert got == reference[7, 2]
        assert list(engine.complete(long_prompt, GREEDY, lora_request=adapters[0]).token_ids) == reference[7, 1]
        assert hits() > before  # its own blocks are cached
        again = hits()
        assert list(engine.complete(long_prompt, GREEDY).token_ids) == reference[7, None]
        assert hits() > again


@pytest.mark.timeout(60)
def test_llm_generate_takes_one_lora_request_per_prompt(reference, adapters, prompts):
    with vllm_cpp.LLM(str(BASE), enable_lora=True, max_loras=2, max_model_len=128) as llm:
        outputs = llm.generate(prompts[:3], GREEDY, lora_request=[None, adapters[0], adapters[1]])
        assert [list(o.outputs[0].token_ids) for o in outputs] == \
            [reference[0, None], reference[1, 1], reference[2, 2]]
        one = llm.generate(prompts[:2], GREEDY, lora_request=adapters[2])
        assert [list(o.outputs[0].token_ids) for o in one] == [reference[0, 3], reference[1, 3]]
        with pytest.raises(vllm_cpp.InvalidConfigurationError, match="2 entries for 3 prompts"):
            llm.generate(prompts[:3], GREEDY, lora_request=[None, adapters[0]])


# -- registration and bad adapters ---------------------------------------------

def _golden_tensors():
    return read_safetensors(TINY_LORA / "llama.lora" / "adapter_model.safetensors")


def _bad_adapter(kind, directory):
    """A broken copy of the golden adapter (or another model's adapter)."""
    golden = TINY_LORA / "llama.lora"
    if kind == "other_base_shapes":  # qwen3's adapter: head_dim 32, not 16
        return TINY_LORA / "qwen3.lora"
    if kind == "gguf_other_architecture":
        return TINY_LORA / "qwen3-lora.gguf"
    if kind == "gguf_truncated":
        path = directory.parent / "truncated-lora.gguf"
        path.write_bytes((TINY_LORA / "llama-lora.gguf").read_bytes()[:-500])
        return path
    if kind == "gguf_not_an_adapter":
        return TINY_LORA / "llama.gguf"
    if kind == "truncated":
        shutil.copytree(golden, directory)
        path = directory / "adapter_model.safetensors"
        path.write_bytes(path.read_bytes()[:-100])
        return directory
    if kind == "no_directory":
        return directory / "absent"
    tensors = _golden_tensors()
    config = {}
    if kind == "missing_tensor":
        del tensors["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"]
    elif kind == "unknown_module_tensor":
        tensors["base_model.model.lm_head.lora_A.weight"] = np.zeros((8, 64))
        tensors["base_model.model.lm_head.lora_B.weight"] = np.zeros((300, 8))
        config["target_modules"] = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    elif kind == "unknown_target_module":
        config["target_modules"] = ["q_proj", "embed_tokens"]
    elif kind == "listed_module_without_tensors":
        tensors = {k: v for k, v in tensors.items() if ".v_proj." not in k}
        config["target_modules"] = ["q_proj", "v_proj"]
    elif kind == "modules_to_save":
        config["modules_to_save"] = ["lm_head"]
    elif kind == "dora":
        config["use_dora"] = True
    elif kind == "rank_mismatch":
        config["r"] = 4
    elif kind == "layer_past_the_model":
        tensors = {k.replace("layers.1.", "layers.7."): v for k, v in tensors.items()}
    return write_adapter(directory, tensors, **config)


#: kind -> what the error must say (besides the adapter's name).
BAD = {
    "other_base_shapes": r"k_proj\.lora_B\.weight' \[64, 4\] does not match the base model's projection of layer 0 "
                         r"\(rows \[32\], input size 64\)",
    "truncated": r"adapter_model\.safetensors",
    "gguf_other_architecture": r"the adapter is for architecture 'qwen3', the base model is 'llama'",
    "gguf_truncated": r"truncated-lora\.gguf",
    "gguf_not_an_adapter": r"is not a LoRA adapter GGUF",
    "no_directory": r"adapter_config\.json' does not exist",
    "missing_tensor": r"layers\.1\.mlp\.down_proj\.lora_B\.weight' is missing",
    "unknown_module_tensor": r"lm_head\.lora_A\.weight' is not in a decoder layer",
    "unknown_target_module": r"target module 'embed_tokens' is not supported",
    "listed_module_without_tensors": r"target module 'v_proj' has no lora_A/lora_B tensors",
    "modules_to_save": r"modules_to_save is not supported",
    "dora": r"use_dora is not supported",
    "rank_mismatch": r"do not have the adapter's rank r = 4",
    "layer_past_the_model": r"layer 7 is past the base model's 2 layers",
}


@pytest.fixture(scope="module")
def engine():
    with _load(max_loras=2, max_lora_rank=8) as e:
        yield e


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_adapter_is_refused_naming_it(engine, tmp_path, kind, prompts):
    path = _bad_adapter(kind, tmp_path / kind)
    with pytest.raises(ModelLoadError, match=f"LoRA adapter 'bad-{kind}': .*" + BAD[kind]):
        engine.add_lora(LoRARequest(f"bad-{kind}", 50, str(path)))
    assert all(a["id"] != 50 for a in engine.list_loras())  # nothing registered
    with pytest.raises(InvalidArgumentError, match="LoRA adapter id 50 is not registered"):
        engine.complete(prompts[0], _with_id(50))
    # The engine goes on serving the base model and good adapters.
    assert len(engine.complete(prompts[0], GREEDY, lora_request=LoRARequest("golden", 1, str(TINY_LORA / "llama.lora"))).token_ids) == N_NEW


def _with_id(lora_int_id):
    return dataclasses.replace(GREEDY, request_fields={"lora_int_id": lora_int_id})


@pytest.mark.timeout(60)
def test_rank_above_max_lora_rank_is_refused(tmp_path):
    with _load(max_lora_rank=4) as small:
        with pytest.raises(ModelLoadError, match="LoRA adapter 'golden': rank 8 is above max_lora_rank 4"):
            small.add_lora(LoRARequest("golden", 1, str(TINY_LORA / "llama.lora")))
        assert small.list_loras() == []


@pytest.mark.timeout(60)
def test_registration_ids_names_and_removal(engine, prompts, tmp_path):
    golden = str(TINY_LORA / "llama.lora")
    engine.add_lora(LoRARequest("golden", 1, golden))
    assert engine.add_lora(LoRARequest("golden", 1, golden)) is False  # the same again: nothing to do
    with pytest.raises(InvalidArgumentError, match="name already registered"):
        engine.add_lora(LoRARequest("golden", 9, golden))
    with pytest.raises(InvalidArgumentError, match="id already registered"):
        engine.add_lora(LoRARequest("other", 1, str(scaled_variant(golden, tmp_path / "v", 3.0))))
    engine.add_lora(LoRARequest("temporary", 7, golden))
    assert [(a["id"], a["name"]) for a in engine.list_loras()] == [(1, "golden"), (7, "temporary")]
    engine.remove_lora(7)
    with pytest.raises(InvalidArgumentError, match="LoRA adapter id 7 is not registered"):
        engine.complete(prompts[0], _with_id(7))
    with pytest.raises(InvalidArgumentError, match="no LoRA adapter has id 7"):
        engine.remove_lora(7)
    with pytest.raises(vllm_cpp.InvalidConfigurationError, match="lora_int_id must be an int >= 1"):
        LoRARequest("x", 0, golden)
    with pytest.raises(InvalidArgumentError, match="lora_int_id"):
        engine.complete(prompts[0], _with_id(-1))


@pytest.mark.timeout(60)
def test_without_enable_lora_adapters_are_refused(prompts):
    with vllm_cpp.Engine.load(str(BASE), max_model_len=128) as plain:
        with pytest.raises(InvalidArgumentError, match="LoRA is not enabled on this engine"):
            plain.add_lora(LoRARequest("golden", 1, str(TINY_LORA / "llama.lora")))
        with pytest.raises(InvalidArgumentError, match="LoRA is not enabled on this engine"):
            plain.complete(prompts[0], _with_id(1))
        assert "lora" not in plain.stats()
        assert len(plain.complete(prompts[0], GREEDY).token_ids) == N_NEW


GOLDEN_ROOT = TINY_LORA.parent


def _module_pair(directory, module, rows, cols, layer=0, rank=4, **config):
    """An adapter of one random pair on layer ``layer``'s ``module`` (its
    path after "layers.N.") of shape [rows, cols]."""
    rng = np.random.default_rng(0)
    stem = f"base_model.model.model.layers.{layer}.{module}"
    tensors = {f"{stem}.lora_A.weight": rng.standard_normal((rank, cols)),
               f"{stem}.lora_B.weight": rng.standard_normal((rows, rank))}
    return write_adapter(directory, tensors, **dict(dict(r=rank, lora_alpha=8), **config))


#: What stays unsupported, refused by name: (base, module, [rows, cols],
#: adapter_config keys, what the error says).
UNSUPPORTED = {
    "latent_attention_q": ("tiny_mla/deepseek2-lite.hf", "self_attn.q_proj", (128, 64), {},
                           r"layer 0 of the base model has no plain q projection .*latent attention's q/k/v"),
    "latent_attention_kv_a": ("tiny_mla/deepseek2-lite.hf", "self_attn.kv_a_proj_with_mqa", (48, 64),
                              {"target_modules": ["kv_a_proj_with_mqa"]},
                              r"target module 'kv_a_proj_with_mqa' is not supported"),
    "gemma4_attention": ("tiny_gemma4/gemma4-dense.hf", "self_attn.q_proj", (64, 64), {},
                         r"no plain q projection .*Gemma 4's attention"),
    "linear_attention": ("tiny_hybrid/qwen35.hf", "linear_attn.in_proj_qkv", (128, 64),
                         {"target_modules": ["in_proj_qkv"]}, r"target module 'in_proj_qkv' is not supported"),
    "moe_layer_dense_target": ("tiny_lora/qwen3moe.hf", "mlp.gate_proj", (32, 64), {},
                               r"no plain gate projection .*its experts take target_parameters"),
    "experts_of_another_layout": ("tiny_moe/mixtral.hf", "mlp.experts", (64, 32),
                                  {"target_modules": [], "target_parameters": ["mlp.experts.gate_up_proj"]},
                                  r"expert adapters are supported on qwen2moe, qwen3moe and qwen35moe bases, "
                                  r"not 'llama'"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
def test_unsupported_targets_are_refused_by_name(kind, tmp_path):
    base, module, (rows, cols), config, message = UNSUPPORTED[kind]
    if not (GOLDEN_ROOT / base).is_dir():
        pytest.skip(f"no {base} golden")
    adapter = _module_pair(tmp_path / kind, module, rows, cols, **config)
    with vllm_cpp.Engine.load(str(GOLDEN_ROOT / base), enable_lora=True, max_model_len=64) as engine:
        with pytest.raises(ModelLoadError, match=f"LoRA adapter '{kind}': .*" + message):
            engine.add_lora(LoRARequest(kind, 1, str(adapter)))
        assert engine.list_loras() == []
        assert len(engine.complete([1, 2, 3], GREEDY).token_ids) == N_NEW  # still serving


@pytest.mark.timeout(120)
def test_expert_adapter_batch_equals_each_alone(prompts, tmp_path):
    """qwen3moe's adapter on its experts (target_parameters): requests mixing
    it, a variant of it (B times -1) and the base model in one batch
    (prefill and decode rows routed to the same experts) each equal their
    run alone."""
    base = TINY_LORA / "qwen3moe.hf"
    if not base.is_dir():
        pytest.skip("no tiny_lora/qwen3moe golden")
    golden = LoRARequest("experts", 1, str(TINY_LORA / "qwen3moe.lora"))
    variant = LoRARequest("experts-neg", 2, str(scaled_variant(TINY_LORA / "qwen3moe.lora", tmp_path / "neg", -1.0)))
    plan = [golden, None, variant, golden, None, variant]
    with vllm_cpp.Engine.load(str(base), enable_lora=True, max_loras=2, max_lora_rank=8, max_model_len=128) as engine:
        alone = [list(engine.complete(p, GREEDY, lora_request=lora).token_ids) for p, lora in zip(prompts, plan)]
        assert alone[0] != list(engine.complete(prompts[0], GREEDY).token_ids)  # the adapter changes the output
        assert _together(engine, list(zip(prompts, plan))) == alone
