"""Renders chat templates the way Hugging Face transformers does, with jinja2 only.

transformers compiles a chat template with
``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, jinja2.ext.loopcontrols])``, replaces the
``tojson`` filter with ``json.dumps(ensure_ascii=False, indent=..., separators=...,
sort_keys=False)`` (key order kept, no HTML escaping), and adds the globals
``raise_exception`` (raises jinja2's TemplateError) and ``strftime_now``. The
context is ``messages``, ``tools`` (None when there are none),
``add_generation_prompt``, ``bos_token``, ``eos_token`` and the
``chat_template_kwargs``. This module rebuilds that environment so the engine's
renderings can be compared with it without importing transformers.

``normalize_messages`` mirrors what vLLM does to OpenAI messages before an HF
template sees them (null content as "", text-part arrays joined with "\\n",
assistant tool-call arguments as mappings, unused fields dropped).
"""

import copy
import json
from datetime import datetime
from functools import lru_cache

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """transformers' ``{% generation %}`` block: renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(format):
    return datetime.now().strftime(format)


@lru_cache(maxsize=None)
def _environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@lru_cache(maxsize=256)
def compile_template(source):
    return _environment().from_string(source)


def render(source, messages, tools=None, add_generation_prompt=False, bos_token="", eos_token="", kwargs=None):
    """The rendering transformers' apply_chat_template(tokenize=False) produces."""
    context = dict(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt,
                   bos_token=bos_token, eos_token=eos_token)
    context.update(kwargs or {})
    return compile_template(source).render(**context)


def render_case(case):
    """{"ok": True, "text": ...} or {"ok": False, "error": <the exception's message>, "type": <its class>}."""
    try:
        source = case["source"] if "source" in case else open(case["template"], encoding="utf-8").read()
        messages = case.get("messages")
        if case.get("normalize"):
            messages = normalize_messages(messages)
        text = render(source, messages, case.get("tools"), case.get("add_generation_prompt", False),
                      case.get("bos", ""), case.get("eos", ""), case.get("kwargs"))
        return {"ok": True, "text": text}
    except Exception as e:  # every failure is compared with the engine's
        return {"ok": False, "error": str(e), "type": type(e).__name__}


def normalize_messages(messages):
    """vLLM's preparation of OpenAI messages for an HF template
    (vllm/entrypoints/chat_utils.py, "string" content format): each message
    becomes role and content (a string: null or absent is "", text parts
    joined with "\n") plus assistant tool_calls (arguments as a mapping:
    a JSON string parsed, null or "" as {}) and reasoning, a tool message's
    tool_call_id, and a string name; everything else is dropped."""
    out = []
    for message in copy.deepcopy(messages):
        role = message["role"]
        content = message.get("content")
        if content is None:
            content = ""
        elif isinstance(content, list):
            content = "\n".join(part if isinstance(part, str) else
                                part["refusal"] if part.get("type") == "refusal" else part["text"]
                                for part in content)
        normalized = {"role": role, "content": content}
        if role == "assistant":
            if message.get("tool_calls") is not None:
                normalized["tool_calls"] = message["tool_calls"]
                for call in normalized["tool_calls"]:
                    arguments = call["function"].get("arguments")
                    if not arguments:
                        call["function"]["arguments"] = {}
                    elif isinstance(arguments, str):
                        call["function"]["arguments"] = json.loads(arguments)
            reasoning = message.get("reasoning") or message.get("reasoning_content")
            if reasoning is not None:
                normalized["reasoning"] = normalized["reasoning_content"] = reasoning
        elif role == "tool" and message.get("tool_call_id") is not None:
            normalized["tool_call_id"] = message["tool_call_id"]
        if isinstance(message.get("name"), str):
            normalized["name"] = message["name"]
        out.append(normalized)
    return out
