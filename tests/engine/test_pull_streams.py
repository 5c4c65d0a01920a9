"""The pull path under the async API: thousands of ``astream`` requests from
one asyncio loop without a thread of their own, events in order per request,
cancellation; each event loop watching its own poller's descriptor (several
loops, closed loops, an engine closed from another thread, a loop that
cannot watch descriptors, no descriptor to be had); and the v10 callback
path, which keeps a delivery thread per request. Thread counts are the
process's native threads (/proc/self/status), descriptors /proc/self/fd.
"""

import asyncio
import os
import pathlib
import resource
import threading
import time

import pytest

from vllm_cpp import (Engine, EngineClosedError, EngineError, InvalidArgumentError, InvalidConfigurationError,
                      SamplingParams)
from vllm_cpp.pull_requests import RequestEvents
from server_harness import wait_until_idle
from thread_peak import gather_with_thread_peak

pytestmark = pytest.mark.timeout(600)

STATUS = pathlib.Path("/proc/self/status")
FDS = pathlib.Path("/proc/self/fd")
PROMPTS = [
    "The capital of France is",
    "Once upon a time",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at",
    "My favourite recipe:",
    "In 1492,",
    "The quick brown fox",
]
STREAMS = 2000


def thread_count() -> int:
    for line in STATUS.read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line in /proc/self/status")


def fd_count() -> int:
    return len(os.listdir(FDS))


needs_proc = pytest.mark.skipif(not STATUS.exists(), reason="thread counts are read from /proc/self/status")
needs_proc_fds = pytest.mark.skipif(not FDS.exists(), reason="open descriptors are read from /proc/self/fd")


@pytest.fixture(scope="module")
def pull_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128, max_num_seqs=256) as eng:
        yield eng


def params():
    return SamplingParams.greedy(max_tokens=6)


@needs_proc
def test_two_thousand_astreams_without_a_thread_of_their_own(pull_engine):
    expected = {p: pull_engine.complete(p, params()).text for p in PROMPTS}
    # The loop watches its poller itself: no thread is started for async
    # requests, not even a poller thread.
    baseline = thread_count()

    async def one(prompt):
        return [delta async for delta in pull_engine.astream(prompt, params())]

    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(STREAMS)]
    results, peak = gather_with_thread_peak([one(p) for p in prompts])
    print("\n%d concurrent astream requests: %d threads before, at most %d during"
          % (STREAMS, baseline, peak))
    # Events in order per request: the deltas concatenate to the text.
    for prompt, deltas in zip(prompts, results):
        assert "".join(deltas) == expected[prompt]
    assert peak == baseline, (baseline, peak)
    assert "vllm-cpp-poller" not in {t.name for t in threading.enumerate()}
    assert pull_engine.stats()["running_requests"] == 0


def test_cancelled_astreams_reach_the_engine(pull_engine):
    aborted = pull_engine.stats()["requests_aborted"]

    def slow_steps(ids, logits):
        # Past the first token each step takes 8 x 20 ms or more: the
        # requests cannot end by themselves before their cancels arrive.
        if ids:
            time.sleep(0.02)

    long = SamplingParams.greedy(max_tokens=100, ignore_eos=True, logits_processor=slow_steps)

    async def first_delta(prompt):
        async for delta in pull_engine.astream(prompt, long):
            return delta

    async def main():
        firsts = await asyncio.gather(*(first_delta(p) for p in PROMPTS))
        assert all(firsts)
        # The cancelled requests end (the engine drops them at its next step)
        # and are closed on the loop: nothing is left behind.
        while pull_engine.stats()["running_requests"] or pull_engine.stats()["waiting_requests"]:
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert pull_engine.stats()["requests_aborted"] >= aborted + len(PROMPTS)


@needs_proc
def test_callback_requests_keep_a_delivery_thread_each(pull_engine):
    """The v10 path: each submitted request's callback runs on its own
    thread, so a blocked callback holds up nobody else."""
    release = threading.Event()
    n = 8
    baseline = thread_count()
    threads = set()
    lock = threading.Lock()

    def callback(event):
        with lock:
            threads.add(threading.get_ident())
        release.wait(60)

    requests = [pull_engine.submit(p, params(), callback) for p in PROMPTS[:n]]
    try:
        while True:
            with lock:
                if len(threads) == n:
                    break
            time.sleep(0.001)
        assert thread_count() >= baseline + n
    finally:
        release.set()
        for request in requests:
            request.wait()
            request.close()
    assert len(threads) == n


def test_closing_the_engine_ends_its_streams(smollm2_path):
    """A stream whose request is closed under it (Engine.close()) ends with
    EngineClosedError instead of waiting for ever."""
    engine = Engine.load(smollm2_path, max_model_len=128)

    async def main():
        stream = engine.astream("Once upon a time", SamplingParams.greedy(max_tokens=100, ignore_eos=True))
        assert await stream.__anext__()
        engine.close()
        with pytest.raises(EngineClosedError):
            async for _delta in stream:
                pass

    asyncio.run(main())
    assert engine.closed


def test_a_reader_interrupted_while_its_owner_cancels_still_ends(pull_engine):
    """Issue 15's HTTP soak: a reader task cancelled (a client gone) in the
    same loop iteration as its owner cancels the request (the handler's
    clean-up). The reader cancels the request and waits for its last event;
    it must get it. Before, the owner's cancel() made the poller drop that
    event, the reader waited for ever, and the garbage collector later
    finalized its suspended generators ("aclose(): asynchronous generator is
    already running")."""
    long = SamplingParams.greedy(max_tokens=200, ignore_eos=True)

    async def main():
        events = RequestEvents(lambda consumer: pull_engine.submit_pull("Once upon a time", long, consumer))
        started = asyncio.Event()

        async def read():
            async for _event in events:
                started.set()

        reader = asyncio.ensure_future(read())
        await started.wait()
        reader.cancel()
        events.cancel()  # no await in between: the reader has not unwound yet
        done, _pending = await asyncio.wait({reader}, timeout=60)
        assert done, "the reader never saw the last event of its cancelled request"
        assert reader.cancelled()
        assert events.request.closed

    asyncio.run(main())
    assert wait_until_idle(pull_engine, deadline_s=30)["running_requests"] == 0


def test_a_request_is_read_by_one_reader(pull_engine):
    async def main():
        events = RequestEvents(lambda consumer: pull_engine.submit_pull("Once upon a time", params(), consumer))
        events.cancel()
        with pytest.raises(RuntimeError, match="one reader"):
            async for _event in events:
                pass
        while not events.request.closed:
            await asyncio.sleep(0.01)

    asyncio.run(main())


def test_loops_on_two_threads_stream_from_one_engine(pull_engine):
    """Each loop has a poller of its own, watched by that loop: two loops
    streaming at once each get their own requests' text."""
    expected = {p: pull_engine.complete(p, params()).text for p in PROMPTS}
    results = {}

    def run(name, prompts):
        async def main():
            return await asyncio.gather(*(pull_engine.acomplete(p, params()) for p in prompts))
        results[name] = [c.text for c in asyncio.run(main())]

    threads = [threading.Thread(target=run, args=(i, PROMPTS[i::2])) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for i in range(2):
        assert results[i] == [expected[p] for p in PROMPTS[i::2]]


@needs_proc_fds
def test_closed_loops_leave_no_poller_and_no_descriptor(pull_engine):
    """asyncio.run makes a loop per call: the poller of a closed loop is
    freed at the next loop's first request, its descriptors closed."""
    asyncio.run(pull_engine.acomplete(PROMPTS[0], params()))
    before = fd_count()
    for prompt in PROMPTS * 3:
        assert asyncio.run(pull_engine.acomplete(prompt, params())).text
    assert fd_count() == before
    assert len(pull_engine._pollers) == 1


@needs_proc_fds
def test_a_closed_loops_abandoned_request_is_freed(pull_engine):
    """A reader that left early waits for its request's last event; if its
    loop closes first (asyncio.run cancels the wait as it ends), nobody can
    ever read that event. The next loop's first request frees the request
    and the closed loop's poller, as for an idle one (before, both stayed
    until the engine closed: the CI run with the test above counting two
    pollers)."""
    before = fd_count()
    pollers = len(pull_engine._pollers)
    stepping = threading.Event()

    def slow_steps(ids, logits):  # holds the engine's step, so it drops the cancel late
        if ids:
            stepping.set()
            time.sleep(0.5)

    async def leave_early():
        stream = pull_engine.astream(PROMPTS[0], SamplingParams.greedy(max_tokens=20, logits_processor=slow_steps))
        assert await stream.__anext__()
        await asyncio.get_running_loop().run_in_executor(None, stepping.wait)
        asyncio.ensure_future(stream.aclose())  # cancels, then waits for the last event
        await asyncio.sleep(0)

    asyncio.run(leave_early())  # ends while the engine still holds the request
    asyncio.run(pull_engine.acomplete(PROMPTS[1], params()))
    assert len(pull_engine._pollers) == pollers
    assert fd_count() == before
    assert wait_until_idle(pull_engine, deadline_s=30)["running_requests"] == 0


@needs_proc_fds
def test_an_engine_closed_from_another_thread_ends_the_loops_streams(smollm2_path):
    """Engine.close() on another thread while a loop streams: the stream
    ends with EngineClosedError, the loop's watch ends on the loop's thread
    and no descriptor is left open."""
    before = fd_count()
    engine = Engine.load(smollm2_path, max_model_len=128)

    async def main():
        stream = engine.astream("Once upon a time", SamplingParams.greedy(max_tokens=100, ignore_eos=True))
        assert await stream.__anext__()
        closer = threading.Thread(target=engine.close)
        closer.start()
        with pytest.raises(EngineClosedError):
            async for _delta in stream:
                pass
        closer.join(60)
        await asyncio.sleep(0)  # the loop's thread ends its watch

    asyncio.run(main())
    assert engine.closed
    assert fd_count() == before


class _LoopWithoutReaders(asyncio.SelectorEventLoop):
    """An event loop that cannot watch descriptors (as some embedded loops)."""

    def add_reader(self, fd, callback, *args):
        raise NotImplementedError


def test_a_loop_that_cannot_watch_a_descriptor_is_refused_by_name(pull_engine):
    loop = _LoopWithoutReaders()
    try:
        with pytest.raises(InvalidConfigurationError, match="add_reader"):
            loop.run_until_complete(pull_engine.acomplete(PROMPTS[0], params()))
    finally:
        loop.close()
    # Nothing was left behind: a usable loop's requests still run.
    assert asyncio.run(pull_engine.acomplete(PROMPTS[0], params())).text


def test_no_descriptor_to_be_had_fails_the_request_not_the_engine(smollm2_path):
    """The process's open-file limit reached: the first request of a new
    loop fails with the system's reason; under the limit again, it works.
    (An engine of its own: no poller of an earlier loop is freed meanwhile,
    which would free descriptors under the limit.)"""
    async def main(engine):
        lowest = os.open(os.devnull, os.O_RDONLY)
        os.close(lowest)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
        try:
            with pytest.raises(EngineError, match="descriptor"):
                await engine.acomplete(PROMPTS[0], params())
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        return (await engine.acomplete(PROMPTS[0], params())).text

    with Engine.load(smollm2_path, max_model_len=128) as engine:
        assert asyncio.run(main(engine))


def test_a_request_is_submitted_on_its_consumers_loop(pull_engine):
    """The loop's poller is made and watched on the loop's own thread."""
    class Consumer:
        loop = asyncio.new_event_loop()

    try:
        with pytest.raises(RuntimeError, match="running event loop"):
            pull_engine.submit_pull(PROMPTS[0], params(), Consumer())
    finally:
        Consumer.loop.close()


def test_streams_under_uvloop(pull_engine):
    uvloop = pytest.importorskip("uvloop", reason="uvloop is optional (vllm-cpp[server] runs without it)")
    expected = pull_engine.complete(PROMPTS[1], params()).text

    async def main():
        return "".join([d async for d in pull_engine.astream(PROMPTS[1], params())])

    loop = uvloop.new_event_loop()
    try:
        assert loop.run_until_complete(main()) == expected
    finally:
        loop.close()


def test_each_events_token_ids_while_it_runs(pull_engine):
    """request_token_ids: an event's ids start where the n_tokens before it
    end, and together they are the completion's; a chat request has none."""
    async def go():
        events = RequestEvents(lambda consumer: pull_engine.submit_pull(
            "The capital of France is", SamplingParams.greedy(max_tokens=10, stop=["Paris"]), consumer))
        streamed, generated = [], 0
        async for event in events:
            streamed += pull_engine.request_token_ids(events.request, generated, event.n_tokens)
            generated += event.n_tokens
        return streamed, generated

    streamed, generated = asyncio.run(go())
    completion = asyncio.run(pull_engine.acomplete("The capital of France is",
                                                   SamplingParams.greedy(max_tokens=10, stop=["Paris"])))
    assert completion.finish_reason == "stop" and streamed == list(completion.token_ids)
    assert len(streamed) == generated == completion.completion_tokens
    request = pull_engine.submit_chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2},
                                      lambda event: None)
    with request, pytest.raises(InvalidArgumentError, match="chat"):
        pull_engine.request_token_ids(request, 0, 2)
