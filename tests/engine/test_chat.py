"""OpenAI chat completions end to end: SmolLM2 with its own chat template
through vllm_chat / vllm_chat_stream, from Python.

Every response is checked with openai.types.chat.ChatCompletion and every
streamed chunk with ChatCompletionChunk. Greedy streams must reassemble to
the blocking response. Bad requests must raise InvalidArgumentError and
leave the engine usable, also under a fuzz of random and mutated request
documents. The chat service's own paths that SmolLM2 cannot be made to take
(reasoning splits, streamed failures, ...) are covered by the native
test_chat_service with a scripted engine, whose responses are validated here
with the same openai types.
"""

import asyncio
import copy
import json
import os
import random
import subprocess
import time

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from vllm_cpp import Engine
from vllm_cpp.errors import (
    EngineError,
    InvalidArgumentError,
    InvalidConfigurationError,
    InvalidUtf8Error,
    InteriorNulError,
    UnknownNativeError,
)
from chat_tools import FEW_SHOT_TOOL_CALLS, WEATHER_TOOL
from native_build import build_native_tests

HI = [{"role": "user", "content": "Hi"}]


def greedy(messages=HI, **extra):
    return {"messages": messages, "temperature": 0, "max_tokens": 24, **extra}


def validated(response):
    completion = ChatCompletion.model_validate(response)
    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert [c.index for c in completion.choices] == list(range(len(completion.choices)))
    return completion


def validated_chunks(chunks):
    """Checks every chunk and the stream's shape; returns the chunk objects."""
    parsed = [ChatCompletionChunk.model_validate(c) for c in chunks]
    assert len({c.id for c in parsed}) == 1, "every chunk shares the response id"
    seen_role, finished = set(), set()
    for chunk in parsed:
        for choice in chunk.choices:
            if choice.index not in seen_role:
                assert choice.delta.role == "assistant", "a choice starts with its role chunk"
                seen_role.add(choice.index)
            assert choice.index not in finished, "nothing after a choice's finish chunk"
            if choice.finish_reason is not None:
                finished.add(choice.index)
    assert seen_role == finished, "every choice that started finished"
    return parsed


def merge_tool_call_deltas(calls, deltas):
    """The calls so far with a chunk's tool-call deltas added, as OpenAI's
    client accumulates them: a delta with a new index starts a call (id, type,
    name, the arguments' first piece); later ones of that index append to its
    arguments."""
    calls = [dict(c, function=dict(c["function"])) for c in calls]
    for delta in deltas:
        known = [c for c in calls if c["index"] == delta["index"]]
        if not known:
            calls.append(dict(delta, function=dict(delta.get("function", {}))))
            continue
        piece = delta.get("function", {}).get("arguments", "")
        known[0]["function"]["arguments"] = known[0]["function"].get("arguments", "") + piece
    return calls


def reassemble(chunks):
    """Per choice index: (content, finish_reason, tool calls, logprob entries)."""
    out = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            content, finish, calls, logprobs = out.get(choice["index"], ("", None, [], []))
            delta = choice["delta"]
            content += delta.get("content") or ""
            calls = merge_tool_call_deltas(calls, delta.get("tool_calls", []))
            if choice.get("logprobs"):
                logprobs = logprobs + choice["logprobs"]["content"]
            finish = choice["finish_reason"] or finish
            out[choice["index"]] = (content, finish, calls, logprobs)
    return out


def usage_chunk(chunks):
    with_usage = [c for c in chunks if c.get("usage")]
    assert len(with_usage) <= 1
    if with_usage:
        assert with_usage[0] is chunks[-1] and with_usage[0]["choices"] == []
        return with_usage[0]["usage"]
    return None


# ---------------------------------------------------------------- live chat


@pytest.mark.timeout(300)
def test_blocking_and_streaming_agree_for_greedy(engine):
    request = greedy()
    response = engine.chat(request)
    completion = validated(response)
    message = completion.choices[0].message
    assert message.role == "assistant" and message.content and not message.tool_calls
    assert completion.choices[0].finish_reason in ("stop", "length")
    assert completion.model.endswith(".gguf")
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0

    chunks = list(engine.chat_stream({**request, "stream": True}))
    validated_chunks(chunks)
    content, finish, calls, _ = reassemble(chunks)[0]
    assert content == message.content
    assert finish == completion.choices[0].finish_reason
    assert calls == [] and usage_chunk(chunks) is None

    # The JSON entry point gives the same message.
    again = json.loads(engine.chat_json(json.dumps(request)))
    assert again["choices"][0]["message"] == response["choices"][0]["message"]


@pytest.mark.timeout(300)
def test_stream_events_end_with_one_terminal_call(engine):
    events = []
    outcome = engine.chat_stream_json(json.dumps(greedy(max_tokens=4)), events.append)
    assert not outcome.stopped_by_callback
    assert events[-1].finished and events[-1].delta == ""
    assert all(not e.finished for e in events[:-1])
    validated_chunks([json.loads(e.delta) for e in events[:-1]])


@pytest.mark.timeout(300)
def test_include_usage(engine):
    request = greedy(stream_options={"include_usage": True})
    blocking = engine.chat(request)
    chunks = list(engine.chat_stream({**request, "stream": True}))
    validated_chunks(chunks)
    usage = usage_chunk(chunks)
    assert usage == blocking["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.timeout(300)
def test_n_choices(engine):
    request = {"messages": HI, "n": 3, "temperature": 1.0, "seed": 11, "max_tokens": 12}
    response = engine.chat(request)
    completion = validated(response)
    assert len(completion.choices) == 3
    assert engine.chat(request)["choices"] == response["choices"], "seeded choices are reproducible"
    single = engine.chat({**request, "n": 1})
    assert completion.usage.prompt_tokens == single["usage"]["prompt_tokens"], "the prompt counts once"
    assert 3 <= completion.usage.completion_tokens <= 3 * 12
    assert response["choices"][0]["message"] == single["choices"][0]["message"], "choice 0 samples with the seed"

    chunks = list(engine.chat_stream({**request, "stream": True, "stream_options": {"include_usage": True}}))
    validated_chunks(chunks)
    streamed = reassemble(chunks)
    assert sorted(streamed) == [0, 1, 2]
    for i, choice in enumerate(response["choices"]):
        assert streamed[i][0] == (choice["message"]["content"] or "")
        assert streamed[i][1] == choice["finish_reason"]
    assert usage_chunk(chunks) == response["usage"]


@pytest.mark.timeout(300)
def test_return_token_ids(engine):
    """vLLM's return_token_ids: the response's prompt_token_ids, each
    choice's token_ids (the stop string's tokens included, as the usage
    counts them); streamed, the first chunk carries the prompt's ids and
    the chunks' token_ids add up to the same ids."""
    body = greedy(n=2, stop=["you"], return_token_ids=True)
    response = engine.chat(body)
    validated(response)
    assert response["prompt_token_ids"] == engine.tokenize_chat(body)
    total = 0
    for choice in response["choices"]:
        ids = choice["token_ids"]
        total += len(ids)
        assert engine.detokenize(ids).startswith(choice["message"]["content"])
    assert total == response["usage"]["completion_tokens"]
    assert "token_ids" not in engine.chat(greedy())["choices"][0]
    assert "prompt_token_ids" not in engine.chat(greedy())

    chunks = list(engine.chat_stream(dict(body, stream=True)))
    validated_chunks(chunks)
    assert chunks[0]["prompt_token_ids"] == response["prompt_token_ids"]
    assert all("prompt_token_ids" not in c for c in chunks[1:])
    streamed = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            streamed.setdefault(choice["index"], []).extend(choice.get("token_ids", []))
    assert [streamed[i] for i in (0, 1)] == [c["token_ids"] for c in response["choices"]]
    with pytest.raises(InvalidArgumentError, match="return_token_ids"):
        engine.chat(greedy(return_token_ids="yes"))


@pytest.mark.timeout(300)
def test_logprobs(engine):
    response = engine.chat(greedy(logprobs=True, top_logprobs=3))
    validated(response)
    entries = response["choices"][0]["logprobs"]["content"]
    assert len(entries) == response["usage"]["completion_tokens"]
    for entry in entries:
        assert entry["logprob"] <= 0 and bytes(entry["bytes"]).decode("utf-8", "replace")
        top = entry["top_logprobs"]
        assert len(top) == 3
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert top[0]["token"] == entry["token"], "greedy samples the most likely token"
    text = b"".join(bytes(e["bytes"]) for e in entries).decode("utf-8", "replace")
    assert text.startswith(response["choices"][0]["message"]["content"])

    plain = engine.chat(greedy(logprobs=True))
    assert all(e["top_logprobs"] == [] for e in plain["choices"][0]["logprobs"]["content"])
    assert engine.chat(greedy())["choices"][0]["logprobs"] is None

    chunks = list(engine.chat_stream(greedy(logprobs=True, top_logprobs=3, stream=True)))
    validated_chunks(chunks)
    assert reassemble(chunks)[0][3] == entries


@pytest.mark.timeout(300)
def test_max_tokens_and_stop(engine):
    cut = engine.chat(greedy(max_tokens=3))
    validated(cut)
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"]["completion_tokens"] == 3

    full = engine.chat(greedy())["choices"][0]["message"]["content"]
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    stopped = engine.chat(greedy(stop=[stop]))
    validated(stopped)
    assert stopped["choices"][0]["message"]["content"] == full[: full.index(stop)]
    assert stopped["choices"][0]["finish_reason"] == "stop"


@pytest.mark.timeout(300)
def test_breaking_out_of_a_stream_cancels(engine):
    def busy():
        stats = engine.stats()
        return stats["running_requests"] + stats["waiting_requests"]

    aborted = engine.stats()["requests_aborted"]
    stream = engine.chat_stream({"messages": HI, "n": 2, "max_tokens": 200, "ignore_eos": True, "stream": True})
    first = next(stream)
    assert first["choices"][0]["delta"]["role"] == "assistant"
    stream.close()  # returns once the native call has ended, after the engine let go of both choices
    deadline = time.time() + 30
    while busy() and time.time() < deadline:  # the stats are published between steps
        time.sleep(0.05)
    assert busy() == 0
    assert engine.stats()["requests_aborted"] == aborted + 2
    validated(engine.chat(greedy(max_tokens=2)))


@pytest.mark.timeout(300)
def test_async_chat(engine):
    request = greedy()
    blocking = engine.chat(request)

    async def run():
        responses = await asyncio.gather(*(engine.achat(request) for _ in range(3)))
        chunks = [chunk async for chunk in engine.achat_stream({**request, "stream": True})]
        return responses, chunks

    responses, chunks = asyncio.run(run())
    for response in responses:
        validated(response)
        assert response["choices"][0]["message"] == blocking["choices"][0]["message"]
    validated_chunks(chunks)
    assert reassemble(chunks)[0][0] == blocking["choices"][0]["message"]["content"]


# ---------------------------------------------------------------- tool calls


@pytest.fixture(scope="module")
def hermes_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, tool_parser="hermes") as eng:
        yield eng


@pytest.mark.timeout(300)
def test_tool_call_from_the_model(hermes_engine):
    request = greedy(FEW_SHOT_TOOL_CALLS, tools=[WEATHER_TOOL], max_tokens=40)
    response = hermes_engine.chat(request)
    completion = validated(response)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.id.startswith("call_") and call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "London"}

    chunks = list(hermes_engine.chat_stream({**request, "stream": True}))
    validated_chunks(chunks)
    content, finish, calls, _ = reassemble(chunks)[0]
    assert finish == "tool_calls" and content == ""
    assert [(c["index"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        (0, "get_weather", call.function.arguments)]

    # tool_choice "none": the same output is plain content.
    plain = hermes_engine.chat({**request, "tool_choice": "none"})
    validated(plain)
    assert plain["choices"][0]["finish_reason"] == "stop"
    assert "<tool_call>" in plain["choices"][0]["message"]["content"]


def test_tools_need_a_tool_parser(engine):
    # SmolLM2's template shows no tool-call format and none was named at load.
    with pytest.raises(InvalidArgumentError, match="tool_parser"):
        engine.chat(greedy(tools=[WEATHER_TOOL]))
    validated(engine.chat(greedy(tools=[WEATHER_TOOL], tool_choice="none", max_tokens=2)))


# ---------------------------------------------------------------- bad requests

BAD_REQUESTS = [
    ("{", "invalid JSON"),
    ('{"messages": [{"role": "user", "content": "Hi"}]} x', "invalid JSON"),
    ("[]", "object"),
    ("{}", "messages"),
    ('{"messages": []}', "messages"),
    ('{"messages": "Hi"}', "messages"),
    ('{"messages": [{"role": "bot", "content": "Hi"}]}', "role"),
    ('{"messages": [{"role": "user", "content": 5}]}', "content"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "temperature": "hot"}', "temperature"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "n": 0}', "'n'"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1.5}', "max_tokens"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2}', "logprobs"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "stop": [1]}', "stop"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "top_p": 0}', "top_p"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "tool_choice": "required", "tools": []}', "tool_choice"),
    ('{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": 3}', "chat_template_kwargs"),
]


@pytest.mark.parametrize("request_json,needle", BAD_REQUESTS)
def test_bad_request(engine, request_json, needle):
    with pytest.raises(InvalidArgumentError) as info:
        engine.chat_json(request_json)
    assert needle in str(info.value)
    with pytest.raises(InvalidArgumentError):
        list(engine.chat_stream(request_json))


@pytest.mark.timeout(300)
def test_template_error_leaves_the_engine_usable(engine):
    # A template that raises (an agent's tool-call turn, content null, no
    # longer does: it renders as "", issue 37).
    request = {"messages": HI, "chat_template": "{{ raise_exception('no such turn') }}", "max_tokens": 2}
    with pytest.raises(InvalidArgumentError, match="chat template error"):
        engine.chat(request)
    with pytest.raises(InvalidArgumentError, match="chat template error"):
        list(engine.chat_stream(request))
    validated(engine.chat(greedy(max_tokens=2)))


@pytest.mark.timeout(300)
def test_continue_final_message(engine):
    prefix = "The capital of France is"
    request = {"messages": HI + [{"role": "assistant", "content": prefix}], "add_generation_prompt": False,
               "continue_final_message": True, "temperature": 0, "max_tokens": 8}
    response = engine.chat(request)
    validated(response)
    assert response["choices"][0]["message"]["content"]
    with pytest.raises(InvalidArgumentError, match="continue_final_message"):
        engine.chat({**request, "add_generation_prompt": True})


@pytest.mark.timeout(300)
@pytest.mark.parametrize("option,needle", [("tool_parser", "unknown tool_parser 'nope'"),
                                           ("reasoning_parser", "unknown reasoning_parser 'nope'")])
def test_unknown_parser_names(smollm2_path, option, needle):
    with Engine.load(smollm2_path, max_model_len=128, **{option: "nope"}) as eng:
        for _ in range(2):  # refused at the first chat call, and at every later one
            with pytest.raises(InvalidArgumentError, match=needle):
                eng.chat(greedy(max_tokens=2))
        assert eng.complete("Hi").text is not None, "the engine stays usable"


# ---------------------------------------------------------------- fuzz

# Errors a malformed request may raise; anything else (a crash, an engine or
# internal error) fails the fuzz.
REQUEST_ERRORS = (InvalidArgumentError, InvalidConfigurationError, InvalidUtf8Error, InteriorNulError)

SEED_REQUESTS = [
    {"messages": HI, "max_tokens": 1},
    {"messages": [{"role": "system", "content": "Be brief."}] + HI, "max_tokens": 2, "temperature": 0},
    {"messages": HI, "max_tokens": 1, "n": 2, "seed": 3, "logprobs": True, "top_logprobs": 2},
    {"messages": HI, "max_tokens": 1, "stop": ["."], "stream_options": {"include_usage": True}},
    {"messages": HI, "max_tokens": 1, "tools": [WEATHER_TOOL], "tool_choice": "none"},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "max_tokens": 1,
     "chat_template_kwargs": {"enable_thinking": False}, "top_k": 5, "top_p": 0.9, "min_p": 0.1},
    {"messages": HI + [{"role": "assistant", "content": "Hel"}], "max_tokens": 1, "add_generation_prompt": False,
     "continue_final_message": True, "presence_penalty": 0.5, "frequency_penalty": 0.5, "repetition_penalty": 1.1},
]

ODD_VALUES = [None, True, False, 0, -1, 1, 2, 3, 20, 21, 129, 2 ** 31, -2 ** 31 - 1, 2 ** 63, 10 ** 30, 0.5, -0.0,
              1.5, 1e308, -1e308, "", "x", "user", "assistant", "tool", "auto", "none", "required", "\u00e9\u4e2d",
              "\ud800", "a\u0000b", "<|im_start|>", "{{ x }}", [], [1], [""], ["a", "b"], {}, {"type": "text"},
              {"role": "user"}, {"role": "user", "content": None}, [{"type": "image_url"}], float("nan")]


def random_value(rng, depth=0):
    if depth > 3 or rng.random() < 0.6:
        return copy.deepcopy(rng.choice(ODD_VALUES))
    if rng.random() < 0.5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["role", "content", "messages", "name", "type", "function", "text", "tool_calls", "x"]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def containers(value, found):
    if isinstance(value, (dict, list)):
        found.append(value)
        for child in (value.values() if isinstance(value, dict) else value):
            containers(child, found)
    return found


def mutate(rng, document):
    """A structural mutation of a request document (in place)."""
    target = rng.choice(containers(document, []))
    fields = ["messages", "max_tokens", "n", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "logprobs",
              "top_logprobs", "tools", "tool_choice", "stream_options", "chat_template_kwargs", "priority",
              "add_generation_prompt", "continue_final_message", "min_tokens", "role", "content", "response_format"]
    if isinstance(target, dict):
        action = rng.randrange(3)
        if action == 0 and target:
            del target[rng.choice(list(target))]
        elif action == 1 and target:
            target[rng.choice(list(target))] = random_value(rng)
        else:
            target[rng.choice(fields)] = random_value(rng)
    elif target:
        i = rng.randrange(len(target))
        if rng.random() < 0.5:
            target[i] = random_value(rng)
        else:
            del target[i]
    else:
        target.append(random_value(rng))


def mutate_text(rng, text):
    """A byte-level mutation of the JSON text."""
    i = rng.randrange(len(text) + 1)
    choice = rng.randrange(4)
    if choice == 0:
        return text[:i]
    if choice == 1:
        return text[:i] + text[i + 1:]
    if choice == 2:
        return text[:i] + rng.choice('{}[]",:\\0e-.tfn \u00e9\ud83d\ude00') + text[i:]
    return "[" * rng.randrange(200, 400) + text


def fuzz_documents(rng, count):
    for k in range(count):
        kind = k % 10
        if kind == 0:
            yield json.dumps(random_value(rng))
            continue
        document = copy.deepcopy(rng.choice(SEED_REQUESTS))
        for _ in range(rng.randrange(2, 6)):
            mutate(rng, document)
        # Keep generations short: most documents keep a small max_tokens.
        if isinstance(document, dict) and rng.random() < 0.8:
            document["max_tokens"] = 1
        text = json.dumps(document)
        yield mutate_text(rng, text) if kind >= 7 else text


@pytest.fixture(scope="module")
def fuzz_engine(smollm2_path):
    # A short max_model_len bounds any generation a mutation leaves unbounded.
    # One compute thread: the fuzz runs hundreds of one-token generations,
    # whose latency a spinning thread pool multiplies on a busy machine.
    saved = os.environ.get("VLLM_CPP_NUM_THREADS")
    os.environ["VLLM_CPP_NUM_THREADS"] = "1"  # read when the engine is loaded
    try:
        eng = Engine.load(smollm2_path, max_model_len=48)
    finally:
        if saved is None:
            del os.environ["VLLM_CPP_NUM_THREADS"]
        else:
            os.environ["VLLM_CPP_NUM_THREADS"] = saved
    with eng:
        yield eng


@pytest.mark.timeout(150)
def test_fuzz_chat_json(fuzz_engine):
    rng = random.Random(20240607)
    outcomes = {"ok": 0, "refused": 0}
    for document in fuzz_documents(rng, 3000):
        try:
            response = fuzz_engine.chat_json(document)
        except REQUEST_ERRORS as exc:
            assert str(exc), document
            assert not isinstance(exc, (EngineError, UnknownNativeError)), (document, exc)
            outcomes["refused"] += 1
        else:
            validated(json.loads(response))
            outcomes["ok"] += 1
    assert outcomes["ok"] > 50 and outcomes["refused"] > 1000, outcomes
    validated(fuzz_engine.chat(greedy(max_tokens=2)))


# ---------------------------------------------------------------- native


@pytest.mark.timeout(600)
def test_chat_service_with_a_scripted_engine(smollm2_path, tmp_path):
    build = build_native_tests()
    result = subprocess.run([str(build / "test_chat_service"), smollm2_path, str(tmp_path)], capture_output=True,
                            text=True, timeout=120)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0 and summary.endswith(" 0 failed"), result.stdout[-4000:] + result.stderr[-4000:]
    completions = sorted(tmp_path.glob("completion_*.json"))
    streams = sorted(tmp_path.glob("stream_*.jsonl"))
    assert len(completions) >= 4 and len(streams) >= 4
    for path in completions:
        validated(json.loads(path.read_text(encoding="utf-8")))
    for path in streams:
        validated_chunks([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
    tool_call = json.loads((tmp_path / "completion_tool_call.json").read_text(encoding="utf-8"))
    assert tool_call["choices"][0]["finish_reason"] == "tool_calls"
