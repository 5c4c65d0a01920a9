"""Generation on the real model: streaming equals blocking, seeds repeat,
and every sampling parameter has a visible effect."""

import collections
import re

import pytest

from vllm_cpp import Engine, FinishReason, SamplingParams, StreamControl

pytestmark = pytest.mark.timeout(300)
MAX_MODEL_LEN = 256


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN) as engine:
        yield engine

CHAT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
# Without its usual system turn SmolLM2 loops on this one ("I'm so glad you're here. ...").
LOOPING_CHAT = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "Les fleurs du jardin sont",
    "1, 2, 3, 4,",
    "Emoji time: 🎉🎉",
]


def words(text):
    return re.findall(r"[A-Za-z]+", text.lower())


@pytest.mark.parametrize("prompt", PROMPTS)
def test_stream_deltas_concatenate_to_complete_text(engine, prompt):
    params = SamplingParams.greedy(max_tokens=24)
    complete = engine.complete(prompt, params)
    events = []
    outcome = engine.complete_stream(prompt, params, lambda e: events.append(e))
    assert not outcome.stopped_by_callback
    assert "".join(e.delta for e in events) == complete.text
    assert [e.finished for e in events].count(True) == 1 and events[-1].finished
    assert "".join(engine.stream(prompt, params)) == complete.text


def test_greedy_is_deterministic_and_counts_tokens(engine):
    params = SamplingParams.greedy(max_tokens=10, ignore_eos=True)
    a = engine.complete("The capital of France is", params)
    b = engine.complete("The capital of France is", params)
    assert a == b
    assert a.finish_reason == FinishReason.LENGTH
    assert a.completion_tokens == 10
    assert a.prompt_tokens == 5


def test_seeded_sampling_repeats_and_seeds_differ(engine):
    params = SamplingParams(temperature=1.0, max_tokens=24, seed=1234, ignore_eos=True)
    a = engine.complete("Once upon a time", params)
    b = engine.complete("Once upon a time", params)
    assert a.text == b.text
    others = {engine.complete("Once upon a time", SamplingParams(temperature=1.0, max_tokens=24, seed=s,
                                                                   ignore_eos=True)).text for s in range(5)}
    assert len(others) > 1


def test_temperature_spreads_samples(engine):
    hot = {engine.complete("My favourite animal is", SamplingParams(temperature=1.5, max_tokens=8, seed=s)).text
           for s in range(6)}
    cold = {engine.complete("My favourite animal is", SamplingParams(temperature=1e-6, max_tokens=8, seed=s)).text
            for s in range(3)}
    assert len(hot) >= 4
    assert len(cold) == 1


@pytest.mark.parametrize("narrowing", [
    {"temperature": 1.0, "top_k": 1},
    {"temperature": 1.0, "top_p": 0.01},
    {"temperature": 1.5, "min_p": 1.0},
], ids=["top_k=1", "top_p=0.01", "min_p=1"])
def test_narrowed_sampling_is_greedy(engine, narrowing):
    greedy = engine.complete("The weather today is", SamplingParams.greedy(max_tokens=16))
    for seed in range(3):
        sampled = engine.complete("The weather today is", SamplingParams(max_tokens=16, seed=seed, **narrowing))
        assert sampled.text == greedy.text


def test_top_k_widens_with_k(engine):
    texts = {engine.complete("My favourite animal is", SamplingParams(top_k=50, max_tokens=6, seed=s)).text
             for s in range(6)}
    assert len(texts) >= 3


def _most_common_count(text):
    counts = collections.Counter(words(text))
    return counts.most_common(1)[0][1] if counts else 0


def test_repetition_penalty_reduces_repeats(engine):
    plain = engine.complete(LOOPING_CHAT, SamplingParams.greedy(max_tokens=48, ignore_eos=True))
    penalized = engine.complete(LOOPING_CHAT, SamplingParams.greedy(max_tokens=48, ignore_eos=True, repetition_penalty=1.5))
    assert _most_common_count(penalized.text) < _most_common_count(plain.text)


@pytest.mark.parametrize("field", ["presence_penalty", "frequency_penalty"])
def test_presence_and_frequency_penalties_reduce_repeats(engine, field):
    prompt = LOOPING_CHAT
    plain = engine.complete(prompt, SamplingParams.greedy(max_tokens=32, ignore_eos=True))
    penalized = engine.complete(prompt, SamplingParams.greedy(max_tokens=32, ignore_eos=True, **{field: 2.0}))
    assert _most_common_count(penalized.text) < _most_common_count(plain.text)


def test_eos_stops_unless_ignored(engine):
    natural = engine.complete(CHAT, SamplingParams.greedy(max_tokens=64))
    assert natural.finish_reason == FinishReason.STOP
    assert natural.completion_tokens < 64
    forced = engine.complete(CHAT, SamplingParams.greedy(max_tokens=natural.completion_tokens + 6, ignore_eos=True))
    assert forced.finish_reason == FinishReason.LENGTH
    assert forced.completion_tokens == natural.completion_tokens + 6
    assert forced.text.startswith(natural.text)


def test_min_tokens_defers_eos(engine):
    natural = engine.complete(CHAT, SamplingParams.greedy(max_tokens=64))
    longer = engine.complete(CHAT, SamplingParams.greedy(max_tokens=natural.completion_tokens + 20,
                                                         min_tokens=natural.completion_tokens + 5))
    assert longer.completion_tokens >= natural.completion_tokens + 5


def test_max_tokens_none_is_bounded_by_max_model_len(engine):
    out = engine.complete("Count: one two three", SamplingParams.greedy(max_tokens=None, ignore_eos=True))
    assert out.finish_reason == FinishReason.LENGTH
    assert out.prompt_tokens + out.completion_tokens == MAX_MODEL_LEN


def test_stop_string_cuts_text_before_match(engine):
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    full = engine.complete("Once upon a time, in a small village by the sea, there lived", params).text
    stop = full[10:16]
    assert stop and stop not in full[:10]
    cut = engine.complete("Once upon a time, in a small village by the sea, there lived",
                          SamplingParams.greedy(max_tokens=32, ignore_eos=True, stop=(stop,)))
    assert cut.text == full[: full.index(stop)]
    assert cut.finish_reason == FinishReason.STOP
    streamed = "".join(engine.stream("Once upon a time, in a small village by the sea, there lived",
                                     SamplingParams.greedy(max_tokens=32, ignore_eos=True, stop=(stop,))))
    assert streamed == cut.text


def test_stop_string_spanning_deltas_is_never_leaked(engine):
    """A stop string that spans several tokens is cut even though its first
    part arrived in an earlier delta: that tail is held back."""
    prompt = "Once upon a time, in a small village by the sea, there lived"
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    deltas = [e.delta for e in collect_events(engine, prompt, params)]
    # A stop that starts inside one delta and ends inside a later one.
    text, boundary = "".join(deltas), len(deltas[0]) + len(deltas[1])
    stop = text[boundary - 2: boundary + 3]
    assert len(stop) == 5
    cut_deltas = [e.delta for e in collect_events(engine, prompt, SamplingParams.greedy(max_tokens=32, ignore_eos=True, stop=(stop,)))]
    assert "".join(cut_deltas) == text[: text.index(stop)]


def collect_events(engine, prompt, params):
    events = []
    engine.complete_stream(prompt, params, events.append)
    return events


def test_callback_stop_aborts_and_engine_stays_usable(engine):
    seen = []

    def on_event(event):
        seen.append(event)
        return StreamControl.STOP if len(seen) == 2 else StreamControl.CONTINUE

    outcome = engine.complete_stream("Once upon a time", SamplingParams.greedy(max_tokens=20, ignore_eos=True), on_event)
    assert outcome.stopped_by_callback
    assert len(seen) == 2 and not any(e.finished for e in seen)
    assert engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).text


def test_stop_on_terminal_event_is_a_natural_finish(engine):
    outcome = engine.complete_stream("Hi", SamplingParams.greedy(max_tokens=3),
                                     lambda e: StreamControl.STOP if e.finished else StreamControl.CONTINUE)
    assert not outcome.stopped_by_callback


def test_callback_exception_propagates_and_engine_stays_usable(engine):
    class Boom(Exception):
        pass

    def on_event(event):
        raise Boom("from the callback")

    with pytest.raises(Boom, match="from the callback"):
        engine.complete_stream("Once upon a time", SamplingParams.greedy(max_tokens=20), on_event)
    assert engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).text


def test_breaking_out_of_stream_cancels(engine):
    gen = engine.stream("Once upon a time", SamplingParams.greedy(max_tokens=200, ignore_eos=True))
    first = next(gen)
    assert first
    gen.close()
    assert engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).text

