"""Settings every test module may import. They live here rather than in
tests/conftest.py because a module cannot import from ``conftest`` reliably:
tests/serving/ has a conftest.py of its own, and whichever was imported last
answers to that name."""

import os

#: Small enough to keep the KV cache light, large enough for every test prompt.
ENGINE_MAX_MODEL_LEN = 512

#: How much longer than usual a test may take: tests/support/sanitize.py sets
#: $VLLM_CPP_TIMEOUT_FACTOR, since an instrumented engine runs several times
#: slower and a timeout there says nothing about a hang. Stretches every
#: test's timeout, and the waits on subprocesses that tests scale by it.
TIMEOUT_FACTOR = float(os.environ.get("VLLM_CPP_TIMEOUT_FACTOR", "1"))
