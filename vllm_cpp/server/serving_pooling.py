"""``POST /pooling`` (issue 43), vLLM's Pooling API: the /v1/embeddings
body plus ``task`` (embed, token_embed: ALL / STEP token pooling, classify)
goes to the engine's protocol room whole (``Engine.pooling_json``, the code
the C ABI's ``vllm_pooling`` runs), on a worker thread. Errors are OpenAI's
400s naming the field."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .protocol import check_model, invalid
from .serving_embeddings import run_pooling_call


async def create_pooling(server, request: Request) -> Response:
    body = await server.read_json(request)
    check_model(body, [server.config.model_name])
    if not {"embed", "score", "classify"} & set(server.engine.stats()["supported_tasks"]):
        raise invalid("model \"%s\" does not serve the pooling API: the server was started for text generation; "
                      "start it with --runner pooling" % server.config.model_name, param="model")
    return await run_pooling_call(server, request, body, server.engine.pooling_json)
