"""Query budgets of a LangGraph graph step, the benchmark's slowest path (one save and one write per step),
pinned query by query like the checkpoint budgets in tests/api/test_checkpoint_queries.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import USING_POSTGRES, ApiClient
from tests.sdk.test_langgraph_api import body, lg_state, save

pytestmark = pytest.mark.django_db

AUTH = 0  # the key and its workspace are remembered once used (warmed up below)
# Insert the checkpoint and touch its thread: one statement on PostgreSQL, two on SQLite.
INSERT = 1 if USING_POSTGRES else 2
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


def test_a_langgraph_save_inheriting_unchanged_channels_takes_3_queries(
    step: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    whole = lg_state({"messages": ["hi"], "n": 2}, {"messages": "1", "n": "2"})
    payload = body("g", "c2", lg_state({"n": 2}, whole["channel_versions"]), parent="c1", hash_state=whole)
    payload["inherit"] = {"checkpoint_id": "c1", "channels": {"messages": "1"}}
    # the base's stored state (inherited channels); lock the thread, with the id's row and the parent's
    # step; insert and touch the thread
    with django_assert_num_queries(AUTH + ATOMIC + 2 + INSERT):
        assert save(step, "g", payload).status_code == 201


def test_storing_a_tasks_pending_writes_takes_2_queries(
    step: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    writes = {"task_id": "task-1", "writes": [{"channel": "messages", "value": "hello", "idx": 0}]}
    # lock the thread, with the target checkpoint (expired?); then, on PostgreSQL, one statement inserts,
    # touches the thread and answers what is now stored; SQLite: insert; touch; read what is stored
    with django_assert_num_queries(AUTH + ATOMIC + (2 if USING_POSTGRES else 4)):
        response = step.post("/api/v1/threads/g/checkpoints/c2/writes/", writes)
    assert response.status_code == 201
    assert [w["value"] for w in response.json()["results"]] == ["hello"]


def test_a_write_stored_packed_adds_the_statement_storing_its_part(
    step: ApiClient, django_assert_num_queries: Callable[..., Any]
) -> None:
    message = {"role": "assistant", "content": "a reply long enough to be stored as a part of its own " * 3}
    writes = {"task_id": "task-1", "writes": [{"channel": "messages", "value": [message], "idx": 0}]}
    # as above, and first the statement storing the message as a part (docs/storage.md); in the pipeline
    # outside a transaction, so still one round trip there
    with django_assert_num_queries(AUTH + ATOMIC + 1 + (2 if USING_POSTGRES else 4)):
        response = step.post("/api/v1/threads/g/checkpoints/c2/writes/", writes)
    assert response.status_code == 201
    assert [w["value"] for w in response.json()["results"]] == [[message]]
