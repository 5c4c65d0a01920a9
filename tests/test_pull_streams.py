"""The pull path under the async API: thousands of ``astream`` requests from
one asyncio loop on a bounded number of threads, events in order per request,
cancellation; and the v10 callback path, which keeps a delivery thread per
request. Thread counts are the process's native threads (/proc/self/status).
"""

import asyncio
import pathlib
import threading
import time

import pytest

from vllm_cpp import Engine, EngineClosedError, SamplingParams

pytestmark = pytest.mark.timeout(600)

STATUS = pathlib.Path("/proc/self/status")
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


needs_proc = pytest.mark.skipif(not STATUS.exists(), reason="thread counts are read from /proc/self/status")


@pytest.fixture(scope="module")
def pull_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=128, max_num_seqs=256) as eng:
        yield eng


def params():
    return SamplingParams.greedy(max_tokens=6)


@needs_proc
def test_two_thousand_astreams_on_a_bounded_number_of_threads(pull_engine):
    expected = {p: pull_engine.complete(p, params()).text for p in PROMPTS}
    # Start the poller, so the baseline counts every thread the async path keeps.
    asyncio.run(pull_engine.acomplete(PROMPTS[0], params()))
    baseline = thread_count()
    peak = [baseline]

    async def one(prompt):
        return [delta async for delta in pull_engine.astream(prompt, params())]

    async def sample(stop):
        while not stop.is_set():
            peak[0] = max(peak[0], thread_count())
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        sampler = asyncio.ensure_future(sample(stop))
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(STREAMS)]
        results = await asyncio.gather(*(one(p) for p in prompts))
        stop.set()
        await sampler
        return prompts, results

    prompts, results = asyncio.run(main())
    print("\n%d concurrent astream requests: %d threads before, at most %d during"
          % (STREAMS, baseline, peak[0]))
    # Events in order per request: the deltas concatenate to the text.
    for prompt, deltas in zip(prompts, results):
        assert "".join(deltas) == expected[prompt]
    assert peak[0] <= baseline + 2, (baseline, peak[0])
    assert pull_engine.stats()["running_requests"] == 0


def test_cancelled_astreams_reach_the_engine(pull_engine):
    aborted = pull_engine.stats()["requests_aborted"]
    long = SamplingParams.greedy(max_tokens=100, ignore_eos=True)

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
    from vllm_cpp.pull_requests import RequestEvents

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
    deadline = time.monotonic() + 30  # stats are published after each step
    while pull_engine.stats()["running_requests"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pull_engine.stats()["running_requests"] == 0


def test_a_request_is_read_by_one_reader(pull_engine):
    from vllm_cpp.pull_requests import RequestEvents

    async def main():
        events = RequestEvents(lambda consumer: pull_engine.submit_pull("Once upon a time", params(), consumer))
        events.cancel()
        with pytest.raises(RuntimeError, match="one reader"):
            async for _event in events:
                pass
        while not events.request.closed:
            await asyncio.sleep(0.01)

    asyncio.run(main())
