"""The engine's include graph points down its layer order.

Every `#include "dir/..."` in third_party/vllm.cpp/src must name a file of
its own folder's layer or of a lower one, in the order the engine README
writes down ("Layers"); a new folder must be placed in that order before it
is used. Skipped without the engine's sources (a wheel's copy of tests/).
"""

import pathlib
import re

import pytest

from native_build import ENGINE, SOURCE_TREE_MISSING

#: Lowest first. vllm.h (the C ABI's types) sits below all of them.
LAYERS = ["util", "dtype", "kernels", "formats", "tokenizer", "core", "kv_cache", "model", "vision", "structured", "sample", "spec_decode", "kv_transfer", "engine", "chat", "api"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

pytestmark = pytest.mark.skipif(SOURCE_TREE_MISSING is not None, reason=SOURCE_TREE_MISSING or "")


def layer_of(relative_path):
    return pathlib.PurePosixPath(relative_path).parts[0]


def include_edges():
    """(including file, included path) for every quoted include under src/."""
    src = ENGINE / "src"
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
            yield path.relative_to(src).as_posix(), target


def upward_edges(edges):
    found = []
    for source, target in edges:
        if target == "vllm.h":
            continue
        low, high = layer_of(target), layer_of(source)
        if low not in LAYERS or high not in LAYERS:
            found.append(f"{source} -> {target}: folder not in the layer order")
        elif LAYERS.index(low) > LAYERS.index(high):
            found.append(f"{source} -> {target}: {high} must not depend on {low}")
    return found


def test_every_include_points_down():
    edges = list(include_edges())
    assert len(edges) > 300  # the scan saw the engine
    assert upward_edges(edges) == []


def test_an_upward_edge_is_reported():
    # The check itself: core including engine is what issue 16 removed.
    assert upward_edges([("core/scheduler.h", "engine/request.h")]) == [
        "core/scheduler.h -> engine/request.h: core must not depend on engine"]
    assert upward_edges([("engine/x.h", "core/y.h"), ("api/c_api.cpp", "vllm.h")]) == []
    assert upward_edges([("newdir/a.h", "util/error.h")]) == ["newdir/a.h -> util/error.h: folder not in the layer order"]


def test_the_readme_states_the_same_order():
    readme = (ENGINE / "README.md").read_text(encoding="utf-8")
    assert " < ".join(LAYERS) in readme
