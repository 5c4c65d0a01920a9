"""``--chat-template FILE|TEXT``: a chat template given as a file or as its
text, resolved the way vLLM's ``load_chat_template`` resolves it."""

from __future__ import annotations

import os
from typing import Union

__all__ = ["load_chat_template"]

# Text with none of these cannot be a Jinja template, so such a value that
# does not open is taken for a mistyped path rather than a template.
_JINJA_CHARS = "{}\n"


def load_chat_template(value: Union[str, "os.PathLike[str]"]) -> str:
    """The template text for ``value``: the contents of the file it names,
    else ``value`` itself when it looks like a template (it has ``{``, ``}``
    or a newline). An ``os.PathLike`` is always a file. Raises ``ValueError``
    for a value that is neither (naming it and why the file did not open),
    ``OSError`` for a path object that does not open."""
    try:
        with open(value, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        if not isinstance(value, str):
            raise
        if not any(c in value for c in _JINJA_CHARS):
            raise ValueError("the chat template %r is neither a file that opens (%s) nor template text"
                             % (value, exc.strerror or exc)) from None
        return value
