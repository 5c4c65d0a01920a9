"""The installed ``vllm-cpp`` console script, and ``vllm-cpp serve`` run
as a process of its own (for tests of the command line and of a server
that is killed)."""

import os
import re
import shutil
import subprocess
import sys

import pytest


def cli_path():
    """The console script pip installed beside this Python."""
    path = os.path.join(os.path.dirname(sys.executable), "vllm-cpp")
    path = path if os.path.exists(path) else shutil.which("vllm-cpp")
    if path is None:
        pytest.fail("the vllm-cpp console script is not installed (pip install .)", pytrace=False)
    return path


def start_server(cli, model, *flags, log=None, served_name="smol"):
    """``vllm-cpp serve`` on a free port as ``served_name`` (None: the
    server's default name); (process, base URL) once it serves.
    ``log``: a file for its stderr (its log), instead of a pipe."""
    naming = [] if served_name is None else ["--served-model-name", served_name]
    server = subprocess.Popen([cli, "serve", model, "--port", "0", "--max-model-len", "256", *naming, *flags],
                              stdout=subprocess.PIPE, stderr=log or subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
    if not match:
        server.kill()
        pytest.fail(line + (server.stderr.read() if log is None else ""), pytrace=False)
    return server, "http://127.0.0.1:%s" % match.group(1)
