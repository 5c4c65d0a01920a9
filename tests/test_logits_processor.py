"""Host logits processors (SamplingParams.logits_processor) on SmolLM2: the
processor sees the generated ids and edits the logits row in place; an
exception in it surfaces as LogitsProcessorError with the engine usable."""

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
