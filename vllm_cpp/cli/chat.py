"""``vllm-cpp chat MODEL``: an interactive chat in the terminal.

Each turn is an OpenAI chat request with the whole conversation so far,
rendered by the model's chat template and streamed as it is generated.
Ctrl-C during a reply stops that reply (the request is cancelled); Ctrl-D,
or ``/exit``, at the prompt ends the chat.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List

from ..chat_template import FALLBACK_WARNING, uses_plain_fallback
from ..engine import Engine
from .engine_args import sampling_fields

PROMPT = ">>> "


def _reply(engine: Engine, request: Dict[str, Any]) -> str:
    parts: List[str] = []
    stream = engine.chat_stream(request)
    try:
        for chunk in stream:
            for choice in chunk["choices"]:
                text = choice["delta"].get("content") or ""
                if text:
                    parts.append(text)
                    sys.stdout.write(text)
                    sys.stdout.flush()
    except KeyboardInterrupt:
        stream.close()  # cancels the request
        sys.stdout.write(" [interrupted]")
    sys.stdout.write("\n")
    return "".join(parts)


def run_chat(engine: Engine, args: argparse.Namespace) -> int:
    messages: List[Dict[str, str]] = []
    if args.system:
        messages.append({"role": "system", "content": args.system})
    if uses_plain_fallback(engine):
        print("vllm-cpp chat: warning: %s" % FALLBACK_WARNING, file=sys.stderr)
    print("Chatting with %s. Type /exit or press Ctrl-D to leave." % args.model)
    while True:
        try:
            line = input(PROMPT)
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if line.strip() == "/exit":
            return 0
        if not line.strip():
            continue
        messages.append({"role": "user", "content": line})
        answer = _reply(engine, dict(sampling_fields(args), messages=messages))
        messages.append({"role": "assistant", "content": answer})
