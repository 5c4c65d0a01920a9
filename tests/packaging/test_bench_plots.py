"""bench/plot_results.py makes docs/benchmarks.md's plots from the
checked-in results files: run into a temporary folder, each plot is a PNG,
and every results file names its machine, date, versions and command."""

import glob
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
SCRIPT = ROOT / "bench" / "plot_results.py"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="not a source checkout (no bench/plot_results.py)")


def test_every_results_file_says_how_it_was_made():
    paths = sorted(glob.glob(str(RESULTS / "*.json")))
    assert len(paths) >= 6
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for key in ("comparison", "machine", "date", "versions", "command", "rows"):
            assert doc.get(key), (os.path.basename(path), key)


def test_plots_are_made(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install '.[test]' installs it)")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == ["concurrency.png", "formats.png", "speculative.png", "ttft.png"]
    for name in made:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The docs show the same plots.
    for name in made:
        assert (ROOT / "docs" / "images" / name).is_file(), name
