"""One client's constraint must not stall the others (issue 37, bug 6).

Before: a JSON schema with 20,000 optional properties compiled for about a
second on the server's event loop (the engine's submit ran there), and its
masks were computed on the engine loop, so every other stream stopped for
as long (a 668 ms gap where steps take 4 ms). Now constraints compile on
the engine's compile workers, within a budget, the server's submit runs off
its event loop, and a request whose next mask is slow waits for it
(WAITING_FOR_FSM) while the others step.

Measured against the same run's own timings, never a constant, with one
criterion on both paths: while a heavy constraint compiles, a concurrent
stream's longest gap stays under 3x the larger of its median and the
longest gap of the same stream in a control run. Over HTTP the control run
sends the same chat requests without their constraints (a request's first
steps are the stream's longest gap whatever it carries). A test passes
with one of 5 attempts within the bound, each with schemas of its own:
the shared machine (and this process's garbage collector) stalls a stream
now and then by itself, 120-150 ms in about one Engine run in four
before attempts; a stall the requests cause is in every attempt.

Over HTTP the server also handles the body on its event loop holding the
GIL. It used to parse it (json.loads) and write it again for the engine
(json.dumps: 10-20 ms for the 2 MB enum, and 120 ms where the tuples it
makes walking the 20,000 dicts set off a full garbage collection). With
the requests first on a fresh server and a control run of the bare stream
the longest gap was 210-240 ms (median 5-8 ms, control 13-17 ms; 3 of 3
runs), 28 ms with the engine's copy written by orjson (server/jsonio.py,
~1-3 ms, no Python objects made). In this test as it is (the control with
requests, bodies written first) the old code's gap was 39-53 ms against
bounds of 49-54 ms (the collection falls elsewhere), the new one's 26-42
ms against 45-97 ms (median 4-6 ms; 15 runs passed at the first or second
attempt under a load average of 3-5 on 2 cores, one 3-attempt run failed
at 5.5). What is left is the parse of the body (stdlib, 8-30 ms for 2 MB
here, more when it sets off a collection).
"""

import json
import os
import re
import statistics
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402
from vllm_cpp import Engine, InvalidArgumentError, SamplingParams, StructuredOutput  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: The server's size budget: the 20,000-property schema (about 760,000
#: positions) is under it, the 200,000-value enum (about 3.8 million) over
#: it, refused once it has compiled.
GRAMMAR_SIZE_BUDGET = 2_000_000

MANY_OPTIONAL = {"type": "object", "properties": {"p%d" % i: {"type": "integer"} for i in range(20000)}}
HUGE_ENUM = {"type": "object", "properties": {"e": {"enum": ["v%d" % i for i in range(200000)]}}, "required": ["e"]}


#: The forward leaves a core to the compile workers where it can: a compile
#: needs a core somewhere, and taking it from the forward slows every step.
ENGINE_THREADS = max(1, (os.cpu_count() or 2) // 2)


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, max_num_seqs=4, num_threads=ENGINE_THREADS,
                     structured_max_grammar_size=GRAMMAR_SIZE_BUDGET) as eng:
        yield eng


@pytest.fixture(scope="module")
def url(engine):
    with running_server(engine, max_request_bytes=8 * 1024 * 1024) as base:
        yield base


def schema_chat(schema, max_tokens=4):
    return {"model": MODEL_NAME, "max_tokens": max_tokens, "messages": [{"role": "user", "content": "Hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}


def gaps_between(chunks, during=None):
    """The gaps between the arrivals of a 400-token stream's chunks (after
    its first 20; ``chunks()`` iterates them), with `during()` run once 50
    chunks are out."""
    times = []
    stream = threading.Thread(target=lambda: times.extend(time.monotonic() for _ in chunks()))
    stream.start()
    while len(times) < 50 and stream.is_alive():
        time.sleep(0.01)
    if during is not None:
        during()
    stream.join(300)
    assert not stream.is_alive() and len(times) > 300, len(times)
    return [b - a for a, b in zip(times[20:], times[21:])]


def http_chunks(url):
    body = {"model": MODEL_NAME, "prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": True,
            "stream": True}
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=300) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:") and line != "data: [DONE]":
                yield line


def http_stream_gaps(url, during=None):
    return gaps_between(lambda: http_chunks(url), during)


def assert_serves(url):
    response = httpx.post(url + "/v1/completions", timeout=120,
                          json={"model": MODEL_NAME, "prompt": "The capital of France is", "max_tokens": 2})
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["completion_tokens"] == 2


def renamed(schema, tag):
    """``schema`` with each property name and enum value tagged: as heavy,
    and not one the engine has compiled before."""
    return json.loads(re.sub(r'"([pv]\d+)"', r'"t%d_\1"' % tag, json.dumps(schema)))


#: The machine's own stalls come and go (other processes on its cores, a
#: garbage collection of this test process); a stall the heavy requests
#: cause is in every attempt. Passing takes one attempt within the bound.
#: While a compile holds a core, the forward has none spare, so a loaded
#: machine (load average over twice the cores) stalls the heavy run more
#: than the control: 3 attempts all failed once in ten runs there.
ATTEMPTS = 5


def assert_one_attempt_keeps_the_pace(measure):
    """``measure(attempt)`` -> (gaps with the heavy requests, gaps of the
    control run); passes once the longest of the first is under 3x the
    larger of its median and the longest of the second."""
    attempts = []
    for attempt in range(ATTEMPTS):
        gaps, control = measure(attempt)
        median = statistics.median(gaps)
        bound = 3 * max(median, max(control))
        attempts.append("longest gap %.1f ms, bound %.1f ms (median %.1f ms, longest in the control run %.1f ms)"
                        % (max(gaps) * 1e3, bound * 1e3, median * 1e3, max(control) * 1e3))
        print("gaps:", attempts[-1])
        if max(gaps) < bound:
            return
    pytest.fail("every attempt stalled the stream: " + "; ".join(attempts))


def test_heavy_constraints_do_not_stall_a_concurrent_stream(url, engine):
    """Over HTTP, the Engine path's bound: while the two heavy bodies are
    read and their constraints compile, a concurrent SSE stream's longest
    gap stays under 3x the larger of its median and the longest gap of the
    same stream in a control run, both measured here. In the control run
    the same chat requests arrive without their constraints: a request's
    prefill step (~25 ms here, against 4 ms decode steps) is the stream's
    longest gap whatever the request carries, and not what this measures."""
    def post(bodies, into):
        with httpx.Client(timeout=300) as client:
            for body in bodies:
                into.append(client.post(url + "/v1/chat/completions", content=body,
                                        headers={"content-type": "application/json"}))

    light = [json.dumps({k: v for k, v in schema_chat(None).items() if k != "response_format"})] * 2

    # Schemas of their own each attempt (the engine keeps recent compiles),
    # written before any stream runs.
    attempt_bodies = [[json.dumps(schema_chat(renamed(schema, attempt))) for schema in (MANY_OPTIONAL, HUGE_ENUM)]
                      for attempt in range(ATTEMPTS)]

    def measure(attempt):
        bodies = attempt_bodies[attempt]
        replies = []
        gaps = http_stream_gaps(url, lambda: post(bodies, replies))  # first: the server's first chat requests
        # The optional-properties schema compiles and answers; the enum
        # compiles too, past the size budget, and is refused naming it.
        assert replies[0].status_code == 200, replies[0].text
        assert replies[0].json()["choices"][0]["message"]["content"].startswith("{")
        assert replies[1].status_code == 400, replies[1].text
        assert "structured_max_grammar_size" in replies[1].json()["error"]["message"]
        return gaps, http_stream_gaps(url, lambda: post(light, []))

    assert_one_attempt_keeps_the_pace(measure)
    wait_until_idle(engine)


def test_a_constraint_past_the_size_budget_is_a_400_naming_it(url):
    response = httpx.post(url + "/v1/chat/completions", json=schema_chat(HUGE_ENUM), timeout=300)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "compile budget" in message and "structured_max_grammar_size" in message, message
    assert_serves(url)


def test_a_constraint_past_the_size_budget_is_refused_by_submit(engine):
    """The C ABI's submit refuses it (INVALID_ARGUMENT naming the budget):
    the Python Engine raises at submit, and the engine keeps serving."""
    params = SamplingParams.greedy(max_tokens=4,
                                   structured_output=StructuredOutput("json_schema", json.dumps(HUGE_ENUM)))
    with pytest.raises(InvalidArgumentError, match="structured_max_grammar_size"):
        engine.submit("Hi", params, lambda delta, finished: True)
    assert engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_the_time_budget_refuses_a_slow_compile(smollm2_path):
    """A 1 ms budget: the 20,000-property schema takes far longer to
    compile, so submit refuses it naming the time budget; identical
    constraints are not kept refused, and a small one still compiles."""
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=2, structured_compile_timeout_ms=1) as eng:
        params = SamplingParams.greedy(max_tokens=4, structured_output=StructuredOutput(
            "json_schema", json.dumps(MANY_OPTIONAL)))
        for _ in range(2):
            with pytest.raises(InvalidArgumentError, match="structured_compile_timeout_ms"):
                eng.complete("Hi", params)
        assert eng.complete("Hi", SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


def test_concurrent_identical_constraints_each_answer(url):
    """Concurrent requests with one schema share its compile (in flight, or
    finished): each of them answers, and the server serves on."""
    body = schema_chat(MANY_OPTIONAL, max_tokens=2)
    results = []

    def post():
        results.append(httpx.post(url + "/v1/chat/completions", json=body, timeout=300).status_code)

    threads = [threading.Thread(target=post) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert results == [200, 200, 200]
    assert_serves(url)


def stream_gaps(engine, during=None):
    return gaps_between(lambda: engine.stream("Once upon a time", SamplingParams(max_tokens=400, ignore_eos=True)),
                        during)


@pytest.mark.parametrize("schema, refused", [(MANY_OPTIONAL, False), (HUGE_ENUM, True)], ids=["optional", "enum"])
def test_compiles_and_masks_leave_a_stream_at_its_pace(engine, schema, refused):
    """Through the C ABI (the Python Engine): while the heavy constraint
    compiles (and, for the 20,000 optional properties, while its masks after
    '{"' track thousands of parse stacks on the compile workers, the request
    waiting), a concurrent stream's longest gap stays under 3x its median.
    A shared machine stalls a stream now and then by itself: the bound is
    3x the larger of the median and the longest gap of the same stream
    without the heavy request, both measured here, in one of 5 attempts
    (before the fix the gap was the whole compile, about a second).
    Fresh schemas each attempt: the engine keeps recent compiles."""
    def measure(attempt):
        params = SamplingParams.greedy(max_tokens=6, structured_output=StructuredOutput(
            "json_schema", json.dumps(renamed(schema, attempt))))

        def heavy():
            if refused:
                with pytest.raises(InvalidArgumentError, match="structured_max_grammar_size"):
                    engine.complete("Hi", params)
            else:
                assert engine.complete("Hi", params).text.startswith("{")

        control = stream_gaps(engine)
        return stream_gaps(engine, heavy), control

    assert_one_attempt_keeps_the_pace(measure)
