"""The repository stands on its own: no committed file names an absolute
path of a machine (a developer's checkout, a CI runner, a home directory)
or reaches for a document outside the repository. Fixtures beside the
project are found as ../shared/... relative to the repository root."""

import importlib.metadata
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Absolute paths that only exist on some machine. System paths a program may
# legitimately name (/usr, /proc, /dev, /tmp, /etc) are not in the list.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|farm|root|home|Users|mnt|opt|srv|var/lib)/[\w.-]+")

# Files that quote a published text verbatim, and the paths that text names:
# gpt-oss's chat template (and transformers' renders of it) tells the model
# the folder where its python tool keeps files. Not a path of any machine of
# ours. (Spelled in two pieces so this file does not name it itself.)
GPT_OSS_TOOL_FOLDER = "/" + "mnt/data"
QUOTED_PATHS = {
    "tests/golden/tiny_moe/gpt-oss.hf/chat_template.jinja": {GPT_OSS_TOOL_FOLDER},
    "tests/golden/tiny_moe/gpt-oss_chat.json": {GPT_OSS_TOOL_FOLDER},
    "tests/fixtures/llama_cpp_templates/openai-gpt-oss-120b.jinja": {GPT_OSS_TOOL_FOLDER},
    # A path inside the container image (Debian's package lists, removed after apt-get).
    "Containerfile": {"/" + "var/lib/apt"},
}


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
        quoted = QUOTED_PATHS.get(name, set())
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if any(match.group(0) not in quoted for match in MACHINE_PATH.finditer(line)):
                offenders.append("%s:%d: %s" % (name, number, line.strip()[:120]))
    assert not offenders, "absolute machine paths:\n" + "\n".join(offenders)


def test_license_is_shipped():
    """The MIT licence is in the installed metadata and its file in the
    distribution (so also in a wheel, without the checkout)."""
    dist = importlib.metadata.distribution("vllm-cpp")
    assert dist.metadata["License"] == "MIT"
    license_files = [f for f in dist.files or () if f.name.startswith("LICENSE")]
    assert license_files and "MIT License" in license_files[0].read_text()


MARKDOWN_REFERENCE = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md)\b")


def test_every_markdown_document_named_is_in_the_repository():
    """A `*.md` a file names exists: relative to the naming file, to the
    repository root, or (a bare name) somewhere in the repository."""
    files = committed_files()
    basenames = {os.path.basename(name) for name in files}
    missing = []
    for name in files:
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path) or os.path.getsize(path) > 4 << 20 or name.startswith("tests/golden/"):
            continue
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        for ref in set(MARKDOWN_REFERENCE.findall(text)):
            here = os.path.normpath(os.path.join(os.path.dirname(path), ref))
            if os.path.isfile(here) or os.path.isfile(os.path.join(ROOT, ref)):
                continue
            if name == "mkdocs.yml" and os.path.isfile(os.path.join(ROOT, "docs", ref)):
                continue  # the site's nav names pages relative to its docs_dir
            if "/" not in ref and ref in basenames:
                continue
            missing.append("%s names %s" % (name, ref))
    assert not missing, "documents named but not in the repository:\n" + "\n".join(missing)


def test_every_c_entry_point_is_documented():
    """The v10 entry points are in docs/c-abi-v10.md; each additive one
    (after the header's marker) has a comment in vllm.h opening its
    paragraph (vllm_tokens_free shares vllm_tokenize's)."""
    header_path = os.path.join(ROOT, "vllm_cpp", "include", "vllm.h")
    doc_path = os.path.join(ROOT, "docs", "c-abi-v10.md")
    if not os.path.isfile(doc_path):
        pytest.skip("not a source checkout (no docs/c-abi-v10.md)")
    with open(header_path, encoding="utf-8") as f:
        header = f.read()
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    v10, additive = header.split("Additive entry points", 1)
    undocumented = [fn for fn in re.findall(r"VLLM_API\s[^;(]*?\b(vllm_\w+)\s*\(", v10) if fn not in doc]
    # Additive: every paragraph (text between blank lines) that declares an
    # entry point opens with its comment.
    for paragraph in re.split(r"\n\s*\n", additive):
        if not paragraph.lstrip().startswith("/*"):
            undocumented += re.findall(r"VLLM_API\s[^;(]*?\b(vllm_\w+)\s*\(", paragraph)
    assert not undocumented, "entry points without documentation: %s" % undocumented


def test_ci_runs_the_readme_test_command():
    """.ci/run runs exactly the README's test command ("Set-up", command 2)."""
    readme, ci = os.path.join(ROOT, "README.md"), os.path.join(ROOT, ".ci", "run")
    if not (os.path.isfile(readme) and os.path.isfile(ci)):
        pytest.skip("not a source checkout (no README.md or .ci/run)")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"\*\*2\. Run the tests:\*\*\s*\n\s*```\n(.+?)\n```", text)
    assert match, "README.md has no \"2. Run the tests\" command"
    with open(ci, encoding="utf-8") as f:
        commands = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    assert match.group(1) in commands
