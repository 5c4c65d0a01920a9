"""The serving core: non-blocking requests and their lifecycle, continuous
batching (batch invariance, preemption), prefix caching, the priority
policy, engine statistics and the async API, on SmolLM2.
"""

import asyncio
import gc
import os
import threading
import time
import weakref

import pytest

import vllm_cpp
from vllm_cpp import (
    CallbackError,
    Engine,
    InvalidArgumentError,
    RequestCallbackThreadError,
    RequestOutcome,
    SamplingParams,
    SchedulerPolicy,
    StreamControl,
    Toggle,
)

pytestmark = pytest.mark.timeout(300)

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at a temperature of",
    "My favourite recipe for pancakes:",
    "In 1492, Columbus",
    "A haiku about the sea:",
]

# K and V in the default half-precision cache (2 bytes an element), for
# every layer: 30 layers x 3 KV heads x head_dim 64.
SMOLLM2_KV_BYTES_PER_TOKEN = 2 * 30 * 3 * 64 * 2


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, max_num_seqs=16) as eng:
        yield eng


def greedy(n=24, **kw):
    return SamplingParams.greedy(max_tokens=n, **kw)


def long_params():
    return SamplingParams.greedy(max_tokens=300, ignore_eos=True)


class Collector:
    """A request callback that records its events (thread-safe)."""

    def __init__(self, control=None):
        self.events = []
        self.control = control
        self.lock = threading.Lock()
        self.first_delta_at = None

    def __call__(self, event):
        with self.lock:
            if event.delta and self.first_delta_at is None:
                self.first_delta_at = time.monotonic()
            self.events.append(event)
            n = len(self.events)
        return self.control(event, n) if self.control else StreamControl.CONTINUE

    @property
    def text(self):
        return "".join(e.delta for e in self.events)

    @property
    def terminal(self):
        return any(e.finished for e in self.events)


def native_thread_count():
    return len(os.listdir("/proc/self/task"))


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# --- lifecycle -------------------------------------------------------------------


def test_completed_outcome_is_stable_and_cancel_idempotent(engine):
    expected = engine.complete(PROMPTS[0], greedy())
    col = Collector()
    req = engine.submit(PROMPTS[0], greedy(), col)
    assert req.wait() is RequestOutcome.COMPLETED
    assert req.wait() is RequestOutcome.COMPLETED
    assert req.is_done()
    req.cancel()
    req.cancel()
    assert req.wait() is RequestOutcome.COMPLETED
    assert req.native_error() is None
    assert col.text == expected.text
    assert [e.finished for e in col.events].count(True) == 1 and col.events[-1].finished
    req.close()
    assert req.closed


def test_stopped_by_callback(engine):
    col = Collector(lambda event, n: StreamControl.STOP if n == 2 else StreamControl.CONTINUE)
    with engine.submit(PROMPTS[1], long_params(), col) as req:
        assert req.wait() is RequestOutcome.STOPPED_BY_CALLBACK
        assert req.wait() is RequestOutcome.STOPPED_BY_CALLBACK
    assert len(col.events) == 2 and not col.terminal


def test_stop_on_the_terminal_event_counts_as_stopped(engine):
    col = Collector(lambda event, n: StreamControl.STOP if event.finished else StreamControl.CONTINUE)
    with engine.submit(PROMPTS[0], greedy(4), col) as req:
        assert req.wait() is RequestOutcome.STOPPED_BY_CALLBACK
    assert col.terminal


def test_cancelled_outcome_has_no_terminal_event(engine):
    col = Collector()
    with engine.submit(PROMPTS[2], long_params(), col) as req:
        req.cancel()
        req.cancel()
        assert req.wait() is RequestOutcome.CANCELLED
        assert req.wait() is RequestOutcome.CANCELLED
    assert not col.terminal


def test_wait_timeout_leaves_the_request_live(engine):
    with engine.submit(PROMPTS[2], long_params(), Collector()) as req:
        with pytest.raises(TimeoutError):
            req.wait(timeout=0.0)
        assert not req.closed
        req.cancel()
        assert req.wait(timeout=60) is RequestOutcome.CANCELLED


def test_callback_exception_is_reported_by_every_wait(engine):
    def boom(event):
        raise KeyError("boom")

    with engine.submit(PROMPTS[3], greedy(), boom) as req:
        for _ in range(2):
            with pytest.raises(CallbackError) as info:
                req.wait()
            assert isinstance(info.value.__cause__, KeyError)
    assert engine.complete(PROMPTS[3], greedy(4)).completion_tokens == 4


def test_wait_from_own_callback_raises_and_close_there_is_deferred(engine):
    seen = {}
    closed_in_callback = threading.Event()
    holder = {}

    def callback(event):
        req = holder["req"]
        if "wait" not in seen:
            try:
                req.wait()
            except RequestCallbackThreadError as exc:
                seen["wait"] = exc
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
                seen["wait"] = exc
            req.close()  # finished natively after the callback: must neither deadlock nor free under us
            closed_in_callback.set()
        return StreamControl.CONTINUE

    started = threading.Event()

    def gated(event):
        started.wait(30)
        return callback(event)

    holder["req"] = engine.submit(PROMPTS[4], greedy(), gated)
    started.set()
    assert closed_in_callback.wait(60)
    assert isinstance(seen["wait"], RequestCallbackThreadError)
    deadline = time.monotonic() + 60
    while not holder["req"].closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert holder["req"].closed
    assert engine.complete(PROMPTS[4], greedy(4)).completion_tokens == 4


def test_close_while_the_callback_runs(engine):
    in_callback = threading.Event()
    release = threading.Event()

    def slow(event):
        in_callback.set()
        release.wait(30)
        return StreamControl.CONTINUE

    req = engine.submit(PROMPTS[5], long_params(), slow)
    assert in_callback.wait(60)
    closer = threading.Thread(target=req.close)
    closer.start()
    time.sleep(0.05)
    assert closer.is_alive(), "close must wait for the running callback"
    release.set()
    closer.join(60)
    assert not closer.is_alive() and req.closed


def test_request_moved_to_another_thread_and_closed_there(engine):
    req = engine.submit(PROMPTS[6], greedy(8), Collector())
    done = []

    def other():
        done.append(req.wait())
        req.close()

    t = threading.Thread(target=other)
    t.start()
    t.join(60)
    assert done == [RequestOutcome.COMPLETED] and req.closed


def test_concurrent_submissions_from_python_threads(engine):
    expected = {p: engine.complete(p, greedy()).text for p in PROMPTS}
    results = {}
    errors = []

    def worker(prompts):
        try:
            reqs = [(p, Collector()) for p in prompts]
            handles = [engine.submit(p, greedy(), c) for p, c in reqs]
            for (p, c), h in zip(reqs, handles):
                assert h.wait() is RequestOutcome.COMPLETED
                h.close()
                results[p] = c.text
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(PROMPTS[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert results == expected


def test_engine_dropped_while_requests_are_live(smollm2_path):
    eng = Engine.load(smollm2_path, max_model_len=256)
    engine_ref = weakref.ref(eng)
    cols = [Collector() for _ in range(3)]
    reqs = [eng.submit(p, greedy(16), c) for p, c in zip(PROMPTS, cols)]
    del eng
    gc.collect()
    assert engine_ref() is not None, "live requests keep their engine alive"
    for r in reqs:
        assert r.wait() is RequestOutcome.COMPLETED
    assert all(c.terminal for c in cols)
    del reqs, r
    gc.collect()
    assert engine_ref() is None


def _request_in_a_cycle(engine, max_tokens, finish):
    """A request that its own callback's closure (and logits processor's)
    refers to; `finish(request)` ends it or not. Returns a weak reference
    and the callback's event list."""
    events = []
    request = None

    def callback(event):
        events.append(event)
        assert request is not None  # the closure refers to its own request

    def processor(_ids, _logits):
        assert request is not None

    params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=True, logits_processor=processor)
    request = engine.submit(PROMPTS[0], params, callback)
    finish(request)
    return weakref.ref(request), events


@pytest.mark.parametrize("finish", ["wait", "running"])
def test_a_request_its_own_callback_refers_to_is_collected(engine, finish):
    # The handle registry used to hold callback -> closure -> Request until
    # the engine closed (found by the 2026-12-03 hostile-user run).
    before = len(vllm_cpp._ffi.handles)
    ref, events = _request_in_a_cycle(
        engine, 8 if finish == "wait" else 300,
        (lambda r: r.wait()) if finish == "wait" else (lambda r: None))
    deadline = time.monotonic() + 60
    while (ref() is not None or len(vllm_cpp._ffi.handles) > before) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert ref() is None, "the request in a cycle with its callback was never collected"
    assert len(vllm_cpp._ffi.handles) == before
    if finish == "wait":
        assert events[-1].finished
    assert engine.complete(PROMPTS[1], greedy(4)).completion_tokens == 4


def test_engine_close_closes_live_requests(smollm2_path):
    eng = Engine.load(smollm2_path, max_model_len=256)
    req = eng.submit(PROMPTS[0], long_params(), Collector())
    eng.close()
    assert req.closed and eng.closed


@pytest.fixture(scope="module")
def small_kv_engine(smollm2_path):
    # 32 blocks of 16 tokens: the KV cache (whose pages are touched as blocks
    # are first used) is fully touched within the stress loop's first rounds.
    with Engine.load(smollm2_path, max_model_len=256, num_blocks=32, max_num_seqs=4) as eng:
        yield eng


def test_stress_loop_leaves_a_usable_engine_and_no_threads(small_kv_engine):
    """16 rounds x 4 requests, each ended a different way: cancel, wait,
    polling is_done, or a plain drop (finalizer)."""
    engine = small_kv_engine
    engine.complete(PROMPTS[0], greedy(4))
    gc.collect()
    threads_before = native_thread_count()
    rss = []
    for round_ in range(16):
        reqs = [engine.submit(PROMPTS[(round_ + i) % 8], greedy(12 + i), Collector()) for i in range(4)]
        reqs[0].cancel()
        assert reqs[0].wait() in (RequestOutcome.CANCELLED, RequestOutcome.COMPLETED)
        assert reqs[1].wait() is RequestOutcome.COMPLETED
        deadline = time.monotonic() + 60
        while not reqs[2].is_done() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert reqs[2].is_done()
        reqs[0].close()
        del reqs  # [1], [2] and [3] (still running, maybe) go to their finalizers
        gc.collect()
        rss.append(resident_bytes())
    deadline = time.monotonic() + 60
    while native_thread_count() > threads_before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert native_thread_count() <= threads_before
    assert engine.complete(PROMPTS[0], greedy(4)).completion_tokens == 4
    growth = rss[-1] - rss[7]
    print("stress loop RSS: round 8 %.1f MiB, round 16 %.1f MiB" % (rss[7] / 2**20, rss[-1] / 2**20))
    assert growth < 16 * 2**20, "resident memory grew by %d bytes over the stress loop" % growth


# --- batching ----------------------------------------------------------------------


def run_batched(eng, prompts, params_for):
    cols = [Collector() for _ in prompts]
    reqs = [eng.submit(p, params_for(i), c) for i, (p, c) in enumerate(zip(prompts, cols))]
    for r in reqs:
        assert r.wait() is RequestOutcome.COMPLETED
        r.close()
    return [c.text for c in cols]


def test_batch_invariance_greedy(engine):
    alone = [engine.complete(p, greedy(32)).text for p in PROMPTS]
    steps_before = engine.stats()["model_steps"]
    assert run_batched(engine, PROMPTS, lambda i: greedy(32)) == alone
    # Batched: far fewer model steps than 8 requests x 32 tokens.
    assert engine.stats()["model_steps"] - steps_before < 8 * 32 // 2


def test_batch_invariance_seeded_sampling(engine):
    def params(i):
        return SamplingParams(temperature=0.9, top_p=0.95, seed=1000 + i, max_tokens=32)

    alone = [engine.complete(p, params(i)).text for i, p in enumerate(PROMPTS)]
    assert run_batched(engine, PROMPTS, params) == alone


def test_batch_invariance_under_preemption(smollm2_path):
    # 8 requests of up to ~60 tokens need ~32 blocks of 16; 12 blocks force
    # preemptions (each request alone fits: max_model_len 128 = 8 blocks).
    with Engine.load(smollm2_path, max_model_len=128, num_blocks=12, block_size=16, max_num_seqs=8) as eng:
        alone = [eng.complete(p, greedy(48)).text for p in PROMPTS]
        assert eng.stats()["preemptions"] == 0
        assert run_batched(eng, PROMPTS, lambda i: greedy(48)) == alone
        stats = eng.stats()
        assert stats["preemptions"] > 0
        assert stats["kv_blocks_used"] == 0 and stats["running_requests"] == 0


def test_chunked_prefill_matches_a_whole_prefill(smollm2_path):
    prompt = " ".join(PROMPTS * 6)
    with Engine.load(smollm2_path, max_model_len=512, max_num_batched_tokens=32, max_num_seqs=4,
                     prefix_caching=Toggle.OFF) as small_chunks, \
            Engine.load(smollm2_path, max_model_len=512, prefix_caching=Toggle.OFF) as whole:
        assert small_chunks.complete(prompt, greedy(24)) == whole.complete(prompt, greedy(24))


# --- prefix caching ----------------------------------------------------------------

LONG_PREFIX = " ".join(PROMPTS * 8)  # a few hundred tokens


def test_prefix_cache_hit_on_a_repeated_prompt(engine):
    before = engine.stats()
    assert before["prefix_caching"] is True
    first = engine.complete(LONG_PREFIX, greedy(16))
    middle = engine.stats()
    second = engine.complete(LONG_PREFIX, greedy(16))
    after = engine.stats()
    assert second == first
    hits = after["prefix_cache_hits"] - middle["prefix_cache_hits"]
    full_blocks = (first.prompt_tokens - 1) // after["block_size"]
    assert hits == full_blocks * after["block_size"] > 0
    assert after["prefix_cache_queries"] - middle["prefix_cache_queries"] == first.prompt_tokens
    # A prompt sharing only the prefix reuses it too.
    engine.complete(LONG_PREFIX + " And then", greedy(4))
    assert engine.stats()["prefix_cache_hits"] - after["prefix_cache_hits"] >= full_blocks * after["block_size"]


def test_no_prefix_cache_hits_when_off(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, prefix_caching=Toggle.OFF) as eng:
        first = eng.complete(LONG_PREFIX, greedy(16))
        assert eng.complete(LONG_PREFIX, greedy(16)) == first
        stats = eng.stats()
        assert stats["prefix_caching"] is False
        assert stats["prefix_cache_hits"] == 0 and stats["kv_blocks_cached"] == 0


# --- policies ----------------------------------------------------------------------


def admission_order(eng, priorities):
    """Runs a blocker, then submits one request per priority while it runs;
    returns the priorities in the order their first text arrived."""
    blocker_started = threading.Event()
    blocker = eng.submit("Count from one to one hundred:", SamplingParams.greedy(max_tokens=40, ignore_eos=True),
                         lambda e: blocker_started.set())
    assert blocker_started.wait(60)
    cols = {p: Collector() for p in priorities}
    reqs = [eng.submit(PROMPTS[i], greedy(4), cols[p], priority=p) for i, p in enumerate(priorities)]
    for r in reqs + [blocker]:
        r.wait()
        r.close()
    return sorted(priorities, key=lambda p: cols[p].first_delta_at)


def test_priority_policy_admits_the_higher_priority_first(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=1, scheduler=SchedulerPolicy.PRIORITY) as eng:
        assert admission_order(eng, [5, 0, -5]) == [-5, 0, 5]


def test_fcfs_policy_ignores_priority(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=1, scheduler=SchedulerPolicy.FCFS) as eng:
        assert admission_order(eng, [5, 0, -5]) == [5, 0, -5]


def test_lpm_policy_runs_and_matches_fcfs_output(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, max_num_seqs=2, scheduler=SchedulerPolicy.LPM) as eng:
        eng.complete(LONG_PREFIX, greedy(2))
        prompts = [PROMPTS[0], LONG_PREFIX + " Next", PROMPTS[1]]
        alone = [eng.complete(p, greedy(8)).text for p in prompts]
        assert run_batched(eng, prompts, lambda i: greedy(8)) == alone


# --- stats and memory --------------------------------------------------------------


def test_kv_cache_memory_is_what_num_blocks_implies(smollm2_path, monkeypatch):
    monkeypatch.delenv("VLLM_CPP_KV_CACHE_DTYPE", raising=False)  # the default element type
    with Engine.load(smollm2_path, max_model_len=256, num_blocks=64, block_size=16) as eng:
        stats = eng.stats()
        assert stats["kv_blocks_total"] == 64 and stats["block_size"] == 16
        assert stats["kv_cache_bytes"] == 64 * 16 * SMOLLM2_KV_BYTES_PER_TOKEN
        c = eng.complete(PROMPTS[0], greedy(8))
        stats = eng.stats()
        assert stats["generation_tokens"] == c.completion_tokens
        assert stats["prompt_tokens"] == c.prompt_tokens
        assert stats["requests_finished"] == 1 and stats["kv_blocks_used"] == 0


# --- KV cache element type (VLLM_CPP_KV_CACHE_DTYPE: f16, the default, f32 or i8) ------


# SmolLM2's 30 layers x K and V x 3 KV heads: 64 elements each, and for i8 a 2-byte scale.
@pytest.mark.parametrize("dtype, bytes_per_token", [("f16", 30 * 2 * 3 * 64 * 2), ("f32", 30 * 2 * 3 * 64 * 4),
                                                    ("i8", 30 * 2 * 3 * (64 + 2))])
def test_kv_cache_dtype_sets_the_memory_per_element(smollm2_path, monkeypatch, dtype, bytes_per_token):
    monkeypatch.setenv("VLLM_CPP_KV_CACHE_DTYPE", dtype)
    with Engine.load(smollm2_path, max_model_len=256, num_blocks=64, block_size=16) as eng:
        assert eng.stats()["kv_cache_bytes"] == 64 * 16 * bytes_per_token
        assert eng.complete(PROMPTS[0], greedy(8)).completion_tokens == 8


def test_unknown_kv_cache_dtype_is_refused(smollm2_path, monkeypatch):
    monkeypatch.setenv("VLLM_CPP_KV_CACHE_DTYPE", "bf16")
    with pytest.raises(InvalidArgumentError, match="VLLM_CPP_KV_CACHE_DTYPE must be 'f32', 'f16' or 'i8' \\(got 'bf16'\\)"):
        Engine.load(smollm2_path, max_model_len=128)


def test_float32_kv_cache_is_batch_invariant(smollm2_path, monkeypatch):
    """The batch invariance tests above run with the default half-precision
    cache (K/V rounded to half once, when stored, whatever the batch); the
    float32 one keeps it too: greedy output alone, batched, under preemption
    and with chunked prefill agree."""
    monkeypatch.setenv("VLLM_CPP_KV_CACHE_DTYPE", "f32")
    with Engine.load(smollm2_path, max_model_len=128, num_blocks=12, block_size=16, max_num_seqs=8) as eng:
        alone = [eng.complete(p, greedy(48)).text for p in PROMPTS]
        assert run_batched(eng, PROMPTS, lambda i: greedy(48)) == alone
        assert eng.stats()["preemptions"] > 0
    prompt = " ".join(PROMPTS * 6)
    with Engine.load(smollm2_path, max_model_len=512, max_num_batched_tokens=32, max_num_seqs=4,
                     prefix_caching=Toggle.OFF) as small_chunks, \
            Engine.load(smollm2_path, max_model_len=512, prefix_caching=Toggle.OFF) as whole:
        assert small_chunks.complete(prompt, greedy(24)) == whole.complete(prompt, greedy(24))


def test_stats_count_running_requests(engine):
    with engine.submit(PROMPTS[0], long_params(), Collector()) as req:
        deadline = time.monotonic() + 60
        while engine.stats()["running_requests"] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert engine.stats()["running_requests"] >= 1
        assert engine.stats()["kv_blocks_used"] >= 1
        req.cancel()
        req.wait()


def test_stats_count_a_request_during_its_first_step(engine):
    """A request is counted as waiting or running from its submission on,
    also while the step that takes it in runs (between the engine taking
    it from its queue and publishing that step's stats): a poll for an idle
    engine must not end there. Once seen as 0 by a CI run, whose test then
    read no aborts."""
    in_step = threading.Event()
    release = threading.Event()

    def hold_the_first_step(ids, logits):
        in_step.set()
        release.wait(60)

    params = SamplingParams.greedy(max_tokens=2, logits_processor=hold_the_first_step)
    with engine.submit(PROMPTS[0], params, Collector()) as req:
        try:
            assert in_step.wait(60)
            stats = engine.stats()
            assert stats["running_requests"] + stats["waiting_requests"] == 1, stats
        finally:
            release.set()
        req.wait()


# --- async ----------------------------------------------------------------------------


def test_acomplete_equals_complete_and_batches(engine):
    async def main():
        return await asyncio.gather(*(engine.acomplete(p, greedy()) for p in PROMPTS))

    assert asyncio.run(main()) == [engine.complete(p, greedy()) for p in PROMPTS]


def test_astream_concatenates_to_the_completion(engine):
    async def main():
        return "".join([d async for d in engine.astream(PROMPTS[1], greedy())])

    assert asyncio.run(main()) == engine.complete(PROMPTS[1], greedy()).text


def test_task_cancellation_cancels_the_native_request(engine):
    aborted_before = engine.stats()["requests_aborted"]

    async def main():
        task = asyncio.ensure_future(engine.acomplete(PROMPTS[2], long_params()))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        async def first_delta():
            async for _ in engine.astream(PROMPTS[3], long_params()):
                break

        await first_delta()

    asyncio.run(main())
    deadline = time.monotonic() + 60
    while engine.stats()["requests_aborted"] < aborted_before + 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.stats()["requests_aborted"] >= aborted_before + 2
    assert engine.stats()["running_requests"] == 0


def test_bad_submissions_are_refused_and_leave_no_handles(engine):
    with pytest.raises(vllm_cpp.InvalidArgumentError):
        engine.submit("", greedy(), Collector())
    with pytest.raises(vllm_cpp.InvalidArgumentError):
        engine.submit("x " * 2000, greedy(), Collector())
    with pytest.raises(vllm_cpp.InvalidConfigurationError):
        engine.submit("hi", greedy(), "not callable")
    with pytest.raises(vllm_cpp.InvalidConfigurationError):
        engine.submit("hi", greedy(), Collector(), priority=2**40)
    assert len(vllm_cpp._ffi.handles) == 0
    assert engine.complete(PROMPTS[0], greedy(4)).completion_tokens == 4
