"""``--chat-template FILE|TEXT``: a chat template given as a file or as its
text, resolved the way vLLM's ``load_chat_template`` resolves it; and the
check for a model that has no template (the engine then renders a plain
``user: ...`` / ``assistant: `` fallback, which the user should hear about)."""

from __future__ import annotations

import os
from typing import Union

__all__ = ["load_chat_template", "uses_plain_fallback", "FALLBACK_WARNING"]

#: What a chat on a model without a chat template is told, once.
FALLBACK_WARNING = ("this model has no chat template: chat messages are rendered in a plain "
                    "'user: ...' / 'assistant: ' format, which the model may not follow; "
                    "give its template with --chat-template FILE_OR_TEXT (LLM(chat_template=...))")

# The engine's fallback for a model without a template renders each message
# as "role: content\n" and then "assistant: " (chat/chat_template.cpp).
_PROBE = "vllm-cpp probe"

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


def uses_plain_fallback(engine) -> bool:
    """True when ``engine`` renders chats with the plain fallback, i.e. the
    model has no chat template and none was given: a one-message chat then
    tokenizes exactly as the fallback's text does. (The C ABI has no call
    that says whether a template is present, so the rendering is compared.)"""
    rendered = engine.tokenize_chat({"messages": [{"role": "user", "content": _PROBE}]})
    return rendered == engine.tokenize("user: %s\nassistant: " % _PROBE, add_special_tokens=False)
