"""Qwen2.5-VL's and Qwen3-VL's language models (multimodal RoPE) on text,
against transformers (goldens of tests/golden/make_vl_goldens.py).

The tiny models are whole ``*ForConditionalGeneration`` checkpoints (text
model and vision tower); the text GGUFs are llama.cpp's converter's
(general.architecture qwen2vl / qwen3vl with rope.dimension_sections). On
text the three M-RoPE position ids of a token are equal, so the decoder is
Qwen2's / Qwen3's with plain RoPE; what this checks:

* both forms (the GGUF and the Hugging Face directory, its text model under
  model.language_model. and the vision tower left unread) give
  transformers' teacher-forced logits within the float tolerance and its
  greedy ids under the near-tie rule (test_moe_goldens' checks); the GGUF
  form's greedy ids equal llama.cpp's under the peer rule;
* a transformers 4.x layout (settings at config.json's top level, rope
  type "mrope", tensors under model. and visual.) loads as the same model;
* the Qwen2.5-VL vision tower (the llama.cpp converter's mmproj GGUF):
  the C++ test program test_qwen_vision checks its image processor's
  pixel_values and placeholder count against transformers'
  Qwen2VLImageProcessorPil and its rows against transformers' visual() on
  four images (scaled up, scaled down, rounded, as is), the M-RoPE positions
  of a two-image prompt against get_rope_index, and on the image neither
  resizes its rows against llama.cpp's mtmd on the same mmproj GGUF;
* end to end, the GGUF pair (text GGUF + mmproj) on the two-image prompt
  (``image_prompt``: the tower registered, the engine handing the decoder
  get_rope_index's M-RoPE positions, generated tokens at index + delta):
  transformers' 8 greedy ids, and its logits at every position of prompt +
  those ids through prompt_logprobs;
* bad sections (missing, the wrong count, not covering the rotated pairs,
  a bad mrope_section) are refused at load naming the key, and the process
  goes on.
"""

import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

from greedy_rule import PEER_GAP_THRESHOLD, greedy_failures
from native_build import build_native_tests, run_program
from probe_fixtures import float32_kv_cache, model_probe_path  # noqa: F401 (float32_kv_cache: autouse)

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import test_moe_goldens  # noqa: E402
from test_arch_goldens import _rewritten  # noqa: E402
from test_moe_goldens import _greedy, check_matches_transformers  # noqa: E402

TINY = GOLDEN_DIR / "tiny_vl"
SUPPORTED = ("qwen2vl", "qwen3vl")
CASES = [c for c in SUPPORTED if (TINY / f"{c}.gguf").is_file()]
FORMS = {"gguf": lambda case: TINY / f"{case}.gguf", "hf": lambda case: TINY / f"{case}.hf"}


@pytest.fixture(scope="module")
def probe():
    return model_probe_path()


def _golden(case):
    return json.loads((TINY / f"{case}.json").read_text())


def test_goldens_present():
    assert CASES == list(SUPPORTED)
    for case in CASES:
        for name in (f"{case}.json", f"{case}_logits.npy", f"{case}.hf/config.json"):
            assert (TINY / name).is_file(), name


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", CASES)
def test_text_matches_transformers(probe, tmp_path, case, form, record_property):
    prompts = _golden(case)["prompts"]
    check_matches_transformers(probe, FORMS[form](case), np.load(TINY / f"{case}_logits.npy"), prompts, prompts[0],
                               tmp_path, f"{case} ({form})", record_property)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", CASES)
def test_gguf_greedy_matches_llama_cpp(probe, case):
    prompts = [dict(p, ref_ids=p["llama_cpp_ids"], ref_gaps=p["llama_cpp_gaps"]) for p in _golden(case)["prompts"]]
    failures = greedy_failures(prompts, _greedy(probe, TINY / f"{case}.gguf", prompts, 7), PEER_GAP_THRESHOLD)
    assert not failures, failures


def _transformers4_layout(target):
    """qwen2vl.hf as transformers before 4.52 saved Qwen2.5-VL (the published
    checkpoints): the text settings at config.json's top level with rope
    type "mrope", the text model under model., the vision tower under visual."""
    shutil.copytree(TINY / "qwen2vl.hf", target)
    config = json.loads((target / "config.json").read_text())
    text = config.pop("text_config")
    rope = text.pop("rope_parameters")
    text["rope_theta"] = rope["rope_theta"]
    text["rope_scaling"] = {"type": "mrope", "mrope_section": rope["mrope_section"]}
    config.update(text)
    (target / "config.json").write_text(json.dumps(config))
    _rename_tensors(target / "model.safetensors", {"model.language_model.": "model.", "model.visual.": "visual."})
    return target


def _rename_tensors(path, prefixes):
    """Rewrites a safetensors file's header with each tensor name's prefix
    replaced (the data is left as is)."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    renamed = {}
    for name, entry in header.items():
        for old, new in prefixes.items():
            if name.startswith(old):
                name = new + name[len(old):]
                break
        renamed[name] = entry
    blob = json.dumps(renamed).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(len(blob).to_bytes(8, "little") + blob + raw[8 + n:])


@pytest.mark.timeout(120)
def test_transformers4_layout_is_the_same_model(probe, tmp_path, record_property):
    prompts = _golden("qwen2vl")["prompts"]
    model = _transformers4_layout(tmp_path / "qwen2vl-4x.hf")
    check_matches_transformers(probe, model, np.load(TINY / "qwen2vl_logits.npy"), prompts, prompts[0], tmp_path,
                               "qwen2vl (transformers 4.x layout)", record_property)


BAD_GGUF = {
    "sections-missing": (dict(set_values={"qwen2vl.rope.dimension_sections": None}),
                         "qwen2vl.rope.dimension_sections is missing (qwen2vl rotates by multimodal RoPE sections)"),
    "sections-count": (dict(set_values={"qwen2vl.rope.dimension_sections": [8, 8]}),
                       "qwen2vl.rope.dimension_sections must list 3 sections"),
    "sections-sum": (dict(set_values={"qwen2vl.rope.dimension_sections": [4, 6, 4, 0]}),
                     "qwen2vl.rope.dimension_sections covers 14 rotated pairs, but each head rotates 16"),
    "sections-fourth": (dict(set_values={"qwen2vl.rope.dimension_sections": [4, 6, 4, 2]}),
                        "qwen2vl.rope.dimension_sections must list 3 sections (temporal, height, width; a 4th only if 0)"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", sorted(BAD_GGUF))
def test_bad_sections_refused_at_load(probe, tmp_path, bad):
    edits, message = BAD_GGUF[bad]
    test_moe_goldens.check_gguf_refused(probe, _rewritten(TINY / "qwen2vl.gguf", tmp_path / f"{bad}.gguf", **edits),
                                        message, good=TINY / "qwen2vl.gguf")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sections", [[4, 6], [4, -1, 6], "4,6,6"])
def test_bad_mrope_section_in_config_json_refused(tmp_path, sections):
    target = tmp_path / "qwen2vl.hf"
    shutil.copytree(TINY / "qwen2vl.hf", target)
    config = json.loads((target / "config.json").read_text())
    config["text_config"]["rope_parameters"]["mrope_section"] = sections
    (target / "config.json").write_text(json.dumps(config))
    test_moe_goldens._load_refused(target, "config.json rope_scaling 'mrope_section' is not a list of 3 "
                                           "non-negative integers", good=TINY / "qwen2vl.gguf")


@pytest.mark.timeout(300)
def test_qwen25vl_vision_tower_matches_transformers():
    run_program(build_native_tests(), "test_qwen_vision", TINY)


def _image_prompt_request(golden, ids):
    from PIL import Image

    images = [Image.fromarray(np.load(TINY / f"qwen2vl_image{i}.npy"), "RGB") for i in golden["image_prompt"]["images"]]
    return {"prompt_token_ids": ids, "multi_modal_data": {"image": images}}


def _with_image_pad(tmp_path):
    """qwen2vl.gguf with the image placeholder id (``SPECIAL["image_token_id"]``)
    named ``<|image_pad|>`` as a control token: the tiny vocabulary's text
    there is an ordinary token, but the engine finds the placeholder by name."""
    import gguf

    reader = gguf.GGUFReader(str(TINY / "qwen2vl.gguf"))
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode() for i in field.data]
    field = reader.fields["tokenizer.ggml.token_type"]
    types = [int(field.parts[i][0]) for i in field.data]
    image_id = _golden("qwen2vl")["config"]["image_token_id"]
    tokens[image_id], types[image_id] = "<|image_pad|>", int(gguf.TokenType.CONTROL)
    del reader
    return _rewritten(TINY / "qwen2vl.gguf", tmp_path / "qwen2vl-image-pad.gguf",
                      set_values={"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types})


#: Log-probabilities of the GGUF pair against transformers' float32 (measured: 3.7e-6; with
#: plain positions instead of M-RoPE's the greedy ids already differ).
IMAGE_LOGPROB_TOLERANCE = 1e-4


@pytest.mark.timeout(300)
def test_image_prompt_matches_transformers(tmp_path):
    pytest.importorskip("PIL.Image", reason="images need Pillow (the [vision] extra)")
    from vllm_cpp import LLM, SamplingParams

    golden = _golden("qwen2vl")
    prompt = golden["image_prompt"]
    ids = prompt["prompt_ids"] + prompt["ref_ids"]
    logits = np.load(TINY / "qwen2vl_image_prompt_logits.npy").astype(np.float64)
    top = logits.max(-1, keepdims=True)
    want = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
    with LLM(str(_with_image_pad(tmp_path)), mmproj=str(TINY / "qwen2vl-mmproj.gguf"), max_model_len=128) as engine:
        greedy = engine.generate(_image_prompt_request(golden, prompt["prompt_ids"]),
                                 SamplingParams(temperature=0.0, max_tokens=len(prompt["ref_ids"]), logprobs=1))[0]
        assert list(greedy.outputs[0].token_ids) == prompt["ref_ids"]
        # The generated tokens' log-probabilities (decode steps: index + rope_delta positions).
        n = len(prompt["prompt_ids"])
        decoded = [lp[t].logprob for t, lp in zip(greedy.outputs[0].token_ids, greedy.outputs[0].logprobs)]
        expected_decoded = [want[n - 1 + j, t] for j, t in enumerate(prompt["ref_ids"])]
        assert np.abs(np.array(decoded) - expected_decoded).max() < IMAGE_LOGPROB_TOLERANCE
        forced = engine.generate(_image_prompt_request(golden, ids),
                                 SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1))[0]
    got = np.array([entry[ids[i + 1]].logprob for i, entry in enumerate(forced.prompt_logprobs[1:])])
    expected = np.array([want[i, ids[i + 1]] for i in range(len(ids) - 1)])
    assert np.abs(got - expected).max() < IMAGE_LOGPROB_TOLERANCE
