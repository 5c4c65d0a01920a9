"""Schemathesis against ``/openapi.json``: requests generated from the
document (fitting it, and for the routes with a body, breaking it) to a
``vllm-cpp serve`` process with cheap bounds (``--max-tokens-limit 4``,
``--max-n 2``, a 256-token model length). No answer is a server error
(other than a 503 at the in-flight bound), the process is alive after them,
its log has no traceback, and the next good request is answered.

The number of requests per route is fixed (``EXAMPLES``) and each route's
generation is derandomized, so a run sends the same requests each time;
RELIABILITY.md records the counts."""

import collections

import pytest

httpx = pytest.importorskip("httpx")
schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402

from cli_harness import cli_path, start_server  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: Generated requests per route and mode: bodies get both modes.
EXAMPLES = {GenerationMode.POSITIVE: 100, GenerationMode.NEGATIVE: 100}
EXAMPLES_WITHOUT_BODY = 5


@pytest.fixture(scope="module")
def server(smollm2_path, tmp_path_factory):
    log_path = tmp_path_factory.mktemp("schemathesis") / "server.log"
    with open(log_path, "w") as log:
        process, url = start_server(cli_path(), smollm2_path, "--max-tokens-limit", "4", "--max-n", "2",
                                    "--max-stop-strings", "4", "--max-tools", "4", "--trust-request-chat-template",
                                    "--enable-auto-tool-choice", "--tool-call-parser", "hermes", log=log)
    try:
        yield process, url, log_path
    finally:
        process.terminate()
        process.wait(timeout=60)


def _is_server_error(response):
    if response.status_code < 500:
        return False
    overloaded = response.status_code == 503 and b"server_overloaded" in response.content
    return not overloaded


def test_generated_requests_find_no_server_error(server):
    process, url, log_path = server
    api = schemathesis.openapi.from_dict(httpx.get(url + "/openapi.json", timeout=60).json())
    sent = collections.Counter()
    statuses = collections.Counter()  # (route, mode, status): printed, to see what the run reached
    errors = []
    for result in api.get_all_operations():
        operation = result.ok()
        has_body = bool(operation.body)
        for mode, examples in EXAMPLES.items():
            if mode is GenerationMode.NEGATIVE and not has_body:
                continue  # nothing to break in a request without a body or parameters that take any string

            @settings(max_examples=examples if has_body else EXAMPLES_WITHOUT_BODY, deadline=None, database=None,
                      derandomize=True, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode))
            def send(case):
                response = case.call(base_url=url, timeout=120)
                sent[operation.label] += 1
                statuses[operation.label, mode.value, response.status_code] += 1
                if _is_server_error(response):
                    errors.append((operation.label, case.body, response.status_code, response.text[:500]))

            send()
    print("\nrequests sent per route:", dict(sorted(sent.items())))
    print("answers per route, mode and status:", dict(sorted(statuses.items())))
    assert not errors, errors[:5]
    assert process.poll() is None, "the server died"
    good = httpx.post(url + "/v1/completions", json={"model": "smol", "prompt": "Hello", "max_tokens": 2},
                      timeout=60)
    assert good.status_code == 200 and good.json()["usage"]["completion_tokens"] == 2
    log = open(log_path).read()
    assert "Traceback" not in log, log[-5000:]
    # Every documented operation was exercised.
    assert len(sent) == sum(len(ops) for ops in api.raw_schema["paths"].values())
