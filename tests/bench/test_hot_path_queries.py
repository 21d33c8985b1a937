"""Query budgets of a LangGraph graph step, the benchmark's slowest path (one save and one write per step),
pinned query by query like the checkpoint budgets in tests/api/test_checkpoint_queries.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import ApiClient
from tests.sdk.test_langgraph_api import body, lg_state, save

pytestmark = pytest.mark.django_db

AUTH = 1  # the key, with its workspace (last_used_at is written at most once a minute, warmed up below)
ATOMIC = 2  # SAVEPOINT + RELEASE of the service's transaction (BEGIN/COMMIT outside tests)


@pytest.fixture
def step(api: ApiClient) -> ApiClient:
    """A thread holding the previous step's checkpoint, and a warm key."""
    assert (
        save(
            api, "g", body("g", "c1", lg_state({"messages": ["hi"], "n": 1}, {"messages": "1", "n": "1"}))
        ).status_code
        == 201
    )
    return api


def test_a_langgraph_save_inheriting_unchanged_channels_takes_5_queries(
    step: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    whole = lg_state({"messages": ["hi"], "n": 2}, {"messages": "1", "n": "2"})
    payload = body("g", "c2", lg_state({"n": 2}, whole["channel_versions"]), parent="c1", hash_state=whole)
    payload["inherit"] = {"checkpoint_id": "c1", "channels": {"messages": "1"}}
    # the base's stored state (inherited channels); lock the thread; the id's row and the parent in one
    # query; insert; touch the thread
    with django_assert_num_queries(AUTH + ATOMIC + 5):
        assert save(step, "g", payload).status_code == 201


def test_storing_a_tasks_pending_writes_takes_5_queries(
    step: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    writes = {"task_id": "task-1", "writes": [{"channel": "messages", "value": "hello", "idx": 0}]}
    # lock the thread; the target checkpoint (not expired?); insert; touch the thread; what is now stored
    with django_assert_num_queries(AUTH + ATOMIC + 5):
        response = step.post("/api/v1/threads/g/checkpoints/c2/writes/", writes)
    assert response.status_code == 201
    assert [w["value"] for w in response.json()["results"]] == ["hello"]
