"""vllm-cpp against llama.cpp on a MoE file: prefill of 512 fixed ids and batch-1 decode only.

bench_sizes.py's full table (clients, bandwidth, memory) takes many minutes per
round on the Qwen3-30B-A3B-shaped file; this runs just its two speed figures
(bench_vs_llamacpp.py's measurements), each engine in a child process, the
engines alternating for ROUNDS rounds, and prints every round (with the load
average) and each engine's best and range. ENGINES is a comma list of
llamacpp, vllm_cpp, or any other name whose child runs with the Python in
the environment variable PY_<NAME> (another build's venv: a before/after).

Usage:  python bench/bench_moe.py [ROUNDS] [ENGINES]   (DEC, REP: decode tokens, repeats)
        MODEL defaults to make_sized_ggufs.py's qwen3-30b-a3b-L12-random-q4_k_m.gguf
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sized_ggufs import default_dir  # noqa: E402

MODEL = os.environ.get("MODEL") or os.path.join(default_dir(), "qwen3-30b-a3b-L12-random-q4_k_m.gguf")


def child(engine, decode_tokens, repeats):
    from bench_sizes import fixed_ids
    from bench_vs_llamacpp import bench_llamacpp, bench_vllm_cpp

    prompt, short = fixed_ids(0, 512), fixed_ids(-1, 4)
    if engine == "llamacpp":
        pp, tg = bench_llamacpp(MODEL, 2, prompt, short, repeats, decode_tokens)
    else:  # vllm_cpp, or another build of it (PY_<NAME>)
        t, tg = bench_vllm_cpp(MODEL, 2, prompt, short, repeats, decode_tokens)
        pp = len(prompt) / t
    return {"pp": pp, "tg": tg}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--only":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    engines = (sys.argv[2] if len(sys.argv) > 2 else "vllm_cpp,llamacpp").split(",")
    dec, rep = int(os.environ.get("DEC", "32")), int(os.environ.get("REP", "2"))
    res = {e: [] for e in engines}
    for r in range(rounds):
        for e in (engines if r % 2 == 0 else engines[::-1]):
            python = os.environ.get("PY_" + e.upper(), sys.executable)
            out = subprocess.run([python, os.path.abspath(__file__), "--only", e, str(dec), str(rep)],
                                 capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"bench_moe: {e} failed:\n{out.stderr[-2000:]}")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            res[e].append(got)
            print(f"round {r + 1} {e}: prefill {got['pp']:.1f} tok/s, decode {got['tg']:.2f} tok/s "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    for e in engines:
        pps, tgs = [g["pp"] for g in res[e]], [g["tg"] for g in res[e]]
        print(f"{e}: prefill best {max(pps):.1f} ({min(pps):.1f}-{max(pps):.1f}); "
              f"decode best {max(tgs):.2f} ({min(tgs):.2f}-{max(tgs):.2f})")


if __name__ == "__main__":
    main()
