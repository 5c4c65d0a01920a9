"""litellm against the server on SmolLM2 (as its ``openai/`` provider for
an OpenAI-compatible endpoint): plain, streamed, and a context-window
fallback: a deployment whose context is too short answers OpenAI's
``context_length_exceeded``, litellm raises its ContextWindowExceededError
and its Router falls back to the deployment that fits."""

import os

import pytest

# The model price map bundled with litellm, not fetched at import (no network here).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip(
    "litellm", reason="litellm is not installed (the test extra installs it on Python 3.10+)")

from server_harness import MODEL_NAME, running_server  # noqa: E402
from vllm_cpp import Engine  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
#: About 150 tokens: past the short deployment's 64, well inside the other's 512.
LONG_MESSAGES = [{"role": "user", "content": "Summarise: " + "the quick brown fox jumps over the lazy dog. " * 15}]


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512) as engine, running_server(engine, max_model_len=512) as url:
        yield url


@pytest.fixture(scope="module")
def short_context_url(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=64) as engine, running_server(engine, max_model_len=64) as url:
        yield url


def deployment(url):
    return {"model": "openai/" + MODEL_NAME, "api_base": url + "/v1", "api_key": "unused"}


def test_plain_and_streamed_agree(base_url):
    response = litellm.completion(messages=MESSAGES, max_tokens=12, temperature=0, **deployment(base_url))
    text = response.choices[0].message.content
    assert text and response.usage.completion_tokens <= 12
    stream = litellm.completion(messages=MESSAGES, max_tokens=12, temperature=0, stream=True,
                                **deployment(base_url))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == text


def test_overflow_is_a_context_window_error(short_context_url):
    with pytest.raises(litellm.ContextWindowExceededError):
        litellm.completion(messages=LONG_MESSAGES, max_tokens=4, **deployment(short_context_url))


def test_context_window_fallback_fires_on_overflow(base_url, short_context_url):
    router = litellm.Router(
        model_list=[{"model_name": "smollm2-short", "litellm_params": deployment(short_context_url)},
                    {"model_name": "smollm2-long", "litellm_params": deployment(base_url)}],
        context_window_fallbacks=[{"smollm2-short": ["smollm2-long"]}], num_retries=0)
    short = router.completion(model="smollm2-short", messages=MESSAGES, max_tokens=4, temperature=0)
    assert short._hidden_params["api_base"].startswith(short_context_url)

    response = router.completion(model="smollm2-short", messages=LONG_MESSAGES, max_tokens=4, temperature=0)
    assert response._hidden_params["api_base"].startswith(base_url)
    assert response.choices[0].message.content
