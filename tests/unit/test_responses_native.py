"""The engine's own test of the Responses API's translation
(third_party/vllm.cpp/tests/test_responses.cpp): requests read into the chat
request they run as, refusals naming their field, and the writer's items
and numbered events, streamed equal to blocking. No model."""

import pytest

from native_build import build_native_tests, run_program


@pytest.mark.timeout(1200)
def test_responses_translation():
    run_program(build_native_tests(), "test_responses")
