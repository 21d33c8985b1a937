"""The per-request Redis round trip of authentication (ResilientRedisCache.get_and_incr_window, sent by
hand on the cache's own connection): the read and the window's count come back together, the window expires,
a connection the server has dropped (Redis restarted, an idle timeout) is replaced on the spot, without a
cool-down and without counting twice, and a forked process opens its own."""

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
    own = backend._own_connection("window")
    own.send_command("CLIENT", "ID")
    client_id = own.read_response()
    redis.Redis.from_url(os.environ["REDIS_URL"]).client_kill_filter(_id=client_id)

    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 2)  # counted once
    assert backend.is_available


def test_a_forked_process_does_not_share_its_parents_connection(backend: ResilientRedisCache) -> None:
    assert backend.get_and_incr_window(None, "window", 60) == (None, 1)
    parents = backend._own_connection("window")
    backend._own = (-1, parents)  # as the child of a fork sees it: another process's connection
    assert backend.get_and_incr_window(None, "window", 60) == (None, 2)
    assert backend._own_connection("window") is not parents
