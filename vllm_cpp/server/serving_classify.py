"""``POST /classify`` (issue 43), as vLLM serves it: the body (``input`` as
/v1/embeddings takes it) goes to the engine's protocol room whole
(``Engine.classify_json``: parsed, classified and rendered in C++, the code
the C ABI's ``vllm_classify`` runs), on a worker thread. A model without a
classification head is refused by the engine, naming the task; errors are
OpenAI's 400s naming the field."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .protocol import check_model
from .serving_embeddings import run_pooling_call


async def create_classify(server, request: Request) -> Response:
    body = await server.read_json(request)
    check_model(body, [server.config.model_name])
    return await run_pooling_call(server, request, body, server.engine.classify_json)
