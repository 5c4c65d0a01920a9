"""``vllm-cpp serve MODEL --replicas 2 --ray-address ADDR`` on a local Ray
cluster of two nodes (Ray's own ``cluster_utils.Cluster``, one CPU each, so
Serve places one replica per node): the OpenAI routes through the ``openai``
client, streaming and blocking; a replica killed mid-stream ends its own
request with a clear error while the other replica's stream finishes, and
Serve brings a replica back. Also: the ``serve run`` example config builds,
the ingress's prompt extraction and the router's prefix hashes.

Skips, saying so, without the ``[ray]`` extra (``pip install ".[ray]"``)."""

import json
import os
import pathlib
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install \"vllm-cpp[ray]\")")
openai = pytest.importorskip("openai")

from ray.cluster_utils import Cluster  # noqa: E402

from vllm_cpp.ray.forwarding import routing_text  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPLICA_HEADER = "x-vllm-cpp-replica"  # "<replica id>:<pid>"


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _first_line_matching(stream, prefix, timeout_s):
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line.startswith(prefix):
            return line
    return None


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                             "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


@pytest.fixture(scope="module")
def served(cluster, smollm2_path, tmp_path_factory):
    """(base URL, the CLI process) with 2 replicas of one thread each."""
    port = _free_port()
    log_dir = tmp_path_factory.mktemp("ray")
    log = open(log_dir / "serve.log", "w+")
    store = tmp_path_factory.mktemp("kv_store")  # every replica shares computed prefixes through it
    kv_transfer = json.dumps({"kv_connector": "SharedStorageConnector", "kv_role": "kv_both",
                              "kv_connector_extra_config": {"shared_storage_path": str(store)}})
    process = subprocess.Popen([sys.executable, "-m", "vllm_cpp", "serve", smollm2_path, "--replicas", "2",
                                "--ray-address", cluster.address, "--port", str(port), "--max-model-len", "512",
                                "--served-model-name", "smol", "--kv-transfer-config", kv_transfer],
                               # a neutral folder: from the checkout, -m would find its uncompiled vllm_cpp/
                               stdout=subprocess.PIPE, stderr=log, text=True, cwd=str(log_dir))
    ready = _first_line_matching(process.stdout, "vllm-cpp: serving", 300)
    if ready is None:
        process.kill()
        log.seek(0)
        pytest.fail("the Ray server did not start:\n" + log.read()[-4000:], pytrace=False)
    yield "http://127.0.0.1:%d" % port, process
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=served[0] + "/v1", api_key="unused", max_retries=0, timeout=120)


def test_blocking_and_streaming_calls_through_replicas(client):
    reply = client.chat.completions.create(model="smol", messages=[{"role": "user", "content": "Say hi"}],
                                           max_tokens=8, temperature=0)
    assert reply.choices[0].message.content and reply.usage.completion_tokens > 0
    chunks = list(client.completions.create(model="smol", prompt="The capital of France is", max_tokens=8,
                                            temperature=0, stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks if chunk.choices)
    assert [model.id for model in client.models.list()] == ["smol"]
    with pytest.raises(openai.NotFoundError):  # the server's own errors come through unchanged
        client.chat.completions.create(model="other", messages=[{"role": "user", "content": "hi"}])


@pytest.fixture(scope="module")
def replica_stats(cluster, served):
    """``replica_stats()``: {replica id: Engine.stats()} of both replicas,
    through the engine deployment's handle (each call reaches one replica)."""
    import ray
    from ray import serve

    ray.init(address=cluster.address, log_to_driver=False)
    handle = serve.get_deployment_handle("VllmCppEngine", app_name="vllm-cpp")

    def replica_stats(replicas=2):
        found = {}
        for _ in range(60):
            answer = handle.engine_stats.remote().result(timeout_s=60)
            found[answer["replica"]] = answer["stats"]
            if len(found) >= replicas:
                break
        return found

    yield replica_stats
    ray.shutdown()


def test_a_prefix_computed_on_one_replica_is_loaded_on_the_other(client, replica_stats):
    # Under the router's 256 characters of affinity: the least-loaded replica takes each copy.
    prompt = "Shared notes: the tide rises twice a day, and the moon pulls the sea. " * 3
    answered = {}
    for _ in range(16):
        raw = client.completions.with_raw_response.create(model="smol", prompt=prompt, max_tokens=1, temperature=0)
        answered.setdefault(raw.headers[REPLICA_HEADER], raw.parse().choices[0].text)
        if len(answered) == 2:
            break
        # the first replica's blocks reach the store before a second copy runs
        deadline = time.monotonic() + 30
        while any(s["kv_transfer"]["saves_pending"] for s in replica_stats().values()) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
    assert len(answered) == 2, "one replica answered every copy"
    assert len(set(answered.values())) == 1  # greedy, the same tokens either way
    transfer = [s["kv_transfer"] for s in replica_stats().values()]
    assert sum(t["tokens_loaded"] for t in transfer) > 0, transfer
    assert all(t["blocks_rejected"] == 0 for t in transfer), transfer


def test_a_shared_system_prompt_stays_on_one_replica(client):
    system = "You are a careful assistant for a lighthouse keeper; answer in one line. " * 8
    answered = [client.chat.completions.with_raw_response.create(
        model="smol", max_tokens=1, messages=[{"role": "system", "content": system},
                                              {"role": "user", "content": "Question %d" % n}]).headers[REPLICA_HEADER]
                for n in range(4)]
    assert len(set(answered)) == 1, answered


def _story(n):
    return [{"role": "user", "content": "Story %d: tell a long story, please, about the sea." % n}]


def _long_stream(client, n):
    raw = client.chat.completions.with_raw_response.create(
        model="smol", messages=_story(n),
        max_tokens=400, stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    return raw.headers[REPLICA_HEADER], raw.parse()


def test_killed_replica_fails_its_requests_only_and_is_replaced(client, replica_stats):
    streams, story_of = {}, {}
    for n in range(12):  # until one stream runs on each replica
        replica, stream = _long_stream(client, n)
        if replica in streams:
            stream.close()
        else:
            streams[replica], story_of[replica] = stream, n
        if len(streams) == 2:
            break
    assert len(streams) == 2, "every stream went to one replica: %s" % list(streams)
    (victim, doomed), (survivor, kept) = streams.items()
    doomed_chunks = iter(doomed)
    next(doomed_chunks)  # it is generating
    os.kill(int(victim.rsplit(":", 1)[1]), signal.SIGKILL)
    with pytest.raises(openai.APIError, match="engine replica serving this request failed"):
        for _ in doomed_chunks:
            pass
    # The survivor generates all its tokens; counted from usage, since chunks
    # coalesce several tokens when the machine is busy.
    kept_chunks = list(kept)
    finished = [chunk.choices[0].finish_reason for chunk in kept_chunks if chunk.choices]
    [usage] = [chunk.usage for chunk in kept_chunks if chunk.usage]
    assert finished[-1] == "length" and usage.completion_tokens == 400
    seen = set()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (seen - set(streams)):
        raw = client.chat.completions.with_raw_response.create(
            model="smol", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        seen.add(raw.headers[REPLICA_HEADER])
        time.sleep(0.5)
    assert seen - set(streams), "Serve brought no replica back (answered by %s)" % seen
    # What the killed replica had written to the KV store is whole: the new
    # replica loads its story's prompt blocks, and no replica rejects a record.
    (new_replica,) = seen - set(streams)
    for _ in range(16):
        raw = client.chat.completions.with_raw_response.create(model="smol", messages=_story(story_of[victim]),
                                                               max_tokens=1)
        if raw.headers[REPLICA_HEADER] == new_replica:
            break
    stats = replica_stats()
    assert stats[new_replica]["kv_transfer"]["tokens_loaded"] > 0, stats
    assert all(s["kv_transfer"]["blocks_rejected"] == 0 for s in stats.values()), stats


def test_routing_text_reads_the_prompt_in_order():
    assert routing_text(b'{"messages": [{"role": "system", "content": "S"}, '
                        b'{"role": "user", "content": [{"type": "text", "text": "U"}]}]}') == "system:S\nuser:U\n"
    assert routing_text(b'{"prompt": ["first", "second"]}') == "first"
    assert routing_text(b'{"system": "A", "messages": []}') == "A"
    assert routing_text(b"not json") == "" and routing_text(b"[1]") == "" and routing_text(b"") == ""


def test_prefix_hashes_name_prefixes():
    from vllm_cpp.ray.prefix_router import chain_hashes

    shared = "x" * 256
    first, second = chain_hashes(shared + "a" * 128, 128), chain_hashes(shared + "b" * 128, 128)
    assert len(first) == 3 and first[:2] == second[:2] and first[2] != second[2]
    assert chain_hashes("short", 128) == []


def test_example_config_builds_the_application():
    yaml = pytest.importorskip("yaml")
    from ray.serve.schema import ServeDeploySchema

    from vllm_cpp.ray.deployment import app_builder

    config = yaml.safe_load((ROOT / "examples" / "ray_serve_config.yaml").read_text())
    ServeDeploySchema.model_validate(config) if hasattr(ServeDeploySchema, "model_validate") \
        else ServeDeploySchema.parse_obj(config)
    (application,) = config["applications"]
    assert application["import_path"] == "vllm_cpp.ray.deployment:app_builder"
    assert app_builder(application["args"]) is not None
    with pytest.raises(ValueError, match="unknown args: replica"):
        app_builder(dict(application["args"], replica=2))
    with pytest.raises(TypeError, match="unknown engine option.*max_len"):  # before any replica starts
        app_builder(dict(application["args"], engine={"max_len": 2}))
