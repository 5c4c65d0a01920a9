"""End-to-end HTTP serving: vllm-cpp's server (``vllm-cpp serve``) against
llama-cpp-python's (``python -m llama_cpp.server``), same GGUF and thread
count, in one run; plus vllm-cpp in process, to show what the HTTP layer
costs.

For each client count (default 1, 8, 32) that many clients each send one
streaming ``/v1/completions`` request at once (distinct natural-text prompts
of ``--input-len`` tokens, greedy, ``--output-len`` tokens; vllm-cpp's
requests set ``ignore_eos`` so every one streams exactly that many).
Reported per server: output tokens/s over the wall time (tokens from the
stream's usage chunk where the server sends one, else one per streamed
chunk, as llama-cpp-python streams them) and p50 time to first token. The
in-process row runs the same prompts through ``Engine.submit``
(``vllm_cpp.cli.bench.measure``, with ignore_eos); the HTTP cost is
1 - HTTP tok/s / in-process tok/s. On a shared machine throughput swings
with the neighbours, so the in-process and HTTP measurements alternate
(``--rounds`` times per client count, with vllm-cpp's server started once
and idle while the in-process engine runs) and the medians are reported,
with the spread of the per-round HTTP costs. Where /proc exists, the CPU
time each process spent per output token is reported too (the server
process's, and of it its main thread's, where uvicorn runs the event loop:
the rest is the engine's threads; the in-process run's, engine and
callbacks) and the HTTP layer's
share of the server's CPU, 1 - in-process / server, and the clients' CPU
per token (this process's, while the HTTP level runs). The clients share
the cores with the engine, so they are lean (a connection each, the body's
bytes read without decoding every chunk; ``one_stream``): what they spend
is measured against the server otherwise.

Usage:  python bench/bench_server.py [--model PATH] [--threads N]
                                     [--clients 1,8,32] [--input-len 128] [--output-len 128]
                                     [--rounds 3] [--no-llamacpp]
Needs:  pip install "vllm-cpp[server]" httpx, and for the comparison
        llama-cpp-python with its server deps (sse-starlette starlette-context
        pydantic-settings fastapi uvicorn).
Prints a markdown report; BENCHMARKS.md records a run.
"""

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import httpx


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, process, what, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("%s exited with status %d before it was ready" % (what, process.returncode))
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("%s was not ready after %ds" % (what, timeout))


def start_vllm_cpp(model, threads, max_clients, ctx, python=None):
    """vllm-cpp's server on a free port, run by `python` (default: this interpreter)."""
    port = free_port()
    env = dict(os.environ, VLLM_CPP_NUM_THREADS=str(threads))
    process = subprocess.Popen(
        [python or sys.executable, "-m", "vllm_cpp", "serve", model, "--port", str(port), "--max-model-len", str(ctx),
         "--max-num-seqs", str(max_clients), "--served-model-name", "model", "--no-enable-prefix-caching"],
        # A neutral folder: from a checkout, -m would find its uncompiled vllm_cpp/ first.
        env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, "http://127.0.0.1:%d" % port


def start_llamacpp(model, threads, ctx):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", model, "--n_threads", str(threads),
         "--n_threads_batch", str(threads), "--n_ctx", str(ctx), "--port", str(port), "--model_alias", "model",
         # Its default lets each new request cut off the stream in progress;
         # queued one after another, every request gets its full output.
         "--interrupt_requests", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, "http://127.0.0.1:%d" % port


def _has_text(line):
    """Whether an SSE completion chunk's first choice has non-empty text,
    read off the bytes (both servers write ``"text":`` then the string)."""
    i = line.find(b'"text":')
    return i >= 0 and not line[i + 7:i + 10].lstrip().startswith(b'""')


async def _body_lines(reader, chunked):
    """The lines of a response body, chunked transfer coding or not."""
    buffer = b""
    while True:
        if chunked:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                break
            data = (await reader.readexactly(size + 2))[:-2]
        else:
            data = await reader.read(65536)
            if not data:
                break
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r")


async def one_stream(url, prompt, output_len, start, extra):
    """One streamed completion on a connection of its own: (time to first
    text, output tokens). The clients share the machine's cores with the
    engine, so the client is kept lean: a client that decodes every chunk
    with httpx and json spends more CPU per token than the server's whole
    HTTP layer, and would be measured as that layer's cost. It reads the
    body's bytes and parses only the usage chunk."""
    host, port = url.rsplit("//", 1)[1].split(":")
    body = json.dumps({"model": "model", "prompt": prompt, "max_tokens": output_len, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}, **extra}).encode()
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (host.encode(), port.encode(), len(body), body))
        status = await reader.readline()
        if status.split()[1:2] != [b"200"]:
            raise SystemExit("the server answered %r" % status)
        chunked = False
        while True:
            header = (await reader.readline()).strip().lower()
            if not header:
                break
            chunked = chunked or (header.startswith(b"transfer-encoding:") and b"chunked" in header)
        first, chunks, usage = None, 0, None
        async for line in _body_lines(reader, chunked):
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            if b'"usage"' in line:
                usage = json.loads(line[6:]).get("usage") or usage
            if _has_text(line):
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
    finally:
        writer.close()
    # A chunk may carry several tokens (vllm-cpp sends a lagging stream's
    # tokens together): the usage chunk counts them; without one (llama-cpp-
    # python ignores stream_options) a chunk is one token.
    return first, usage["completion_tokens"] if usage else chunks


async def http_level(url, prompts, output_len, extra):
    start = time.perf_counter()
    results = await asyncio.gather(*(one_stream(url, p, output_len, start, extra) for p in prompts))
    wall = time.perf_counter() - start
    tokens = sum(t for _, t in results)
    return {"tokens_per_s": tokens / wall, "ttft_p50_s": statistics.median(f for f, _ in results if f is not None),
            "mean_output_tokens": tokens / len(prompts), "n": len(prompts)}


def cpu_seconds(pid=None):
    """User + system CPU time of a process (this one by default), from
    /proc; None where there is no /proc."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loop_thread_cpu_seconds(pid):
    """CPU time of a server's main thread, where uvicorn runs the event loop
    (its other threads are the engine's); None where there is no /proc."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_cpu_per_token(result, cpu_before, cpu_after):
    """``result`` with the CPU milliseconds its process spent per output
    token: on a shared machine this holds up where throughput does not."""
    if cpu_before is not None and cpu_after is not None:
        result["cpu_ms_per_token"] = 1e3 * (cpu_after - cpu_before) / (result["mean_output_tokens"] * result["n"])
    return result


class Server:
    """A started server process; ``level`` measures one client count."""

    def __init__(self, started, what, extra):
        self.process, self.url = started
        self.extra = extra
        try:
            wait_ready(self.url, self.process, what)
        except BaseException:
            self.close()
            raise

    def level(self, prompts, output_len):
        pid = self.process.pid
        before, loop_before, client_before = cpu_seconds(pid), loop_thread_cpu_seconds(pid), cpu_seconds()
        result = asyncio.run(http_level(self.url, prompts, output_len, self.extra))
        client = with_cpu_per_token(dict(result), client_before, cpu_seconds())
        loop = with_cpu_per_token(dict(result), loop_before, loop_thread_cpu_seconds(pid))
        result = with_cpu_per_token(result, before, cpu_seconds(pid))
        result["client_cpu_ms_per_token"] = client["cpu_ms_per_token"]
        if "cpu_ms_per_token" in loop:
            result["loop_cpu_ms_per_token"] = loop["cpu_ms_per_token"]
        return result

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=60)


def uvicorn_flavour():
    """Which event loop and HTTP parser uvicorn picks ("auto"): uvloop and
    httptools where installed (uvicorn[standard], as vLLM installs it),
    else asyncio and h11. The server runs this interpreter."""
    import importlib.util

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return "%s loop, %s" % (loop, http)


def load_average():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def median_result(rounds):
    """The per-key medians of several rounds' results."""
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0] if all(k in r for r in rounds)}


def main():
    from vllm_cpp.cli.bench import measure, prompt_ids
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="alternating in-process/HTTP rounds per client count")
    parser.add_argument("--no-llamacpp", action="store_true", help="skip llama-cpp-python (smoke runs)")
    args = parser.parse_args()
    model = args.model or smollm2_path()
    load_before = "%.1f" % load_average()
    levels = [int(c) for c in args.clients.split(",")]
    ctx = args.input_len + args.output_len + 16
    if not args.no_llamacpp:
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError as exc:
            raise SystemExit("llama-cpp-python's server is not installed (%s); see the module doc, "
                             "or pass --no-llamacpp" % exc)

    os.environ["VLLM_CPP_NUM_THREADS"] = str(args.threads)
    from vllm_cpp import Engine

    # Prompts as text (both servers take text), from vllm-cpp's tokenizer;
    # the GGUF is the same, so both see the same tokens.
    ours = Server(start_vllm_cpp(model, args.threads, max(levels), ctx), "vllm-cpp serve", {"ignore_eos": True})
    try:
        with Engine.load(model, max_model_len=ctx, max_num_seqs=max(levels), prefix_caching=False) as engine:
            texts = [engine.detokenize(prompt_ids(engine, i, args.input_len)) for i in range(sum(levels) + 1)]
            offsets = {c: sum(levels[:i]) for i, c in enumerate(levels)}

            def prompts_for(clients):
                return texts[offsets[clients]:offsets[clients] + clients]

            ours.level(texts[-1:], 4)  # warm-up
            in_rounds = {c: [] for c in levels}
            http_rounds = {c: [] for c in levels}
            for _ in range(args.rounds):
                for c in levels:
                    prompts = [engine.tokenize(t) for t in prompts_for(c)]
                    before = cpu_seconds()
                    result = dict(measure(engine, prompts, args.output_len), mean_output_tokens=args.output_len, n=c)
                    in_rounds[c].append(with_cpu_per_token(result, before, cpu_seconds()))
                    http_rounds[c].append(ours.level(prompts_for(c), args.output_len))
    finally:
        ours.close()
    in_process = {c: median_result(in_rounds[c]) for c in levels}
    ours_median = {c: median_result(http_rounds[c]) for c in levels}
    costs = {c: sorted(1 - h["tokens_per_s"] / p["output_tokens_per_s"] for h, p in zip(http_rounds[c], in_rounds[c]))
             for c in levels}
    theirs = None
    if not args.no_llamacpp:
        peer = Server(start_llamacpp(model, args.threads, ctx), "llama_cpp.server", {})
        try:
            peer.level(texts[-1:], 4)  # warm-up
            theirs = {c: peer.level(prompts_for(c), args.output_len) for c in levels}
        finally:
            peer.close()

    print("## HTTP serving: vllm-cpp vs llama-cpp-python\n")
    print("%s, %d threads, %s, %d prompt tokens, up to %d output tokens per request (greedy)\n"
          % (os.path.basename(model), args.threads, platform.processor() or platform.machine(),
             args.input_len, args.output_len))
    print("vllm-cpp and in process: medians of %d alternating rounds; HTTP cost: of the medians, and "
          "[lowest, highest] of the rounds. vllm-cpp's uvicorn: %s. 1-minute load average %s before, "
          "%.1f after.\n" % (args.rounds, uvicorn_flavour(), load_before, load_average()))
    print("| clients | vllm-cpp tok/s | TTFT p50 (ms) | llama-cpp-python tok/s | TTFT p50 (ms) | ratio "
          "| in-process tok/s | HTTP cost | CPU ms/token: server | its loop thread | in-process | HTTP CPU share "
          "| client CPU ms/token |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in levels:
        o, p = ours_median[c], in_process[c]
        t = theirs[c] if theirs else None
        cpu = "- | - | - | -"
        if "cpu_ms_per_token" in o and "cpu_ms_per_token" in p:
            cpu = "%.2f | %.2f | %.2f | %.1f%%" % (o["cpu_ms_per_token"], o.get("loop_cpu_ms_per_token", float("nan")),
                                                  p["cpu_ms_per_token"],
                                                  100.0 * (1 - p["cpu_ms_per_token"] / o["cpu_ms_per_token"]))
        print("| %d | %.1f | %.0f | %s | %s | %s | %.1f | %.1f%% [%.1f%%, %.1f%%] | %s | %.2f |" % (
            c, o["tokens_per_s"], o["ttft_p50_s"] * 1e3,
            "%.1f" % t["tokens_per_s"] if t else "-", "%.0f" % (t["ttft_p50_s"] * 1e3) if t else "-",
            "%.2fx" % (o["tokens_per_s"] / t["tokens_per_s"]) if t else "-",
            p["output_tokens_per_s"], 100.0 * (1 - o["tokens_per_s"] / p["output_tokens_per_s"]),
            100.0 * costs[c][0], 100.0 * costs[c][-1], cpu, o["client_cpu_ms_per_token"]))
    print("\nMean streamed output tokens per request: vllm-cpp %s; llama-cpp-python %s"
          % (", ".join("%.0f" % ours_median[c]["mean_output_tokens"] for c in levels),
             ", ".join("%.0f" % theirs[c]["mean_output_tokens"] for c in levels) if theirs else "-"))


if __name__ == "__main__":
    main()
