"""Prometheus metrics for ``GET /metrics``, named as vLLM names them.

Engine-wide numbers (running/waiting requests, KV cache usage, prefix-cache
queries and hits, token totals, preemptions, and with speculative decoding
its drafts, draft tokens and accepted tokens, in total and per position)
are read from
``Engine.stats()`` at scrape time, so they are the engine's own counts;
per-request latencies (time to first token, inter-token latency, end to
end) and finished-request counts are observed by the server as it streams.
Time to first token and inter-token latency need the tokens' arrival, so
they come from requests whose output the server sees as it is generated
(every completion, and streamed chats); a blocking chat counts in the end
to end latency only.
"""

from __future__ import annotations

import time
from typing import Optional

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..engine import Engine

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)


class _EngineStatsCollector:
    """Turns one ``Engine.stats()`` snapshot into vLLM's engine metrics."""

    def __init__(self, engine: Engine, model_name: str):
        self._engine = engine
        self._labels = {"model_name": model_name}

    def _gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=list(self._labels))
        family.add_metric(list(self._labels.values()), value)
        return family

    def _counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=list(self._labels))
        family.add_metric(list(self._labels.values()), value)
        return family

    def collect(self):
        if self._engine.closed:
            return
        s = self._engine.stats()
        total = s["kv_blocks_total"]
        kv_usage = s["kv_blocks_used"] / total if total else 0.0
        yield self._gauge("vllm:num_requests_running", "Requests in model execution batches.",
                          s["running_requests"])
        yield self._gauge("vllm:num_requests_waiting", "Requests waiting to be processed.",
                          s["waiting_requests"])
        yield self._gauge("vllm:kv_cache_usage_perc", "KV-cache usage (1 means 100 percent).", kv_usage)
        # The Gateway API Inference Extension's model-server protocol (docs/kubernetes.md): older
        # endpoint pickers read KV utilisation under vLLM's former name, and the prefix-cache
        # scorer reads block_size and num_gpu_blocks from cache_config_info's labels.
        yield self._gauge("vllm:gpu_cache_usage_perc", "KV-cache usage (1 means 100 percent; "
                          "vllm:kv_cache_usage_perc's former name).", kv_usage)
        info = GaugeMetricFamily("vllm:cache_config_info", "Information of the KV cache config.",
                                 labels=["block_size", "num_gpu_blocks", "enable_prefix_caching"])
        info.add_metric([str(s["block_size"]), str(total), str(bool(s["prefix_caching"]))], 1.0)
        yield info
        yield self._counter("vllm:prefix_cache_queries", "Prefix-cache queries, in tokens.",
                            s["prefix_cache_queries"])
        yield self._counter("vllm:prefix_cache_hits", "Prefix-cache hits, in tokens.",
                            s["prefix_cache_hits"])
        yield self._counter("vllm:prompt_tokens", "Prefill tokens processed.", s["prompt_tokens"])
        yield self._counter("vllm:generation_tokens", "Generation tokens processed.",
                            s["generation_tokens"])
        yield self._counter("vllm:num_preemptions", "Cumulative preemptions.", s["preemptions"])
        spec = s.get("spec_decode")
        if spec is not None:
            yield self._counter("vllm:spec_decode_num_drafts", "Speculative drafts verified.", spec["num_drafts"])
            yield self._counter("vllm:spec_decode_num_draft_tokens", "Draft tokens verified.",
                                spec["num_draft_tokens"])
            yield self._counter("vllm:spec_decode_num_accepted_tokens", "Draft tokens accepted.",
                                spec["num_accepted_tokens"])
            per_pos = CounterMetricFamily("vllm:spec_decode_num_accepted_tokens_per_pos",
                                          "Draft tokens accepted, per position in the draft.",
                                          labels=[*self._labels, "position"])
            for position, accepted in enumerate(spec["num_accepted_tokens_per_pos"]):
                per_pos.add_metric([*self._labels.values(), str(position)], accepted)
            yield per_pos


class ServerMetrics:
    """The server's registry: engine metrics plus request latencies."""

    def __init__(self, engine: Engine, model_name: str):
        self.registry = CollectorRegistry()
        labels = ["model_name"]
        self.model_name = model_name
        self.registry.register(_EngineStatsCollector(engine, model_name))
        self.time_to_first_token = Histogram(
            "vllm:time_to_first_token_seconds", "Time to first token.", labels,
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.inter_token_latency = Histogram(
            "vllm:inter_token_latency_seconds", "Time between output deltas.", labels,
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.e2e_latency = Histogram(
            "vllm:e2e_request_latency_seconds", "End to end request latency.", labels,
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.request_success = Counter(
            "vllm:request_success", "Successfully finished requests.",
            labels + ["finished_reason"], registry=self.registry)
        self.http_requests = Counter(
            "vllm:http_requests", "HTTP requests answered.",
            ["method", "path", "status"], registry=self.registry)

        # The served model's series, looked up once: a token's observation
        # is on the per-token path.
        self.model_ttft = self.time_to_first_token.labels(model_name)
        self.model_itl = self.inter_token_latency.labels(model_name)
        self.model_e2e = self.e2e_latency.labels(model_name)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def timer(self) -> "RequestTimer":
        return RequestTimer(self)

    def finished(self, reason: Optional[str]) -> None:
        if reason is not None and reason != "abort":
            self.request_success.labels(self.model_name, reason).inc()


class RequestTimer:
    """Observes one request's token arrivals and its end."""

    def __init__(self, metrics: ServerMetrics):
        self._metrics = metrics
        self._start = time.monotonic()
        self._last: Optional[float] = None

    def output(self, tokens: int = 1) -> None:
        """Output arrived: ``tokens`` tokens at once (a completion's event
        carries every token since the previous one; the gap is shared
        between them), or one delta of a chat stream."""
        now = time.monotonic()
        if self._last is None:
            self._metrics.model_ttft.observe(now - self._start)
            tokens -= 1
            gap = 0.0
        else:
            gap = (now - self._last) / max(tokens, 1)
        observe = self._metrics.model_itl.observe
        for _ in range(tokens):
            observe(gap)
        self._last = now

    def done(self) -> None:
        self._metrics.model_e2e.observe(time.monotonic() - self._start)
