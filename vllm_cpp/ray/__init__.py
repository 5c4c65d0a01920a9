"""Ray Serve integration (the ``[ray]`` extra): engine replicas behind the
server's own Starlette app, a prefix-affinity request router, and the
application builders ``vllm-cpp serve --replicas`` and ``serve run`` use
(docs/ray-serve.md).

Nothing here imports Ray at package import time: ``forwarding`` is plain
ASGI, and ``deployment`` / ``prefix_router`` import Ray when they are
imported, so a missing extra is one clear ImportError naming it."""


def require_ray():
    """Import Ray Serve, or raise ImportError naming the extra to install."""
    try:
        from ray import serve
    except ImportError as exc:
        raise ImportError("the Ray Serve integration needs its extra: pip install \"vllm-cpp[ray]\" (%s)"
                          % exc) from None
    return serve
