"""Image URLs the server fetches (issue 46, point 4): http(s) URLs from the
hosts of --allowed-media-domains and file:// URLs under
--allowed-local-media-path, through the openai client, against a local HTTP
server on a thread of this test. An allowed image gives the same answer as
its data: URL; a host outside the allow-list, a redirect to one, too many
redirects, a slow image (timeout), a huge image (size limit, declared or
not), a file outside the allowed directory (by path, '..' or a symlink):
each a 400 naming the message part, and the server answers the next good
request. A slow fetch does not stall another request."""

import concurrent.futures
import http.server
import io
import os
import threading

import numpy as np
import pytest

from server_harness import running_server

from test_vision_server import HF, TINY, _ask, _data_url, openai, pytestmark  # noqa: F401  (the same skips)

PIL = pytest.importorskip("PIL.Image", reason="images need Pillow (the [vision] extra)")

from vllm_cpp import Engine  # noqa: E402
from vllm_cpp.server.media import MediaFetchLimits  # noqa: E402

MAX_BYTES = 64 << 10
TIMEOUT_S = 3.0


def _png(name):
    buffer = io.BytesIO()
    PIL.fromarray(np.load(TINY / f"gemma3-vision_image_{name}.npy"), "RGB").save(buffer, format="PNG")
    return buffer.getvalue()


class _Images(http.server.BaseHTTPRequestHandler):
    """The test's image host: /square.png, /slow.png (answers only when the
    test releases it), /huge.png (declares its size), /huge-undeclared.png,
    /hop/N (N redirects to /square.png), /to-other (a redirect to 'localhost', a host
    the allow-list lacks)."""
    release = threading.Event()

    def log_message(self, *args):
        pass

    def _send(self, body, declare=True, status=200, location=None):
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        if declare:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/square.png":
            self._send(_png("square"))
        elif self.path == "/slow.png":
            self.release.wait(60)
            self._send(_png("square"))
        elif self.path == "/huge.png":
            self._send(b"\0" * (MAX_BYTES + 1))
        elif self.path == "/huge-undeclared.png":
            self._send(b"\0" * (4 * MAX_BYTES), declare=False)
        elif self.path.startswith("/hop/"):
            left = int(self.path.rsplit("/", 1)[1])
            self._send(b"", status=302, location="/square.png" if left <= 1 else f"/hop/{left - 1}")
        elif self.path == "/to-other":
            self._send(b"", status=302, location=f"http://localhost:{port}/square.png")
        else:
            self._send(b"", status=404)


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    """(image host URL, allowed directory, a directory beside it)."""
    root = tmp_path_factory.mktemp("media")
    allowed, outside = root / "allowed", root / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "square.png").write_bytes(_png("square"))
    (outside / "secret.png").write_bytes(_png("square"))
    os.symlink(outside / "secret.png", allowed / "link.png")
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    host.daemon_threads = True
    thread = threading.Thread(target=host.serve_forever, name="test-image-host", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{host.server_address[1]}", allowed, outside
    finally:
        _Images.release.set()
        host.shutdown()
        host.server_close()


@pytest.fixture(scope="module")
def client(media):
    _, allowed, _ = media
    limits = MediaFetchLimits(max_bytes=MAX_BYTES, timeout_s=TIMEOUT_S, max_redirects=2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPP_KV_CACHE_DTYPE", "f32")  # as test_vision_server's, so answers compare
        engine = Engine.load(str(HF), max_model_len=256)
    try:
        with running_server(engine, max_model_len=256, allowed_media_domains=("127.0.0.1",),
                            allowed_local_media_path=str(allowed), media_fetch_limits=limits) as url:
            yield openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    finally:
        engine.close()


def _refused(client, url, needle):
    with pytest.raises(openai.BadRequestError) as caught:
        _ask(client, url)
    assert needle in str(caught.value) and "messages[0].content[0]" in str(caught.value), str(caught.value)


@pytest.mark.timeout(300)
def test_allowed_urls_answer_as_the_data_url_does(client, media):
    host, allowed, _ = media
    expected = _ask(client, _data_url("square"))
    assert _ask(client, f"{host}/square.png") == expected
    assert _ask(client, f"{host}/hop/2") == expected  # redirects within the allow-list, up to the limit
    assert _ask(client, (allowed / "square.png").as_uri()) == expected


@pytest.mark.timeout(300)
def test_refused_urls_get_a_400_naming_the_part(client, media):
    host, allowed, outside = media
    port = host.rsplit(":", 1)[1]
    _refused(client, f"http://localhost:{port}/square.png", "not in --allowed-media-domains")
    _refused(client, f"{host}/to-other", "not in --allowed-media-domains")
    _refused(client, f"{host}/hop/3", "more than 2 redirects")
    _refused(client, f"{host}/huge.png", "byte limit")
    _refused(client, f"{host}/huge-undeclared.png", "byte limit")
    _refused(client, f"{host}/missing.png", "HTTP 404")
    _refused(client, (outside / "secret.png").as_uri(), "outside --allowed-local-media-path")
    _refused(client, "file://" + str(allowed) + "/../outside/secret.png", "outside --allowed-local-media-path")
    _refused(client, (allowed / "link.png").as_uri(), "outside --allowed-local-media-path")
    _refused(client, "ftp://127.0.0.1/square.png", "not supported")
    assert _ask(client, f"{host}/square.png")  # the server goes on


@pytest.mark.timeout(300)
def test_a_slow_image_times_out_without_stalling_others(client, media):
    host, _, _ = media
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(_ask, client, f"{host}/slow.png")
        answer = _ask(client, None, "Hello there")  # served while the slow fetch waits on its host
        assert answer and not slow.done()
        with pytest.raises(openai.BadRequestError) as caught:
            slow.result()
    assert "timed out" in str(caught.value) and "messages[0].content[0]" in str(caught.value)
    assert _ask(client, f"{host}/square.png")
