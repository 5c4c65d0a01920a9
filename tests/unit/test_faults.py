"""Fault injection at the engine's boundaries: each fault fails at most the
requests it touches, with an error that says what happened, and the engine
keeps serving the rest.

Allocation failures are injected through the engine's test hook
(``VLLM_CPP_INJECT_FAULTS``, util/fault_injection.h: every N-th pass
through a point throws std::bad_alloc), read once per process, so each of
those scenarios runs in a subprocess (this file run as a script) and
reports JSON. The others (a logits processor raising at random steps, the
engine closed while threads have requests in flight) run here.
"""

import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest

from vllm_cpp import (Engine, EngineError, InvalidArgumentError, LogitsProcessorError, RequestOutcome,
                      SamplingParams, StructuredOutput, VllmError)

pytestmark = pytest.mark.timeout(300)

PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):", "Water boils at"]
OOM = "out of memory"


def greedy(n=8, **kw):
    return SamplingParams.greedy(max_tokens=n, ignore_eos=True, **kw)


# --- the subprocess side -------------------------------------------------------

def _outcome(fn):
    try:
        return {"ok": fn()}
    except VllmError as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}


def scenario_kv_cache_allocate(engine):
    """24 concurrent requests; some of their KV allocations fail."""
    requests = [engine.submit(PROMPTS[i % 4], greedy(12), lambda e: None) for i in range(24)]
    results = []
    for i, r in enumerate(requests):
        results.append(_outcome(lambda: (r.wait().value, engine.request_completion(r).text)))
        r.close()
    return results


def scenario_tokenize(engine):
    results = [_outcome(lambda: engine.complete(PROMPTS[i % 4], greedy()).text) for i in range(12)]
    results += [_outcome(lambda: engine.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
                                              "temperature": 0})["choices"][0]["message"]["content"])
                for _ in range(6)]
    return results


def scenario_grammar_compile(engine):
    # A different regex each time (the same words): identical constraints
    # share one compile, and every request's compile is to pass the point.
    def so(i):
        return StructuredOutput.regex("(" * i + "(yes|no|maybe)" + ")" * i)

    return [_outcome(lambda: engine.complete(PROMPTS[i % 4], greedy(4, structured_output=so(i))).text)
            for i in range(12)]


def scenario_bad_spec(engine):
    return [_outcome(lambda: engine.complete(PROMPTS[0], greedy()).text)]


SCENARIOS = {"kv_cache_allocate": (scenario_kv_cache_allocate, "kv_cache_allocate:50"),
             "tokenize": (scenario_tokenize, "tokenize:3"),
             "grammar_compile": (scenario_grammar_compile, "grammar_compile:3"),
             "bad_spec": (scenario_bad_spec, "kv_cache_allocate:0,nowhere:1")}


def _main(name, model):
    run, _spec = SCENARIOS[name]
    try:
        engine = Engine.load(model, max_model_len=256, max_num_seqs=8)
    except VllmError as exc:
        print(json.dumps({"load_error": str(exc)}))
        return
    with engine:
        results = run(engine)
        # Serving goes on: with the fault still armed every N-th pass, some
        # of ten more requests complete.
        after = [_outcome(lambda: engine.complete(PROMPTS[0], greedy()).text) for _ in range(10)]
    print(json.dumps({"results": results, "after": after}))


# --- the test side -------------------------------------------------------------

@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=8) as eng:
        yield eng


@pytest.fixture(scope="module")
def reference(engine):
    """Each prompt's fault-free greedy text (12 and 8 tokens)."""
    return {(p, n): engine.complete(p, greedy(n)).text for p in PROMPTS for n in (8, 12)}


def run_scenario(name, smollm2_path):
    env = dict(os.environ, VLLM_CPP_INJECT_FAULTS=SCENARIOS[name][1])
    done = subprocess.run([sys.executable, os.path.abspath(__file__), name, smollm2_path], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def split(results):
    ok = [r["ok"] for r in results if "ok" in r]
    errors = [r["error"] for r in results if "error" in r]
    return ok, errors


def check_served_on(report, reference):
    ok, errors = split(report["after"])
    assert ok and all(text == reference[(PROMPTS[0], 8)] for text in ok), report["after"]
    assert all(OOM in e for e in errors), errors


def test_kv_cache_allocation_failure_fails_only_its_request(smollm2_path, reference):
    report = run_scenario("kv_cache_allocate", smollm2_path)
    ok, errors = split(report["results"])
    assert ok and errors, report
    for e in errors:
        assert e.startswith("EngineError") and "KV cache blocks of this request could not be allocated" in e, e
    # Every request that was not failed generated exactly its fault-free text.
    for i, r in enumerate(report["results"]):
        if "ok" in r:
            assert r["ok"] == ["completed", reference[(PROMPTS[i % 4], 12)]], (i, r)
    check_served_on(report, reference)


def test_tokenizer_allocation_failure_fails_only_its_request(smollm2_path, reference):
    report = run_scenario("tokenize", smollm2_path)
    if "load_error" in report:  # the load itself tokenizes: the fault may land there, as one error
        assert OOM in report["load_error"], report
        return
    ok, errors = split(report["results"])
    assert ok and errors, report
    assert all(OOM in e for e in errors), errors
    completions, chats = report["results"][:12], report["results"][12:]
    for i, r in enumerate(completions):
        if "ok" in r:
            assert r["ok"] == reference[(PROMPTS[i % 4], 8)], (i, r)
    assert len({r["ok"] for r in chats if "ok" in r}) == 1, chats  # greedy: every chat answer alike
    check_served_on(report, reference)


def test_grammar_compiler_allocation_failure_fails_only_its_request(smollm2_path, reference):
    report = run_scenario("grammar_compile", smollm2_path)
    ok, errors = split(report["results"])
    assert len(errors) == 4 and len(ok) == 8, report  # every third compile fails
    assert all(OOM in e for e in errors), errors
    assert all(text in ("yes", "no", "maybe") for text in ok), ok
    check_served_on(report, reference)


def test_a_malformed_fault_spec_is_refused_by_name(smollm2_path):
    report = run_scenario("bad_spec", smollm2_path)
    text = json.dumps(report)
    assert "VLLM_CPP_INJECT_FAULTS" in text and "kv_cache_allocate:0" in text, report


def test_logits_processor_raising_at_random_steps(engine, reference):
    """16 concurrent requests, half with a processor that raises at a
    random step: those fail with LogitsProcessorError, the others produce
    their fault-free text."""
    rng = random.Random(15)

    class Boom(Exception):
        pass

    def raising_at(step):
        def processor(ids, _logits):
            if len(ids) >= step:
                raise Boom("step %d" % step)
        return processor

    requests = []
    for i in range(16):
        faulty = i % 2 == 0
        params = greedy(12, logits_processor=raising_at(rng.randint(0, 10))) if faulty else greedy(12)
        requests.append((faulty, PROMPTS[i % 4], engine.submit(PROMPTS[i % 4], params, lambda e: None)))
    for faulty, prompt, r in requests:
        if faulty:
            with pytest.raises(LogitsProcessorError) as info:
                r.wait()
            assert isinstance(info.value.__cause__, Boom)
        else:
            assert r.wait() is RequestOutcome.COMPLETED
            assert engine.request_completion(r).text == reference[(prompt, 12)]
        r.close()
    assert engine.complete(PROMPTS[0], greedy(8)).text == reference[(PROMPTS[0], 8)]


def test_engine_closed_while_threads_have_requests_in_flight(smollm2_path):
    """Eight threads submit, stream and wait in a loop; the engine is closed
    under them. Every call ends (no hang, no crash) with its result or an
    engine error; afterwards the threads are gone."""
    engine = Engine.load(smollm2_path, max_model_len=256, max_num_seqs=8)
    stop = threading.Event()
    outcomes, unexpected = [], []

    def worker(i):
        while not stop.is_set():
            try:
                kind = i % 3
                if kind == 0:
                    engine.complete(PROMPTS[i % 4], greedy(16))
                elif kind == 1:
                    for _ in engine.stream(PROMPTS[i % 4], greedy(16)):
                        pass
                else:
                    with engine.submit(PROMPTS[i % 4], greedy(16), lambda e: None) as r:
                        r.wait()
                outcomes.append("ok")
            except (EngineError, InvalidArgumentError) as exc:
                outcomes.append(type(exc).__name__)
            except BaseException as exc:  # noqa: BLE001 - reported below
                unexpected.append(repr(exc))
            if engine.closed:
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    engine.close()
    stop.set()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung after the engine was closed"
    assert not unexpected, unexpected
    assert engine.closed and outcomes


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
