"""Multi-LoRA serving throughput, in one run: output tokens/s for 8
concurrent requests on the base model alone, spread over 4 rank-16 LoRA
adapters (2 requests each), and all on one adapter; and llama.cpp
(llama-cpp-python) on the same GGUF, alone and with one of those adapters
converted by llama.cpp's own ``convert_lora_to_gguf.py``, its 8 requests
decoded together as 8 sequences of one batch (llama.cpp applies one adapter
set per context, so it cannot mix adapters in a batch).

    python bench/bench_lora.py [--model GGUF] [--rounds 3] [--max-tokens 64] [--json PATH]
                               [--ref-python PATH]

The base defaults to the bundled SmolLM2-135M GGUF (a llama-architecture
file). The adapters are made once by ``--ref-python`` (a Python with torch,
transformers and peft, and llama-cpp-python whose sdist carries llama.cpp's
converter, or $LLAMA_CPP_DIR): the base's shape read from the GGUF, PEFT's
``get_peft_model`` with r 16, alpha 32 on q/k/v/o and gate/up/down, every A
and B seeded random (PEFT's init leaves B zero), saved as PEFT directories
under ~/.cache/vllm-cpp-bench/lora/ (reused by later runs). Each engine runs
in a child process (llama.cpp's with ``--ref-python``), the engines
alternating for ``--rounds`` rounds (vllm-cpp's three modes alternate their
order too); a measurement is the wall time from submitting the 8 requests
(greedy, ``--max-tokens`` each, EOS ignored) to the last one's end, prefill
included; and by the process's CPU time over the same run ("cpu" rows:
tokens per CPU second, the steadier figure on a machine whose cores other
work shares; with --threads 1 it is the engine's own cost). The table has
each mode's median and range; the target is multi-adapter >= 80% of the
base model's throughput.
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "vllm-cpp-bench" / "lora"
PROMPTS = ["The history of the lighthouse keepers on the northern coast",
           "Write a short recipe for bread with seeds and honey",
           "Explain how a steam engine turns coal into motion",
           "List three facts about the moons of Jupiter and Saturn",
           "A letter from a gardener to her sister about the orchard",
           "Describe the rules of chess for a child who likes puzzles",
           "Why do rivers bend, and what makes an oxbow lake form",
           "The first chapter of a mystery set in a mountain railway station"]
MODES_VLLM = ("base", "4 adapters", "1 adapter")
MODES_LLAMA = ("base", "1 adapter")


def adapter_dir(model, rank, n):
    return CACHE / f"{pathlib.Path(model).stem}-r{rank}x{n}"


# -- the adapters (run by the reference Python) --------------------------------

def make_adapters(model, rank, n, out):
    """PEFT adapters adapter0..adapter{n-1} for the llama-architecture GGUF
    ``model``, a config-only base directory for the converter, and
    adapter0.gguf by llama.cpp's convert_lora_to_gguf.py."""
    import gguf
    import peft
    import torch
    import transformers
    from safetensors.torch import save_file

    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    from llama_cpp_vocabs import llama_cpp_tree

    reader = gguf.GGUFReader(model)

    def field(key, default=None):
        f = reader.fields.get(key)
        return default if f is None else f.contents()

    arch = field("general.architecture")
    if arch != "llama":
        raise SystemExit(f"bench_lora: the adapters are made for llama-architecture GGUFs (got {arch!r})")
    config = transformers.LlamaConfig(
        hidden_size=field("llama.embedding_length"), intermediate_size=field("llama.feed_forward_length"),
        num_hidden_layers=field("llama.block_count"), num_attention_heads=field("llama.attention.head_count"),
        num_key_value_heads=field("llama.attention.head_count_kv"),
        rms_norm_eps=field("llama.attention.layer_norm_rms_epsilon"), rope_theta=field("llama.rope.freq_base", 10000.0),
        vocab_size=len(field("tokenizer.ggml.tokens")), max_position_embeddings=field("llama.context_length"),
        tie_word_embeddings=not any(t.name == "output.weight" for t in reader.tensors),
        architectures=["LlamaForCausalLM"])
    base = out / "base.hf"
    base.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(base)  # the converter reads the base's config only
    with torch.device("meta"):  # shapes only: the adapters' values are written from `state`
        skeleton = transformers.LlamaForCausalLM(config)
    lora = peft.LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, bias="none",
                           target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    wrapped = peft.get_peft_model(skeleton, lora)
    shapes = {name.replace(".default", ""): p.shape for name, p in wrapped.named_parameters() if "lora_" in name}
    for i in range(n):
        target = out / f"adapter{i}"
        target.mkdir(parents=True, exist_ok=True)
        g = torch.Generator().manual_seed(100 + i)
        state = {name: (torch.randn(shape, generator=g) / shape[1] ** 0.5).to(torch.float16)
                 for name, shape in shapes.items()}
        save_file(state, str(target / "adapter_model.safetensors"))
        wrapped.peft_config["default"].save_pretrained(str(target))
    tree = llama_cpp_tree()
    if tree is None:
        raise SystemExit("bench_lora: llama.cpp's sources not found (set LLAMA_CPP_DIR)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "gguf-py"), str(tree)]))
    subprocess.run([sys.executable, str(tree / "convert_lora_to_gguf.py"), str(out / "adapter0"), "--base", str(base),
                    "--outfile", str(out / "adapter0.gguf"), "--outtype", "f16"], env=env, check=True,
                   stdout=subprocess.DEVNULL)


# -- the engines (each in its own child) ---------------------------------------

def measure_vllm_cpp(args, adapters, order):
    os.environ["VLLM_CPP_NUM_THREADS"] = str(args.threads)
    from vllm_cpp import Engine, LoRARequest, RequestOutcome, SamplingParams, Toggle

    loras = [LoRARequest(f"a{i}", i + 1, str(p)) for i, p in enumerate(adapters)]
    engine = Engine.load(args.model, enable_lora=True, max_loras=len(loras), max_lora_rank=args.rank,
                         max_num_seqs=len(PROMPTS), max_model_len=256, prefix_caching=Toggle.OFF)
    params = SamplingParams.greedy(max_tokens=args.max_tokens, ignore_eos=True)
    plans = {"base": [None] * len(PROMPTS), "4 adapters": [loras[i % len(loras)] for i in range(len(PROMPTS))],
             "1 adapter": [loras[0]] * len(PROMPTS)}

    def run(plan):
        start, cpu = time.perf_counter(), time.process_time()
        requests = [engine.submit(p, params, lambda *event: None, lora_request=lora) for p, lora in zip(PROMPTS, plan)]
        ids = []
        for r in requests:
            assert r.wait() is RequestOutcome.COMPLETED
            ids.append(r.token_ids(0, args.max_tokens))
            r.close()
        return time.perf_counter() - start, time.process_time() - cpu, ids

    run(plans["4 adapters"])  # warm-up: every adapter resident
    out, first_ids = {}, {}
    for mode in order:
        wall, cpu, ids = run(plans[mode])
        out[mode] = len(PROMPTS) * args.max_tokens / wall
        out["cpu " + mode] = len(PROMPTS) * args.max_tokens / cpu
        first_ids[mode] = ids[1]
    engine.close()
    # Sanity: request 1 runs adapter a2 in "4 adapters" and a1 in "1 adapter": both differ from the base.
    out["adapters change the output"] = first_ids["4 adapters"] != first_ids["base"] != first_ids["1 adapter"]
    return out


def measure_llamacpp(args, lora_gguf, order):
    import ctypes

    import llama_cpp as lc
    import numpy as np

    llm = lc.Llama(model_path=args.model, n_ctx=64, n_threads=args.threads, verbose=False)
    model = llm._model.model
    n_vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model))
    prompts = [llm.tokenize(p.encode(), add_bos=True, special=False) for p in PROMPTS]
    n_seq = len(prompts)
    params = lc.llama_context_default_params()
    params.n_ctx = n_seq * 256
    params.n_batch = params.n_ubatch = 512
    params.n_seq_max = n_seq
    params.n_threads = params.n_threads_batch = args.threads
    adapter = lc.llama_adapter_lora_init(model, str(lora_gguf).encode())
    if not adapter:
        raise SystemExit(f"llama.cpp could not load {lora_gguf}")
    contexts = {mode: lc.llama_init_from_model(model, params) for mode in MODES_LLAMA}
    one = (lc.llama_adapter_lora_p_ctypes * 1)(adapter)
    if lc.llama_set_adapters_lora(contexts["1 adapter"], one, 1, (ctypes.c_float * 1)(1.0)):
        raise SystemExit("llama.cpp could not set the adapter")
    batch = lc.llama_batch_init(512, 0, n_seq)

    def decode(ctx, entries, wanted):  # entries: (token, position, sequence); logits of the rows in `wanted`
        batch.n_tokens = len(entries)
        for i, (token, pos, seq) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, int(i in wanted)
            batch.seq_id[i][0] = seq
        if lc.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def argmax(ctx, row):
        return int(np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, row), shape=(n_vocab,)).argmax())

    def run(ctx):
        start, cpu = time.perf_counter(), time.process_time()
        lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        entries, last = [], []
        for s, p in enumerate(prompts):
            entries += [(t, j, s) for j, t in enumerate(p)]
            last.append(len(entries) - 1)
        decode(ctx, entries, set(last))
        nxt = [argmax(ctx, row) for row in last]
        generated = [[t] for t in nxt]
        for step in range(1, args.max_tokens):
            decode(ctx, [(nxt[s], len(prompts[s]) + step - 1, s) for s in range(n_seq)], set(range(n_seq)))
            nxt = [argmax(ctx, s) for s in range(n_seq)]
            for s in range(n_seq):
                generated[s].append(nxt[s])
        return time.perf_counter() - start, time.process_time() - cpu, generated

    for mode in MODES_LLAMA:
        run(contexts[mode])  # warm-up
    out, ids = {}, {}
    for mode in order:
        wall, cpu, ids[mode] = run(contexts[mode])
        out[mode] = n_seq * args.max_tokens / wall
        out["cpu " + mode] = n_seq * args.max_tokens / cpu
    out["adapters change the output"] = ids["base"] != ids["1 adapter"]
    lc.llama_batch_free(batch)
    for ctx in contexts.values():
        lc.llama_free(ctx)
    lc.llama_adapter_lora_free(adapter)
    return out


def child(args, python, engine, order):
    command = [python, __file__, "--only", engine, "--model", args.model, "--threads", str(args.threads),
               "--max-tokens", str(args.max_tokens), "--rank", str(args.rank), "--adapters", str(args.adapters),
               "--order", ",".join(order)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_lora: the {engine} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="llama-architecture GGUF (default: the bundled SmolLM2-135M)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--adapters", type=int, default=4)
    parser.add_argument("--ref-python", default=os.environ.get("REF_PYTHON"),
                        help="Python with torch, transformers, peft and llama-cpp-python ($REF_PYTHON)")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--only", choices=["vllm_cpp", "llamacpp", "adapters"], help=argparse.SUPPRESS)
    parser.add_argument("--order", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model is None:
        from vllm_cpp.models import smollm2_path

        args.model = str(smollm2_path())
    cache = adapter_dir(args.model, args.rank, args.adapters)
    peft_dirs = [cache / f"adapter{i}" for i in range(args.adapters)]
    if args.only == "adapters":
        make_adapters(args.model, args.rank, args.adapters, cache)
        return
    if args.only:
        order = args.order.split(",")
        got = (measure_vllm_cpp(args, peft_dirs, order) if args.only == "vllm_cpp"
               else measure_llamacpp(args, cache / "adapter0.gguf", order))
        print(json.dumps(got))
        return

    if not (cache / "adapter0.gguf").is_file():
        if not args.ref_python:
            raise SystemExit("bench_lora: no adapters in %s yet: give --ref-python (torch, transformers, peft, "
                             "llama-cpp-python) to make them" % cache)
        subprocess.run([args.ref_python, __file__, "--only", "adapters", "--model", args.model, "--rank",
                        str(args.rank), "--adapters", str(args.adapters)], check=True)
    results = {f"{label} {clock}{m}": [] for label, modes in (("vllm-cpp", MODES_VLLM), ("llama.cpp", MODES_LLAMA))
               for clock in ("", "cpu ") for m in modes}
    checks, round_ratios, cpu_ratios = {}, [], []
    for r in range(args.rounds):
        engines = ["vllm_cpp", "llamacpp"] if r % 2 == 0 else ["llamacpp", "vllm_cpp"]
        for engine in engines:
            modes = MODES_VLLM if engine == "vllm_cpp" else MODES_LLAMA
            order = list(modes) if r % 2 == 0 else list(modes)[::-1]
            python = sys.executable if engine == "vllm_cpp" else (args.ref_python or sys.executable)
            got = child(args, python, engine, order)
            label = "vllm-cpp" if engine == "vllm_cpp" else "llama.cpp"
            checks[label] = got.pop("adapters change the output")
            if engine == "vllm_cpp":  # the same child's modes, back to back: the steadiest ratio on a busy machine
                round_ratios.append(round(got["4 adapters"] / got["base"], 3))
                cpu_ratios.append(round(got["cpu 4 adapters"] / got["cpu base"], 3))
            for mode, value in got.items():
                results[f"{label} {mode}"].append(round(value, 1))
            print(f"round {r + 1} {label}: " + ", ".join(f"{m} {v:.1f}" for m, v in got.items()) +
                  f" tokens/s (load average {os.getloadavg()[0]:.1f})", flush=True)
    medians = {k: statistics.median(v) for k, v in results.items()}
    ratio = medians["vllm-cpp 4 adapters"] / medians["vllm-cpp base"]
    print(f"\nmodel: {pathlib.Path(args.model).name}; {len(PROMPTS)} concurrent requests x {args.max_tokens} tokens; "
          f"{args.adapters} adapters of rank {args.rank}; threads: {args.threads}; "
          f"cpu: {platform.processor() or platform.machine()}")
    print("| engine, requests | output tokens/s (median) | range | vs the same engine's base |")
    print("|---|---|---|---|")
    for key, values in results.items():
        base = medians[key.split(" ")[0] + (" cpu" if " cpu " in key else "") + " base"]
        print(f"| {key} | {medians[key]:.1f} | {min(values):.1f}-{max(values):.1f} | {medians[key] / base:.2f} |")
    print(f"\nmulti-adapter / base (vllm-cpp): {ratio:.2f} of the medians, {statistics.median(round_ratios):.2f} "
          f"the median of the rounds' own ratios {round_ratios}; by CPU time {statistics.median(cpu_ratios):.2f} "
          f"{cpu_ratios} (target >= 0.80); "
          f"vllm-cpp 1 adapter / llama.cpp 1 adapter: "
          f"{medians['vllm-cpp 1 adapter'] / medians['llama.cpp 1 adapter']:.2f}; adapters change the output: {checks}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({
            "bench": "bench/bench_lora.py", "model": pathlib.Path(args.model).name, "requests": len(PROMPTS),
            "max_tokens": args.max_tokens, "adapters": args.adapters, "rank": args.rank, "threads": args.threads,
            "rounds": args.rounds, "cpu": platform.processor() or platform.machine(),
            "output_tokens_per_s": results, "median": medians, "multi_adapter_over_base": round(ratio, 3),
            "multi_adapter_over_base_per_round": round_ratios, "multi_adapter_over_base_cpu_per_round": cpu_ratios,
            "adapters_change_the_output": checks}, indent=2) + "\n")


if __name__ == "__main__":
    main()
