"""The repository stands on its own: no committed file names an absolute
path of a machine (a developer's checkout, a CI runner, a home directory)
or reaches for a document outside the repository. Fixtures beside the
project are found as ../shared/... relative to the repository root."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Absolute paths that only exist on some machine. System paths a program may
# legitimately name (/usr, /proc, /dev, /tmp, /etc) are not in the list.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|farm|root|home|Users|mnt|opt|srv|var/lib)/[\w.-]+")


def committed_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (the test reads the committed file list)")
    return [name for name in out.stdout.decode().split("\0") if name]


def test_no_file_names_an_absolute_machine_path():
    offenders = []
    for name in committed_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path) or os.path.getsize(path) > 4 << 20:
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary fixture
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                offenders.append("%s:%d: %s" % (name, number, line.strip()[:120]))
    assert not offenders, "absolute machine paths:\n" + "\n".join(offenders)


def test_license_is_shipped():
    assert os.path.isfile(os.path.join(ROOT, "LICENSE"))
