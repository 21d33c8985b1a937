"""Redis round trips per API request, pinned like the query budgets (tests/api/test_checkpoint_queries.py):
authentication and the key's rate window share one round trip; a save adds none (README, "Performance");
a head read adds its cache lookup, and a miss one write once the response is closed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from django.core.cache import cache
from redis.connection import AbstractConnection

from tests.conftest import ApiClient

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

CHECKPOINTS = "/api/v1/threads/t1/checkpoints/"


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every write to a Redis socket from this process, by the first command it carries."""
    sent: Counter[str] = Counter()
    original = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: list[bytes], check_health: bool = True) -> None:
        # A packed command is RESP: "*<n>\r\n$<len>\r\n<name>\r\n..."; the pack is one or more chunks.
        first = bytes(command[0]) if command else b""
        sent[first.split(b"\r\n")[2].decode() if first.count(b"\r\n") > 2 else "?"] += 1
        original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    yield sent


def test_a_save_and_a_restore_cost_one_round_trip_each(api: ApiClient, round_trips: Counter[str]) -> None:
    cache.clear()
    warm = api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 0}})  # the key is remembered from here
    assert warm.status_code == 201, warm.json()
    round_trips.clear()

    saved = api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 1}})
    assert saved.status_code == 201, saved.json()
    assert round_trips == Counter({"GET": 1})  # GET generation + SET NX window + INCR, in one write

    restored = api.get(f"{CHECKPOINTS}{saved.json()['checkpoint_id']}/")
    assert restored.status_code == 200 and restored.json()["state"] == {"n": 1}
    assert round_trips == Counter({"GET": 2})


def test_a_head_read_looks_up_the_cache_and_fills_it_once(api: ApiClient, round_trips: Counter[str]) -> None:
    cache.clear()
    assert api.post(CHECKPOINTS, {"agent_id": "a", "state": {"n": 1}}).status_code == 201
    round_trips.clear()

    first = api.get("/api/v1/threads/t1/state/")
    assert first.status_code == 200
    assert round_trips == Counter({"GET": 2, "SET": 1})  # authentication, the lookup, the fill
    second = api.get("/api/v1/threads/t1/state/")
    assert second.content == first.content
    assert round_trips == Counter({"GET": 4, "SET": 1})  # authentication and a hit
