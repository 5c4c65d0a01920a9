"""A server process killed (SIGKILL) mid-stream: its clients get an error,
not a hang or a silently truncated answer that looks finished, and a
restarted server serves again."""

import json
import signal

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from cli_harness import cli_path, start_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def stream_body(max_tokens):
    return {"model": "smol", "prompt": "Once upon a time", "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "stream": True}


def test_sigkill_mid_stream_then_restart(smollm2_path):
    cli = cli_path()
    server, url = start_server(cli, smollm2_path)
    events, failures = [], []
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            try:
                with client.stream("POST", "/v1/completions", json=stream_body(200)) as response:
                    assert response.status_code == 200
                    for line in response.iter_lines():
                        if line.startswith("data: "):
                            events.append(line[6:])
                        if len(events) == 3:
                            server.send_signal(signal.SIGKILL)
                            server.wait(timeout=30)
            except httpx.HTTPError as exc:  # the connection went away mid-response
                failures.append(exc)
            # A new connection is refused while nothing listens.
            with pytest.raises(httpx.HTTPError):
                client.post("/v1/completions", json={"model": "smol", "prompt": "Hi", "max_tokens": 1})
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
    assert server.returncode == -signal.SIGKILL
    # The stream never ended the way a finished one does.
    assert failures or "[DONE]" not in events, events
    assert "[DONE]" not in events and len(events) >= 3
    assert all(json.loads(e)["choices"][0]["finish_reason"] is None for e in events), events

    restarted, url = start_server(cli, smollm2_path)
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            with client.stream("POST", "/v1/completions", json=stream_body(8)) as response:
                lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        assert lines[-1] == "data: [DONE]"
        assert json.loads(lines[-2][6:])["choices"][0]["finish_reason"] == "length"
    finally:
        restarted.kill()
        restarted.wait()
