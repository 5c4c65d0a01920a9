"""vllm-cpp vs llama.cpp on every common GGUF file type, in one table.

Each type is made from the bundled SmolLM2 Q4_1 GGUF by llama.cpp's own
quantizer (llama-cpp-python's ``llama_model_quantize``, requantizing;
tests/support/llama_quantize.py caches the files), then bench_vs_llamacpp.py
measures each engine on it in a fresh child process (prompt processing of
a 512-token prompt, batch-1 greedy decode of 128 tokens, best of
--repeats), the two engines alternating file by file so that a noisy
minute hurts both. The ratio is vllm-cpp / llama.cpp: higher is better for
vllm-cpp.

Usage:
    python bench/bench_formats.py [--types Q4_1,Q4_0,Q8_0,Q6_K,Q4_K_M,Q5_K_M,BF16,F16]
                                  [--threads N] [--repeats N]
                                  [--isa avx2] [--peer-python PATH]

--isa runs vllm-cpp's kernels for a lower instruction set (VLLM_CPP_ISA);
pair it with --peer-python, a Python whose llama-cpp-python was built for
that instruction set only (e.g. CMAKE_ARGS="-DGGML_NATIVE=OFF
-DGGML_AVX2=ON -DGGML_AVX512=OFF" in its own virtual environment), so both
engines run the same ISA. Needs llama-cpp-python in this Python too (it
makes the files). BENCHMARKS.md records runs.
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
from llama_quantize import quantized  # noqa: E402

DEFAULT_TYPES = "Q4_1,Q4_0,Q8_0,Q6_K,Q4_K_M,Q5_K_M,BF16,F16"
SOURCE_TYPE = "Q4_1"  # the bundled file itself: no requantizing


def measure(python, engine, model, args, env=None):
    """bench_vs_llamacpp.py's measurement of one engine on one file, in a
    child process: (prompt tokens/s, decode tokens/s)."""
    child = subprocess.run([python, str(HERE / "bench_vs_llamacpp.py"), "--only", engine, "--model", str(model),
                            "--threads", str(args.threads), "--repeats", str(args.repeats)],
                           check=True, capture_output=True, text=True, env=env)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main():
    from vllm_cpp.models import smollm2_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", default=DEFAULT_TYPES, help="comma-separated llama.cpp file types")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--isa", default=None, help="VLLM_CPP_ISA for vllm-cpp (avx2, avx512, scalar, ...)")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the Python whose llama-cpp-python runs the peer (default: this one)")
    args = parser.parse_args()

    source = smollm2_path()
    ours_env = dict(os.environ, **({"VLLM_CPP_ISA": args.isa} if args.isa else {}))
    rows = []
    for ftype in args.types.split(","):
        model = source if ftype == SOURCE_TYPE else quantized(source, ftype)
        l_pp, l_tg = measure(args.peer_python, "llamacpp", model, args)
        v_pp, v_tg = measure(sys.executable, "vllm_cpp", model, args, ours_env)
        rows.append((ftype, v_pp, l_pp, v_tg, l_tg))
        print(f"{ftype}: prefill {v_pp:.1f} vs {l_pp:.1f}, decode {v_tg:.1f} vs {l_tg:.1f}", file=sys.stderr)

    print(f"SmolLM2-135M from {pathlib.Path(source).name}; threads: {args.threads}; vllm-cpp ISA: "
          f"{args.isa or 'best'}; peer: {args.peer_python}; cpu: {platform.processor() or platform.machine()}")
    print("| file type | prefill 512 tok/s (vllm-cpp / llama.cpp) | ratio | decode tok/s (vllm-cpp / llama.cpp) "
          "| ratio |")
    print("|---|---|---|---|---|")
    for ftype, v_pp, l_pp, v_tg, l_tg in rows:
        print(f"| {ftype} | {v_pp:.1f} / {l_pp:.1f} | {v_pp / l_pp:.2f} | {v_tg:.1f} / {l_tg:.1f} | "
              f"{v_tg / l_tg:.2f} |")


if __name__ == "__main__":
    main()
