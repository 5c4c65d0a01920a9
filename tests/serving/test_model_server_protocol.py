"""The model-server protocol the Gateway API Inference Extension's endpoint
picker (and llm-d's, built on it) reads from a vLLM server: its metric names
and types on ``/metrics`` (parsed with prometheus_client's parser, as a
Prometheus scrape would), their meaning under load, and ``/health`` for
readiness and liveness.

The names are those the protocol lists for vLLM
(kubernetes-sigs/gateway-api-inference-extension,
docs/proposals/003-model-server-protocol, and llm-d's model-server
page that continues it): TotalQueuedRequests = vllm:num_requests_waiting,
TotalRunningRequests = vllm:num_requests_running, KVCacheUtilization =
vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc in the proposal's first
versions, which older pickers still read), all gauges; the optional
BlockSize and NumGPUBlocks as labels block_size and num_gpu_blocks of
vllm:cache_config_info. (LoRA's vllm:lora_requests_info comes with LoRA.)"""

import threading
import time

import httpx
import pytest
from prometheus_client import parser as prometheus_parser

from server_harness import MODEL_NAME, running_server
from vllm_cpp import Engine

pytestmark = pytest.mark.timeout(300)

PROTOCOL_GAUGES = {
    "TotalQueuedRequests": "vllm:num_requests_waiting",
    "TotalRunningRequests": "vllm:num_requests_running",
    "KVCacheUtilization": "vllm:kv_cache_usage_perc",
    "KVCacheUtilization (first protocol versions)": "vllm:gpu_cache_usage_perc",
}


@pytest.fixture(scope="module")
def one_at_a_time(smollm2_path):
    """One sequence per step: a second request has to queue."""
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=1) as engine:
        yield engine


@pytest.fixture(scope="module")
def base_url(one_at_a_time):
    with running_server(one_at_a_time, max_model_len=256) as url:
        yield url


def scrape(base_url):
    """{metric name: family} as a Prometheus scrape reads /metrics."""
    response = httpx.get(base_url + "/metrics", timeout=30)
    assert response.status_code == 200
    return {family.name: family for family in prometheus_parser.text_string_to_metric_families(response.text)}


def value(families, name):
    samples = [s for s in families[name].samples if s.labels.get("model_name") == MODEL_NAME]
    assert len(samples) == 1, families[name].samples
    return samples[0].value


def test_protocol_metrics_are_gauges_with_vllms_names(base_url, one_at_a_time):
    families = scrape(base_url)
    for metric, name in PROTOCOL_GAUGES.items():
        assert name in families, "%s (%s) missing" % (metric, name)
        assert families[name].type == "gauge", name
    assert value(families, "vllm:num_requests_waiting") == 0
    assert 0.0 <= value(families, "vllm:kv_cache_usage_perc") <= 1.0
    assert value(families, "vllm:gpu_cache_usage_perc") == value(families, "vllm:kv_cache_usage_perc")
    info = families["vllm:cache_config_info"].samples
    stats = one_at_a_time.stats()
    assert len(info) == 1 and info[0].value == 1.0
    assert info[0].labels["block_size"] == str(stats["block_size"])
    assert info[0].labels["num_gpu_blocks"] == str(stats["kv_blocks_total"])


def test_queue_depth_and_kv_usage_under_load(base_url):
    """Three long completions on a one-sequence engine: a scrape sees one
    running, the others queued and KV blocks in use; afterwards all zero."""
    def complete(i):
        httpx.post(base_url + "/v1/completions", timeout=240,
                   json={"model": MODEL_NAME, "prompt": "Story %d: once upon a time" % i, "max_tokens": 48,
                         "temperature": 0, "ignore_eos": True})

    threads = [threading.Thread(target=complete, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    seen_queue = seen_usage = False
    deadline = time.monotonic() + 120
    while not (seen_queue and seen_usage) and time.monotonic() < deadline:
        families = scrape(base_url)
        running, waiting = value(families, "vllm:num_requests_running"), value(families, "vllm:num_requests_waiting")
        assert running <= 1
        seen_queue |= running == 1 and waiting >= 1
        seen_usage |= value(families, "vllm:kv_cache_usage_perc") > 0
        time.sleep(0.02)
    for t in threads:
        t.join()
    assert seen_queue and seen_usage
    families = scrape(base_url)
    assert value(families, "vllm:num_requests_running") == 0 and value(families, "vllm:num_requests_waiting") == 0


def test_health_is_readiness(base_url, smollm2_path):
    """/health answers 200 with an empty body while the engine serves (the
    server listens only once the engine is loaded), and 503 once it is
    closed, so a readiness probe takes the pod out of the pool."""
    response = httpx.get(base_url + "/health", timeout=30)
    assert response.status_code == 200 and response.content == b""
    engine = Engine.load(smollm2_path, max_model_len=128)
    with running_server(engine) as url:
        assert httpx.get(url + "/health", timeout=30).status_code == 200
        engine.close()
        assert httpx.get(url + "/health", timeout=30).status_code == 503
