"""The installed ``vllm-cpp`` command line: help, flag errors (one line,
exit status 2), generate, bench, serve (a request, then SIGTERM) and chat
driven through a pseudo-terminal."""

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from cli_harness import cli_path, start_server
from vllm_cpp import SamplingParams

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cli():
    return cli_path()


def run(cli, *args, timeout=240):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def test_help_reads_like_vllms(cli, tmp_path):
    top = run(cli, "--help")
    assert top.returncode == 0
    for command in ("serve", "generate", "chat", "bench"):
        assert command in top.stdout
    serve = run(cli, "serve", "--help")
    assert serve.returncode == 0 and serve.stdout.startswith("usage: vllm-cpp serve MODEL [options]")
    for flag in ("--host", "--port", "--api-key", "--served-model-name", "--max-model-len", "--max-num-seqs",
                 "--max-num-batched-tokens", "--block-size", "--num-blocks", "--enable-prefix-caching",
                 "--no-enable-prefix-caching", "--scheduling-policy", "--tool-call-parser", "--reasoning-parser",
                 "--speculative-config", "--kv-transfer-config", "--chat-template", "--enable-auto-tool-choice",
                 "--trust-request-chat-template", "--kv-cache-dtype", "--kv-cache-memory-bytes", "--num-threads",
                 "--isa", "--allowed-media-domains", "--allowed-local-media-path"):
        assert flag in serve.stdout, flag
    # The values a user types, not Python's enum or type names.
    for command in ("serve", "generate", "chat", "bench"):
        text = run(cli, command, "--help").stdout
        for python_text in ("Toggle.", "SchedulerPolicy.", "str or dict", "None:"):
            assert python_text not in text, (command, python_text)
        assert "smollm2" in text  # MODEL may be a bundled model's short name
    assert "fcfs (default), priority or lpm" in serve.stdout
    # From a neutral folder: from the checkout, -m would find its uncompiled vllm_cpp/ first.
    module = subprocess.run([sys.executable, "-m", "vllm_cpp", "--help"], capture_output=True, text=True,
                            cwd=str(tmp_path))
    assert module.returncode == 0 and module.stdout == top.stdout


@pytest.mark.parametrize("args,needle", [
    (("serve", "model.gguf", "--port", "abc"), "--port"),
    (("generate", "model.gguf", "hi", "--bogus"), "--bogus"),
    (("frobnicate",), "frobnicate"),
    (("bench", "model.gguf", "--concurrency", "1,x"), "--concurrency"),
    (("serve",), "MODEL"),
    (("serve", "model.gguf", "--media-fetch-timeout", "0"), "--media-fetch-timeout"),
    (("serve", "model.gguf", "--media-fetch-max-bytes", "0"), "--media-fetch-max-bytes"),
])
def test_bad_flags_one_line_exit_2(cli, args, needle):
    result = run(cli, *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and needle in lines[0], result.stderr


@pytest.mark.parametrize("args,needle", [
    (("--speculative-config", '{"method": "ngram"}'), "speculative_config"),
    (("--chat-template", "{% for m in messages %}"), "chat template"),
    (("--kv-cache-dtype", "fp8"), "fp8"),
    (("--scheduling-policy", "random"), "random"),
])
def test_options_the_engine_refuses(cli, smollm2_path, args, needle):
    result = run(cli, "generate", smollm2_path, "hi", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr


def test_chat_template_that_is_no_file_nor_template(cli, smollm2_path):
    result = run(cli, "generate", smollm2_path, "hi", "--chat-template", "missing-template.jinja")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "--chat-template" in lines[0] and "missing-template.jinja" in lines[0]


def test_missing_model_exits_1(cli, tmp_path):
    result = run(cli, "generate", str(tmp_path / "missing.gguf"), "hi")
    assert result.returncode == 1 and "missing.gguf" in result.stderr


def test_generate(cli, smollm2_path, engine):
    prompt = "The capital of France is"
    result = run(cli, "generate", smollm2_path, prompt, "--temperature", "0", "--max-tokens", "8",
                 "--max-model-len", "256")
    assert result.returncode == 0, result.stderr
    assert result.stdout == engine.complete(prompt, SamplingParams.greedy(max_tokens=8)).text + "\n"


def test_bench(cli, smollm2_path, tmp_path):
    """Progress on stderr as each level starts and ends; --json writes the
    rows with every request's time to first token."""
    out = tmp_path / "bench.json"
    result = run(cli, "bench", smollm2_path, "--concurrency", "1,2", "--input-len", "8", "--output-len", "4",
                 "--max-model-len", "128", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "| clients | output tok/s |" in result.stdout
    rows = [line for line in result.stdout.splitlines() if re.match(r"\| [12] \|", line)]
    assert len(rows) == 2
    progress = result.stderr.splitlines()
    assert progress[0] == "vllm-cpp bench: warming up"
    assert "vllm-cpp bench: level 1 of 2: 1 client, 4 output tokens each..." in progress
    assert any(line.startswith("vllm-cpp bench: level 2 done in ") for line in progress)
    document = json.loads(out.read_text())
    assert document["model"] == "SmolLM2-135M-Instruct.Q4_1" and document["command"].startswith("vllm-cpp bench")
    assert [len(row["ttft_s"]) for row in document["rows"]] == [1, 2]
    assert all(document[key] for key in ("date", "machine", "versions"))


def test_models_and_short_names(cli, smollm2_path, engine):
    """`vllm-cpp models` lists the bundled models; a short name stands for
    the file in every command."""
    listing = run(cli, "models")
    assert listing.returncode == 0 and "smollm2" in listing.stdout and smollm2_path in listing.stdout
    assert "gemma3-270m" in listing.stdout
    result = run(cli, "generate", "smollm2", "The capital of France is", "--temperature", "0", "--max-tokens", "4",
                 "--max-model-len", "256")
    assert result.returncode == 0, result.stderr
    assert result.stdout == engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4)).text + "\n"


@pytest.mark.parametrize("model,expected", [("smollm2", "smollm2"), (None, "SmolLM2-135M-Instruct.Q4_1")],
                         ids=["short-name", "path"])
def test_served_model_name_defaults_to_a_short_name(cli, smollm2_path, model, expected):
    server, url = start_server(cli, model or smollm2_path, served_name=None)
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=60) as response:
            assert [m["id"] for m in json.loads(response.read())["data"]] == [expected]
    finally:
        server.kill()
        server.wait()


def test_chat_without_a_template_warns_once(cli, gemma3_gguf, smollm2_path):
    """The bundled Gemma 3 base has no chat template: `vllm-cpp chat` says
    so once, naming the fallback and --chat-template; SmolLM2 does not."""
    plain = subprocess.run([cli, "chat", gemma3_gguf, "--max-model-len", "256"], input="", capture_output=True,
                           text=True, timeout=240)
    assert plain.returncode == 0, plain.stderr
    warnings = [line for line in plain.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "--chat-template" in warnings[0] and "'user: ...'" in warnings[0]
    templated = subprocess.run([cli, "chat", smollm2_path, "--max-model-len", "256"], input="",
                               capture_output=True, text=True, timeout=240)
    assert templated.returncode == 0 and "warning" not in templated.stderr


def test_serve_then_sigterm(cli, smollm2_path):
    server, url = start_server(cli, smollm2_path)
    try:
        body = json.dumps({"model": "smol", "prompt": "Hello", "max_tokens": 4, "temperature": 0}).encode()
        request = urllib.request.Request(url + "/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
        assert answer["model"] == "smol" and answer["usage"]["completion_tokens"] == 4
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        log = server.stderr.read()
        assert re.search(r'"POST /v1/completions" 200 prompt_tokens=\d+ completion_tokens=4 [0-9.]+s', log), log
        assert "shutting down (SIGTERM)" in log
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


MARKER_TEMPLATE = "{% for m in messages %}<<{{ m.content }}>>{% endfor %}"


@pytest.mark.parametrize("template", [None, MARKER_TEMPLATE], ids=["model-template", "chat-template-file"])
def test_chat_in_a_terminal(cli, smollm2_path, tmp_path, template):
    pexpect = pytest.importorskip("pexpect")
    flags = []
    if template is not None:
        (tmp_path / "t.jinja").write_text(template)
        flags = ["--chat-template", str(tmp_path / "t.jinja")]
    child = pexpect.spawn(cli, ["chat", smollm2_path, "--temperature", "0", "--max-tokens", "8",
                                "--max-model-len", "256", *flags], encoding="utf-8", timeout=120)
    try:
        child.expect("Chatting with")
        child.expect_exact(">>> ")
        child.sendline("Hi")
        child.expect_exact(">>> ")
        if template is None:
            reply = child.before.replace("\r", "").split("\n", 1)[1].strip()  # after the echoed input
            assert reply, child.before
        child.sendline("And who are you?")
        child.expect_exact(">>> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_chat_template_end_to_end(cli, smollm2_path, engine, tmp_path):
    """--chat-template FILE: serve renders with it (/tokenize, /v1/chat/completions),
    generate accepts it (chat: test_chat_in_a_terminal)."""
    template = tmp_path / "marker.jinja"
    template.write_text(MARKER_TEMPLATE)
    expected = engine.tokenize("<<Hi>>", add_special_tokens=False)
    server, url = start_server(cli, smollm2_path, "--chat-template", str(template))
    try:
        def post(route, body):
            request = urllib.request.Request(url + route, data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        messages = [{"role": "user", "content": "Hi"}]
        assert post("/tokenize", {"model": "smol", "messages": messages}) == \
            (200, {"count": len(expected), "max_model_len": 256, "tokens": expected})
        status, answer = post("/v1/chat/completions", {"model": "smol", "messages": messages, "max_tokens": 2})
        assert status == 200 and answer["usage"]["prompt_tokens"] == len(expected)
        status, answer = post("/v1/chat/completions", {"model": "smol", "messages": messages,
                                                       "chat_template": MARKER_TEMPLATE})
        assert status == 400 and "--trust-request-chat-template" in answer["error"]["message"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    result = run(cli, "generate", smollm2_path, "Hi", "--temperature", "0", "--max-tokens", "2",
                 "--max-model-len", "128", "--chat-template", str(template))
    assert result.returncode == 0, result.stderr
