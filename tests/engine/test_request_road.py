"""One request road through the C ABI: every entry point that starts a
request reaches the engine through the pull primitive. Thousands of chat
streams with several choices from one asyncio loop cost no thread each (a
chat call is a stage over its choices' streams, rendered when its consumer
takes them: no delivery thread, no second stream), while the v10 callback
path keeps its documented delivery thread per request. Thread counts are the
process's native threads (/proc/self/task), sampled during the run.
"""

import asyncio
import json
import threading
import time

import pytest

from vllm_cpp import Engine, SamplingParams
from thread_peak import TASKS, gather_with_thread_peak, thread_count

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]  # about 90 s on 2 cores

STREAMS = 2000
QUESTIONS = ["Hi", "What is 2+2?", "Name a colour.", "Say hello.", "Count to three.", "Who are you?"]

needs_proc = pytest.mark.skipif(not TASKS.exists(), reason="thread counts are read from /proc/self/task")


def chat_body(question: str) -> dict:
    return {"messages": [{"role": "user", "content": question}], "n": 2, "max_tokens": 3, "temperature": 0}


@pytest.fixture(scope="module")
def road_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128, max_num_seqs=256) as eng:
        yield eng


def choices_of(chunks):
    """Each choice's content and finish reason, and the order the choices'
    chunks came in (runs of one choice's chunks as one entry)."""
    contents, finishes, order = {}, {}, []
    for chunk in chunks:
        for choice in chunk["choices"]:
            index = choice["index"]
            if not order or order[-1] != index:
                order.append(index)
            contents[index] = contents.get(index, "") + (choice["delta"].get("content") or "")
            if choice.get("finish_reason"):
                finishes[index] = choice["finish_reason"]
    return contents, finishes, order


def interleaved(order):
    """vLLM's order of two streamed choices: every choice's role chunk
    first, so choice 0's content and finish come after choice 1 started
    (the sequential order, all of choice 0 then choice 1, was [0, 1])."""
    return order[:3] == [0, 1, 0]


@needs_proc
def test_two_thousand_chat_streams_with_two_choices_without_a_thread_each(road_engine):
    expected = {q: [c["message"]["content"] for c in road_engine.chat(chat_body(q))["choices"]] for q in QUESTIONS}
    baseline = thread_count()

    async def one(question):
        return [chunk async for chunk in road_engine.achat_stream(chat_body(question))]

    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(STREAMS)]
    results, peak = gather_with_thread_peak([one(q) for q in questions])
    print("\n%d concurrent chat streams with n=2: %d threads before, at most %d during"
          % (STREAMS, baseline, peak))
    for question, chunks in zip(questions, results):
        contents, finishes, order = choices_of(chunks)
        # Both choices, whole, in vLLM's order: every choice's role chunk,
        # then the choices interleaved as generated (not all of choice 0,
        # then choice 1: that was [0, 1]).
        assert interleaved(order), order
        assert [contents[0], contents[1]] == expected[question]
        assert set(finishes) == {0, 1}
    # No thread per request (a few may come and go: the engine's own).
    assert peak <= baseline + 2, (baseline, peak)
    assert road_engine.stats()["running_requests"] == 0


@needs_proc
def test_callback_requests_run_their_callbacks_on_a_delivery_thread_each(road_engine):
    """The v10 callback path: a completion's and a chat call's callback run
    on a library-owned thread of their own, neither the submitter's nor the
    engine loop's (where a logits processor runs), one per request."""
    submitter = threading.get_ident()
    engine_loop = set()

    def note_engine_loop(ids, logits):
        engine_loop.add(threading.get_ident())

    road_engine.complete("Hi", SamplingParams.greedy(max_tokens=2, logits_processor=note_engine_loop))
    assert len(engine_loop) == 1

    release = threading.Event()
    lock = threading.Lock()
    callback_threads = {}

    def callback_for(name):
        def callback(event):
            with lock:
                callback_threads.setdefault(name, threading.get_ident())
            release.wait(60)
        return callback

    n = 4
    baseline = thread_count()
    requests = [road_engine.submit("Once upon a time", SamplingParams.greedy(max_tokens=3), callback_for(("c", i)))
                for i in range(n)]
    requests += [road_engine.submit_chat(dict(chat_body("Hi"), stream=True), callback_for(("chat", i)))
                 for i in range(n)]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with lock:
                if len(callback_threads) == 2 * n:
                    break
            time.sleep(0.001)
        # Every request's callback is blocked on its own thread at once.
        assert len(callback_threads) == 2 * n
        assert thread_count() >= baseline + 2 * n
    finally:
        release.set()
        for request in requests:
            request.wait()
            request.close()
    threads = set(callback_threads.values())
    assert len(threads) == 2 * n
    assert submitter not in threads and not threads & engine_loop


def test_a_blocking_chat_and_its_stream_agree(road_engine):
    """chat(), chat_stream() and achat() are readers of the same stage."""
    body = chat_body("Hi")
    whole = road_engine.chat(body)
    contents, finishes, order = choices_of(list(road_engine.chat_stream(body)))
    assert interleaved(order), order
    assert [contents[0], contents[1]] == [c["message"]["content"] for c in whole["choices"]]
    assert [finishes[0], finishes[1]] == [c["finish_reason"] for c in whole["choices"]]
    assert asyncio.run(road_engine.achat(body))["choices"] == whole["choices"]
    # json text in, json text out (the body's "stream" field aside).
    assert json.loads(road_engine.chat_json(json.dumps(dict(body, stream=True))))["choices"] == whole["choices"]
