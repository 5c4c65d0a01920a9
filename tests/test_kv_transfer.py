"""KV transfer connectors (issue 13): computed prefixes shared between
engines through a directory (SharedStorageConnector) or Redis
(RedisConnector).

The native program test_kv_transfer checks the parts that need no model:
the config's refusals, the block record (truncated, corrupt and foreign
records refused), the directory store under concurrent writers and an
unwritable directory, the I/O worker, and the Redis client against a
server that is absent or silent, and (where redis-server is installed)
against a real one.
"""

import pytest

from kv_stores import REDIS_MISSING, RedisServer
from native_build import build_native_tests
from test_native import run_program


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


@pytest.fixture(scope="module")
def redis_server():
    if REDIS_MISSING:
        pytest.skip(REDIS_MISSING)
    server = RedisServer()
    yield server
    server.stop()


@pytest.mark.timeout(300)
def test_native_kv_transfer(build):
    run_program(build, "test_kv_transfer")


@pytest.mark.timeout(300)
def test_native_kv_transfer_with_redis(build, redis_server):
    run_program(build, "test_kv_transfer", redis_server.port)
