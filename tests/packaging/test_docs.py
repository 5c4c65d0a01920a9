"""The documentation site builds and its examples run.

`mkdocs build --strict` (mkdocs.yml, sources in docs/) fails on a broken
link, a missing page or an API reference entry that names nothing; it skips,
saying so, where MkDocs is not installed (the `[test]` extra installs it).

The Python examples of the docs and of README.md run here, so they cannot
rot. Each page's ```python blocks run in order as one script in a fresh
interpreter (a page reads as a tutorial: later blocks use earlier names),
after the page's hidden setup (`<!-- docs-test: setup ... -->`). A block
preceded by `<!-- docs-test: server -->` talks to `vllm-cpp serve`: it runs
against a server this module starts on SmolLM2 (model name `smollm2`), with
the docs' `http://127.0.0.1:8000` replaced by its address. A block preceded
by `<!-- docs-test: skip REASON -->` is not run; the reason is required."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DOCS_URL = "http://127.0.0.1:8000"

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!-- docs-test: (server|skip)(?: ([^\n]*?))? -->\s*\Z")
SETUP = re.compile(r"<!-- docs-test: setup\n(.*?)-->", re.S)


def documents():
    """README.md and the docs' pages, where this is a source checkout (a
    copy of tests/ run against a wheel has neither: nothing to run)."""
    readme = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    return readme + (sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else [])


def examples(path):
    """(setup, [in-process blocks], [server blocks], [(skipped block, reason)])."""
    text = path.read_text(encoding="utf-8")
    setup = "\n".join(SETUP.findall(text))
    local, server, skipped = [], [], []
    for match in FENCE.finditer(text):
        mark = MARK.search(text[:match.start()][-200:])
        code = match.group(1)
        if mark is None:
            local.append(code)
        elif mark.group(1) == "server":
            server.append(code)
        else:
            skipped.append((code, mark.group(2)))
    return setup, local, server, skipped


def run_script(source, tmp_path, name):
    """Run `source` in a fresh interpreter from an empty directory (so the
    installed package is imported, as a reader's script would)."""
    script = tmp_path / (name + ".py")
    script.write_text(source, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.returncode == 0, "%s failed:\n--- script\n%s\n--- stderr\n%s" % (name, source, proc.stderr[-4000:])
    return proc.stdout


PAGES = [p for p in documents() if examples(p)[1] or examples(p)[2]]
IDS = [str(p.relative_to(ROOT)) for p in PAGES]


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (pip install '.[test]' installs it)")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed")
    if not (ROOT / "mkdocs.yml").is_file():
        pytest.skip("not a source checkout (no mkdocs.yml)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    for page in ("index.html", "getting-started/index.html", "api-reference/index.html", "c-abi/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    reference = (tmp_path / "site" / "api-reference" / "index.html").read_text(encoding="utf-8")
    assert "vllm_cpp.llm.LLM" in reference and "vllm_cpp.engine.Engine" in reference  # generated, not copied
    abi = (tmp_path / "site" / "c-abi" / "index.html").read_text(encoding="utf-8")
    assert "vllm_request_wait_for" in abi and "vllm_engine_load" in abi  # additive and v10 entry points


def test_every_skipped_example_says_why():
    unexplained = ["%s: %s" % (p.relative_to(ROOT), code.splitlines()[0])
                   for p in documents() for code, reason in examples(p)[3] if not reason]
    assert not unexplained, "examples skipped without a reason:\n" + "\n".join(unexplained)


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_examples_run(page, tmp_path, smollm2_path):
    setup, local, _, _ = examples(page)
    if not local:
        pytest.skip("no in-process examples on this page")
    run_script(setup + "\n" + "\n\n".join(local), tmp_path, page.stem)


@pytest.fixture(scope="module")
def docs_server(smollm2_path):
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from server_harness import running_server
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=1024) as engine:
        with running_server(engine) as url:
            yield url


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_server_examples_run(page, tmp_path, request):
    _, _, server, _ = examples(page)
    if not server:
        pytest.skip("no server examples on this page")
    pytest.importorskip("openai", reason="the server examples use the openai client")
    url = request.getfixturevalue("docs_server")
    run_script("\n\n".join(block.replace(DOCS_URL, url) for block in server), tmp_path, page.stem + "_server")


def test_readme_is_a_front_door():
    """README.md stays a front door (issue 39): at most about 250 lines,
    with the set-up commands and links into the docs, where the details live."""
    readme = ROOT / "README.md"
    if not readme.is_file() or not DOCS.is_dir():
        pytest.skip("not a source checkout (no README.md or docs/)")
    text = readme.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "## Set-up" in text and "**2. Run the tests:**" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
