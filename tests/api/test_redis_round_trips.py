"""Redis round trips per API request, pinned like the query budgets (tests/api/test_checkpoint_queries.py).
While Redis pushes key changes to the process, authentication costs none: the key's generation is read from
the process's own subscription and its rate window counted from a lease (docs/api/index.md); without
a subscription that vouches, authentication and the rate window share one round trip. A save adds none; a
head read adds its cache lookup, and a miss one write once the response is closed. The subscription's
heartbeat (a PING at most once a second, whose answer nobody waits for) is not a request's round trip."""

from __future__ import annotations

from collections import Counter

import pytest
import redis
from django.conf import settings
from django.core.cache import cache

from checkpoints.storage.api_key_cache import api_keys_changed
from tests.conftest import ApiClient

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

CHECKPOINTS = "/api/v1/threads/t1/checkpoints/"


@pytest.fixture
def round_trips(redis_commands: Counter[str]) -> Counter[str]:
    return redis_commands


def requests_round_trips(sent: Counter[str]) -> Counter[str]:
    return sent - Counter({"PING": sent["PING"]})


def warm(api: ApiClient) -> None:
    """The first request remembers the key, the second takes the process's first lease of the rate window."""
    for n in range(2):
        assert api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": n}}).status_code == 201


def test_a_save_and_a_restore_cost_no_round_trip(api: ApiClient, round_trips: Counter[str]) -> None:
    cache.clear()
    warm(api)
    round_trips.clear()

    saved = api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 1}})
    assert saved.status_code == 201, saved.json()
    assert requests_round_trips(round_trips) == Counter()

    restored = api.get(f"{CHECKPOINTS}{saved.json()['checkpoint_id']}/")
    assert restored.status_code == 200 and restored.json()["state"] == {"n": 1}
    assert requests_round_trips(round_trips) == Counter()


def test_without_a_subscription_authentication_takes_one_round_trip(
    api: ApiClient, round_trips: Counter[str]
) -> None:
    api_keys_changed()  # a generation in Redis (an earlier test may have flushed it), pushed to the process
    warm(api)
    killed = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"]).client_kill_filter(_type="pubsub")
    assert killed >= 1
    round_trips.clear()

    # The closed subscription is noticed before the key is trusted: the generation is read (with the
    # window's count) from Redis.
    assert api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 1}}).status_code == 201
    assert round_trips == Counter({"GET": 1})  # GET generation + SET NX window + INCRBY, in one write
    # The next request subscribes again (a new connection: its handshake, SUBSCRIBE, then the generation).
    round_trips.clear()
    assert api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 2}}).status_code == 201
    assert (round_trips["SUBSCRIBE"], round_trips["GET"], round_trips["SET"]) == (1, 1, 0)
    round_trips.clear()
    assert api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 3}}).status_code == 201
    assert requests_round_trips(round_trips) == Counter()


def test_a_head_read_looks_up_the_cache_and_fills_it_once(api: ApiClient, round_trips: Counter[str]) -> None:
    cache.clear()
    warm(api)
    round_trips.clear()

    first = api.get("/api/v1/threads/t1/state/")
    assert first.status_code == 200
    assert requests_round_trips(round_trips) == Counter({"GET": 1, "SET": 1})  # the lookup, the fill
    second = api.get("/api/v1/threads/t1/state/")
    assert second.content == first.content
    assert requests_round_trips(round_trips) == Counter({"GET": 2, "SET": 1})  # and a hit
