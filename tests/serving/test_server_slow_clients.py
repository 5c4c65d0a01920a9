"""Clients that hold connections without finishing their requests: hundreds
of raw sockets that send headers and one byte of an announced large body,
or only part of their headers, or nothing, are answered 408 and closed
after the server's (short, test-set) timeouts while a good request is
served; a client that leaves mid-body is logged as one line, with no
traceback; past the per-client bound a connection is answered 429.

``vllm-cpp serve`` runs as a process of its own, its log in a file."""

import json
import resource
import selectors
import socket
import time
import urllib.parse

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from cli_harness import cli_path, start_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

HEADER_TIMEOUT, BODY_TIMEOUT = 2, 3
BODY_STALLED, HEADERS_PARTIAL, SILENT = 300, 50, 20
GOOD = {"model": "smol", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}


def _raise_fd_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip("the file descriptor limit (%d) is under the %d this test opens" % (hard, needed))
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@pytest.fixture(scope="module")
def server(smollm2_path, tmp_path_factory):
    """(base URL, log path) of a server with short timeouts and a per-client
    bound above what the slow-client test opens."""
    _raise_fd_limit(4 * (BODY_STALLED + HEADERS_PARTIAL + SILENT))  # the server inherits it
    log_path = tmp_path_factory.mktemp("slow_clients") / "server.log"
    with open(log_path, "w") as log:
        process, url = start_server(cli_path(), smollm2_path, "--request-header-timeout", str(HEADER_TIMEOUT),
                                    "--request-body-timeout", str(BODY_TIMEOUT),
                                    "--max-connections-per-client", "1000", log=log)
    try:
        yield url, log_path
    finally:
        process.terminate()
        process.wait(timeout=60)


def _connect(url, first_bytes):
    parsed = urllib.parse.urlsplit(url)
    sock = socket.create_connection((parsed.hostname, parsed.port))
    if first_bytes:
        sock.sendall(first_bytes)
    return sock


def _body_stalled(url):
    """Headers announcing a 100 KB body, then its first byte."""
    return _connect(url, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100000\r\n\r\n{")


def _read_until_closed(socks, deadline_s):
    """What each socket received until the server closed it; sockets still
    open at the deadline map to None."""
    received = {sock: b"" for sock in socks}
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    open_socks = set(socks)
    deadline = time.monotonic() + deadline_s
    while open_socks and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            try:
                data = key.fileobj.recv(65536)
            except ConnectionResetError:
                data = b""
            if data:
                received[key.fileobj] += data
            else:
                selector.unregister(key.fileobj)
                open_socks.discard(key.fileobj)
    selector.close()
    for sock in open_socks:
        received[sock] = None
    return received


def _status_and_error(response):
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)["error"]


def _log(log_path):
    with open(log_path) as f:
        return f.read()


def test_slow_clients_are_answered_408_and_closed(server):
    url, log_path = server
    stalled = [_body_stalled(url) for _ in range(BODY_STALLED)]
    partial = [_connect(url, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le") for _ in range(HEADERS_PARTIAL)]
    silent = [_connect(url, b"") for _ in range(SILENT)]
    try:
        # Served while all of them hold their connections.
        good = httpx.post(url + "/v1/completions", json=GOOD, timeout=60)
        assert good.status_code == 200, good.text
        assert good.json()["choices"][0]["text"]
        # Generous: each socket needs only its timeout (2-3 s) to be closed.
        received = _read_until_closed(stalled + partial + silent, deadline_s=60 + 20 * BODY_TIMEOUT)
    finally:
        for sock in stalled + partial + silent:
            sock.close()
    still_open = [sock for sock, data in received.items() if data is None]
    assert not still_open, "%d of %d slow connections were never closed" % (len(still_open), len(received))
    for sock in stalled:
        status, error = _status_and_error(received[sock])
        assert status == 408 and error["code"] == "request_timeout", received[sock]
        assert "--request-body-timeout" in error["message"]
    for sock in partial + silent:
        status, error = _status_and_error(received[sock])
        assert status == 408 and "headers" in error["message"], received[sock]
    # The server serves on, and its log names each timeout once, without a traceback.
    assert httpx.post(url + "/v1/completions", json=GOOD, timeout=60).status_code == 200
    log = _log(log_path)
    assert "Traceback" not in log and " 500 " not in log, log[-5000:]
    assert log.count('"POST /v1/completions" 408') == BODY_STALLED
    assert log.count("request headers incomplete") == HEADERS_PARTIAL + SILENT


def test_client_leaving_mid_body_is_one_log_line(server):
    url, log_path = server
    sock = _body_stalled(url)
    port = sock.getsockname()[1]
    sock.close()
    line = "127.0.0.1:%d \"POST /v1/completions\" 499 (client disconnected)" % port
    deadline = time.monotonic() + 60
    while line not in _log(log_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    log = _log(log_path)
    assert line in log, log[-3000:]
    assert "Traceback" not in log and "ClientDisconnect" not in log, log[-5000:]


def test_connections_past_the_per_client_bound_get_429(smollm2_path):
    bound = 8
    server, url = start_server(cli_path(), smollm2_path, "--max-connections-per-client", str(bound))
    held = []
    try:
        held = [_connect(url, b"") for _ in range(bound)]
        # The server counts them once its loop has accepted them all.
        deadline = time.monotonic() + 60
        while True:
            refused = httpx.post(url + "/v1/completions", json=GOOD, timeout=60)
            if refused.status_code != 200 or time.monotonic() > deadline:
                break
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == "too_many_connections" and "--max-connections-per-client" in error["message"]
        for sock in held:
            sock.close()
        # Once they are closed (noticed by the server asynchronously) the client is served again.
        deadline = time.monotonic() + 60
        while True:
            answer = httpx.post(url + "/v1/completions", json=GOOD, timeout=60)
            if answer.status_code != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.status_code == 200, answer.text
    finally:
        for sock in held:
            sock.close()
        server.terminate()
        server.wait(timeout=60)


def test_timeout_flags_are_checked(smollm2_path):
    import subprocess

    for flag, value in (("--request-header-timeout", "0"), ("--request-body-timeout", "-1"),
                        ("--max-connections-per-client", "0")):
        done = subprocess.run([cli_path(), "serve", smollm2_path, flag, value], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and flag in done.stderr, done.stderr
