"""A save outside any transaction on PostgreSQL: two statements in autocommit, the second writing only if
the thread is as the first one read it; a thread changed in between makes the save run again, locking it
(docs/architecture.md, "The hot path")."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from checkpoints.models import Checkpoint, PendingWrite, Thread
from checkpoints.services import thread_memo
from tests.concurrency.test_state_race import client_like
from tests.conftest import ApiClient

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CPS = "/api/v1/threads/t1/checkpoints/"


@contextmanager
def statements(after_first_read: Callable[[], None] | None = None) -> Iterator[list[dict[str, Any]]]:
    """Record each statement with whether it ran inside a transaction; optionally run `after_first_read`
    (in another thread, with its own connection) right after the save's first, unlocked, read."""
    seen: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def run_other() -> None:
        try:
            assert after_first_read is not None
            after_first_read()
        except BaseException as exc:  # handed to the test below
            errors.append(exc)
        finally:
            connection.close()  # this thread's own connection

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        seen.append({"sql": sql, "in_transaction": connection.in_atomic_block})
        if after_first_read is not None and len(seen) == 1:
            assert sql.startswith("SELECT t.") and "FOR UPDATE" not in sql
            other = threading.Thread(target=run_other)
            other.start()
            other.join(timeout=30)
        return result

    with connection.execute_wrapper(record):
        yield seen
    assert errors == []


def first_save(api: ApiClient) -> str:
    """Save "first"; then forget it, as a process that did not save it would (a write on a thread this
    process saved into last skips the read: tests/concurrency/test_thread_memo.py)."""
    response = api.post(CPS, {"checkpoint_id": "first", "agent_id": "a", "state": {"n": 0}})
    assert response.status_code == 201, response.json()
    thread_memo.forget_all()
    return "first"


def test_a_save_into_an_existing_thread_is_two_statements_outside_any_transaction(api: ApiClient) -> None:
    first_save(api)
    api.get("/api/v1/checkpoints/")  # the key is remembered: authentication reads nothing
    with statements() as seen:
        response = api.post(CPS, {"agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 201
    assert response.json()["parent_id"] == "first"
    assert [s["in_transaction"] for s in seen] == [False, False]
    assert "FOR UPDATE" not in seen[0]["sql"]
    assert seen[1]["sql"].startswith("WITH touched AS (UPDATE")


def test_a_save_whose_thread_moved_between_its_statements_runs_again_locked_and_keeps_the_lineage(
    api: ApiClient,
) -> None:
    first_save(api)

    def concurrent_save() -> None:
        response = client_like(api).post(CPS, {"checkpoint_id": "between", "agent_id": "b", "state": {}})
        assert response.status_code == 201

    with statements(after_first_read=concurrent_save) as seen:
        response = api.post(CPS, {"checkpoint_id": "late", "agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 201, response.json()
    # Its first read saw "first" as the head; the write found the thread moved, so it read again, locked.
    assert response.json()["parent_id"] == "between"
    assert Checkpoint.objects.get(checkpoint_id="between").parent_checkpoint_id == "first"
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    assert Thread.objects.get(thread_id="t1").state_version == 3


def test_if_match_is_decided_against_the_head_at_the_write_not_at_the_first_read(api: ApiClient) -> None:
    first_save(api)

    def concurrent_save() -> None:
        assert (
            client_like(api).post(CPS, {"checkpoint_id": "x", "agent_id": "b", "state": {}}).status_code
            == 201
        )

    with statements(after_first_read=concurrent_save):
        response = api.put(
            "/api/v1/threads/t1/state/", {"agent_id": "a", "state": {}}, HTTP_IF_MATCH='"first"'
        )
    assert response.status_code == 412
    assert response.json()["error"]["details"] == {"expected": ["first"], "head": "x", "namespace": ""}
    assert Checkpoint.objects.filter(thread__thread_id="t1").count() == 2


def test_a_message_appended_between_the_statements_is_counted_in_the_checkpoint(api: ApiClient) -> None:
    first_save(api)

    def concurrent_message() -> None:
        body = {"messages": [{"role": "user", "content": "hello"}]}
        assert client_like(api).post("/api/v1/threads/t1/messages/", body).status_code == 201

    with statements(after_first_read=concurrent_message):
        response = api.post(CPS, {"checkpoint_id": "after-message", "agent_id": "a", "state": {}})
    assert response.status_code == 201
    thread = Thread.objects.get(thread_id="t1")
    assert Checkpoint.objects.get(checkpoint_id="after-message").message_seq == thread.last_message_seq == 1


def test_a_new_threads_first_save_that_fails_leaves_no_thread(api: ApiClient) -> None:
    body = {"agent_id": "a", "state": {}, "checksum": "0" * 64}
    response = api.post("/api/v1/threads/never/checkpoints/", body)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {
        "checksum": ["Does not match the record the server would store."]
    }
    assert not Thread.objects.filter(thread_id="never").exists()


WRITES = "/api/v1/threads/t1/checkpoints/first/writes/"


def task_writes(value: str) -> dict[str, Any]:
    return {"task_id": "task-1", "writes": [{"channel": "messages", "value": value, "idx": 0}]}


def test_a_tasks_pending_writes_are_two_statements_outside_any_transaction(api: ApiClient) -> None:
    first_save(api)
    with statements() as seen:
        response = api.post(WRITES, task_writes("hello"))
    assert response.status_code == 201, response.json()
    assert [w["value"] for w in response.json()["results"]] == ["hello"]
    assert [s["in_transaction"] for s in seen] == [False, False]
    assert "FOR UPDATE" not in seen[0]["sql"]
    assert seen[1]["sql"].startswith("WITH touched AS (UPDATE")


def test_pending_writes_while_a_save_moves_the_head_are_written_again_locked(api: ApiClient) -> None:
    first_save(api)

    def concurrent_save() -> None:
        response = client_like(api).post(CPS, {"checkpoint_id": "between", "agent_id": "b", "state": {}})
        assert response.status_code == 201

    with statements(after_first_read=concurrent_save) as seen:
        response = api.post(WRITES, task_writes("hello"))
    assert response.status_code == 201, response.json()
    assert [w["value"] for w in response.json()["results"]] == ["hello"]
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    stored = api.get("/api/v1/threads/t1/checkpoints/first/writes/").json()["results"]
    assert [(w["task_id"], w["value"]) for w in stored] == [("task-1", "hello")]


def test_pending_writes_for_a_checkpoint_expired_between_the_statements_are_refused(api: ApiClient) -> None:
    first_save(api)

    def concurrent_expiry() -> None:
        assert client_like(api).delete(f"{CPS}first/").status_code == 204

    with statements(after_first_read=concurrent_expiry):
        response = api.post(WRITES, task_writes("too late"))
    assert response.status_code == 410, response.json()
    assert response.json()["error"]["code"] == "gone"
    assert not PendingWrite.objects.filter(checkpoint_id="first").exists()
