"""``POST /v1/embeddings`` (issue 43): the body goes to the engine's protocol
room whole (``Engine.embeddings_json``: parsed, tokenized, pooled and
rendered in C++, the same code the C ABI's ``vllm_embeddings`` runs), on a
worker thread so the event loop stays free; this file only admits it,
checks the model name and records its usage. Its errors are OpenAI's 400s
naming the field."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict

from starlette.requests import Request
from starlette.responses import Response

from .protocol import check_model, invalid


def input_count(body: Dict[str, Any]) -> int:
    """How many engine requests the body's ``input`` makes (the admission's slots)."""
    value = body.get("input")
    if isinstance(value, list) and value and not isinstance(value[0], int):
        return len(value)
    return 1


async def create_embedding(server, request: Request) -> Response:
    body = await server.read_json(request)
    check_model(body, [server.config.model_name])
    tasks = server.engine.stats()["supported_tasks"]
    if not {"embed", "score", "classify"} & set(tasks):  # a head's refusal is the engine's, naming it
        raise invalid("model \"%s\" does not serve embeddings: the server was started for text generation; "
                      "start it with --runner pooling (or --convert embed) to serve /v1/embeddings"
                      % server.config.model_name, param="model")
    return await run_pooling_call(server, request, body, server.engine.embeddings_json)


async def run_pooling_call(server, request: Request, body: Dict[str, Any], call) -> Response:
    """Runs a pooling route's body (its model checked) through ``call``, the
    engine's protocol room, on a worker thread, admitted as its inputs' count."""
    body["model"] = server.config.model_name
    release = server.admission.admit(input_count(body))
    try:
        text = await asyncio.get_running_loop().run_in_executor(None, call, json.dumps(body))
    finally:
        release()
    usage = json.loads(text)["usage"]
    request.state.usage = usage
    return Response(text, media_type="application/json")
