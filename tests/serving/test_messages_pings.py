"""Periodic ``ping`` events on Messages streams (Anthropic's streams carry
them as keep-alives): besides the one after ``message_start``, a stream
sends a ping whenever it has been idle for ``--messages-ping-interval``
seconds. A server with a tiny interval makes every stream a slow one: the
raw stream carries pings between its events (never inside one, and none
after ``message_stop``), the ``anthropic`` SDK skips them and rebuilds the
same message as the blocking call, a client leaving a stream between
pings cancels its request, and a bad interval is refused by the CLI."""

import json
import subprocess

import pytest

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install anthropic)")
httpx = pytest.importorskip("httpx")

from cli_harness import cli_path  # noqa: E402
from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 512
#: Shorter than any engine step here: every gap between events gets a ping.
PING_INTERVAL_S = 0.001
ASK = [{"role": "user", "content": "Tell me about Paris."}]
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def server(smollm2_path):
    """(engine, base URL) of a server pinging idle Messages streams every millisecond."""
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN) as engine:
        with running_server(engine, max_model_len=MAX_MODEL_LEN, messages_ping_interval_s=PING_INTERVAL_S) as url:
            yield engine, url


@pytest.fixture(scope="module")
def base_url(server):
    return server[1]


def raw_events(http, **body):
    """The stream's (event name, data) pairs, as sent."""
    request = {"model": MODEL_NAME, "messages": ASK, "stream": True, "temperature": 0, **body}
    events, name = [], None
    with http.stream("POST", "/v1/messages", json=request, headers={"anthropic-version": "2023-06-01"}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: "):])))
    return events


def test_an_idle_stream_pings_periodically(http):
    events = raw_events(http, max_tokens=40)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[1] == "ping" and names[-1] == "message_stop"
    assert names.count("ping") > 2, names  # more than the one after message_start
    assert all(data == {"type": "ping"} for name, data in events if name == "ping")
    # Pings stand between events: the content blocks open, carry their deltas and close in order.
    content = [name for name in names if name != "ping"]
    assert content[1] == "content_block_start" and content[-3:] == ["content_block_stop", "message_delta",
                                                                     "message_stop"]


def test_the_sdk_skips_the_pings(base_url):
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)
    blocking = client.messages.create(model=MODEL_NAME, max_tokens=40, messages=ASK, extra_body=GREEDY)
    with client.messages.stream(model=MODEL_NAME, max_tokens=40, messages=ASK, extra_body=GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert "ping" not in {event.type for event in events}
    assert isinstance(final, anthropic.types.Message)
    assert final.content[0].text == blocking.content[0].text and final.stop_reason == blocking.stop_reason
    assert final.usage.output_tokens == blocking.usage.output_tokens


def test_leaving_between_pings_cancels_the_request(server, http):
    engine, _ = server
    body = {"model": MODEL_NAME, "messages": ASK, "stream": True, "max_tokens": 400, "temperature": 1.0}
    with http.stream("POST", "/v1/messages", json=body) as response:
        pings = 0
        for line in response.iter_lines():
            pings += line == "event: ping"
            if pings >= 3:
                break
    stats = wait_until_idle(engine)
    assert stats["running_requests"] == 0 and stats["waiting_requests"] == 0
    # The server answers the next request.
    assert raw_events(http, max_tokens=4)[-1][0] == "message_stop"


@pytest.mark.parametrize("value", ["0", "-1", "inf"])
def test_a_bad_interval_is_refused(smollm2_path, value):
    done = subprocess.run([cli_path(), "serve", smollm2_path, "--messages-ping-interval", value],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--messages-ping-interval" in done.stderr, done.stderr
