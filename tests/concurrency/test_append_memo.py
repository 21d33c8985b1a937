"""A message append to a thread this process appended to last decides from its memo of the thread (its row
and its last message's time) and is one statement, which writes only if the thread still has the
remembered last_message_seq, idle TTL and user (`checkpoints.storage.thread_memo`). Here the memo is made
stale the ways it can be: another process's append, a user or TTL changed, the thread deleted and created
again, a message id stored earlier. Each time the append must come out as if it had read."""

from __future__ import annotations

import pytest

from checkpoints.models import Message, Thread
from checkpoints.storage import thread_memo
from tests.concurrency.test_optimistic_append import MESSAGES, say, stored_in_order
from tests.concurrency.test_optimistic_save import statements
from tests.concurrency.test_state_race import client_like
from tests.concurrency.test_thread_memo import WRITE, assert_idle_ttl_applied, in_another_process
from tests.conftest import POSTGRES_PART_ON_AND_OFF, ApiClient

pytestmark = POSTGRES_PART_ON_AND_OFF
PART = "thread_memo"  # run on and off: checkpoints.parts


def append(api: ApiClient, *contents: str, query: str = "", **fields: str) -> list[int]:
    response = api.post(f"{MESSAGES}{query}", say(*contents, **fields))
    assert response.status_code == 201, response.json()
    return [m["seq"] for m in response.json()["results"]]


@pytest.mark.needs_part
def test_an_append_to_the_thread_this_process_appended_to_last_is_one_statement(api: ApiClient) -> None:
    append(api, "first")  # creates the thread (locked), then remembers it
    with statements() as seen:
        assert append(api, "second", "third") == [2, 3]
    assert [s["in_transaction"] for s in seen] == [False]
    assert seen[0]["sql"].startswith(WRITE)
    with statements() as seen:
        assert append(api, "fourth") == [4]
    assert len(seen) == 1
    stored = stored_in_order()
    assert [seq for seq, _, _ in stored] == [1, 2, 3, 4]
    assert [at for _, _, at in stored] == sorted({at for _, _, at in stored})  # strictly increasing
    thread = Thread.objects.get(thread_id="t1")
    assert thread.last_message_seq == 4 and thread.updated_at == stored[-1][2]


@pytest.mark.needs_part
def test_an_append_after_another_process_appended_reads_and_numbers_after_it(api: ApiClient) -> None:
    append(api, "first")
    with in_another_process():
        assert append(client_like(api), "elsewhere-1", "elsewhere-2") == [2, 3]  # type: ignore[arg-type]

    with statements() as seen:
        assert append(api, "here") == [4]

    # The remembered write found the thread moved and wrote nothing; then the read and the write.
    assert [s["sql"].split()[0] for s in seen] == ["WITH", "SELECT", "WITH"]
    assert not any(s["in_transaction"] for s in seen)
    stored = stored_in_order()
    assert [content for _, content, _ in stored] == ["first", "elsewhere-1", "elsewhere-2", "here"]
    assert [at for _, _, at in stored] == sorted({at for _, _, at in stored})
    with statements() as seen:  # remembered again
        assert append(api, "again") == [5]
    assert len(seen) == 1


@pytest.mark.needs_part
def test_a_save_since_the_last_append_leaves_the_memo_good(api: ApiClient) -> None:
    append(api, "first")
    with in_another_process():
        saved = client_like(api).post("/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {}})
        assert saved.status_code == 201
    with statements() as seen:
        assert append(api, "after the save") == [2]
    assert len(seen) == 1


def test_another_users_append_to_a_remembered_thread_is_not_found(api: ApiClient) -> None:
    append(api, "first", query="?user_id=alice")
    with statements() as seen:
        refused = api.post(f"{MESSAGES}?user_id=bob", say("intruder"))
    assert refused.status_code == 404, refused.json()
    assert seen and all(s["sql"].startswith("SELECT t.") for s in seen)  # read, never written
    assert [content for _, content, _ in stored_in_order()] == ["first"]
    assert append(api, "mine", query="?user_id=alice") == [2]


def test_a_user_changed_since_is_still_scoped(api: ApiClient) -> None:
    append(api, "first", query="?user_id=alice")
    Thread.objects.filter(thread_id="t1").update(user_id="bob")  # as another process or a raw edit would

    refused = api.post(f"{MESSAGES}?user_id=alice", say("intruder"))

    assert refused.status_code == 404, refused.json()
    assert [content for _, content, _ in stored_in_order()] == ["first"]


def test_a_ttl_changed_since_is_the_one_the_touch_uses(api: ApiClient) -> None:
    append(api, "first")
    Thread.objects.filter(thread_id="t1").update(ttl_seconds=60)
    append(api, "second")
    assert_idle_ttl_applied(60)


def test_an_append_to_a_thread_deleted_and_created_again_numbers_from_one(api: ApiClient) -> None:
    append(api, "first")
    append(api, "second")
    with in_another_process():
        assert client_like(api).delete("/api/v1/threads/t1/").status_code == 204
        assert append(client_like(api), "reborn") == [1]  # type: ignore[arg-type]

    assert append(api, "next") == [2]

    thread = Thread.objects.get(thread_id="t1")
    assert list(Message.objects.filter(thread=thread).order_by("seq").values_list("content", flat=True)) == [
        "reborn",
        "next",
    ]


def test_a_retry_of_a_stored_message_id_runs_again_locked_and_writes_nothing(api: ApiClient) -> None:
    append(api, "first")
    assert append(api, "once", message_id="m-1") == [2]
    with statements() as seen:
        assert append(api, "once", message_id="m-1") == [2]
    # The remembered write refused the stored id (a failed statement is not recorded); locked, the batch
    # found it stored.
    assert not any(s["sql"].startswith(WRITE) for s in seen)
    assert any("FOR UPDATE" in s["sql"] and s["in_transaction"] for s in seen)
    assert Thread.objects.get(thread_id="t1").last_message_seq == 2
    assert [content for _, content, _ in stored_in_order()] == ["first", "once"]


@pytest.mark.needs_part
def test_each_thread_is_remembered_on_its_own(api: ApiClient) -> None:
    append(api, "first")
    other = api.post("/api/v1/threads/t2/messages/", say("elsewhere"))
    assert other.status_code == 201
    with statements() as seen:
        assert append(api, "second") == [2]
    assert len(seen) == 1
    thread_memo.forget_all()
    with statements() as seen:
        assert append(api, "third") == [3]
    assert [s["sql"].split()[0] for s in seen] == ["SELECT", "WITH"]
