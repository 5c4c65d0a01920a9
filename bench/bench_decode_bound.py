"""Batch-1 decode against this machine's memory-bandwidth bound.

A decode step reads every weight matrix once (the token embedding only for
one row, but a tied output matrix whole), so no engine can decode faster
than (read bandwidth) / (weight bytes per token). This script measures the
read bandwidth with its own loop (a small C function built with cffi: each
of --threads threads sums its slice of a buffer far larger than the
last-level cache, best of --repeats), reads the weight bytes per token
from the GGUF's tensor table, and prints the bound beside vllm-cpp's
batch-1 decode (bench_vs_llamacpp.py's measurement, in a child process)
and, with --llamacpp, llama.cpp's.

Usage:  python bench/bench_decode_bound.py [--model PATH] [--threads N] [--repeats N] [--llamacpp]

Needs the `gguf` package (llama.cpp's GGUF reader) for the tensor table,
a C compiler for the read loop, and llama-cpp-python (bench_vs_llamacpp.py
builds its prompt with llama.cpp's tokenizer). BENCHMARKS.md records runs.
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent

_READ_LOOP = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct slice { const uint64_t* p; size_t n; int passes; uint64_t sum; };

static void* read_slice(void* arg) {
    struct slice* s = (struct slice*)arg;
    /* Four independent sums keep several loads in flight. */
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (int pass = 0; pass < s->passes; ++pass)
        for (size_t i = 0; i + 4 <= s->n; i += 4) {
            a += s->p[i]; b += s->p[i + 1]; c += s->p[i + 2]; d += s->p[i + 3];
        }
    s->sum = a + b + c + d;
    return NULL;
}

/* Writes every word, so that each page of the buffer is its own: a buffer
 * only ever read would map every page to the kernel's one zero page, and
 * the loop would time a cache, not memory. */
void fill_words(uint64_t* buffer, size_t n_words) {
    for (size_t i = 0; i < n_words; ++i) buffer[i] = i;
}

double read_bandwidth(const uint64_t* buffer, size_t n_words, int threads, int passes, uint64_t* sink) {
    pthread_t ids[256];
    struct slice slices[256];
    if (threads < 1 || threads > 256) return -1.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int t = 0; t < threads; ++t) {
        slices[t].p = buffer + n_words * t / threads;
        slices[t].n = n_words * (t + 1) / threads - n_words * t / threads;
        slices[t].passes = passes;
        pthread_create(&ids[t], NULL, read_slice, &slices[t]);
    }
    for (int t = 0; t < threads; ++t) { pthread_join(ids[t], NULL); *sink += slices[t].sum; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    return (double)n_words * 8.0 * passes / seconds;
}
"""


def _read_loop():
    """Builds the read loop once per call into a temporary directory; returns (ffi, lib)."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void fill_words(uint64_t*, size_t); double read_bandwidth(const uint64_t*, size_t, int, int, uint64_t*);")
    ffi.set_source("_bench_read_loop", _READ_LOOP, extra_compile_args=["-O3", "-march=native"],
                   extra_link_args=["-pthread"])
    build_dir = tempfile.mkdtemp(prefix="bench_read_loop_")
    library = ffi.compile(tmpdir=build_dir, verbose=False)
    sys.path.insert(0, build_dir)
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_read_loop", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffi, module.lib


def read_bandwidth(threads, repeats, buffer_mib=512, passes=4):
    """Best read bandwidth (bytes/s) of `repeats` runs of `passes` sweeps over a buffer_mib buffer."""
    ffi, lib = _read_loop()
    n_words = buffer_mib * 1024 * 1024 // 8
    buffer = ffi.new("uint64_t[]", n_words)
    lib.fill_words(buffer, n_words)  # every page written, hence backed by its own memory
    sink = ffi.new("uint64_t*")
    lib.read_bandwidth(buffer, n_words, threads, 1, sink)  # warm-up: settles clocks
    return max(lib.read_bandwidth(buffer, n_words, threads, passes, sink) for _ in range(repeats))


def weight_bytes_per_token(model):
    """Bytes of weights one decode step reads: every tensor but the token embedding, which counts
    whole only when it is also the output matrix (tied), since then the lm_head reads all of it;
    a mixture-of-experts layer's expert tensors (`*_exps`) count for the share of experts a token
    is routed to (expert_used_count / expert_count)."""
    try:
        import gguf
    except ImportError as e:
        raise SystemExit("bench_decode_bound.py needs the gguf package (pip install gguf)") from e
    reader = gguf.GGUFReader(model)
    arch = reader.fields["general.architecture"].contents()

    def count(key):
        field = reader.fields.get(f"{arch}.{key}")
        return int(field.contents()) if field is not None else 0

    experts, used = count("expert_count"), count("expert_used_count")
    tensors = {t.name: int(t.n_bytes) for t in reader.tensors}
    total = sum(n * used / experts if experts and "_exps." in name else n for name, n in tensors.items())
    if "output.weight" in tensors:
        total -= tensors.get("token_embd.weight", 0)
    return int(total)


def decode_rate(engine, model, threads, repeats):
    """One engine's batch-1 decode tok/s, measured by bench_vs_llamacpp.py in its own child process."""
    child = subprocess.run([sys.executable, str(HERE / "bench_vs_llamacpp.py"), "--only", engine, "--model", model,
                            "--threads", str(threads), "--prompt-tokens", "16", "--repeats", str(repeats)],
                           check=True, capture_output=True, text=True)
    return json.loads(child.stdout.strip().splitlines()[-1])[1]


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M Q4_1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--llamacpp", action="store_true", help="also measure llama.cpp's decode")
    args = parser.parse_args()
    model = args.model or smollm2_path()

    per_token = weight_bytes_per_token(model)
    bandwidth = read_bandwidth(args.threads, args.repeats)
    bound = bandwidth / per_token
    engines = ["vllm_cpp"] + (["llamacpp"] if args.llamacpp else [])
    rates = {engine: decode_rate(engine, model, args.threads, args.repeats) for engine in engines}

    print(f"model: {os.path.basename(model)}; threads: {args.threads}; cpu: {platform.processor() or platform.machine()}")
    print(f"weights read per token: {per_token / 1e6:.1f} MB; read bandwidth: {bandwidth / 1e9:.1f} GB/s; "
          f"bound: {bound:.1f} tokens/s")
    print("| engine | batch-1 decode (tokens/s) | share of the bound |")
    print("|---|---|---|")
    for engine, rate in rates.items():
        print(f"| {engine} | {rate:.1f} | {rate / bound:.0%} |")


if __name__ == "__main__":
    main()
