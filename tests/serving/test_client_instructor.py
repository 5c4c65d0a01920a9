"""instructor over the ``openai`` SDK against a tool-calling server on
SmolLM2: a pydantic model extracted in TOOLS mode (a forced function call)
and in JSON mode (``response_format: json_object``, the schema only in the
prompt, so one worked example shows the 135M model the shape, as users of
small models do)."""

import json

import pytest

instructor = pytest.importorskip(
    "instructor", reason="instructor is not installed (the test extra installs it on Python 3.10+)")
openai = pytest.importorskip("openai")

from client_support import City  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MESSAGES = [
    {"role": "user", "content": "Berlin is the capital of Germany. Extract the city."},
    {"role": "assistant", "content": json.dumps({"name": "Berlin", "country": "Germany"})},
    {"role": "user", "content": "Paris is the capital of France. Extract the city."},
]


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


@pytest.mark.parametrize("mode", [instructor.Mode.TOOLS, instructor.Mode.JSON], ids=["tools", "json"])
def test_extracts_a_pydantic_model(base_url, mode):
    client = instructor.from_openai(openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0),
                                    mode=mode)
    city, completion = client.chat.completions.create_with_completion(
        model=MODEL_NAME, response_model=City, messages=MESSAGES, max_retries=0, max_tokens=64, temperature=0)
    assert isinstance(city, City)
    assert city.model_dump() == {"name": "Paris", "country": "France"}
    assert completion.choices[0].finish_reason in ("stop", "tool_calls")
