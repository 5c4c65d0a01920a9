"""The chat protocol's native tests, and the responses they build checked
against the openai package's own types.

test_chat_parsers drives every tool-call and reasoning parser with exact
model outputs, whole and streamed in every 2-way split, byte by byte and in
random pieces. test_openai_protocol checks the request validator and the
response/chunk builders, and writes sample chat.completion objects and
chat.completion.chunk streams that are validated here with
openai.types.chat.ChatCompletion / ChatCompletionChunk.
"""

import json
import pathlib
import subprocess

import pytest

from native_build import build_native_tests

from conftest import CHAT_TEMPLATES_DIR as TEMPLATES


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


def run_program(build, name, *args):
    result = subprocess.run([str(build / name), *map(str, args)], capture_output=True, text=True, timeout=120)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert summary.endswith(" 0 failed"), summary
    return result


@pytest.mark.timeout(300)
def test_chat_parsers(build):
    args = [TEMPLATES] if TEMPLATES.is_dir() else []
    run_program(build, "test_chat_parsers", *args)


@pytest.mark.timeout(300)
def test_chat_parsers_of_model_families(build):
    """qwen3_coder, glm45, deepseek_v3/v31, kimi_k2, granite, phi4_mini_json,
    llama4_pythonic and openai (harmony) tool calls; openai_gptoss, glm45,
    granite, deepseek_v3 and seed_oss reasoning: the families' own markup,
    whole and streamed at every byte boundary, malformed markup as text."""
    run_program(build, "test_chat_parsers_families")


@pytest.mark.timeout(300)
def test_parsers_read_real_templates(build):
    """The real chat templates of the families (llama.cpp's collection,
    tests/fixtures/llama_cpp_templates/): each is detected as its dialects,
    and an assistant turn with reasoning and two tool calls rendered by our
    template renderer is read back by those parsers."""
    templates = pathlib.Path(__file__).parent.parent / "fixtures" / "llama_cpp_templates"
    run_program(build, "test_chat_templates_real", templates)


def validate_samples(directory):
    """Checks every sample the protocol test wrote with the openai types."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    directory = pathlib.Path(directory)
    completions = sorted(directory.glob("completion_*.json"))
    streams = sorted(directory.glob("stream_*.jsonl"))
    assert completions and streams, f"no samples in {directory}"
    for path in completions:
        completion = ChatCompletion.model_validate(json.loads(path.read_text(encoding="utf-8")))
        assert completion.object == "chat.completion"
        assert completion.id.startswith("chatcmpl-")
        for choice in completion.choices:
            if choice.message.tool_calls:
                assert choice.finish_reason == "tool_calls"
                assert choice.message.content is None
                for call in choice.message.tool_calls:
                    assert call.id.startswith("call_")
                    json.loads(call.function.arguments)
    for path in streams:
        chunks = [ChatCompletionChunk.model_validate(json.loads(line))
                  for line in path.read_text(encoding="utf-8").splitlines()]
        assert len({c.id for c in chunks}) == 1, "every chunk shares the response id"
        assert chunks[0].choices[0].delta.role == "assistant"
        finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
        assert len(finish) == 1
        made_calls = any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
        assert finish[0].choices[0].finish_reason == ("tool_calls" if made_calls else "stop")
        if chunks[-1].usage is not None:
            assert chunks[-1].choices == []
            assert chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + chunks[-1].usage.completion_tokens
    return completions, streams


@pytest.mark.timeout(300)
def test_openai_protocol_and_types(build, tmp_path):
    run_program(build, "test_openai_protocol", tmp_path)
    completions, streams = validate_samples(tmp_path)
    # The streamed reasoning + tool call sample, reassembled as a client would.
    chunks = [json.loads(line) for line in (tmp_path / "stream_reasoning_tools.jsonl").read_text().splitlines()]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas)
    content = "".join(d.get("content", "") for d in deltas)
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    assert reasoning == "Weather needed."
    assert content == ""
    assert [(c["index"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        (0, "get_weather", {"city": "Paris"})]
    assert chunks[-1]["usage"]["total_tokens"] == 16
