"""``GET /openapi.json`` and ``GET /docs``: the OpenAPI 3.1 document of the
server's routes, written from the definitions the server validates with.

Each route's request body comes from schema.py's table for it, limited to
the fields protocol.py's tuples accept, with this server's own bounds
(``--max-n``, ``--max-tokens-limit``, ...) applied, so a client generating
requests from the document (schemathesis in the tests) sends what this
server takes. ``OPERATIONS`` describes every route the app serves; the
tests check that the two lists are the same. ``/docs`` is a small page of
the same document (no Swagger UI: it would load from a CDN)."""

from __future__ import annotations

import copy
import html
from typing import Any, Dict, Optional, Sequence, Tuple

from .. import __version__
from . import schema
from .limits import RequestLimits
from .protocol import CHAT_FIELDS, COMPLETION_FIELDS, IGNORED_CHAT_FIELDS, IGNORED_COMPLETION_FIELDS
from .serving_responses import RESPONSES_FIELDS

_JSON = "application/json"
_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type"], "properties": {
        "message": {"type": "string"}, "type": {"type": "string"},
        "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}
_ANTHROPIC_ERROR = {"type": "object", "required": ["type", "error"], "properties": {
    "type": {"const": "error"}, "error": {"type": "object", "required": ["type", "message"], "properties": {
        "type": {"type": "string"}, "message": {"type": "string"}}}}}


def _body(table: Dict[str, schema.FieldSpec], accepted: Sequence[str]) -> Dict[str, Any]:
    """A JSON object of the ``accepted`` fields, each from ``table``."""
    properties, required = {}, []
    for name in accepted:
        spec = table[name]
        value = copy.deepcopy(spec.schema)
        if spec.required:
            required.append(name)
            properties[name] = dict(value, description=spec.description)
            continue
        field: Dict[str, Any] = {"anyOf": [value, {"type": "null"}], "description": spec.description}
        if spec.default is not None:
            field["default"] = spec.default
        properties[name] = field
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _limit(body: Dict[str, Any], name: str, bound: Optional[int], key: str = "maximum") -> None:
    """Lowers ``name``'s ``key`` (maximum, maxItems) to this server's bound."""
    if bound is None or name not in body["properties"]:
        return
    field = body["properties"][name]
    for value in field.get("anyOf", [field]):
        for option in value.get("anyOf", [value]):
            if key == "maximum" and option.get("type") == "integer":
                option["maximum"] = min(option.get("maximum", bound), bound)
            if key == "maxItems" and option.get("type") == "array":
                option["maxItems"] = bound


def _bounded(body: Dict[str, Any], limits: RequestLimits, max_model_len: Optional[int]) -> Dict[str, Any]:
    """``body`` with limits.py's per-request bounds."""
    for name in ("n", "best_of"):
        _limit(body, name, limits.max_n)
    for name in ("max_tokens", "max_completion_tokens"):
        _limit(body, name, limits.max_tokens if limits.max_tokens is not None else max_model_len)
    for name in ("stop", "bad_words"):
        _limit(body, name, limits.max_stop_strings, "maxItems")
    _limit(body, "tools", limits.max_tools, "maxItems")
    return body


# (method, path) -> (summary, request body or None, media type of the 200 answer)
OPERATIONS: Dict[Tuple[str, str], Tuple[str, Optional[str], str]] = {
    ("post", "/v1/chat/completions"): ("Chat completion (JSON, or server-sent events with stream)", "chat",
                                       _JSON),
    ("post", "/v1/completions"): ("Text completion (JSON, or server-sent events with stream)", "completion", _JSON),
    ("get", "/v1/models"): ("The served model", None, _JSON),
    ("get", "/v1/models/{model_id}"): ("One model by id (OpenAI's 404 for another)", None, _JSON),
    ("post", "/tokenize"): ("Token ids of a prompt, or of chat messages rendered by the template", "tokenize",
                            _JSON),
    ("post", "/detokenize"): ("The text of token ids", "detokenize", _JSON),
    ("get", "/tokenizer_info"): ("vLLM's tokenizer description (special tokens, lengths)", None, _JSON),
    ("get", "/health"): ("200 while the engine serves", None, "text/plain"),
    ("get", "/ping"): ("vLLM's health check (as /health)", None, "text/plain"),
    ("post", "/ping"): ("vLLM's health check (as /health)", None, "text/plain"),
    ("get", "/version"): ("The package and engine versions", None, _JSON),
    ("get", "/metrics"): ("Prometheus metrics", None, "text/plain"),
    ("get", "/openapi.json"): ("This document", None, _JSON),
    ("get", "/docs"): ("This document as a page", None, "text/html"),
    # OpenAI's Responses API
    ("post", "/v1/responses"): ("A response (JSON, or server-sent events with stream): OpenAI's Responses API "
                                "over the chat road", "responses", _JSON),
    ("get", "/v1/responses/{response_id}"): ("A stored response (OpenAI's 404 when not kept)", None, _JSON),
    ("delete", "/v1/responses/{response_id}"): ("Forget a stored response", None, _JSON),
    # Anthropic's Messages API: its own body and errors (not described here)
    ("post", "/v1/messages"): ("Anthropic Messages (JSON, or Anthropic's server-sent events with stream)", None,
                               _JSON),
    ("post", "/v1/messages/count_tokens"): ("Anthropic's count of a Messages request's input tokens", None, _JSON),
    # Embeddings (serving_embeddings.py)
    ("post", "/v1/embeddings"): ("Embeddings of texts or token ids (a pooling model: --runner pooling)",
                                 "embeddings", _JSON),
    # Scoring and reranking (serving_score.py)
    ("post", "/score"): ("vLLM's score: text_1 against text_2 (a reranker or an embedding model)", None, _JSON),
    ("post", "/v1/score"): ("vLLM's score: text_1 against text_2 (a reranker or an embedding model)", None, _JSON),
    ("post", "/rerank"): ("Rerank documents for a query (Jina's shape)", None, _JSON),
    ("post", "/v1/rerank"): ("Rerank documents for a query (Jina's shape)", None, _JSON),
    ("post", "/v2/rerank"): ("Rerank documents for a query (Cohere v2's shape)", None, _JSON),
    # Classification and the pooling API (serving_classify.py, serving_pooling.py)
    ("post", "/classify"): ("vLLM's classify: class probabilities and label (a classification model)", None, _JSON),
    ("post", "/pooling"): ("vLLM's pooling API: embed, token_embed or classify output of texts or token ids",
                           None, _JSON),
}


def _embeddings_body(model_name: str) -> Dict[str, Any]:
    """The /v1/embeddings request's fields (the engine validates their values)."""
    ids = {"type": "array", "items": {"type": "integer"}, "minItems": 1}
    properties: Dict[str, Any] = {
        "model": {"anyOf": [{"enum": [model_name]}, {"type": "null"}], "description": "the served model's name"},
        "input": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}, ids,
                            {"type": "array", "items": ids, "minItems": 1}],
                  "description": "a text, texts, token ids or lists of token ids"},
        "encoding_format": {"enum": ["float", "base64"], "description": "float (default) or base64 float32 bytes"},
        "dimensions": {"type": "integer", "minimum": 1, "description": "keep the first N values (Matryoshka models)"},
        "user": {"type": "string", "description": "accepted, unused"},
        "truncate_prompt_tokens": {"type": "integer", "minimum": -1,
                                   "description": "vLLM's: embed each input's last K tokens (-1: max_model_len)"},
        "normalize": {"type": "boolean", "description": "vLLM's: L2-normalise (default: the model's choice)"},
        "add_special_tokens": {"type": "boolean", "description": "vLLM's: the tokenizer's special tokens (default true)"},
        "priority": {"type": "integer", "description": "vLLM's: the priority scheduling policy's"},
    }
    return {"type": "object", "properties": properties, "required": ["input"], "additionalProperties": False}


def _responses_body(model_name: str) -> Dict[str, Any]:
    """The Responses request's fields (the engine validates their values
    and names the field it refuses; serving_responses.py lists them)."""
    properties: Dict[str, Any] = {name: {"description": "OpenAI's Responses field (see docs/serving-reference.md)"}
                                  for name in RESPONSES_FIELDS}
    properties["model"] = {"anyOf": [{"enum": [model_name]}, {"type": "null"}],
                           "description": "the served model's name"}
    properties["input"] = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}],
                           "description": "a user message, or a list of items"}
    return {"type": "object", "properties": properties, "required": ["input"], "additionalProperties": False}


def _bodies(model_name: str, limits: RequestLimits, max_model_len: Optional[int]) -> Dict[str, Dict[str, Any]]:
    bodies = {
        "completion": _bounded(_body(schema.COMPLETION, COMPLETION_FIELDS + tuple(IGNORED_COMPLETION_FIELDS)), limits, max_model_len),
        "chat": _bounded(_body(schema.CHAT, CHAT_FIELDS + tuple(IGNORED_CHAT_FIELDS)), limits, max_model_len),
        "tokenize": _body(schema.TOKENIZE, tuple(schema.TOKENIZE)),
        "detokenize": _body(schema.DETOKENIZE, tuple(schema.DETOKENIZE)),
    }
    for body in bodies.values():  # the one name this server answers to (another is a 404)
        body["properties"]["model"]["anyOf"][0] = {"enum": [model_name]}
    bodies["responses"] = _responses_body(model_name)
    bodies["embeddings"] = _embeddings_body(model_name)
    return bodies


def _error_response(path: str) -> Dict[str, Any]:
    if path.startswith("/v1/messages"):
        return {"description": "an error, in Anthropic's shape", "content": {_JSON: {"schema": _ANTHROPIC_ERROR}}}
    return {"description": "an error, in OpenAI's shape", "content": {_JSON: {"schema": _ERROR}}}


def openapi_document(model_name: str, limits: RequestLimits, max_model_len: Optional[int],
                     api_key: bool) -> Dict[str, Any]:
    bodies = _bodies(model_name, limits, max_model_len)
    paths: Dict[str, Dict[str, Any]] = {}
    for (method, path), (summary, body, media) in OPERATIONS.items():
        operation: Dict[str, Any] = {
            "summary": summary,
            "responses": {"200": {"description": "OK", "content": {media: {"schema": {}}}},
                          "default": _error_response(path)}}
        if body is not None:
            operation["requestBody"] = {"required": True, "content": {_JSON: {"schema": bodies[body]}}}
        for parameter in ("model_id", "response_id"):
            if "{%s}" % parameter in path:
                operation["parameters"] = [{"name": parameter, "in": "path", "required": True,
                                            "schema": {"type": "string"}}]
        if api_key and path.startswith("/v1"):
            operation["security"] = [{"bearer": []}]
        paths.setdefault(path, {})[method] = operation
    document: Dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "vllm-cpp OpenAI-compatible server", "version": __version__},
        "paths": paths,
    }
    if api_key:
        document["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
    return document


def docs_page(document: Dict[str, Any]) -> str:
    """A page listing the document's operations and body fields."""
    rows = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            rows.append("<h2>%s %s</h2><p>%s</p>" % (method.upper(), html.escape(path),
                                                   html.escape(operation["summary"])))
            body = operation.get("requestBody")
            if body is not None:
                properties = body["content"][_JSON]["schema"]["properties"]
                rows.append("<ul>%s</ul>" % "".join(
                    "<li><code>%s</code>: %s</li>" % (html.escape(name), html.escape(field["description"]))
                    for name, field in properties.items()))
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body><h1>%s</h1>"
            "<p>The machine-readable document: <a href=\"/openapi.json\">/openapi.json</a>.</p>%s</body></html>"
            % (html.escape(document["info"]["title"]), html.escape(document["info"]["title"]), "".join(rows)))
