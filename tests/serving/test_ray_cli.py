"""``vllm-cpp serve --replicas``'s refusals, which need no Ray: bad counts,
``--port 0``, and (where Ray is not installed) the extra to install; each
one line and exit status 2, before any engine or Ray is started."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest



def serve(model, *flags):
    # From a neutral folder: from the checkout, -m would find its uncompiled vllm_cpp/ first.
    return subprocess.run([sys.executable, "-m", "vllm_cpp", "serve", model, *flags], capture_output=True,
                          text=True, timeout=120, cwd=str(pathlib.Path(__file__).parent))


@pytest.mark.parametrize("flags,message", [
    (("--replicas", "0"), "--replicas must be >= 1, not 0"),
    (("--replicas", "2", "--max-replicas", "1"), "--max-replicas must be >= --replicas (2), not 1"),
    (("--replicas", "2", "--port", "0"), "--port 0 is not supported with --replicas"),
    (("--replicas", "2", "--num-threads", "0"), "--num-threads must be >= 1, not 0"),
])
def test_bad_replica_flags_are_refused(smollm2_path, flags, message):
    done = serve(smollm2_path, *flags)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed here")
def test_replicas_without_ray_name_the_extra(smollm2_path):
    done = serve(smollm2_path, "--replicas", "2")
    assert done.returncode == 2 and 'pip install "vllm-cpp[ray]"' in done.stderr, done.stderr
