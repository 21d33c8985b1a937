"""The per-request Redis round trip of authentication (ResilientRedisCache.get_and_incr_window, sent by
hand on a pooled connection): the read and the window's count come back together, the window expires, and a
pooled connection the server has dropped (Redis restarted, an idle timeout) is replaced on the spot, without
a cool-down and without counting twice."""

from __future__ import annotations

import os
import uuid

import pytest
import redis

from checkpoints.cache import ResilientRedisCache

pytestmark = pytest.mark.redis


@pytest.fixture
def backend() -> ResilientRedisCache:
    return ResilientRedisCache(
        os.environ.get("REDIS_URL", ""),
        {"KEY_PREFIX": f"pipeline-{uuid.uuid4().hex}", "OPTIONS": {"socket_timeout": 0.5}},
    )


def test_it_reads_and_counts_in_one_round_trip(backend: ResilientRedisCache) -> None:
    backend.set("generation", "g1", timeout=60)
    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 1)
    assert backend.get_and_incr_window("missing", "window", 60) == (None, 2)
    assert backend.get_and_incr_window(None, "window", 60) == (None, 3)
    raw = redis.Redis.from_url(os.environ["REDIS_URL"])
    ttl = raw.ttl(backend.make_and_validate_key("window"))
    assert 0 < ttl <= 60  # the window is created with its timeout, and counting does not extend it


def test_a_connection_the_server_dropped_is_replaced_at_once(backend: ResilientRedisCache) -> None:
    backend.set("generation", "g1", timeout=60)
    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 1)
    pool = backend._cache.get_client(None, write=True).connection_pool
    pooled = pool.get_connection()
    pooled.send_command("CLIENT", "ID")
    client_id = pooled.read_response()
    pool.release(pooled)
    redis.Redis.from_url(os.environ["REDIS_URL"]).client_kill_filter(_id=client_id)

    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 2)  # counted once
    assert backend.is_available
