"""Writers racing on one thread through the API, each with its own PostgreSQL connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from checkpoints.models import Checkpoint, Thread
from tests.concurrency.runner import run_concurrently
from tests.conftest import ApiClient

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

STATE = "/api/v1/threads/t1/state/"


def client_like(api: ApiClient) -> APIClient:
    """A fresh client per thread (test clients are not shared across threads), same key."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api.secret}")
    return client


def race_put_state(api: ApiClient, names: list[str], if_match: str) -> list[int]:
    """PUT state from one thread per name, all with the same If-Match, while the thread's row lock is held, so
    every writer is really in flight at once and queues on the lock; then release it. Returns the statuses."""
    statuses: list[int] = []
    errors: list[BaseException] = []

    def writer(name: str) -> Callable[[], None]:
        def work() -> None:
            body = {"checkpoint_id": name, "agent_id": "a", "state": {"by": name}}
            statuses.append(client_like(api).put(STATE, body, HTTP_IF_MATCH=f'"{if_match}"').status_code)

        return work

    def race() -> None:
        errors.extend(run_concurrently([writer(name) for name in names]))

    with transaction.atomic():
        Thread.objects.select_for_update().get(thread_id="t1")
        runner = threading.Thread(target=race)
        runner.start()
        time.sleep(0.3)
        assert statuses == []  # every writer is waiting for the lock
    runner.join(timeout=60)
    assert errors == []
    return statuses


def test_it_lets_one_of_two_racing_put_state_with_the_same_if_match_win_and_the_other_412(
    api: ApiClient,
) -> None:
    assert api.put(STATE, {"checkpoint_id": "base", "agent_id": "a", "state": {}}).status_code == 201
    for round_number in range(5):
        head = api.get(STATE).json()["checkpoint_id"]
        names = [f"r{round_number}a", f"r{round_number}b"]
        assert sorted(race_put_state(api, names, head)) == [201, 412]
        assert api.get(STATE).json()["parent_id"] == head
        assert Checkpoint.objects.filter(checkpoint_id__in=names).count() == 1


def test_it_creates_a_thread_once_when_clients_race_for_its_id(api: ApiClient) -> None:
    statuses: list[int] = []

    def create() -> None:
        statuses.append(client_like(api).post("/api/v1/threads/", {"thread_id": "once"}).status_code)

    assert run_concurrently([create] * 4) == []
    assert sorted(statuses) == [201, 409, 409, 409]
    assert Thread.objects.filter(thread_id="once").count() == 1


def test_it_gives_racing_appenders_through_the_api_distinct_contiguous_seqs(api: ApiClient) -> None:
    results: list[list[int]] = []

    def appender(number: int) -> Callable[[], None]:
        def work() -> None:
            client = client_like(api)
            for n in range(10):
                batch: list[dict[str, Any]] = [
                    {"role": "user", "content": f"{number}-{n}-{k}"} for k in range(3)
                ]
                response = client.post("/api/v1/threads/api-race/messages/", {"messages": batch})
                assert response.status_code == 201, response.content
                results.append([m["seq"] for m in response.json()["results"]])

        return work

    assert run_concurrently([appender(n) for n in range(4)]) == []
    assert sorted(seq for batch in results for seq in batch) == list(range(1, 121))
    assert all(batch == list(range(batch[0], batch[0] + 3)) for batch in results)
