"""The per-request Redis round trip of authentication (ResilientRedisCache.get_and_incr_window, a redis-py
pipeline on the cache's own client): the read and the window's count come back together, the window expires,
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
    client_id = backend.client.client_id()  # the pool's one connection, which the next call takes again
    assert redis.Redis.from_url(os.environ["REDIS_URL"]).client_kill_filter(_id=str(client_id)) == 1

    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 2)  # counted once
    assert backend.is_available
    assert backend.client.client_id() != client_id


def test_a_forked_process_does_not_share_its_parents_connection(backend: ResilientRedisCache) -> None:
    assert backend.get_and_incr_window(None, "window", 60) == (None, 1)
    parents = backend.client.client_id()
    child = os.fork()
    if child == 0:  # the child counts on a connection of its own, and leaves its parent's alone
        counted = backend.get_and_incr_window(None, "window", 60) == (None, 2)
        os._exit(0 if counted and backend.client.client_id() != parents else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert backend.get_and_incr_window(None, "window", 60) == (None, 3)
    assert backend.client.client_id() == parents


class ReversedText:
    """A serializer of a test's own: text stored reversed."""

    def dumps(self, value: str) -> bytes:
        return value[::-1].encode()

    def loads(self, raw: bytes) -> str:
        return raw.decode()[::-1]


def test_the_round_trips_use_the_serializer_django_is_configured_with() -> None:
    backend = ResilientRedisCache(
        os.environ.get("REDIS_URL", ""),
        {
            "KEY_PREFIX": f"pipeline-{uuid.uuid4().hex}",
            "OPTIONS": {"serializer": f"{__name__}.ReversedText", "socket_timeout": 0.5},
        },
    )
    backend.set_and_publish("generation", "g1", "generation")
    raw = redis.Redis.from_url(os.environ["REDIS_URL"]).get(backend.make_and_validate_key("generation"))
    assert raw == b"1g"
    assert backend.get("generation") == "g1"  # Django's own call reads what the round trip wrote
    assert backend.get_and_incr_window("generation", "window", 60) == ("g1", 1)
