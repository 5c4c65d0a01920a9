"""Chat-template rendering time per request: the engine vs jinja2, per fixture template.

    python bench/bench_chat_template.py            # --repeats N, --templates DIR

The engine side is the render_chat_template test program (built with
tests/support/native_build.py) timing REPEATS renders of an already parsed template;
the jinja2 side times REPEATS renders of an already compiled template in the
environment transformers uses (tests/support/chat_reference.py). Both render the same
conversation: system, user, assistant, user, plus a weather tool for the
templates that take tools, with the generation prompt on.
"""

import argparse
import glob
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import chat_reference  # noqa: E402
from native_build import build_native_tests  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "What is the weather in Paris?"},
]
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                   "required": ["city"]}}}
TOOL_TEMPLATES = ("qwen", "llama-3", "mistral", "hermes")


def case_for(template):
    tools = [TOOL] if any(name in pathlib.Path(template).stem for name in TOOL_TEMPLATES) else None
    messages = MESSAGES[1:] if "gemma" in template else MESSAGES  # Gemma refuses a system role
    return dict(template=template, bos="<s>", eos="</s>", messages=messages, tools=tools,
                add_generation_prompt=True, kwargs=None)


def jinja2_us_per_render(case, repeats):
    source = pathlib.Path(case["template"]).read_text(encoding="utf-8")
    compiled = chat_reference.compile_template(source)
    context = dict(messages=case["messages"], tools=case["tools"], add_generation_prompt=True,
                   bos_token=case["bos"], eos_token=case["eos"])
    compiled.render(**context)
    start = time.perf_counter()
    for _ in range(repeats):
        compiled.render(**context)
    return (time.perf_counter() - start) / repeats * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2000)
    # The fixtures live beside the repository, at ../shared.
    root = pathlib.Path(__file__).resolve().parent.parent
    parser.add_argument("--templates", default=str(root.parent / "shared" / "fixtures" / "chat_templates"))
    args = parser.parse_args()

    templates = sorted(glob.glob(str(pathlib.Path(args.templates) / "*.jinja")))
    cases = [case_for(t) for t in templates]
    build = build_native_tests()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case) + "\n")
    result = subprocess.run([str(build / "render_chat_template"), f.name, str(args.repeats)],
                            capture_output=True, check=True)
    pathlib.Path(f.name).unlink()
    engine = [json.loads(line) for line in result.stdout.decode().splitlines()]

    print("| template | vllm-cpp (µs) | jinja2 (µs) | ratio |")
    print("|---|---|---|---|")
    for template, case, got in zip(templates, cases, engine):
        if not got["ok"]:
            print(f"| {pathlib.Path(template).stem} | error: {got['error']} | | |")
            continue
        ours = got["us_per_render"]
        theirs = jinja2_us_per_render(case, args.repeats)
        print(f"| {pathlib.Path(template).stem} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.1f} |")


if __name__ == "__main__":
    main()
