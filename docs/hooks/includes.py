"""MkDocs hook: text kept in one place elsewhere in the repository, put
into the docs pages at build time.

`<!-- include: PATH -->` puts a Markdown file of the repository (its first
heading dropped, the others one level down) into a page: the engine's map
(third_party/vllm.cpp/README.md) and the v10 contract (docs/c-abi-v10.md)
stay single documents beside the code they describe.

`<!-- additive-entry-points -->`: the C ABI page's additive entry points,
generated from vllm.h.

The header is the one copy of the ABI; its additive part (after the
"Additive entry points" marker) documents each function in the comment that
opens its paragraph. Rendering those paragraphs at build time puts the
ownership rules of every pointer on the contract page without a second,
hand-copied text that could drift from the header."""

import os
import re

MARKER = "<!-- additive-entry-points -->"
INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.M)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
HEADER = os.path.join(ROOT, "vllm_cpp", "include", "vllm.h")


def demoted(markdown_text):
    """The text without its first heading, other headings one level lower
    (code fences left alone)."""
    out, in_fence, dropped = [], False, False
    for line in markdown_text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            if not dropped:
                dropped = True
                continue
            line = "#" + line
        out.append(line)
    return "\n".join(out) + "\n"


def include(match):
    with open(os.path.join(ROOT, match.group(1)), encoding="utf-8") as f:
        return demoted(f.read())
ENTRY_POINT = re.compile(r"VLLM_API\s[^;(]*?\b(vllm_\w+)\s*\(")
SECTION = re.compile(r"^/\*\s*-+\s*(.*?)\s*-*\s*(?:\n|\*/)", re.S)


def additive_sections(header_text):
    """Yield (section title or None, [(names, paragraph)]) in header order."""
    _, additive = header_text.split("Additive entry points", 1)
    additive = additive.split("\n", 1)[1]
    title, items = "Additive entry points", []
    for paragraph in re.split(r"\n\s*\n", additive):
        text = paragraph.strip()
        if not text or text.startswith("#"):
            continue
        heading = SECTION.match(text)
        if heading and not ENTRY_POINT.search(text):
            if items:
                yield title, items
            title, items = heading.group(1).rstrip("- "), [(None, text)]
            continue
        names = ENTRY_POINT.findall(text)
        if names or text.startswith("/*") or text.startswith("typedef"):
            items.append((names, text))
    if items:
        yield title, items


def render(header_text):
    out = []
    for title, items in additive_sections(header_text):
        out.append("### %s\n" % title)
        for names, text in items:
            if names:
                out.append("#### " + ", ".join("`%s`" % n for n in names) + "\n")
            out.append("```c\n%s\n```\n" % text)
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    markdown = INCLUDE.sub(include, markdown)
    if MARKER in markdown:
        with open(HEADER, encoding="utf-8") as f:
            markdown = markdown.replace(MARKER, render(f.read()))
    return markdown
