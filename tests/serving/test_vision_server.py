"""Images through `vllm-cpp serve`'s chat route (issue 46): the openai
client sends a data: URL image to a Gemma 3 vision model (the tiny one of
tests/golden/tiny_vision, its Hugging Face directory); the answer equals
LLM.chat's; a batch of image and text requests gives each what it gives
alone (batch invariance); bad images get a 400 naming the part and the
server goes on."""

import base64
import concurrent.futures
import io
import json
import os
import pathlib

import numpy as np
import pytest

from server_harness import running_server

PIL = pytest.importorskip("PIL.Image", reason="images need Pillow (the [vision] extra)")
openai = pytest.importorskip("openai")

from vllm_cpp import Engine  # noqa: E402

TINY = pathlib.Path(__file__).resolve().parents[1] / "golden" / "tiny_vision"
HF = TINY / "gemma3-vision.hf"
pytestmark = pytest.mark.skipif(not HF.is_dir(), reason="no Gemma 3 vision goldens (make_gemma3_vision_goldens.py)")


def _data_url(name, fmt="PNG"):
    buffer = io.BytesIO()
    PIL.fromarray(np.load(TINY / f"gemma3-vision_image_{name}.npy"), "RGB").save(buffer, format=fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def server():
    old = os.environ.get("VLLM_CPP_KV_CACHE_DTYPE")
    os.environ["VLLM_CPP_KV_CACHE_DTYPE"] = "f32"
    engine = Engine.load(str(HF), max_model_len=256)
    try:
        with running_server(engine, max_model_len=256) as url:
            yield engine, openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    finally:
        engine.close()
        if old is None:
            del os.environ["VLLM_CPP_KV_CACHE_DTYPE"]
        else:
            os.environ["VLLM_CPP_KV_CACHE_DTYPE"] = old


def _ask(client, image=None, text="What is in the image?"):
    content = [dict(type="text", text=text)]
    if image is not None:
        content.insert(0, dict(type="image_url", image_url=dict(url=image)))
    out = client.chat.completions.create(model="smollm2", messages=[dict(role="user", content=content)],
                                         temperature=0.0, max_tokens=6, extra_body=dict(return_token_ids=True))
    return out.choices[0].token_ids if hasattr(out.choices[0], "token_ids") else out.choices[0].message.content


@pytest.mark.timeout(300)
def test_openai_client_sends_a_data_url(server):
    engine, client = server
    golden = json.loads((TINY / "gemma3-vision.json").read_text())
    answer = client.chat.completions.create(
        model="smollm2", temperature=0.0, max_tokens=6,
        messages=[dict(role="user", content=[dict(type="image_url", image_url=dict(url=_data_url("square"))),
                                             dict(type="text", text="What is in the image?")])],
        extra_body=dict(return_token_ids=True))
    assert answer.usage.prompt_tokens == len(golden["chat"]["input_ids"])
    assert engine.stats()["vision"]["images_encoded"] >= 1
    # JPEG and WebP decode too.
    for fmt in ("JPEG", "WEBP"):
        assert _ask(client, _data_url("wide", fmt))


@pytest.mark.timeout(300)
def test_image_requests_mixed_with_text_are_batch_invariant(server):
    _, client = server
    jobs = [("square", "What is in the image?"), (None, "Hello there"), ("tall", "Describe it"),
            (None, "the cat is"), ("square", "What is in the image?")]
    alone = [_ask(client, _data_url(i) if i else None, t) for i, t in jobs]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(lambda j: _ask(client, _data_url(j[0]) if j[0] else None, j[1]), jobs))
    assert together == alone


@pytest.mark.timeout(300)
def test_bad_images_get_a_400_naming_the_part(server):
    _, client = server
    bad = {
        "not a decodable image": "data:image/png;base64," + base64.b64encode(b"\x89PNG garbage").decode(),
        "not valid base64": "data:image/png;base64,@@@",
        "is not an image": "data:text/plain;base64," + base64.b64encode(b"hi").decode(),
        "only data: URLs": "http://example.com/cat.png",
    }
    for needle, url in bad.items():
        with pytest.raises(openai.BadRequestError) as caught:
            _ask(client, url)
        assert needle in str(caught.value) and "messages[0].content[0]" in str(caught.value)
    too_many = [dict(type="image_url", image_url=dict(url=_data_url("tall")))] * 9
    with pytest.raises(openai.BadRequestError, match="limit_mm_per_prompt"):
        client.chat.completions.create(model="smollm2", messages=[dict(role="user", content=too_many)], max_tokens=1)
    assert _ask(client, _data_url("square"))  # the server goes on
