"""A message append outside any transaction on PostgreSQL: a read of the thread, then one statement that
takes the next seqs and inserts the batch only if no append moved the thread's messages in between; a
batch that finds the thread moved (or a new thread) runs again under the thread's row lock
(`checkpoints.services.messages`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from checkpoints.models import Message, Thread
from checkpoints.storage import thread_memo
from tests.concurrency.test_optimistic_save import statements
from tests.concurrency.test_state_race import client_like
from tests.conftest import ApiClient

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

MESSAGES = "/api/v1/threads/t1/messages/"


def say(*contents: str, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content, **fields} for content in contents]}


def first_message(api: ApiClient, **query: str) -> None:
    """The thread with one message (a new thread's append runs locked: it creates the thread); the key is
    then remembered, so authentication reads nothing. The thread is then forgotten, as a process that did
    not append to it would (an append to a thread this process appended to last skips the read:
    tests/concurrency/test_append_memo.py)."""
    suffix = "".join(f"?{name}={value}" for name, value in query.items())
    assert api.post(f"{MESSAGES}{suffix}", say("first")).status_code == 201
    thread_memo.forget_all()


def stored_in_order() -> list[tuple[int, str, datetime]]:
    return list(
        Message.objects.filter(thread__thread_id="t1")
        .order_by("seq")
        .values_list("seq", "content", "created_at")
    )


def test_an_append_to_an_existing_thread_is_two_statements_outside_any_transaction(api: ApiClient) -> None:
    first_message(api)
    with statements() as seen:
        response = api.post(MESSAGES, say("second", "third"))
    assert response.status_code == 201, response.json()
    assert [m["seq"] for m in response.json()["results"]] == [2, 3]
    assert [s["in_transaction"] for s in seen] == [False, False]
    assert "FOR UPDATE" not in seen[0]["sql"]
    assert seen[1]["sql"].startswith("WITH touched AS (UPDATE")
    stored = stored_in_order()
    assert [(seq, content) for seq, content, _ in stored] == [(1, "first"), (2, "second"), (3, "third")]
    assert [at for _, _, at in stored] == sorted({at for _, _, at in stored})  # strictly increasing
    thread = Thread.objects.get(thread_id="t1")
    assert thread.last_message_seq == 3
    assert thread.updated_at == stored[1][2]  # touched at the request's time, the batch's first message's


def test_an_append_between_the_statements_makes_it_run_again_locked_after_it(api: ApiClient) -> None:
    first_message(api)

    def concurrent_append() -> None:
        assert client_like(api).post(MESSAGES, say("between-1", "between-2")).status_code == 201

    with statements(after_first_read=concurrent_append) as seen:
        response = api.post(MESSAGES, say("late"))
    assert response.status_code == 201, response.json()
    assert [m["seq"] for m in response.json()["results"]] == [4]
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    stored = stored_in_order()
    assert [(seq, content) for seq, content, _ in stored] == [
        (1, "first"),
        (2, "between-1"),
        (3, "between-2"),
        (4, "late"),
    ]
    assert [at for _, _, at in stored] == sorted({at for _, _, at in stored})
    assert Thread.objects.get(thread_id="t1").last_message_seq == 4


def test_a_save_between_the_statements_does_not_move_the_messages(api: ApiClient) -> None:
    first_message(api)

    def concurrent_save() -> None:
        body = {"agent_id": "a", "state": {"n": 1}}
        assert client_like(api).post("/api/v1/threads/t1/checkpoints/", body).status_code == 201

    with statements(after_first_read=concurrent_save) as seen:
        response = api.post(MESSAGES, say("after the save"))
    assert response.status_code == 201, response.json()
    assert [m["seq"] for m in response.json()["results"]] == [2]
    assert not any("FOR UPDATE" in s["sql"] for s in seen)
    assert [s["in_transaction"] for s in seen] == [False, False]


def test_an_idle_ttl_changed_between_the_statements_is_the_one_the_touch_uses(api: ApiClient) -> None:
    first_message(api)

    def concurrent_ttl() -> None:
        assert client_like(api).patch("/api/v1/threads/t1/", {"ttl_seconds": 60}).status_code == 200

    with statements(after_first_read=concurrent_ttl) as seen:
        response = api.post(MESSAGES, say("late"))
    assert response.status_code == 201, response.json()
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    thread = Thread.objects.get(thread_id="t1")
    assert thread.ttl_seconds == 60 and thread.expires_at is not None
    assert 59 <= (thread.expires_at - thread.updated_at).total_seconds() <= 60


def test_a_new_threads_first_append_creates_it_under_the_lock_with_its_user(api: ApiClient) -> None:
    with statements() as seen:
        response = api.post(f"{MESSAGES}?user_id=alice", say("hello"))
    assert response.status_code == 201, response.json()
    assert seen[0]["in_transaction"] is False  # the unlocked read found no thread
    assert any(s["in_transaction"] and "INSERT" in s["sql"] for s in seen)
    thread = Thread.objects.get(thread_id="t1")
    assert (thread.user_id, thread.last_message_seq) == ("alice", 1)


def test_messages_with_ids_are_two_statements_and_a_retry_runs_again_locked(api: ApiClient) -> None:
    first_message(api)
    with statements() as seen:
        assert api.post(MESSAGES, say("once", message_id="m-1")).status_code == 201
    assert [s["in_transaction"] for s in seen] == [False, False]  # the thread, the write
    thread_memo.forget_all()
    with statements() as seen:
        response = api.post(MESSAGES, say("once", message_id="m-1"))
    assert response.status_code == 201, response.json()
    assert [(m["seq"], m["message_id"]) for m in response.json()["results"]] == [(2, "m-1")]
    # The write refused the stored id and wrote nothing (a failed statement is not recorded); locked, the
    # batch found it stored.
    assert not any(s["sql"].startswith("WITH touched") for s in seen)
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    assert Thread.objects.get(thread_id="t1").last_message_seq == 2
    assert [content for _, content, _ in stored_in_order()] == ["first", "once"]


def test_a_different_message_under_a_stored_id_is_refused_and_nothing_is_stored(api: ApiClient) -> None:
    first_message(api)
    assert api.post(MESSAGES, say("once", message_id="m-1")).status_code == 201
    response = api.post(
        MESSAGES,
        {
            "messages": [
                {"role": "user", "content": "new"},
                {"role": "user", "content": "changed", "message_id": "m-1"},
            ]
        },
    )
    assert response.status_code == 409, response.json()
    assert response.json()["error"]["details"]["conflicts"] == [
        {"message_id": "m-1", "differing_fields": ["content"]}
    ]
    assert [content for _, content, _ in stored_in_order()] == ["first", "once"]


def test_another_users_thread_is_not_found_outside_a_transaction(api: ApiClient) -> None:
    first_message(api, user_id="alice")
    with statements() as seen:
        response = api.post(f"{MESSAGES}?user_id=bob", say("intruder"))
    assert response.status_code == 404, response.json()
    # Unlocked reads only (a refusal is answered again by DRF: docs/architecture.md).
    assert seen and all(s["sql"].startswith("SELECT t.") and not s["in_transaction"] for s in seen)
    assert [content for _, content, _ in stored_in_order()] == ["first"]
