"""A save outside any transaction on PostgreSQL: two statements in autocommit, the second writing only if
the thread is as the first one read it; a thread changed in between makes the save run again, locking it.
A task's pending writes: the thread's lock and the write, sent together in one transaction, so that the
write reads after any other write under the thread committed (docs/architecture.md, "The hot path")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import ANY

from django.db import connection, transaction
from django.utils import timezone

from checkpoints.models import Checkpoint, PendingWrite, Thread
from checkpoints.services.checkpoints import checkpoint_save, checkpoints_tombstone
from checkpoints.services.thread_rows import expires_after
from checkpoints.storage import thread_memo
from tests.concurrency.runner import run_concurrently
from tests.concurrency.test_state_race import client_like
from tests.conftest import POSTGRES_PART_ON_AND_OFF, ApiClient

pytestmark = POSTGRES_PART_ON_AND_OFF
PART = "prepared_statements"  # run on and off: checkpoints.parts

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
        seen.append(
            {
                "sql": sql,
                "in_transaction": connection.in_atomic_block,
                "pipelined": bool(connection.connection.pgconn.pipeline_status),
            }
        )
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


def test_a_tasks_pending_writes_are_one_round_trip_the_threads_lock_then_the_write(api: ApiClient) -> None:
    first_save(api)
    with statements() as seen:
        response = api.post(WRITES, task_writes("hello"))
    assert response.status_code == 201, response.json()
    assert [w["value"] for w in response.json()["results"]] == ["hello"]
    assert [s["sql"].split(" t WHERE")[0] for s in seen] == [f"SELECT 1 FROM {Thread._meta.db_table}", ANY]
    assert seen[0]["sql"].endswith("FOR NO KEY UPDATE")
    assert seen[1]["sql"].startswith("WITH incoming AS (SELECT")
    # Sent together (psycopg's pipeline), in one transaction that is not Django's.
    assert [(s["pipelined"], s["in_transaction"]) for s in seen] == [(True, False), (True, False)]


def test_a_tasks_pending_writes_set_the_threads_idle_expiry_by_its_ttl(api: ApiClient) -> None:
    for thread_id, ttl in (("idle", 3600), ("forever", None)):
        assert api.post("/api/v1/threads/", {"thread_id": thread_id, "ttl_seconds": ttl}).status_code == 201
        writes = f"/api/v1/threads/{thread_id}/checkpoints/c1/writes/"
        assert api.post(writes, task_writes("hello")).status_code == 201
        thread = Thread.objects.get(thread_id=thread_id)
        assert thread.expires_at == expires_after(ttl, thread.updated_at)
        assert PendingWrite.objects.filter(thread=thread).count() == 1


@contextmanager
def thread_held_while_writing(api: ApiClient) -> Iterator[dict[str, Any]]:
    """Post a task's writes from another thread (its statements recorded) while this one holds the thread's
    row lock in a transaction; the body runs once the writes wait for that lock, then the transaction
    commits and the writes go on. Yields what the writer got: `response` and `seen`."""
    got: dict[str, Any] = {}
    errors: list[BaseException] = []

    def write() -> None:
        with statements() as seen:
            got["response"] = client_like(api).post(WRITES, task_writes("hello"))
        got["seen"] = seen

    with transaction.atomic():
        Thread.objects.select_for_update().get(thread_id="t1")
        writer = threading.Thread(target=lambda: errors.extend(run_concurrently([write])))
        writer.start()
        wait_until_a_row_lock_is_awaited()
        yield got
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert errors == []


def wait_until_a_row_lock_is_awaited() -> None:
    for _ in range(200):
        with connection.cursor() as cursor:  # pg_locks is read live, not from the transaction's snapshot
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError("the writes never waited for the thread's lock")


def test_pending_writes_while_a_save_holds_the_thread_wait_for_it_and_are_written_in_one_round_trip(
    api: ApiClient,
) -> None:
    first_save(api)
    with thread_held_while_writing(api) as got:
        saved = checkpoint_save(
            workspace=Thread.objects.get().workspace, thread_id="t1", agent_id="a", state={"n": 1}
        )
        assert saved.checkpoint.parent_checkpoint_id == "first"
    assert got["response"].status_code == 201, got["response"].json()
    assert [w["value"] for w in got["response"].json()["results"]] == ["hello"]
    assert len(got["seen"]) == 2  # no second attempt: the save in between changed nothing they decide from
    stored = api.get(WRITES).json()["results"]
    assert [(w["task_id"], w["value"]) for w in stored] == [("task-1", "hello")]


def test_pending_writes_for_a_checkpoint_expired_while_they_wait_for_the_thread_are_refused(
    api: ApiClient,
) -> None:
    first_save(api)
    with thread_held_while_writing(api) as got:
        first = Checkpoint.objects.get(checkpoint_id="first")
        assert checkpoints_tombstone(pks=[first.pk], now=timezone.now()) == 1
    assert got["response"].status_code == 410, got["response"].json()
    assert got["response"].json()["error"]["code"] == "gone"
    assert not PendingWrite.objects.filter(checkpoint_id="first").exists()
