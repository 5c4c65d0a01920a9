"""Per-request bounds of the HTTP server: what one client may ask of the
shared engine (and, in ConnectionLimits, how long and how many of the
server's connections it may hold).

The engine accepts anything it can represent (up to 128 choices, int32
token counts, any number of stop strings and tools); a server facing
untrusted clients bounds them lower, each a flag of ``vllm-cpp serve``.
Checked on the raw body, before the request is parsed further or reaches
the engine, so a refusal costs nothing and names the field and its flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from .protocol import invalid


@dataclass(frozen=True)
class RequestLimits:
    """The defaults follow OpenAI's published bounds where it has them
    (128 tools) and vLLM's behaviour elsewhere (max_tokens up to the
    model's length)."""

    max_n: int = 16                     # --max-n: choices per prompt (n, best_of)
    max_tokens: Optional[int] = None    # --max-tokens-limit: None = the model's max_model_len
    max_stop_strings: int = 16          # --max-stop-strings
    max_stop_string_bytes: int = 4096   # --max-stop-string-bytes: UTF-8 bytes of one stop string
    max_tools: int = 128                # --max-tools


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may hold of the server (see connections.py):
    seconds for a request's headers and for its whole body (each past it:
    408, the connection closed), and connections open per client address
    (past it: 429). The timeouts are Apache's and nginx's order of
    magnitude; 256 connections is 8x the concurrency real clients were
    measured at, far under the process's file descriptor limit."""

    header_timeout: float = 30.0        # --request-header-timeout
    body_timeout: float = 60.0          # --request-body-timeout
    max_per_client: int = 256           # --max-connections-per-client


def _over(name: str, value: int, bound: int, flag: str):
    return invalid("'%s' is %d, more than this server allows (%d; set by %s)" % (name, value, bound, flag),
                   param=name)


def check_limits(body: Dict[str, Any], limits: RequestLimits, max_model_len: Optional[int]) -> None:
    """Refuses (400, naming the field and the flag) a body past a bound.
    Values of the wrong type are left to the field's own validation."""
    for name in ("n", "best_of"):
        value = body.get(name)
        if isinstance(value, int) and value > limits.max_n:
            raise _over(name, value, limits.max_n, "--max-n")
    bound = limits.max_tokens if limits.max_tokens is not None else max_model_len
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if bound is not None and isinstance(value, int) and value > bound:
            flag = "--max-tokens-limit" if limits.max_tokens is not None else "--max-model-len"
            raise _over(name, value, bound, flag)
    # Stop strings and vLLM's bad_words are both checked at every token.
    for name in ("stop", "bad_words"):
        value = body.get(name)
        strings = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if len(strings) > limits.max_stop_strings:
            raise invalid("'%s' has %d strings, more than this server allows (%d; set by --max-stop-strings)"
                          % (name, len(strings), limits.max_stop_strings), param=name)
        for s in strings:
            if isinstance(s, str) and len(s.encode("utf-8", "surrogatepass")) > limits.max_stop_string_bytes:
                raise invalid("a '%s' string is %d bytes, more than this server allows (%d; set by "
                              "--max-stop-string-bytes)" % (name, len(s.encode("utf-8", "surrogatepass")),
                                                            limits.max_stop_string_bytes), param=name)
    for name in ("tools", "functions"):  # functions: the legacy API's tools
        tools = body.get(name)
        if isinstance(tools, list) and len(tools) > limits.max_tools:
            raise invalid("'%s' has %d entries, more than this server allows (%d; set by --max-tools)"
                          % (name, len(tools), limits.max_tools), param=name)


def cap_default_max_tokens(body: Dict[str, Any], limits: RequestLimits, endpoint_default: Optional[int]) -> None:
    """With --max-tokens-limit set, a body naming no max_tokens gets the
    smaller of the limit and the endpoint's own default (None: the rest of
    the model's length, as chat has it), so leaving the field out cannot
    step past the bound the flag sets."""
    if limits.max_tokens is None or any(body.get(k) is not None for k in ("max_tokens", "max_completion_tokens")):
        return
    body["max_tokens"] = limits.max_tokens if endpoint_default is None else min(endpoint_default, limits.max_tokens)
