"""The serving tests' shared clients of a module's server: each module
defines ``base_url`` (the server it starts, module-scoped) and gets the
``openai`` client and a plain ``httpx`` client of it from here; a module
whose server needs other headers (an API key) defines its own."""

import pytest


@pytest.fixture(scope="module")
def client(base_url):
    """The openai SDK's client of the module's server (no retries: a failure shows)."""
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install openai)")
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def http(base_url):
    """A plain HTTP client of the module's server."""
    httpx = pytest.importorskip("httpx")
    with httpx.Client(base_url=base_url, timeout=120) as c:
        yield c
