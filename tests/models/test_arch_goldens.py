"""Architectures on tiny random models made by transformers (no torch here).

The models and goldens are committed under tests/golden/tiny/ by
tests/golden/make_arch_goldens.py: per case ``<case>.gguf`` (F16 matrices
holding exactly the float16-rounded weights transformers ran, converted by
tests/support/hf_convert.py), ``<case>.json`` (3 prompts of random ids with
transformers' 32 greedy ids and top-2 gaps) and ``<case>_logits.npy``
(transformers' float32 logits for every position of prompt 0 + its greedy
ids; ``max_model_len`` where the engine is to be built for that context).
Cases: llama (the plain family), llama3 (Llama 3.1's "llama3" RoPE
scaling, rope_freqs.weight in GGUF), llama-yarn (YaRN RoPE scaling, factor 4
over an original context of 64), llama-yarn-attention (the same with
transformers' attention_factor 1.5), mistral (sliding window 8 on every layer),
qwen2 (q/k/v biases), qwen3 (q/k norms), gemma (GeGLU, embedding scale),
gemma2 (soft-capping of scores and logits, sandwich norms, sliding window 8
on layer 0), gemma3 (q/k norms, sliding window 8 on five of six layers with
local RoPE base 10000, linear RoPE scaling x8 on the global layer,
query_pre_attn_scalar 16 where the head dim is 32),
phi3 (fused q/k/v and gate/up matrices), phi3-longrope (LongRoPE's long
factors: original context 8, shorter than every prompt) and
phi3-longrope-short (its short factors: original context 64, max_model_len
64; make_arch_goldens.py says why these are the cases where the engine's
choice of factor set and transformers' agree).

Each case runs in three forms: the GGUF as committed, the Hugging Face
directory hf_convert.gguf_to_hf makes of it (float32 safetensors holding
the same values, q/k rows un-permuted, Gemma norms as w rather than 1 + w),
and that directory with ``<case>.config.json``, the config.json
transformers saved for the model (transformers 5 writes the RoPE settings
as rope_parameters, per layer type for Gemma 3),
through model_probe with the float32 KV cache (as test_architectures.py,
whose docstring has the reason):

* logits mode, prefill of 8 ids then one decode step per id: every row from
  position 7 on is within FLOAT_MAX (max) and FLOAT_MEAN (mean) of
  transformers'. Weights are the same floats on both sides, so only float32
  rounding and the order of sums separate the two (measured max ~1e-5 on
  logits of std 1.6-1.8);
* greedy, prefill chunks of 7 and 64: ids equal transformers', except where
  transformers' top-2 gap at the first difference is below twice the largest
  logit error of the teacher-forced run plus 1e-4 (greedy_rule.py).

The Python engine loads each tiny model and completes greedily with the ids
model_probe gives for the same prompt, and picks LongRoPE's factor set by
its max_model_len; a Gemma 2/3 GGUF stretched to the 27B block count
without attention.scale gets llama.cpp's dim / n_heads scale; hyperparameters out of range, a
missing sandwich norm, a fused matrix of the wrong size, LongRoPE factor
tensors missing, of the wrong size or not positive, and RoPE scaling types
that are not implemented (GGUF and config.json) are refused at load, naming
the key or tensor.
"""

import json
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import hf_convert
import tiny_models
from gguf_rewrite import rewritten as _rewritten
from greedy_rule import greedy_failures
from native_build import build_native_tests  # noqa: F401 (conftest builds it before the tests run)
from probe_fixtures import float32_kv_cache, model_probe_path  # noqa: F401 (float32_kv_cache: autouse)

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"

TINY = GOLDEN_DIR / "tiny"
CASES = sorted(p.stem for p in TINY.glob("*.gguf"))
FLOAT_MAX, FLOAT_MEAN = 1e-3, 1e-4
LOGITS_CHUNK = 8
GREEDY_CHUNKS = (7, 64)


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


@pytest.fixture(scope="module")
def model_forms(tmp_path_factory):
    """form -> case -> the model path: the committed GGUF, its Hugging Face
    directory (converted on first use), or that directory with the
    config.json transformers saved (transformers 5's rope_parameters layout,
    its own keys)."""
    root = tmp_path_factory.mktemp("hf-forms")

    def hf_dir(case):
        target = root / case
        if not target.exists():
            hf_convert.gguf_to_hf(str(TINY / f"{case}.gguf"), str(target), "f32")
        return target

    def transformers_config(case):
        target = root / f"{case}-transformers-config"
        if not target.exists():
            shutil.copytree(hf_dir(case), target)
            shutil.copy(TINY / f"{case}.config.json", target / "config.json")
        return target

    return {"gguf": lambda case: TINY / f"{case}.gguf", "hf": hf_dir, "hf-transformers-config": transformers_config}


def _context(golden):
    """model_probe's optional last argument: the max_model_len the case is built for."""
    return [str(golden["max_model_len"])] if "max_model_len" in golden else []


def _logits(probe, model, ids, out, context):
    subprocess.run([probe, str(model), "logits", str(out), str(LOGITS_CHUNK), *context],
                   input=" ".join(map(str, ids)) + "\n", text=True, check=True, timeout=60, capture_output=True)
    return np.fromfile(out, dtype=np.float32)


def assert_logits_close(got, want, label, record_property):
    """Teacher-forced logits within FLOAT_MAX (max) and FLOAT_MEAN (mean) of
    transformers'; returns the absolute errors."""
    got = got.reshape(-1, want.shape[1])
    assert got.shape == want.shape
    err = np.abs(got - want)
    record_property("max_error", float(err.max()))
    print(f"\n{label}: max {err.max():.2e} mean {err.mean():.2e} logit std {want.std():.2f}")
    assert err.max() <= FLOAT_MAX, f"max logit error {err.max():.3g} at row {np.unravel_index(err.argmax(), err.shape)}"
    assert err.mean() <= FLOAT_MEAN, f"mean logit error {err.mean():.3g}"
    return err


def test_every_case_has_goldens():
    assert set(CASES) == {"gemma", "gemma2", "gemma3", "llama", "llama3", "llama-yarn", "llama-yarn-attention",
                          "mistral", "phi3", "phi3-longrope", "phi3-longrope-short", "qwen2", "qwen3"}
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.config.json"):
            assert (TINY / name).is_file(), name


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", ["gguf", "hf", "hf-transformers-config"])
@pytest.mark.parametrize("case", CASES)
def test_tiny_model_matches_transformers(probe, model_forms, tmp_path, case, form, record_property):
    golden = json.loads((TINY / f"{case}.json").read_text())
    model = model_forms[form](case)
    want = np.load(TINY / f"{case}_logits.npy")[LOGITS_CHUNK - 1:]
    first = golden["prompts"][0]
    got = _logits(probe, model, first["prompt_ids"] + first["ref_ids"], tmp_path / "logits.bin", _context(golden))
    err = assert_logits_close(got, want, f"{case} ({form})", record_property)

    prompts = golden["prompts"]
    stdin = "".join(" ".join(map(str, p["prompt_ids"])) + "\n" for p in prompts)
    for chunk in GREEDY_CHUNKS:
        out = subprocess.run([probe, str(model), "greedy", str(len(first["ref_ids"])), str(chunk), *_context(golden)],
                             input=stdin, text=True, check=True, timeout=60, capture_output=True)
        ours = [[int(t) for t in line.split()] for line in out.stdout.strip().split("\n")]
        failures = greedy_failures(prompts, ours, 2 * float(err.max()) + 1e-4)
        assert not failures, (f"chunk {chunk}", failures)


API_PROMPT = "KQXZ VJWY"  # no merges apply: one token per byte


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES)
def test_python_engine_completes_as_probe(probe, case):
    """Also that the engine builds the model for its max_model_len (64 here:
    LongRoPE's long factors for phi3-longrope, the short ones for
    phi3-longrope-short)."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    model = TINY / f"{case}.gguf"
    ids = list(API_PROMPT.encode())
    out = subprocess.run([probe, str(model), "greedy", "8", "64", "64"], input=" ".join(map(str, ids)) + "\n",
                         text=True, check=True, timeout=60, capture_output=True)
    want = [int(t) for t in out.stdout.split()]
    with vllm_cpp.Engine.load(str(model), max_model_len=64) as engine:
        got = engine.complete(API_PROMPT, vllm_cpp.SamplingParams.greedy(max_tokens=8, ignore_eos=True))
    assert got.prompt_tokens == len(ids) and got.completion_tokens == 8
    try:
        text = tiny_models.decode_ids(want).decode("utf-8")
    except UnicodeDecodeError:  # the text of invalid UTF-8 is the detokenizer's business
        assert got.text
    else:
        assert got.text == text


@pytest.mark.timeout(60)
def test_python_engine_picks_longrope_factors_by_max_model_len():
    """The engine built for max_model_len 64 (not past phi3-longrope-short's
    original context) rotates with the short factors and continues the golden
    prompts as transformers does; built for 256 it takes the long factors
    for every sequence, and its continuations differ from transformers' (as
    documented: the set is chosen by max_model_len, not by sequence length)."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    golden = json.loads((TINY / "phi3-longrope-short.json").read_text())
    prompts = golden["prompts"]
    params = vllm_cpp.SamplingParams.greedy(max_tokens=len(prompts[0]["ref_ids"]), ignore_eos=True)
    outputs = {}
    for max_model_len in (golden["max_model_len"], 256):
        with vllm_cpp.Engine.load(str(TINY / "phi3-longrope-short.gguf"), max_model_len=max_model_len) as engine:
            outputs[max_model_len] = [engine.complete(p["prompt_ids"], params).token_ids for p in prompts]
    assert not greedy_failures(prompts, outputs[golden["max_model_len"]], 1e-3)
    assert greedy_failures(prompts, outputs[256], 1e-3)


def assert_probe_refuses(probe, path, message):
    """model_probe fails to load ``path`` with ``message`` on stderr."""
    r = subprocess.run([probe, str(path), "greedy", "1", "8"], input="1 2 3\n", text=True, capture_output=True,
                       timeout=30)
    assert r.returncode != 0 and message in r.stderr, r.stderr


BAD_MODELS = {
    "gemma2-negative-softcap": ("gemma2", dict(set_values={"gemma2.attn_logit_softcapping": -1.0}),
                                "gemma2.attn_logit_softcapping must not be negative"),
    "gemma2-negative-window": ("gemma2", dict(set_values={"gemma2.attention.sliding_window": -4}),
                               "gemma2.attention.sliding_window must not be negative"),
    "gemma2-missing-post-norm": ("gemma2", dict(drop_tensor="blk.1.post_ffw_norm.weight"),
                                 "tensor 'blk.1.post_ffw_norm.weight' is missing"),
    "phi3-longrope-one-set": ("phi3-longrope", dict(drop_tensor="rope_factors_short.weight"),
                              "tensor 'rope_factors_short.weight' is missing"),
    "phi3-longrope-short-set": ("phi3-longrope", dict(drop_tensor="rope_factors_long.weight",
                                                      add_tensors={"rope_factors_long.weight": np.ones(4)}),
                                "tensor 'rope_factors_long.weight' has 4 elements, expected 16"),
    "phi3-longrope-zero-factor": ("phi3-longrope", dict(drop_tensor="rope_factors_short.weight",
                                                        add_tensors={"rope_factors_short.weight": np.zeros(16)}),
                                  "tensor 'rope_factors_short.weight' has a non-positive factor"),
    "phi3-longrope-and-rope-freqs": ("phi3-longrope", dict(add_tensors={"rope_freqs.weight": np.ones(16)}),
                                     "tensor 'rope_freqs.weight' and LongRoPE factor tensors in one model"),
    "phi3-longrope-attn-factor": ("phi3-longrope", dict(set_values={"phi3.rope.scaling.attn_factor": -1.0}),
                                  "phi3.rope.scaling.attn_factor must be positive"),
    "phi3-longrope-with-yarn": ("phi3-longrope", dict(set_values={"phi3.rope.scaling.type": "yarn"}),
                                "LongRoPE factor tensors with phi3.rope.scaling.type 'yarn'"),
    "phi3-longrope-type-alone": ("phi3", dict(set_values={"phi3.rope.scaling.type": "longrope"}),
                                 "phi3.rope.scaling.type 'longrope' needs the tensors rope_factors_long.weight and "
                                 "rope_factors_short.weight"),
    "llama-dynamic-rope": ("llama", dict(set_values={"llama.rope.scaling.type": "dynamic"}),
                           "unsupported RoPE scaling 'dynamic' (rope.scaling.type; supported: none, linear, yarn, "
                           "longrope)"),
    "llama-sliding-rope-base": ("llama", dict(set_values={"llama.rope.freq_base_swa": 5000.0}),
                                "llama.rope.freq_base_swa differs from llama.rope.freq_base, but llama's sliding "
                                "layers rotate with the global base"),
    "gemma3-zero-attention-scale": ("gemma3", dict(set_values={"gemma3.attention.scale": 0.0}),
                                    "gemma3.attention.scale must be positive"),
    "phi3-short-qkv": ("phi3", dict(set_values={"phi3.attention.head_count_kv": 4}),
                       "tensor 'blk.0.attn_qkv.weight' has shape [64, 256], expected [64, 384]"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_MODELS))
def test_bad_model_refused_at_load(probe, tmp_path, bad):
    case, edits, message = BAD_MODELS[bad]
    path = _rewritten(TINY / f"{case}.gguf", tmp_path / f"{bad}.gguf", **edits)
    assert_probe_refuses(probe, path, message)
    vllm_cpp = pytest.importorskip("vllm_cpp")
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        vllm_cpp.Engine.load(str(path))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case, layers", [("gemma2", 46), ("gemma3", 62)])
def test_gemma_27b_attention_scale_by_block_count(probe, tmp_path, case, layers):
    """llama.cpp's GGUFs of Gemma 2/3 do not store query_pre_attn_scalar; it
    knows the 27B models, whose scalar is dim / n_heads rather than the head
    dim, by their block count. The tiny model stretched to that count without
    attention.scale computes what it does with the scale 1/sqrt(64 / 4) written
    out, and not what it does with 1/sqrt(head_dim)."""
    ids = json.loads((TINY / f"{case}.json").read_text())["prompts"][0]["prompt_ids"]
    out = {}
    for name, scale in (("rule", None), ("dim-over-heads", 16 ** -0.5), ("head-dim", 32 ** -0.5)):
        path = tmp_path / f"{name}.gguf"
        _rewritten(TINY / f"{case}.gguf", path, set_values={f"{case}.attention.scale": scale}, layers=layers)
        out[name] = _logits(probe, path, ids, tmp_path / f"{name}.bin", [])
    assert np.array_equal(out["rule"], out["dim-over-heads"])
    assert np.abs(out["rule"] - out["head-dim"]).max() > 1e-3


HF_BAD_ROPE = {
    "dynamic": ("llama", {"rope_type": "dynamic", "factor": 2.0}, "unsupported RoPE scaling 'dynamic'"),
    "longrope-without-factors": ("phi3", {"rope_type": "longrope"},
                                 "config.json rope_scaling 'long_factor' is not a list of numbers"),
    "no-type": ("llama", {"factor": 2.0}, "config.json rope_scaling has no 'rope_type' string"),
    "yarn-mscale": ("llama-yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                   "mscale": 1.0, "mscale_all_dim": 0.5},
                    "config.json rope_scaling 'mscale' (DeepSeek's YaRN attention factor) is not supported"),
    # truncate: false is run as transformers runs it (gpt-oss's HF form in
    # test_moe_goldens.py checks it against transformers); only a
    # non-boolean value is refused.
    "yarn-truncate-not-bool": ("llama-yarn", {"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 64, "truncate": "no"},
                               "config.json rope_scaling 'truncate' is not a boolean"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(HF_BAD_ROPE))
def test_bad_rope_scaling_in_config_json_refused(model_forms, tmp_path, bad):
    """config.json's rope_scaling: a type the engine does not implement is
    refused by name; LongRoPE without its factor lists names the key."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    case, scaling, message = HF_BAD_ROPE[bad]
    target = tmp_path / case
    shutil.copytree(model_forms["hf"](case), target)
    config = json.loads((target / "config.json").read_text())
    config["rope_scaling"] = scaling
    (target / "config.json").write_text(json.dumps(config))
    with pytest.raises(vllm_cpp.ModelLoadError, match=re.escape(message)):
        vllm_cpp.Engine.load(str(target))


@pytest.mark.timeout(60)
def test_rope_parameters_without_a_type_is_unscaled(probe, model_forms, tmp_path):
    """A rope_parameters dict with only a base (no rope_type) loads, unscaled."""
    target = tmp_path / "qwen2"
    shutil.copytree(model_forms["hf-transformers-config"]("qwen2"), target)
    config = json.loads((target / "config.json").read_text())
    config["rope_parameters"] = {"rope_theta": config["rope_parameters"]["rope_theta"]}
    (target / "config.json").write_text(json.dumps(config))
    ids = json.loads((TINY / "qwen2.json").read_text())["prompts"][0]["prompt_ids"]
    want = _logits(probe, model_forms["hf-transformers-config"]("qwen2"), ids, tmp_path / "want.bin", [])
    assert np.array_equal(_logits(probe, target, ids, tmp_path / "got.bin", []), want)


@pytest.mark.timeout(60)
def test_scaled_sliding_rope_in_rope_parameters_refused(model_forms, tmp_path):
    """Gemma 3's sliding layers rotate unscaled; a transformers 5 config that
    scales them is refused, naming the setting."""
    vllm_cpp = pytest.importorskip("vllm_cpp")
    target = tmp_path / "gemma3"
    shutil.copytree(model_forms["hf-transformers-config"]("gemma3"), target)
    config = json.loads((target / "config.json").read_text())
    config["rope_parameters"]["sliding_attention"] = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}
    (target / "config.json").write_text(json.dumps(config))
    with pytest.raises(vllm_cpp.ModelLoadError, match="rope_parameters 'sliding_attention' has a RoPE scaling"):
        vllm_cpp.Engine.load(str(target))
