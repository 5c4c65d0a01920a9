"""A soak of the engine: every kind of request at once, with faults, watched
for lost requests, hangs and leaks.

    python tests/support/soak.py [--requests 10000] [--threads 4] [--model PATH] [--seed N] [--http]

Worker threads draw requests at random from KINDS: blocking, streamed with
a callback that raises or stops early, non-blocking (waited, cancelled at a
random moment, or dropped unwaited for the garbage collector), async
(acomplete, astream left early), chat (blocking and streamed), a logits
processor that raises at a random step, and invalid requests; each with
random sampling parameters (temperature, top-p/k, min-p, penalties, seed,
stop strings, lengths, a regex/choice/JSON constraint) on random prompts
(ASCII, other scripts, emoji, long). Every request ends in exactly one
outcome bucket; an exception that is not the fault the request injected
(or the error an invalid request must get) is a failure. A watchdog fails
the run when no request has ended for --hang-seconds.

Every --report-every requests it prints resident memory, threads and open
file descriptors, and what resident memory is made of: anonymous memory
and mapped files' pages (the model's), Python objects and
pymalloc blocks, and glibc's C heap (bytes in use, bytes held, arenas:
tests/support/malloc_stats.py), so that growth can be told apart as a leak (in use
grows) or memory the allocator keeps (held grows), and anonymous memory
split by mapping: main heap, other malloc arenas, thread stacks, the rest
(tests/support/anon_memory.py). "Flat after warm-up" is judged between the sample taken
after the first --warmup requests and the last one taken while serving
(before the first request, the engine runs its largest steps once, so that
its per-step buffers are at their largest: run_largest_steps);
after the engine is closed, threads and descriptors are back to where they
were before it was loaded.

With --http the same engine serves the OpenAI server (server_harness, in
this process) and the threads are HTTP clients instead (HTTP_KINDS):
blocking and streamed completions and chats, structured output, invalid
bodies (400), and clients that disconnect mid-stream or stop waiting for
a blocking answer. After the run the engine must be idle: every request of
a client that left was cancelled and dropped.

tests/engine/test_soak.py runs a few hundred requests of it in the suite; the
documented run (RELIABILITY.md) is the default 10,000, in process and over
HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import gc
import os
import random
import sys
import threading
import time

import anon_memory
import malloc_stats

try:  # Logits processors get numpy arrays where numpy is installed, and its BLAS starts a thread when it is
    import numpy  # noqa: F401 - first imported: imported here, that thread is in the "before load" sample
except ImportError:
    pass
from vllm_cpp import (Engine, InvalidArgumentError, InvalidConfigurationError, LogitsProcessorError,
                      RequestOutcome, SamplingParams, StreamControl, StructuredOutput)

PROMPT_PIECES = ("The capital of France is", "Once upon a time", "def fibonacci(n):", "Tokyo 東京 は",
                 "Emoji 🙂🚀 and accents: naïve café", "1, 2, 3, 4,", "Ein Satz auf Deutsch.",
                 "Why is the sky blue?", "<|im_start|>user\nHi<|im_end|>", "    indented\n\tcode")


class InjectedFault(Exception):
    """Raised on purpose by a soak callback or logits processor."""


@dataclasses.dataclass
class Sample:
    requests_done: int
    rss_mib: float
    rss_anon_mib: float  # private memory: heaps, stacks, the KV cache
    rss_file_mib: float  # pages of mapped files: the model's weights as they are first read
    threads: int
    fds: int
    python_objects: int
    python_blocks: int  # pymalloc's small blocks allocated (sys.getallocatedblocks)
    heap: malloc_stats.Heap | None  # the C heap, to tell a leak from memory malloc keeps
    anonymous: anon_memory.AnonymousSplit | None  # rss_anon_mib by what holds it


def resources(done: int) -> Sample:
    kib = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                kib[key] = int(value.split()[0])
    return Sample(done, kib.get("VmRSS", 0) / 1024.0, kib.get("RssAnon", 0) / 1024.0, kib.get("RssFile", 0) / 1024.0,
                  len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd")),
                  len(gc.get_objects()), sys.getallocatedblocks(), malloc_stats.heap(), anon_memory.split())


def describe(sample: Sample) -> str:
    text = (f"rss {sample.rss_mib:.1f} MiB ({sample.rss_anon_mib:.1f} anonymous, {sample.rss_file_mib:.1f} file), "
            f"{sample.threads} threads, {sample.fds} fds, "
            f"{sample.python_objects} Python objects, {sample.python_blocks} pymalloc blocks")
    if sample.heap is not None:
        text += (f", C heap {sample.heap.in_use_mib:.1f} MiB in use / {sample.heap.held_mib:.1f} MiB held "
                 f"in {sample.heap.arenas} arenas")
    if sample.anonymous is not None:
        a = sample.anonymous
        text += (f", anonymous: {a.heap_mib:.1f} MiB main heap, {a.arenas_mib:.1f} other arenas, "
                 f"{a.stacks_mib:.1f} stacks, {a.other_mib:.1f} other")
        if a.pymalloc_mib is not None:
            text += f" ({a.pymalloc_mib:.1f} of it pymalloc's arenas)"
    return text


def random_prompt(rng: random.Random) -> str:
    text = " ".join(rng.choice(PROMPT_PIECES) for _ in range(rng.randint(1, 4)))
    return text * (rng.randint(4, 12) if rng.random() < 0.05 else 1)


def random_params(rng: random.Random, **overrides) -> SamplingParams:
    fields = dict(temperature=rng.choice((0.0, 0.7, 1.0, 1.3)), top_p=rng.choice((1.0, 0.9, 0.5)),
                  top_k=rng.choice((0, 0, 5, 40)), min_p=rng.choice((0.0, 0.0, 0.05)),
                  max_tokens=rng.randint(1, 24), seed=rng.choice((None, rng.randint(0, 2**32))),
                  presence_penalty=rng.choice((0.0, 0.5)), frequency_penalty=rng.choice((0.0, 0.3)),
                  repetition_penalty=rng.choice((1.0, 1.1)), min_tokens=rng.choice((0, 0, 2)),
                  stop=tuple(rng.sample((".", "\n", " the", "ing", "\u00e9"), rng.randint(0, 2))))
    roll = rng.random()
    if roll < 0.04:
        fields["structured_output"] = StructuredOutput.regex(r"[a-z]{1,8}( [a-z]{1,8}){0,3}")
    elif roll < 0.08:
        fields["structured_output"] = StructuredOutput.choice(["yes", "no", "maybe"])
    elif roll < 0.10:
        fields["structured_output"] = StructuredOutput.json_object()
        fields["max_tokens"] = 48
    fields.update(overrides)
    fields["min_tokens"] = min(fields["min_tokens"], fields["max_tokens"])
    return SamplingParams(**fields)


def _stream_callback(rng: random.Random, mode: str):
    """A callback that, after a random number of events, raises (mode
    "raise"), returns STOP ("stop") or simply goes on ("continue")."""
    limit = rng.randint(0, 6)
    seen = [0]

    def on_event(event):
        seen[0] += 1
        if seen[0] > limit and not event.finished:
            if mode == "raise":
                raise InjectedFault("callback fault")
            if mode == "stop":
                return StreamControl.STOP
        return StreamControl.CONTINUE

    return on_event


# --- the kinds of request ------------------------------------------------------
# Each takes (engine, rng, loop) and returns the name of its outcome bucket.

def kind_complete(engine, rng, loop):
    return "complete:" + str(engine.complete(random_prompt(rng), random_params(rng)).finish_reason)


def kind_stream_callback(engine, rng, loop):
    mode = rng.choice(("raise", "stop", "continue"))
    try:
        outcome = engine.complete_stream(random_prompt(rng), random_params(rng), _stream_callback(rng, mode))
    except InjectedFault:
        return "stream:callback_raised"
    return "stream:stopped" if outcome.stopped_by_callback else "stream:finished"


def kind_submit_wait(engine, rng, loop):
    with engine.submit(random_prompt(rng), random_params(rng), _stream_callback(rng, "continue")) as request:
        return "submit:" + request.wait(timeout=300).value


def kind_submit_cancel(engine, rng, loop):
    with engine.submit(random_prompt(rng), random_params(rng, max_tokens=64), lambda event: None) as request:
        time.sleep(rng.random() * 0.02)
        request.cancel()
        return "cancel:" + request.wait(timeout=300).value


def kind_submit_drop(engine, rng, loop):
    # Never waited or closed: the finalizer must cancel it and free it.
    engine.submit(random_prompt(rng), random_params(rng), _stream_callback(rng, "continue"))
    if rng.random() < 0.2:
        gc.collect()
    return "dropped"


def kind_async(engine, rng, loop):
    async def run():
        if rng.random() < 0.5:
            completion = await engine.acomplete(random_prompt(rng), random_params(rng))
            return "async:complete:" + str(completion.finish_reason)
        limit = rng.randint(0, 4)
        stream = engine.astream(random_prompt(rng), random_params(rng))
        n = 0
        async for _ in stream:
            n += 1
            if n > limit:
                await stream.aclose()
                return "async:left_early"
        return "async:stream_finished"

    return loop.run_until_complete(asyncio.wait_for(run(), 300))


def kind_chat(engine, rng, loop):
    request = {"messages": [{"role": "user", "content": random_prompt(rng)}], "max_tokens": rng.randint(1, 16),
               "temperature": rng.choice((0.0, 0.8)), "n": rng.choice((1, 1, 2))}
    if rng.random() < 0.5:
        return "chat:" + engine.chat(request)["choices"][0]["finish_reason"]
    chunks = sum(1 for _ in engine.chat_stream(dict(request, stream=True)))
    return "chat:stream" if chunks else "chat:empty_stream"


def kind_logits_fault(engine, rng, loop):
    at = rng.randint(0, 4)

    def processor(token_ids, logits):
        if len(token_ids) >= at:
            raise InjectedFault("logits processor fault")

    try:
        engine.complete(random_prompt(rng), random_params(rng, max_tokens=8, logits_processor=processor))
    except LogitsProcessorError as exc:
        if not isinstance(exc.__cause__, InjectedFault):
            raise
        return "logits:raised"
    return "logits:finished_first"


def kind_invalid(engine, rng, loop):
    bad = rng.choice(("empty", "temperature", "top_p", "chat"))
    try:
        if bad == "empty":
            engine.complete("", SamplingParams())
        elif bad == "temperature":
            engine.complete("hi", SamplingParams(temperature=-1.0))
        elif bad == "top_p":
            engine.complete("hi", SamplingParams(top_p=0.0))
        else:
            engine.chat({"messages": [{"role": "nobody"}], "max_tokens": -3})
    except (InvalidArgumentError, InvalidConfigurationError):
        return "invalid:refused"
    raise AssertionError(f"the invalid request ({bad}) was accepted")


KINDS = (kind_complete, kind_stream_callback, kind_submit_wait, kind_submit_cancel, kind_submit_drop, kind_async,
         kind_chat, kind_logits_fault, kind_invalid)


# --- the kinds of HTTP request ---------------------------------------------------
# Each takes (client, rng, loop): an httpx.Client on the server, one per thread.

def _completion_body(rng, **overrides):
    body = {"prompt": random_prompt(rng), "max_tokens": rng.randint(1, 24),
            "temperature": rng.choice((0.0, 0.7, 1.0)), "seed": rng.randint(0, 2**32),
            "stop": rng.sample((".", "\n", " the", "ing"), rng.randint(0, 2)), "n": rng.choice((1, 1, 2))}
    roll = rng.random()
    if roll < 0.1:
        body["guided_regex"] = "[a-z]{1,8}( [a-z]{1,8}){0,3}"
    elif roll < 0.2:
        body["guided_choice"] = ["yes", "no", "maybe"]
    body.update(overrides)
    return body


def _chat_body(rng, **overrides):
    return dict({"messages": [{"role": "user", "content": random_prompt(rng)}], "max_tokens": rng.randint(1, 16),
                 "temperature": rng.choice((0.0, 0.8))}, **overrides)


def _expect(response, status=200):
    if response.status_code != status:
        raise AssertionError(f"status {response.status_code} (wanted {status}): {response.text[:300]}")
    return response


def _read_stream(client, path, body, leave_after=None):
    """Reads an SSE stream; returns "done" ([DONE] seen) or "left" (the
    client disconnected after `leave_after` events)."""
    with client.stream("POST", path, json=dict(body, stream=True)) as response:
        _expect(response)
        events = 0
        for line in response.iter_lines():
            if line == "data: [DONE]":
                return "done"
            if line.startswith("data: "):
                events += 1
                if leave_after is not None and events > leave_after:
                    return "left"  # leaving the block closes the connection mid-stream
    raise AssertionError("the stream ended without [DONE]")


def http_complete(client, rng, loop):
    choices = _expect(client.post("/v1/completions", json=_completion_body(rng))).json()["choices"]
    return "http:complete:" + str(choices[0]["finish_reason"])


def http_stream(client, rng, loop):
    return "http:stream:" + _read_stream(client, "/v1/completions", _completion_body(rng))


def http_chat(client, rng, loop):
    if rng.random() < 0.5:
        _expect(client.post("/v1/chat/completions", json=_chat_body(rng)))
        return "http:chat"
    return "http:chat_stream:" + _read_stream(client, "/v1/chat/completions", _chat_body(rng))


def http_disconnect_mid_stream(client, rng, loop):
    path, body = rng.choice((("/v1/completions", _completion_body(rng, max_tokens=64, n=1)),
                             ("/v1/chat/completions", _chat_body(rng, max_tokens=64))))
    return "http:disconnect:" + _read_stream(client, path, dict(body, ignore_eos=True),
                                             leave_after=rng.randint(0, 3))


def http_disconnect_blocking(client, rng, loop):
    import httpx

    try:
        client.post("/v1/completions", json=_completion_body(rng, max_tokens=64, ignore_eos=True),
                    timeout=rng.uniform(0.01, 0.2))
    except httpx.TimeoutException:
        return "http:gave_up_waiting"
    return "http:answered_in_time"


def http_invalid(client, rng, loop):
    body = rng.choice(({"prompt": "hi", "max_tokens": -1}, {"prompt": "hi", "temperature": "hot"},
                       {"messages": "hi"}, {"prompt": "hi", "guided_regex": "(" * 300 + "a" + ")" * 300},
                       {"prompt": "hi", "n": 10**6}, {"prompt": "a\u0000b"}))
    path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
    _expect(client.post(path, json=body), 400)
    return "http:invalid"


HTTP_KINDS = (http_complete, http_stream, http_chat, http_disconnect_mid_stream, http_disconnect_blocking,
              http_invalid)


@dataclasses.dataclass
class SoakReport:
    submitted: int
    outcomes: collections.Counter
    failures: list
    samples: list
    hung: bool
    seconds: float
    trimmed: Sample | None = None  # after the last serving sample, once malloc_trim gave free pages back

    def accounted(self) -> int:
        return sum(self.outcomes.values()) + len(self.failures)

    def flat_window(self, warmup: int):
        """(the first sample at or past `warmup` requests, the last sample
        taken while the engine served): where "flat" is judged."""
        running = self.samples[1:-1] or self.samples
        first = next((s for s in running if s.requests_done >= warmup), running[0])
        return first, running[-1]


def run_largest_steps(engine: Engine, max_model_len: int, max_num_seqs: int) -> None:
    """Warm-up: the engine keeps its per-step buffers (activations, every
    kernel thread's quantized activations, logits) at the size of the largest
    step it has run, to reuse them, where llama.cpp reserves its compute
    buffer for its largest batch at start. The soak's random prompts reach a
    new largest step now and then, each a step of a few MiB; so its largest
    steps run first: `max_num_seqs` long prompts at once (the scheduler packs
    as many prompt tokens into a step as its token budget and KV cache allow),
    then all of them decoding."""
    filler = engine.tokenize(" ".join(PROMPT_PIECES) * max_model_len)[: max_model_len - 32]
    prompts = [f"{i} " + engine.detokenize(filler) for i in range(max_num_seqs)]  # no shared prefix
    params = SamplingParams.greedy(max_tokens=8, ignore_eos=True)
    running = [engine.submit(prompt, params, lambda event: None) for prompt in prompts]
    for request in running:
        outcome = request.wait()
        request.close()
        if outcome is not RequestOutcome.COMPLETED:
            raise RuntimeError(f"the soak's warm-up request ended {outcome}")


def run_soak(model: str, requests: int, threads: int = 4, seed: int = 0, report_every: int = 500,
             hang_seconds: float = 120.0, log=print, http: bool = False, **engine_options) -> SoakReport:
    """Runs the soak (over HTTP when `http`); the engine is loaded
    (max_model_len 512, 8 sequences, unless `engine_options` say otherwise)
    and closed here."""
    samples = [resources(0)]
    options = {"max_model_len": 512, "max_num_seqs": 8, **engine_options}
    engine = Engine.load(model, **options)
    run_largest_steps(engine, options["max_model_len"], options["max_num_seqs"])
    with contextlib.ExitStack() as stack:
        target = engine
        if http:
            import httpx
            from server_harness import running_server

            url = stack.enter_context(running_server(engine, max_model_len=512, max_pending_requests=64))

            def target():  # one client (connection pool) per worker thread
                return httpx.Client(base_url=url, timeout=300)

        report = _run_workers(engine, target, HTTP_KINDS if http else KINDS, requests, threads, seed,
                              report_every, hang_seconds, log, samples)
        if http:
            from server_harness import wait_until_idle

            stats = wait_until_idle(engine)
            if stats["running_requests"] or stats["waiting_requests"] or stats["kv_blocks_used"]:
                report.failures.append(f"the engine is not idle after the HTTP soak: {stats}")
    if malloc_stats.trim():
        report.trimmed = resources(report.accounted())
    engine.close()
    gc.collect()
    samples.append(resources(report.accounted()))
    return report


def _run_workers(engine, target, kinds, requests, threads, seed, report_every, hang_seconds, log,
                 samples) -> SoakReport:
    """Threads draw requests of `kinds` until `requests` have run; `target`
    is the engine, or a factory of one HTTP client per thread."""
    outcomes, failures = collections.Counter(), []
    lock = threading.Lock()
    next_index = [0]
    last_end = [time.monotonic()]
    stop = threading.Event()
    hung = [False]

    def take() -> int:
        with lock:
            if next_index[0] >= requests:
                return -1
            next_index[0] += 1
            return next_index[0] - 1

    def worker(worker_id):
        loop = asyncio.new_event_loop()
        client = target() if callable(target) else target
        try:
            while not stop.is_set():
                index = take()
                if index < 0:
                    return
                rng = random.Random(seed * 1_000_003 + index)
                kind = rng.choice(kinds)
                try:
                    bucket = kind(client, rng, loop)
                    error = None
                except Exception as exc:  # noqa: BLE001 - every unexpected error is a failure, counted
                    bucket, error = None, f"request {index} ({kind.__name__}): {type(exc).__name__}: {exc}"
                with lock:
                    if error is None:
                        outcomes[bucket] += 1
                    else:
                        failures.append(error)
                    last_end[0] = time.monotonic()
                    done = sum(outcomes.values()) + len(failures)
                if done % report_every == 0:
                    sample = resources(done)
                    samples.append(sample)
                    log(f"{done:6d} requests: {describe(sample)}")
        finally:
            loop.close()
            if client is not engine:
                client.close()

    def watchdog():
        while not stop.wait(1.0):
            if time.monotonic() - last_end[0] > hang_seconds:
                hung[0] = True
                log(f"watchdog: no request ended for {hang_seconds:.0f} s")
                stop.set()
                engine.cancel_all()

    start = time.monotonic()
    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    stop.set()
    dog.join()
    return SoakReport(requests, outcomes, failures, samples, hung[0], time.monotonic() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a GGUF file or HF directory (default: the bundled SmolLM2)")
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-every", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=1000, help="requests before the 'flat' baseline sample")
    parser.add_argument("--hang-seconds", type=float, default=120.0)
    parser.add_argument("--http", action="store_true", help="through the OpenAI server, as HTTP clients")
    parser.add_argument("--num-blocks", type=int, default=None,
                        help="KV cache blocks (default: the engine's, 256 here); a small cache has every block's "
                             "pages committed during warm-up, so later resident-memory growth is not the KV cache "
                             "being touched for the first time")
    args = parser.parse_args(argv)
    if args.model is None:
        from vllm_cpp.models import smollm2_path
        args.model = smollm2_path()

    engine_options = {} if args.num_blocks is None else {"num_blocks": args.num_blocks}
    report = run_soak(args.model, args.requests, args.threads, args.seed, args.report_every, args.hang_seconds,
                      http=args.http, **engine_options)
    print(f"{report.submitted} requests in {report.seconds:.0f} s; outcomes: {dict(sorted(report.outcomes.items()))}")
    warm, last_running = report.flat_window(args.warmup)
    before, after = report.samples[0], report.samples[-1]
    print(f"while serving, after warm-up ({warm.requests_done} requests) -> last sample "
          f"({last_running.requests_done}):\n  {describe(warm)}\n  {describe(last_running)}")
    if report.trimmed is not None:
        print(f"  then, after malloc_trim(0) (what malloc kept, given back):\n  {describe(report.trimmed)}")
    print(f"before load -> after close: threads {before.threads} -> {after.threads}, fds {before.fds} -> {after.fds}")
    for failure in report.failures[:20]:
        print("FAIL:", failure)
    ok = not report.failures and not report.hung and report.accounted() == report.submitted
    print("accounted for:", report.accounted(), "of", report.submitted, "-", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
