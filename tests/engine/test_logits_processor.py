"""Host logits processors (SamplingParams.logits_processor) on SmolLM2: the
processor sees the generated ids and edits the logits row in place; an
exception in it surfaces as LogitsProcessorError with the engine usable.
The engine's own edits, logit_bias and allowed_token_ids, match processors
that make the same edits, on every submit path, and bad ones are refused
by name; stop_token_ids, include_stop_str_in_output, skip_special_tokens,
truncate_prompt_tokens and bad_words (the other request options) shape the
text as vLLM does."""

import asyncio
import threading

import numpy as np
import pytest

import vllm_cpp
from vllm_cpp import LogitsProcessorError, RequestOutcome, SamplingParams

pytestmark = pytest.mark.timeout(300)

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with vllm_cpp.Engine.load(smollm2_path, max_model_len=256, max_num_seqs=8) as eng:
        yield eng


def force(token_id, seen=None):
    def processor(ids, logits):
        if seen is not None:
            seen.append(list(ids))
        assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
        logits[:] = -np.inf
        logits[token_id] = 0.0

    return processor


def test_forcing_one_token_repeats_it(engine):
    seen = []
    one = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, logits_processor=force(1000)))
    many = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=6, logits_processor=force(1000, seen)))
    assert one.text and many.text == one.text * 6 and many.completion_tokens == 6
    # Called once per decode step with the ids generated so far.
    assert seen == [[1000] * i for i in range(6)]


def test_sampled_requests_obey_the_processor_too(engine):
    params = SamplingParams(temperature=1.5, seed=7, max_tokens=5, logits_processor=force(2000))
    one = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, logits_processor=force(2000)))
    assert engine.complete(PROMPT, params).text == one.text * 5


def test_processor_exception_is_reported_and_the_engine_stays_usable(engine):
    def boom(ids, logits):
        raise ZeroDivisionError("no")

    with pytest.raises(LogitsProcessorError) as info:
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=4, logits_processor=boom))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(LogitsProcessorError):
        engine.complete_stream(PROMPT, SamplingParams.greedy(max_tokens=4, logits_processor=boom), lambda e: None)
    req = engine.submit(PROMPT, SamplingParams.greedy(max_tokens=4, logits_processor=boom), lambda e: None)
    with pytest.raises(LogitsProcessorError):
        req.wait()
    req.close()
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=3)).completion_tokens == 3
    assert len(vllm_cpp._ffi.handles) == 0


def test_concurrent_requests_each_get_their_own_processor(engine):
    ids = [300 + 37 * i for i in range(8)]
    singles = [engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, logits_processor=force(t))).text
               for t in ids]
    texts = [[] for _ in ids]
    reqs = [engine.submit(PROMPT, SamplingParams.greedy(max_tokens=4, logits_processor=force(t)),
                          lambda e, out=out: out.append(e.delta))
            for t, out in zip(ids, texts)]
    for r in reqs:
        assert r.wait() is RequestOutcome.COMPLETED
        r.close()
    assert ["".join(t) for t in texts] == [s * 4 for s in singles]


def test_processor_needs_bounded_max_tokens():
    with pytest.raises(vllm_cpp.InvalidConfigurationError):
        SamplingParams(max_tokens=None, logits_processor=force(1))


def test_request_closed_from_its_callback_keeps_its_processor_safe(engine):
    """Closed from its own callback, a request is freed by the library once
    the callback returns; the engine may still run its logits processor
    before it drops the request, and that call finds the released processor
    gone (and is ignored) instead of freed memory. The engine goes on."""
    submitted = threading.Event()
    closed = threading.Event()
    holder = {}

    def close_at_first_event(event):
        submitted.wait(60)
        holder["request"].close()
        closed.set()

    for _ in range(3):
        submitted.clear()
        closed.clear()
        params = SamplingParams.greedy(max_tokens=64, ignore_eos=True, logits_processor=force(1000))
        holder["request"] = engine.submit(PROMPT, params, close_at_first_event)
        submitted.set()
        assert closed.wait(60)
        assert holder["request"].closed
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=4)).completion_tokens == 4


# --- logit_bias and allowed_token_ids (the engine's own edits) ---------------

def add_bias(bias):
    def processor(ids, logits):
        for token, b in bias.items():
            logits[token] += b

    return processor


def keep_only(allowed):
    def processor(ids, logits):
        kept = {t: float(logits[t]) for t in allowed}
        logits[:] = -np.inf
        for t, v in kept.items():
            logits[t] = v

    return processor


def generated_ids(engine, prompt, params):
    request = engine.submit(prompt, params, lambda e: None)
    with request:
        request.wait()
        return engine.request_completion(request).token_ids


def test_logit_bias_matches_a_processor_adding_it(engine):
    """Seeded sampling with penalties: the native bias and a processor adding
    the same numbers (both run before the penalties) draw the same tokens."""
    paris, london = (engine.tokenize(w, add_special_tokens=False)[0] for w in (" Paris", " London"))
    bias = {paris: -100.0, london: 4.5, 13: 2.0}
    common = dict(temperature=0.9, seed=11, max_tokens=24, presence_penalty=0.5, repetition_penalty=1.2)
    native = engine.complete(PROMPT, SamplingParams(logit_bias=bias, **common))
    emulated = engine.complete(PROMPT, SamplingParams(logits_processor=add_bias(bias), **common))
    plain = engine.complete(PROMPT, SamplingParams(**common))
    assert native.text == emulated.text and native.text != plain.text
    assert " Paris" not in native.text


def test_allowed_token_ids_match_a_processor_masking_the_rest(engine):
    allowed = [engine.tokenize(w, add_special_tokens=False)[0] for w in (" Paris", " London", ",", " and")]
    common = dict(temperature=1.2, seed=3, max_tokens=16)
    native = generated_ids(engine, PROMPT, SamplingParams(allowed_token_ids=allowed, **common))
    emulated = generated_ids(engine, PROMPT, SamplingParams(logits_processor=keep_only(allowed), **common))
    assert native == emulated and len(native) == 16 and set(native) <= set(allowed)


def test_every_submit_path_applies_them(engine):
    london = engine.tokenize(" London", add_special_tokens=False)[0]
    params = SamplingParams.greedy(max_tokens=4, logit_bias={london: 100})
    expected = " London" * 4
    assert engine.complete(PROMPT, params).text == expected
    assert "".join(engine.stream(PROMPT, params)) == expected
    assert engine.complete(engine.tokenize(PROMPT), params).text == expected
    assert generated_ids(engine, PROMPT, params) == (london,) * 4
    with_logprobs = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, logprobs=1, logit_bias={london: 100}))
    assert with_logprobs.token_ids == (london, london)
    # Log-probabilities are the raw model's, not the biased row's.
    assert with_logprobs.logprobs[0].logprob < -1.0

    async def pulled():
        return await engine.acomplete(PROMPT, params)

    assert asyncio.run(pulled()).text == expected


def test_chat_requests_take_the_same_fields(engine):
    london = engine.tokenize(" London", add_special_tokens=False)[0]
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "temperature": 0}
    biased = engine.chat(dict(body, logit_bias={str(london): 100}))
    assert biased["choices"][0]["message"]["content"] == " London London London"
    allowed = engine.chat(dict(body, allowed_token_ids=[london]))
    assert allowed["choices"][0]["message"]["content"] == " London London London"
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="logit_bias"):
        engine.chat(dict(body, logit_bias={"x": 1}))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"logit_bias": {5: 100.5}}, vllm_cpp.InvalidArgumentError, r"logit_bias\["),
    ({"logit_bias": {10 ** 6: 1}}, vllm_cpp.InvalidArgumentError, "outside the vocabulary"),
    ({"logit_bias": {-3: 1}}, vllm_cpp.InvalidArgumentError, "token ids"),
    ({"logit_bias": {5: float("inf")}}, vllm_cpp.InvalidConfigurationError, "finite"),
    ({"logit_bias": {5: "high"}}, vllm_cpp.InvalidConfigurationError, "number"),
    ({"logit_bias": {"5": 1}}, vllm_cpp.InvalidConfigurationError, "logit_bias key"),
    ({"logit_bias": [5]}, vllm_cpp.InvalidConfigurationError, "mapping"),
    ({"allowed_token_ids": []}, vllm_cpp.InvalidArgumentError, "must not be empty"),
    ({"allowed_token_ids": [7, 7]}, vllm_cpp.InvalidArgumentError, "twice"),
    ({"allowed_token_ids": [10 ** 6]}, vllm_cpp.InvalidArgumentError, "outside the vocabulary"),
    ({"allowed_token_ids": "abc"}, vllm_cpp.InvalidConfigurationError, "sequence"),
    ({"allowed_token_ids": [1.5]}, vllm_cpp.InvalidConfigurationError, r"allowed_token_ids\[0\]"),
])
def test_bad_values_are_refused_by_name(engine, kwargs, error, match):
    with pytest.raises(error, match=match):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, **kwargs))
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_no_allowed_token_left_fails_the_request_only(engine):
    eos = engine.tokenize("<|im_end|>", add_special_tokens=False)
    with pytest.raises(vllm_cpp.VllmError, match="allowed_token_ids"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=4, min_tokens=2, allowed_token_ids=eos))
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_stop_token_ids_and_include_stop_str_in_output(engine):
    plain = generated_ids(engine, PROMPT, SamplingParams.greedy(max_tokens=12))
    text = engine.detokenize(plain)
    k = next(i for i in range(3, 12) if plain[i] not in plain[:i])  # a token's first appearance
    stopped = engine.complete(engine.tokenize(PROMPT), SamplingParams.greedy(max_tokens=12, stop_token_ids=[plain[k]]))
    assert stopped.token_ids == tuple(plain[:k + 1]) and stopped.finish_reason == "stop"
    assert stopped.text == engine.detokenize(plain[:k + 1])
    # Masked before min_tokens, as EOS is; a special token adds no text.
    later = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=12, min_tokens=2, stop_token_ids=[plain[0]]))
    assert later.completion_tokens >= 2
    eos = engine.tokenize("<|im_end|>", add_special_tokens=False)
    special = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=6, ignore_eos=True, stop_token_ids=eos,
                                                            logit_bias={eos[0]: 100}))
    assert special.text == "" and special.completion_tokens == 1 and special.finish_reason == "stop"
    stop = text[5:9]
    at = text.index(stop)  # where the match is (the same place unless it occurs earlier)
    without = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=12, stop=[stop]))
    kept = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=12, stop=[stop], include_stop_str_in_output=True))
    assert without.text == text[:at] and kept.text == text[:at + 4]
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0}
    reply = engine.chat(chat)["choices"][0]["message"]["content"]
    stop = reply[2:4]
    cut = engine.chat(dict(chat, stop=[stop], include_stop_str_in_output=True))
    assert cut["choices"][0]["message"]["content"] == reply[:reply.index(stop) + 2]
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="stop_token_ids"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, stop_token_ids=[10 ** 6]))
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="include_stop_str_in_output"):
        engine.chat(dict(chat, include_stop_str_in_output="yes"))
    with pytest.raises(vllm_cpp.InvalidConfigurationError, match="include_stop_str_in_output"):
        SamplingParams(include_stop_str_in_output=1)


def test_skip_special_tokens(engine):
    """vLLM's skip_special_tokens: a control token's text is left out by
    default and output when it is False (completions and chat)."""
    start = engine.tokenize("<|im_start|>", add_special_tokens=False)
    forced = dict(max_tokens=2, allowed_token_ids=start)
    assert engine.complete(PROMPT, SamplingParams.greedy(**forced)).text == ""
    assert engine.complete(PROMPT, SamplingParams.greedy(skip_special_tokens=False, **forced)).text == \
        "<|im_start|>" * 2
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "temperature": 0,
            "allowed_token_ids": start, "skip_special_tokens": False}
    assert engine.chat(chat)["choices"][0]["message"]["content"] == "<|im_start|>" * 2
    with pytest.raises(vllm_cpp.InvalidConfigurationError, match="skip_special_tokens"):
        SamplingParams(skip_special_tokens=None)


def test_truncate_prompt_tokens(engine):
    """vLLM's truncate_prompt_tokens keeps the prompt's last k tokens (text
    and token prompts, chat too, whose usage and ids count what ran)."""
    noise = "Unrelated words come first here. "
    ids = engine.tokenize(noise + PROMPT)
    tail = engine.tokenize(PROMPT, add_special_tokens=False)
    cut = SamplingParams.greedy(max_tokens=4, truncate_prompt_tokens=len(tail))
    truncated = engine.complete(noise + PROMPT, cut)
    assert truncated.prompt_tokens == len(tail)
    assert truncated.text == engine.complete(tail, SamplingParams.greedy(max_tokens=4)).text
    assert engine.complete(ids, cut).text == truncated.text
    assert engine.prompt_token_ids(noise + PROMPT, cut) == ids[-len(tail):]
    chat = engine.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "return_token_ids": True,
                        "truncate_prompt_tokens": 3})
    assert chat["usage"]["prompt_tokens"] == 3 and len(chat["prompt_token_ids"]) == 3
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="-1"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, truncate_prompt_tokens=-1))
    with pytest.raises(vllm_cpp.InvalidArgumentError, match="truncate_prompt_tokens"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=1, truncate_prompt_tokens=0))


def test_bad_words(engine):
    """vLLM's bad_words: a one-token word never comes out; a longer one's
    last token is masked where the rest of it came out (alone or after a
    space, as vLLM tokenizes it), so the output never contains the word."""
    plain = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=16)).text
    assert "Paris" in plain and "United States" in plain
    banned = engine.complete(PROMPT, SamplingParams.greedy(max_tokens=16, bad_words=["Paris", "United States"]))
    assert "Paris" not in banned.text and "United States" not in banned.text
    paris = set(engine.tokenize(" Paris", add_special_tokens=False) + engine.tokenize("Paris", add_special_tokens=False))
    sampled = generated_ids(engine, PROMPT, SamplingParams(temperature=1.5, seed=5, max_tokens=32, bad_words=["Paris"]))
    assert not paris & set(sampled)
    chat = {"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 12,
            "temperature": 0, "bad_words": ["Paris"]}
    assert "Paris" not in engine.chat(chat)["choices"][0]["message"]["content"]
    only = engine.tokenize(" Paris", add_special_tokens=False)
    with pytest.raises(vllm_cpp.VllmError, match="allowed_token_ids.*bad_words"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, allowed_token_ids=only, bad_words=["Paris"]))
    with pytest.raises(vllm_cpp.InvalidArgumentError, match=r"bad_words\[0\]"):
        engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2, bad_words=["  "]))
    with pytest.raises(vllm_cpp.InvalidConfigurationError, match="bad_words"):
        SamplingParams(bad_words="Paris")
    assert engine.complete(PROMPT, SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_params_keep_them_read_only():
    params = SamplingParams(logit_bias={3: 1, 4: -2.5}, allowed_token_ids=[4, 3])
    assert params.logit_bias == {3: 1.0, 4: -2.5} and params.allowed_token_ids == (4, 3)
    with pytest.raises(TypeError):
        params.logit_bias[3] = 5
    assert params.request_options() == {"logit_bias": {"3": 1.0, "4": -2.5}, "allowed_token_ids": [4, 3]}
    assert SamplingParams(stop_token_ids=[9], include_stop_str_in_output=True).request_options() == \
        {"stop_token_ids": [9], "include_stop_str_in_output": True}
    assert SamplingParams().request_options() == {}
    assert params.for_choice(1).logit_bias == params.logit_bias
