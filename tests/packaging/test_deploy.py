"""The container image and the Kubernetes manifests (Containerfile,
deploy/kubernetes/), checked offline: every manifest validates against the
schema of its apiVersion and kind (tests/packaging/k8s_schemas/: small JSON
schemas derived from Kubernetes' OpenAPI and the Gateway API Inference
Extension's CRDs, their origin in each "$comment"), the objects agree with
each other and with the image (labels, ports, probes on /health, the model
name), the container's arguments are flags `vllm-cpp serve` accepts with a
--kv-events-config it reads, and the Containerfile has the shape the docs
promise. Where podman can run, the image is built and serves;
elsewhere that test skips, naming why."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML reads the manifests (test extra)")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema validates the manifests (test extra)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
SCHEMAS = pathlib.Path(__file__).resolve().parent / "k8s_schemas"
CONTAINERFILE = ROOT / "Containerfile"

pytestmark = pytest.mark.skipif(not MANIFESTS.is_dir() or not CONTAINERFILE.is_file(),
                                reason="needs the source checkout (deploy/, Containerfile)")


def documents():
    """(file, object) for every YAML document under deploy/kubernetes."""
    out = []
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                out.append((path.relative_to(ROOT).as_posix(), doc))
    return out


def schema_for(doc):
    group_version = doc.get("apiVersion", "").replace("/", "_")
    path = SCHEMAS / ("%s_%s.json" % (group_version, doc.get("kind")))
    return json.loads(path.read_text()) if path.is_file() else None


def the(kind, api_version=None):
    found = [doc for _, doc in documents() if doc["kind"] == kind
             and (api_version is None or doc["apiVersion"] == api_version)]
    assert len(found) == 1, (kind, api_version, len(found))
    return found[0]


@pytest.mark.parametrize("name,doc", documents(), ids=lambda v: v if isinstance(v, str) else v.get("kind"))
def test_manifest_validates_against_its_schema(name, doc):
    schema = schema_for(doc)
    assert schema is not None, "%s: no schema for %s %s" % (name, doc.get("apiVersion"), doc.get("kind"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "%s: %s" % (name, "; ".join("%s: %s" % ("/".join(map(str, e.path)), e.message)
                                                    for e in errors))


def test_a_misspelt_field_is_caught():
    """The schemas are strict where a typo would otherwise go unnoticed."""
    deployment = json.loads(json.dumps(the("Deployment")))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessprobe"] = container.pop("readinessProbe")
    assert list(jsonschema.Draft202012Validator(schema_for(deployment)).iter_errors(deployment))


def container():
    return the("Deployment")["spec"]["template"]["spec"]["containers"][0]


def env(name):
    return next(e for e in container()["env"] if e["name"] == name)


def test_objects_agree_with_each_other():
    deployment = the("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert the("Service")["spec"]["selector"].items() <= pod_labels.items()
    assert all(p["targetPort"] in ports for p in the("Service")["spec"]["ports"])
    pool = the("InferencePool", "inference.networking.k8s.io/v1")
    assert pool["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pool["spec"]["targetPorts"][0]["number"] == ports["http"]
    old_pool = the("InferencePool", "inference.networking.x-k8s.io/v1alpha2")
    assert old_pool["spec"]["selector"].items() <= pod_labels.items()
    assert old_pool["spec"]["targetPortNumber"] == ports["http"]
    assert the("InferenceObjective")["spec"]["poolRef"]["name"] == pool["metadata"]["name"]
    model = the("InferenceModel")
    assert model["spec"]["poolRef"]["name"] == old_pool["metadata"]["name"]
    args = container()["args"]
    served = args[args.index("--served-model-name") + 1]
    assert model["spec"]["modelName"] == served and [t["name"] for t in model["spec"]["targetModels"]] == [served]
    assert pod_labels.get("llm-d.ai/engine-type") == "vllm"  # llm-d reads vLLM's metric names from it
    claim = deployment["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert claim == the("PersistentVolumeClaim")["metadata"]["name"]
    assert env("VLLM_CPP_MODEL")["value"].startswith(container()["volumeMounts"][0]["mountPath"] + "/")


def test_probes_read_health_and_the_pod_runs_as_the_images_user():
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container()[probe]["httpGet"] == {"path": "/health", "port": "http"}, probe
    pod_security = the("Deployment")["spec"]["template"]["spec"]["securityContext"]
    user = re.search(r"^USER (\d+)", CONTAINERFILE.read_text(), re.M).group(1)
    assert pod_security["runAsNonRoot"] and str(pod_security["runAsUser"]) == user
    requests = container()["resources"]["requests"]
    assert env("VLLM_CPP_NUM_THREADS")["value"] == requests["cpu"]  # one engine thread per requested core


def expand(text, variables):
    """Kubernetes' $(VAR) expansion in args and env values."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: variables.get(m.group(1), m.group(0)), text)


def test_args_are_serve_flags_with_a_kv_events_config_it_reads():
    from vllm_cpp.cli.main import build_parser
    from vllm_cpp.kv_events import parse_kv_events_config

    variables = {"POD_IP": "10.0.0.7", "NAMESPACE": "models"}
    variables["KV_EVENTS_ENDPOINT"] = expand(env("KV_EVENTS_ENDPOINT")["value"], variables)
    args = [expand(a, variables) for a in container()["args"]]
    parsed = build_parser().parse_args(["serve", env("VLLM_CPP_MODEL")["value"], *args])
    config = parse_kv_events_config(parsed.kv_events_config)
    assert config.active and config.endpoint == "tcp://vllm-cpp-epp.models.svc.cluster.local:5557"
    assert config.topic == "kv@10.0.0.7:8000@%s" % parsed.served_model_name  # llm-d's pod@model topic
    assert parsed.prefix_caching_hash_algo == "sha256_cbor" and env("PYTHONHASHSEED")["value"]
    replay_port = int(config.replay_endpoint.rsplit(":", 1)[1])
    assert replay_port in [p["containerPort"] for p in container()["ports"]]


def test_containerfile_shape():
    text = CONTAINERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\S+))?", text, re.M)
    assert len(stages) == 2 and stages[0][1] == "build"
    assert "python -m build --wheel" in text and "COPY --from=build /wheels /wheels" in text
    assert "[server,kv-events]" in text
    user = re.search(r"^USER (\d+)", text, re.M)
    assert user and int(user.group(1)) != 0
    healthcheck = re.search(r"^HEALTHCHECK (?:.*\\\n)*.*", text, re.M).group(0)
    assert "/health" in healthcheck
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.*)$", text, re.M).group(1))
    assert "exec vllm-cpp serve \"$VLLM_CPP_MODEL\"" in entrypoint[2] and "\"$@\"" in entrypoint[2]
    assert re.search(r"^ENV VLLM_CPP_MODEL=/models/", text, re.M) and 'VOLUME ["/models"]' in text


def test_the_ci_workflow_builds_the_image():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "container.yml").read_text())
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert any("build" in run and "-f Containerfile" in run for run in steps)
    assert any("/health" in run for run in steps)


# ---- building and running the image, where an OCI builder can ---------------------------------
def builder():
    """podman (builds and runs) or the reason there is none."""
    podman = shutil.which("podman")
    if podman is None:
        return None, "no podman on PATH (Debian: apt-get install podman; buildah alone builds but cannot run)"
    probe = subprocess.run([podman, "info"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        return None, "podman cannot run here: %s" % (probe.stderr.strip().splitlines() or ["?"])[-1]
    return podman, None


@pytest.mark.timeout(3600)
def test_image_builds_and_serves(smollm2_path):
    podman, why = builder()
    if podman is None:
        pytest.skip(why)
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)", CONTAINERFILE.read_text(), re.M).group(1)
    pull = subprocess.run([podman, "pull", base], capture_output=True, text=True, timeout=600)
    if pull.returncode != 0:
        pytest.skip("the base image %s cannot be pulled here: %s" % (base, pull.stderr.strip()[-300:]))
    tag = "localhost/vllm-cpp-test:%d" % os.getpid()
    build = subprocess.run([podman, "build", "-f", str(CONTAINERFILE), "-t", tag, str(ROOT)],
                           capture_output=True, text=True, timeout=3000)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    model_dir = os.path.dirname(smollm2_path)
    name = "vllm-cpp-test-%d" % os.getpid()
    run = subprocess.run([podman, "run", "-d", "--name", name, "-p", "127.0.0.1::8000",
                          "-v", "%s:/models:ro" % model_dir,
                          "-e", "VLLM_CPP_MODEL=/models/%s" % os.path.basename(smollm2_path),
                          tag, "--max-model-len", "256", "--served-model-name", "smol"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    try:
        port = subprocess.run([podman, "port", name, "8000"], capture_output=True, text=True,
                              timeout=60).stdout.strip().rsplit(":", 1)[1]
        url = "http://127.0.0.1:%s" % port
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, subprocess.run([podman, "logs", name], capture_output=True,
                                                               text=True).stderr[-3000:]
            time.sleep(1)
        body = json.dumps({"model": "smol", "prompt": "Hello", "max_tokens": 4}).encode()
        request = urllib.request.Request(url + "/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            assert json.loads(response.read())["usage"]["completion_tokens"] == 4
        user = subprocess.run([podman, "exec", name, "id", "-u"], capture_output=True, text=True, timeout=60)
        assert user.stdout.strip() != "0"
    finally:
        subprocess.run([podman, "rm", "-f", name], capture_output=True, timeout=120)
        subprocess.run([podman, "rmi", "-f", tag], capture_output=True, timeout=120)
