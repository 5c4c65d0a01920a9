"""Many clients on one server: 32 concurrent streams are batched and each
equals its request alone; clients that disconnect mid-stream leave no
running request and no KV block behind."""

import asyncio
import json
import threading

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from server_harness import MODEL_NAME, running_server, wait_until_idle  # noqa: E402
from vllm_cpp import Engine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.timeout(600)

CLIENTS = 32
MAX_TOKENS = 12


@pytest.fixture(scope="module")
def load_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=32) as eng:
        yield eng


@pytest.fixture(scope="module")
def base_url(load_engine):
    with running_server(load_engine) as url:
        yield url


class RunningSampler:
    """Records the largest running_requests the engine reports while on."""

    def __init__(self, engine):
        self.engine = engine
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.most = max(self.most, self.engine.stats()["running_requests"])
            self._stop.wait(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


async def stream_completion(http, prompt, max_tokens, read_chunks=None):
    """The streamed text; with read_chunks, disconnect after that many."""
    body = {"model": MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": True}
    parts, chunks = [], 0
    async with http.stream("POST", "/v1/completions", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            parts.append(json.loads(line[6:])["choices"][0]["text"])
            chunks += 1
            if read_chunks is not None and chunks >= read_chunks:
                break  # leaving the block closes the connection mid-stream
    return "".join(parts)


def test_concurrent_streams_are_batched_and_correct(base_url, load_engine):
    prompts = ["Request %d: the story of a small town begins" % i for i in range(CLIENTS)]
    expected = [load_engine.complete(p, SamplingParams.greedy(max_tokens=MAX_TOKENS)).text for p in prompts]

    async def main():
        limits = httpx.Limits(max_connections=CLIENTS)
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=300) as http:
            return await asyncio.gather(*(stream_completion(http, p, MAX_TOKENS) for p in prompts))

    with RunningSampler(load_engine) as sampler:
        texts = asyncio.run(main())
    assert texts == expected
    assert sampler.most > 1, "the streams were not batched"
    stats = wait_until_idle(load_engine)
    assert stats["running_requests"] == 0 and stats["kv_blocks_used"] == 0


def test_disconnected_clients_release_their_requests(base_url, load_engine):
    aborted_before = load_engine.stats()["requests_aborted"]

    async def main():
        async with httpx.AsyncClient(base_url=base_url, timeout=300) as http:
            await asyncio.gather(*(stream_completion(http, "Client %d tells a very long story:" % i, 200,
                                                     read_chunks=2) for i in range(8)))

    asyncio.run(main())
    stats = wait_until_idle(load_engine)
    assert stats["running_requests"] == 0 and stats["waiting_requests"] == 0
    assert stats["kv_blocks_used"] == 0, "disconnected streams leaked KV blocks"
    assert stats["requests_aborted"] - aborted_before == 8

    # A blocking request whose client gives up is cancelled too. The client
    # leaves once the engine has the request (a fixed client timeout could
    # end before a slow build, under a sanitizer, even submitted it).
    async def impatient():
        async with httpx.AsyncClient(base_url=base_url, timeout=300) as http:
            post = asyncio.ensure_future(http.post("/v1/completions", json={"prompt": "A long tale:",
                                                                              "max_tokens": 240, "ignore_eos": True}))
            while not ((stats := load_engine.stats())["running_requests"] or stats["waiting_requests"]):
                assert not post.done(), "the blocking request ended before its client could give up"
                await asyncio.sleep(0.01)
            post.cancel()
            with pytest.raises(asyncio.CancelledError):
                await post

    asyncio.run(impatient())
    stats = wait_until_idle(load_engine)
    assert stats["running_requests"] == 0 and stats["kv_blocks_used"] == 0
    assert stats["requests_aborted"] - aborted_before == 9
