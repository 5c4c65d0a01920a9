"""Images through Gemma 3 (issue 46) on a tiny random vision-language model.

The model and goldens are committed under tests/golden/tiny_vision/ by
tests/golden/make_gemma3_vision_goldens.py (its docstring says how):
``gemma3-vision.gguf`` + ``mmproj-gemma3-vision.gguf`` (llama.cpp's converter,
the text model and ``--mmproj``), the seeded images, transformers' processor
pixel values, the prompts' placeholder layout (input ids), 8 greedy ids and
float32 logits of prompt + greedy ids, teacher-forced.

What is shown: the tower's preprocessing equals the processor's pixel
values (vision_pixels_probe); greedy ids equal transformers'; the prompt
positions' log-probabilities (prompt_logprobs, teacher-forced) equal
transformers' float32 log-softmax (2e-3 for the directory, 1e-2 for the GGUF pair); a chat with a data: URL image
lays out the prompt as the processor does; a prompt prefilled in chunks
encodes each image once and gives what one-shot prefill gives; the prefix
cache reuses a repeated image's blocks and never another image's; bad
inputs are refused by name and the engine goes on.
"""

import base64
import io
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

from native_build import build_native_tests

PIL = pytest.importorskip("PIL.Image", reason="images need Pillow (the [vision] extra)")

import vllm_cpp  # noqa: E402
from vllm_cpp import LLM, SamplingParams  # noqa: E402
from vllm_cpp.errors import InvalidArgumentError  # noqa: E402

TINY = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_vision"
CASE = "gemma3-vision"
GGUF, MMPROJ, HF = TINY / f"{CASE}.gguf", TINY / f"mmproj-{CASE}.gguf", TINY / f"{CASE}.hf"
pytestmark = pytest.mark.skipif(not GGUF.is_file(), reason="no Gemma 3 vision goldens (make_gemma3_vision_goldens.py)")
#: Log-probabilities against transformers' float32 (the same float16 weights on both sides): the
#: directory's form within 2e-3; the GGUF pair within 1e-2 (it differs by up to 7.5e-3 on the
#: longest prompt, text positions included: a known gap, docs/features/vision.md).
LOGPROB_TOLERANCE = {"hf": 2e-3, "gguf": 1e-2}


def _golden():
    return json.loads((TINY / f"{CASE}.json").read_text())


def _image(name):
    return PIL.fromarray(np.load(TINY / f"{CASE}_image_{name}.npy"), "RGB")


def _log_softmax(rows):
    rows = rows.astype(np.float64)
    top = rows.max(-1, keepdims=True)
    return rows - top - np.log(np.exp(rows - top).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def f32_env():
    old = os.environ.get("VLLM_CPP_KV_CACHE_DTYPE")
    os.environ["VLLM_CPP_KV_CACHE_DTYPE"] = "f32"
    yield
    if old is None:
        del os.environ["VLLM_CPP_KV_CACHE_DTYPE"]
    else:
        os.environ["VLLM_CPP_KV_CACHE_DTYPE"] = old


@pytest.fixture(scope="module")
def llm(f32_env):
    # The Hugging Face directory alone (its vision tower read by
    # formats/hf_vision): text prompts and chat. (The tiny vocabulary has no
    # tokenizer.model, so llama.cpp's converter writes the text GGUF's
    # vocabulary as gpt2 BPE, which tokenizes text unlike tokenizer.json:
    # the GGUF pair runs the processor's ids.)
    with LLM(str(HF), max_model_len=256) as engine:
        yield engine


@pytest.fixture(scope="module")
def gguf_llm(f32_env):
    with LLM(str(GGUF), mmproj=str(MMPROJ), max_model_len=256) as engine:
        yield engine


@pytest.fixture(scope="module")
def chunked(f32_env):
    # 24 tokens a step: every prompt is prefilled in several chunks, each image (16 soft tokens) whole.
    with LLM(str(GGUF), mmproj=str(MMPROJ), max_model_len=256, max_num_batched_tokens=24) as engine:
        yield engine


def _request(prompt):
    return {"prompt": prompt["text"], "multi_modal_data": {"image": [_image(n) for n in prompt["images"]]}}


@pytest.mark.timeout(300)
def test_pixels_equal_the_processors(tmp_path):
    build = build_native_tests()
    golden = _golden()
    pixels = np.load(TINY / f"{CASE}_pixels.npy")
    for i, name in enumerate(golden["images"]):
        rgb = np.load(TINY / f"{CASE}_image_{name}.npy")
        (tmp_path / "rgb").write_bytes(rgb.tobytes())
        (tmp_path / "pixels").write_bytes(pixels[i].astype(np.float32).tobytes())
        done = subprocess.run([str(build / "vision_pixels_probe"), str(MMPROJ), str(rgb.shape[1]), str(rgb.shape[0]),
                               str(tmp_path / "rgb"), str(tmp_path / "pixels"), "64"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
        assert "tokens 16 grid 1 4 4" in done.stdout


@pytest.mark.timeout(300)
def test_greedy_ids_equal_transformers(llm, gguf_llm):
    golden = _golden()
    params = SamplingParams(temperature=0.0, max_tokens=len(golden["prompts"][0]["greedy_ids"]))
    outputs = llm.generate([_request(p) for p in golden["prompts"]], params)  # text prompts, batched
    for prompt, out in zip(golden["prompts"], outputs):
        assert list(out.outputs[0].token_ids) == prompt["greedy_ids"], prompt["text"]
    by_ids = gguf_llm.generate([{"prompt_token_ids": p["input_ids"],
                                 "multi_modal_data": {"image": [_image(n) for n in p["images"]]}}
                                for p in golden["prompts"]], params)
    for prompt, out in zip(golden["prompts"], by_ids):
        assert list(out.outputs[0].token_ids) == prompt["greedy_ids"], prompt["text"]


def _prompt_logprobs(engine, prompt, ids):
    """Each position's log-probability of the next id (teacher-forced through prompt_logprobs)."""
    out = engine.generate({"prompt_token_ids": ids, "multi_modal_data": {"image": [_image(n) for n in prompt["images"]]}},
                          SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1))[0]
    return np.array([entry[ids[i + 1]].logprob for i, entry in enumerate(out.prompt_logprobs[1:])])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("form", ["hf", "gguf"])
@pytest.mark.parametrize("index", [0, 1, 2])
def test_teacher_forced_logprobs_equal_transformers(llm, gguf_llm, index, form):
    prompt = _golden()["prompts"][index]
    ids = prompt["input_ids"] + prompt["greedy_ids"]
    want = _log_softmax(np.load(TINY / f"{CASE}_logits_{index}.npy"))
    expected = np.array([want[i, ids[i + 1]] for i in range(len(ids) - 1)])
    got = _prompt_logprobs(llm if form == "hf" else gguf_llm, prompt, ids)
    assert np.abs(got - expected).max() < LOGPROB_TOLERANCE[form]


@pytest.mark.timeout(300)
def test_text_prompt_lays_out_as_the_processor(llm):
    # The text prompt's expansion gives the processor's input ids: the same
    # prompt positions, with the same log-probabilities as the ids give.
    prompt = _golden()["prompts"][2]
    params = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1)
    out = llm.generate(_request(prompt), params)[0]
    assert len(out.prompt_logprobs) == len(prompt["input_ids"])
    ids = prompt["input_ids"]
    by_text = [e[ids[i + 1]].logprob for i, e in enumerate(out.prompt_logprobs[1:])]
    np.testing.assert_allclose(by_text, _prompt_logprobs(llm, prompt, ids), atol=1e-6)


@pytest.mark.timeout(300)
def test_chat_with_a_data_url_image(llm):
    golden = _golden()
    buffer = io.BytesIO()
    _image("square").save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    messages = [dict(role="user", content=[dict(type="image_url", image_url=dict(url=url)),
                                           dict(type="text", text="What is in the image?")])]
    out = llm.chat(messages, SamplingParams(temperature=0.0, max_tokens=4))[0]
    assert list(out.prompt_token_ids) == golden["chat"]["input_ids"]
    assert len(out.outputs[0].token_ids) == 4


@pytest.mark.timeout(300)
def test_chunked_prefill_encodes_each_image_once(gguf_llm, chunked):
    prompt = _golden()["prompts"][2]  # 61 tokens, two images: at least 3 chunks of 24
    before = chunked.engine.stats()["vision"]["images_encoded"]
    ids = prompt["input_ids"] + prompt["greedy_ids"]
    got = _prompt_logprobs(chunked, prompt, ids)
    assert chunked.engine.stats()["vision"]["images_encoded"] == before + 2
    np.testing.assert_allclose(got, _prompt_logprobs(gguf_llm, prompt, ids), atol=1e-5)


@pytest.mark.timeout(300)
def test_prefix_cache_keys_blocks_by_image(f32_env):
    # Two prompts of the same tokens: a different image after the first
    # never reuses its KV (the answer equals a fresh engine's); the same
    # image again reuses its blocks and its rows.
    prompt = _golden()["prompts"][1]
    params = SamplingParams(temperature=0.0, max_tokens=3, logprobs=5)
    ids = prompt["input_ids"]

    def run(engine, image):
        out = engine.generate({"prompt_token_ids": ids, "multi_modal_data": {"image": _image(image)}}, params)[0]
        return [(t, round(next(iter(lp.values())).logprob, 5)) for t, lp in
                zip(out.outputs[0].token_ids, out.outputs[0].logprobs)]

    with LLM(str(GGUF), mmproj=str(MMPROJ), max_model_len=256, block_size=4) as fresh:
        alone = run(fresh, "tall")
    with LLM(str(GGUF), mmproj=str(MMPROJ), max_model_len=256, block_size=4) as engine:
        run(engine, "wide")
        hits = engine.engine.stats()["prefix_cache_hits"]
        assert run(engine, "tall") == alone
        # Only block 0 ([bos, \n, \n, <start_of_image>]) comes before the image: nothing after it is shared.
        assert engine.engine.stats()["prefix_cache_hits"] - hits <= 4, "blocks holding another image were reused"
        hits = engine.engine.stats()["prefix_cache_hits"]
        assert run(engine, "tall") == alone
        stats = engine.engine.stats()
        assert stats["prefix_cache_hits"] - hits >= 16, "the repeated image's blocks were not reused"
        assert stats["vision"]["images_encoded"] == 2, "the repeated image was encoded again"


@pytest.mark.timeout(300)
def test_bad_images_are_refused_by_name(llm):
    prompt = _golden()["prompts"][0]
    with pytest.raises(InvalidArgumentError, match="image marker"):
        llm.generate({"prompt": "no marker here", "multi_modal_data": {"image": _image("square")}})
    with pytest.raises(InvalidArgumentError, match="image 1.*no pixels"):
        llm.generate({"prompt": prompt["text"], "multi_modal_data": {"image": PIL.new("RGB", (0, 5))}})
    with pytest.raises(InvalidArgumentError, match="larger than 16384"):
        llm.generate({"prompt": prompt["text"], "multi_modal_data": {"image": PIL.new("RGB", (100000, 1))}})
    with pytest.raises(InvalidArgumentError, match="limit_mm_per_prompt"):
        llm.generate({"prompt": "<start_of_image>" * 9, "multi_modal_data": {"image": [_image("tall")] * 9}})
    with pytest.raises(InvalidArgumentError, match="not a decodable image"):
        llm.chat([dict(role="user", content=[dict(type="image_url", image_url=dict(
            url="data:image/png;base64," + base64.b64encode(b"not a png").decode()))])])
    # The engine goes on.
    out = llm.generate(_request(prompt), SamplingParams(temperature=0.0, max_tokens=2))[0]
    assert list(out.outputs[0].token_ids) == prompt["greedy_ids"][:2]


@pytest.mark.timeout(300)
def test_text_only_model_refuses_images(smollm2_path):
    with LLM(smollm2_path, max_model_len=128) as text_only:
        with pytest.raises(InvalidArgumentError, match="text-only model"):
            text_only.generate({"prompt": "hi", "multi_modal_data": {"image": _image("square")}})
        assert text_only.generate("hi", SamplingParams(max_tokens=2))[0].outputs[0].token_ids


@pytest.mark.timeout(120)
def test_unsupported_projector_is_refused_by_name(tmp_path, f32_env):
    import gguf

    reader = gguf.GGUFReader(str(MMPROJ))
    writer = gguf.GGUFWriter(str(tmp_path / "mmproj.gguf"), "clip")
    writer.add_string("clip.projector_type", "idefics3")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    del reader
    with pytest.raises(vllm_cpp.errors.ModelLoadError, match="unsupported vision projector type 'idefics3'"):
        LLM(str(GGUF), mmproj=str(tmp_path / "mmproj.gguf"))
