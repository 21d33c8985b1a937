"""A save on a thread this process saved into last decides from its memo of the thread and is one
statement, which writes only if the thread is still as remembered (docs/architecture.md, "The hot path").
Here the memo is made stale the ways it can be: another process's save, an edit that bumps nothing,
a deleted thread, expiry by time, an id taken earlier. Each time the write must come out as if it had read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from checkpoints.models import Checkpoint, PendingWrite, Thread
from checkpoints.storage import thread_memo
from tests.concurrency.test_optimistic_save import CPS, statements, task_writes
from tests.concurrency.test_state_race import client_like
from tests.conftest import POSTGRES_PART_ON_AND_OFF, ApiClient

pytestmark = POSTGRES_PART_ON_AND_OFF
PART = "thread_memo"  # run on and off: checkpoints.parts

WRITE = "WITH touched AS (UPDATE"


@contextmanager
def in_another_process() -> Iterator[None]:
    """Writes made inside happen as if another web process made them: this process's memo stays as it was."""
    kept, appended = dict(thread_memo._memo), dict(thread_memo._appended)
    yield
    thread_memo.forget_all()
    thread_memo._memo.update(kept)
    thread_memo._appended.update(appended)


def save(api: ApiClient, checkpoint_id: str, **body: object) -> str:
    response = api.post(CPS, {"checkpoint_id": checkpoint_id, "agent_id": "a", "state": {}, **body})
    assert response.status_code == 201, response.json()
    return checkpoint_id


def first_save(api: ApiClient) -> str:
    return save(api, "first", state={"n": 0})


@pytest.mark.needs_part
def test_a_save_on_the_thread_this_process_saved_into_last_is_one_statement(api: ApiClient) -> None:
    first_save(api)
    with statements() as seen:
        response = api.post(CPS, {"agent_id": "a", "state": {"n": 1}})
    assert response.status_code == 201
    assert response.json()["parent_id"] == "first"
    assert [s["in_transaction"] for s in seen] == [False]
    assert seen[0]["sql"].startswith(WRITE)
    assert Thread.objects.get(thread_id="t1").state_version == 2


@pytest.mark.needs_part
def test_a_save_after_another_process_saved_reads_the_head_and_keeps_the_lineage(api: ApiClient) -> None:
    first_save(api)
    with in_another_process():
        save(client_like(api), "elsewhere")  # type: ignore[arg-type]

    with statements() as seen:
        response = api.post(CPS, {"checkpoint_id": "here", "agent_id": "a", "state": {}})

    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == "elsewhere"
    assert response.json()["step_index"] == 2
    # The remembered write found the thread moved and wrote nothing; then the read and the write.
    assert [s["sql"].split()[0] for s in seen] == ["WITH", "SELECT", "WITH"]
    assert not any(s["in_transaction"] for s in seen)
    assert Thread.objects.get(thread_id="t1").state_version == 3
    assert Checkpoint.objects.filter(thread__thread_id="t1").count() == 3


def test_if_match_is_decided_against_the_head_not_a_stale_memo(api: ApiClient) -> None:
    first_save(api)
    with in_another_process():
        save(client_like(api), "elsewhere")  # type: ignore[arg-type]
    state = "/api/v1/threads/t1/state/"

    # This process remembers "first" as the head; the head is "elsewhere".
    accepted = api.put(state, {"agent_id": "a", "state": {}}, HTTP_IF_MATCH='"elsewhere"')
    assert accepted.status_code == 201, accepted.json()
    assert accepted.json()["parent_id"] == "elsewhere"

    with in_another_process():
        save(client_like(api), "elsewhere-again")  # type: ignore[arg-type]
    believed = accepted.json()["checkpoint_id"]
    refused = api.put(state, {"agent_id": "a", "state": {}}, HTTP_IF_MATCH=f'"{believed}"')
    assert refused.status_code == 412
    assert refused.json()["error"]["details"]["head"] == "elsewhere-again"


def test_a_user_changed_without_a_version_bump_is_still_scoped(api: ApiClient) -> None:
    response = api.post(f"{CPS}?user_id=alice", {"checkpoint_id": "a1", "agent_id": "a", "state": {}})
    assert response.status_code == 201
    # As a raw edit would: state_version unchanged.
    Thread.objects.filter(thread_id="t1").update(user_id="bob")

    refused = api.post(f"{CPS}?user_id=alice", {"agent_id": "a", "state": {}})

    assert refused.status_code == 404, refused.json()
    assert Checkpoint.objects.filter(thread__thread_id="t1").count() == 1


def assert_idle_ttl_applied(seconds: int) -> None:
    """Thread t1's last touch set its expiry `seconds` after it."""
    thread = Thread.objects.get(thread_id="t1")
    assert thread.expires_at is not None
    assert thread.expires_at - thread.updated_at == timedelta(seconds=seconds)


def test_a_ttl_changed_without_a_version_bump_is_applied(api: ApiClient) -> None:
    first_save(api)
    Thread.objects.filter(thread_id="t1").update(ttl_seconds=60)
    save(api, "second")
    assert_idle_ttl_applied(60)


def test_a_retry_of_an_earlier_checkpoint_is_answered_as_stored_and_touches_nothing(api: ApiClient) -> None:
    body = {"checkpoint_id": "first", "agent_id": "a", "state": {"n": 0}}
    first_save(api)
    save(api, "second")
    before = Thread.objects.get(thread_id="t1")

    retry = api.post(CPS, body)

    assert retry.status_code == 200, retry.json()
    assert retry.json()["checkpoint_id"] == "first" and retry.json()["parent_id"] is None
    after = Thread.objects.get(thread_id="t1")
    assert (after.updated_at, after.state_version) == (before.updated_at, before.state_version)
    assert Checkpoint.objects.filter(thread__thread_id="t1").count() == 2


def test_a_remembered_head_that_expired_since_is_not_the_parent(api: ApiClient) -> None:
    save(api, "lasting")
    save(api, "brief", ttl_seconds=60)
    with time_machine.travel(timezone.now() + timedelta(seconds=120)):
        response = api.post(CPS, {"checkpoint_id": "later", "agent_id": "a", "state": {}})
    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == "lasting"


def test_a_save_into_a_thread_deleted_and_created_again_starts_a_new_lineage(api: ApiClient) -> None:
    first_save(api)
    with in_another_process():
        assert client_like(api).delete("/api/v1/threads/t1/").status_code == 204
        save(client_like(api), "reborn")  # type: ignore[arg-type]

    response = api.post(CPS, {"checkpoint_id": "next", "agent_id": "a", "state": {}})

    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == "reborn"
    stored = Checkpoint.objects.order_by("id").values_list("checkpoint_id", flat=True)
    assert list(stored) == ["reborn", "next"]


def test_pending_writes_after_another_process_expired_the_head_are_refused(api: ApiClient) -> None:
    first_save(api)
    with in_another_process():
        assert client_like(api).delete(f"{CPS}first/").status_code == 204

    response = api.post(f"{CPS}first/writes/", task_writes("too late"))

    assert response.status_code == 410, response.json()
    assert not PendingWrite.objects.exists()
