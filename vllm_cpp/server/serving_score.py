"""``POST /score``, ``/v1/score``, ``/rerank``, ``/v1/rerank`` and
``/v2/rerank`` (issue 43), as vLLM serves them: the body goes to the
engine's protocol room whole (``Engine.score_json`` / ``rerank_json``:
parsed, scored and rendered in C++, the code the C ABI's ``vllm_score`` and
``vllm_rerank`` run), on a worker thread so the event loop stays free. The
rerank routes answer one shape that is Jina's and, read by the ``cohere``
client, Cohere v2's. Errors are OpenAI's 400s naming the field."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict

from starlette.requests import Request
from starlette.responses import Response

from .protocol import check_model, invalid


def pair_count(body: Dict[str, Any]) -> int:
    """How many engine requests the body makes (the admission's slots)."""
    for name in ("documents", "text_2"):
        value = body.get(name)
        if isinstance(value, list) and value:
            return len(value)
    return 1


async def _run(server, request: Request, call) -> Response:
    body = await server.read_json(request)
    check_model(body, [server.config.model_name])
    tasks = server.engine.stats()["supported_tasks"]
    if not {"score", "embed", "classify"} & set(tasks):  # a classifier's refusal is the engine's
        raise invalid("model \"%s\" cannot score: the server was started for text generation; start a reranker "
                      "with --runner pooling --hf-overrides '{\"classifier_from_token\": [\"no\", \"yes\"], "
                      "\"is_original_qwen3_reranker\": true}', or an embedding model" % server.config.model_name,
                      param="model")
    body["model"] = server.config.model_name
    release = server.admission.admit(pair_count(body))
    try:
        text = await asyncio.get_running_loop().run_in_executor(None, call, json.dumps(body))
    finally:
        release()
    request.state.usage = json.loads(text)["usage"]
    return Response(text, media_type="application/json")


async def create_score(server, request: Request) -> Response:
    return await _run(server, request, server.engine.score_json)


async def create_rerank(server, request: Request) -> Response:
    return await _run(server, request, server.engine.rerank_json)
