"""The OpenAI-compatible HTTP server (``vllm-cpp serve``), on Starlette and
uvicorn: ``pip install "vllm-cpp[server]"``.

Layers, each depending only on those below it: ``protocol`` (errors and
request validation, no I/O), ``generation`` (engine requests as async
streams with timings), ``metrics`` (Prometheus), ``serving_openai`` (chat and completions, each
the engine's own protocol room behind HTTP), ``api_server`` (the app,
middleware and the uvicorn run).
"""
